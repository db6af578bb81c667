/* level0-commands.c - the Level Zero commands in flight, the collector
 * thread that completes them, the back end's own events and the devices'
 * clock syncs.
 *
 * Level Zero has no completion callbacks: every recorded device command
 * signals an event (the application's, or one of ours put in its place by
 * the append prologue), and the collector thread (the shim's, never the
 * application's) polls the armed ones with zeEventQueryKernelTimestamp,
 * converts the device ticks to the gpuprof clock and pushes the ACTIVITY
 * from its own ring.  It polls every L0_POLL_NS while commands are armed,
 * at once when a host synchronization returned, and sleeps otherwise.
 *
 * Table: L0_MAX_CMDS slots, allocated once (first command, pthread_once);
 * no lock per command (docs/SHIM.md: no lock per call): the free list is a
 * lock-free stack (Treiber) whose head carries a change counter against
 * ABA, fresh slots come from the high water by CAS.  Slot states change by
 * CAS (level0.h), so the collector and an application thread finishing a
 * command early (event reset, list reset) never both push it.  Scans walk
 * [0, high water).
 *
 * Regular command lists run as often as they are executed: their commands
 * stay in the table (DONE after each completion) and are armed again by
 * each zeCommandQueueExecuteCommandLists; our own events are reset first.
 * Their INVOKE carries GPD_INVOKE_MULTI, so the daemon matches every run.
 */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuprof/clock.h"
#include "gpuprof/log.h"
#include "level0.h"

#define L0_MAX_CMDS 65536u
#define L0_POLL_NS 500000ull         /* 0.5 ms between polls while armed */
#define L0_PUSH_WAIT_NS 20000000ull  /* collector waits for ring space */
#define L0_STOP_WAIT_NS 100000000ull /* exit waits for the collector */
#define L0_MAX_DEVICES 64u
#define L0_CLOCK_REFRESH_NS 1000000000ull
#define L0_MAX_POOLS 256u            /* our event pools, all contexts */
#define L0_POOL_EVENTS 256u

static gpd_l0_cmd_t *l0_cmds;     /* set once (l0_cmds_once) */
static pthread_once_t l0_cmds_once = PTHREAD_ONCE_INIT;
static _Atomic uint32_t l0_high;  /* slots [0, high) were ever used */
static _Atomic uint64_t l0_free;  /* free-list head: changes << 32 | (index + 1), 0 empty */
static pthread_mutex_t l0_lock = PTHREAD_MUTEX_INITIALIZER; /* our events */
static int l0_log_full, l0_log_ts, l0_log_ev;

/* Collector thread. */
static pthread_mutex_t l0_cv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t l0_cv;
static int l0_thread_state; /* 0 none, 1 running, 2 stopping, 3 stopped */
static int l0_kicked;
static _Atomic uint32_t l0_armed; /* commands ARMED (approximate) */
static pthread_t l0_thread;

/* ------------------------------------------------------------ devices */

typedef struct l0_device_s {
  _Atomic uintptr_t handle;
  gpd_l0_clock_t clk;
  uint64_t synced_at; /* gpuprof ns of the last sync, 0 = never */
  int bad;
} l0_device_t;
static l0_device_t l0_devices[L0_MAX_DEVICES];
static pthread_mutex_t l0_dev_lock = PTHREAD_MUTEX_INITIALIZER;

uint32_t gpd_l0_device_index(ze_device_handle_t d) {
  for (uint32_t i = 0; i < L0_MAX_DEVICES; i++) {
    uintptr_t v = atomic_load(&l0_devices[i].handle);
    if (v == (uintptr_t)d)
      return i;
    if (v == 0) {
      uintptr_t z = 0;
      if (atomic_compare_exchange_strong(&l0_devices[i].handle, &z, (uintptr_t)d) || z == (uintptr_t)d)
        return i;
    }
  }
  return 0;
}

