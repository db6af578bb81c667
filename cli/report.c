/* report.c - `gpuprof report`: read SQLite profiles (docs/FORMATS.md)
 * read-only into the CLI tree and render it.
 *
 * The node view of several profiles is the sum over profiles of `metric`
 * grouped by context id (FORMATS.md); several files merge the same way
 * because context ids are Merkle hashes that agree across processes and
 * nodes.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer.h"
#include "cli.h"
#include "trace.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"

#define GPD_REPORT_FORMAT_VERSION GPD_MERGE_FORMAT /* 2: context and frame rows per uid; 3: merged */

static int fail(char *err, size_t errn, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errn, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errn, fmt, ap);
  va_end(ap);
  return code;
}

static const char *col_text(sqlite3_stmt *st, int i) {
  const unsigned char *s = sqlite3_column_text(st, i);
  return s ? (const char *)s : "";
}

/* Run a query over every row; row() returns 0 or a negative error. */
typedef int (*row_fn)(sqlite3_stmt *st, void *ctx);

static int query(sqlite3 *db, const char *sql, int pid, row_fn row, void *ctx, int optional, char *err, size_t errn,
                 const char *path) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  int r = 0;
  if (rc != SQLITE_OK) {
    if (optional) return 0;
    return fail(err, errn, GPD_ESTORE, "%s: not a gpuprof profile (%s)", path, sqlite3_errmsg(db));
  }
  if (sqlite3_bind_parameter_count(st) >= 1) sqlite3_bind_int(st, 1, pid);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    if ((r = row(st, ctx)) < 0) break;
  if (r == 0 && rc != SQLITE_DONE)
    r = fail(err, errn, GPD_ESTORE, "%s: error reading the profile (%s)", path, sqlite3_errmsg(db));
  else if (r < 0)
    fail(err, errn, r, "%s: %s", path, gpd_strerror(r));
  sqlite3_finalize(st);
  return r;
}

typedef struct load_ctx_s {
  gpd_tree_t *t;
  sqlite3 *db;
  const char *path;
  sqlite3_stmt *backend_q;
  int all; /* list processes that never used a GPU API too */
} load_ctx_t;

static int row_backend(sqlite3_stmt *st, void *c) {
  gpd_tproc_t *p = c;
  gpd_tbackend_t *b = gpd_tree_backend_new(p);
  if (!b) return -ENOMEM;
  b->api = gpd_cli_strdup(col_text(st, 0));
  b->enabled = sqlite3_column_int(st, 1) != 0;
  b->code = sqlite3_column_int(st, 2);
  b->reason = gpd_cli_strdup(col_text(st, 3));
  return 0;
}

static int row_profile(sqlite3_stmt *st, void *c) {
  load_ctx_t *lc = c;
  /* column 16: the process used a GPU API (docs/CLI.md) */
  if (!lc->all && sqlite3_column_int(st, 16) == 0) {
    lc->t->nhidden++;
    return 0;
  }
  gpd_tproc_t *p = gpd_tree_proc_new(lc->t);
  if (!p) return -ENOMEM;
  p->profile_id = (uint64_t)sqlite3_column_int64(st, 0);
  p->pid = sqlite3_column_int(st, 1);
  p->uid = (uint32_t)sqlite3_column_int64(st, 2);
  p->gid = (uint32_t)sqlite3_column_int64(st, 3);
  p->exe = gpd_cli_strdup(col_text(st, 4));
  p->hostname = gpd_cli_strdup(col_text(st, 5));
  p->job_id = gpd_cli_strdup(col_text(st, 6));
  p->step_id = gpd_cli_strdup(col_text(st, 7));
  p->rank = sqlite3_column_type(st, 8) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 8);
  p->local_rank = sqlite3_column_type(st, 9) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 9);
  p->start_ns = (uint64_t)sqlite3_column_int64(st, 10);
  p->end_ns = (uint64_t)sqlite3_column_int64(st, 11);
  p->state = gpd_cli_strdup(col_text(st, 12));
  p->running = !strcmp(p->state, "running");
  p->records = (uint64_t)sqlite3_column_int64(st, 13);
  p->drops = (uint64_t)sqlite3_column_int64(st, 14);
  p->error = gpd_cli_strdup(col_text(st, 15));
  p->source = gpd_cli_strdup(lc->path);
  /* back ends of this profile */
  sqlite3_reset(lc->backend_q);
  sqlite3_bind_int64(lc->backend_q, 1, (sqlite3_int64)p->profile_id);
  int rc, r = 0;
  while ((rc = sqlite3_step(lc->backend_q)) == SQLITE_ROW)
    if ((r = row_backend(lc->backend_q, p)) < 0) return r;
  return rc == SQLITE_DONE ? 0 : GPD_ESTORE;
}

