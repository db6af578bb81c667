/* test-store-read.c - store/'s readers (store-read.h) on real SQLite files
 * made here: rows handed over with their exact values, the pid and uid
 * selections, tables an older file lacks (read as none), a file with a
 * view refused, pmetric blobs decoded, shard names checked. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "store-schema.h"
#include "store-read.h"

static char dir[64], path[128];

/* a format-2 store: pid 100 (uid 1000, CUDA back end, 2 contexts, GKER
 * 3 on one, GKER:COUNT 2 on the other) and pid 200 (uid 1001, nothing recorded, 1 context) */
static const char FILL[] =
    "INSERT INTO meta VALUES('format','gpuprof'),('format_version','2');"
    "INSERT INTO profile(id, pid, uid, gid, exe, hostname, rank, state, records, drops) VALUES"
    "  (1, 100, 1000, 100, '/bin/a', 'n1', 3, 'exited', 7, 1),"
    "  (2, 200, 1001, 100, '/bin/b', 'n1', NULL, 'running', 0, 0);"
    "INSERT INTO backend VALUES(1, 'cuda', 1, 0, 'ok'), (1, 'opencl', 0, -2, 'no library');"
    "INSERT INTO context VALUES(1000, 11, 0, 1, 'a.so', NULL, 16, 'main', 'main'),"
    "  (1000, 12, 11, 3, 'a.so', NULL, 32, 'k', 'kern'), (1001, 21, 0, 1, NULL, NULL, 0, 'main', 'main');"
    "INSERT INTO frame VALUES(1000, 11, 0, 'main', 'a.c', 5, 0), (1000, 11, 1, 'helper', 'a.c', 9, 1),"
    "  (1001, 21, 0, 'main', 'b.c', 2, 0);"
    "INSERT INTO gpubin VALUES('0123456789abcdef0123456789abcdef', 'cubin', 4096, 'gpubins/x.gpubin', 1);";

static int setup(void **state) {
  (void)state;
  sqlite3 *db = NULL;
  char *msg = NULL;
  char sql[256];
  snprintf(dir, sizeof dir, "/tmp/gpd-store-read-XXXXXX");
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/a.gpdb", dir);
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, GPD_STORE_SCHEMA, NULL, NULL, &msg), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, FILL, NULL, NULL, &msg), SQLITE_OK);
  snprintf(sql, sizeof sql, "INSERT INTO metric VALUES(1, 12, %d, 3.0), (1, 11, %d, 2.0)", GPD_M_GKER,
           GPD_M_GKER_COUNT);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK);
  sqlite3_close(db);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

typedef struct seen_s {
  int profiles, backends, contexts, frames, bins;
  int pids[4], used[4];
  double sum;
  char first_api[16];
} seen_t;

static int on_profile(void *c, const gpd_store_profile_t *p) {
  seen_t *s = c;
  if (s->profiles < 4) s->pids[s->profiles] = p->pid, s->used[s->profiles] = p->used_gpu;
  s->profiles++;
  if (p->pid == 100) {
    assert_int_equal(p->rank, 3);
    assert_int_equal(p->local_rank, -1);
    assert_int_equal(p->records, 7);
    assert_string_equal(p->exe, "/bin/a");
    assert_string_equal(p->job_id, ""); /* NULL: "" */
  }
  return p->pid == 200 ? 1 : 0;
}

static int on_backend(void *c, const gpd_store_backend_t *b) {
  seen_t *s = c;
  if (s->backends++ == 0) snprintf(s->first_api, sizeof s->first_api, "%s", b->api);
  if (!strcmp(b->api, "opencl")) {
    assert_int_equal(b->enabled, 0);
    assert_int_equal(b->code, -2);
    assert_string_equal(b->reason, "no library");
  }
  return 0;
}