static int l0_clock_sync(ze_device_handle_t d, gpd_l0_clock_t *c) {
  ze_device_properties_t p;
  memset(&p, 0, sizeof p);
  p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2; /* timerResolution in cycles/s */
  if (!gpd_l0.zeDeviceGetProperties || !gpd_l0.zeDeviceGetGlobalTimestamps ||
      gpd_l0.zeDeviceGetProperties(d, &p) != ZE_RESULT_SUCCESS || p.timerResolution == 0)
    return -ENOTSUP;
  uint64_t host = 0, dev = 0;
  uint64_t t0 = gpd_clock_ns();
  if (gpd_l0.zeDeviceGetGlobalTimestamps(d, &host, &dev) != ZE_RESULT_SUCCESS)
    return -ENOTSUP;
  uint64_t t1 = gpd_clock_ns();
  c->host_ns = t0 + (t1 - t0) / 2;
  c->dev_ticks = dev;
  c->hz = p.timerResolution;
  c->valid_bits = p.kernelTimestampValidBits ? p.kernelTimestampValidBits : 64;
  return 0;
}

const gpd_l0_clock_t *gpd_l0_device_clock(uint32_t idx) {
  if (idx >= L0_MAX_DEVICES)
    return NULL;
  l0_device_t *d = &l0_devices[idx];
  const gpd_l0_clock_t *ret = NULL;
  pthread_mutex_lock(&l0_dev_lock);
  uint64_t now = gpd_clock_ns();
  if (!d->bad && (d->synced_at == 0 || now - d->synced_at > L0_CLOCK_REFRESH_NS)) {
    gpd_l0_clock_t c;
    if (l0_clock_sync((ze_device_handle_t)atomic_load(&d->handle), &c) == 0) {
      d->clk = c;
      d->synced_at = now;
    } else if (d->synced_at == 0) {
      d->bad = 1;
    }
  }
  if (d->synced_at)
    ret = &d->clk;
  pthread_mutex_unlock(&l0_dev_lock);
  return ret;
}

/* ------------------------------------------------------- our own events */

typedef struct l0_pool_s {
  ze_context_handle_t ctx;
  ze_event_pool_handle_t pool;
  uint32_t used; /* events created from it */
} l0_pool_t;
static l0_pool_t l0_pools[L0_MAX_POOLS];
static uint32_t l0_npools;
/* Free events of ours, with their context (under l0_lock). */
typedef struct l0_free_ev_s {
  ze_context_handle_t ctx;
  ze_event_handle_t ev;
} l0_free_ev_t;
static l0_free_ev_t *l0_free_evs;
static uint32_t l0_nfree_evs;

ze_event_handle_t gpd_l0_event_get(ze_context_handle_t ctx, ze_device_handle_t dev) {
  ze_event_handle_t ev = NULL;
  pthread_mutex_lock(&l0_lock);
  for (uint32_t i = l0_nfree_evs; i-- > 0;)
    if (l0_free_evs[i].ctx == ctx) {
      ev = l0_free_evs[i].ev;
      l0_free_evs[i] = l0_free_evs[--l0_nfree_evs];
      break;
    }
  if (ev)
    goto out;
  l0_pool_t *p = NULL;
  for (uint32_t i = 0; i < l0_npools; i++)
    if (l0_pools[i].ctx == ctx && l0_pools[i].used < L0_POOL_EVENTS)
      p = &l0_pools[i];
  if (!p && l0_npools < L0_MAX_POOLS && gpd_l0.zeEventPoolCreate) {
    ze_event_pool_desc_t d = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL,
                              ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP,
                              L0_POOL_EVENTS};
    ze_event_pool_handle_t h = NULL;
    ze_device_handle_t devs[1] = {dev};
    if (gpd_l0.zeEventPoolCreate(ctx, &d, dev ? 1 : 0, dev ? devs : NULL, &h) == ZE_RESULT_SUCCESS && h) {
      p = &l0_pools[l0_npools++];
      p->ctx = ctx;
      p->pool = h;
      p->used = 0;
    }
  }
  if (p && gpd_l0.zeEventCreate) {
    ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, p->used, ZE_EVENT_SCOPE_FLAG_HOST,
                          ZE_EVENT_SCOPE_FLAG_HOST};
    if (gpd_l0.zeEventCreate(p->pool, &ed, &ev) == ZE_RESULT_SUCCESS)
      p->used++;
    else
      ev = NULL;
  }
