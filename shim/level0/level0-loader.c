/* level0-loader.c - what every file of the Level Zero back end reads and
 * none of them owns alone: the loader's functions (resolved in the loader
 * module that served the application's zeInit), the back end's state word
 * and the constructor's decision about the tracing layer.  Below
 * level0-api.c (which sets the back end up), level0-tracer.c and
 * level0-commands.c; it calls none of them.
 */
#include <dlfcn.h>
#include <stddef.h>

#include "level0.h"

gpd_l0_api_t gpd_l0;

/* 0 not started, 1 recording, 2 disabled (gpd_l0_recording, level0.h) */
_Atomic int gpd_l0__state;

int gpd_l0_layer_env;

int gpd_l0_loader_resolve(void *next_init, const char **loader, const char **missing) {
  Dl_info info;
  void *h = NULL;
  *missing = NULL;
  if (dladdr(next_init, &info) && info.dli_fname)
    h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (!h)
    return -1;
  *loader = info.dli_fname;
#define GPD_L0_RESOLVE(name, args)                                                                             \
  gpd_l0.name = (ze_result_t(ZE_APICALL *) args)dlsym(h, #name);                                               \
  if (!gpd_l0.name && !*missing)                                                                               \
    *missing = #name;
  GPD_L0_FNS(GPD_L0_RESOLVE)
#undef GPD_L0_RESOLVE
  dlclose(h); /* RTLD_NOLOAD took a reference; the loader stays loaded */
  return 0;
}
