/* open.c - guarded read-only opening of a .gpdb (store-open.h). */
#include "store-open.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuprof/error.h"

/* VM steps between two looks at the clock (a few microseconds) */
#define STORE_PROGRESS_STEPS 1000

/* What the progress handler of one connection needs; freed with the
 * connection (the destructor of the gpd_store_guard SQL function). */
typedef struct store_guard_s {
  double deadline; /* CLOCK_MONOTONIC seconds; 0: none */
  double timeout;
  int fired;
  char label[];
} store_guard_t;

static double store_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int store_progress(void *arg) {
  store_guard_t *g = arg;
  if (g->fired) return 1;
  if (store_now() < g->deadline) return 0;
  g->fired = 1;
  fprintf(stderr, "%s: %s: reading stopped after %g s (GPUPROF_READ_TIMEOUT): a damaged or hostile profile?\n",
          program_invocation_short_name, g->label, g->timeout);
  return 1;
}

/* a function nobody calls: its destructor frees the guard at close */
static void store_guard_fn(sqlite3_context *c, int n, sqlite3_value **v) {
  (void)n, (void)v;
  sqlite3_result_null(c);
}

double gpd_store_read_timeout(void) {
  const char *e = getenv("GPUPROF_READ_TIMEOUT");
  char *end;
  if (!e || !*e) return GPD_STORE_READ_TIMEOUT_S;
  double t = strtod(e, &end);
  return *end || t < 0 || t != t ? GPD_STORE_READ_TIMEOUT_S : t;
}

int gpd_store_check_schema(sqlite3 *db, const char *schema, const char *label, char *err, size_t errn) {
  sqlite3_stmt *st = NULL;
  char *sql = sqlite3_mprintf("SELECT type, name FROM \"%w\".sqlite_master WHERE type NOT IN ('table', 'index') "
                              "OR (type = 'table' AND sql LIKE 'CREATE VIRTUAL%%') LIMIT 1",
                              schema);
  int e = 0, rc;
  if (!sql || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    snprintf(err, errn, "%s: not a gpuprof profile (%s)", label, sql ? sqlite3_errmsg(db) : "out of memory");
    e = GPD_ESTORE;
  } else if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *type = (const char *)sqlite3_column_text(st, 0), *name = (const char *)sqlite3_column_text(st, 1);
    snprintf(err, errn, "%s: refused: it has a %s%s '%s' (a gpuprof profile has only tables and indexes)", label,
             strcmp(type ? type : "", "table") ? "" : "virtual ", type ? type : "?", name ? name : "?");
    e = -EINVAL;
  } else if (rc != SQLITE_DONE) {
    snprintf(err, errn, "%s: not a gpuprof profile (%s)", label, sqlite3_errmsg(db));
    e = GPD_ESTORE;
  }
  sqlite3_finalize(st);
  sqlite3_free(sql);
  return e;
}

int gpd_store_open_readonly(const char *name, const char *label, int flags, sqlite3 **db, char *err, size_t errn) {
  size_t ln = strlen(label);
  store_guard_t *g = calloc(1, sizeof *g + ln + 1);
  int e = GPD_ESTORE;
  *db = NULL;
  if (!g) {
    snprintf(err, errn, "%s: out of memory", label);
    return -ENOMEM;
  }
  memcpy(g->label, label, ln + 1);
  g->timeout = gpd_store_read_timeout();
  g->deadline = g->timeout > 0 ? store_now() + g->timeout : 0;
  if (sqlite3_open_v2(name, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW | flags, NULL) != SQLITE_OK) {
    snprintf(err, errn, "cannot open %s: %s", label, *db ? sqlite3_errmsg(*db) : "out of memory");
    free(g);
    goto fail;
  }
  /* the guard lives as long as the connection */
  if (sqlite3_create_function_v2(*db, "gpd_store_guard", 0, SQLITE_UTF8, g, store_guard_fn, NULL, NULL, free) !=
      SQLITE_OK) {
    snprintf(err, errn, "cannot open %s: %s", label, sqlite3_errmsg(*db));
    goto fail; /* g: freed by SQLite (xDestroy) when this fails */
  }
  if (g->deadline > 0) sqlite3_progress_handler(*db, STORE_PROGRESS_STEPS, store_progress, g);
  int off = 0, on = 1;
  if (sqlite3_db_config(*db, SQLITE_DBCONFIG_DEFENSIVE, on, NULL) != SQLITE_OK ||
      sqlite3_db_config(*db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, off, NULL) != SQLITE_OK ||
      sqlite3_db_config(*db, SQLITE_DBCONFIG_ENABLE_TRIGGER, off, NULL) != SQLITE_OK ||
      sqlite3_db_config(*db, SQLITE_DBCONFIG_ENABLE_VIEW, off, NULL) != SQLITE_OK ||
      sqlite3_exec(*db, "PRAGMA trusted_schema=OFF", NULL, NULL, NULL) != SQLITE_OK) {
    snprintf(err, errn, "cannot open %s: %s", label, sqlite3_errmsg(*db));
    goto fail;
  }
  if ((e = gpd_store_check_schema(*db, "main", label, err, errn)) < 0) goto fail;
  return 0;
fail:
  sqlite3_close(*db);
  *db = NULL;
  return e;
}
