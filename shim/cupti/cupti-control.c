/* cupti-control.c - the CUDA back end's tracing controller: which mode
 * runs (GPUPROF_CUDA_TRACE, the daemon's policy; cupti-mode.c), the
 * controller thread that attaches and detaches tracing for the duty and
 * on-demand windows, the detach by cuptiFinalize, and the daemon's
 * Controls and CollectReports for the back end.
 *
 * It never calls libcupti, cupti-api.c or cupti-pcsampling.c by name:
 * the CUPTI layer hands it a switch table (gpd_cupti_switch_t) at start,
 * so these files do not call each other both ways (cupti-api.c calls in
 * here: start, the detached API callback, exit, fork, the ops table's
 * control and collect hooks; PC sampling marks its busy windows).
 *
 * Another tool holding CUPTI (Nsight Systems or Compute injected, a
 * second subscriber; the profiling hardware held for DCGM's profiling
 * metrics): a window whose subscription or enable is refused with a busy
 * code (gpd_cupti_busy_name) is a busy window: whatever it enabled is off
 * again, it is counted (CollectReport busy_windows, busy), the first one
 * is logged, and the next attempt backs off (gpd_cupti_busy_retry).  It
 * traced nothing: none of the window counts (windows, window_ns,
 * launches_in, switch_ns) include it, so the governor never takes it for
 * a measured window.  Other errors keep their behaviour (a failed
 * subscription after a finalize stops the windows for good).
 *
 * Locks: g_mode_mu guards the mode and the window state; the controller
 * thread holds it while it switches, never while it flushes.  The
 * finalize state (g_fin) is atomic: an application thread runs the armed
 * finalize in an API's EXIT callback without taking g_mode_mu.  g_busy_mu
 * (taken after g_mode_mu, never before) guards the busy counts, which PC
 * sampling also notes from application threads.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cupti-internal.h"
#include "gpuprof/clock.h"
#include "gpuprof/duty.h"
#include "gpuprof/log.h"
#include "shim.h"
#include "backends.h"
#include "internal.h"

/* What the controller switches in the CUPTI layer (gpd_cupti_control_setup). */
static const gpd_cupti_switch_t *g_sw;

/* Tracing mode (GPUPROF_CUDA_TRACE, cupti-mode.c) and the attach state.
 * API callbacks and activity kinds are switched on and off together under
 * g_mode_mu by the controller thread (duty windows, on-demand windows). */
static gpd_cupti_mode_t g_mode;
static pthread_mutex_t g_mode_mu = PTHREAD_MUTEX_INITIALIZER;
/* Where g_mode came from (GPD_CUPTI_SRC_*: the environment, the daemon's
 * policy, the default) and its text; CUPTI kept loaded between windows
 * for good (PC sampling or SASS counts asked for).  g_mode_mu. */
static int g_src;
static char g_mode_text[48];
static int g_keep_loaded;
static pthread_cond_t g_mode_cv = PTHREAD_COND_INITIALIZER;
static int g_on;                      /* tracing attached now (g_mode_mu) */
static uint64_t g_t0, g_on_since;     /* controller start, this window's start (ns) */
static uint64_t g_window_ns, g_windows; /* closed windows: total length, count */
static uint64_t g_edge_on_ns, g_edge_off_ns, g_edge_flush_ns; /* switching cost, summed */
static uint64_t g_edge_max_ns;        /* the longest attach, detach or flush */
static uint64_t g_attach_from, g_attach_until; /* on-demand window [from, until) (ns) */
static int g_stopping;                /* exit: no more windows (1), summary sent (2) */
static uint64_t g_stop_ns;            /* when the exit stopped the windows (ns) */
static int g_ctl_started;
/* Launches counted by cupti-count.c (kernel launches through libcudart):
 * at the controller's start, at this window's opening, and, of those
 * inside the closed windows, the ones traced whole (INVOKE and kernel
 * record: cupti-whole.c), summed: the launch-based window fraction
 * f = g_cnt_in / (count now - g_cnt_t0) (common/duty.c). */
static uint64_t g_cnt_t0, g_cnt_open, g_cnt_in;
/* All counted launches between the closed windows' edges, traced whole or
 * not: the governor's launch rate inside windows (CollectReport). */
static uint64_t g_cnt_edges;
/* A window detached whose records are still being drained (ctl_main):
 * its end (ns) and the count then; closed by window_close.  g_mode_mu. */
static int g_closing;
static uint64_t g_close_ns, g_close_cnt;
static double g_real_on, g_real_off; /* the last window, unix s (the exit summary) */
/* Detach by cuptiFinalize ("finalize" in GPUPROF_CUDA_TRACE): after a
 * window's records are flushed the controller arms the kernel-launch
 * callbacks, and the next such API's EXIT callback calls cuptiFinalize
 * on the application's thread (where CUPTI's own attach/detach sample
 * calls it: in the exit callsite of a driver or runtime API); the next
 * attach subscribes again (g_sw->subscribe).  FIN_* states, g_fin. */
