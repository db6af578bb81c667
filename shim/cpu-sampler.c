/* cpu-sampler.c - CPU-time sampling with calling contexts
 * (GPUPROF_CPU_SAMPLING=HZ; docs/SHIM.md, "CPU sampling").
 *
 * Each sampled thread owns a POSIX timer on its own CPU-time clock
 * (timer_create(CLOCK_THREAD_CPUTIME_ID) with SIGEV_THREAD_ID to itself):
 * every 1/HZ s of CPU time the thread consumes, the kernel sends the
 * sampling signal to that thread, and the handler attributes the period
 * (times 1 + the timer's overrun) to the context the thread was in
 * (gpd_capture_sample) with a CPUSAMPLE record pushed on the thread's own
 * ring.  The main thread is sampled from the constructor on, a thread the
 * application creates afterwards from its start (the interposed
 * pthread_create, pthread-wrappers.c), any other thread from its first
 * capture (its first GPU API call or vendor callback).  This mirrors HPCToolkit's CPUTIME
 * event (hpcrun -e CPUTIME), which also samples a per-thread CPU clock.
 *
 * The handler is async-signal-safe: no allocation, no lock, no stdio.  It
 * declines (and counts) a sample when the thread is inside a push (a ring
 * has one producer), when the region's daemon does not accept CPUSAMPLE
 * records, and when the context cannot be named from what the handler may
 * touch (capture.c: inside an interrupted capture only known nodes are
 * used; frames in a module the table does not know yet are left for the
 * connection thread to look up: gpd_module_want, gpd_module_service).  A full ring drops
 * the record (counted by the ring, like any record).
 *
 * Signal: SIGRTMIN+6 by default, GPUPROF_CPU_SAMPLING_SIGNAL=N (a number)
 * or =PROF (SIGPROF) to choose.  Not SIGPROF by default: gprof, gperftools
 * and many language runtimes own it.  If the application already has a
 * handler (or SIG_IGN) for the chosen signal at start, sampling backs off
 * (one log line).  If it installs one later, the connection thread (every
 * 0.1 s while connected, 1 s while it waits for a daemon) or the next
 * thread that starts sampling notices, every timer is deleted, and
 * sampling stops (one line): until then the application's handler gets
 * our timers' signals.  Timers are kept in a bounded table
 * (GPD_CPUSAMPLE_TIMERS) for that.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "gpuprof/clock.h"
#include "gpuprof/log.h"
#include "internal.h"
#include "module.h"

#define GPD_CPUSAMPLE_HZ_MAX 10000
#define GPD_CPUSAMPLE_TIMERS 4096

typedef struct cs_timer_s {
  _Atomic int used;
  timer_t id;
} cs_timer_t;

static struct {
  int on;             /* configured and the handler installed */
  int sig;
  uint64_t period_ns; /* CPU time between samples */
  _Atomic int stopped; /* backed off, or the process is exiting */
  cs_timer_t timers[GPD_CPUSAMPLE_TIMERS];
  /* statistics (relaxed), test hook gpd_shim__cpusample_stats */
  _Atomic uint64_t signals, pushed, failed, declined[5], busy, inactive, old_daemon;
} cs;

static __thread int t_slot = -1;   /* this thread's entry in cs.timers */
static __thread uint32_t t_gen;    /* fork generation the timer belongs to */
/* CPU time (ns) that this thread's timer signals carried, and the part
 * its pushed samples carry (test hook gpd_shim__cpusample_thread_ns) */
static __thread uint64_t t_signalled_ns, t_pushed_ns;
static _Atomic uint32_t cs_forkgen;
static int cs_log_taken, cs_log_timer, cs_log_old;

static uint64_t cs_parse_hz(const char *v) {
  if (!v || !*v)
    return 0;
  char *end;
  errno = 0;
  long hz = strtol(v, &end, 10);
  if (errno || end == v || *end || hz <= 0)
    return 0;
  if (hz > GPD_CPUSAMPLE_HZ_MAX)
    hz = GPD_CPUSAMPLE_HZ_MAX;
  return (uint64_t)hz;
}