static void test_profiles(void **state) {
  (void)state;
  sqlite3 *db = NULL;
  char err[256];
  seen_t s = {0};
  gpd_store_meta_t m;
  assert_int_equal(gpd_store_file_open(path, &db, err, sizeof err), 0);
  assert_int_equal(gpd_store_file_meta(db, &m, path, err, sizeof err), 0);
  assert_int_equal(m.has_format, 1);
  assert_string_equal(m.format, "gpuprof");
  assert_int_equal(m.version, 2);
  assert_int_equal(gpd_store_profile_each(db, 0, on_profile, on_backend, &s, path, err, sizeof err), 0);
  assert_int_equal(s.profiles, 2);
  assert_int_equal(s.pids[0], 100);
  assert_int_equal(s.used[0], 1);
  assert_int_equal(s.pids[1], 200);
  assert_int_equal(s.used[1], 0);
  assert_int_equal(s.backends, 2); /* both of pid 100, by api */
  assert_string_equal(s.first_api, "cuda");
  memset(&s, 0, sizeof s);
  assert_int_equal(gpd_store_profile_each(db, 200, on_profile, on_backend, &s, path, err, sizeof err), 0);
  assert_int_equal(s.profiles, 1);
  assert_int_equal(s.backends, 0);
  gpd_store_file_close(db);
  assert_int_equal(gpd_store_profile_has_cuda(path), 1);
}

static int on_context(void *c, const gpd_store_context_t *x) {
  seen_t *s = c;
  s->contexts++;
  if (x->id == 12) {
    assert_int_equal(x->parent, 11);
    assert_int_equal(x->offset, 32);
    assert_string_equal(x->raw_name, "kern");
  }
  return 0;
}

static int on_frame(void *c, const gpd_store_frame_t *f) {
  seen_t *s = c;
  if (s->frames++ == 1) {
    assert_int_equal(f->depth, 1);
    assert_int_equal(f->line, 9);
    assert_int_equal(f->inlined, 1);
    assert_string_equal(f->function, "helper");
  }
  return 0;
}

static int on_value(void *c, int64_t ctx, uint32_t metric, double v) {
  seen_t *s = c;
  s->sum += v * (double)(ctx == 12 && metric == GPD_M_GKER ? 1 : 10);
  return 0;
}

static int on_bin(void *c, const gpd_store_gpubin_t *g) {
  seen_t *s = c;
  s->bins++;
  assert_int_equal(g->size, 4096);
  assert_string_equal(g->kind, "cubin");
  return 0;
}

static int stop(void *c, const gpd_store_context_t *x) {
  (void)c, (void)x;
  return -ENOMEM;
}

static void test_tree(void **state) {
  (void)state;
  sqlite3 *db = NULL;
  char err[256];
  seen_t s = {0};
  assert_int_equal(gpd_store_file_open(path, &db, err, sizeof err), 0);
  /* pid 100: the labels of uid 1000 only */
  assert_int_equal(gpd_store_context_each(db, 100, on_context, &s, path, err, sizeof err), 0);
  assert_int_equal(s.contexts, 2);
  assert_int_equal(gpd_store_context_frames(db, 100, on_frame, &s, path, err, sizeof err), 0);
  assert_int_equal(s.frames, 2);
  s.contexts = 0;
  assert_int_equal(gpd_store_context_each(db, 0, on_context, &s, path, err, sizeof err), 0);
  assert_int_equal(s.contexts, 3);
  /* GKER 3 on context 12 (x1), GKER:COUNT 2 on 11 (x10) */
  assert_int_equal(gpd_store_metric_sums(db, 0, 0, on_value, &s, path, err, sizeof err), 0);
  assert_true(s.sum == 23.0);
  s.sum = 0;
  assert_int_equal(gpd_store_metric_sums(db, 200, 0, on_value, &s, path, err, sizeof err), 0);
  assert_true(s.sum == 0.0);
  assert_int_equal(gpd_store_gpubin_each(db, on_bin, &s, path, err, sizeof err), 0);
  assert_int_equal(s.bins, 1);
  /* a callback's error stops the reading and comes back, named */
  assert_int_equal(gpd_store_context_each(db, 0, stop, &s, path, err, sizeof err), -ENOMEM);
  assert_non_null(strstr(err, path));
  /* a format-2 file has no merged statistics */
  assert_int_equal(gpd_store_metric_sums(db, 0, 1, on_value, &s, path, err, sizeof err), GPD_ESTORE);
  assert_non_null(strstr(err, "merged values"));
  gpd_store_file_close(db);
}