enum { FIN_NONE = 0, FIN_ARMED, FIN_RUNNING, FIN_DONE, FIN_BROKEN };
static atomic_int g_fin;
static atomic_ulong g_fin_ns, g_fin_n;   /* time in cuptiFinalize, count */
static uint64_t g_resub_ns, g_resub_n;   /* time to subscribe again (g_mode_mu) */
/* Busy windows (gpd_cupti_control_busy): per kind, the busy name and the
 * call of the last attempt while it is busy ("" once a window started
 * again), and the count; whether the first was logged.  g_busy_mu. */
static pthread_mutex_t g_busy_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char name[56], step[48];
  uint64_t n;
} g_busy[GPD_CUPTI_BUSY_KINDS];
static int g_busy_logged;
/* Tracing windows: busy attempts in a row, and no attempt before
 * g_busy_until (ns; the backoff).  g_mode_mu. */
static unsigned g_busy_run;
static uint64_t g_busy_until;

/* Where the launch counters' timed launches go from now on
 * (cupti-count.c). */
static void time_bin(int b) { atomic_store_explicit(&gpd_cupti__time_bin, b, memory_order_relaxed); }

/* Attach or detach through the CUPTI layer; g_mode_mu held (or the
 * starting thread).  NULL, or the busy name of a refused attach (then
 * detached). */
static const char *trace_set(int on) {
  if (!on)
    time_bin(GPD_CUPTI_BIN_NONE); /* the detach and the flush after it */
  const char *busy = g_sw->trace(on);
  g_on = on && !busy;
  if (g_on)
    time_bin(GPD_CUPTI_BIN_IN);
  return busy;
}

static int running(void) { return g_sw && g_sw->running(); }

/* Switch tracing to what the schedule wants at `now`; returns the next
 * time (ns) it must look again (UINT64_MAX: only when signalled); *flush
 * = 1 after a detach (the caller flushes the window's records before
 * anything else, outside the lock).  Controller thread, g_mode_mu held. */
static void edge_add(uint64_t *sum, uint64_t dt) {
  *sum += dt;
  g_edge_max_ns = dt > g_edge_max_ns ? dt : g_edge_max_ns;
}

static double real_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t count_kernels(void) {
  uint64_t c[GPD_CUPTI_NCOUNT];
  gpd_cupti_count_read(c);
  return c[GPD_CUPTI_COUNT_KERNEL];
}

static int fin_reattach(const char **busy, const char **step);
static void fin_arm(void);

/* Record a busy attempt of `kind` (count: a window skipped).  Any
 * thread; g_busy_mu. */
static void busy_set(unsigned kind, const char *name, const char *step, int count) {
  pthread_mutex_lock(&g_busy_mu);
  snprintf(g_busy[kind].name, sizeof g_busy[kind].name, "%s", name ? name : "busy");
  snprintf(g_busy[kind].step, sizeof g_busy[kind].step, "%s", step ? step : "");
  g_busy[kind].n += count != 0;
  int first = !g_busy_logged;
  g_busy_logged = 1;
  pthread_mutex_unlock(&g_busy_mu);
  if (first)
    GPD_WARN("CUDA %s: %s refused (%s): another tool holds CUPTI or the GPU's profiling hardware; "
             "windows are skipped and retried later, the application is not touched (logged once)",
             kind == GPD_CUPTI_BUSY_PCS ? "PC sampling" : "tracing", step && *step ? step : "CUPTI",
             name ? name : "busy");
}

void gpd_cupti_control_busy(unsigned kind, const char *name, const char *step) {
  if (kind < GPD_CUPTI_BUSY_KINDS)
    busy_set(kind, name, step, 1);
}

void gpd_cupti_control_unbusy(unsigned kind) {
  if (kind >= GPD_CUPTI_BUSY_KINDS)
    return;
  static int logged;
  pthread_mutex_lock(&g_busy_mu);
  int first = g_busy[kind].name[0] != '\0' && !logged;
  uint64_t n = g_busy[kind].n;
  logged |= first;
  g_busy[kind].name[0] = '\0';
  pthread_mutex_unlock(&g_busy_mu);
  if (first)
    GPD_INFO("CUDA %s: windows start again after %llu busy window(s) (logged once)",
             kind == GPD_CUPTI_BUSY_PCS ? "PC sampling" : "tracing", (unsigned long long)n);
}

/* A tracing window another tool refused (controller, g_mode_mu held;
 * nothing is attached): counted, and the next attempt backs off.
 * Returns when to look again. */
static uint64_t busy_window(uint64_t now, const char *name, const char *step) {
  g_busy_run++;
  g_busy_until = gpd_cupti_busy_retry(&g_mode, g_t0, now, g_busy_run);
  gpd_cupti_control_busy(GPD_CUPTI_BUSY_TRACE, name, step);
  return g_busy_until;
}

