/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the agent's connection machinery (issue 15):
 *   /peer/...     who a peer process is (PA-20, PA-22): QEMU's -name/-uuid
 *                forms, libvirt's machine scope, the HELLO comparison, pidfds,
 *                libvirt's status files and the rule on them;
 *   /listener/... accept() out of descriptors: paused with backoff, logged
 *                once, never a busy loop (G-13);
 *   /device/...   a callback that closes its connection (run under ASan:
 *                the caller must not read freed memory).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "fh-device.h"
#include "fh-listener.h"
#include "fh-peer.h"
#include "fh-protocol.h"

#define U1 "11111111-1111-1111-1111-111111111111"

static gboolean
parse (const char *const *argv, FhPeerIdentity *id)
{
  g_autoptr (GString) buf = g_string_new (NULL);

  for (int i = 0; argv[i]; i++)
    g_string_append_len (buf, argv[i], (gssize) strlen (argv[i]) + 1);
  return fh_peer_parse_cmdline (buf->str, buf->len, id);
}

static void
test_cmdline (void)
{
  static const struct {
    const char *argv[64];
    const char *name; /* NULL: no -name */
    const char *uuid; /* NULL: no -uuid */
  } cases[] = {
    { { "qemu-system-x86_64", "-name", "vm1", "-uuid", U1, NULL }, "vm1", U1 },
    { { "qemu", "-name", "guest=vm1,debug-threads=on", NULL }, "vm1", NULL },
    { { "qemu", "-name", "debug-threads=on,guest=vm2", NULL }, "vm2", NULL },
    { { "qemu", "-name", "vm,,with,,commas,process=x", NULL }, "vm,with,commas", NULL },
    { { "qemu", "--name", "vm3", "--uuid", "11111111-1111-1111-1111-11111111111A", NULL }, "vm3",
      "11111111-1111-1111-1111-11111111111a" },
    { { "qemu", "-name", "first", "-name", "guest=second", NULL }, "second", NULL },
    { { "qemu", "-m", "1G", NULL }, NULL, NULL },
    { { "qemu", "-name", NULL }, NULL, NULL }, /* option without its value */
    { { "qemu", "-name", "", NULL }, "", NULL },
    /* the nil UUID means no UUID, as in HELLO */
    { { "qemu", "-name", "vm4", "-uuid", "00000000-0000-0000-0000-000000000000", NULL }, "vm4", NULL },
    /* repeated -name options merge (QemuOptsList "name" has merge_lists) */
    { { "qemu", "-name", "guest=a", "-name", "debug-threads=on", NULL }, "a", NULL },
    { { "qemu", "-name", "debug-threads=on", "-name", "b", NULL }, "b", NULL },
    { { "qemu", "-name", "debug-threads=on", NULL }, "", NULL },
    /* an option's value is never an option, whatever it looks like */
    { { "qemu", "-name", "vm5", "-append", "-name", NULL }, "vm5", NULL },
    { { "qemu", "-kernel", "k", "-append", "-name evil -uuid " U1, "-name", "vm6", NULL }, "vm6", NULL },
    { { "qemu", "-append", "-uuid", "-name", "vm7", NULL }, "vm7", NULL },
    { { "qemu", "-fw_cfg", "-name", "-S", "-name", "vm8", NULL }, "vm8", NULL },
    /* options without a value do not take the next argument */
    { { "qemu", "-S", "-name", "vm9", "-no-user-config", "-nodefaults", "-uuid", U1, NULL }, "vm9", U1 },
    { { "qemu", "-nographic", "--no-shutdown", "--name", "vm10", "disk.img", NULL }, "vm10", NULL },
    /* "--" (never in a QEMU's arguments) takes nothing */
    { { "qemu", "--name", "x", "--", "-name", "guest=y,debug-threads=on", NULL }, "y", NULL },
    /* the last argument without its value: QEMU would refuse it */
    { { "qemu", "-name", "vm11", "-append", NULL }, "vm11", NULL },
    /* as libvirt 11 writes them (virsh domxml-to-native; trimmed) */
    { { "/usr/bin/qemu-system-x86_64", "-name", "guest=web-1,debug-threads=on", "-S", "-object",
        "{\"qom-type\":\"secret\",\"id\":\"masterKey0\",\"format\":\"raw\",\"file\":"
        "\"/var/lib/libvirt/qemu/domain-3-web-1/master-key.aes\"}",
        "-machine", "pc-q35-10.0,usb=off,dump-guest-core=off,memory-backend=pc.ram,acpi=on",
        "-accel", "tcg", "-cpu", "qemu64", "-m", "size=1048576k", "-object",
        "{\"qom-type\":\"memory-backend-ram\",\"id\":\"pc.ram\",\"size\":1073741824}",
        "-overcommit", "mem-lock=off", "-smp", "2,sockets=2,cores=1,threads=1", "-uuid", U1,
        "-no-user-config", "-nodefaults", "-chardev", "socket,id=charmonitor,fd=30,server=on,wait=off",
        "-mon", "chardev=charmonitor,id=monitor,mode=control", "-rtc", "base=utc", "-no-shutdown",
        "-boot", "strict=on", "-kernel", "/boot/vmlinuz", "-append", "console=ttyS0 -name x",
        "-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
        "-msg", "timestamp=on", NULL },
      "web-1", U1 },
    { { "/usr/bin/qemu-system-x86_64", "-name", "guest=db,,primary,debug-threads=on", "-S",
        "-uuid", U1, "-no-user-config", "-nodefaults", "-device",
        "{\"driver\":\"virtio-freqhint-pci\",\"id\":\"fh0\",\"backend\":\"fha\"}", NULL },
      "db,primary", U1 },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_auto (FhPeerIdentity) id = { 0 };

    g_assert_true (parse (cases[i].argv, &id));
    g_assert_cmpint (id.have_name, ==, cases[i].name != NULL);
    g_assert_cmpstr (id.name, ==, cases[i].name);
    g_assert_cmpint (id.have_uuid, ==, cases[i].uuid != NULL);
    if (cases[i].uuid)
      g_assert_cmpstr (id.uuid, ==, cases[i].uuid);
  }
  {
    g_auto (FhPeerIdentity) id = { 0 };
    const char *bad[] = { "qemu", "-uuid", "not-a-uuid", NULL };

    g_assert_false (parse (bad, &id));
  }
}

