/* report-duty.c - duty-cycled estimates in `gpuprof report` (docs/CLI.md,
 * docs/CUDA.md "The duty-cycle estimate").
 *
 * A CUDA process run with GPUPROF_CUDA_TRACE=duty:W/P traces only the
 * GPU operations launched inside its windows, so its stored kernel time
 * (GKER) and launch counts (GKER:COUNT) are those of the windows.  The
 * daemon keeps what its back end said about the windows (trace_duty: the
 * schedule's origin t0, the count and total length of the windows, the
 * run's end; trace_window: each window, daemon/tracewin.c).  Here, per
 * such process and kernel calling context:
 *
 *   f  = window_ns / (end - t0)     the observed window fraction of the
 *                                   process's (back end's) lifetime
 *   N^ = n / f,  T^ = T / f         n launches and T ns observed
 *
 * and the error of each estimate:
 *   - per window (cluster sampling, common/duty.c gpd_duty_cluster) when
 *     every window is stored (m = windows >= 2) and the trace holds every
 *     observed launch of the context (its trace_event rows number n:
 *     nothing dropped or refused): y_i = the context's launches / ns of
 *     the rows whose start falls in window i (the last window that
 *     started before it: a kernel may run after its window closed), 0 in
 *     windows without any;
 *       se(Y^) = sqrt(m (1 - f) s2) / f,  s2 = sample variance of the y_i;
 *   - else per launch (Poisson / Horvitz-Thompson, gpd_duty_poisson):
 *       se(N^) = sqrt(n (1 - f)) / f,  se(T^) ~= T^ sqrt((1 - f) / n).
 * Both formulas and their sources are in common/duty.c.  Processes whose
 * windows were on demand only (detached mode) are not scaled: those
 * windows are no sample of the run.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/duty.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "gpuprof/record.h"

#include "trace.h"
#include "store-read.h"

/* Most contexts per process: in the text report / in --json. */
#define DUTY_TEXT_CONTEXTS 20u
#define DUTY_JSON_CONTEXTS 100u

/* One kernel context of a duty process. */
typedef struct {
  uint64_t ctx;
  double n, t;            /* observed launches, ns (metric table) */
  double rows;            /* its kernel rows in the trace */
  double sn, sn2, st, st2; /* sums over windows of y and y^2: launches, ns */
  int cluster;            /* per-window error */
  gpd_duty_estimate_t e;
} dctx_t;

/* One duty process. */
typedef struct {
  uint64_t profile;
  int pid, api, final;
  uint64_t t0, end, windows, window_ns, stored;
  uint64_t launches, launches_in; /* counted kernel launches (trace_duty_launch; 0 = none) */
  double f, f_time;               /* f: the fraction used; f_time = window_ns / (end - t0) */
  int by_launch;                  /* f is the launch fraction */
  dctx_t *c;
  size_t nc;
} dproc_t;

/* (context index, window index, ns) of one kernel row */
typedef struct {
  size_t ci;
  uint64_t wi;
  double ns;
} drow_t;

static int ctx_cmp(const void *a, const void *b) {
  const dctx_t *x = a, *y = b;
  return x->ctx < y->ctx ? -1 : x->ctx > y->ctx;
}
static int row_cmp(const void *a, const void *b) {
  const drow_t *x = a, *y = b;
  if (x->ci != y->ci)
    return x->ci < y->ci ? -1 : 1;
  return x->wi < y->wi ? -1 : x->wi > y->wi;
}
static int est_desc(const void *a, const void *b) {
  const dctx_t *x = a, *y = b;
  return x->e.time_ns > y->e.time_ns ? -1 : x->e.time_ns < y->e.time_ns;
}
static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct ctx_load_s {
  dproc_t *p;
  size_t cap;
} ctx_load_t;

static int on_value(void *c, int64_t id, uint32_t metric, double v) {
  ctx_load_t *cl = c;
  dproc_t *p = cl->p;
  uint64_t ctx = (uint64_t)id;
  int err;
  if (p->nc == 0 || p->c[p->nc - 1].ctx != ctx) {
    if ((err = gpd_xtrace_grow((void **)&p->c, p->nc, &cl->cap, sizeof *p->c)) < 0)
      return err;
    p->c[p->nc++] = (dctx_t){.ctx = ctx};
  }
  if (metric == GPD_M_GKER)
    p->c[p->nc - 1].t = v;
  else
    p->c[p->nc - 1].n = v;
  return 0;
}

/* The kernel contexts of profile p->profile (GKER, GKER:COUNT), sorted by
 * id.  0 or -ENOMEM / -EIO. */
