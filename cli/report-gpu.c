/* report-gpu.c - the GPU part of `gpuprof report`: PC samples of a saved
 * profile (tables pcsample, pcsample_cubin, pcsample_stat; FORMATS.md)
 * placed below each kernel with the analyzer (analyzer/gpu-analysis.h):
 * kernel -> GPU calling context -> loop -> source line -> instruction.
 *
 * Binaries: <folder of the db>/gpubins/<hash>.gpubin, as the daemon
 * stored them.  Instructions, loops and device calls need nvdisasm's text:
 * <hash>.nvdisasm beside the binary when someone saved it there, else
 * `nvdisasm -c -g` run on the binary ($GPUPROF_NVDISASM, nvdisasm on PATH,
 * /usr/local/cuda/bin/nvdisasm); without it the analysis is by function
 * and a note says so.
 *
 * Continuous PC sampling does not say which launch a sample belongs to:
 * a kernel's samples are split among the kernel's calling contexts in the
 * ratio of their GKER time (the samples are taken at a fixed period of
 * GPU time).  The report reads the user's own files with the user's
 * rights; hashes from the file are checked before they name a path.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "gpu-analysis.h"
#include "gpuprof/hash.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "store-read.h"

#define GPU_MAX_BIN (1u << 30)     /* bytes of one GPU binary read */
#define GPU_MAX_DISASM (1u << 30)  /* bytes of nvdisasm text read */
#define GPU_MAX_CTX_NODES 200000u  /* calling-context tree bound per kernel */

extern char **environ;

static char g_notes[4096];

static void gnote(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void gnote(const char *fmt, ...) {
  size_t n = strlen(g_notes);
  if (n + 2 >= sizeof g_notes)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_notes + n, sizeof g_notes - n - 1, fmt, ap);
  va_end(ap);
  n = strlen(g_notes);
  g_notes[n] = '\n';
  g_notes[n + 1] = 0;
}

const char *gpd_report_gpu_notes(void) { return g_notes; }

gpd_report_gpu_opts_t gpd_report_gpu_opts;

static int valid_hash(const char *h) {
  if (h == NULL || strlen(h) != 32)
    return 0;
  for (const char *p = h; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return 0;
  return 1;
}

/* Whole regular file, at most max bytes: malloc'd (NUL-terminated), or NULL. */
static char *read_file(const char *path, size_t max, size_t *len) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0)
    return NULL;
  if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > max) {
    close(fd);
    return NULL;
  }
  char *b = malloc((size_t)sb.st_size + 1);
  size_t n = 0;
  while (b && n < (size_t)sb.st_size) {
    ssize_t r = read(fd, b + n, (size_t)sb.st_size - n);
    if (r <= 0)
      break;
    n += (size_t)r;
  }
  close(fd);
  if (b)
    b[n] = 0;
  *len = n;
  return b;
}

static const char *nvdisasm_path(void) {
  static char found[PATH_MAX];
  const char *e = getenv("GPUPROF_NVDISASM");
  if (e && *e)
    return e[0] == '0' && e[1] == 0 ? NULL : e; /* GPUPROF_NVDISASM=0: never */
  const char *path = getenv("PATH");
  while (path && *path) {
    size_t n = strcspn(path, ":");
    snprintf(found, sizeof found, "%.*s/nvdisasm", (int)n, path);
    if (n && access(found, X_OK) == 0)
      return found;
    path += n + (path[n] == ':');
  }
  return access("/usr/local/cuda/bin/nvdisasm", X_OK) == 0 ? "/usr/local/cuda/bin/nvdisasm" : NULL;
}

