/* retain-fill.h - a synthetic profile store for the retention test and
 * bench (tests/store/test-retention.c, bench/bench-retention.c), written
 * with SQL into a file that gpd_store_open made.
 *
 * One uid's contexts form a tree: id 1 is the root, context i (2..nctx)
 * has parent i / 2, one frame each.  Profile k (first .. first+nprof-1,
 * finished in that order: end_ns = t0 + k) refers to `window` contexts
 * starting at 2 + k * (nctx - 1 - window) / (nprof - 1) (the windows
 * overlap and cover every context but the root, as a daemon writes only
 * contexts some profile has), each through a cct_local row and two
 * metric rows, and has `trace` trace_event rows and two strings. */
#ifndef GPD_TESTS_RETAIN_FILL_H
#define GPD_TESTS_RETAIN_FILL_H

#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

typedef struct {
  uint32_t uid;
  int64_t first; /* first profile id */
  int nprof, nctx, window, trace;
  int64_t t0; /* end_ns of profile 0 */
} retain_fill_t;

static int retain_fill_exec(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    fprintf(stderr, "retain_fill: %s: %s\n", sql, msg ? msg : "?");
    sqlite3_free(msg);
    return -1;
  }
  return 0;
}

/* 0 or -1 (printed). */
static int retain_fill(sqlite3 *db, const retain_fill_t *f) {
  sqlite3_stmt *st[6] = {0};
  static const char *sql[6] = {
      "INSERT OR IGNORE INTO context(uid,id,parent,kind,module,build_id,offset,label,raw_name)"
      " VALUES(?1,?2,?3,2,'/usr/lib/libapp.so','0011223344556677',?2*16,'function_'||?2,NULL)",
      "INSERT OR IGNORE INTO frame VALUES(?1,?2,0,'function_'||?2,'/src/app/file.c',?2,0)",
      "INSERT INTO profile(id,pid,ppid,uid,gid,exe,start_ns,end_ns,state,records)"
      " VALUES(?1,?1,1,?2,?2,'/usr/bin/app',?3,?4,'exited',1000)",
      "INSERT INTO cct_local VALUES(?1,?2,?3)",
      "INSERT INTO metric VALUES(?1,?2,?3,?4)",
      "INSERT INTO trace_event VALUES(?1,?2,1,?2,?2+100,0,1,0,3,1,0)",
  };
  int err = retain_fill_exec(db, "BEGIN");
  for (int i = 0; i < 6 && err == 0; i++)
    if (sqlite3_prepare_v2(db, sql[i], -1, &st[i], NULL) != SQLITE_OK) {
      fprintf(stderr, "retain_fill: %s: %s\n", sql[i], sqlite3_errmsg(db));
      err = -1;
    }
#define RF_STEP(q)                                                                                 \
  do {                                                                                             \
    if (err == 0 && sqlite3_step(q) != SQLITE_DONE) {                                              \
      fprintf(stderr, "retain_fill: %s\n", sqlite3_errmsg(db));                                    \
      err = -1;                                                                                    \
    }                                                                                              \
    sqlite3_reset(q);                                                                              \
  } while (0)
  for (int64_t c = 1; c <= f->nctx && err == 0; c++) {
    sqlite3_bind_int64(st[0], 1, f->uid);
    sqlite3_bind_int64(st[0], 2, c);
    sqlite3_bind_int64(st[0], 3, c / 2);
    RF_STEP(st[0]);
    sqlite3_bind_int64(st[1], 1, f->uid);
    sqlite3_bind_int64(st[1], 2, c);
    RF_STEP(st[1]);
  }
  int64_t span = f->nctx - 1 - f->window > 0 ? f->nctx - 1 - f->window : 0;
  for (int k = 0; k < f->nprof && err == 0; k++) {
    int64_t id = f->first + k;
    sqlite3_bind_int64(st[2], 1, id);
    sqlite3_bind_int64(st[2], 2, f->uid);
    sqlite3_bind_int64(st[2], 3, f->t0 + k - 1000);
    sqlite3_bind_int64(st[2], 4, f->t0 + k);
    RF_STEP(st[2]);
    int64_t base = 2 + (f->nprof > 1 ? (int64_t)k * span / (f->nprof - 1) : 0);
    for (int w = 0; w < f->window && err == 0; w++) {
      int64_t c = base + w;
      if (c > f->nctx)
        break;
      sqlite3_bind_int64(st[3], 1, id);
      sqlite3_bind_int64(st[3], 2, w + 1);
      sqlite3_bind_int64(st[3], 3, c);
      RF_STEP(st[3]);
      for (int m = 1; m <= 2; m++) {
        sqlite3_bind_int64(st[4], 1, id);
        sqlite3_bind_int64(st[4], 2, c);
        sqlite3_bind_int64(st[4], 3, m);
        sqlite3_bind_double(st[4], 4, (double)(c * m));
        RF_STEP(st[4]);
      }
    }
    for (int t = 0; t < f->trace && err == 0; t++) {
      sqlite3_bind_int64(st[5], 1, id);
      sqlite3_bind_int64(st[5], 2, t * 1000);
      RF_STEP(st[5]);
    }
    char s[256];
    snprintf(s, sizeof s,
             "INSERT INTO string VALUES(%lld,1,1,'kernel_a'),(%lld,2,1,'kernel_b');",
             (long long)id, (long long)id);
    if (err == 0)
      err = retain_fill_exec(db, s);
  }
#undef RF_STEP
  for (int i = 0; i < 6; i++)
    sqlite3_finalize(st[i]);
  return retain_fill_exec(db, err == 0 ? "COMMIT" : "ROLLBACK") == 0 ? err : -1;
}

#endif
