/* test-config.c - daemon/config.c: defaults, good file, every kind of bad
 * line with its exact "file:line: ..." message, env override, reload, and
 * the shipped systemd/gpuprofd.conf + docs/SERVICE.md against the table.
 *
 * Env GPD_SRC_DIR: the source tree (for the shipped conf and docs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"

static char tmpdir[] = "/tmp/gpd-test-config-XXXXXX";

#include "conf-file.h"

static int setup(void **state) {
  (void)state;
  unsetenv("GPUPROF_STATE_DIR");
  return 0;
}

static void test_defaults(void **state) {
  (void)state;
  gpd_config_t c;
  gpd_config_defaults(&c);
  assert_string_equal(c.socket, GPD_DEFAULT_SOCKET);
  assert_string_equal(c.state_dir, GPD_DEFAULT_STATE_DIR);
  assert_string_equal(c.db_name, "gpuprofd.gpdb");
  assert_int_equal(c.rings, 64);
  assert_int_equal(c.ring_slots, 131072);
  assert_string_equal(c.admin_group, "");
  assert_int_equal(c.flush_ms, 1000);
  assert_int_equal(c.retain_age_s, 604800);
  assert_int_equal(c.retain_bytes, 1ull << 30);
  assert_int_equal(c.log_level, GPD_LOG_WARN);
  assert_int_equal(c.max_clients, 4096);
  assert_int_equal(c.poll_us, 200);
  assert_int_equal(c.max_clients_per_uid, 1024);
  assert_int_equal(c.clients_reserve, 64);
  assert_int_equal(c.clients_reserve_per_uid, 4);
  assert_int_equal(c.idle_timeout_ms, 10000);
  assert_int_equal(c.client_out_max, 16ull << 20);
  assert_int_equal(c.limit_log_interval_s, 60);
}

static void test_missing_file(void **state) {
  (void)state;
  gpd_config_t c;
  char err[512];
  char path[600];
  snprintf(path, sizeof path, "%s/nope.conf", tmpdir);
  gpd_config_defaults(&c);
  /* Not named explicitly: defaults stand, no error. */
  assert_int_equal(gpd_config_load(&c, path, 0, err, sizeof err), 0);
  assert_int_equal(c.rings, 64);
  /* Named explicitly: an error naming the file. */
  assert_int_equal(gpd_config_load(&c, path, 1, err, sizeof err), GPD_ECONFIG);
  assert_non_null(strstr(err, path));
  assert_non_null(strstr(err, "No such file"));
}

static void test_good_file(void **state) {
  (void)state;
  gpd_config_t c;
  char err[512] = "";
  const char *p = write_conf("good.conf",
                             "; comment\n"
                             "# another\n"
                             "[daemon]\n"
                             "socket = /tmp/x.sock\n"
                             "state_dir = /srv/gpd\n"
                             "log_level = debug\n"
                             "max_clients = 0x100\n"
                             "max_clients_per_uid = 16\n"
                             "clients_reserve = 8\n"
                             "clients_reserve_per_uid = 2\n"
                             "idle_timeout_ms = 1500ms\n"
                             "client_out_max = 1M\n"
                             "limit_log_interval_s = 2m\n"
                             "\n"
                             "[store]\n"
                             "db = other.gpdb\n"
                             "flush_interval_ms = 2s\n"
                             "retention_max_age_s = 3d   ; inline comment\n"
                             "retention_max_bytes = 512M\n"
                             "[shm]\n"
                             "rings_per_process = 8\n"
                             "ring_slots = 1024\n"
                             "[access]\n"
                             "admin_group = gpuprof\n"
                             "[monitor]\n"
                             "poll_interval_us = 1ms\n");
  gpd_config_defaults(&c);
  assert_int_equal(gpd_config_load(&c, p, 1, err, sizeof err), 0);
  assert_string_equal(err, "");
  assert_string_equal(c.socket, "/tmp/x.sock");
  assert_string_equal(c.state_dir, "/srv/gpd");
  assert_int_equal(c.log_level, GPD_LOG_DEBUG);
  assert_int_equal(c.max_clients, 256);
  assert_string_equal(c.db_name, "other.gpdb");
  assert_int_equal(c.flush_ms, 2000);
  assert_int_equal(c.retain_age_s, 3 * 86400);
  assert_int_equal(c.retain_bytes, 512ull << 20);
  assert_int_equal(c.rings, 8);
  assert_int_equal(c.ring_slots, 1024);
  assert_string_equal(c.admin_group, "gpuprof");
  assert_int_equal(c.poll_us, 1000);
  assert_int_equal(c.max_clients_per_uid, 16);
  assert_int_equal(c.clients_reserve, 8);
  assert_int_equal(c.clients_reserve_per_uid, 2);
  assert_int_equal(c.idle_timeout_ms, 1500);
  assert_int_equal(c.client_out_max, 1ull << 20);
  assert_int_equal(c.limit_log_interval_s, 120);
}