static void test_absent_tables(void **state) {
  (void)state;
  sqlite3 *db = NULL;
  char err[256];
  gpd_store_pcstat_t ps;
  gpd_store_trace_reader_t tr;
  uint64_t dropped = 0, refused = 0;
  assert_int_equal(gpd_store_file_open(path, &db, err, sizeof err), 0);
  assert_int_equal(gpd_store_pcsample_has(db), 0);
  assert_int_equal(gpd_store_pcsample_stat(db, 0, &ps), 0);
  assert_int_equal(gpd_store_duty_any(db, 0), 0);
  gpd_store_trace_read_init(&tr, db);
  assert_int_equal(tr.has_trace, 0);
  assert_int_equal(gpd_store_trace_read_count_events(&tr, 1), 0);
  gpd_store_trace_read_stat(&tr, 1, &dropped, &refused);
  assert_int_equal(dropped + refused, 0);
  assert_int_equal(gpd_store_file_has_column(db, "context", "uid"), 1);
  assert_int_equal(gpd_store_file_has_column(db, "context", "nope"), 0);
  gpd_store_file_close(db);
}

static void test_view_refused(void **state) {
  (void)state;
  sqlite3 *db = NULL;
  char p[160], err[256];
  snprintf(p, sizeof p, "%s/v.gpdb", dir);
  assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "CREATE TABLE meta(key, value); CREATE VIEW x AS SELECT 1", NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  db = NULL;
  assert_int_equal(gpd_store_file_open(p, &db, err, sizeof err), -EINVAL);
  assert_null(db);
  assert_non_null(strstr(err, "view"));
}

static int count_rec(void *c, int64_t ctx, uint32_t metric, double v) {
  double *sum = c;
  *sum += (double)ctx + metric + v;
  return 0;
}

/* a second file with the trace, PC-sample and window tables */
static const char TRACED[] =
    "INSERT INTO meta VALUES('format','gpuprof'),('format_version','2');"
    "INSERT INTO profile(id, pid, uid, gid, state) VALUES(1, 300, 1000, 100, 'exited'), (2, 301, 1000, 100, 'exited');"
    "INSERT INTO trace_event VALUES(1, 2000, 7, 2, 2500, 0, 1, 0, 12, 0, 0), (1, 1000, 7, 1, 1800, 0, 1, 0, 12, 0, 0),"
    "  (2, 5000, 1, 1, 5100, 0, 2, 1, 0, 0, 64);"
    "INSERT INTO trace_launch VALUES(1, 900, 42, 1, 11, 1), (1, 1900, 42, 2, 11, 1);"
    "INSERT INTO trace_stat VALUES(1, 2, 3, 4);"
    "INSERT INTO trace_cpu_sample VALUES(1, 42, 950, 11);"
    "INSERT INTO trace_duty VALUES(1, 1, 1, 0, 10000, 1, 2, 2000), (2, 1, 0, 0, 10000, 1, 1, 500);"
    "INSERT INTO trace_window VALUES(1, 5000, 6000), (1, 500, 1500);"
    "INSERT INTO trace_duty_launch VALUES(1, 40, 10);"
    "INSERT INTO pcsample_cubin VALUES(1, 9, 'ffffffffffffffffffffffffffffffff');"
    "INSERT INTO string VALUES(1, 1, 0, 'kern'), (1, 2, 0, 'smsp__pcsamp_warps_issue_stalled_wait'),"
    "  (2, 1, 0, 'kern'), (2, 2, 0, 'selected');"
    "INSERT INTO pcsample VALUES(1, 9, 1, 256, 2, 0, 5, 0), (2, 9, 1, 256, 2, 0, 3, 0), (2, 9, 1, 256, 2, 1, 1, 0);"
    "INSERT INTO pcsample_stat VALUES(1, 0, 5, 132, 1500000, 5, 1, 0, 0), (2, 0, 6, 114, 1400000, 4, 0, 0, 2);";