static int row_context(sqlite3_stmt *st, void *c) {
  load_ctx_t *lc = c;
  long i = gpd_tree_node_add(lc->t, (uint64_t)sqlite3_column_int64(st, 0), (uint64_t)sqlite3_column_int64(st, 1),
                             sqlite3_column_int(st, 2), col_text(st, 5), col_text(st, 3),
                             (uint64_t)sqlite3_column_int64(st, 4), col_text(st, 6));
  return i < 0 ? (int)i : 0;
}

static int row_frame(sqlite3_stmt *st, void *c) {
  load_ctx_t *lc = c;
  long i = gpd_tree_find(lc->t, (uint64_t)sqlite3_column_int64(st, 0));
  if (i < 0) return 0; /* frame of an unknown context: ignore */
  /* a second file may carry the same context's frames again */
  if (lc->t->nodes[i].nframes > (uint32_t)sqlite3_column_int(st, 1)) return 0;
  return gpd_tree_frame_add(lc->t, (size_t)i, col_text(st, 2), col_text(st, 3), (uint32_t)sqlite3_column_int(st, 4),
                            sqlite3_column_int(st, 5));
}

/* one summed value: a `metric` row, or of a merged file (gpd_mstore_read_sums) */
static int add_value(void *c, int64_t ctx, uint32_t metric, double v) {
  load_ctx_t *lc = c;
  long i = gpd_tree_find(lc->t, (uint64_t)ctx);
  if (i < 0 && (i = gpd_tree_node_add(lc->t, (uint64_t)ctx, 0, GPD_NODE_UNKNOWN, GPD_UNKNOWN_LABEL, "", 0, "")) < 0)
    return (int)i;
  return gpd_mvec_add(&lc->t->nodes[i].excl, metric, v);
}

static int row_metric(sqlite3_stmt *st, void *c) {
  return add_value(c, sqlite3_column_int64(st, 0), (uint32_t)sqlite3_column_int(st, 1), sqlite3_column_double(st, 2));
}

static int row_gpubin(sqlite3_stmt *st, void *c) {
  load_ctx_t *lc = c;
  const char *hash = col_text(st, 0);
  for (size_t i = 0; i < lc->t->ngpubins; i++)
    if (!strcmp(lc->t->gpubins[i].hash, hash)) return 0;
  gpd_tgpubin_t *g = gpd_tree_gpubin_new(lc->t);
  if (!g) return -ENOMEM;
  g->hash = gpd_cli_strdup(hash);
  g->kind = gpd_cli_strdup(col_text(st, 1));
  g->size = (uint64_t)sqlite3_column_int64(st, 2);
  g->path = gpd_cli_strdup(col_text(st, 3));
  return 0;
}

static int row_meta(sqlite3_stmt *st, void *c) {
  char **out = c;
  const char *k = col_text(st, 0);
  if (!strcmp(k, "format")) {
    free(out[0]);
    out[0] = gpd_cli_strdup(col_text(st, 1));
  } else if (!strcmp(k, "format_version")) {
    free(out[1]);
    out[1] = gpd_cli_strdup(col_text(st, 1));
  }
  return 0;
}

/* A read-only connection to a WAL database creates <db>-wal and <db>-shm
 * but cannot remove them when it closes.  Remove them again when they were
 * not there before we opened the file and the log is still empty (nobody
 * wrote meanwhile); a live daemon keeps them, so they existed before. */
static void wal_tidy(const char *path, int had_wal, int had_shm) {
  char w[4200], s[4200];
  struct stat sb;
  if (had_wal || had_shm) return;
  snprintf(w, sizeof(w), "%s-wal", path);
  snprintf(s, sizeof(s), "%s-shm", path);
  if (stat(w, &sb) == 0 && sb.st_size == 0) {
    unlink(w);
    unlink(s);
  }
}

