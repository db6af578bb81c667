/* cupti-mode.c - GPUPROF_CUDA_TRACE (what the CUDA back end traces, and
 * when) and the duty-cycle estimator.  Pure: no CUPTI and no shim calls,
 * so the CPU tests link this file alone (tests/cupti/test-cupti-mode.c).
 *
 * Modes (docs/CUDA.md):
 *   full        every API callback and activity kind on from the start
 *   detached    CUPTI subscribed with only its resource callbacks (context
 *               and module events, the timestamp callback): no API
 *               callbacks, no activity; tracing is attached on request
 *               (the daemon's TRACE control, `gpuprof trace --job J
 *               --duration 10s`) for a window and detached after
 *   duty:W/P    trace windows of W ms every P s (P may be fractional:
 *               duty:20/0.5); between windows as detached
 * combined with the operation classes: kernel,copy,memset,alloc,sync
 * (default all; "coarse" = kernel,copy,memset).  In the detached and
 * duty modes a detach ends with cuptiFinalize (CUPTI unloaded until the
 * next attach: the cost of a window does not stay,
 * docs/PERFORMANCE-CUDA.md); "keep" keeps CUPTI loaded between windows
 * instead ("finalize" says the default explicitly).
 *
 * The duty-cycle estimates (and the window fraction the exit summary
 * prints) are common/duty.c's (gpuprof/duty.h), shared with `gpuprof
 * report`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "cupti-internal.h"

static int tok_eq(const char *t, size_t n, const char *w) { return strlen(w) == n && !memcmp(t, w, n); }

/* "duty:W/P": W ms (integer >= 1), P s (decimal, > W). */
static int parse_duty(const char *t, size_t n, gpd_cupti_mode_t *m) {
  char buf[64];
  if (n >= sizeof buf)
    return -EINVAL;
  memcpy(buf, t, n);
  buf[n] = 0;
  char *end;
  errno = 0;
  unsigned long w = strtoul(buf + 5, &end, 10);
  if (errno || end == buf + 5 || *end != '/' || w == 0 || w > 3600000ul)
    return -EINVAL;
  const char *ps = end + 1;
  if (*ps < '0' || *ps > '9')
    return -EINVAL;
  double p = strtod(ps, &end);
  if (*end || !(p > 0) || p > 3600.0)
    return -EINVAL;
  uint32_t pms = (uint32_t)(p * 1000.0 + 0.5);
  if (pms <= w)
    return -EINVAL; /* a window as long as the period is "full" */
  m->mode = GPD_CUPTI_DUTY;
  m->window_ms = (uint32_t)w;
  m->period_ms = pms;
  return 0;
}

static int mode_parse(const char *s, gpd_cupti_mode_t *m) {
  static const char *const names[GPD_OP_MAX] = {NULL, "kernel", "copy", "memset", "alloc", "free", "sync"};
  unsigned ops = 0, nmode = 0, nfin = 0;
  int any_op = 0;
  for (const char *t = s; *t;) {
    const char *e = strchr(t, ',');
    size_t n = e ? (size_t)(e - t) : strlen(t);
    if (n == 0)
      return -EINVAL;
    if (tok_eq(t, n, "full")) {
      m->mode = GPD_CUPTI_FULL;
      nmode++;
    } else if (tok_eq(t, n, "detached")) {
      m->mode = GPD_CUPTI_DETACHED;
      nmode++;
    } else if (n > 5 && !memcmp(t, "duty:", 5)) {
      if (parse_duty(t, n, m))
        return -EINVAL;
      nmode++;
    } else if (tok_eq(t, n, "finalize") || tok_eq(t, n, "keep")) {
      unsigned want = t[0] == 'f' ? 1 : 2;
      if (nfin && m->finalize != want)
        return -EINVAL; /* both */
      m->finalize = want;
      nfin++;
    } else if (tok_eq(t, n, "all")) {
      ops |= ~0u;
      any_op = 1;
    } else if (tok_eq(t, n, "coarse")) {
      ops |= 1u << GPD_OP_KERNEL | 1u << GPD_OP_COPY | 1u << GPD_OP_MEMSET;
      any_op = 1;
    } else {
      unsigned op = 1;
      for (; op < GPD_OP_MAX; op++)
        if (op != GPD_OP_FREE && tok_eq(t, n, names[op]))
          break;
      if (op == GPD_OP_MAX)
        return -EINVAL;
      ops |= 1u << op;
      if (op == GPD_OP_ALLOC)
        ops |= 1u << GPD_OP_FREE;
      any_op = 1;
    }
    t += n;
    if (*t == ',')
      t++;
  }
  if (nmode > 1)
    return -EINVAL;
  if (any_op)
    m->ops = ops;
  /* detached and duty modes finalize unless told to keep CUPTI loaded,
   * and only while every operation class is traced: with a subset
   * (kernel, coarse, ...) a process crashed in CUPTI's launch path after
   * a finalize ("kernel" and "coarse" duty runs of a GPT-2 training, heap
   * corruption; never with all classes: docs/CUDA.md, "Detach by
   * cuptiFinalize"), so a subset keeps CUPTI loaded, "finalize" or not */
  const unsigned every = ((1u << GPD_OP_MAX) - 1u) & ~1u;
  m->finalize = m->mode != GPD_CUPTI_FULL && m->finalize != 2 && (m->ops & every) == every;
  return 0;
}

