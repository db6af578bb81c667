/* mtable.c - the tables a merge copies row by row (gpd_mtable_t: names,
 * columns, the column holding a profile id) and the row codec that carries
 * their rows through parts and MPI messages to the writer without a
 * struct per table.
 *
 * Row encoding: u8 ncols, then per column u8 SQLite type and its value:
 * INTEGER i64, FLOAT f64, TEXT/BLOB u32 length + bytes, NULL nothing.
 * Host byte order (ranks of one job run on one architecture).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"

#define ROW_MAX ((size_t)64 << 20)

static const struct {
  const char *name, *cols;
  int pcol, ncols;
} tables[GPD_MT__COUNT] = {
    [GPD_MT_PROFILE] = {"profile",
                        "id, pid, ppid, uid, gid, exe, argv, hostname, job_id, step_id, rank, local_rank, "
                        "start_ns, end_ns, state, records, drops, error, proc_start",
                        0, 19},
    [GPD_MT_BACKEND] = {"backend", "profile_id, api, enabled, code, reason", 0, 5},
    [GPD_MT_MODULE] = {"module", "profile_id, id, path, build_id, base, size", 0, 6},
    [GPD_MT_STRING] = {"string", "profile_id, id, kind, text", 0, 4},
    [GPD_MT_GPUBIN] = {"gpubin", "hash, kind, size, path, profile_id", 4, 5},
    [GPD_MT_PCSAMPLE] = {"pcsample", "profile_id, cubin_id, func, pc, stall, device, samples, latency", 0, 8},
    [GPD_MT_PCSAMPLE_CUBIN] = {"pcsample_cubin", "profile_id, cubin_id, hash", 0, 3},
    [GPD_MT_PCSAMPLE_STAT] = {"pcsample_stat",
                              "profile_id, device, period_log2, sm_count, clock_khz, total, dropped, non_user, "
                              "lost_keys",
                              0, 9},
    [GPD_MT_TRACE_EVENT] = {"trace_event",
                            "profile_id, start_ns, stream, corr, end_ns, device, op, subkind, node, name, bytes", 0,
                            11},
    [GPD_MT_TRACE_LAUNCH] = {"trace_launch", "profile_id, ts_ns, tid, corr, node, op", 0, 6},
    [GPD_MT_TRACE_STAT] = {"trace_stat", "profile_id, events, dropped, refused", 0, 4},
    [GPD_MT_TRACE_CPU_SAMPLE] = {"trace_cpu_sample", "profile, tid, ts_ns, node", 0, 4},
    [GPD_MT_CPU_SAMPLE_STAT] = {"cpu_sample_stat", "profile_id, samples, cputime_ns, trace_rows, trace_dropped, unknown",
                                0, 6},
    [GPD_MT_TRACE_DUTY] = {"trace_duty", "profile_id, api, duty, t0_ns, end_ns, final, windows, window_ns", 0, 8},
    [GPD_MT_TRACE_WINDOW] = {"trace_window", "profile_id, start_ns, end_ns", 0, 3},
    [GPD_MT_TRACE_DUTY_LAUNCH] = {"trace_duty_launch", "profile_id, launches, launches_in", 0, 3},
    [GPD_MT_CONTEXT] = {"context", "uid, id, parent, kind, module, build_id, offset, label, raw_name", -1, 9},
    [GPD_MT_FRAME] = {"frame", "uid, context_id, depth, function, file, line, inlined", -1, 7},
};

const char *gpd_mtable_name(gpd_mtable_t t) { return tables[t].name; }
const char *gpd_mtable_cols(gpd_mtable_t t) { return tables[t].cols; }
int gpd_mtable_pcol(gpd_mtable_t t) { return tables[t].pcol; }
int gpd_mtable_ncols(gpd_mtable_t t) { return tables[t].ncols; }

int gpd_mtable_row_encode(gpd_buf_t *b, sqlite3_stmt *st, int pcol, int64_t pid_local) {
  int nc = sqlite3_column_count(st), err;
  uint8_t u8 = (uint8_t)nc;
  if (nc > 255) return -E2BIG;
  if ((err = gpd_buf_put(b, &u8, 1)) < 0) return err;
  for (int i = 0; i < nc; i++) {
    int t = sqlite3_column_type(st, i);
    u8 = (uint8_t)t;
    if ((err = gpd_buf_put(b, &u8, 1)) < 0) return err;
    if (t == SQLITE_INTEGER) {
      int64_t v = i == pcol ? pid_local : sqlite3_column_int64(st, i);
      err = gpd_buf_put(b, &v, 8);
    } else if (t == SQLITE_FLOAT) {
      double v = sqlite3_column_double(st, i);
      err = gpd_buf_put(b, &v, 8);
    } else if (t == SQLITE_TEXT || t == SQLITE_BLOB) {
      const void *p = t == SQLITE_TEXT ? (const void *)sqlite3_column_text(st, i) : sqlite3_column_blob(st, i);
      size_t len = (size_t)sqlite3_column_bytes(st, i);
      uint32_t l32 = (uint32_t)len;
      if (len > ROW_MAX) return -E2BIG;
      if ((err = gpd_buf_put(b, &l32, 4)) < 0) return err;
      err = gpd_buf_put(b, p, len);
    }
    if (err < 0) return err;
  }
  return 0;
}

int gpd_mtable_row_bind(const uint8_t *p, size_t n, size_t *off, sqlite3_stmt *ins, int pcol, int64_t poff) {
  size_t o = *off;
  if (o >= n) return -EINVAL;
  int nc = p[o++];
  if (nc != sqlite3_bind_parameter_count(ins)) return -EINVAL;
  for (int i = 0; i < nc; i++) {
    if (o >= n) return -EINVAL;
    int t = p[o++], rc = SQLITE_OK;
    if (t == SQLITE_INTEGER || t == SQLITE_FLOAT) {
      if (n - o < 8) return -EINVAL;
      if (t == SQLITE_INTEGER) {
        int64_t v;
        memcpy(&v, p + o, 8);
        rc = sqlite3_bind_int64(ins, i + 1, i == pcol ? v + poff : v);
      } else {
        double v;
        memcpy(&v, p + o, 8);
        rc = sqlite3_bind_double(ins, i + 1, v);
      }
      o += 8;
    } else if (t == SQLITE_TEXT || t == SQLITE_BLOB) {
      uint32_t len;
      if (n - o < 4) return -EINVAL;
      memcpy(&len, p + o, 4);
      o += 4;
      if (n - o < len) return -EINVAL;
      rc = t == SQLITE_TEXT ? sqlite3_bind_text(ins, i + 1, (const char *)p + o, (int)len, SQLITE_STATIC)
                            : sqlite3_bind_blob(ins, i + 1, p + o, (int)len, SQLITE_STATIC);
      o += len;
    } else if (t == SQLITE_NULL) {
      rc = sqlite3_bind_null(ins, i + 1);
    } else {
      return -EINVAL;
    }
    if (rc != SQLITE_OK) return -EINVAL;
  }
  *off = o;
  return 0;
}