static int exists_suffix(const char *path, const char *suffix) {
  char p[4200];
  struct stat sb;
  snprintf(p, sizeof(p), "%s%s", path, suffix);
  return stat(p, &sb) == 0;
}

unsigned gpd_report_wal_before(const char *path) {
  return (exists_suffix(path, "-wal") ? 1u : 0u) | (exists_suffix(path, "-shm") ? 2u : 0u);
}

void gpd_report_wal_after(const char *path, unsigned before) { wal_tidy(path, before & 1, before & 2); }

/* 1 if table has a column named col (the store's per-user schema adds
 * `uid` to context and frame). */
static int has_column(sqlite3 *db, const char *table, const char *col) {
  char sql[128];
  sqlite3_stmt *st = NULL;
  int found = 0;
  snprintf(sql, sizeof(sql), "PRAGMA table_info(%s)", table);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return 0;
  while (!found && sqlite3_step(st) == SQLITE_ROW) found = !strcmp(col_text(st, 1), col);
  sqlite3_finalize(st);
  return found;
}

int gpd_report_load(gpd_tree_t *t, const char *path, int pid, char *err, size_t errn) {
  return gpd_report_load_all(t, path, pid, 1, err, errn);
}

int gpd_report_load_all(gpd_tree_t *t, const char *path, int pid, int all, char *err, size_t errn) {
  sqlite3 *db = NULL;
  struct stat sb, sb2;
  int had_wal = 0, had_shm = 0, fd = -1;
  char *meta[2] = {NULL, NULL};
  load_ctx_t lc = {t, NULL, path, NULL, all};
  int r;

  /* Only a regular file: opened without blocking (a FIFO would block
   * SQLite's open forever) and kept open until SQLite has opened the same
   * file (same device and inode). */
  if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) < 0 || fstat(fd, &sb) < 0) {
    r = fail(err, errn, -errno, "cannot open %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return r;
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    if (S_ISDIR(sb.st_mode)) return fail(err, errn, -EISDIR, "%s is a directory, not a gpuprof profile", path);
    return fail(err, errn, -EINVAL, "%s is not a regular file, not a gpuprof profile", path);
  }
  had_wal = exists_suffix(path, "-wal");
  had_shm = exists_suffix(path, "-shm");
  if ((r = gpd_profile_open(path, &db, err, errn)) < 0) goto done;
  if (stat(path, &sb2) < 0 || sb2.st_dev != sb.st_dev || sb2.st_ino != sb.st_ino) {
    r = fail(err, errn, GPD_ESTORE, "%s changed while being opened", path);
    goto done;
  }
  lc.db = db;
  sqlite3_busy_timeout(db, 5000); /* the daemon may be writing */
  r = query(db, "SELECT key, value FROM meta", 0, row_meta, meta, 0, err, errn, path);
  if (r < 0) goto done;
  if (!meta[0] || strcmp(meta[0], "gpuprof")) {
    r = fail(err, errn, GPD_ESTORE, "%s: not a gpuprof profile (meta.format is %s%s%s)", path, meta[0] ? "'" : "",
             meta[0] ? meta[0] : "missing", meta[0] ? "'" : "");
    goto done;
  }
  if (meta[1] && atoi(meta[1]) > GPD_REPORT_FORMAT_VERSION) {
    r = fail(err, errn, GPD_EBADVERSION, "%s: profile format version %s is newer than this gpuprof reads (%d)", path,
             meta[1], GPD_REPORT_FORMAT_VERSION);
    goto done;
  }
  if (sqlite3_prepare_v2(db, "SELECT api, enabled, code, reason FROM backend WHERE profile_id = ?1 ORDER BY api",
                         -1, &lc.backend_q, NULL) != SQLITE_OK) {
    r = fail(err, errn, GPD_ESTORE, "%s: not a gpuprof profile (%s)", path, sqlite3_errmsg(db));
    goto done;
  }
  /* "used a GPU API": a back end reported its state (the shim does at the
   * first call into that API) or some metric was recorded */
  r = query(db,
            "SELECT id, pid, uid, gid, exe, hostname, job_id, step_id, rank, local_rank, start_ns, end_ns, state, "
            "records, drops, error, "
            "EXISTS(SELECT 1 FROM backend b WHERE b.profile_id = profile.id) OR "
            "EXISTS(SELECT 1 FROM metric m WHERE m.profile_id = profile.id) "
            "FROM profile WHERE (?1 = 0 OR pid = ?1) ORDER BY id",
            pid, row_profile, &lc, 0, err, errn, path);
  if (r < 0) goto done;
  /* Per-user labels (context.uid, frame.uid): take the rows of the users
   * whose profiles are reported; older files have one label per context. */
  int per_uid = has_column(db, "context", "uid") && has_column(db, "frame", "uid");
  r = query(db,
            per_uid ? "SELECT id, parent, kind, module, offset, label, raw_name FROM context "
                      "WHERE uid IN (SELECT uid FROM profile WHERE (?1 = 0 OR pid = ?1)) ORDER BY uid, id"
                    : "SELECT id, parent, kind, module, offset, label, raw_name FROM context",
            pid, row_context, &lc, 0, err, errn, path);
  if (r < 0) goto done;
  r = query(db,
            per_uid ? "SELECT context_id, depth, function, file, line, inlined FROM frame "
                      "WHERE uid IN (SELECT uid FROM profile WHERE (?1 = 0 OR pid = ?1)) "
                      "ORDER BY uid, context_id, depth"
                    : "SELECT context_id, depth, function, file, line, inlined FROM frame ORDER BY context_id, depth",
            pid, row_frame, &lc, 0, err, errn, path);
  if (r < 0) goto done;
  if (meta[1] && atoi(meta[1]) >= GPD_MERGE_FORMAT) { /* merged: values in pmetric / stat */
    if ((r = gpd_mstore_read_sums(db, pid, add_value, &lc)) < 0) {
      fail(err, errn, r, "%s: cannot read its merged values (%s)", path, gpd_strerror(r));
      goto done;
    }
  } else if ((r = query(db,
                         "SELECT context_id, metric_id, SUM(value) FROM metric "
                         "WHERE (?1 = 0 OR profile_id IN (SELECT id FROM profile WHERE pid = ?1)) "
                         "GROUP BY context_id, metric_id",
                         pid, row_metric, &lc, 0, err, errn, path)) < 0) {
    goto done;
  }
  r = query(db, "SELECT hash, kind, size, path FROM gpubin ORDER BY hash", 0, row_gpubin, &lc, 1, err, errn, path);
  if (r >= 0 && gpd_report_gpu_opts.enabled) r = gpd_report_gpu_load(t, db, path, pid, &gpd_report_gpu_opts);
done:
  sqlite3_finalize(lc.backend_q);
  sqlite3_close(db);
  close(fd);
  wal_tidy(path, had_wal, had_shm);
  free(meta[0]);
  free(meta[1]);
  return r;
}

