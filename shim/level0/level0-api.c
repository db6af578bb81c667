/* level0-api.c - the Level Zero back end's set-up: the tracer, the
 * back-end ops table and its status (the loader's functions and the
 * back end's state word are level0-loader.c's, below this file, the
 * tracer and the collector).
 *
 * Set-up happens once, after the application's first zeInit (the zeInit
 * wrapper calls gpd_l0_on_init): the loader that served it is the module
 * of the next zeInit definition; the back end looks its functions up there
 * (dlopen RTLD_NOLOAD + dlsym: the shim does not link libze_loader),
 * checks that the driver gives what completion needs (device properties
 * and zeDeviceGetGlobalTimestamps on every device), creates a tracer
 * (zelTracerCreate; fails unless the loader loaded its tracing layer),
 * installs the callbacks of level0-tracer.c and enables it.  Each failure
 * disables the back end with a STATUS record saying why (`gpuprof ps`:
 * "Back ends disabled"); the application's zeInit result is never changed.
 *
 * Exit: an atexit handler registered at set-up (so it runs before any
 * library destructor, the loader's included) disables the tracer and
 * pushes what completed.  The tracer is not destroyed: the loader's own
 * exit tears it down, and a tracer must be disabled before it is
 * destroyed anyway.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backends.h"
#include "gpuprof/error.h"
#include "gpuprof/log.h"
#include "level0.h"

static pthread_mutex_t l0_init_lock = PTHREAD_MUTEX_INITIALIZER;
static zel_tracer_handle_t l0_tracer;
static char l0_why[200];
static int l0_log_off;

void gpd_l0_disable(int code, const char *why) {
  int was = atomic_exchange(&gpd_l0__state, 2);
  if (was == 2)
    return;
  snprintf(l0_why, sizeof l0_why, "%s", why);
  if (was == 1 && l0_tracer && gpd_l0.zelTracerSetEnabled)
    (void)gpd_l0.zelTracerSetEnabled(l0_tracer, 0);
  GPD_LOG_ONCE(l0_log_off, GPD_LOG_WARN, "Level Zero: %s; not profiled", why);
  gpd_shim_backend_status(GPD_API_LEVEL0, 0, code, why);
}

static void l0_atexit(void) {
  if (atomic_load(&gpd_l0__state) != 1)
    return;
  if (l0_tracer && gpd_l0.zelTracerSetEnabled)
    (void)gpd_l0.zelTracerSetEnabled(l0_tracer, 0);
  gpd_l0_cmd_shutdown();
  atomic_store(&gpd_l0__state, 2);
}

/* Every device of every driver: properties with the timer rate and a
 * global timestamp.  0 or the failing result, with its call in *what. */
static ze_result_t l0_check_devices(const char **what) {
  uint32_t nd = 0;
  ze_result_t r = gpd_l0.zeDriverGet(&nd, NULL);
  *what = "zeDriverGet";
  if (r != ZE_RESULT_SUCCESS)
    return r;
  ze_driver_handle_t drv[16];
  if (nd > 16)
    nd = 16;
  if ((r = gpd_l0.zeDriverGet(&nd, drv)) != ZE_RESULT_SUCCESS)
    return r;
  for (uint32_t i = 0; i < nd; i++) {
    uint32_t n = 0;
    *what = "zeDeviceGet";
    if ((r = gpd_l0.zeDeviceGet(drv[i], &n, NULL)) != ZE_RESULT_SUCCESS)
      return r;
    ze_device_handle_t dev[64];
    if (n > 64)
      n = 64;
    if ((r = gpd_l0.zeDeviceGet(drv[i], &n, dev)) != ZE_RESULT_SUCCESS)
      return r;
    for (uint32_t j = 0; j < n; j++) {
      ze_device_properties_t p;
      memset(&p, 0, sizeof p);
      p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2;
      *what = "zeDeviceGetProperties";
      if ((r = gpd_l0.zeDeviceGetProperties(dev[j], &p)) != ZE_RESULT_SUCCESS)
        return r;
      uint64_t host = 0, ticks = 0;
      *what = "zeDeviceGetGlobalTimestamps";
      if ((r = gpd_l0.zeDeviceGetGlobalTimestamps(dev[j], &host, &ticks)) != ZE_RESULT_SUCCESS)
        return r;
      (void)gpd_l0_device_index(dev[j]); /* indices in driver order */
    }
  }
  return ZE_RESULT_SUCCESS;
}