static void
test_scope (void)
{
  g_autofree char *a = fh_peer_parse_scope ("0::/machine.slice/machine-qemu\\x2d3\\x2dvm\\x2da.scope/libvirt/vcpu0\n");
  g_autofree char *none = fh_peer_parse_scope ("0::/user.slice/session-1.scope\n");
  g_autofree char *v1 = fh_peer_parse_scope ("12:cpu,cpuacct:/machine.slice/machine-qemu\\x2d12\\x2dweb.scope\n"
                                             "1:name=systemd:/machine.slice/machine-qemu\\x2d12\\x2dweb.scope\n");

  g_assert_cmpstr (a, ==, "qemu-3-vm-a");
  g_assert_null (none);
  g_assert_cmpstr (v1, ==, "qemu-12-web");
  g_assert_cmpint (fh_peer_scope_match ("qemu-3-vm-a", "vm-a", NULL), ==, FH_SCOPE_MATCH);
  g_assert_cmpint (fh_peer_scope_match ("qemu-3-vma", "vm_a", NULL), ==, FH_SCOPE_MATCH);
  g_assert_cmpint (fh_peer_scope_match ("qemu-3-vm-a", "vm-b", NULL), ==, FH_SCOPE_NO_MATCH);
  g_assert_cmpint (fh_peer_scope_match ("qemu-3-vm-a", "vm-ab", NULL), ==, FH_SCOPE_NO_MATCH);
  g_assert_cmpint (fh_peer_scope_match ("lxc-3-vm-a", "vm-a", NULL), ==, FH_SCOPE_NO_MATCH);
  g_assert_cmpint (fh_peer_scope_match ("qemu--vm-a", "vm-a", NULL), ==, FH_SCOPE_NO_MATCH);
}

/*
 * libvirt's machine names, exactly (virDomainDriverGenerateMachineName()):
 * '.' is kept, a run of '.'/'-' keeps its first, leading ones go, other
 * characters are dropped, 64 bytes at most, no trailing '-' or '.'.
 */
static void
test_machine_name (void)
{
  static const struct {
    const char *id, *name, *machine;
  } cases[] = {
    { "1", "vm-a", "qemu-1-vm-a" },
    { "1", "vm.a", "qemu-1-vm.a" },
    { "1", "vm_a", "qemu-1-vma" },
    { "1", "vm a", "qemu-1-vma" },
    { "1", "..vm", "qemu-1-vm" },
    { "1", "-vm", "qemu-1-vm" },
    { "1", "vm.-.a", "qemu-1-vm.a" },
    { "1", "vm--a", "qemu-1-vm-a" },
    { "1", "vm-", "qemu-1-vm" },
    { "1", "vm_.", "qemu-1-vm" },
    { "12", "Web01", "qemu-12-Web01" },
    { "1", "ümlaut-vm", "qemu-1-mlaut-vm" },
    { "1", "___", "qemu-1" },
    /* 64 bytes at most, then trailing '-' trimmed */
    { "7", "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdeXYZ",
      "qemu-7-abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcde" },
    { "7", "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcd-XYZ",
      "qemu-7-abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcd" },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *m = fh_peer_machine_name (cases[i].id, cases[i].name);

    g_assert_cmpstr (m, ==, cases[i].machine);
  }
}

