/* bench-tracewrite - `gpuprof trace`'s writers (cli/xwrite*.c) on a
 * synthetic trace shaped like a training loop: one process, 4 streams,
 * N GPU operations (default 1 000 000: kernels, every 50th a copy, every
 * 200th a host-timed sync), each launched from one of 256 call sites 45
 * CPU frames deep (30 shared interpreter frames, then phase > layer > 10 dispatcher frames > op),
 * PyTorch-like kernel names.  Prints, per format (Perfetto, Chrome JSON,
 * Chrome JSON with launch slices and flows; both Chrome JSONs again
 * gzip-compressed as `-o OUT.json.gz` writes them), bytes per GPU event,
 * write time and the writer's peak RSS growth; then the same for the
 * writer of commit 3c01d39 (every event with its call path as text) on
 * the first `--before` events (default 20 000: its output is ~10 KB per
 * event), when the bench was built from a git checkout.
 *
 * With --window, instead: the memory of `gpuprof trace --pid N --duration
 * D`'s writer on live windows of 250 000, 1 000 000 and 4 000 000 GPU
 * operations (or the counts given) delivered in pages of 250 000 rows
 * (trace.c's LIVE_PAGE_ROWS; a generator makes each page as gpuprofd
 * would answer it: the launches of a time slice and the operations that
 * start in it), written as Perfetto; per window, in forked children,
 * peak RSS (VmHWM) and time of the writer before (every page appended to
 * one in-memory trace, then written whole: what trace.c did up to issue
 * 24) and after (gpd__xlayout_scan + gpd__xwrite_perfetto_pages over the pages:
 * one page held at a time), and whether both files are the same.  The
 * parsed protobuf reply of a page (held by both) is not simulated.
 *
 *   bench-tracewrite [--events N] [--before M] [--dir DIR]
 *   bench-tracewrite --window [N ...] [--dir DIR]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuprof/record.h"
#include "trace.h"
#include "xlayout.h"
#include "xwrite.h"

#ifdef GPD_BENCH_BEFORE
int gpd_bench_before_perfetto(FILE *f, const gpd_xtrace_t *x);
int gpd_bench_before_chrome(FILE *f, const gpd_xtrace_t *x);
#endif

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long rss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

#define NSITES 256
static uint64_t site_ph[NSITES], site_k[NSITES], site_sync[NSITES], site_copy[NSITES];

static void build(gpd_xtrace_t *x, size_t n) {
  gpd_tree_t *t = &x->tree;
  uint64_t id = 1, parent;
  char fn[256], file[256];
  gpd_tree_node_add(t, id, 0, GPD_NODE_ROOT, "<program root>", "", 0, "");
  parent = id++;
  static const char *const interp[] = {"_PyEval_EvalFrameDefault", "_PyFunction_Vectorcall",
                                       "method_vectorcall", "PyObject_Call", "cfunction_call"};
  for (int d = 0; d < 30; d++, parent = id++) {
    long k = gpd_tree_node_add(t, id, parent, GPD_NODE_FRAME, "", "/usr/bin/python3.11", 0x1000 + d, "");
    snprintf(file, sizeof file, "Python/ceval.c");
    gpd_tree_frame_add(t, (size_t)k, d < 3 ? (d == 0 ? "_start" : d == 1 ? "main" : "Py_RunMain") : interp[d % 5],
                       file, 4000 + d, 0);
  }
  uint64_t base = parent;
  int s = 0;
  for (int ph = 0; ph < 4; ph++) {
    uint64_t p1 = id++;
    snprintf(fn, sizeof fn, "%s", ph == 0 ? "forward" : ph == 1 ? "backward" : ph == 2 ? "step" : "zero_grad");
    gpd_tree_frame_add(t, (size_t)gpd_tree_node_add(t, p1, base, GPD_NODE_FRAME, "", "train.py", 0, ""),
                       fn, "train.py", 100 + ph, 0);
    for (int ly = 0; ly < 8; ly++) {
      uint64_t p2 = id++;
      snprintf(fn, sizeof fn, "Block%d.%s", ly, ph == 1 ? "backward" : "forward");
      gpd_tree_frame_add(t, (size_t)gpd_tree_node_add(t, p2, p1, GPD_NODE_FRAME, "", "model.py", 0, ""),
                         fn, "model.py", 200 + ly, 0);
      /* 10 more frames: torch's dispatcher */
      uint64_t p = p2;
      for (int d = 0; d < 10; d++) {
        uint64_t q = id++;
        snprintf(fn, sizeof fn, "c10::impl::wrap_kernel_functor_unboxed_<%d>::call", d);
        gpd_tree_frame_add(t, (size_t)gpd_tree_node_add(t, q, p, GPD_NODE_FRAME, "", "libtorch_cpu.so", 0, ""),
                           fn, "aten/src/ATen/core/boxing/impl/make_boxed_from_unboxed_functor.h", 400 + d, 0);
        p = q;
      }
      for (int op = 0; op < 8; op++, s++) {
        uint64_t cs = id++;
        snprintf(fn, sizeof fn, "at::native::op%d_kernel_cuda", op);
        gpd_tree_frame_add(t, (size_t)gpd_tree_node_add(t, cs, p, GPD_NODE_FRAME, "", "libtorch_cuda.so", 0, ""),
                           fn, "aten/src/ATen/native/cuda/Ops.cu", 500 + op, 0);
        site_ph[s] = id++;
        gpd_tree_node_add(t, site_ph[s], cs, GPD_NODE_PLACEHOLDER, "<gpu kernel>", "", 0, "");
        site_k[s] = id++;
        snprintf(fn, sizeof fn,
                 "void at::native::vectorized_elementwise_kernel<4, at::native::Functor%d<float>, "
                 "at::detail::Array<char*, 3> >(int, at::native::Functor%d<float>, at::detail::Array<char*, 3>)",
                 op + 8 * ly, op + 8 * ly);
        gpd_tree_node_add(t, site_k[s], site_ph[s], GPD_NODE_KERNEL, fn, "", 0, fn);
        site_copy[s] = id++;
        gpd_tree_node_add(t, site_copy[s], cs, GPD_NODE_PLACEHOLDER, "<gpu copy>", "", 0, "");
        site_sync[s] = id++;
        gpd_tree_node_add(t, site_sync[s], cs, GPD_NODE_PLACEHOLDER, "<gpu sync>", "", 0, "");
      }
    }
  }
  gpd_tproc_t *pr = gpd_tree_proc_new(t);
  pr->profile_id = 1;
  pr->pid = 4242;
  pr->exe = gpd_cli_strdup("/usr/bin/python3.11");
  gpd_tree_finish(t, 0);
  x->ev = calloc(n, sizeof *x->ev);
  x->la = calloc(n, sizeof *x->la);
  uint64_t ts = 1000000000000ull, sfree[4] = {0};
  for (size_t i = 0; i < n; i++) {
    int site = (int)((i * 7) % NSITES);
    unsigned op = i % 200 == 199 ? GPD_OP_SYNC : i % 50 == 49 ? GPD_OP_COPY : GPD_OP_KERNEL;
    uint32_t st = (uint32_t)(i % 4);
    uint64_t dur = op == GPD_OP_KERNEL ? 2000 + (i * 37) % 9000 : 4000;
    ts += 700 + (i * 13) % 600;
    x->la[i] = (gpd_xlaunch_t){.profile = 1, .ts = ts, .corr = i + 1,
                               .node = op == GPD_OP_KERNEL ? site_ph[site] : op == GPD_OP_COPY ? site_copy[site] : site_sync[site],
                               .tid = 4242, .op = (uint8_t)op};
    uint64_t start = ts + 3000 > sfree[st] ? ts + 3000 : sfree[st];
    if (op == GPD_OP_SYNC)
      start = ts + 100;
    else
      sfree[st] = start + dur;
    x->ev[i] = (gpd_xev_t){.profile = 1, .start = start, .end = start + dur, .corr = i + 1,
                           .node = op == GPD_OP_KERNEL ? site_k[site] : x->la[i].node,
                           .bytes = op == GPD_OP_COPY ? 1 << 20 : 0, .stream = st, .device = 0,
                           .op = (uint8_t)op, .subkind = op == GPD_OP_COPY ? 1 : 0};
  }
  x->nev = x->nla = n;
}