static int load_contexts(struct sqlite3 *db, dproc_t *p) {
  ctx_load_t cl = {p, 0};
  int err = gpd_store_metric_of_profile(db, p->profile, GPD_M_GKER, GPD_M_GKER_COUNT, on_value, &cl);
  if (err == 0 && p->nc) /* SQL sorted the ids as signed integers */
    qsort(p->c, p->nc, sizeof *p->c, ctx_cmp);
  return err;
}

typedef struct win_load_s {
  uint64_t *w;
  size_t n, cap;
} win_load_t;

static int on_window(void *c, uint64_t start) {
  win_load_t *wl = c;
  int err = gpd_xtrace_grow((void **)&wl->w, wl->n, &wl->cap, sizeof *wl->w);
  if (err == 0)
    wl->w[wl->n++] = start;
  return err;
}

/* The windows' starts of p, sorted (NULL when none).  -ENOMEM/-EIO. */
static int load_windows(struct sqlite3 *db, dproc_t *p, uint64_t **out) {
  win_load_t wl = {NULL, 0, 0};
  int err = gpd_store_duty_windows(db, p->profile, on_window, &wl);
  *out = NULL;
  if (err) {
    free(wl.w);
    return err;
  }
  qsort(wl.w, wl.n, sizeof *wl.w, u64_cmp);
  p->stored = wl.n;
  *out = wl.w;
  return 0;
}

/* Per-window sums of every context of p from the trace x (its kernel
 * rows).  0 or -ENOMEM. */
static int window_sums(const gpd_xtrace_t *x, dproc_t *p, const uint64_t *ws) {
  drow_t *r = NULL;
  size_t nr = 0, cap = 0;
  for (size_t i = 0; i < x->nev; i++) {
    const gpd_xev_t *e = &x->ev[i];
    if (e->profile != p->profile || e->op != GPD_OP_KERNEL)
      continue;
    dctx_t key = {.ctx = e->node};
    dctx_t *c = bsearch(&key, p->c, p->nc, sizeof *p->c, ctx_cmp);
    if (c == NULL)
      continue;
    c->rows++;
    /* the last window that started at or before the kernel's start */
    size_t lo = 0, hi = p->stored;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (ws[mid] <= e->start)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == 0)
      continue; /* before the first window: counted in rows, so not complete */
    if (gpd_xtrace_grow((void **)&r, nr, &cap, sizeof *r) < 0) {
      free(r);
      return -ENOMEM;
    }
    r[nr++] = (drow_t){(size_t)(c - p->c), lo - 1, e->end > e->start ? (double)(e->end - e->start) : 0};
  }
  if (nr)
    qsort(r, nr, sizeof *r, row_cmp);
  for (size_t i = 0; i < nr;) {
    size_t j = i;
    double yn = 0, yt = 0;
    for (; j < nr && r[j].ci == r[i].ci && r[j].wi == r[i].wi; j++) {
      yn += 1;
      yt += r[j].ns;
    }
    dctx_t *c = &p->c[r[i].ci];
    c->sn += yn;
    c->sn2 += yn * yn;
    c->st += yt;
    c->st2 += yt * yt;
    i = j;
  }
  free(r);
  return 0;
}

/* Estimates of every context of p: per window where the windows and the
 * context's rows are complete, else per launch; largest T^ first. */
static void estimate(dproc_t *p, int trace_complete) {
  int windows_ok = trace_complete && p->stored == p->windows && p->windows >= 2;
  for (size_t i = 0; i < p->nc; i++) {
    dctx_t *c = &p->c[i];
    c->cluster = windows_ok && c->rows == c->n && c->sn == c->n;
    if (c->cluster) {
      double m = (double)p->windows;
      /* c->sn == c->n; time: the metric's T (the rows' sum may differ by
       * rounding of the stored ns) */
      gpd_duty_cluster(m, c->sn, c->sn2, p->f, &c->e.count, &c->e.count_se);
      gpd_duty_cluster(m, c->st, c->st2, p->f, &c->e.time_ns, &c->e.time_se_ns);
      c->e.time_ns = c->t / p->f;
    } else {
      gpd_duty_poisson(c->n, c->t, 0, p->f, &c->e);
    }
  }
  qsort(p->c, p->nc, sizeof *p->c, est_desc);
}

/* The counted launches of p's process (trace_duty_launch), if any: a
 * store without the table, or a process without counts, leaves 0. */
static void load_launches(struct sqlite3 *db, dproc_t *p) {
  int64_t a, i;
  if (gpd_store_duty_launches(db, p->profile, &a, &i) && a > 0 && i >= 0 && i <= a) {
    p->launches = (uint64_t)a;
    p->launches_in = (uint64_t)i;
  }
}

typedef struct duty_load_s {
  struct sqlite3 *db;
  const gpd_xtrace_t *x;
  dproc_t *ps;
  size_t np, cap;
} duty_load_t;

