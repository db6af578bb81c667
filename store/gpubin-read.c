/* gpubin-read.c - the GPU binaries a saved profile's processes loaded
 * (`gpubin` rows; the files lie in gpubins/ beside it), store-read.h. */
#include "read-internal.h"
#include "store-read.h"

typedef struct bin_cb_s {
  int (*fn)(void *c, const gpd_store_gpubin_t *g);
  void *c;
} bin_cb_t;

static int bin_row(sqlite3_stmt *st, void *arg) {
  bin_cb_t *cb = arg;
  gpd_store_gpubin_t g = {gpd__store_text(st, 0), gpd__store_text(st, 1), gpd__store_text(st, 3),
                          (uint64_t)sqlite3_column_int64(st, 2)};
  return cb->fn(cb->c, &g);
}

int gpd_store_gpubin_each(sqlite3 *db, int (*fn)(void *c, const gpd_store_gpubin_t *g), void *c, const char *label,
                          char *err, size_t errn) {
  bin_cb_t cb = {fn, c};
  return gpd__store_each(db, "SELECT hash, kind, size, path FROM gpubin ORDER BY hash", NULL, 0, bin_row, &cb, 1,
                         label, err, errn);
}