/* the writers through gzip (`gpuprof trace -o OUT.json.gz`) */
static int gz_chrome(FILE *f, const gpd_xtrace_t *x) {
  FILE *g = gpd__xwrite_gzip(f);
  int r = g ? gpd_xwrite_chrome(g, x) : -1;
  return g && fclose(g) == EOF ? -1 : r;
}
static int gz_chrome_launches(FILE *f, const gpd_xtrace_t *x) {
  FILE *g = gpd__xwrite_gzip(f);
  int r = g ? gpd_xwrite_chrome_launches(g, x) : -1;
  return g && fclose(g) == EOF ? -1 : r;
}

static int ev_cmp(const void *a, const void *b) {
  const gpd_xev_t *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

static void run(const char *label, int (*wr)(FILE *, const gpd_xtrace_t *), const gpd_xtrace_t *x,
                const char *dir) {
  static int k;
  char path[4096];
  snprintf(path, sizeof path, "%s/bench-tracewrite.%d.%d", dir, (int)getpid(), k++);
  FILE *f = fopen(path, "wb");
  if (f == NULL) {
    perror(path);
    exit(1);
  }
  long rss0 = rss_kb();
  double t0 = now_s();
  int r = wr(f, x);
  fclose(f);
  double dt = now_s() - t0;
  struct stat st;
  stat(path, &st);
  printf("| %-28s | %9zu | %12.1f | %8.2f | %8.0f | %10ld |\n", label, x->nev,
         (double)st.st_size / (double)x->nev, dt, (double)x->nev / dt / 1e3, (rss_kb() - rss0) / 1024);
  if (!getenv("BENCH_KEEP"))
    unlink(path);
  if (r < 0) {
    fprintf(stderr, "%s: error %d\n", label, r);
    exit(1);
  }
}

/* ---- --window: live windows written page by page ---- */

/* Operation i of a window at the GPU's pace (not saturated, so the queue
 * between launch and start stays short, as a launch queue bounds it):
 * a launch every 1000 ns from one of the 256 call sites (every 5 000th,
 * or every BENCH_PAUSE_EVERY-th, after a 100 us pause of the CPU: an idle
 * interval of the GPU); 4
 * streams, a kernel of 1.5-5.5 us, every 50th a copy, every 200th a
 * host-timed sync. */
typedef struct {
  size_t i, n, pause;
  uint64_t ts, sfree[4];
  gpd_xev_t *pend; /* operations launched whose start is after the page */
  size_t npend, cappend;
} wgen_t;

static void wgen_op(wgen_t *g, gpd_xlaunch_t *la, gpd_xev_t *ev) {
  size_t i = g->i++;
  int site = (int)((i * 7) % NSITES);
  unsigned op = i % 200 == 199 ? GPD_OP_SYNC : i % 50 == 49 ? GPD_OP_COPY : GPD_OP_KERNEL;
  uint32_t st = (uint32_t)(i % 4);
  uint64_t dur = op == GPD_OP_KERNEL ? 1500 + (i * 37) % 4000 : 3000;
  g->ts += i % g->pause == g->pause - 1 ? 100000 : 1000; /* a 100 us CPU pause every g->pause launches: idle */
  uint64_t node = op == GPD_OP_KERNEL ? site_ph[site] : op == GPD_OP_COPY ? site_copy[site] : site_sync[site];
  *la = (gpd_xlaunch_t){.profile = 1, .ts = g->ts, .corr = i + 1, .node = node, .tid = 4242, .op = (uint8_t)op};
  uint64_t start = g->ts + 3000 > g->sfree[st] ? g->ts + 3000 : g->sfree[st];
  if (op == GPD_OP_SYNC)
    start = g->ts + 100;
  else
    g->sfree[st] = start + dur;
  *ev = (gpd_xev_t){.profile = 1, .start = start, .end = start + dur, .corr = i + 1,
                    .node = op == GPD_OP_KERNEL ? site_k[site] : node, .bytes = op == GPD_OP_COPY ? 1 << 20 : 0,
                    .stream = st, .op = (uint8_t)op, .subkind = op == GPD_OP_COPY ? 1 : 0};
}

/* pages of `per` launches and the operations starting in their slice */
typedef struct {
  gpd_xpages_t src;
  wgen_t g;
  size_t per;
  gpd_xtrace_t pg;
} wpages_t;

#define GROW(a, n, cap) (gpd_xtrace_grow((void **)&(a), (n), &(cap), sizeof *(a)) ? (perror("grow"), exit(1)) : (void)0)

static int wp_next(gpd_xpages_t *s, gpd_xtrace_t **page, uint64_t *hi) {
  wpages_t *p = (wpages_t *)s;
  wgen_t *g = &p->g;
  if (g->i == g->n && g->npend == 0)
    return 0;
  p->pg.nev = p->pg.nla = 0;
  for (size_t k = 0; k < p->per && g->i < g->n; k++) {
    gpd_xev_t e;
    GROW(p->pg.la, p->pg.nla, p->pg.capla);
    GROW(g->pend, g->npend, g->cappend);
    wgen_op(g, &p->pg.la[p->pg.nla++], &e);
    g->pend[g->npend++] = e;
  }
  uint64_t b = g->i == g->n ? UINT64_MAX : g->ts;
  size_t w = 0;
  for (size_t k = 0; k < g->npend; k++)
    if (g->pend[k].start <= b) {
      GROW(p->pg.ev, p->pg.nev, p->pg.capev);
      p->pg.ev[p->pg.nev++] = g->pend[k];
    } else {
      g->pend[w++] = g->pend[k];
    }
  g->npend = w;
  qsort(p->pg.ev, p->pg.nev, sizeof *p->pg.ev, ev_cmp);
  *page = &p->pg;
  *hi = b;
  return 1;
}

static int wp_rewind(gpd_xpages_t *s) {
  wpages_t *p = (wpages_t *)s;
  size_t n = p->g.n;
  free(p->g.pend);
  memset(&p->g, 0, sizeof p->g);
  p->g.n = n;
  const char *e = getenv("BENCH_PAUSE_EVERY");
  p->g.pause = e && strtoul(e, NULL, 10) > 0 ? strtoul(e, NULL, 10) : 5000;
  p->g.ts = 1000000000000ull;
  return 0;
}

static long vm_hwm_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %ld", &v) == 1)
      break;
  if (f)
    fclose(f);
  return v;
}

