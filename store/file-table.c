/* file-table.c - which tables and columns a saved profile has
 * (store-read.h): the catalog look-ups that the opening of a file
 * (file-read.c), the attaching of its shards (shard-read.c) and the
 * readers of optional tables ask, below all of them. */
#include "store-read.h"

#include <sqlite3.h>

int gpd_store_file_has_table(sqlite3 *db, const char *name) {
  sqlite3_stmt *q = NULL;
  int yes = 0;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?1", -1, &q, NULL) ==
      SQLITE_OK) {
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    yes = sqlite3_step(q) == SQLITE_ROW;
  }
  sqlite3_finalize(q);
  return yes;
}

int gpd_store_file_has_column(sqlite3 *db, const char *table, const char *col) {
  sqlite3_stmt *q = NULL;
  int yes = 0;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name=?2", -1, &q, NULL) == SQLITE_OK) {
    sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, col, -1, SQLITE_STATIC);
    yes = sqlite3_step(q) == SQLITE_ROW;
  }
  sqlite3_finalize(q);
  return yes;
}