static int cs_parse_sig(const char *v) {
  if (!v || !*v)
    return SIGRTMIN + 6;
  if (strcmp(v, "PROF") == 0 || strcmp(v, "SIGPROF") == 0)
    return SIGPROF;
  char *end;
  long n = strtol(v, &end, 10);
  if (end == v || *end || n <= 0 || n > SIGRTMAX || n == SIGKILL || n == SIGSTOP)
    return -1;
  return (int)n;
}

static void cs_handler(int sig, siginfo_t *si, void *ucv) {
  (void)sig;
  int saved = errno;
  int nowait = gpd_thread_nowait(1); /* a handler never waits for ring room */
  if (!si || si->si_code != SI_TIMER || t_slot < 0) /* not our timer (kill(2), a stale one) */
    goto out;
  atomic_fetch_add_explicit(&cs.signals, 1, memory_order_relaxed);
  /* si_overrun: expirations the kernel folded into this one signal */
  uint64_t exp = 1 + (uint64_t)(si->si_overrun > 0 ? si->si_overrun : 0);
  uint64_t maxexp = GPD_CPUSAMPLE_MAX_WEIGHT / cs.period_ns;
  if (exp > maxexp)
    exp = maxexp;
  t_signalled_ns += exp * cs.period_ns;
  if (atomic_load_explicit(&cs.stopped, memory_order_relaxed))
    goto out;
  if (!atomic_load_explicit(&gpd_shim__g.active, memory_order_acquire)) {
    atomic_fetch_add_explicit(&cs.inactive, 1, memory_order_relaxed);
    goto out;
  }
  if (gpd_shim__g.region.hdr->rec_types <= GPD_REC_CPUSAMPLE) {
    atomic_fetch_add_explicit(&cs.old_daemon, 1, memory_order_relaxed);
    goto out;
  }
  if (gpd_thread_pushing()) {
    atomic_fetch_add_explicit(&cs.busy, 1, memory_order_relaxed);
    goto out;
  }
  const ucontext_t *uc = ucv;
  unsigned why = 0;
  uint32_t node = gpd_capture_sample((uintptr_t)uc->uc_mcontext.gregs[REG_RIP], &why);
  if (!node) {
    atomic_fetch_add_explicit(&cs.declined[why < 5 ? why : 0], 1, memory_order_relaxed);
    goto out;
  }
  gpd_rec_cpusample_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_CPUSAMPLE;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  r.node = node;
  r.tid = gpd_thread_tid();
  r.ts = gpd_clock_ns();
  r.weight = exp * cs.period_ns;
  r.expirations = (uint32_t)exp;
  if (gpd_thread_push(&r, sizeof r) == 0) {
    atomic_fetch_add_explicit(&cs.pushed, 1, memory_order_relaxed);
    t_pushed_ns += r.weight;
  } else
    atomic_fetch_add_explicit(&cs.failed, 1, memory_order_relaxed);
out:
  gpd_thread_nowait(nowait);
  errno = saved;
}

/* Delete every timer (someone else's handler took the signal). */
static void cs_stop_all(void) {
  atomic_store(&cs.stopped, 1);
  for (int i = 0; i < GPD_CPUSAMPLE_TIMERS; i++)
    if (atomic_exchange(&cs.timers[i].used, 0) == 1)
      timer_delete(cs.timers[i].id);
}

/* 1 while the signal's handler is still ours. */
static int cs_handler_ours(void) {
  struct sigaction cur;
  if (sigaction(cs.sig, NULL, &cur) != 0)
    return 0;
  return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == cs_handler;
}

