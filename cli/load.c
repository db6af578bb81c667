/* load.c - saved profiles (docs/FORMATS.md) read into the CLI tree: what
 * report, export, view, advise, trace and duty load, through store/'s
 * readers (store-read.h).
 *
 * The node view of several profiles is the sum over profiles of `metric`
 * grouped by context id (FORMATS.md); several files merge the same way
 * because context ids are Merkle hashes that agree across processes and
 * nodes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "store-read.h"

static int fail(char *err, size_t errn, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errn, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errn, fmt, ap);
  va_end(ap);
  return code;
}

typedef struct load_ctx_s {
  gpd_tree_t *t;
  const char *path;
  gpd_tproc_t *proc; /* the profile whose back ends come next */
  int all;           /* list processes that never used a GPU API too */
} load_ctx_t;

static int on_backend(void *c, const gpd_store_backend_t *sb) {
  load_ctx_t *lc = c;
  gpd_tbackend_t *b = gpd_tree_backend_new(lc->proc);
  if (!b) return -ENOMEM;
  b->api = gpd_cli_strdup(sb->api);
  b->enabled = sb->enabled;
  b->code = sb->code;
  b->reason = gpd_cli_strdup(sb->reason);
  return 0;
}

static int on_profile(void *c, const gpd_store_profile_t *sp) {
  load_ctx_t *lc = c;
  if (!lc->all && !sp->used_gpu) { /* docs/CLI.md */
    lc->t->nhidden++;
    return 1;
  }
  gpd_tproc_t *p = lc->proc = gpd_tree_proc_new(lc->t);
  if (!p) return -ENOMEM;
  p->profile_id = sp->id;
  p->pid = sp->pid;
  p->uid = sp->uid;
  p->gid = sp->gid;
  p->exe = gpd_cli_strdup(sp->exe);
  p->hostname = gpd_cli_strdup(sp->hostname);
  p->job_id = gpd_cli_strdup(sp->job_id);
  p->step_id = gpd_cli_strdup(sp->step_id);
  p->rank = sp->rank;
  p->local_rank = sp->local_rank;
  p->start_ns = sp->start_ns;
  p->end_ns = sp->end_ns;
  p->state = gpd_cli_strdup(sp->state);
  p->running = !strcmp(p->state, "running");
  p->records = sp->records;
  p->drops = sp->drops;
  p->error = gpd_cli_strdup(sp->error);
  p->source = gpd_cli_strdup(lc->path);
  return 0;
}

static int on_context(void *c, const gpd_store_context_t *x) {
  load_ctx_t *lc = c;
  long i = gpd_tree_node_add(lc->t, x->id, x->parent, x->kind, x->label, x->module, x->offset, x->raw_name);
  return i < 0 ? (int)i : 0;
}

static int on_frame(void *c, const gpd_store_frame_t *f) {
  load_ctx_t *lc = c;
  long i = gpd_tree_find(lc->t, f->context);
  if (i < 0) return 0; /* frame of an unknown context: ignore */
  /* a second file may carry the same context's frames again */
  if (lc->t->nodes[i].nframes > f->depth) return 0;
  return gpd_tree_frame_add(lc->t, (size_t)i, f->function, f->file, f->line, f->inlined);
}

/* one summed value of a context */
static int on_value(void *c, int64_t ctx, uint32_t metric, double v) {
  load_ctx_t *lc = c;
  long i = gpd_tree_find(lc->t, (uint64_t)ctx);
  if (i < 0 && (i = gpd_tree_node_add(lc->t, (uint64_t)ctx, 0, GPD_NODE_UNKNOWN, GPD_UNKNOWN_LABEL, "", 0, "")) < 0)
    return (int)i;
  return gpd_tree_mvec_add(&lc->t->nodes[i].excl, metric, v);
}

static int on_gpubin(void *c, const gpd_store_gpubin_t *sg) {
  load_ctx_t *lc = c;
  for (size_t i = 0; i < lc->t->ngpubins; i++)
    if (!strcmp(lc->t->gpubins[i].hash, sg->hash)) return 0;
  gpd_tgpubin_t *g = gpd_tree_gpubin_new(lc->t);
  if (!g) return -ENOMEM;
  g->hash = gpd_cli_strdup(sg->hash);
  g->kind = gpd_cli_strdup(sg->kind);
  g->size = sg->size;
  g->path = gpd_cli_strdup(sg->path);
  return 0;
}

int gpd_load_file(gpd_tree_t *t, const char *path, int pid, int all, char *err, size_t errn) {
  struct sqlite3 *db = NULL;
  struct stat sb, sb2;
  int fd = -1;
  unsigned wal;
  gpd_store_meta_t meta;
  load_ctx_t lc = {t, path, NULL, all};
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
  wal = gpd_store_file_wal_before(path);
  if ((r = gpd_store_file_open(path, &db, err, errn)) < 0) goto done;
  if (stat(path, &sb2) < 0 || sb2.st_dev != sb.st_dev || sb2.st_ino != sb.st_ino) {
    r = fail(err, errn, GPD_ESTORE, "%s changed while being opened", path);
    goto done;
  }
  if ((r = gpd_store_file_meta(db, &meta, path, err, errn)) < 0) goto done;
  if (!meta.has_format || strcmp(meta.format, "gpuprof")) {
    r = fail(err, errn, GPD_ESTORE, "%s: not a gpuprof profile (meta.format is %s%s%s)", path,
             meta.has_format ? "'" : "", meta.has_format ? meta.format : "missing", meta.has_format ? "'" : "");
    goto done;
  }
  if (meta.version > GPD_STORE_FORMAT_MERGED) {
    r = fail(err, errn, GPD_EBADVERSION, "%s: profile format version %d is newer than this gpuprof reads (%d)", path,
             meta.version, GPD_STORE_FORMAT_MERGED);
    goto done;
  }
  if ((r = gpd_store_profile_each(db, pid, on_profile, on_backend, &lc, path, err, errn)) < 0 ||
      (r = gpd_store_context_each(db, pid, on_context, &lc, path, err, errn)) < 0 ||
      (r = gpd_store_context_frames(db, pid, on_frame, &lc, path, err, errn)) < 0 ||
      (r = gpd_store_metric_sums(db, pid, meta.version >= GPD_STORE_FORMAT_MERGED, on_value, &lc, path, err,
                                 errn)) < 0 ||
      (r = gpd_store_gpubin_each(db, on_gpubin, &lc, path, err, errn)) < 0)
    goto done;
  if (gpd_report_gpu_opts.enabled) r = gpd_report_gpu_load(t, db, path, pid, &gpd_report_gpu_opts);
done:
  gpd_store_file_close(db);
  close(fd);
  gpd_store_file_wal_after(path, wal);
  return r;
}
