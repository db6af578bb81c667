/* idle.c - GPU idleness blame over a trace (trace.h).
 *
 * HPCToolkit's trace view "identifies times when all GPU streams are idle
 * and at least one CPU thread is active.  In such cases, it partitions the
 * cost of GPU idleness among routines being executed by active CPU
 * threads" (Zhou et al., "Measurement and analysis of GPU-accelerated
 * applications with HPCToolkit", Parallel Computing 2021, section 7, GPU
 * Idleness Blame tab).  Per process:
 *   - busy time is the union of its kernels, copies and memsets on every
 *     device and stream; an idle interval is a hole in that union between
 *     its first GPU start and its last GPU end;
 *   - a thread is active in [a, b) when it made a GPU API call before b and
 *     makes one at or after a; each active thread gets an equal share;
 *   - inside a thread's share, the part it spent in a host-measured
 *     synchronization (a SYNC activity of its own, e.g. clFinish) is blamed
 *     on the synchronization's call site ("waiting"); the rest on what it
 *     was running: its CPU samples in [a, b) when the shim sampled CPU
 *     time; else the CPU context is unknown, and, span by span between
 *     its GPU API calls, the call site of the call that ends the span is
 *     kept as a hint (marked unknown, never "running": a 300 ms phase of
 *     pure CPU work before a launch is not the launch's code).
 * The metric is reported as GIDLE (ns; the HPCToolkit manual names no idle
 * metric, the name follows its G* family).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/record.h"

#include "xcorrix.h"
#include "trace.h"

typedef struct {
  uint64_t ts, node;
} tpoint_t;
typedef struct {
  uint64_t start, end, node;
} tspan_t;
typedef struct {
  uint32_t tid;
  tpoint_t *la; /* launches by time */
  size_t nla, capla;
  tspan_t *sy; /* syncs by start */
  size_t nsy, capsy;
  tpoint_t *cs; /* CPU samples by time */
  size_t ncs, capcs;
} tthread_t;

static int push(void **a, size_t *n, size_t *cap, size_t sz, const void *v) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    void *na = realloc(*a, nc * sz);
    if (na == NULL)
      return -ENOMEM;
    *a = na;
    *cap = nc;
  }
  memcpy((char *)*a + *n * sz, v, sz);
  (*n)++;
  return 0;
}
#define PUSH(arr, n, cap, v) push((void **)&(arr), &(n), &(cap), sizeof *(arr), (v))

static int gpu_busy_op(unsigned op) {
  return op == GPD_OP_KERNEL || op == GPD_OP_COPY || op == GPD_OP_MEMSET;
}

static tthread_t *thread_of(tthread_t **th, size_t *nth, size_t *cap, uint32_t tid) {
  for (size_t i = 0; i < *nth; i++)
    if ((*th)[i].tid == tid)
      return &(*th)[i];
  tthread_t z = {.tid = tid};
  if (PUSH(*th, *nth, *cap, &z) < 0)
    return NULL;
  return &(*th)[*nth - 1];
}