static uint64_t ctl_step(uint64_t now, int *flush) {
  uint64_t next;
  int want = gpd_cupti_ctl_want(&g_mode, g_t0, g_attach_from, g_attach_until, now, &next) && !g_stopping &&
             running();
  /* A window counts from the end of the calls that open it to the start
   * of those that close it: a launch is recorded whole (INVOKE and
   * activity) only while every kind and callback is on. */
  if (want && !g_on && now < g_busy_until)
    return g_busy_until < next ? g_busy_until : next; /* busy: backing off */
  if (want && !g_on) {
    uint64_t t = gpd_clock_ns();
    const char *busy = NULL, *step = NULL;
    int err = fin_reattach(&busy, &step);
    if (err == -EAGAIN)
      return now + 1000000; /* a finalize is still running: look again in 1 ms */
    if (err == -EBUSY)
      return busy_window(now, busy, step); /* unsubscribed, as before the attempt */
    if (err < 0)
      return UINT64_MAX; /* CUPTI could not be subscribed again: stays detached */
    /* before the attach: a launch noted as the callbacks go on (its kernel
     * kind still off) is never matched, which a slot cleared after it could
     * not say of a launch traced whole (cupti-whole.c) */
    gpd_cupti_whole_open();
    if ((busy = trace_set(1)) != NULL) {
      /* every kind and callback it enabled is off again; a subscription
       * made for this window goes as after a window */
      if (g_mode.finalize)
        fin_arm();
      return busy_window(now, busy, "cuptiActivityEnable");
    }
    if (g_busy_run) {
      g_busy_run = 0;
      g_busy_until = 0;
      gpd_cupti_control_unbusy(GPD_CUPTI_BUSY_TRACE);
    }
    g_on_since = gpd_clock_ns();
    g_cnt_open = count_kernels();
    g_real_on = real_s();
    edge_add(&g_edge_on_ns, g_on_since - t);
  } else if (!want && g_on) {
    g_close_cnt = count_kernels();
    g_close_ns = gpd_clock_ns();
    g_real_off = real_s();
    (void)trace_set(0);
    edge_add(&g_edge_off_ns, gpd_clock_ns() - g_close_ns);
    g_closing = 1; /* counted once its records are drained (window_close) */
    *flush = 1;    /* the window's records, before the next window (cupti-api.c, trace_corr) */
  }
  return next;
}

/* A detached window's records are drained (or the process exits): add it
 * to the closed windows, its launches traced whole to g_cnt_in, and push
 * it for the report's duty-cycle estimate (daemon/tracewin.c).  g_mode_mu
 * held; nothing when no window is closing. */
static void window_close(void) {
  if (!g_closing)
    return;
  g_closing = 0;
  uint64_t off = g_close_ns > g_on_since ? g_close_ns : g_on_since;
  g_window_ns += off - g_on_since;
  g_windows++;
  g_cnt_in += gpd_cupti_whole_read(NULL);
  g_cnt_edges += g_close_cnt - g_cnt_open;
  (void)gpd_shim_push_tracewin(GPD_API_CUDA, g_mode.mode == GPD_CUPTI_DUTY, 0, g_t0, g_on_since, off, g_windows,
                               g_window_ns, g_close_cnt - g_cnt_t0, g_cnt_in);
}

/* Drain a detached window's records (ctl_main, no lock held).  Unforced
 * flushes hand back the buffers whose records are all complete, so the
 * kernels still running at the detach come back with their times once
 * they end: flushed again every 1 ms while a launch noted in the window
 * has no record yet, g_drain_tries times at most (gpd_cupti_drain_parse).
 * Then one forced flush, so that no record of this window is left for the
 * next one's epoch (unforced alone, much of the observed GPU time came a
 * window late, under the next epoch, without its INVOKE:
 * docs/PERFORMANCE-CUDA.md, "Measurements behind the CUDA back end's
 * code"); a record it hands back without times is not pushed, and its
 * launch is not counted as traced. */