out:
  pthread_mutex_unlock(&l0_lock);
  if (!ev)
    GPD_LOG_ONCE(l0_log_ev, GPD_LOG_WARN, "Level Zero: no event of our own for a command; it is not profiled");
  return ev;
}

void gpd_l0_event_put(ze_context_handle_t ctx, ze_event_handle_t ev) {
  int prev = gpd_thread_enter(); /* our reset must not look like the app's */
  if (gpd_l0.zeEventHostReset)
    (void)gpd_l0.zeEventHostReset(ev);
  gpd_thread_leave(prev);
  pthread_mutex_lock(&l0_lock);
  if (!l0_free_evs)
    l0_free_evs = calloc((size_t)L0_MAX_POOLS * L0_POOL_EVENTS, sizeof *l0_free_evs);
  if (l0_free_evs && l0_nfree_evs < L0_MAX_POOLS * L0_POOL_EVENTS)
    l0_free_evs[l0_nfree_evs++] = (l0_free_ev_t){ctx, ev};
  pthread_mutex_unlock(&l0_lock);
}

/* ------------------------------------------------------------ the table */

static inline uint32_t l0_idx(const gpd_l0_cmd_t *c) { return (uint32_t)(c - l0_cmds); }

static void l0_cmds_alloc(void) { l0_cmds = calloc(L0_MAX_CMDS, sizeof *l0_cmds); }

/* Free-list head after one more change, pointing at index + 1 = top. */
static inline uint64_t l0_free_next(uint64_t head, uint32_t top) {
  return (((head >> 32) + 1) << 32) | top;
}

gpd_l0_cmd_t *gpd_l0_cmd_get(void) {
  gpd_l0_cmd_t *c = NULL;
  pthread_once(&l0_cmds_once, l0_cmds_alloc);
  if (l0_cmds) {
    /* pop: a slot popped and pushed again in between changes the counter,
     * so the CAS fails instead of installing a stale next */
    uint64_t h = atomic_load_explicit(&l0_free, memory_order_acquire);
    while ((uint32_t)h != 0) {
      gpd_l0_cmd_t *top = &l0_cmds[(uint32_t)h - 1];
      uint32_t nx = atomic_load_explicit(&top->next_free, memory_order_relaxed);
      if (atomic_compare_exchange_weak_explicit(&l0_free, &h, l0_free_next(h, nx),
                                                memory_order_acquire, memory_order_acquire)) {
        c = top;
        break;
      }
    }
    if (!c) {
      uint32_t hw = atomic_load(&l0_high);
      while (hw < L0_MAX_CMDS && !atomic_compare_exchange_weak(&l0_high, &hw, hw + 1))
        ;
      if (hw < L0_MAX_CMDS)
        c = &l0_cmds[hw];
    }
  }
  if (!c) {
    GPD_LOG_ONCE(l0_log_full, GPD_LOG_WARN, "Level Zero: too many commands in flight; some are not profiled");
    return NULL;
  }
  /* FREE: only this thread holds it now; clear all but the state word and
   * the link (a popper that lost the race may still read the link). */
  size_t keep = offsetof(gpd_l0_cmd_t, next_free) + sizeof c->next_free;
  memset((char *)c + keep, 0, sizeof *c - keep);
  return c;
}

void gpd_l0_cmd_put(gpd_l0_cmd_t *c) {
  if (c->owned && c->event)
    gpd_l0_event_put(c->ctx, c->event);
  c->event = NULL;
  atomic_store(&c->state, L0_FREE);
  /* push (release: this slot's stores come before the next popper's use) */
  uint64_t h = atomic_load_explicit(&l0_free, memory_order_relaxed);
  do
    atomic_store_explicit(&c->next_free, (uint32_t)h, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&l0_free, &h, l0_free_next(h, l0_idx(c) + 1),
                                                memory_order_release, memory_order_relaxed));
}

static void l0_start_thread(void);

