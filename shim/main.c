/* main.c - libgpuprof.so's constructor, destructor and fork handlers:
 * they only wire the shim's parts together (each part's init, atfork and
 * stop hooks, in order).
 *
 * Life cycle: the constructor starts the connection thread (conn.c) and
 * waits at most GPD_SHIM_CTOR_WAIT_MS for it to register; the app then runs
 * on, profiled once a region is attached (gpd_shim__attach, attach.c).  A
 * region is never unmapped while the process runs (threads and vendor
 * callbacks may be writing into it); only the fork child drops the
 * parent's.
 *
 * Fork: the prepare handler takes every lock of the back ends and of the
 * shim (none is ever held while another is taken, so the order is free),
 * parent and child release them; the child then drops the parent's region
 * and connection and does not start a connection thread: the first shim
 * call that asks whether the shim is active (gpd_shim_active: every
 * wrapper and callback does, before any work) starts it and waits for its
 * first attempt, as the constructor does.  A child that only execs or
 * exits never connects, registers or waits.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "gpuprof/clock.h"
#include "gpuprof/log.h"
#include "internal.h"
#include "module.h"

/* The built back ends (backends.h), registered with shim.c at start
 * (control.c and policy.c dispatch through gpd_shim__backends), and how
 * many. */
static const gpd_backend_t *const backends[] = {GPD_BACKENDS NULL};
static size_t shim_nbackends;

static void backends_get(void) {
  gpd_shim__backends_register(backends);
  for (shim_nbackends = 0; backends[shim_nbackends]; shim_nbackends++)
    ;
}

/* ------------------------------------------------------------------ fork */

static void atfork_prepare(void) {
  /* first: no thread may be left inside libunwind (capture-unwind.c) */
  gpd_capture_unwind_atfork_prepare();
  for (size_t i = 0; i < shim_nbackends; i++)
    if (backends[i]->fork_prepare)
      backends[i]->fork_prepare();
  gpd_shim__status_atfork_prepare();
  gpd_shim__attach_atfork_prepare();
  gpd_conn_atfork_prepare();
  gpd_module_atfork_prepare();
}

static void atfork_parent(void) {
  gpd_module_atfork_parent();
  gpd_conn_atfork_parent();
  gpd_shim__attach_atfork_parent();
  gpd_shim__status_atfork_parent();
  for (size_t i = shim_nbackends; i-- > 0;)
    if (backends[i]->fork_parent)
      backends[i]->fork_parent();
  gpd_capture_unwind_atfork_parent();
}

static void atfork_child(void) {
  /* Locks taken in prepare by this thread, the only one left. */
  gpd_capture_unwind_atfork_child();
  gpd_shim__attach_atfork_child();
  gpd_shim__status_atfork_child();
  for (size_t i = shim_nbackends; i-- > 0;)
    if (backends[i]->fork_child)
      backends[i]->fork_child();
  /* The child is a new process: drop the parent's region and connection,
   * reset ids and tables; it registers as itself when it first needs to. */
  gpd_shim__attach_forget();
  /* ids, tables, the start time (shim.c); from here on gpd_shim_active
   * answers 0 without starting a connection until the last step */
  gpd_shim__atfork_child();
  gpd_capture_atfork_child();
  gpd_strings_atfork_child();
  gpd_conn_atfork_child();
  gpd_shim__control_atfork_child();
  gpd_shim__policy_atfork_child();
  gpd_cpu_sampler_atfork_child();
  gpd_shim__atfork_lazy(gpd_conn_start);
}

/* ------------------------------------------------------- ctor and dtor */

/* Record mode: GPUPROF_RECORD=1 (set by `gpuprof record`) makes a full
 * ring wait for room up to GPUPROF_RECORD_WAIT_MS (default
 * GPD_RECORD_WAIT_MS; 0 never waits; capped) before dropping. */
static uint64_t record_wait_ms(void) {
  const char *rec = getenv("GPUPROF_RECORD");
  if (!rec || strcmp(rec, "1") != 0)
    return 0;
  const char *w = getenv("GPUPROF_RECORD_WAIT_MS");
  if (!w || !*w)
    return GPD_RECORD_WAIT_MS;
  char *end;
  errno = 0;
  unsigned long long ms = strtoull(w, &end, 10);
  if (errno || end == w || *end || w[0] == '-') {
    GPD_WARN("GPUPROF_RECORD_WAIT_MS=%s is not a number of ms; using %d", w, GPD_RECORD_WAIT_MS);
    return GPD_RECORD_WAIT_MS;
  }
  return ms > GPD_RECORD_WAIT_MAX_MS ? GPD_RECORD_WAIT_MAX_MS : ms;
}

__attribute__((constructor)) static void shim_ctor(void) {
  gpd_shim_state_t *g = &gpd_shim__g;
  backends_get();
  gpd_log_init("gpuprof");
  gpd_shim__stats_init();
  g->start_ns = gpd_clock_ns();
  const char *dis = getenv("GPUPROF_DISABLE");
  if (dis && *dis && strcmp(dis, "0") != 0) {
    atomic_store(&g->disabled, 1);
    return;
  }
  const char *sock = getenv("GPUPROF_SOCKET");
  snprintf(g->socket_path, sizeof g->socket_path, "%s",
           (sock && *sock) ? sock : "/run/gpuprofd/gpuprofd.sock");
  gpd_thread_init();
  gpd_thread_record_wait(record_wait_ms() * 1000000ull);
  gpd_capture_init();
  gpd_strings_init();
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  (void)gpd_conn_start(GPD_SHIM_CTOR_WAIT_MS);
  gpd_thread_timer_hooks(gpd_cpu_sampler_thread_start, gpd_cpu_sampler_thread_stop);
  gpd_cpu_sampler_init();
  for (size_t i = 0; i < shim_nbackends; i++) {
    int err = backends[i]->init ? backends[i]->init() : 0;
    if (err)
      GPD_DEBUG("%s back end disabled (%d)", backends[i]->name, err);
  }
}

__attribute__((destructor)) static void shim_dtor(void) {
  if (atomic_load(&gpd_shim__g.disabled))
    return;
  gpd_cpu_sampler_stop();
  for (size_t i = shim_nbackends; i-- > 0;)
    if (backends[i]->shutdown)
      backends[i]->shutdown();
  gpd_shim__stats_print();
  gpd_thread_exit_current();
  gpd_conn_stop();
}