/* Names that libvirt makes into one scope: exact, and never ambiguous. */
static void
test_scope_collisions (void)
{
#define LONG "web-production-database-primary-replica-eu-west-1-zone-b" /* 56 bytes */
  const char *const known[] = { "vm_a", "vm.a", LONG "-x", NULL };

  /* "vm.a" keeps its dot: not "vma"'s scope, whatever letters-only says */
  g_assert_cmpint (fh_peer_scope_match ("qemu-3-vma", "vm.a", NULL), ==, FH_SCOPE_NO_MATCH);
  g_assert_cmpint (fh_peer_scope_match ("qemu-3-vm.a", "vma", NULL), ==, FH_SCOPE_NO_MATCH);
  g_assert_cmpint (fh_peer_scope_match ("qemu-3-vm.a", "vm.a", known), ==, FH_SCOPE_MATCH);
  /* "vma" and "vm_a" make the same scope: with "vm_a" known, "vma" is ambiguous */
  g_assert_cmpint (fh_peer_scope_match ("qemu-3-vma", "vma", known), ==, FH_SCOPE_AMBIGUOUS);
  g_assert_cmpint (fh_peer_scope_match ("qemu-3-vma", "vm_a", known), ==, FH_SCOPE_MATCH);
  g_assert_cmpint (fh_peer_scope_match ("qemu-3-vma", "vm a", known), ==, FH_SCOPE_AMBIGUOUS);
  /* cut at 64 bytes: a name sharing the kept prefix is no longer taken for it */
  g_assert_cmpint (fh_peer_scope_match ("qemu-12-" LONG, LONG "-y", NULL), ==, FH_SCOPE_MATCH);
  g_assert_cmpint (fh_peer_scope_match ("qemu-12-" LONG, LONG "-y", known), ==, FH_SCOPE_AMBIGUOUS);
  g_assert_cmpint (fh_peer_scope_match ("qemu-12-" LONG, LONG "-x", known), ==, FH_SCOPE_MATCH);
  /* a shorter name is not taken for the cut one (a prefix test did) */
  g_assert_cmpint (fh_peer_scope_match ("qemu-12-" LONG, "web-production-database", known), ==,
                   FH_SCOPE_NO_MATCH);
#undef LONG
}