/* Run nvdisasm on a file; its stdout, or NULL. */
static char *run_nvdisasm(const char *tool, const char *bin, int lineinfo, size_t *len) {
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) < 0)
    return NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  char *argv[] = {(char *)tool, "-c", lineinfo ? "-g" : "-c", (char *)bin, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, tool, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pfd[1]);
  if (rc != 0) {
    close(pfd[0]);
    return NULL;
  }
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap + 1);
  for (;;) {
    if (b && n == cap) {
      char *nb = cap < GPU_MAX_DISASM ? realloc(b, 2 * cap + 1) : NULL;
      if (nb == NULL) {
        free(b);
        b = NULL;
      } else {
        b = nb;
        cap *= 2;
      }
    }
    char sink[4096];
    ssize_t r = b ? read(pfd[0], b + n, cap - n) : read(pfd[0], sink, sizeof sink);
    if (r <= 0)
      break;
    if (b)
      n += (size_t)r;
  }
  close(pfd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || b == NULL) {
    free(b);
    return NULL;
  }
  b[n] = 0;
  *len = n;
  return b;
}

typedef struct bin_s {
  char hash[33];
  gpd_cubin_t *cubin;
  gpd_disasm_t *disasm;
} bin_t;

typedef struct gpu_ctx_s {
  gpd_tree_t *t;
  const gpd_report_gpu_opts_t *o;
  char dir[PATH_MAX];
  bin_t *bins;
  size_t nbins;
  int warned_nvdisasm;
} gpu_ctx_t;

int gpd_report_gpu_bin(const char *dir, const char *hash, char **bytes, size_t *blen,
                       gpd_cubin_t **cubin, gpd_disasm_t **disasm, int *warned) {
  char path[PATH_MAX + 64], err[256];
  *cubin = NULL;
  *disasm = NULL;
  if (bytes)
    *bytes = NULL;
  if (!valid_hash(hash))
    return -EINVAL;
  snprintf(path, sizeof path, "%s/gpubins/%s.gpubin", dir, hash);
  size_t len = 0;
  char *data = read_file(path, GPU_MAX_BIN, &len);
  if (data == NULL) {
    gnote("GPU binary %s not found (%s): its samples are not placed", hash, path);
    return -ENOENT;
  }
  if (gpd_cubin_open(data, len, cubin, err, sizeof err) < 0) {
    gnote("GPU binary %s unreadable: %s", hash, err);
    free(data);
    return -EINVAL;
  }
  if (bytes) {
    *bytes = data;
    *blen = len;
  } else {
    free(data);
  }
  snprintf(path, sizeof path, "%s/gpubins/%s.nvdisasm", dir, hash);
  char *text = read_file(path, GPU_MAX_DISASM, &len);
  if (text == NULL) {
    const char *tool = nvdisasm_path();
    snprintf(path, sizeof path, "%s/gpubins/%s.gpubin", dir, hash);
    if (tool && ((text = run_nvdisasm(tool, path, 1, &len)) != NULL ||
                 (text = run_nvdisasm(tool, path, 0, &len)) != NULL)) {
      /* ok */
    } else if (!*warned) {
      *warned = 1;
      gnote("%s: GPU structure by function only (no loops, lines from the line table, "
            "device calls flat)",
            tool ? "nvdisasm failed" : "nvdisasm not found (set GPUPROF_NVDISASM)");
    }
  }
  if (text && gpd_disasm_parse(text, len, disasm) < 0)
    gnote("GPU binary %s: nvdisasm output not understood: functions only", hash);
  free(text);
  return 0;
}

static bin_t *bin_get(gpu_ctx_t *g, const char *hash) {
  for (size_t i = 0; i < g->nbins; i++)
    if (strcmp(g->bins[i].hash, hash) == 0)
      return &g->bins[i];
  bin_t *nb = realloc(g->bins, (g->nbins + 1) * sizeof *nb);
  if (nb == NULL)
    return NULL;
  g->bins = nb;
  bin_t *b = &g->bins[g->nbins++];
  memset(b, 0, sizeof *b);
  snprintf(b->hash, sizeof b->hash, "%s", hash);
  gpd_report_gpu_bin(g->dir, hash, NULL, NULL, &b->cubin, &b->disasm, &g->warned_nvdisasm);
  return b;
}