static unsigned g_drain_tries = GPD_CUPTI_DRAIN_TRIES; /* or GPUPROF_CUDA_DRAIN_TRIES */
static void window_drain(void) {
  uint64_t pending = 0;
  for (unsigned i = 0; i < g_drain_tries; i++) {
    g_sw->flush(0);
    (void)gpd_cupti_whole_read(&pending);
    if (!pending)
      break;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  g_sw->flush(1);
}

/* --- detach by cuptiFinalize (g_fin) -------------------------------- */
/* Controller, g_mode_mu held, tracing detached and the window flushed:
 * switch on the kernel-launch callbacks so that the next launch's EXIT
 * finalizes (gpd_cupti_control_api_exit). */
static void fin_arm(void) {
  int e = FIN_NONE;
  if (atomic_compare_exchange_strong(&g_fin, &e, FIN_ARMED)) {
    time_bin(GPD_CUPTI_BIN_NONE); /* the launch that finalizes is not timed */
    g_sw->launch_callbacks(1);
  } else if (!g_on) {
    time_bin(GPD_CUPTI_BIN_OUT);
  }
}

/* Detached (tracing off) while a PC-sampling window waits for a
 * context's next API call (to enable it, or to disable it at the window's
 * end): switch the kernel-launch callbacks on, which reach
 * gpd_cupti_pcs_on_api (cupti-api.c); the next window's detach switches
 * them off again.  Only while CUPTI is subscribed (no finalize done or
 * running: after one, the next tracing window's attach brings the
 * callbacks).  g_mode_mu held. */
static void pcs_callbacks(void) {
  if (!g_on && g_sw->pcs_pending() && gpd_cupti_control_loaded())
    g_sw->launch_callbacks(1);
}

void gpd_cupti_control_api_exit(void) {
  int e = FIN_ARMED;
  if (!atomic_compare_exchange_strong(&g_fin, &e, FIN_RUNNING))
    return;
  uint64_t t = gpd_clock_ns();
  const char *err = g_sw->finalize();
  atomic_fetch_add(&g_fin_ns, gpd_clock_ns() - t);
  atomic_fetch_add(&g_fin_n, 1);
  if (err) {
    static atomic_int warned;
    if (!atomic_exchange(&warned, 1))
      GPD_WARN("cuptiFinalize: %s; CUPTI stays loaded between windows", err);
  }
  atomic_store(&g_fin, err ? FIN_NONE : FIN_DONE);
  time_bin(GPD_CUPTI_BIN_OUT);
}

int gpd_cupti_control_loaded(void) { return atomic_load(&g_fin) < FIN_RUNNING; }

/* Wait (bounded, ms) while a finalize runs; returns the state after. */
static int fin_wait(unsigned ms) {
  int s;
  for (unsigned i = 0; i < ms * 10 && (s = atomic_load(&g_fin)) == FIN_RUNNING; i++)
    nanosleep(&(struct timespec){0, 100000}, NULL);
  return atomic_load(&g_fin);
}

/* Controller, g_mode_mu held, before an attach: an armed finalize is
 * called off (its callbacks are among those the attach enables), a
 * finished one (or a start another tool refused) is followed by a new
 * subscription.  0, -EAGAIN (a finalize still runs after 100 ms: try
 * later), -EBUSY (another tool holds the subscription: *busy, *step;
 * still unsubscribed, the next window tries again), -EIO (CUPTI could
 * not be subscribed again: tracing stays detached for good, logged). */
static int fin_reattach(const char **busy, const char **step) {
  int s = FIN_ARMED;
  if (atomic_compare_exchange_strong(&g_fin, &s, FIN_NONE) || s == FIN_NONE)
    return 0;
  if (s == FIN_BROKEN)
    return -EIO;
  if ((s = fin_wait(100)) == FIN_RUNNING)
    return -EAGAIN;
  if (s != FIN_DONE)
    return 0;
  uint64_t t = gpd_clock_ns();
  const char *err = g_sw->subscribe(step, busy);
  if (err && *busy)
    return -EBUSY; /* FIN_DONE stays: nothing of ours is subscribed */
  if (err) {
    atomic_store(&g_fin, FIN_BROKEN);
    GPD_WARN("CUDA tracing: %s after cuptiFinalize: %s; no more windows", *step, err);
    return -EIO;
  }
  g_resub_ns += gpd_clock_ns() - t;
  g_resub_n++;
  atomic_store(&g_fin, FIN_NONE);
  return 0;
}

static void *ctl_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_mode_mu);
  while (!g_stopping) {
    uint64_t now = gpd_clock_ns();
    int flush = 0;
    uint64_t next = ctl_step(now, &flush);
    if (flush) {
      /* Outside the lock (a control request must not wait for it); only
       * this thread attaches, so no window opens before it is done. */
      pthread_mutex_unlock(&g_mode_mu);
      uint64_t t = gpd_clock_ns();
      window_drain();
      t = gpd_clock_ns() - t;
      pthread_mutex_lock(&g_mode_mu);
      edge_add(&g_edge_flush_ns, t);
      window_close();
      if (g_mode.finalize && !g_on && !g_stopping)
        fin_arm();
      else if (!g_on)
        time_bin(GPD_CUPTI_BIN_OUT);
      pcs_callbacks(); /* a PC-sampling window still waits for a call */
      continue;
    }
    if (next == UINT64_MAX) {
      pthread_cond_wait(&g_mode_cv, &g_mode_mu);
      continue;
    }
    uint64_t d = next > now ? next - now : 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t at = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + d;
    ts.tv_sec = (time_t)(at / 1000000000ull);
    ts.tv_nsec = (long)(at % 1000000000ull);
    pthread_cond_timedwait(&g_mode_cv, &g_mode_mu, &ts);
  }
  pthread_mutex_unlock(&g_mode_mu);
  return NULL;
}

/* Start the controller thread once (all signals blocked, detached); with
 * g_mode_mu held.  0 or -errno. */
static int ctl_start(void) {
  if (g_ctl_started)
    return 0;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_destroy(&g_mode_cv);
  pthread_cond_init(&g_mode_cv, &ca);
  pthread_condattr_destroy(&ca);
  int err = g_sw->thread_start(ctl_main, "gpuprof-cuptictl");
  if (err)
    return err;
  g_ctl_started = 1;
  return 0;
}

/* On-demand tracing (the daemon's TRACE control): attach now for
 * duration_ms (0 = until stopped), or detach (enable = 0); the controller
 * thread does it at once.  Any thread but an application's API callback;
 * holds g_mode_mu only briefly.  0 (also under full tracing: nothing to
 * switch), -ENOTSUP (the back end is not running), -errno. */
