/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GLib structured logging for freqhintd (G_LOG_USE_STRUCTURED).
 *
 * Every message goes through fh_log_writer(): to the journal with its
 * fields (PRIORITY, MESSAGE, GLIB_DOMAIN, CODE_*, and ours below) when
 * stderr is a journal stream, else one "domain: message" line on stderr.
 * Debug messages only with verbose.
 *
 * Messages about one VM, CPU, cpufreq policy or thread carry it as a field
 * too, so `journalctl FREQHINT_VM=web1` finds them without parsing text.
 */
#pragma once

#include <glib.h>

#define FH_LOG_FIELD_VM "FREQHINT_VM"         /* the VM's name (sanitized) */
#define FH_LOG_FIELD_VM_UUID "FREQHINT_VM_UUID"
#define FH_LOG_FIELD_POLICY "FREQHINT_POLICY" /* cpufreq policy number */
#define FH_LOG_FIELD_TID "FREQHINT_TID"       /* host thread id of a vCPU */

/* Install fh_log_writer() for the process; call once, before any message. */
void fh_log_init (gboolean verbose);

GLogWriterOutput fh_log_writer (GLogLevelFlags level, const GLogField *fields, gsize n_fields,
                                gpointer data);

/* The line fh_log_writer() writes on stderr when no journal is there, without "\n". */
char *fh_log_format_line (const GLogField *fields, gsize n_fields);

#define FH_LOG_CODE_FIELDS                                                                         \
  "CODE_FILE", __FILE__, "CODE_LINE", G_STRINGIFY (__LINE__), "CODE_FUNC", G_STRFUNC

/* A message about one VM: name (already sanitized for logs) and UUID as fields. */
#define fh_log_vm(level, name, uuid, ...)                                                          \
  g_log_structured (G_LOG_DOMAIN, level, FH_LOG_CODE_FIELDS, FH_LOG_FIELD_VM, (name),            \
                    FH_LOG_FIELD_VM_UUID, (uuid), "MESSAGE", __VA_ARGS__)

/* A message with one numeric field (field values are strings). */
#define fh_log_num(level, field, num, ...)                                                         \
  G_STMT_START                                                                                     \
  {                                                                                                \
    char fh_log_num_[24];                                                                          \
                                                                                                   \
    g_snprintf (fh_log_num_, sizeof fh_log_num_, "%u", (guint) (num));                             \
    g_log_structured (G_LOG_DOMAIN, level, FH_LOG_CODE_FIELDS, field, fh_log_num_, "MESSAGE",     \
                      __VA_ARGS__);                                                                \
  }                                                                                                \
  G_STMT_END

/* A message about one cpufreq policy. */
#define fh_log_policy(level, policy, ...)                                                          \
  fh_log_num (level, FH_LOG_FIELD_POLICY, policy, __VA_ARGS__)

/* A message about one vCPU thread. */
#define fh_log_tid(level, tid, ...) fh_log_num (level, FH_LOG_FIELD_TID, tid, __VA_ARGS__)

/*
 * Messages a peer can cause as often as it likes (refused connections,
 * libmicrohttpd's complaints) must not fill the journal (G-13): at most
 * burst lines per interval_s, then, with the next one after the window, a
 * line saying how many were left out.  Thread-safe: libmicrohttpd logs
 * from its own thread.  Define one per kind of message, statically:
 *   static FhLogLimit refusals = FH_LOG_LIMIT_INIT ("refused connections", 20, 10);
 */
typedef struct {
  GMutex lock; /* a static GMutex needs no g_mutex_init() */
  const char *what;
  guint burst;
  guint interval_s;
  gint64 window_start;
  guint in_window;
  guint64 suppressed;
} FhLogLimit;

#define FH_LOG_LIMIT_INIT(what_, burst_, interval_s_)                                              \
  {                                                                                                \
    .what = (what_), .burst = (burst_), .interval_s = (interval_s_)                                \
  }

/* TRUE: log this one. */
gboolean fh_log_limit_allow (FhLogLimit *limit);