void gpd_l0_cmd_kick(void) {
  pthread_mutex_lock(&l0_cv_lock);
  l0_kicked = 1;
  pthread_cond_signal(&l0_cv);
  pthread_mutex_unlock(&l0_cv_lock);
}

/* Arm a command.  Returns 1 when none was armed before: the collector may
 * be asleep without a timeout and must be woken; otherwise it polls within
 * L0_POLL_NS anyway (waking it for every launch would cost a futex wake
 * and a context switch per launch). */
static int l0_arm(gpd_l0_cmd_t *c) {
  atomic_store_explicit(&c->state, L0_ARMED, memory_order_release);
  int first = atomic_fetch_add(&l0_armed, 1) == 0;
  l0_start_thread();
  return first;
}

void gpd_l0_cmd_publish(gpd_l0_cmd_t *c) {
  if (c->immediate) {
    if (l0_arm(c))
      gpd_l0_cmd_kick();
  } else {
    atomic_store_explicit(&c->state, L0_APPENDED, memory_order_release);
  }
}

/* Query an ARMED command once, on whichever thread claimed it (state
 * BUSY).  `force`: the event is about to be reset or the list dropped:
 * finish it now, with host times if the device has not signalled.
 * Returns 1 when it was pushed (the slot then is DONE or FREE). */
static int l0_complete(gpd_l0_cmd_t *c, int force, int wait) {
  ze_kernel_timestamp_result_t ts;
  memset(&ts, 0, sizeof ts);
  ze_result_t r = gpd_l0.zeEventQueryKernelTimestamp ? gpd_l0.zeEventQueryKernelTimestamp(c->event, &ts)
                                                     : ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  int have_ts = r == ZE_RESULT_SUCCESS;
  if (r == ZE_RESULT_NOT_READY && !force) {
    atomic_store(&c->state, L0_ARMED);
    return 0;
  }
  if (!have_ts && r != ZE_RESULT_NOT_READY) {
    /* No timestamps (pool without the flag, unsupported): completion
     * from the status, host times. */
    ze_result_t s = gpd_l0.zeEventQueryStatus ? gpd_l0.zeEventQueryStatus(c->event) : r;
    if (s == ZE_RESULT_NOT_READY && !force) {
      atomic_store(&c->state, L0_ARMED);
      return 0;
    }
    GPD_LOG_ONCE(l0_log_ts, GPD_LOG_WARN,
                 "Level Zero: zeEventQueryKernelTimestamp failed (0x%x); host times used", (unsigned)r);
  }
  gpd_rec_activity_t a;
  gpd_l0_translate(c, have_ts ? &ts : NULL, have_ts ? gpd_l0_device_clock(c->device) : NULL, &a);
  if (wait)
    (void)gpd_shim_push_activity_wait(&a, L0_PUSH_WAIT_NS);
  else
    (void)gpd_shim_push_activity(&a);
  atomic_fetch_sub(&l0_armed, 1);
  if (c->immediate)
    gpd_l0_cmd_put(c);
  else
    atomic_store(&c->state, L0_DONE);
  return 1;
}

/* Take a slot that is in use (any state but FREE -> BUSY), waiting out
 * another thread's BUSY (a query or a push: short).  Returns the state it
 * had, or L0_FREE when it is free (not taken: its fields may be being
 * filled).  Only the taker reads or writes the fields until it stores a
 * state again, so the scans below never race with a slot's owner. */