/* ------------------------------------------------------ into the tree */

static uint64_t gid(uint64_t parent, const gpd_gnode_t *n) {
  uint8_t buf[sizeof(uint64_t) + 1 + sizeof n->label];
  size_t l = strlen(n->label);
  memcpy(buf, &parent, sizeof parent);
  buf[sizeof parent] = n->kind;
  memcpy(buf + sizeof parent + 1, n->label, l);
  uint64_t h = gpd_hash64(buf, sizeof parent + 1 + l, 0x67707573616d70ull);
  return h ? h : 1;
}

static int add_metrics(gpd_mvec_t *m, const gpd_gnode_t *n, double w) {
  int err = 0;
  if (n->ginst == 0)
    return 0;
  err |= gpd_tree_mvec_add(m, GPD_M_GINST, n->ginst * w);
  if (n->ginst - n->stall[GPD_STALL_NONE] != 0)
    err |= gpd_tree_mvec_add(m, GPD_M_GINST_STL_ANY, (n->ginst - n->stall[GPD_STALL_NONE]) * w);
  for (unsigned s = 0; s < GPD_STALL__COUNT; s++)
    if (n->stall[s] != 0)
      err |= gpd_tree_mvec_add(m, GPD_M_GINST_STL_NONE + s, n->stall[s] * w);
  return err ? -ENOMEM : 0;
}

static const int kind_of[] = {GPD_NODE_KERNEL, GPD_NODE_GPU_FUNC, GPD_NODE_GPU_LOOP,
                              GPD_NODE_GPU_LINE, GPD_NODE_GPU_INSN, GPD_NODE_UNKNOWN};

/* The GPU tree of one kernel below tree node `k` with weight w. */
static int hang(gpu_ctx_t *g, size_t k, const gpd_gtree_t *gt, double w) {
  gpd_tree_t *t = g->t;
  if (!g->o->detail) { /* collapsed: the kernel node holds it all */
    for (size_t i = 0; i < gt->nnodes; i++)
      if (add_metrics(&t->nodes[k].excl, &gt->nodes[i], w) < 0)
        return -ENOMEM;
    return 0;
  }
  uint64_t *ids = calloc(gt->nnodes ? gt->nnodes : 1, sizeof *ids);
  if (ids == NULL)
    return -ENOMEM;
  ids[0] = t->nodes[k].id;
  int err = add_metrics(&t->nodes[k].excl, &gt->nodes[0], w);
  for (size_t i = 1; i < gt->nnodes && err == 0; i++) {
    const gpd_gnode_t *n = &gt->nodes[i];
    char label[192];
    const char *lab = n->label;
    if (g->o->flat && n->kind == GPD_GNODE_FUNC) { /* flat: by function, not call site */
      snprintf(label, sizeof label, "%s", n->label);
      char *cut = strstr(label, " (call at");
      if (cut)
        *cut = 0;
      lab = label;
    }
    uint64_t parent = ids[n->parent];
    ids[i] = gid(parent, n);
    long idx = gpd_tree_node_add(t, ids[i], parent, kind_of[n->kind < 6 ? n->kind : 5], lab, "",
                                 0, "");
    if (idx < 0) {
      err = (int)idx;
      break;
    }
    err = add_metrics(&t->nodes[idx].excl, n, w);
  }
  free(ids);
  return err;
}

typedef struct kgroup_s {
  char *func, *hash;
  gpd_pcs_t *s;
  size_t n, cap;
} kgroup_t;