int gpd_report_has_cuda(const char *path) {
  sqlite3 *db = NULL;
  sqlite3_stmt *q = NULL;
  char err[256];
  int yes = 0;
  unsigned wal = gpd_report_wal_before(path);
  if (gpd_profile_open(path, &db, err, sizeof err) == 0 &&
      sqlite3_prepare_v2(db, "SELECT 1 FROM backend WHERE api = 'cuda' AND enabled = 1 LIMIT 1", -1, &q, NULL) == SQLITE_OK)
    yes = sqlite3_step(q) == SQLITE_ROW;
  sqlite3_finalize(q);
  sqlite3_close(db);
  gpd_report_wal_after(path, wal);
  return yes;
}

gpd_report_gpu_opts_t gpd_report_gpu_opts;

static const char report_usage[] =
    "usage: gpuprof report [--json] [--flat] [--stats] [--gpu-detail] [--metric NAME] [--depth N] [--pid N] [--all]\n"
    "                      [--long-names] [--wide] [--python] FILE...\n"
    "  Print saved profiles (merged by context): a kernel summary and a summary of the other GPU\n"
    "  operations (copies, memsets, allocations, synchronizations), then the calling-context tree,\n"
    "  the processes, and the GPU idleness blame of traced processes.\n"
    "  --json         the tree, processes, back ends and GPU binaries as JSON\n"
    "  --flat         flat profile: exclusive values aggregated by function/kernel\n"
    "  --metric NAME  sort by (and show) metric NAME (default GPUOP)\n"
    "  --depth N      show at most N levels below the root (opens the GPU part too)\n"
    "  --gpu-detail   PC samples below each kernel: GPU function, loop, line, instruction\n"
    "                 (default: collapsed into the kernel's GINST/GINST:STL_* values)\n"
    "  --pid N        only the profiles of process N\n"
    "  --all          also list processes that never used a GPU API\n"
    "  --stats        merged files (gpuprof merge): per-context statistics over the processes,\n"
    "                 the most imbalanced heavy contexts of --metric first\n"
    "  --long-names   kernels' full names in the summaries (default: without template and\n"
    "                 argument lists)\n"
    "  --wide         every summary row and whole call paths (default: 20 rows, paths cut in\n"
    "                 the middle to the terminal's width)\n"
    "  --python       Python view: only Python frames, placeholders (<backward>, operators)\n"
    "                 and the GPU part; native frames folded away\n";

