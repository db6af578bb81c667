/* level0-wrappers.c - the Level Zero back end's only exported symbol and
 * its constructor.
 *
 * Recording goes through the loader's tracing layer, not through
 * interposed API symbols: the layer sees every call however the program
 * found the function.  Two things must happen from outside the loader:
 *
 *  - ZE_ENABLE_TRACING_LAYER=1 before the loader initializes: the loader
 *    reads it in zeInit (loader context init, Level Zero loader 1.8), long
 *    after every constructor; this constructor (priority 101, before the
 *    shim's own constructor starts the connection thread, so setenv races
 *    no getenv) sets it unless the user set it.
 *  - a tracer can only be created once zeInit has run (zelTracerCreate
 *    answers ZE_RESULT_ERROR_UNINITIALIZED before), so zeInit is
 *    interposed: it calls the next definition and then sets the tracer up
 *    (gpd_l0_on_init).  A program that reaches zeInit only through
 *    dlsym(handle, "zeInit") is not profiled (logged nowhere: it is not
 *    seen); see docs/LEVEL0.md.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "level0.h"

static int l0_env_false(const char *v) {
  return strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "off") == 0;
}

__attribute__((constructor(101))) static void l0_ctor(void) {
  const char *dis = getenv("GPUPROF_DISABLE");
  if (dis && *dis && strcmp(dis, "0") != 0)
    return;
  const char *off = getenv("GPUPROF_LEVEL0");
  if (off && l0_env_false(off))
    return;
  const char *v = getenv("ZE_ENABLE_TRACING_LAYER");
  if (v && *v && l0_env_false(v)) {
    gpd_l0_layer_env = -1;
    return;
  }
  if (!v || !*v)
    setenv("ZE_ENABLE_TRACING_LAYER", "1", 1);
  gpd_l0_layer_env = 1;
}

typedef ze_result_t(ZE_APICALL *l0_init_fn)(ze_init_flags_t);

/** zeInit, interposed: the application's call goes to the next definition
 *  unchanged; afterwards the back end creates its tracer (once). */
GPD_EXPORT ze_result_t ZE_APICALL zeInit(ze_init_flags_t flags) {
  static _Atomic(l0_init_fn) next;
  l0_init_fn f = atomic_load_explicit(&next, memory_order_acquire);
  if (!f) {
    f = (l0_init_fn)dlsym(RTLD_NEXT, "zeInit");
    atomic_store_explicit(&next, f, memory_order_release);
  }
  if (!f)
    return ZE_RESULT_ERROR_UNINITIALIZED;
  ze_result_t r = f(flags);
  gpd_l0_on_init((void *)f, r);
  return r;
}