/* first index with ts >= t */
static size_t lower(const tpoint_t *v, size_t n, uint64_t t) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (v[mid].ts < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int blame_cmp(const void *a, const void *b) {
  const gpd_xblame_t *x = a, *y = b;
  if (x->profile != y->profile)
    return x->profile < y->profile ? -1 : 1;
  if (x->node != y->node)
    return x->node < y->node ? -1 : 1;
  return x->cpu - y->cpu;
}
static int blame_desc(const void *a, const void *b) {
  const gpd_xblame_t *x = a, *y = b;
  return x->ns > y->ns ? -1 : x->ns < y->ns;
}

/* Sort bl[0..n) by (profile, node, sync) and add up equal entries in
 * place; returns how many are left. */
static size_t merge_blame(gpd_xblame_t *bl, size_t n) {
  size_t w = 0;
  if (n == 0)
    return 0;
  qsort(bl, n, sizeof *bl, blame_cmp);
  for (size_t i = 0; i < n; i++) {
    if (w && blame_cmp(&bl[w - 1], &bl[i]) == 0)
      bl[w - 1].ns += bl[i].ns;
    else
      bl[w++] = bl[i];
  }
  return w;
}

typedef struct {
  gpd_xgap_t *gaps;
  size_t ngaps, capgaps;
  gpd_xblame_t *bl;
  size_t nbl, capbl;
} acc_t;

const char *gpd_idle_cpu_name(int cpu) {
  return cpu == GPD_XCPU_WAITING ? "waiting" : cpu == GPD_XCPU_RUNNING ? "running" : "unknown";
}

static int add_blame(acc_t *a, uint64_t profile, uint64_t node, int cpu, double ns) {
  if (ns <= 0)
    return 0;
  gpd_xblame_t b = {.profile = profile, .node = node, .ns = ns, .cpu = cpu};
  return PUSH(a->bl, a->nbl, a->capbl, &b);
}

/* first sync index that may overlap [t, ...): syncs of one thread are
 * sequential, so sorted by start they are sorted by end too */
static size_t sync_from(const tspan_t *v, size_t n, uint64_t t) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (v[mid].end <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Blame weight * [s, e) of thread t: its synchronizations' parts on their
 * call sites ("waiting"), the rest on `node` (or on its CPU samples in
 * [s, e) when samples != 0).  Returns the ns left for `node`. */
static int blame_span(acc_t *acc, uint64_t profile, const tthread_t *t, uint64_t s, uint64_t e,
                      double weight, uint64_t node, int by_samples) {
  double rest = (double)(e - s);
  int err = 0;
  for (size_t k = sync_from(t->sy, t->nsy, s); k < t->nsy && t->sy[k].start < e && err == 0; k++) {
    uint64_t a = t->sy[k].start > s ? t->sy[k].start : s;
    uint64_t b = t->sy[k].end < e ? t->sy[k].end : e;
    if (b > a) {
      rest -= (double)(b - a);
      err = add_blame(acc, profile, t->sy[k].node, GPD_XCPU_WAITING, weight * (double)(b - a));
    }
  }
  if (err || rest <= 0)
    return err;
  if (by_samples) {
    size_t s0 = lower(t->cs, t->ncs, s), s1 = lower(t->cs, t->ncs, e);
    for (size_t k = s0; k < s1 && err == 0; k++)
      err = add_blame(acc, profile, t->cs[k].node, GPD_XCPU_RUNNING, weight * rest / (double)(s1 - s0));
    return err;
  }
  return add_blame(acc, profile, node, GPD_XCPU_UNKNOWN, weight * rest);
}

/* Blame gap [a, b) of profile on its active threads.  Without CPU
 * samples, a thread's time between two of its GPU API calls is blamed on
 * the call that ends it (the code that ran meanwhile led to that call). */
static int blame_gap(acc_t *acc, uint64_t profile, tthread_t *th, size_t nth, uint64_t a, uint64_t b) {
  size_t nact = 0;
  for (size_t i = 0; i < nth; i++)
    if (th[i].nla && th[i].la[0].ts < b && th[i].la[th[i].nla - 1].ts >= a)
      nact++;
  if (nact == 0)
    return add_blame(acc, profile, 0, GPD_XCPU_UNKNOWN, (double)(b - a)); /* no CPU thread known active */
  double w = 1.0 / (double)nact;
  int err = 0;
  for (size_t i = 0; i < nth && err == 0; i++) {
    tthread_t *t = &th[i];
    if (!(t->nla && t->la[0].ts < b && t->la[t->nla - 1].ts >= a))
      continue;
    if (lower(t->cs, t->ncs, b) > lower(t->cs, t->ncs, a)) {
      err = blame_span(acc, profile, t, a, b, w, 0, 1);
      continue;
    }
    uint64_t s = a;
    for (size_t k = lower(t->la, t->nla, a); s < b && err == 0; k++) {
      uint64_t e = k < t->nla && t->la[k].ts < b ? t->la[k].ts : b;
      uint64_t node = t->la[k < t->nla ? k : t->nla - 1].node;
      if (e > s)
        err = blame_span(acc, profile, t, s, e, w, node, 0);
      s = e;
    }
  }
  return err;
}

static void free_threads(tthread_t *th, size_t nth) {
  for (size_t i = 0; i < nth; i++) {
    free(th[i].la);
    free(th[i].sy);
    free(th[i].cs);
  }
  free(th);
}

/* One process: its threads, busy union, gaps. */
static int idle_profile(const gpd_xtrace_t *x, const gpd_xcorrix_t *ix, uint64_t profile,
                        acc_t *acc, double *idle, double *span) {
  tthread_t *th = NULL;
  size_t nth = 0, capth = 0;
  int err = 0;
  /* launches (sorted) and corr -> (tid, call site) for the syncs */
  for (size_t i = 0; i < x->nla && err == 0; i++) {
    const gpd_xlaunch_t *l = &x->la[i];
    if (l->profile != profile)
      continue;
    tthread_t *t = thread_of(&th, &nth, &capth, l->tid);
    tpoint_t p = {l->ts, l->node};
    err = t ? PUSH(t->la, t->nla, t->capla, &p) : -ENOMEM;
  }
  for (size_t i = 0; i < x->nev && err == 0; i++) {
    const gpd_xev_t *e = &x->ev[i];
    if (e->profile != profile || e->op != GPD_OP_SYNC)
      continue;
    long j = gpd__xcorrix_get(ix, x, profile, e->corr);
    if (j >= 0) {
      tthread_t *t = thread_of(&th, &nth, &capth, x->la[j].tid);
      tspan_t s = {e->start, e->end, x->la[j].node};
      err = t ? PUSH(t->sy, t->nsy, t->capsy, &s) : -ENOMEM;
    }
  }
  for (size_t i = 0; i < x->ncs && err == 0; i++) {
    const gpd_xsample_t *c = &x->cs[i];
    if (c->profile != profile)
      continue;
    tthread_t *t = thread_of(&th, &nth, &capth, c->tid);
    tpoint_t p = {c->ts, c->node};
    err = t ? PUSH(t->cs, t->ncs, t->capcs, &p) : -ENOMEM;
  }
  /* the busy union: events are sorted by start */
  uint64_t first = 0, cur = 0;
  int any = 0;
  for (size_t i = 0; i < x->nev && err == 0; i++) {
    const gpd_xev_t *e = &x->ev[i];
    if (e->profile != profile || !gpu_busy_op(e->op) || e->end < e->start)
      continue;
    if (!any) {
      any = 1;
      first = e->start;
      cur = e->end;
      continue;
    }
    if (e->start > cur) {
      gpd_xgap_t g = {.profile = profile, .start = cur, .end = e->start};
      size_t before = acc->nbl;
      err = blame_gap(acc, profile, th, nth, cur, e->start);
      /* the gap's main culprit: the context with the largest blame summed
       * over the gap (its CPU samples are one entry each: a single entry
       * would let a 1 ms wait outweigh 300 samples of 1 ms in one place) */
      if (err == 0)
        acc->nbl = before + merge_blame(acc->bl + before, acc->nbl - before);
      for (size_t k = before; k < acc->nbl; k++)
        if (k == before || acc->bl[k].ns > g.ns) {
          g.node = acc->bl[k].node;
          g.ns = acc->bl[k].ns;
          g.cpu = acc->bl[k].cpu;
        }
      if (err == 0)
        err = PUSH(acc->gaps, acc->ngaps, acc->capgaps, &g);
      *idle += (double)(e->start - cur);
    }
    if (e->end > cur)
      cur = e->end;
  }
  if (any)
    *span += (double)(cur - first);
  free_threads(th, nth);
  return err;
}

/* gpd_idle_xtrace over the profiles of x, or over profile `only` alone
 * (only != 0). */
static int idle_of(const gpd_xtrace_t *x, uint64_t only, gpd_xgap_t **gaps, size_t *ngaps,
                   gpd_xblame_t **blame, size_t *nblame, double *idle_ns, double *span_ns) {
  acc_t acc = {0};
  gpd_xcorrix_t ix; /* the launch of each synchronization */
  int err = gpd__xcorrix_build(&ix, x);
  *idle_ns = *span_ns = 0;
  for (size_t i = 0; i < x->tree.nprocs && err == 0; i++)
    if (only == 0 || x->tree.procs[i].profile_id == only)
      err = idle_profile(x, &ix, x->tree.procs[i].profile_id, &acc, idle_ns, span_ns);
  free(ix.slot);
  if (err < 0) {
    free(acc.gaps);
    free(acc.bl);
    return err;
  }
  /* merge equal (profile, node, sync) entries, largest first */
  size_t w = merge_blame(acc.bl, acc.nbl);
  if (w)
    qsort(acc.bl, w, sizeof *acc.bl, blame_desc);
  if (gaps)
    *gaps = acc.gaps;
  else
    free(acc.gaps);
  if (ngaps)
    *ngaps = acc.ngaps;
  *blame = acc.bl;
  *nblame = w;
  return 0;
}

int gpd_idle_xtrace(const gpd_xtrace_t *x, gpd_xgap_t **gaps, size_t *ngaps, gpd_xblame_t **blame,
                    size_t *nblame, double *idle_ns, double *span_ns) {
  return idle_of(x, 0, gaps, ngaps, blame, nblame, idle_ns, span_ns);
}

/* Most blamed contexts per process in `report --json`. */
#define IDLE_JSON_CONTEXTS 100u

/* One process of `report --json`'s "gpu_idleness" (docs/CLI.md): GIDLE
 * and its split by where the blamed CPU context was, GIDLE:RUN (running)
 * and GIDLE:SYNC (waiting in a synchronization), in seconds; the span
 * from the first to the last GPU operation; the idle intervals; the
 * contexts largest first.  0 or -ENOMEM. */
static int idle_json_proc(FILE *f, const gpd_xtrace_t *x, const gpd_tproc_t *p) {
  gpd_xblame_t *bl = NULL;
  size_t nbl = 0, ngaps = 0;
  double idle = 0, span = 0, by[3] = {0, 0, 0};
  int r = idle_of(x, p->profile_id, NULL, &ngaps, &bl, &nbl, &idle, &span);
  if (r < 0)
    return r;
  for (size_t i = 0; i < nbl; i++)
    by[bl[i].cpu] += bl[i].ns;
  fprintf(f, "{\"profile_id\":%llu,\"pid\":%d,\"GIDLE\":%.9f,\"GIDLE:RUN\":%.9f,\"GIDLE:SYNC\":%.9f,"
             "\"GIDLE:UNKNOWN\":%.9f,\"span\":%.9f,\"intervals\":%zu,\"contexts\":[",
          (unsigned long long)p->profile_id, p->pid, idle / 1e9, by[GPD_XCPU_RUNNING] / 1e9,
          by[GPD_XCPU_WAITING] / 1e9, by[GPD_XCPU_UNKNOWN] / 1e9, span / 1e9, ngaps);
  for (size_t i = 0; i < nbl && i < IDLE_JSON_CONTEXTS; i++) {
    char path_s[2048];
    gpd_xtrace_path(x, bl[i].node, 1, path_s, sizeof path_s);
    fprintf(f, "%s{\"context_id\":%llu,\"GIDLE\":%.9f,\"share\":%.6f,\"cpu\":\"%s\",\"path\":",
            i ? "," : "", (unsigned long long)bl[i].node, bl[i].ns / 1e9, idle > 0 ? bl[i].ns / idle : 0.0,
            gpd_idle_cpu_name(bl[i].cpu));
    gpd_json_str(f, path_s);
    fputc('}', f);
  }
  fprintf(f, "],\"more_contexts\":%zu}", nbl > IDLE_JSON_CONTEXTS ? nbl - IDLE_JSON_CONTEXTS : 0);
  free(bl);
  return 0;
}

int gpd_idle_report_json(FILE *f, const char *path, int pid, int *first, char *err, size_t errn) {
  gpd_xtrace_t x;
  gpd_xtrace_init(&x);
  int r = gpd_xtrace_load(&x, path, pid, err, errn);
  for (size_t i = 0; r == 0 && i < x.tree.nprocs; i++) {
    const gpd_tproc_t *p = &x.tree.procs[i];
    int has = 0;
    for (size_t j = 0; j < x.nev && !has; j++)
      has = x.ev[j].profile == p->profile_id;
    if (!has)
      continue; /* no trace: nothing to blame */
    if (!*first)
      fputc(',', f);
    *first = 0;
    if ((r = idle_json_proc(f, &x, p)) < 0)
      snprintf(err, errn, "idleness blame: out of memory");
  }
  gpd_xtrace_free(&x);
  return r;
}

int gpd_idle_report(FILE *f, const char *path, int pid, unsigned width, char *err, size_t errn) {
  gpd_xtrace_t x;
  gpd_xtrace_init(&x);
  int r = gpd_xtrace_load(&x, path, pid, err, errn);
  if (r < 0 || x.nev == 0) {
    gpd_xtrace_free(&x);
    return r;
  }
  gpd_xblame_t *bl = NULL;
  size_t nbl = 0, ngaps = 0;
  double idle = 0, span = 0;
  if ((r = gpd_idle_xtrace(&x, NULL, &ngaps, &bl, &nbl, &idle, &span)) < 0) {
    snprintf(err, errn, "idleness blame: out of memory");
    gpd_xtrace_free(&x);
    return r;
  }
  fprintf(f, "\nGPU idleness blame (GIDLE; from the trace: GPU idle time of a process put on the CPU "
             "contexts its threads were in):\n");
  fprintf(f, "  GPU idle %.6f s of %.6f s from first to last GPU operation (%.1f %%), %zu interval%s\n",
          idle / 1e9, span / 1e9, span > 0 ? 100.0 * idle / span : 0.0, ngaps,
          ngaps == 1 ? "" : "s");
  if (nbl)
    fprintf(f, "  %7s %12s  %-8s %s\n", "share", "GIDLE (s)", "CPU was", "calling context (innermost first)");
  for (size_t i = 0; i < nbl && i < 20; i++) {
    char path_s[8192];
    gpd_xtrace_path(&x, bl[i].node, 1, path_s, sizeof path_s);
    /* the row's other columns take 33 characters, the hint 37 */
    unsigned lead = 33 + (bl[i].cpu == GPD_XCPU_UNKNOWN ? 37 : 0);
    gpd_cli_path_fit(path_s, width == 0 ? 0 : width > lead + 40 ? width - lead : 40);
    fprintf(f, "  %6.1f%% %12.6f  %-8s %s%s\n", idle > 0 ? 100.0 * bl[i].ns / idle : 0.0, bl[i].ns / 1e9,
            gpd_idle_cpu_name(bl[i].cpu),
            bl[i].cpu == GPD_XCPU_UNKNOWN && path_s[0] ? "(no CPU sample) next GPU call from: " : "",
            path_s[0] ? path_s : "<no CPU context known>");
  }
  if (nbl > 20)
    fprintf(f, "  (%zu more contexts)\n", nbl - 20);
  free(bl);
  gpd_xtrace_free(&x);
  return 0;
}