typedef struct tseen_s {
  uint64_t starts[4], windows[4];
  int nev, nla, ncs, nwin, nduty, npcs;
  uint64_t duty_profile;
  double samples;
  char hash2[40];
} tseen_t;

static int t_ev(void *c, const gpd_trace_row_t *e) {
  tseen_t *t = c;
  if (t->nev < 4) t->starts[t->nev] = e->start;
  t->nev++;
  assert_int_equal(e->node, 12);
  return 0;
}
static int t_la(void *c, const gpd_trace_lrow_t *l) {
  tseen_t *t = c;
  t->nla++;
  assert_int_equal(l->tid, 42);
  return 0;
}
static int t_cs(void *c, uint32_t tid, uint64_t ts, uint64_t node) {
  tseen_t *t = c;
  t->ncs++;
  assert_int_equal(tid, 42);
  assert_int_equal(ts, 950);
  assert_int_equal(node, 11);
  return 0;
}
static int t_duty(void *c, const gpd_store_duty_t *d) {
  tseen_t *t = c;
  t->nduty++;
  t->duty_profile = d->profile;
  assert_int_equal(d->windows, 2);
  assert_int_equal(d->window_ns, 2000);
  assert_int_equal(d->end, 10000);
  return 0;
}
static int t_win(void *c, uint64_t start) {
  tseen_t *t = c;
  if (t->nwin < 4) t->windows[t->nwin] = start;
  t->nwin++;
  return 0;
}
static int t_pcs(void *c, const gpd_store_pcsample_t *s) {
  tseen_t *t = c;
  t->npcs++;
  t->samples += s->samples;
  assert_int_equal(s->pc, 256);
  assert_string_equal(s->func, "kern");
  if (!strcmp(s->stall, "selected")) snprintf(t->hash2, sizeof t->hash2, "%s", s->hash);
  return 0;
}