int gpd_report_main(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, NULL, 'j'},     {"flat", no_argument, NULL, 'f'},
                                       {"metric", required_argument, NULL, 'm'}, {"depth", required_argument, NULL, 'd'},
                                       {"pid", required_argument, NULL, 'p'},    {"help", no_argument, NULL, 'h'},
                                       {"all", no_argument, NULL, 'a'},     {"stats", no_argument, NULL, 's'},
                                       {"gpu-detail", no_argument, NULL, 'g'},
                                       {"long-names", no_argument, NULL, 'L'},
                                       {"wide", no_argument, NULL, 'W'},
                                       {"python", no_argument, NULL, 'P'},
                                       {NULL, 0, NULL, 0}};
  gpd_render_opts_t o = {GPD_M_GPUOP, 0, 0, 0, 0};
  int json = 0, pid = 0, all = 0, stats = 0, c, metric_set = 0, python = 0;
  long v;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+jfm:d:p:hasgLWP", opts, NULL)) != -1) {
    switch (c) {
    case 'j': json = 1; break;
    case 'f': o.flat = 1; break;
    case 'm':
      if ((v = gpd_cli_metric(optarg)) < 0) return gpd_cli_usage(report_usage, "unknown metric '%s'", optarg);
      o.metric = (unsigned)v;
      metric_set = 1;
      break;
    case 'd':
      if ((v = gpd_cli_parse_uint(optarg)) < 0) return gpd_cli_usage(report_usage, "bad --depth '%s'", optarg);
      o.depth = (unsigned)v;
      break;
    case 'p':
      if ((v = gpd_cli_parse_uint(optarg)) <= 0) return gpd_cli_usage(report_usage, "bad --pid '%s'", optarg);
      pid = (int)v;
      break;
    case 'a': all = 1; break;
    case 's': stats = 1; break;
    case 'g': gpd_report_gpu_opts.detail = 1; break;
    case 'L': o.long_names = 1; break;
    case 'W': o.wide = 1; break;
    case 'P': python = 1; break;
    case 'h': fputs(report_usage, stdout); return GPD_EXIT_OK;
    default: return gpd_cli_usage(report_usage, "unknown or incomplete option '%s'", argv[optind - 1]);
    }
  }
  if (optind >= argc) return gpd_cli_usage(report_usage, "no profile file given");
  if (json && o.flat) return gpd_cli_usage(report_usage, "--json and --flat do not combine");
  if (stats && (json || o.flat || python))
    return gpd_cli_usage(report_usage, "--stats does not combine with --json, --flat or --python");

  gpd_report_gpu_opts.enabled = 1;
  int asked_detail = gpd_report_gpu_opts.detail;
  if (gpd_report_gpu_opts.detail && !metric_set) o.metric = GPD_M_GINST; /* what GPU nodes have */
  gpd_report_gpu_opts.detail |= o.depth > 0 || o.flat;
  gpd_report_gpu_opts.flat = o.flat;
  gpd_tree_t t;
  char err[1024];
  int r = 0;
  gpd_tree_init(&t);
  gpd_cli_step_begin("loading the profile");
  for (int i = optind; i < argc; i++) {
    if ((r = gpd_report_load_all(&t, argv[i], pid, all, err, sizeof(err))) < 0) {
      gpd_cli_step_end();
      fprintf(stderr, "gpuprof: %s\n", err);
      gpd_tree_free(&t);
      return GPD_EXIT_FAIL;
    }
  }
  r = gpd_tree_finish(&t, o.metric);
  if (r >= 0 && python) r = gpd_tree_python(&t, o.metric);
  gpd_cli_step_end();
  if (r >= 0 && pid && t.nprocs == 0) {
    fprintf(stderr, "gpuprof: no process %d in %s%s\n", pid, argv[optind],
            argc - optind > 1 ? " or the other files" : "");
    gpd_tree_free(&t);
    return GPD_EXIT_FAIL;
  }
  if (r < 0) {
    fprintf(stderr, "gpuprof: %s\n", gpd_strerror(r));
    gpd_tree_free(&t);
    return GPD_EXIT_FAIL;
  }
  if (asked_detail && (t.root == SIZE_MAX || gpd_mvec_get(&t.nodes[t.root].incl, GPD_M_GINST) == 0)) {
    int cuda = 0;
    for (int i = optind; i < argc; i++)
      cuda |= gpd_report_has_cuda(argv[i]);
    fprintf(stderr, "gpuprof: no PC samples: %s\n",
            cuda ? "record with GPUPROF_PC_SAMPLING=1, or `gpuprof sample --pid N` while it runs"
                 : "PC sampling is CUDA-only (CUPTI); no process in the profile used CUDA");
  }
  if (stats) {
    for (int i = optind; i < argc && r >= 0; i++)
      if ((r = gpd_report_stats(stdout, &t, argv[i], o.metric, 20, err, sizeof(err))) < 0)
        fprintf(stderr, "gpuprof: %s\n", err);
    gpd_tree_free(&t);
    return r < 0 ? GPD_EXIT_FAIL : GPD_EXIT_OK;
  }
  if (json) {
    gpd_json_tree_open(stdout, &t, &o);
    /* profiles with traces: GPU idleness blame per process */
    fputs(",\"gpu_idleness\":{\"metric\":\"GIDLE\",\"unit\":\"s\",\"processes\":[", stdout);
    int first = 1;
    gpd_cli_step_begin("idleness blame");
    for (int i = optind; i < argc; i++)
      if (gpd_report_idle_json(stdout, argv[i], pid, &first, err, sizeof(err)) < 0)
        fprintf(stderr, "gpuprof: %s\n", err);
    gpd_cli_step_end();
    /* duty-cycled processes: their kernel contexts scaled by 1/f */
    fputs("]},\"duty_estimates\":{\"estimate\":\"observed / f\",\"unit\":\"s\",\"processes\":[", stdout);
    first = 1;
    for (int i = optind; i < argc; i++)
      if (gpd_report_duty_json(stdout, argv[i], pid, &first, err, sizeof(err)) < 0)
        fprintf(stderr, "gpuprof: %s\n", err);
    fputs("]}}\n", stdout);
  } else {
    if (argc - optind == 1)
      printf("Profile %s: %zu process%s\n\n", argv[optind], t.nprocs, t.nprocs == 1 ? "" : "es");
    else
      printf("Profiles (%d files merged): %zu processes\n\n", argc - optind, t.nprocs);
    gpd_cli_step_begin("kernel and operation summaries");
    gpd_render_summaries(stdout, &t, &o);
    gpd_cli_step_end();
    gpd_cli_step_begin("calling-context tree");
    if (o.flat)
      gpd_render_flat(stdout, &t, &o);
    else
      gpd_render_tree(stdout, &t, &o);
    gpd_render_procs(stdout, &t);
    if (gpd_report_gpu_notes()[0]) printf("\nGPU samples:\n%s", gpd_report_gpu_notes());
    gpd_cli_step_end();
    gpd_cli_step_begin("idleness blame");
    for (int i = optind; i < argc; i++) /* profiles with traces: GPU idleness blame */
      if (gpd_report_idle(stdout, argv[i], pid, o.wide ? 0 : gpd_cli_width(), err, sizeof(err)) < 0)
        fprintf(stderr, "gpuprof: %s\n", err);
    gpd_cli_step_end();
    gpd_cli_step_begin("duty-cycle estimates");
    for (int i = optind; i < argc; i++) /* duty-cycled processes: scaled estimates */
      if (gpd_report_duty(stdout, argv[i], pid, err, sizeof(err)) < 0) fprintf(stderr, "gpuprof: %s\n", err);
    gpd_cli_step_end();
  }
  if (json && gpd_report_gpu_notes()[0]) fprintf(stderr, "gpuprof: GPU samples:\n%s", gpd_report_gpu_notes());
  gpd_tree_free(&t);
  if (fflush(stdout) != 0) return GPD_EXIT_FAIL;
  return GPD_EXIT_OK;
}