/* One writer on a window of n operations in a child: prints "hwm_kb
 * seconds" to fd.  after: page by page; else accumulated, then whole. */
static void window_child(size_t n, int after, const char *path, int fd) {
  gpd_xtrace_t x;
  gpd_xtrace_init(&x);
  build(&x, 0);
  wpages_t p = {.src = {wp_next, wp_rewind}, .per = 125000};
  p.g.n = n;
  gpd_xtrace_init(&p.pg);
  FILE *f = fopen(path, "wb");
  if (f == NULL) {
    perror(path);
    _exit(1);
  }
  double t0 = now_s();
  int r;
  if (after) {
    gpd_xlayout_t l;
    gpd__xlayout_open(&l, &x, 0, 0);
    r = gpd__xlayout_scan(&l, &p.src);
    if (r == 0)
      r = gpd__xwrite_perfetto_pages(f, &l, &p.src);
    gpd__xlayout_free(&l);
  } else {
    gpd_xtrace_t *pg;
    uint64_t hi;
    wp_rewind(&p.src);
    while (wp_next(&p.src, &pg, &hi) > 0) {
      for (size_t k = 0; k < pg->nev; k++) {
        GROW(x.ev, x.nev, x.capev);
        x.ev[x.nev++] = pg->ev[k];
      }
      for (size_t k = 0; k < pg->nla; k++) {
        GROW(x.la, x.nla, x.capla);
        x.la[x.nla++] = pg->la[k];
      }
    }
    gpd__xtrace_sort(&x);
    r = gpd_xwrite_perfetto(f, &x);
  }
  fclose(f);
  if (r < 0)
    fprintf(stderr, "%s: error %d\n", after ? "page by page" : "before", r);
  dprintf(fd, "%ld %.2f %d\n", vm_hwm_kb(), now_s() - t0, r);
  _exit(r < 0);
}