void gpd_cpu_sampler_thread_start(void) {
  if (!cs.on || atomic_load_explicit(&cs.stopped, memory_order_relaxed))
    return;
  uint32_t fg = atomic_load_explicit(&cs_forkgen, memory_order_relaxed);
  if (t_slot >= 0 && t_gen == fg)
    return;
  t_slot = -1;
  if (!cs_handler_ours()) {
    GPD_LOG_ONCE(cs_log_taken, GPD_LOG_WARN,
                 "CPU sampling: the application installed its own handler for signal %d; sampling stops", cs.sig);
    cs_stop_all();
    return;
  }
  int slot = -1;
  for (int i = 0; i < GPD_CPUSAMPLE_TIMERS && slot < 0; i++) {
    int z = 0;
    if (atomic_compare_exchange_strong(&cs.timers[i].used, &z, 2))
      slot = i;
  }
  if (slot < 0) {
    GPD_LOG_ONCE(cs_log_timer, GPD_LOG_WARN, "CPU sampling: more than %d threads; later ones are not sampled",
                 GPD_CPUSAMPLE_TIMERS);
    return;
  }
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = cs.sig;
#ifdef sigev_notify_thread_id
  sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
#else
  sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
#endif
  timer_t id;
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &id) != 0) {
    int err = errno;
    atomic_store(&cs.timers[slot].used, 0);
    GPD_LOG_ONCE(cs_log_timer, GPD_LOG_WARN, "CPU sampling: timer_create: %s; this thread is not sampled",
                 strerror(err));
    return;
  }
  cs.timers[slot].id = id;
  t_slot = slot;
  t_gen = fg;
  atomic_signal_fence(memory_order_seq_cst);
  atomic_store(&cs.timers[slot].used, 1);
  struct itimerspec its;
  its.it_interval.tv_sec = (time_t)(cs.period_ns / 1000000000ull);
  its.it_interval.tv_nsec = (long)(cs.period_ns % 1000000000ull);
  its.it_value = its.it_interval;
  if (timer_settime(id, 0, &its, NULL) != 0)
    gpd_cpu_sampler_thread_stop();
}

int gpd_cpu_sampler_wanted(void) {
  return cs.on && !atomic_load_explicit(&cs.stopped, memory_order_relaxed) ? cs.sig : 0;
}

void gpd_cpu_sampler_thread_begin(void) {
  if (gpd_cpu_sampler_wanted())
    (void)gpd_thread_memo(); /* its allocation starts the timer */
}

void gpd_cpu_sampler_thread_stop(void) {
  if (!cs.on || t_slot < 0)
    return;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, cs.sig);
  pthread_sigmask(SIG_BLOCK, &set, NULL); /* the thread is leaving: no late signal */
  int slot = t_slot;
  t_slot = -1;
  if (t_gen == atomic_load(&cs_forkgen) && atomic_exchange(&cs.timers[slot].used, 0) == 1)
    timer_delete(cs.timers[slot].id);
}

void gpd_cpu_sampler_stop(void) {
  if (!cs.on)
    return;
  atomic_store(&cs.stopped, 1);
  gpd_cpu_sampler_thread_stop();
  gpd_pyframes_service(); /* the Python line, if no service pass said it yet */
}

void gpd_cpu_sampler_atfork_child(void) {
  if (!cs.on)
    return;
  /* timers are not inherited: forget the parent's table, start ours */
  atomic_fetch_add(&cs_forkgen, 1);
  for (int i = 0; i < GPD_CPUSAMPLE_TIMERS; i++)
    atomic_store(&cs.timers[i].used, 0);
  t_slot = -1;
  if (!atomic_load(&cs.stopped))
    gpd_cpu_sampler_thread_start();
}

void gpd_cpu_sampler_service(void) {
  gpd_module_service(); /* frames the handler found in no known module */
  if (cs.on)
    gpd_pyframes_service(); /* a CPU-only Python program makes no capture */
  if (cs.on && !atomic_load_explicit(&cs.stopped, memory_order_relaxed) && !cs_handler_ours()) {
    /* the application took the signal: its handler must not get our
     * timers' signals for longer than one pass of this thread (~100 ms) */
    GPD_LOG_ONCE(cs_log_taken, GPD_LOG_WARN,
                 "CPU sampling: the application installed its own handler for signal %d; sampling stops", cs.sig);
    cs_stop_all();
  }
  if (cs.on && atomic_load_explicit(&cs.old_daemon, memory_order_relaxed))
    GPD_LOG_ONCE(cs_log_old, GPD_LOG_WARN, "CPU sampling: the daemon does not accept CPU samples (older "
                                           "gpuprofd); none are recorded");
}