int gpd_cupti_drain_parse(const char *s, unsigned *tries) {
  *tries = GPD_CUPTI_DRAIN_TRIES;
  if (!s || !*s)
    return 0;
  char *end;
  errno = 0;
  unsigned long n = strtoul(s, &end, 10);
  if (errno || *end || *s < '0' || *s > '9' || n > 1000)
    return -EINVAL;
  *tries = (unsigned)n;
  return 0;
}

int gpd_cupti_mode_parse(const char *s, gpd_cupti_mode_t *m) {
  if (!m)
    return -EINVAL;
  memset(m, 0, sizeof *m);
  m->mode = GPD_CUPTI_FULL;
  m->ops = ~0u;
  if (!s || !*s)
    return 0;
  gpd_cupti_mode_t t = *m;
  if (mode_parse(s, &t) != 0)
    return -EINVAL; /* *m keeps the defaults */
  *m = t;
  return 0;
}

/* Next event of the duty schedule: windows [t0 + k P, t0 + k P + W).  *on
 * = 1 inside a window.  Returns the time of the next boundary (ns). */
uint64_t gpd_cupti_duty_next(const gpd_cupti_mode_t *m, uint64_t t0, uint64_t now, int *on) {
  uint64_t p = (uint64_t)m->period_ms * 1000000ull, w = (uint64_t)m->window_ms * 1000000ull;
  if (now < t0) {
    *on = 0;
    return t0;
  }
  uint64_t k = (now - t0) / p, start = t0 + k * p;
  *on = now - start < w;
  return *on ? start + w : start + p;
}

int gpd_cupti_ctl_want(const gpd_cupti_mode_t *m, uint64_t t0, uint64_t from, uint64_t until, uint64_t now,
                       uint64_t *next) {
  int duty_on = 0;
  uint64_t nx = UINT64_MAX;
  if (m->mode == GPD_CUPTI_FULL) { /* switched to full at run time: attached for good */
    *next = nx;
    return 1;
  }
  if (m->mode == GPD_CUPTI_DUTY)
    nx = gpd_cupti_duty_next(m, t0, now, &duty_on);
  int req_on = until && now >= from && now < until;
  if (until && now < from && from < nx)
    nx = from;
  if (req_on && until < nx)
    nx = until;
  *next = nx;
  return duty_on || req_on;
}

void gpd_cupti_mode_text(const gpd_cupti_mode_t *m, char *out, size_t n) {
  if (!out || !n)
    return;
  if (m->mode == GPD_CUPTI_FULL) {
    snprintf(out, n, "full");
  } else if (m->mode == GPD_CUPTI_DETACHED) {
    snprintf(out, n, "detached");
  } else {
    unsigned s = m->period_ms / 1000, ms = m->period_ms % 1000;
    if (ms == 0)
      snprintf(out, n, "duty:%u/%u", m->window_ms, s);
    else if (ms % 100 == 0)
      snprintf(out, n, "duty:%u/%u.%u", m->window_ms, s, ms / 100);
    else if (ms % 10 == 0)
      snprintf(out, n, "duty:%u/%u.%02u", m->window_ms, s, ms / 10);
    else
      snprintf(out, n, "duty:%u/%u.%03u", m->window_ms, s, ms);
  }
}