static int trace_control(int enable, uint32_t duration_ms) {
  if (!running())
    return -ENOTSUP;
  if (g_mode.mode == GPD_CUPTI_FULL)
    return 0; /* already tracing everything */
  pthread_mutex_lock(&g_mode_mu);
  uint64_t now = gpd_clock_ns();
  int err = ctl_start();
  if (!err) {
    if (enable)
      g_busy_until = 0; /* asked for: try now, busy or not */
    g_attach_from = enable ? now : 0;
    g_attach_until = !enable ? 0 : duration_ms ? now + (uint64_t)duration_ms * 1000000ull : UINT64_MAX;
    pthread_cond_signal(&g_mode_cv);
  }
  pthread_mutex_unlock(&g_mode_mu);
  return err;
}

/* The duty-cycle summary: windows, window fraction, elapsed (exit). */
static void duty_summary(char *out, size_t n) {
  uint64_t now = gpd_clock_ns(), win = g_window_ns + (g_on ? now - g_on_since : 0), el = now - g_t0;
  double f = gpd_duty_fraction(win, el), nw = g_windows ? (double)g_windows : 1.0;
  uint64_t all = count_kernels() - g_cnt_t0, in = g_cnt_in + (g_on ? gpd_cupti_whole_read(NULL) : 0);
  unsigned long fin_n = atomic_load(&g_fin_n);
  int len = snprintf(out, n,
           "CUDA tracing %s: %llu window(s), %.3f s traced of %.3f s (fraction f = %.5f); kernel time and "
           "counts per context estimate = observed / f, relative error ~ sqrt((1-f)/n) for n observed launches; "
           "switching per window: attach %.2f ms, detach %.2f ms, flush %.2f ms (longest %.2f ms); "
           "launches counted (cudart): %llu traced whole in windows of %llu (launch fraction f_launch = %.5f)",
           g_mode.mode == GPD_CUPTI_DUTY ? "duty-cycled" : "detached", (unsigned long long)(g_windows + (g_on ? 1 : 0)),
           (double)win / 1e9, (double)el / 1e9, f, (double)g_edge_on_ns / nw / 1e6, (double)g_edge_off_ns / nw / 1e6,
           (double)g_edge_flush_ns / nw / 1e6, (double)g_edge_max_ns / 1e6, (unsigned long long)in,
           (unsigned long long)all, gpd_duty_fraction(in, all));
  if (g_windows && len > 0 && (size_t)len < n)
    len += snprintf(out + len, n - (size_t)len, "; last window unix %.3f-%.3f", g_real_on, g_real_off);
  pthread_mutex_lock(&g_busy_mu);
  uint64_t busy_n = g_busy[GPD_CUPTI_BUSY_TRACE].n, busy_pcs = g_busy[GPD_CUPTI_BUSY_PCS].n;
  pthread_mutex_unlock(&g_busy_mu);
  if ((busy_n || busy_pcs) && len > 0 && (size_t)len < n)
    len += snprintf(out + len, n - (size_t)len, "; busy (another tool held CUPTI): %llu tracing and %llu PC-sampling "
                    "window(s) skipped", (unsigned long long)busy_n, (unsigned long long)busy_pcs);
  if ((g_mode.finalize || fin_n) && len > 0 && (size_t)len < n)
    snprintf(out + len, n - (size_t)len, "; finalize: %lu, %.2f ms each, subscribe again %.2f ms each", fin_n,
             fin_n ? (double)atomic_load(&g_fin_ns) / (double)fin_n / 1e6 : 0.0,
             g_resub_n ? (double)g_resub_ns / (double)g_resub_n / 1e6 : 0.0);
}

/* --- start / stop -------------------------------------------------- */
unsigned gpd_cupti_control_setup(const gpd_cupti_switch_t *sw) {
  g_sw = sw;
  /* GPUPROF_CUDA_TRACE wins over the daemon's policy, which wins over
   * full tracing (no daemon policy) */
  const char *tr = getenv("GPUPROF_CUDA_TRACE");
  gpd_shim_policy_t pol;
  gpd_cupti_mode_t chk;
  if (tr && *tr && gpd_cupti_mode_parse(tr, &chk) != 0)
    GPD_WARN("GPUPROF_CUDA_TRACE=%s not understood (full, detached, duty:W_MS/P_S, and kernel,copy,memset,"
             "alloc,sync): full tracing", tr);
  g_src = gpd_cupti_mode_resolve(tr, gpd_shim_policy(&pol) ? &pol : NULL, &g_mode, g_mode_text, sizeof g_mode_text);
  if (gpd_cupti_drain_parse(getenv("GPUPROF_CUDA_DRAIN_TRIES"), &g_drain_tries))
    GPD_WARN("GPUPROF_CUDA_DRAIN_TRIES not understood (0..1000): %u", g_drain_tries);
  const char *pcs = getenv("GPUPROF_PC_SAMPLING"), *sass = getenv("GPUPROF_SASS_COUNTS");
  g_keep_loaded = (pcs && *pcs && *pcs != '0') || (sass && *sass && *sass != '0');
  if (g_mode.finalize && g_keep_loaded) {
    GPD_WARN("CUDA tracing: finalize ignored with PC sampling or SASS counts (they keep CUPTI loaded)");
    g_mode.finalize = 0;
  }
  if (tr && strstr(tr, "finalize") && !g_mode.finalize && g_mode.mode != GPD_CUPTI_FULL && !g_keep_loaded)
    GPD_WARN("CUDA tracing: finalize ignored with a subset of the operation classes (docs/CUDA.md)");
  return g_mode.ops;
}

