/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Mirroring the operator ceiling into libvirt's per-vCPU cgroup, on a fixture tree. */
#include <stdlib.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "fh-cgroup-mirror.h"
#include "fh-metadata.h"

typedef struct {
  char *root;
  FhPaths paths;
} Fixture;

static void
put (const char *root, const char *rel, const char *content)
{
  g_autofree char *path = g_build_filename (root, rel, NULL);
  g_autofree char *dir = g_path_get_dirname (path);

  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  g_assert_true (g_file_set_contents (path, content, -1, NULL));
}

static char *
get (const char *root, const char *rel)
{
  g_autofree char *path = g_build_filename (root, rel, NULL);
  char *text = NULL;

  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  return text;
}

#define V2_VCPU1 "cgroup/machine.slice/machine-qemu\\x2d1\\x2dvm.scope/libvirt/vcpu1/cpu.uclamp.max"
#define V2_EMU                                                                                     \
  "cgroup/machine.slice/machine-qemu\\x2d1\\x2dvm.scope/libvirt/emulator/cpu.uclamp.max"
#define V1_VCPU2 "cgroup/cpu,cpuacct/machine/vm.libvirt-qemu/vcpu2/cpu.uclamp.max"

static void
fixture_setup (Fixture *f, gconstpointer data)
{

  f->root = g_dir_make_tmp ("fh-mirror-XXXXXX", NULL);
  g_assert_nonnull (f->root);
  put (f->root, "proc/100/cgroup",
       "0::/machine.slice/machine-qemu\\x2d1\\x2dvm.scope/libvirt/vcpu1\n");
  put (f->root, "proc/101/cgroup",
       "0::/machine.slice/machine-qemu\\x2d1\\x2dvm.scope/libvirt/emulator\n");
  put (f->root, "proc/102/cgroup",
       "5:memory:/machine/vm.libvirt-qemu\n2:cpu,cpuacct:/machine/vm.libvirt-qemu/vcpu2\n0::/\n");
  put (f->root, "proc/103/cgroup",
       "0::/machine.slice/machine-qemu\\x2d1\\x2dvm.scope/libvirt/vcpu3\n");
  put (f->root, V2_VCPU1, "max\n");
  put (f->root, V2_EMU, "max\n");
  put (f->root, V1_VCPU2, "max\n");
  /* Only the struct: fh-paths.c belongs to freqhintd; the mirror reads the fields. */
  f->paths.sysfs = g_strdup ("/nonexistent");
  f->paths.proc = g_build_filename (f->root, "proc", NULL);
  f->paths.cgroup = g_build_filename (f->root, "cgroup", NULL);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", f->root);

  g_assert_cmpint (system (cmd), ==, 0);
  g_free (f->paths.sysfs);
  g_free (f->paths.proc);
  g_free (f->paths.cgroup);
  g_free (f->root);
}

static void
test_v2 (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  gboolean written;
  g_autofree char *a = NULL, *b = NULL, *c = NULL;

  g_assert_true (fh_cgroup_mirror_vcpu_ceiling (&f->paths, 100, 1, 5025, &written, &error));
  g_assert_no_error (error);
  g_assert_true (written);
  a = get (f->root, V2_VCPU1);
  g_assert_cmpstr (a, ==, "50.25");
  /* Same value again: nothing written. */
  g_assert_true (fh_cgroup_mirror_vcpu_ceiling (&f->paths, 100, 1, 5025, &written, &error));
  g_assert_false (written);
  /* Back to max. */
  g_assert_true (
      fh_cgroup_mirror_vcpu_ceiling (&f->paths, 100, 1, FH_PERCENT_MAX, &written, &error));
  g_assert_true (written);
  b = get (f->root, V2_VCPU1);
  g_assert_cmpstr (b, ==, "max");
  /* The kernel prints "max" for 100%: no rewrite for 100.00. */
  g_assert_true (fh_cgroup_mirror_vcpu_ceiling (&f->paths, 100, 1, 10000, &written, &error));
  g_assert_false (written);
  /* The emulator's group was never touched. */
  c = get (f->root, V2_EMU);
  g_assert_cmpstr (c, ==, "max\n");
}

static void
test_v1 (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  gboolean written;
  g_autofree char *a = NULL;

  g_assert_true (fh_cgroup_mirror_vcpu_ceiling (&f->paths, 102, 2, 3000, &written, &error));
  g_assert_no_error (error);
  g_assert_true (written);
  a = get (f->root, V1_VCPU2);
  g_assert_cmpstr (a, ==, "30.00");
}

/* Never a group the thread shares, never another vCPU's. */
static void
test_refuses_foreign_groups (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) e1 = NULL, e2 = NULL, e3 = NULL, e4 = NULL;
  g_autofree char *a = NULL, *b = NULL;

  g_assert_false (fh_cgroup_mirror_vcpu_ceiling (&f->paths, 101, 0, 5000, NULL, &e1));
  g_assert_error (e1, FH_MIRROR_ERROR, FH_MIRROR_ERROR_NOT_VCPU_GROUP);
  g_assert_false (fh_cgroup_mirror_vcpu_ceiling (&f->paths, 100, 0, 5000, NULL, &e2));
  g_assert_error (e2, FH_MIRROR_ERROR, FH_MIRROR_ERROR_NOT_VCPU_GROUP);
  a = get (f->root, V2_EMU);
  b = get (f->root, V2_VCPU1);
  g_assert_cmpstr (a, ==, "max\n");
  g_assert_cmpstr (b, ==, "max\n");
  /* Thread gone. */
  g_assert_false (fh_cgroup_mirror_vcpu_ceiling (&f->paths, 999, 0, 5000, NULL, &e3));
  g_assert_error (e3, FH_MIRROR_ERROR, FH_MIRROR_ERROR_FAILED);
  /* vcpu3's group has no cpu.uclamp.max (cpu controller off): no file created, and an
   * error of its own, which the daemon (mirroring by default, MR-27) only logs at debug level. */
  g_assert_false (fh_cgroup_mirror_vcpu_ceiling (&f->paths, 103, 3, 5000, NULL, &e4));
  g_assert_error (e4, FH_MIRROR_ERROR, FH_MIRROR_ERROR_NO_FILE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add ("/cgroup-mirror/v2", Fixture, NULL, fixture_setup, test_v2, fixture_teardown);
  g_test_add ("/cgroup-mirror/v1", Fixture, NULL, fixture_setup, test_v1, fixture_teardown);
  g_test_add ("/cgroup-mirror/refuses-foreign-groups", Fixture, NULL, fixture_setup,
              test_refuses_foreign_groups, fixture_teardown);
  return g_test_run ();
}