static void
test_check_hello (void)
{
  FhPeerIdentity id = { 0 };
  char why[160];
  char long_name[100];

  /* no -name, no -uuid: only the empty name and the nil UUID */
  g_assert_true (fh_peer_check_hello (&id, "", "00000000-0000-0000-0000-000000000000", NULL, why, sizeof why));
  g_assert_false (fh_peer_check_hello (&id, "vm1", "", NULL, why, sizeof why));
  g_assert_false (fh_peer_check_hello (&id, "", U1, NULL, why, sizeof why));
  id.have_name = TRUE;
  id.name = g_strdup ("vm1");
  id.have_uuid = TRUE;
  strcpy (id.uuid, U1);
  g_assert_true (fh_peer_check_hello (&id, "vm1", U1, NULL, why, sizeof why));
  g_assert_true (fh_peer_check_hello (&id, "vm1", "11111111-1111-1111-1111-111111111111", NULL, why, sizeof why));
  g_assert_false (fh_peer_check_hello (&id, "vm2", U1, NULL, why, sizeof why));
  g_assert_false (fh_peer_check_hello (&id, "vm1", "", NULL, why, sizeof why));
  g_assert_false (fh_peer_check_hello (&id, "vm1", "22222222-2222-2222-2222-222222222222", NULL, why, sizeof why));
  /* the device truncates names to 63 bytes (PD-2) */
  memset (long_name, 'x', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  g_free (id.name);
  id.name = g_strdup (long_name);
  long_name[63] = '\0';
  g_assert_true (fh_peer_check_hello (&id, long_name, U1, NULL, why, sizeof why));
  long_name[62] = '\0';
  g_assert_false (fh_peer_check_hello (&id, long_name, U1, NULL, why, sizeof why));
  /* a machine scope must agree too */
  g_free (id.name);
  id.name = g_strdup ("vm1");
  id.scope_name = g_strdup ("qemu-4-vm2");
  g_assert_false (fh_peer_check_hello (&id, "vm1", U1, NULL, why, sizeof why));
  g_assert_nonnull (strstr (why, "machine scope"));
  fh_peer_identity_clear (&id);
}

/*
 * MR-28: the <vcpus> of the status file, not the domain definition's (which
 * has <vcpu id enabled> without threads), nor a nested element; ids past
 * FH_MAX_VCPUS and bad pids ignored; holes stay 0.
 */
static void
test_domstatus_vcpus (void)
{
  static const char text[] =
      "<domstatus state='running' pid='100'>\n"
      "  <vcpus><vcpu id='0' pid='101'/><vcpu id='2' pid='103'/><vcpu id='256' pid='999'/>"
      "<vcpu id='1' pid='x'/><vcpu pid='998'/><x><vcpu id='3' pid='997'/></x></vcpus>\n"
      "  <domain type='kvm'><name>a</name><uuid>" U1 "</uuid>"
      "<vcpus><vcpu id='0' pid='996'/><vcpu id='5' enabled='yes'/></vcpus></domain>\n"
      "</domstatus>\n";
  static const char none[] =
      "<domstatus pid='100'><domain><name>a</name><uuid>" U1 "</uuid></domain></domstatus>";
  g_autoptr (FhLibvirtDomain) dom = fh_peer_parse_domstatus (text, strlen (text), NULL);
  g_autoptr (FhLibvirtDomain) bare = fh_peer_parse_domstatus (none, strlen (none), NULL);

  g_assert_nonnull (dom);
  g_assert_cmpuint (dom->vcpu_tids->len, ==, 3);
  g_assert_cmpuint (g_array_index (dom->vcpu_tids, guint32, 0), ==, 101);
  g_assert_cmpuint (g_array_index (dom->vcpu_tids, guint32, 1), ==, 0);
  g_assert_cmpuint (g_array_index (dom->vcpu_tids, guint32, 2), ==, 103);
  g_assert_nonnull (bare);
  g_assert_null (bare->vcpu_tids);
}

/* libvirt's status file (PA-22): pid, name and UUID; nothing else taken. */
static void
test_domstatus (void)
{
  static const char real[] =
      "<!--\nWARNING: THIS IS AN AUTO-GENERATED FILE.\n-->\n"
      "<domstatus state='running' reason='booted' pid='4242'>\n"
      "  <taint flag='high-privileges'/>\n"
      "  <monitor path='/var/lib/libvirt/qemu/domain-3-vm/monitor.sock' type='unix'/>\n"
      "  <vcpus>\n    <vcpu id='0' pid='4250'/>\n  </vcpus>\n"
      "  <domain type='kvm' id='3' xmlns:nova='http://openstack.org/xmlns/libvirt/nova/1.1'>\n"
      "    <name>web&amp;1</name>\n"
      "    <uuid>ABCDEF01-1111-1111-1111-111111111111</uuid>\n"
      "    <metadata><nova:instance><nova:name>decoy</nova:name>"
      "<nova:uuid>22222222-2222-2222-2222-222222222222</nova:uuid></nova:instance></metadata>\n"
      "  </domain>\n</domstatus>\n";
  static const char *const bad[] = {
    "<domstatus pid='1'><domain><name>a</name></domain></domstatus>",                  /* no uuid */
    "<domstatus><domain><name>a</name><uuid>" U1 "</uuid></domain></domstatus>",      /* no pid */
    "<domstatus pid='x'><domain><name>a</name><uuid>" U1 "</uuid></domain></domstatus>",
    "<domstatus pid='1'><domain><name></name><uuid>" U1 "</uuid></domain></domstatus>",
    "<domstatus pid='1'><x><domain><name>a</name><uuid>" U1 "</uuid></domain></x></domstatus>",
    "<domain pid='1'><name>a</name><uuid>" U1 "</uuid></domain>",
    "<domstatus pid='1'><domain><name>a</name><uuid>" U1 "</uuid></domain>", /* truncated */
  };
  g_autoptr (FhLibvirtDomain) dom = NULL;

  dom = fh_peer_parse_domstatus (real, strlen (real), NULL);
  g_assert_nonnull (dom);
  g_assert_cmpint (dom->pid, ==, 4242);
  g_assert_cmpstr (dom->name, ==, "web&1");
  g_assert_cmpstr (dom->uuid, ==, "abcdef01-1111-1111-1111-111111111111");
  /* MR-28: libvirt's record of the vCPU threads, from <domstatus><vcpus> only */
  g_assert_nonnull (dom->vcpu_tids);
  g_assert_cmpuint (dom->vcpu_tids->len, ==, 1);
  g_assert_cmpuint (g_array_index (dom->vcpu_tids, guint32, 0), ==, 4250);
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_autoptr (GError) error = NULL;
    g_autoptr (FhLibvirtDomain) d = fh_peer_parse_domstatus (bad[i], strlen (bad[i]), &error);

    g_assert_null (d);
    g_assert_nonnull (error);
  }
}