int gpd_cupti_control_can_wait(void) { return g_mode.mode != GPD_CUPTI_FULL; }

void gpd_cupti_control_start(const char *busy) {
  pthread_mutex_lock(&g_mode_mu);
  g_t0 = gpd_clock_ns();
  g_cnt_t0 = count_kernels();
  if (busy) {
    /* as after a finalize: the first window subscribes (fin_reattach) */
    atomic_store(&g_fin, FIN_DONE);
    busy_set(GPD_CUPTI_BUSY_TRACE, busy, "cuptiSubscribe", 0);
  }
  if (g_mode.mode == GPD_CUPTI_FULL) {
    const char *b = trace_set(1);
    if (b)
      GPD_WARN("CUDA tracing: an activity kind refused (%s): another tool holds it; full tracing stays off", b);
  } else {
    /* Test hook for the GPU validation of on-demand attach without a
     * daemon: GPUPROF_CUDA_ATTACH=AFTER_MS:DURATION_MS. */
    const char *at = getenv("GPUPROF_CUDA_ATTACH");
    unsigned long a = 0, d = 0;
    if (at && sscanf(at, "%lu:%lu", &a, &d) == 2 && d) {
      g_attach_from = g_t0 + a * 1000000ull;
      g_attach_until = g_attach_from + d * 1000000ull;
    }
    if ((g_mode.mode == GPD_CUPTI_DUTY || g_attach_until) && ctl_start() < 0)
      GPD_WARN("CUDA back end: no tracing controller thread; tracing stays detached");
    else if (g_mode.mode == GPD_CUPTI_DUTY)
      GPD_INFO("CUDA tracing duty-cycled: %u ms every %u ms", g_mode.window_ms, g_mode.period_ms);
    /* Detached from the start, so finalized from the first launch on as
     * between two windows: CUPTI left subscribed with only its resource
     * and timestamp callbacks costs more per step than finalized
     * (tests/cuda/torch-turns.py, docs/PERFORMANCE-CUDA.md).  A
     * window (duty, on-demand) calls it off or subscribes again
     * (fin_reattach). */
    if (g_mode.finalize && !busy)
      fin_arm();
  }
  pthread_mutex_unlock(&g_mode_mu);
}

void gpd_cupti_control_fini(void) {
  if (g_mode.mode == GPD_CUPTI_FULL || !running())
    return;
  pthread_mutex_lock(&g_mode_mu);
  if (!g_stopping) {
    g_stopping = 1;
    g_stop_ns = gpd_clock_ns();
  }
  pthread_cond_signal(&g_mode_cv);
  pthread_mutex_unlock(&g_mode_mu);
}

void gpd_cupti_control_summary(void) {
  if (g_mode.mode == GPD_CUPTI_FULL || !running())
    return;
  char why[1024];
  pthread_mutex_lock(&g_mode_mu);
  int first = g_stopping == 1;
  if (first) {
    g_stopping = 2;
    window_close(); /* a window whose drain the exit overtook */
    /* the open window (its records were flushed) and the run's end, as at
     * gpd_cupti_control_fini: the daemon's summary takes the record with
     * the most windows */
    uint64_t now = g_stop_ns, win = g_window_ns + (g_on && now > g_on_since ? now - g_on_since : 0);
    uint64_t all = count_kernels() - g_cnt_t0, in = g_cnt_in + (g_on ? gpd_cupti_whole_read(NULL) : 0);
    int duty = g_mode.mode == GPD_CUPTI_DUTY;
    if (g_on)
      (void)gpd_shim_push_tracewin(GPD_API_CUDA, duty, 0, g_t0, g_on_since, now > g_on_since ? now : g_on_since,
                                   g_windows + 1, win, all, in);
    (void)gpd_shim_push_tracewin(GPD_API_CUDA, duty, 1, g_t0, now, now, g_windows + (g_on ? 1 : 0), win, all, in);
    duty_summary(why, sizeof why);
  }
  pthread_mutex_unlock(&g_mode_mu);
  if (first) {
    gpd_shim_backend_status(GPD_API_CUDA, 1, 0, why); /* the report shows f */
    if (getenv("GPUPROF_CUPTI_SELFTEST") || gpd_shim__stats_on)
      fprintf(stderr, "gpuprof-cupti: %s\n", why);
  }
}

int gpd_cupti_control_quiesce(void) {
  int fin = FIN_ARMED; /* an armed finalize is called off; a running one ends first */
  if (!atomic_compare_exchange_strong(&g_fin, &fin, FIN_NONE))
    fin = fin_wait(1000);
  return fin == FIN_ARMED || fin == FIN_NONE;
}