static int on_duty(void *c, const gpd_store_duty_t *d) {
  duty_load_t *dl = c;
  uint64_t *ws = NULL;
  int r;
  if ((r = gpd_xtrace_grow((void **)&dl->ps, dl->np, &dl->cap, sizeof *dl->ps)) < 0)
    return r;
  dproc_t *p = &dl->ps[dl->np++];
  *p = (dproc_t){.profile = d->profile,
                 .pid = d->pid,
                 .api = d->api,
                 .final = d->final,
                 .t0 = d->t0,
                 .end = d->end,
                 .windows = d->windows,
                 .window_ns = d->window_ns};
  p->f = p->f_time = gpd_duty_fraction(p->window_ns, p->end > p->t0 ? p->end - p->t0 : 0);
  load_launches(dl->db, p);
  double fl = gpd_duty_launch_fraction(p->launches_in, p->launches);
  if (fl > 0 && p->f_time > 0)
    p->f = fl, p->by_launch = 1; /* counted launches: unbiased where tracing slows the program (common/duty.c) */
  if ((r = load_contexts(dl->db, p)) == 0)
    r = load_windows(dl->db, p, &ws);
  if (r == 0 && p->f > 0)
    r = window_sums(dl->x, p, ws);
  free(ws);
  return r;
}

/* The duty processes of the store at path (pid > 0: that process's),
 * their contexts estimated; *x the file's trace (for the call paths).
 * 0 (none: *n = 0), or < 0 with err set. */
static int duty_load(const char *path, int pid, gpd_xtrace_t *x, dproc_t **out, size_t *n, char *err,
                     size_t errn) {
  duty_load_t dl = {NULL, x, NULL, 0, 0};
  int r = 0;
  *out = NULL;
  *n = 0;
  unsigned wal = gpd_store_file_wal_before(path);
  if (gpd_store_file_open(path, &dl.db, err, errn) < 0) {
    r = -EIO;
    goto out;
  }
  gpd_store_file_begin(dl.db, path, NULL, 0);
  r = gpd_store_duty_each(dl.db, pid, on_duty, &dl);
  gpd_store_file_end(dl.db);
  if (r < 0)
    snprintf(err, errn, "%s: duty-cycled estimates: %s", path, gpd_strerror(r));
  for (size_t i = 0; r == 0 && i < dl.np; i++)
    if (dl.ps[i].f > 0)
      estimate(&dl.ps[i], x->dropped == 0 && x->refused == 0);
out:
  gpd_store_file_close(dl.db);
  gpd_store_file_wal_after(path, wal);
  if (r < 0) {
    for (size_t i = 0; i < dl.np; i++)
      free(dl.ps[i].c);
    free(dl.ps);
    return r;
  }
  *out = dl.ps;
  *n = dl.np;
  return 0;
}

static void duty_free(dproc_t *ps, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(ps[i].c);
  free(ps);
}

/* 1 when path has a duty-cycled process (pid 0: any), without reading
 * its trace; 0 when it has none or cannot say (then the full load says
 * why). */
static int has_duty(const char *path, int pid) {
  struct sqlite3 *db = NULL;
  char err[256];
  int yes = 1;
  unsigned wal = gpd_store_file_wal_before(path);
  if (gpd_store_file_open(path, &db, err, sizeof err) == 0)
    yes = gpd_store_duty_any(db, pid);
  gpd_store_file_close(db);
  gpd_store_file_wal_after(path, wal);
  return yes;
}

/* Load path's trace and its duty processes (nothing when it has none).
 * 0 or < 0 with err set. */
static int duty_open(const char *path, int pid, gpd_xtrace_t *x, dproc_t **ps, size_t *np, char *err,
                     size_t errn) {
  gpd_xtrace_init(x);
  *ps = NULL;
  *np = 0;
  if (!has_duty(path, pid))
    return 0;
  int r = gpd_xtrace_load(x, path, pid, err, errn);
  if (r == 0)
    r = duty_load(path, pid, x, ps, np, err, errn);
  if (r < 0)
    gpd_xtrace_free(x);
  return r;
}