static int place_kernel(gpu_ctx_t *g, kgroup_t *kg) {
  gpd_tree_t *t = g->t;
  bin_t *b = kg->hash[0] ? bin_get(g, kg->hash) : NULL;
  if (kg->hash[0] == 0)
    gnote("samples of %.200s name a GPU binary the profile has no hash for", kg->func);
  gpd_gtree_t *gt = NULL;
  int err = gpd_gtree_attribute(b ? b->cubin : NULL, b ? b->disasm : NULL, kg->func, kg->s, kg->n,
                              GPU_MAX_CTX_NODES, &gt);
  if (err < 0)
    return err;
  if (gt->notes[0])
    gnote("%.200s: %s", kg->func, gt->notes);
  /* the kernel's contexts, weighted by their GKER time */
  double total = 0;
  size_t nk = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->nodes[i].kind == GPD_NODE_KERNEL && strcmp(t->nodes[i].raw_name, kg->func) == 0) {
      total += gpd_tree_mvec_get(&t->nodes[i].excl, GPD_M_GKER);
      nk++;
    }
  if (nk == 0) {
    /* no launch recorded (tracing off?): a node of its own below the root */
    long root = -1;
    for (size_t i = 0; i < t->n && root < 0; i++)
      if (t->nodes[i].kind == GPD_NODE_ROOT)
        root = (long)i;
    char label[300];
    snprintf(label, sizeof label, "<gpu samples> %s", kg->func);
    uint64_t id = gpd_hash64(label, strlen(label), 0x67707573ull);
    long k = gpd_tree_node_add(t, id, root >= 0 ? t->nodes[root].id : 0, GPD_NODE_KERNEL, label,
                               "", 0, kg->func);
    err = k < 0 ? (int)k : hang(g, (size_t)k, gt, 1);
    gnote("%.200s: samples but no recorded launch: shown below the root", kg->func);
  } else {
    for (size_t i = 0; i < t->n && err == 0; i++) {
      if (t->nodes[i].kind != GPD_NODE_KERNEL || strcmp(t->nodes[i].raw_name, kg->func) != 0)
        continue;
      double w = total > 0 ? gpd_tree_mvec_get(&t->nodes[i].excl, GPD_M_GKER) / total : 1.0 / nk;
      err = hang(g, i, gt, w);
    }
  }
  gpd_gtree_free(gt);
  return err;
}

/* GSAMP: TOT, DRP on the root; EXP from GKER time, clock, SMs and the
 * period (HPCToolkit manual, Table 8.9 and the GSAMP:UTIL formula
 * 100 * GSAMP:TOT / GSAMP:EXP). */
static int gsamp(gpu_ctx_t *g, struct sqlite3 *db, int pid) {
  gpd_store_pcstat_t ps;
  if (gpd_store_pcsample_stat(db, pid, &ps)) {
    double tot = ps.total, drp = ps.dropped;
    int per = ps.period_log2, sm = ps.sm_count;
    double khz = ps.clock_khz;
    double lost = ps.lost_keys;
    double gker = 0;
    gpd_tree_t *t = g->t;
    long root = -1;
    for (size_t i = 0; i < t->n; i++) {
      if (t->nodes[i].kind == GPD_NODE_ROOT && root < 0)
        root = (long)i;
      gker += gpd_tree_mvec_get(&t->nodes[i].excl, GPD_M_GKER);
    }
    /* one sample per SM every 2^per cycles while kernels run */
    double exp = per > 0 && sm > 0 && khz > 0 ? gker * 1e-9 * khz * 1e3 * sm / (double)(1ull << per)
                                              : 0;
    if (root >= 0) {
      gpd_tree_mvec_add(&t->nodes[root].excl, GPD_M_GSAMP_TOT, tot);
      gpd_tree_mvec_add(&t->nodes[root].excl, GPD_M_GSAMP_DRP, drp);
      if (exp > 0)
        gpd_tree_mvec_add(&t->nodes[root].excl, GPD_M_GSAMP_EXP, exp);
    }
    char util[64] = "unknown";
    if (exp > 0)
      snprintf(util, sizeof util, "%.1f %%", 100.0 * tot / exp);
    gnote("GPU PC sampling: GSAMP:TOT %.0f, GSAMP:DRP %.0f, GSAMP:PER 2^%d cycles, GSAMP:EXP %.0f, "
          "GSAMP:UTIL %s%s",
          tot, drp, per, exp, util, lost > 0 ? " (samples of keys past the daemon's bound lost)" : "");
  }
  return 0;
}