void gpd_cupti_control_fork_prepare(void) {
  pthread_mutex_lock(&g_mode_mu);
  pthread_mutex_lock(&g_busy_mu);
}
void gpd_cupti_control_fork_parent(void) {
  pthread_mutex_unlock(&g_busy_mu);
  pthread_mutex_unlock(&g_mode_mu);
}
void gpd_cupti_control_fork_child(void) {
  pthread_mutex_unlock(&g_busy_mu);
  pthread_mutex_unlock(&g_mode_mu);
  g_mode_cv = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
  g_ctl_started = 0; /* the controller thread is gone too */
}

/* No more finalizes in this process (PC sampling asked for, a CUDA graph
 * built: `why`, logged once when it changes the mode): an armed one is
 * called off; a finalized CUPTI is subscribed again now (once: no
 * finalize follows), so that what needs it (the contexts a PC-sampling
 * window enables at their next call, the graph-node callbacks) does not
 * wait for the next tracing window's attach.  g_mode_mu held.  Returns
 * fin_reattach's result (0: subscribed; -EAGAIN: a finalize still runs,
 * call again; -EBUSY, -EIO: the next window's attach tries again). */
static int stay_loaded(const char *why) {
  if (g_mode.finalize)
    GPD_INFO("CUDA tracing: %s: CUPTI stays loaded between windows from now on", why);
  g_mode.finalize = 0;
  g_keep_loaded = 1;
  int armed = FIN_ARMED;
  if (atomic_compare_exchange_strong(&g_fin, &armed, FIN_NONE) && !g_on) {
    g_sw->launch_callbacks(0); /* called off: detached, no callback left on */
    time_bin(GPD_CUPTI_BIN_OUT);
  } else if ((armed == FIN_DONE || armed == FIN_RUNNING) && !g_on) {
    const char *busy = NULL, *step = NULL;
    return fin_reattach(&busy, &step);
  }
  return 0;
}

/* CUDA graphs (gpd_cupti_control_graphs): 1 once the process built one. */
static atomic_int g_graphs;

int gpd_cupti_control_graphs(void) {
  if (atomic_load_explicit(&g_graphs, memory_order_relaxed))
    return 0;
  if (!running())
    return -ENOTSUP;
  pthread_mutex_lock(&g_mode_mu);
  int err = 0;
  if (!atomic_load(&g_graphs)) {
    /* a finalize running on another thread ends within its callback:
     * wait for it (100 ms a turn, 1 s at most) */
    for (int i = 0; i < 10 && (err = stay_loaded("a CUDA graph is built")) == -EAGAIN; i++)
      ;
    atomic_store(&g_graphs, 1);
  }
  pthread_mutex_unlock(&g_mode_mu);
  if (err)
    GPD_WARN("CUDA graphs: CUPTI could not be subscribed again (%s): the nodes made now keep no "
             "capture-time context", err == -EBUSY ? "another tool holds it" : strerror(-err));
  return err;
}

/* --- the daemon's Controls and CollectReports ----------------------- */
/* A new policy from the daemon (CONTROL_POLICY, connection thread): the
 * mode, window and period change live unless GPUPROF_CUDA_TRACE chose
 * them.  Full -> duty/detached: the controller detaches at its next step
 * and the duty schedule (and its window fraction) starts now; -> full:
 * the controller attaches for good.  The operation classes stay those of
 * the start (the callback tables are built once). */
static int policy_apply(const gpd_shim_policy_t *pol, uint32_t *targets, char *msg, size_t n) {
  if (!pol)
    return -EINVAL;
  pthread_mutex_lock(&g_mode_mu);
  if (g_src == GPD_CUPTI_SRC_ENV) {
    snprintf(msg, n, "GPUPROF_CUDA_TRACE=%s set: the environment wins", g_mode_text);
    pthread_mutex_unlock(&g_mode_mu);
    return 0;
  }
  gpd_cupti_mode_t nm;
  char text[sizeof g_mode_text];
  g_src = gpd_cupti_mode_resolve(NULL, pol, &nm, text, sizeof text);
  int was_full = g_mode.mode == GPD_CUPTI_FULL;
  int err = 0;
  if (nm.mode != GPD_CUPTI_FULL && was_full) {
    uint64_t now = gpd_clock_ns();
    g_t0 = now;
    g_cnt_t0 = count_kernels();
    g_window_ns = g_windows = g_cnt_in = g_cnt_edges = 0;
    g_edge_on_ns = g_edge_off_ns = g_edge_flush_ns = 0;
    if (g_on) {
      g_on_since = now;
      g_cnt_open = g_cnt_t0;
      gpd_cupti_whole_open(); /* noted from now on */
    }
  }
  g_mode.mode = nm.mode;
  g_mode.window_ms = nm.window_ms;
  g_mode.period_ms = nm.period_ms;
  g_mode.finalize = nm.finalize && !g_keep_loaded;
  memcpy(g_mode_text, text, sizeof g_mode_text);
  if (nm.mode != GPD_CUPTI_DETACHED || g_on || was_full)
    err = ctl_start();
  pthread_cond_signal(&g_mode_cv);
  pthread_mutex_unlock(&g_mode_mu);
  if (err) {
    snprintf(msg, n, "no tracing controller thread: %s", strerror(-err));
    return err;
  }
  if (targets)
    *targets = 1;
  snprintf(msg, n, "CUDA tracing %s", text);
  return 0;
}