int gpd_report_duty(FILE *f, const char *path, int pid, unsigned width, char *err, size_t errn) {
  gpd_xtrace_t x;
  dproc_t *ps = NULL;
  size_t np = 0;
  int r = duty_open(path, pid, &x, &ps, &np, err, errn);
  if (r < 0)
    return r;
  if (np)
    fprintf(f, "\nDuty-cycled estimates (GPU kernels launched inside the tracing windows, scaled to "
               "the run: estimate = observed / f; f = traced / elapsed, or counted launches inside windows / all "
               "counted launches where the back end counted them; docs/CUDA.md):\n");
  for (size_t i = 0; i < np; i++) {
    const dproc_t *p = &ps[i];
    fprintf(f, "  process %d (profile %llu): %llu windows, %.6f s traced of %.6f s (f = %.6f", p->pid,
            (unsigned long long)p->profile, (unsigned long long)p->windows, (double)p->window_ns / 1e9,
            (double)(p->end - p->t0) / 1e9, p->f);
    if (p->by_launch)
      fprintf(f, " from counted launches: %llu of %llu inside windows; time fraction %.6f",
              (unsigned long long)p->launches_in, (unsigned long long)p->launches, p->f_time);
    fprintf(f, ")%s\n", p->final ? "" : "; the run's end not recorded: f counted to its last window");
    if (p->f <= 0) {
      fprintf(f, "    no window closed: nothing to estimate\n");
      continue;
    }
    if (p->nc)
      fprintf(f, "    %-25s%-38s%-8s%s\n", "launches ± se", "GKER (s) ± se (relative)", "error",
              "calling context (innermost first)"); /* "±" is 2 bytes: one more of width */
    for (size_t j = 0; j < p->nc && j < DUTY_TEXT_CONTEXTS; j++) {
      const dctx_t *c = &p->c[j];
      char path_s[2048];
      gpd_xtrace_path(&x, c->ctx, 0, path_s, sizeof path_s);
      /* the row's other columns take 71 characters */
      gpd_cli_path_fit(path_s, width == 0 ? 0 : width > 71 + 40 ? width - 71 : 40);
      fprintf(f, "    %11.1f ± %-8.1f  %12.6f ± %-10.6f (%4.1f%%)  %-7s %s\n", c->e.count, c->e.count_se,
              c->e.time_ns / 1e9, c->e.time_se_ns / 1e9,
              c->e.time_ns > 0 ? 100.0 * c->e.time_se_ns / c->e.time_ns : 0.0,
              c->cluster ? "window" : "launch", path_s[0] ? path_s : "<unknown context>");
    }
    if (p->nc > DUTY_TEXT_CONTEXTS)
      fprintf(f, "    (%zu more contexts)\n", p->nc - DUTY_TEXT_CONTEXTS);
  }
  if (np)
    fprintf(f, "  error: \"window\" = per-window (cluster sampling) standard error, \"launch\" = "
               "per-launch (Poisson) one where the windows or the context's trace rows are incomplete\n");
  duty_free(ps, np);
  gpd_xtrace_free(&x);
  return 0;
}

int gpd_report_duty_json(FILE *f, const char *path, int pid, int *first, char *err, size_t errn) {
  gpd_xtrace_t x;
  dproc_t *ps = NULL;
  size_t np = 0;
  int r = duty_open(path, pid, &x, &ps, &np, err, errn);
  if (r < 0)
    return r;
  for (size_t i = 0; i < np; i++) {
    const dproc_t *p = &ps[i];
    fprintf(f, "%s{\"profile_id\":%llu,\"pid\":%d,\"api\":", *first ? "" : ",",
            (unsigned long long)p->profile, p->pid);
    *first = 0;
    gpd_json_str(f, gpd_api_name((unsigned)p->api));
    fprintf(f, ",\"windows\":%llu,\"windows_stored\":%llu,\"traced\":%.9f,\"elapsed\":%.9f,\"f\":%.17g,"
               "\"f_source\":\"%s\",\"f_time\":%.17g,\"launches\":%llu,\"launches_in\":%llu,"
               "\"final\":%s,\"contexts\":[",
            (unsigned long long)p->windows, (unsigned long long)p->stored, (double)p->window_ns / 1e9,
            (double)(p->end - p->t0) / 1e9, p->f, p->by_launch ? "launches" : "time", p->f_time,
            (unsigned long long)p->launches, (unsigned long long)p->launches_in, p->final ? "true" : "false");
    for (size_t j = 0; p->f > 0 && j < p->nc && j < DUTY_JSON_CONTEXTS; j++) {
      const dctx_t *c = &p->c[j];
      char path_s[2048];
      gpd_xtrace_path(&x, c->ctx, 0, path_s, sizeof path_s);
      fprintf(f, "%s{\"context_id\":%llu,\"error\":\"%s\",\"observed_count\":%.0f,\"observed_GKER\":%.17g,"
                 "\"count\":%.17g,\"count_se\":%.17g,\"GKER\":%.17g,\"GKER_se\":%.17g,\"path\":",
              j ? "," : "", (unsigned long long)c->ctx, c->cluster ? "window" : "launch", c->n, c->t / 1e9,
              c->e.count, c->e.count_se, c->e.time_ns / 1e9, c->e.time_se_ns / 1e9);
      gpd_json_str(f, path_s);
      fputc('}', f);
    }
    fprintf(f, "],\"more_contexts\":%zu}", p->nc > DUTY_JSON_CONTEXTS ? p->nc - DUTY_JSON_CONTEXTS : 0);
  }
  duty_free(ps, np);
  gpd_xtrace_free(&x);
  return 0;
}