/* the sample rows, grouped per (kernel, binary) */
typedef struct kgroups_s {
  kgroup_t *kg;
  size_t n, cap, bad_hash;
} kgroups_t;

static int on_sample(void *c, const gpd_store_pcsample_t *s) {
  kgroups_t *ks = c;
  const char *func = s->func, *hash = s->hash;
  if (func == NULL || hash == NULL)
    return 0;
  if (hash[0] && !valid_hash(hash)) {
    ks->bad_hash++;
    hash = "";
  }
  if (ks->n == 0 || strcmp(ks->kg[ks->n - 1].func, func) || strcmp(ks->kg[ks->n - 1].hash, hash)) {
    if (ks->n == ks->cap) {
      size_t cap = ks->cap ? 2 * ks->cap : 16;
      kgroup_t *n = realloc(ks->kg, cap * sizeof *n);
      if (n == NULL)
        return -ENOMEM;
      ks->kg = n;
      ks->cap = cap;
    }
    memset(&ks->kg[ks->n], 0, sizeof ks->kg[ks->n]);
    ks->kg[ks->n].func = gpd_cli_strdup(func);
    ks->kg[ks->n].hash = gpd_cli_strdup(hash);
    ks->n++;
  }
  kgroup_t *k = &ks->kg[ks->n - 1];
  if (k->n == k->cap) {
    size_t cap = k->cap ? 2 * k->cap : 64;
    gpd_pcs_t *n = realloc(k->s, cap * sizeof *n);
    if (n == NULL)
      return -ENOMEM;
    k->s = n;
    k->cap = cap;
  }
  k->s[k->n++] = (gpd_pcs_t){(uint64_t)s->pc, gpd_stall_from_vendor(s->stall), s->samples};
  return 0;
}

int gpd_report_gpu_load(gpd_tree_t *t, struct sqlite3 *db, const char *path, int pid,
                        const gpd_report_gpu_opts_t *o) {
  if (!gpd_store_file_has_table(db, "pcsample"))
    return 0;
  gpu_ctx_t g = {.t = t, .o = o};
  const char *slash = strrchr(path, '/');
  if (slash)
    snprintf(g.dir, sizeof g.dir, "%.*s", (int)(slash - path), path);
  else
    snprintf(g.dir, sizeof g.dir, ".");
  if (g.dir[0] == 0)
    snprintf(g.dir, sizeof g.dir, "/");
  kgroups_t ks = {0};
  char serr[256];
  int err = gpd_store_pcsample_each(db, pid, 1, on_sample, &ks, serr, sizeof serr);
  if (err == GPD_ESTORE) {
    gnote("%s: GPU samples unreadable: %s", path, serr);
    return 0;
  }
  kgroup_t *kg = ks.kg;
  size_t nkg = ks.n, bad_hash = ks.bad_hash;
  if (bad_hash)
    gnote("%zu sample rows name a malformed GPU binary hash", bad_hash);
  for (size_t i = 0; i < nkg && err == 0; i++)
    err = place_kernel(&g, &kg[i]);
  if (err == 0)
    err = gsamp(&g, db, pid);
  for (size_t i = 0; i < nkg; i++) {
    free(kg[i].func);
    free(kg[i].hash);
    free(kg[i].s);
  }
  free(kg);
  for (size_t i = 0; i < g.nbins; i++) {
    gpd_cubin_free(g.bins[i].cubin);
    gpd_disasm_free(g.bins[i].disasm);
  }
  free(g.bins);
  return err;
}
