/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Who is on the other end of a device connection, in the host's words
 * (agent protocol PA-20, PA-21).
 *
 * At accept the peer process is pinned with a pidfd: as long as the pidfd
 * says the process lives, its pid is not reused, so /proc/<pid> is that
 * process.  Its identity is what the host says it is — QEMU's `-name` and
 * `-uuid` arguments from /proc/<pid>/cmdline, and libvirt's
 * machine-qemu…scope cgroup — never what its HELLO claims.
 *
 * The parsers are pure (unit-tested); the readers go through the agent's
 * proc root so fixture trees work.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "fh-paths.h"

typedef struct {
  gboolean have_name; /* -name given (possibly empty) */
  char *name;         /* QEMU's guest name, NULL when !have_name */
  gboolean have_uuid;
  char uuid[37]; /* lower case "xxxxxxxx-…", "" when !have_uuid */
  char *scope_name; /* libvirt machine name from the cgroup (machine-qemu\x2dN\x2dNAME.scope), or NULL */
} FhPeerIdentity;

void fh_peer_identity_clear (FhPeerIdentity *id);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (FhPeerIdentity, fh_peer_identity_clear)

/*
 * Pure: QEMU's -name/-uuid from a /proc/<pid>/cmdline buffer (NUL-separated
 * arguments), walked as QEMU walks them: options that take a value (QEMU's
 * option table) consume the next argument, so "-append -name" names
 * nothing.  Understands `-name NAME`, `-name guest=NAME,debug-threads=on`
 * (QemuOpts: ",," is a literal comma, the first bare value is "guest"),
 * repeated -name options merged as QEMU merges them (a later guest= wins,
 * "-name debug-threads=on" keeps the name), `--name`, and `-uuid`/`--uuid`
 * (the last wins).  FALSE when a -uuid value is not a UUID.
 */
gboolean fh_peer_parse_cmdline (const char *buf, gsize len, FhPeerIdentity *id);

/*
 * Pure: the libvirt machine name from /proc/<pid>/cgroup text: the last
 * path component of the form `machine-qemu\x2d<ID>\x2d<NAME>.scope` (with
 * systemd's \xNN escapes undone) gives NAME; NULL when there is none.
 * libvirt shortens and filters the name it puts there, so it is compared
 * as libvirt derives it (fh_peer_scope_match()).
 */
char *fh_peer_parse_scope (const char *cgroup_text);

/* Pure: does a VM name map to this scope name the way libvirt derives it? */
/* Pure: libvirt's machine name for domain id and name (without "machine-" and ".scope"). */
char *fh_peer_machine_name (const char *domain_id, const char *name);

typedef enum {
  FH_SCOPE_NO_MATCH,
  FH_SCOPE_AMBIGUOUS, /* it matches, and so does one of the other names */
  FH_SCOPE_MATCH,
} FhScopeMatch;

/*
 * Pure: is scope_name ("qemu-ID-...") exactly what libvirt makes of
 * vm_name, and of none of others (NULL-terminated, may be NULL: names the
 * host knows of, the same name skipped)?  libvirt drops and collapses
 * characters and cuts long names, so names collide ("vm_a", "vma"); a
 * scope that more than one known name could have made says nothing.
 */
FhScopeMatch fh_peer_scope_match (const char *scope_name, const char *vm_name,
                                  const char *const *others);

/*
 * Pure: may a peer with this identity send a HELLO with this name (bytes up
 * to the NUL) and UUID ("" or all-zero for none)?  FALSE with a reason.
 * The HELLO must say exactly what QEMU would say for this process (PD-2):
 * its -name truncated like the device does, or "" without -name; its -uuid,
 * or the nil UUID without one; and if the process lives in a libvirt
 * machine scope, the name that scope was made from and none of others
 * (fh_peer_scope_match()).
 */
gboolean fh_peer_check_hello (const FhPeerIdentity *id, const char *hello_name,
                              const char *hello_uuid, const char *const *others, char *why,
                              gsize why_len);

/* I/O: read the identity of pid through the proc root. */
gboolean fh_peer_read_identity (const FhPaths *paths, pid_t pid, FhPeerIdentity *id,
                                GError **error);

/* pidfd_open(2); -1 with errno on failure. */
int fh_peer_pin (pid_t pid);
/* FALSE once the pinned process has exited (its pid may be reused). */
gboolean fh_peer_alive (int pidfd);

/*
 * libvirt's own record of its running domains (PA-22): its QEMU driver
 * keeps one status file per running domain in its state directory
 * (/run/libvirt/qemu/NAME.xml, root's, mode 0600), whose root element
 * carries the QEMU process id and whose <domain> the name and UUID:
 *
 *   <domstatus state='running' reason='booted' pid='1234'>
 *     <vcpus><vcpu id='0' pid='1240'/><vcpu id='1' pid='1241'/></vcpus>
 *     ... <domain type='kvm' id='1'><name>NAME</name><uuid>UUID</uuid> ...
 *         <devices> ... <vsock model='virtio'><cid auto='yes' address='3'/>
 *
 * libvirt writes it (by rename) before the guest's CPUs first run, and
 * again when vCPUs are plugged; a process cannot change it, unlike its own
 * command line.  The <vcpus> list is libvirt's own record of which thread
 * runs which vCPU (qemuDomainObjPrivateXMLFormatVcpus(), from QMP
 * query-cpus-fast): what counts as a domain's vCPU threads (MR-28).
 */
typedef struct {
  char *name;
  char uuid[37]; /* lower case */
  pid_t pid;
  /* thread id per vCPU index (0: none recorded), at most FH_MAX_VCPUS; NULL: no <vcpus> */
  GArray *vcpu_tids; /* guint32 */
  /* <devices><vsock><cid address='N'/>: the guest's vsock CID, 0 none (vsock transport) */
  guint32 vsock_cid;
} FhLibvirtDomain;

void fh_libvirt_domain_free (FhLibvirtDomain *dom);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FhLibvirtDomain, fh_libvirt_domain_free)

/*
 * Pure: a status file's pid, name, UUID and vCPU threads; NULL with error if
 * pid, name or UUID is missing.  A <vcpu> whose id is FH_MAX_VCPUS or more,
 * or whose pid is not a number, is ignored.
 */
FhLibvirtDomain *fh_peer_parse_domstatus (const char *text, gsize len, GError **error);

/*
 * Pure (PA-22): may process pid send a HELLO with this name and UUID, given
 * libvirt's running domains?  A process that is a domain's must announce
 * that domain's name (as the device truncates it) and UUID; a process that
 * is no domain's must not announce a domain's name or UUID; and with
 * require, only a domain's process is accepted.  FALSE with a reason.
 */
gboolean fh_peer_check_libvirt (const GPtrArray *domains /* FhLibvirtDomain* */, pid_t pid,
                                const char *hello_name, const char *hello_uuid, gboolean require,
                                char *why, gsize why_len);

/*
 * I/O: the status files of one directory, re-read only when the directory
 * changed (libvirt writes them by rename).  A missing directory is no
 * domains; a directory or file not root's or writable by others is not
 * trusted (refresh fails / the file is skipped, logged).  dir NULL or ""
 * turns the view off (no domains).
 */
typedef struct _FhLibvirtView FhLibvirtView;
FhLibvirtView *fh_libvirt_view_new (const char *dir);
void fh_libvirt_view_free (FhLibvirtView *view);
gboolean fh_libvirt_view_refresh (FhLibvirtView *view, GError **error);
const GPtrArray *fh_libvirt_view_domains (const FhLibvirtView *view);