static int window_run(size_t n, int after, const char *path, long *hwm, double *sec) {
  int fd[2];
  char buf[128] = {0};
  if (pipe(fd) < 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    window_child(n, after, path, fd[1]);
  }
  close(fd[1]);
  ssize_t got = read(fd[0], buf, sizeof buf - 1);
  close(fd[0]);
  int st, r = -1;
  waitpid(pid, &st, 0);
  if (got <= 0 || sscanf(buf, "%ld %lf %d", hwm, sec, &r) != 3 || r < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
    return -1;
  return 0;
}

/* Packets in the Perfetto trace at path (0 when unreadable). */
static size_t packets(const char *path) {
  FILE *f = fopen(path, "rb");
  size_t n = 0;
  int c;
  while (f && (c = getc(f)) == 0x0a) { /* Trace.packet, length-delimited */
    uint64_t len = 0;
    for (int sh = 0; (c = getc(f)) != EOF; sh += 7) {
      len |= (uint64_t)(c & 0x7f) << sh;
      if (!(c & 0x80))
        break;
    }
    if (fseek(f, (long)len, SEEK_CUR) != 0)
      break;
    n++;
  }
  if (f)
    fclose(f);
  return n;
}

static int same_file(const char *a, const char *b) {
  FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
  int same = f && g, c = 0;
  while (same && (c = getc(f)) == getc(g))
    if (c == EOF)
      break;
  same = same && c == EOF;
  if (f)
    fclose(f);
  if (g)
    fclose(g);
  return same;
}

static int window_main(int argc, char **argv) {
  size_t ns[16] = {250000, 1000000, 4000000}, nn = 3, given = 0;
  const char *dir = "/tmp";
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
    else if (given < 16)
      ns[given++] = strtoul(argv[i], NULL, 10);
  }
  if (given)
    nn = given;
  gpd_xtrace_t x;
  gpd_xtrace_init(&x);
  build(&x, 0);
  printf("live windows in pages of 250 000 rows (125 000 launches + their operations), Perfetto, "
         "%zu contexts, 43-frame call paths; peak RSS of the writer's process (VmHWM; the tree alone: "
         "%ld MiB)\n\n", x.tree.n, vm_hwm_kb() / 1024);
  gpd_xtrace_free(&x);
  printf("| GPU operations | before: VmHWM MiB | before s | after: VmHWM MiB | after s | packets | same file |\n");
  printf("|---------------:|------------------:|---------:|----------------:|--------:|--------:|:---------:|\n");
  for (size_t k = 0; k < nn; k++) {
    char pa[4096], pb[4096];
    long ha, hb;
    double sa, sb;
    snprintf(pa, sizeof pa, "%s/bench-tracewin.%d.before", dir, (int)getpid());
    snprintf(pb, sizeof pb, "%s/bench-tracewin.%d.after", dir, (int)getpid());
    if (window_run(ns[k], 0, pa, &ha, &sa) < 0) {
      fprintf(stderr, "window of %zu: the writer before failed\n", ns[k]);
      return 1;
    }
    if (window_run(ns[k], 1, pb, &hb, &sb) < 0) {
      fprintf(stderr, "window of %zu: the writer page by page failed\n", ns[k]);
      return 1;
    }
    printf("| %14zu | %17.0f | %8.2f | %15.0f | %7.2f | %7zu | %9s |\n", ns[k], ha / 1024.0, sa, hb / 1024.0,
           sb, packets(pb), same_file(pa, pb) ? "yes" : "no");
    fflush(stdout);
    unlink(pa);
    unlink(pb);
  }
  return 0;
}