static FhLibvirtDomain *
domain (const char *name, const char *uuid, pid_t pid)
{
  FhLibvirtDomain *d = g_new0 (FhLibvirtDomain, 1);

  d->name = g_strdup (name);
  g_strlcpy (d->uuid, uuid, sizeof d->uuid);
  d->pid = pid;
  return d;
}

static void
test_check_libvirt (void)
{
  static const char nil[] = "00000000-0000-0000-0000-000000000000";
  static const char u2[] = "22222222-2222-2222-2222-222222222222";
  static const char u3[] = "33333333-3333-3333-3333-333333333333";
  g_autoptr (GPtrArray) doms = g_ptr_array_new_with_free_func ((GDestroyNotify) fh_libvirt_domain_free);
  g_autofree char *longname = g_strnfill (80, 'x');
  g_autofree char *cut = g_strnfill (63, 'x');
  char why[200];
  /* without_domains: libvirt's domains unknown (no state directory);
   * why_has: what the refusal must say, where it is checked. */
  const struct {
    gboolean without_domains;
    pid_t pid;
    const char *name, *uuid;
    gboolean require, accepted;
    const char *why_has;
  } cases[] = {
    /* a domain's process, as itself (a long name as the device cuts it) */
    { FALSE, 100, "dom-a", U1, FALSE, TRUE, NULL },
    { FALSE, 100, "dom-a", U1, TRUE, TRUE, NULL },
    { FALSE, 300, cut, u3, TRUE, TRUE, NULL },
    /* a domain's process as anything else */
    { FALSE, 200, "dom-a", U1, FALSE, FALSE, "is libvirt domain \"dom-b\"" },
    { FALSE, 200, "dom-b", U1, FALSE, FALSE, NULL },
    { FALSE, 200, "dom-b", nil, FALSE, FALSE, NULL },
    { FALSE, 200, "free", u3, FALSE, FALSE, NULL },
    { FALSE, 300, longname, u3, FALSE, FALSE, NULL },
    /* no domain's process claiming a domain's name or UUID */
    { FALSE, 999, "dom-a", U1, FALSE, FALSE, "claims libvirt domain \"dom-a\"" },
    { FALSE, 999, "dom-a", nil, FALSE, FALSE, NULL },
    { FALSE, 999, "", U1, FALSE, FALSE, NULL },
    { FALSE, 999, "other", "11111111-1111-1111-1111-111111111111", FALSE, FALSE, NULL },
    { FALSE, 999, cut, nil, FALSE, FALSE, NULL },
    /* ... or its own identity: fine unless only domains may connect */
    { FALSE, 999, "plain", "44444444-4444-4444-4444-444444444444", FALSE, TRUE, NULL },
    { FALSE, 999, "", nil, FALSE, TRUE, NULL },
    { FALSE, 999, "plain", nil, TRUE, FALSE, "require_libvirt" },
    { TRUE, 999, "plain", nil, FALSE, TRUE, NULL },
    { TRUE, 999, "plain", nil, TRUE, FALSE, NULL },
  };

  g_ptr_array_add (doms, domain ("dom-a", U1, 100));
  g_ptr_array_add (doms, domain ("dom-b", u2, 200));
  g_ptr_array_add (doms, domain (longname, u3, 300));
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_test_message ("case %zu: pid %d claims \"%s\" (%s)%s", i, (int) cases[i].pid, cases[i].name,
                    cases[i].uuid, cases[i].require ? ", require_libvirt" : "");
    g_assert_cmpint (fh_peer_check_libvirt (cases[i].without_domains ? NULL : doms, cases[i].pid,
                                            cases[i].name, cases[i].uuid, cases[i].require, why,
                                            sizeof why), ==, cases[i].accepted);
    if (cases[i].why_has)
      g_assert_nonnull (strstr (why, cases[i].why_has));
  }
}