int gpd_cupti_mode_resolve(const char *env, const gpd_shim_policy_t *pol, gpd_cupti_mode_t *m, char *text,
                           size_t n) {
  if (env && *env) {
    (void)gpd_cupti_mode_parse(env, m); /* not understood: full (the caller warns) */
    snprintf(text, n, "%s", env);
    return GPD_CUPTI_SRC_ENV;
  }
  gpd_cupti_mode_parse(NULL, m); /* full, every class */
  if (!pol) {
    snprintf(text, n, "full");
    return GPD_CUPTI_SRC_DEFAULT;
  }
  if (!strcmp(pol->mode, "detached")) {
    m->mode = GPD_CUPTI_DETACHED;
  } else if (!strcmp(pol->mode, "duty") && pol->window_ms > 0 && pol->period_ms > pol->window_ms) {
    m->mode = GPD_CUPTI_DUTY;
    m->window_ms = pol->window_ms;
    m->period_ms = pol->period_ms;
  } else if (strcmp(pol->mode, "full") != 0) {
    m->mode = GPD_CUPTI_DETACHED; /* a policy this shim cannot read: the cheapest */
  }
  m->finalize = m->mode != GPD_CUPTI_FULL;
  gpd_cupti_mode_text(m, text, n);
  return GPD_CUPTI_SRC_DAEMON;
}

/* --- another tool holds CUPTI ("busy") ------------------------------ */
/* The codes, from CUDA 13.0's cupti_result.h:
 *   CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39) "CUPTI doesn't
 *     allow multiple callback subscribers ... Same error code is used when
 *     application is launched using NVIDIA tools like Nsight Systems,
 *     Nsight Compute, and cuda-gdb" (cuptiSubscribe);
 *   CUPTI_ERROR_HARDWARE_BUSY (26) "The performance monitoring hardware is
 *     in use by other client";
 * and for PC sampling only (the profiling hardware's session; the header
 * documents no busy code for cuptiPCSampling*):
 *   CUPTI_ERROR_NOT_COMPATIBLE (14) "The current operation is not
 *     compatible with the current state of the object";
 *   CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED (36): another profiling API
 *     already in use in the process.
 * Activity enabling keeps 14 as an error: there the header gives it for
 * "the activity kind cannot be enabled", which no retry changes. */
const char *gpd_cupti_busy_name(int result, int pcs) {
  switch (result) {
  case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
  case CUPTI_ERROR_HARDWARE_BUSY:
    return "CUPTI_ERROR_HARDWARE_BUSY";
  case CUPTI_ERROR_NOT_COMPATIBLE:
    return pcs ? "CUPTI_ERROR_NOT_COMPATIBLE" : NULL;
  case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    return pcs ? "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED" : NULL;
  default:
    return NULL;
  }
}

uint64_t gpd_cupti_busy_retry(const gpd_cupti_mode_t *m, uint64_t t0, uint64_t now, unsigned run) {
  uint64_t cap = (uint64_t)GPD_CUPTI_BUSY_MAX_MS * 1000000ull;
  unsigned sh = run > 1 ? run - 1 : 0;
  if (sh > 20)
    sh = 20;
  if (m->mode == GPD_CUPTI_DUTY && m->period_ms > 0) {
    uint64_t p = (uint64_t)m->period_ms * 1000000ull, k = now > t0 ? (now - t0) / p : 0;
    uint64_t skip = 1ull << sh, most = cap / p > 1 ? cap / p : 1;
    return t0 + (k + (skip < most ? skip : most)) * p;
  }
  uint64_t w = (uint64_t)GPD_CUPTI_BUSY_FIRST_MS * 1000000ull << sh;
  return now + (w < cap ? w : cap);
}