static void l0_setup(void *next_init, ze_result_t res) {
  char why[200];
  if (gpd_l0_layer_env == 0 || atomic_load(&gpd_shim__g.disabled)) {
    atomic_store(&gpd_l0__state, 2); /* off by request: no status */
    return;
  }
  if (res != ZE_RESULT_SUCCESS) {
    snprintf(why, sizeof why, "zeInit failed (0x%x): no usable Level Zero driver", (unsigned)res);
    gpd_l0_disable((int)res, why);
    return;
  }
  if (gpd_l0_layer_env < 0) {
    gpd_l0_disable(GPD_ENOVENDOR, "ZE_ENABLE_TRACING_LAYER=0 was set: no tracing layer");
    return;
  }
  const char *loader = NULL, *missing = NULL;
  if (gpd_l0_loader_resolve(next_init, &loader, &missing) < 0) {
    gpd_l0_disable(GPD_ENOVENDOR, "the Level Zero loader that served zeInit cannot be opened");
    return;
  }
  if (missing) {
    snprintf(why, sizeof why, "the Level Zero loader has no %s", missing);
    gpd_l0_disable(GPD_ENOVENDOR, why);
    return;
  }
  gpd_shim_vendor_module("libze_tracing_layer.so");
  gpd_shim_vendor_module("libze_validation_layer.so");
  const char *what = NULL;
  ze_result_t r = l0_check_devices(&what);
  if (r != ZE_RESULT_SUCCESS) {
    snprintf(why, sizeof why, "%s failed (0x%x): the driver cannot time device work", what, (unsigned)r);
    gpd_l0_disable((int)r, why);
    return;
  }
  zel_tracer_desc_t d = {ZEL_STRUCTURE_TYPE_TRACER_DESC, NULL, &gpd_l0};
  r = gpd_l0.zelTracerCreate(&d, &l0_tracer);
  if (r != ZE_RESULT_SUCCESS) {
    snprintf(why, sizeof why,
             "zelTracerCreate failed (0x%x): the loader's tracing layer is not loaded "
             "(ZE_ENABLE_TRACING_LAYER was not set before the loader initialized?)",
             (unsigned)r);
    l0_tracer = NULL;
    gpd_l0_disable((int)r, why);
    return;
  }
  static zel_core_callbacks_t pro, epi;
  gpd_l0_tracer_callbacks(&pro, &epi);
  if ((r = gpd_l0.zelTracerSetPrologues(l0_tracer, &pro)) != ZE_RESULT_SUCCESS ||
      (r = gpd_l0.zelTracerSetEpilogues(l0_tracer, &epi)) != ZE_RESULT_SUCCESS) {
    snprintf(why, sizeof why, "setting the tracer's callbacks failed (0x%x)", (unsigned)r);
    gpd_l0_disable((int)r, why);
    return;
  }
  atomic_store_explicit(&gpd_l0__state, 1, memory_order_release);
  if ((r = gpd_l0.zelTracerSetEnabled(l0_tracer, 1)) != ZE_RESULT_SUCCESS) {
    snprintf(why, sizeof why, "zelTracerSetEnabled failed (0x%x)", (unsigned)r);
    gpd_l0_disable((int)r, why);
    return;
  }
  atexit(l0_atexit);
  GPD_INFO("Level Zero: tracer enabled (loader %s)", loader);
  gpd_shim_backend_status(GPD_API_LEVEL0, 1, 0, NULL);
}

void gpd_l0_on_init(void *next_init, ze_result_t res) {
  if (atomic_load_explicit(&gpd_l0__state, memory_order_acquire) != 0)
    return;
  int prev = gpd_thread_enter();
  pthread_mutex_lock(&l0_init_lock);
  if (atomic_load(&gpd_l0__state) == 0)
    l0_setup(next_init, res);
  pthread_mutex_unlock(&l0_init_lock);
  gpd_thread_leave(prev);
}

/* ------------------------------------------------------------ ops table */

static int l0_status(char *why, size_t n) {
  int s = atomic_load(&gpd_l0__state);
  if (s == 1)
    return 1;
  if (s == 0)
    return -1;
  if (why && n)
    snprintf(why, n, "%s", l0_why);
  return 0;
}

static void l0_fork_prepare(void) {
  pthread_mutex_lock(&l0_init_lock);
  gpd_l0_cmd_fork_prepare();
}
static void l0_fork_parent(void) {
  gpd_l0_cmd_fork_parent();
  pthread_mutex_unlock(&l0_init_lock);
}
static void l0_fork_child(void) {
  gpd_l0_cmd_fork_child();
  pthread_mutex_unlock(&l0_init_lock);
}

/* Control from the daemon (shim/control.c, connection thread).  Level
 * Zero is always traced once the tracer runs, so TRACE is a no-op ack
 * then; -ENOTSUP before that and for every other kind. */
static int l0_control(const gpd_control_t *c, uint32_t *targets, char *msg, size_t n) {
  (void)targets;
  if (c->kind != GPD_CONTROL_TRACE || atomic_load(&gpd_l0__state) != 1)
    return -ENOTSUP;
  snprintf(msg, n, "always traced");
  return 0;
}

/** The Level Zero back end for the shim core (backends.h).  No init hook:
 *  the tracing layer is requested by level0-wrappers.c's constructor and
 *  the tracer is created after the application's zeInit. */
const gpd_backend_t gpd_backend_level0 = {
    .name = "level0",
    .api = GPD_API_LEVEL0,
    .fork_prepare = l0_fork_prepare,
    .fork_parent = l0_fork_parent,
    .fork_child = l0_fork_child,
    .status = l0_status,
    .control = l0_control,
};
