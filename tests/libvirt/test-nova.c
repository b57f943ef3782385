/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Nova's <nova:instance> flavor name and the [nova-flavor NAME] mappings. */
#include <string.h>

#include <glib.h>

#include "fh-nova.h"

static void
test_flavor_name (void)
{
  /* As Nova writes it, and as virDomainGetMetadata returns it (namespace stripped). */
  static const char *const ok[] = {
    /* Parenthesised: one element each, not a missing comma (clang's
     * -Wstring-concatenation asks for this). */
    ("<nova:instance xmlns:nova=\"http://openstack.org/xmlns/libvirt/nova/1.1\">"
     "<nova:package version=\"27.1.0\"/><nova:name>web-1</nova:name>"
     "<nova:flavor name=\"m1.latency\" id=\"42\"><nova:vcpus>2</nova:vcpus></nova:flavor>"
     "<nova:owner><nova:user uuid=\"u\">admin</nova:user></nova:owner></nova:instance>"),
    ("<nova:instance xmlns:nova=\"http://openstack.org/xmlns/libvirt/nova/1.0\">"
     "<nova:flavor name=\"m1.latency\"/></nova:instance>"),
    "<instance><name>web-1</name><flavor name=\"m1.latency\"><vcpus>2</vcpus></flavor></instance>",
  };
  static const char *const bad[] = {
    "<instance><name>web-1</name></instance>",
    "<nova:instance xmlns:nova=\"urn:other\"><nova:flavor name=\"x\"/></nova:instance>",
    "<instance><flavor name=\"\"/></instance>",
    "<freqhint><floor>10</floor></freqhint>",
    "<instance><flavor name=\"x\">",
  };

  for (gsize i = 0; i < G_N_ELEMENTS (ok); i++) {
    g_autoptr (GError) error = NULL;
    g_autofree char *name = fh_nova_flavor_name (ok[i], strlen (ok[i]), &error);

    g_assert_no_error (error);
    g_assert_cmpstr (name, ==, "m1.latency");
  }
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_autoptr (GError) error = NULL;
    g_autofree char *name = fh_nova_flavor_name (bad[i], strlen (bad[i]), &error);

    g_assert_null (name);
    g_assert_nonnull (error);
  }
}

static GHashTable *
load (const char *text, GError **error)
{
  g_autoptr (GKeyFile) kf = g_key_file_new ();

  g_assert_true (g_key_file_load_from_data (kf, text, -1, G_KEY_FILE_NONE, NULL));
  return fh_nova_flavors_from_keyfile (kf, error);
}

static void
test_flavors (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GHashTable) t = load ("[daemon]\nbackend=none\n"
                                   "[nova-flavor m1.latency]\nfloor=30\nguest-hints=off\n"
                                   "[nova-flavor m1.batch]\nceiling=40.5\n",
                                   &error);
  const FhMetadata *md;

  g_assert_no_error (error);
  g_assert_cmpuint (g_hash_table_size (t), ==, 2);
  md = g_hash_table_lookup (t, "m1.latency");
  g_assert_nonnull (md);
  g_assert_cmpuint (md->floor_pct, ==, 3000);
  g_assert_cmpuint (md->ceiling_pct, ==, FH_PERCENT_MAX);
  g_assert_false (md->guest_hints);
  md = g_hash_table_lookup (t, "m1.batch");
  g_assert_cmpuint (md->floor_pct, ==, 0);
  g_assert_cmpuint (md->ceiling_pct, ==, 4050);
  g_assert_true (md->guest_hints);
}

static void
test_flavor_errors (void)
{
  static const char *const bad[] = {
    "[nova-flavor m1]\nflor=30\n",           /* unknown key, named */
    "[nova-flavor m1]\nfloor=600\n",         /* capacity units, not percent */
    "[nova-flavor m1]\nfloor=60\nceiling=50\n",
    "[nova-flavor m1]\nguest-hints=maybe\n",
    "[nova-flavor ]\nfloor=1\n",
  };

  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_autoptr (GError) error = NULL;
    g_autoptr (GHashTable) t = load (bad[i], &error);

    g_assert_null (t);
    g_assert_nonnull (error);
    g_assert_nonnull (strstr (error->message, "[nova-flavor"));
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/nova/flavor-name", test_flavor_name);
  g_test_add_func ("/nova/flavors", test_flavors);
  g_test_add_func ("/nova/flavor-errors", test_flavor_errors);
  return g_test_run ();
}