/* The rate asked for and by whom (gpd_cpu_sampler_rate). */
static uint64_t cs_hz_asked;
static int cs_from_env;

uint32_t gpd_cpu_sampler_rate(int *from_env) {
  if (from_env)
    *from_env = cs_from_env;
  return cs.on ? (uint32_t)cs_hz_asked : 0;
}

void gpd_cpu_sampler_init(void) {
  /* GPUPROF_CPU_SAMPLING (the user asked, also for 0 = off) wins over the
   * daemon's policy */
  const char *env = getenv("GPUPROF_CPU_SAMPLING");
  cs_from_env = env && *env;
  uint64_t hz = cs_from_env ? cs_parse_hz(env) : gpd_shim__policy_cpu_hz();
  cs_hz_asked = hz;
  if (!hz)
    return;
  int sig = cs_parse_sig(getenv("GPUPROF_CPU_SAMPLING_SIGNAL"));
  if (sig < 0) {
    GPD_WARN("CPU sampling: GPUPROF_CPU_SAMPLING_SIGNAL is not a signal number or PROF; sampling off");
    return;
  }
  struct sigaction old, sa;
  if (sigaction(sig, NULL, &old) != 0)
    return;
  if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
    GPD_WARN("CPU sampling: the application handles signal %d already; sampling off (choose another "
             "with GPUPROF_CPU_SAMPLING_SIGNAL)", sig);
    return;
  }
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = cs_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, NULL) != 0)
    return;
  cs.sig = sig;
  cs.period_ns = 1000000000ull / hz;
  cs.on = 1;
  GPD_INFO("CPU sampling at %llu Hz of CPU time (signal %d)", (unsigned long long)hz, sig);
  gpd_pyframes_service(); /* the interpreter, if the program is one (its samples' Python frames) */
  (void)gpd_thread_memo(); /* the main thread: memo and timer now */
}

/** Test hook (exported): the number of CPU-time timers the sampler holds
 *  now (one per live sampled thread of this process image). */
GPD_EXPORT int gpd_shim__cpusample_timers(void) {
  int n = 0;
  for (int i = 0; i < GPD_CPUSAMPLE_TIMERS; i++)
    n += atomic_load(&cs.timers[i].used) != 0;
  return n;
}

/** Test hook (exported): out[0] the CPU time (ns) that the calling
 *  thread's timer signals carried so far (period x expirations, whether
 *  the sample was pushed or not), out[1] the part that its pushed
 *  CPUSAMPLE records carry (the sum of their weights).  out[0] lags the
 *  thread's CPU clock by what the kernel has not signalled yet: a CPU-time
 *  timer is checked at a scheduler tick that finds the thread running, so
 *  the expirations of its last stretch before it blocks wait there
 *  (docs/SHIM.md, "Late signals"). */
GPD_EXPORT void gpd_shim__cpusample_thread_ns(uint64_t out[2]) {
  out[0] = t_signalled_ns;
  out[1] = t_pushed_ns;
}

/** Test hook (exported): the sampler's counters: out[0] signals, [1]
 *  pushed, [2] push failed, [3] declined (all reasons), [4] inside a push,
 *  [5] no region, [6] daemon too old, [7] declined: nested, [8]
 *  incomplete path; returns 1 when sampling is on. */
GPD_EXPORT int gpd_shim__cpusample_stats(uint64_t out[9]) {
  uint64_t d = 0;
  for (int i = 0; i < 5; i++)
    d += atomic_load(&cs.declined[i]);
  out[0] = atomic_load(&cs.signals);
  out[1] = atomic_load(&cs.pushed);
  out[2] = atomic_load(&cs.failed);
  out[3] = d;
  out[4] = atomic_load(&cs.busy);
  out[5] = atomic_load(&cs.inactive);
  out[6] = atomic_load(&cs.old_daemon);
  out[7] = atomic_load(&cs.declined[GPD_SAMPLE_NESTED]);
  out[8] = atomic_load(&cs.declined[GPD_SAMPLE_INCOMPLETE]);
  return cs.on && !atomic_load(&cs.stopped);
}