static void test_traced(void **state) {
  (void)state;
  sqlite3 *db = NULL;
  char p[160], err[256];
  tseen_t t = {0};
  gpd_store_trace_reader_t tr;
  gpd_store_pcstat_t ps;
  uint64_t dropped = 0, refused = 0;
  int64_t all, in;
  snprintf(p, sizeof p, "%s/t.gpdb", dir);
  assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, GPD_STORE_SCHEMA GPD_PCSAMPLE_SCHEMA GPD_TRACE_SCHEMA GPD_TRACEWIN_SCHEMA,
                                NULL, NULL, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, TRACED, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
  db = NULL;
  assert_int_equal(gpd_store_file_open(p, &db, err, sizeof err), 0);
  gpd_store_trace_read_init(&tr, db);
  assert_int_equal(tr.has_trace, 1);
  assert_int_equal(tr.cpu_sample, 2); /* trace_cpu_sample names it `profile` */
  assert_int_equal(gpd_store_trace_read_count_events(&tr, 1), 2);
  assert_int_equal(gpd_store_trace_read_count_launches(&tr, 1), 2);
  assert_int_equal(gpd_store_trace_read_events(&tr, 1, t_ev, &t), 0);
  assert_int_equal(t.nev, 2);
  assert_int_equal(t.starts[0], 1000); /* by start */
  assert_int_equal(t.starts[1], 2000);
  assert_int_equal(gpd_store_trace_read_launches(&tr, 1, t_la, &t), 0);
  assert_int_equal(t.nla, 2);
  assert_int_equal(gpd_store_trace_read_cpu_samples(&tr, 1, t_cs, &t), 0);
  assert_int_equal(t.ncs, 1);
  gpd_store_trace_read_stat(&tr, 1, &dropped, &refused);
  assert_int_equal(dropped, 3);
  assert_int_equal(refused, 4);
  /* duty: only profile 1 has duty = 1 */
  assert_int_equal(gpd_store_duty_any(db, 0), 1);
  assert_int_equal(gpd_store_duty_any(db, 301), 0);
  assert_int_equal(gpd_store_duty_each(db, 0, t_duty, &t), 0);
  assert_int_equal(t.nduty, 1);
  assert_int_equal(t.duty_profile, 1);
  assert_int_equal(gpd_store_duty_windows(db, 1, t_win, &t), 0);
  assert_int_equal(t.nwin, 2);
  assert_int_equal(t.windows[0], 500);
  assert_int_equal(gpd_store_duty_launches(db, 1, &all, &in), 1);
  assert_int_equal(all, 40);
  assert_int_equal(in, 10);
  assert_int_equal(gpd_store_duty_launches(db, 2, &all, &in), 0);
  /* PC samples: profile 2 has no pcsample_cubin row: its binary id 9
   * takes the hash profile 1 gave it when guessing, "" when not */
  assert_int_equal(gpd_store_pcsample_has(db), 1);
  assert_int_equal(gpd_store_pcsample_each(db, 0, 1, t_pcs, &t, err, sizeof err), 0);
  assert_int_equal(t.npcs, 2); /* (kern, hash, 256, stall) x 2 stalls */
  assert_true(t.samples == 9.0);
  assert_string_equal(t.hash2, "ffffffffffffffffffffffffffffffff");
  memset(&t, 0, sizeof t);
  assert_int_equal(gpd_store_pcsample_each(db, 301, 0, t_pcs, &t, err, sizeof err), 0);
  assert_int_equal(t.npcs, 1);
  assert_true(t.samples == 4.0);
  assert_string_equal(t.hash2, "");
  assert_int_equal(gpd_store_pcsample_stat(db, 0, &ps), 1);
  assert_true(ps.total == 9.0 && ps.dropped == 1.0 && ps.lost_keys == 2.0);
  assert_int_equal(ps.period_log2, 6);
  assert_int_equal(ps.sm_count, 132);
  gpd_store_file_close(db);
}

static void test_decode_names(void **state) {
  (void)state;
  uint8_t b[2 * GPD_STORE_PMETRIC_REC];
  int64_t ctx[2] = {5, -7};
  uint32_t m[2] = {1, 2};
  double v[2] = {0.5, 100};
  double sum = 0;
  for (int i = 0; i < 2; i++) {
    memcpy(b + i * GPD_STORE_PMETRIC_REC, &ctx[i], 8);
    memcpy(b + i * GPD_STORE_PMETRIC_REC + 8, &m[i], 4);
    memcpy(b + i * GPD_STORE_PMETRIC_REC + 12, &v[i], 8);
  }
  assert_int_equal(gpd_store_metric_decode(b, sizeof b, count_rec, &sum), 0);
  assert_true(sum == 5 + 1 + 0.5 - 7 + 2 + 100);
  assert_int_equal(gpd_store_metric_decode(b, sizeof b - 1, count_rec, &sum), -EINVAL);
  assert_int_equal(gpd_store_shard_name_ok("job.gpdb.shard-001"), 1);
  assert_int_equal(gpd_store_shard_name_ok("../x"), 0);
  assert_int_equal(gpd_store_shard_name_ok(".hidden"), 0);
  assert_int_equal(gpd_store_shard_name_ok("a/b"), 0);
  assert_int_equal(gpd_store_shard_name_ok(""), 0);
  assert_true(gpd_store_shard_max() >= 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_profiles),     cmocka_unit_test(test_tree),         cmocka_unit_test(test_absent_tables),
      cmocka_unit_test(test_view_refused), cmocka_unit_test(test_traced),      cmocka_unit_test(test_decode_names),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