/* The busy fields of a CollectReport: every busy window, and what holds
 * the kinds busy now (g_mode_mu held; takes g_busy_mu). */
static void busy_report(gpd_shim_collect_t *o) {
  pthread_mutex_lock(&g_busy_mu);
  o->busy_windows = g_busy[GPD_CUPTI_BUSY_TRACE].n + g_busy[GPD_CUPTI_BUSY_PCS].n;
  for (unsigned k = 0; k < GPD_CUPTI_BUSY_KINDS && !o->busy[0]; k++)
    if (g_busy[k].name[0])
      snprintf(o->busy, sizeof o->busy, "busy: held by another tool (%s), %llu %swindow%s skipped, retrying",
               g_busy[k].name, (unsigned long long)g_busy[k].n, k == GPD_CUPTI_BUSY_PCS ? "PC-sampling " : "",
               g_busy[k].n == 1 ? "" : "s");
  pthread_mutex_unlock(&g_busy_mu);
}

/* What the back end runs and costs (CollectReport; connection thread).
 * The counts cover the closed windows and the time up to the open one
 * (a window's cost is known when it closes). */
int gpd_cupti_control_collect(gpd_shim_collect_t *o) {
  if (!running())
    return 0;
  pthread_mutex_lock(&g_mode_mu);
  static const char *const src[] = {"default", "daemon", "env"};
  snprintf(o->source, sizeof o->source, "%s", src[g_src % 3]);
  snprintf(o->mode, sizeof o->mode, "%s", g_mode_text);
  if (g_src == GPD_CUPTI_SRC_ENV)
    snprintf(o->note, sizeof o->note, "GPUPROF_CUDA_TRACE=%s set: the environment wins", g_mode_text);
  else if (g_src == GPD_CUPTI_SRC_DEFAULT)
    snprintf(o->note, sizeof o->note, "no daemon policy: full tracing");
  o->can_detach = 1;
  if (g_mode.mode != GPD_CUPTI_FULL) {
    uint64_t now = gpd_clock_ns(), cnt = count_kernels();
    int open = g_on || g_closing; /* a closing window counts when drained */
    uint64_t upto = open ? g_on_since : now, cupto = open ? g_cnt_open : cnt;
    o->elapsed_ns = upto > g_t0 ? upto - g_t0 : 0;
    o->window_ns = g_window_ns;
    o->windows = g_windows;
    o->launches = cupto - g_cnt_t0;
    o->launches_in = g_cnt_edges; /* the rate inside windows, traced whole or not */
    o->switch_ns = g_edge_on_ns + g_edge_off_ns + g_edge_flush_ns + atomic_load(&g_fin_ns);
    uint64_t tn[2], tns[2];
    gpd_cupti_count_timed(tn, tns);
    o->timed_out = tn[GPD_CUPTI_BIN_OUT];
    o->timed_out_ns = tns[GPD_CUPTI_BIN_OUT];
    o->timed_in = tn[GPD_CUPTI_BIN_IN];
    o->timed_in_ns = tns[GPD_CUPTI_BIN_IN];
  }
  busy_report(o);
  pthread_mutex_unlock(&g_mode_mu);
  return 1;
}

/* Control from the daemon (shim/control.c, connection thread): PC
 * sampling windows (cupti-pcsampling.c) and TRACE, which attaches CUDA
 * tracing for the window (`gpuprof trace --job J --duration 10s`); the
 * shim core calls again with enable = 0 at the window's end. */
int gpd_cupti_control_apply(const gpd_control_t *c, uint32_t *targets, char *msg, size_t n) {
  if (!running())
    return -ENOTSUP;
  if (c->kind == GPD_CONTROL_PC_SAMPLING && c->enable) {
    /* PC sampling needs CUPTI loaded: no more finalizes in this process
     * (an armed one is called off; a finalized CUPTI comes back at the
     * next window's attach, whose API callbacks start the sampling) */
    pthread_mutex_lock(&g_mode_mu);
    (void)stay_loaded("PC sampling asked for");
    pthread_mutex_unlock(&g_mode_mu);
  }
  if (c->kind == GPD_CONTROL_PC_SAMPLING) {
    int err = g_sw->pcs_control(c->enable, c->duration_ms, c->period, c->flags, targets, msg, n);
    pthread_mutex_lock(&g_mode_mu);
    pcs_callbacks(); /* detached: the contexts' next calls must be seen */
    pthread_mutex_unlock(&g_mode_mu);
    return err;
  }
  if (c->kind == GPD_CONTROL_POLICY)
    return policy_apply(c->policy, targets, msg, n);
  if (c->kind != GPD_CONTROL_TRACE)
    return -ENOTSUP;
  int err = trace_control(c->enable, c->duration_ms);
  if (err == 0 && targets)
    *targets = 1;
  if (msg && n)
    snprintf(msg, n, "%s",
             err ? "CUDA back end not running"
             : g_mode.mode == GPD_CUPTI_FULL ? "CUDA tracing is full (always attached)"
             : c->enable ? "CUDA tracing attached" : "CUDA tracing detached");
  return err;
}