int main(int argc, char **argv) {
  size_t n = 1000000, nb = 20000;
  if (argc > 1 && !strcmp(argv[1], "--window"))
    return window_main(argc, argv);
  const char *dir = "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--events"))
      n = strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--before"))
      nb = strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--dir"))
      dir = argv[i + 1];
  }
  gpd_xtrace_t x;
  gpd_xtrace_init(&x);
  build(&x, n);
  qsort(x.ev, x.nev, sizeof *x.ev, ev_cmp);
  printf("synthetic trace: %zu GPU operations (kernels, every 50th a copy, every 200th a sync), "
         "%zu launches, %zu contexts, 43-frame call paths\n\n", x.nev, x.nla, x.tree.n);
  printf("| writer                       | GPU events | bytes/event | write s | K ev/s   | RSS +MiB   |\n");
  printf("|------------------------------|-----------:|------------:|--------:|---------:|-----------:|\n");
  run("perfetto (interned)", gpd_xwrite_perfetto, &x, dir);
  run("chrome (stackFrames)", gpd_xwrite_chrome, &x, dir);
  run("chrome --launches (flows)", gpd_xwrite_chrome_launches, &x, dir);
  run("chrome .json.gz", gz_chrome, &x, dir);
  run("chrome --launches .json.gz", gz_chrome_launches, &x, dir);
#ifdef GPD_BENCH_BEFORE
  gpd_xtrace_t y = x;
  if (nb == 0) {
    gpd_xtrace_free(&x);
    return 0;
  }
  y.nev = nb < x.nev ? nb : x.nev;
  y.nla = y.nev;
  run("perfetto before (3c01d39)", gpd_bench_before_perfetto, &y, dir);
  run("chrome before (3c01d39)", gpd_bench_before_chrome, &y, dir);
#else
  (void)nb;
  printf("(no baseline: not built from a git checkout)\n");
#endif
  gpd_xtrace_free(&x);
  return 0;
}