static void
test_pidfd (void)
{
  pid_t child = fork ();
  int fd;

  if (child == 0) {
    pause ();
    _exit (0);
  }
  fd = fh_peer_pin (child);
  g_assert_cmpint (fd, >=, 0);
  g_assert_true (fh_peer_alive (fd));
  kill (child, SIGKILL);
  waitpid (child, NULL, 0);
  g_assert_false (fh_peer_alive (fd));
  close (fd);
  g_assert_cmpint (fh_peer_pin (0), <, 0);
}

/* --- listener ------------------------------------------------------------- */

static int accepted;
static guint log_lines;

static void
count_accept (int fd, gpointer data)
{
  accepted++;
  close (fd);
}

static GLogWriterOutput
count_logs (GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
  for (gsize i = 0; i < n; i++)
    if (strcmp (fields[i].key, "MESSAGE") == 0 && strstr (fields[i].value, "pausing new connections"))
      log_lines++;
  return g_log_writer_standard_streams (level, fields, n, data);
}

static gboolean
quit_cb (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

static void
run_for (guint ms)
{
  g_autoptr (GMainLoop) loop = g_main_loop_new (NULL, FALSE);

  g_timeout_add (ms, quit_cb, loop);
  g_main_loop_run (loop);
}

static int
listen_at (const char *path)
{
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

  g_strlcpy (a.sun_path, path, sizeof a.sun_path);
  g_assert_cmpint (bind (fd, (struct sockaddr *) &a, sizeof a), ==, 0);
  g_assert_cmpint (listen (fd, 16), ==, 0);
  return fd;
}

static int
connect_to (const char *path)
{
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

  g_strlcpy (a.sun_path, path, sizeof a.sun_path);
  g_assert_cmpint (connect (fd, (struct sockaddr *) &a, sizeof a), ==, 0);
  return fd;
}

static void
test_listener_emfile (void)
{
  g_autofree char *dir = g_dir_make_tmp ("fh-listener-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "s", NULL);
  struct rlimit old, low;
  GArray *filler = g_array_new (FALSE, FALSE, sizeof (int));
  FhListener *l;
  int client, spare;
  guint64 calls;

  l = fh_listener_new (listen_at (path), "test socket", count_accept, NULL);
  client = connect_to (path);
  /* every descriptor in use: accept() fails with EMFILE */
  g_assert_cmpint (getrlimit (RLIMIT_NOFILE, &old), ==, 0);
  low = old;
  low.rlim_cur = 64;
  g_assert_cmpint (setrlimit (RLIMIT_NOFILE, &low), ==, 0);
  while ((spare = open ("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
    g_array_append_val (filler, spare);
  g_assert_cmpint (errno, ==, EMFILE);
  run_for (1500);
  calls = fh_listener_accept_calls (l);
  /* 50 ms doubling to 1 s: a handful of tries in 1.5 s, not a busy loop */
  g_assert_cmpuint (calls, >=, 2);
  g_assert_cmpuint (calls, <=, 8);
  g_assert_cmpuint (fh_listener_failures (l), ==, calls);
  g_assert_cmpuint (log_lines, ==, 1);
  g_assert_cmpint (accepted, ==, 0);
  /* descriptors come back: the waiting connection is taken */
  for (guint i = 0; i < filler->len; i++)
    close (g_array_index (filler, int, i));
  g_array_unref (filler);
  g_assert_cmpint (setrlimit (RLIMIT_NOFILE, &old), ==, 0);
  run_for (1200);
  g_assert_cmpint (accepted, ==, 1);
  close (client);
  fh_listener_free (l);
  g_unlink (path);
  g_rmdir (dir);
}

/* --- device: a callback closes its connection -------------------------------- */

static guint hints_seen, closed_seen;

static gboolean
hello_ok (FhConn *conn, const FhHello *hello, FhError *err, gpointer data)
{
  return TRUE;
}

static void
hints_close (FhConn *conn, const FhHints *hints, gpointer data)
{
  hints_seen++;
  /* e.g. a refused thread table: the callback ends the connection */
  fh_conn_close (conn, FH_CLOSE_PERMISSION, "closed from the hints callback");
}

static void
on_closed (FhConn *conn, gpointer data)
{
  closed_seen++;
}

/* A device server at path that accepts every HELLO; its HINTS go to hints. */
static FhDeviceServer *
device_server (const char *path, guint max_connections,
               void (*hints) (FhConn *, const FhHints *, gpointer))
{
  FhDeviceParams params = { .hello_timeout_ms = 5000, .keepalive_ms = 10000, .relay_uid = (uid_t) -1,
                            .max_connections = max_connections, .socket_mode = 0600,
                            .socket_gid = (gid_t) -1 };
  FhDeviceCallbacks cb = { .hello = hello_ok, .hints = hints, .closed = on_closed };
  g_autoptr (GError) error = NULL;
  FhDeviceServer *server = fh_device_server_new (path, &params, &cb, NULL, &error);

  g_assert_no_error (error);
  return server;
}

static void
test_close_in_callback (void)
{
  g_autofree char *dir = g_dir_make_tmp ("fh-device-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "dev.sock", NULL);
  FhDeviceServer *server = device_server (path, 4, hints_close);
  static FhHello hello;
  static FhHints hints;
  uint8_t buf[3 * FH_FRAME_MAX];
  size_t n = 0;
  int fd;

  hello.version = FH_PROTO_VERSION;
  hello.num_vcpus = 1;
  n += fh_encode_hello (buf + n, sizeof buf - n, &hello);
  hints.flags = FH_HINTS_F_FULL;
  hints.num_records = 1; /* vCPU 0, no hint */
  /* two HINTS in one read: the device loop goes on after the callback */
  n += fh_encode_hints (buf + n, sizeof buf - n, &hints);
  n += fh_encode_hints (buf + n, sizeof buf - n, &hints);
  fd = connect_to (path);
  run_for (100); /* accepted */
  g_assert_cmpint (send (fd, buf, n, 0), ==, (ssize_t) n);
  run_for (300);
  g_assert_cmpuint (hints_seen, ==, 1);
  g_assert_cmpuint (closed_seen, ==, 1);
  g_assert_cmpuint (fh_device_server_n_connections (server), ==, 0);
  close (fd);
  fh_device_server_free (server);
  g_rmdir (dir);
}

/* --- device: many sockets in one epoll source (issue 29, item 8) ------------ */

/* Per connection, who sent which HINTS: the peer's first record's clamp_min says. */
static guint hints_by_tag[256];

static void
hints_count (FhConn *conn, const FhHints *h, gpointer data)
{
  hints_by_tag[h->records[0].clamp_min & 0xff]++;
}

static size_t
encode_hello_full (uint8_t *buf, size_t size, guint tag)
{
  static FhHello hello;
  static FhHints hints;
  size_t n;

  hello.version = FH_PROTO_VERSION;
  hello.num_vcpus = 1;
  n = fh_encode_hello (buf, size, &hello);
  hints.flags = FH_HINTS_F_FULL;
  hints.num_records = 1;
  hints.records[0].flags = VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID;
  hints.records[0].clamp_min = (uint16_t) tag;
  hints.records[0].clamp_max = 1024;
  return n + fh_encode_hints (buf + n, size - n, &hints);
}

/* 200 VMs, one of which sends half a frame and hangs up: it alone goes. */
static void
test_many_one_closing (void)
{
  enum { N = 200, HALF = 77 };
  g_autofree char *dir = g_dir_make_tmp ("fh-device-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "dev.sock", NULL);
  FhDeviceServer *server = device_server (path, 2 * N, hints_count);
  uint8_t buf[2 * FH_FRAME_MAX];
  int fd[N];

  memset (hints_by_tag, 0, sizeof hints_by_tag);
  closed_seen = 0;
  for (guint i = 0; i < N; i++) {
    fd[i] = connect_to (path);
    /* accept as we go: connect() blocks on a full backlog */
    while (g_main_context_iteration (NULL, FALSE))
      ;
  }
  run_for (300); /* all accepted */
  g_assert_cmpuint (fh_device_server_n_connections (server), ==, N);
  for (guint i = 0; i < N; i++) {
    size_t n = encode_hello_full (buf, sizeof buf, i == HALF ? 255 : i % 250);

    if (i == HALF) {
      /* HELLO and half of the HINTS frame, then gone mid-read */
      n -= 10;
      g_assert_cmpint (send (fd[i], buf, n, 0), ==, (ssize_t) n);
      close (fd[i]);
      fd[i] = -1;
      continue;
    }
    g_assert_cmpint (send (fd[i], buf, n, 0), ==, (ssize_t) n);
  }
  run_for (500);
  g_assert_cmpuint (closed_seen, ==, 1);
  g_assert_cmpuint (hints_by_tag[255], ==, 0);
  g_assert_cmpuint (fh_device_server_n_connections (server), ==, N - 1);
  for (guint i = 0; i < N; i++)
    if (i != HALF)
      g_assert_cmpuint (hints_by_tag[i % 250], >=, 1);
  fh_device_server_free (server);
  g_assert_cmpuint (closed_seen, ==, N);
  for (guint i = 0; i < N; i++)
    if (fd[i] >= 0)
      close (fd[i]);
  g_rmdir (dir);
}

/* A peer that sends HINTS as fast as its socket takes them, from a thread. */
typedef struct {
  int fd;
  gint stop;
} Flooder;

static gpointer
flood_thread (gpointer data)
{
  Flooder *f = data;
  static FhHints hints;
  uint8_t frame[64 * 64];
  size_t one, n = 0;

  hints.num_records = 1;
  hints.records[0].flags = VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID;
  hints.records[0].clamp_min = 1;
  hints.records[0].clamp_max = 1024;
  one = fh_encode_hints (frame, sizeof frame, &hints);
  while (n + one <= sizeof frame)
    n += fh_encode_hints (frame + n, sizeof frame - n, &hints);
  while (!g_atomic_int_get (&f->stop))
    if (send (f->fd, frame, n, MSG_NOSIGNAL) < 0)
      break;
  return NULL;
}

/* Fairness: while one VM floods, another's single HINTS is read at once. */
static void
test_flood_fairness (void)
{
  g_autofree char *dir = g_dir_make_tmp ("fh-device-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "dev.sock", NULL);
  FhDeviceServer *server = device_server (path, 8, hints_count);
  Flooder f = { 0 };
  GThread *thread;
  uint8_t buf[2 * FH_FRAME_MAX];
  int quiet;
  size_t n;
  gint64 deadline;
  guint flooded;

  memset (hints_by_tag, 0, sizeof hints_by_tag);
  f.fd = connect_to (path);
  quiet = connect_to (path);
  n = encode_hello_full (buf, sizeof buf, 1);
  g_assert_cmpint (send (f.fd, buf, n, 0), ==, (ssize_t) n);
  n = encode_hello_full (buf, sizeof buf, 2);
  g_assert_cmpint (send (quiet, buf, n, 0), ==, (ssize_t) n);
  run_for (200);
  g_assert_cmpuint (hints_by_tag[2], ==, 1);
  thread = g_thread_new ("flood", flood_thread, &f);
  run_for (300); /* the flood is on */
  flooded = hints_by_tag[1];
  g_assert_cmpuint (flooded, >, 1000);
  n = encode_hello_full (buf, sizeof buf, 2);
  /* just the HINTS frame this time (after the HELLO's bytes) */
  {
    static FhHello hello;
    size_t h;

    hello.version = FH_PROTO_VERSION;
    hello.num_vcpus = 1;
    h = fh_encode_hello (buf, sizeof buf, &hello);
    g_assert_cmpint (send (quiet, buf + h, n - h, 0), ==, (ssize_t) (n - h));
  }
  deadline = g_get_monotonic_time () + G_TIME_SPAN_SECOND;
  while (hints_by_tag[2] < 2 && g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, FALSE);
  g_assert_cmpuint (hints_by_tag[2], ==, 2);
  /* and the flood went on being read meanwhile */
  g_assert_cmpuint (hints_by_tag[1], >, flooded);
  g_atomic_int_set (&f.stop, 1);
  shutdown (f.fd, SHUT_RDWR);
  g_thread_join (thread);
  fh_device_server_free (server);
  close (f.fd);
  close (quiet);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* closing a connection for a reason is a warning, not a test failure */
  g_log_set_always_fatal (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL);
  /* Messages passed on to GLib's writer go to stderr: stdout is TAP. */
  g_log_writer_default_set_use_stderr (TRUE);
  g_log_set_writer_func (count_logs, NULL, NULL);
  g_test_add_func ("/peer/cmdline", test_cmdline);
  g_test_add_func ("/peer/scope", test_scope);
  g_test_add_func ("/peer/machine-name", test_machine_name);
  g_test_add_func ("/peer/scope-collisions", test_scope_collisions);
  g_test_add_func ("/peer/check-hello", test_check_hello);
  g_test_add_func ("/peer/pidfd", test_pidfd);
  g_test_add_func ("/peer/domstatus", test_domstatus);
  g_test_add_func ("/peer/domstatus-vcpus", test_domstatus_vcpus);
  g_test_add_func ("/peer/check-libvirt", test_check_libvirt);
  g_test_add_func ("/device/close-in-callback", test_close_in_callback);
  g_test_add_func ("/device/many-one-closing", test_many_one_closing);
  g_test_add_func ("/device/flood-fairness", test_flood_fairness);
  g_test_add_func ("/listener/emfile", test_listener_emfile);
  return g_test_run ();
}