static uint32_t l0_take(gpd_l0_cmd_t *c) {
  for (int spin = 0;; spin++) {
    uint32_t s = atomic_load(&c->state);
    if (s == L0_FREE)
      return L0_FREE;
    if (s != L0_BUSY && atomic_compare_exchange_strong(&c->state, &s, L0_BUSY))
      return s;
    if (spin > 64) {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
}

static int l0_listed(ze_command_list_handle_t l, ze_command_list_handle_t *lists, uint32_t n) {
  for (uint32_t j = 0; j < n; j++)
    if (lists[j] == l)
      return 1;
  return 0;
}

void gpd_l0_cmd_execute(ze_command_list_handle_t *lists, uint32_t n, int after) {
  /* l0_cmds is read only once l0_high > 0 was seen (it is set first,
   * by pthread_once, before the first CAS of l0_high). */
  uint32_t high = atomic_load(&l0_high);
  if (high == 0 || !lists)
    return;
  int wake = 0;
  for (uint32_t i = 0; i < high; i++) {
    gpd_l0_cmd_t *c = &l0_cmds[i];
    if (atomic_load_explicit(&c->state, memory_order_relaxed) == L0_FREE)
      continue;
    uint32_t was = l0_take(c);
    if (was == L0_FREE)
      continue;
    if (c->immediate || !l0_listed(c->list, lists, n)) {
      atomic_store(&c->state, was);
      continue;
    }
    if (!after) {
      /* A run still armed: finish it before the list runs again; then our
       * event is reset for the next run. */
      if (was == L0_ARMED) {
        (void)l0_complete(c, 1, 0); /* -> DONE */
        was = l0_take(c);
        if (was == L0_FREE)
          continue;
      }
      if (was == L0_DONE) {
        if (c->owned && gpd_l0.zeEventHostReset)
          (void)gpd_l0.zeEventHostReset(c->event);
        was = L0_APPENDED;
      }
      atomic_store(&c->state, was);
    } else if (was == L0_APPENDED) {
      c->ts = gpd_clock_ns();
      wake |= l0_arm(c);
    } else {
      atomic_store(&c->state, was);
    }
  }
  if (wake)
    gpd_l0_cmd_kick();
}

void gpd_l0_cmd_list_gone(ze_command_list_handle_t list) {
  uint32_t high = atomic_load(&l0_high);
  for (uint32_t i = 0; i < high; i++) {
    gpd_l0_cmd_t *c = &l0_cmds[i];
    if (atomic_load_explicit(&c->state, memory_order_relaxed) == L0_FREE)
      continue;
    uint32_t was = l0_take(c);
    if (was == L0_FREE)
      continue;
    if (c->list != list) {
      atomic_store(&c->state, was);
      continue;
    }
    if (was == L0_ARMED) {
      int immediate = c->immediate;
      (void)l0_complete(c, 1, 0); /* immediate: freed; regular: DONE */
      if (immediate || l0_take(c) == L0_FREE)
        continue;
    }
    gpd_l0_cmd_put(c);
  }
}

void gpd_l0_cmd_event_gone(ze_event_handle_t e) {
  uint32_t high = atomic_load(&l0_high);
  for (uint32_t i = 0; e && i < high; i++) {
    gpd_l0_cmd_t *c = &l0_cmds[i];
    /* BUSY too: a query of the collector in flight must end first, or it
     * could read the event after the application's reset and re-arm it. */
    uint32_t s = atomic_load_explicit(&c->state, memory_order_relaxed);
    if (s != L0_ARMED && s != L0_BUSY)
      continue;
    uint32_t was = l0_take(c);
    if (was == L0_FREE)
      continue;
    if (was != L0_ARMED || c->event != e || c->owned) {
      atomic_store(&c->state, was);
      continue;
    }
    (void)l0_complete(c, 1, 0);
  }
}

/* ------------------------------------------------------------ collector */

static int l0_poll(void) {
  uint32_t high = atomic_load(&l0_high);
  int pending = 0;
  for (uint32_t i = 0; i < high; i++) {
    gpd_l0_cmd_t *c = &l0_cmds[i];
    if (atomic_load_explicit(&c->state, memory_order_acquire) != L0_ARMED)
      continue;
    uint32_t s = L0_ARMED;
    if (!atomic_compare_exchange_strong(&c->state, &s, L0_BUSY))
      continue;
    if (!l0_complete(c, 0, 1))
      pending = 1;
  }
  return pending;
}

static void *l0_collector(void *arg) {
  (void)arg;
  gpd_thread_enter(); /* every L0 call of this thread is the shim's own */
  pthread_mutex_lock(&l0_cv_lock);
  while (l0_thread_state == 1) {
    l0_kicked = 0;
    pthread_mutex_unlock(&l0_cv_lock);
    int pending = gpd_l0_recording() ? l0_poll() : 0;
    pthread_mutex_lock(&l0_cv_lock);
    if (l0_kicked || l0_thread_state != 1)
      continue;
    if (pending || atomic_load(&l0_armed) > 0) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      uint64_t ns = (uint64_t)ts.tv_nsec + L0_POLL_NS;
      ts.tv_sec += (time_t)(ns / 1000000000ull);
      ts.tv_nsec = (long)(ns % 1000000000ull);
      pthread_cond_timedwait(&l0_cv, &l0_cv_lock, &ts);
    } else {
      pthread_cond_wait(&l0_cv, &l0_cv_lock);
    }
  }
  l0_thread_state = 3;
  pthread_cond_broadcast(&l0_cv);
  pthread_mutex_unlock(&l0_cv_lock);
  return NULL;
}

static void l0_start_thread(void) {
  if (__atomic_load_n(&l0_thread_state, __ATOMIC_ACQUIRE) == 1)
    return;
  pthread_mutex_lock(&l0_cv_lock);
  if (l0_thread_state == 0) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l0_cv, &ca);
    pthread_condattr_destroy(&ca);
    /* The collector must not inherit the application's signal mask
     * quirks; it blocks every signal (it never needs one). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    __atomic_store_n(&l0_thread_state, 1, __ATOMIC_RELEASE);
    if (pthread_create(&l0_thread, NULL, l0_collector, NULL) != 0) {
      __atomic_store_n(&l0_thread_state, 0, __ATOMIC_RELEASE);
      GPD_LOG(GPD_LOG_WARN, "Level Zero: cannot start the collector thread; activities stay pending");
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  pthread_mutex_unlock(&l0_cv_lock);
}

void gpd_l0_cmd_shutdown(void) {
  /* Stop the collector and wait for it to leave its poll (at most
   * L0_STOP_WAIT_NS: it must not be inside the loader when the loader's
   * destructor runs; no join, which could block the exit), then complete
   * what is done from here. */
  pthread_mutex_lock(&l0_cv_lock);
  if (l0_thread_state == 1) {
    l0_thread_state = 2;
    pthread_cond_broadcast(&l0_cv);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + L0_STOP_WAIT_NS;
    ts.tv_sec += (time_t)(ns / 1000000000ull);
    ts.tv_nsec = (long)(ns % 1000000000ull);
    while (l0_thread_state == 2 && pthread_cond_timedwait(&l0_cv, &l0_cv_lock, &ts) == 0)
      ;
  }
  pthread_mutex_unlock(&l0_cv_lock);
  int prev = gpd_thread_enter();
  uint32_t high = atomic_load(&l0_high);
  for (uint32_t i = 0; i < high; i++) {
    gpd_l0_cmd_t *c = &l0_cmds[i];
    uint32_t s = L0_ARMED;
    if (atomic_compare_exchange_strong(&c->state, &s, L0_BUSY))
      (void)l0_complete(c, 0, 1);
  }
  gpd_thread_leave(prev);
}

void gpd_l0_cmd_fork_prepare(void) {
  pthread_mutex_lock(&l0_cv_lock);
  pthread_mutex_lock(&l0_lock);
  pthread_mutex_lock(&l0_dev_lock);
}

void gpd_l0_cmd_fork_parent(void) {
  pthread_mutex_unlock(&l0_dev_lock);
  pthread_mutex_unlock(&l0_lock);
  pthread_mutex_unlock(&l0_cv_lock);
}

void gpd_l0_cmd_fork_child(void) {
  pthread_mutex_unlock(&l0_dev_lock);
  pthread_mutex_unlock(&l0_lock);
  pthread_mutex_unlock(&l0_cv_lock);
  /* The parent's commands never complete here and its collector is gone:
   * forget them (their slots are not reused: the high water restarts). */
  if (l0_cmds)
    memset(l0_cmds, 0, (size_t)L0_MAX_CMDS * sizeof *l0_cmds);
  atomic_store(&l0_high, 0);
  atomic_store(&l0_free, 0);
  atomic_store(&l0_armed, 0);
  l0_thread_state = 0;
  l0_kicked = 0;
}