/* One bad line per case, always on line 3, with the exact message. */
static void test_bad_lines(void **state) {
  (void)state;
  static const struct {
    const char *section, *line, *reason;
  } cases[] = {
      {"bogus", "x = 1", "'x = 1': unknown section [bogus]"},
      {"daemon", "sockett = /a", "'sockett = /a': unknown key 'sockett' in [daemon]"},
      {"shm", "rings_per_process = 12abc", "'rings_per_process = 12abc': not a number"},
      {"shm", "rings_per_process = -1", "'rings_per_process = -1': not a number"},
      {"shm", "rings_per_process = 0", "'rings_per_process = 0': out of range [1, 4096]"},
      {"shm", "rings_per_process = 99999999999999999999999",
       "'rings_per_process = 99999999999999999999999': out of range [1, 4096]"},
      {"shm", "ring_slots = 1000", "'ring_slots = 1000': not a power of two"},
      {"shm", "ring_slots = 32", "'ring_slots = 32': out of range [64, 16777216]"},
      {"store", "retention_max_bytes = 12Q",
       "'retention_max_bytes = 12Q': not a size (number with optional K, M, G, T)"},
      {"store", "flush_interval_ms = soon",
       "'flush_interval_ms = soon': not a duration (number with optional us, ms, s, m, h, d)"},
      {"store", "flush_interval_ms = 2h", "'flush_interval_ms = 2h': out of range [10, 3600000]"},
      {"store", "retention_max_age_s = 10ms",
       "'retention_max_age_s = 10ms': finer than the key's unit"},
      {"daemon", "idle_timeout_ms = 50ms",
       "'idle_timeout_ms = 50ms': out of range [100, 86400000]"},
      {"daemon", "clients_reserve_per_uid = 0",
       "'clients_reserve_per_uid = 0': out of range [1, 1048576]"},
      {"daemon", "client_out_max = 1K", "'client_out_max = 1K': out of range [65536, 1073741824]"},
      {"daemon", "log_level = loud", "'log_level = loud': expected error, warn, info or debug"},
      {"daemon", "state_dir = relative/dir", "'state_dir = relative/dir': must be an absolute path"},
      {"store", "db =", "'db = ': must not be empty"},
      {"access", "admin_group = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
       "'admin_group = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa': "
       "too long (at most 63 bytes)"},
      {"daemon", "this line has no equals sign",
       "'this line has no equals sign': syntax error (expected [section] or key = value)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[512], err[512], want[1024];
    gpd_config_t c, before;
    snprintf(text, sizeof text, "# case %zu\n[%s]\n%s\n[shm]\nring_slots = 7\n", i,
             cases[i].section, cases[i].line);
    const char *p = write_conf("bad.conf", text);
    gpd_config_defaults(&c);
    before = c;
    int rc = gpd_config_load(&c, p, 1, err, sizeof err);
    snprintf(want, sizeof want, "%s:3: %s", p, cases[i].reason);
    if (rc != GPD_ECONFIG || strcmp(err, want) != 0)
      fail_msg("case %zu: rc %d\n got: %s\nwant: %s", i, rc, err, want);
    /* The field the bad line named keeps its previous value. */
    assert_int_equal(c.rings, before.rings);
    assert_int_equal(c.ring_slots == before.ring_slots || c.ring_slots == 7, 1);
  }
}

/* The first bad line wins, even if a later line is also bad. */
static void test_first_error_wins(void **state) {
  (void)state;
  gpd_config_t c;
  char err[512], want[600];
  const char *p = write_conf("two.conf", "[shm]\nring_slots = 64\nring_slots = 96\nnonsense\n");
  gpd_config_defaults(&c);
  assert_int_equal(gpd_config_load(&c, p, 1, err, sizeof err), GPD_ECONFIG);
  snprintf(want, sizeof want, "%s:3: 'ring_slots = 96': not a power of two", p);
  assert_string_equal(err, want);

  p = write_conf("two.conf", "[shm]\nnonsense\nring_slots = 3\n");
  assert_int_equal(gpd_config_load(&c, p, 1, err, sizeof err), GPD_ECONFIG);
  snprintf(want, sizeof want,
           "%s:2: 'nonsense': syntax error (expected [section] or key = value)", p);
  assert_string_equal(err, want);
}

static void test_env_override(void **state) {
  (void)state;
  gpd_config_t c;
  char err[512];
  const char *p = write_conf("env.conf", "[daemon]\nstate_dir = /from/file\n");
  setenv("GPUPROF_STATE_DIR", "/from/env", 1);
  gpd_config_defaults(&c);
  assert_int_equal(gpd_config_load(&c, p, 1, err, sizeof err), 0);
  assert_string_equal(c.state_dir, "/from/env");
  /* Also when there is no file at all. */
  gpd_config_defaults(&c);
  assert_int_equal(gpd_config_load(&c, "/nonexistent/gpuprofd.conf", 0, err, sizeof err), 0);
  assert_string_equal(c.state_dir, "/from/env");
  unsetenv("GPUPROF_STATE_DIR");
  gpd_config_defaults(&c);
  assert_int_equal(gpd_config_load(&c, p, 1, err, sizeof err), 0);
  assert_string_equal(c.state_dir, "/from/file");
}

static void test_reload_live_only(void **state) {
  (void)state;
  gpd_config_t c;
  char err[512];
  const char *p = write_conf("r1.conf", "[shm]\nring_slots = 256\n[daemon]\nlog_level = info\n");
  gpd_config_defaults(&c);
  assert_int_equal(gpd_config_load(&c, p, 1, err, sizeof err), 0);
  assert_int_equal(c.ring_slots, 256);

  /* The file changes live and non-live keys, and drops log_level. */
  p = write_conf("r1.conf",
                 "[shm]\nring_slots = 4096\nrings_per_process = 2\n"
                 "[daemon]\nsocket = /other.sock\nstate_dir = /elsewhere\nmax_clients = 9\n"
                 "[access]\nadmin_group = wheel\n"
                 "[store]\nflush_interval_ms = 50\nretention_max_age_s = 1h\n"
                 "retention_max_bytes = 2G\ndb = x.gpdb\n"
                 "[monitor]\npoll_interval_us = 1000\n");
  assert_int_equal(gpd_config_reload(&c, p, err, sizeof err), 0);
  /* Live: taken (log_level back to its default since the key is gone). */
  assert_string_equal(c.admin_group, "wheel");
  assert_int_equal(c.flush_ms, 50);
  assert_int_equal(c.retain_age_s, 3600);
  assert_int_equal(c.retain_bytes, 2ull << 30);
  assert_int_equal(c.poll_us, 1000);
  assert_int_equal(c.log_level, GPD_LOG_WARN);
  /* Not live: kept. */
  assert_int_equal(c.ring_slots, 256);
  assert_int_equal(c.rings, 64);
  assert_string_equal(c.socket, GPD_DEFAULT_SOCKET);
  assert_string_equal(c.state_dir, GPD_DEFAULT_STATE_DIR);
  assert_int_equal(c.max_clients, 4096);
  assert_string_equal(c.db_name, "gpuprofd.gpdb");

  /* A bad reload leaves everything as it was. */
  gpd_config_t before = c;
  p = write_conf("r1.conf", "[access]\nadmin_group = other\n[store]\nflush_interval_ms = 1\n");
  assert_int_equal(gpd_config_reload(&c, p, err, sizeof err), GPD_ECONFIG);
  assert_non_null(strstr(err, ":4: 'flush_interval_ms = 1': out of range"));
  assert_memory_equal(&c, &before, sizeof c);
}

/* The shipped conf, with every key uncommented, parses to the defaults. */
static void test_shipped_conf(void **state) {
  (void)state;
  const char *src = getenv("GPD_SRC_DIR");
  char path[1024], line[1024], err[512];
  size_t keys = 0;
  if (!src) skip();
  snprintf(path, sizeof path, "%s/systemd/gpuprofd.conf", src);
  FILE *in = fopen(path, "r");
  assert_non_null(in);
  char out_path[600];
  snprintf(out_path, sizeof out_path, "%s/uncommented.conf", tmpdir);
  FILE *out = fopen(out_path, "w");
  assert_non_null(out);
  while (fgets(line, sizeof line, in)) {
    if (line[0] == ';' && strchr(line, '=')) {
      fputs(line + 1, out);
      keys++;
    } else {
      fputs(line, out);
    }
  }
  fclose(in);
  fclose(out);
  assert_int_equal(keys, gpd_config_nkeys());
  gpd_config_t c, d;
  gpd_config_defaults(&d);
  memset(&c, 0x5a, sizeof c);
  gpd_config_defaults(&c);
  memset(c.socket, 0, sizeof c.socket); /* must come back from the file */
  assert_int_equal(gpd_config_load(&c, out_path, 1, err, sizeof err), 0);
  /* every [collect] key is named in the file (the defaults: none) */
  assert_int_equal(c.collect_set, (1u << GPD_COLLECT_NKEYS) - 1);
  c.collect_set = 0;
  assert_memory_equal(&c, &d, sizeof c);
}

/* docs/SERVICE.md carries one table row per key, as the table describes it. */
static void test_docs_table(void **state) {
  (void)state;
  const char *src = getenv("GPD_SRC_DIR");
  char path[1024];
  if (!src) skip();
  snprintf(path, sizeof path, "%s/docs/SERVICE.md", src);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char doc[1 << 17];
  size_t n = fread(doc, 1, sizeof doc - 1, f);
  fclose(f);
  doc[n] = '\0';
  for (size_t i = 0; i < gpd_config_nkeys(); i++) {
    char row[512];
    assert_int_equal(gpd_config_key_describe(i, row, sizeof row), 0);
    if (!strstr(doc, row)) fail_msg("docs/SERVICE.md lacks the row:\n%s", row);
  }
  assert_int_equal(gpd_config_key_describe(gpd_config_nkeys(), NULL, 0), -22);
}

int main(void) {
  if (!mkdtemp(tmpdir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_defaults, setup),
      cmocka_unit_test_setup(test_missing_file, setup),
      cmocka_unit_test_setup(test_good_file, setup),
      cmocka_unit_test_setup(test_bad_lines, setup),
      cmocka_unit_test_setup(test_first_error_wins, setup),
      cmocka_unit_test_setup(test_env_override, setup),
      cmocka_unit_test_setup(test_reload_live_only, setup),
      cmocka_unit_test_setup(test_shipped_conf, setup),
      cmocka_unit_test_setup(test_docs_table, setup),
  };
  int rc = cmocka_run_group_tests_name("config", tests, NULL, NULL);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) rc = rc ? rc : 1;
  return rc;
}
