/* ompt-api.c - the OMPT tool's conversation with the OpenMP runtime.
 *
 * Start (OpenMP 5.1 section 4.2.1, "Determining Whether a First-Party
 * Tool Should be Initialized"): an OpenMP runtime that supports OMPT calls
 * ompt_start_tool once, at its own initialization, and finds ours first
 * (the shim is preloaded).  Nothing happens in a program without an
 * OpenMP runtime.  The answer:
 *   - NULL when the shim will not record (GPUPROF_DISABLE=1,
 *     GPUPROF_OMPT=0, or no daemon listening) or when no libomptarget is
 *     loaded (a host-only OpenMP program): the runtime then goes on to the
 *     tools named in OMP_TOOL_LIBRARIES itself, as without the shim;
 *   - else our initializer/finalizer.  A program that names its own tools
 *     in OMP_TOOL_LIBRARIES keeps them: each listed library is opened and
 *     its ompt_start_tool called (the first one that answers is kept, as
 *     the runtime would do).  Our initializer then runs the chained tool's
 *     with a lookup whose "ompt_set_callback" is ours: a callback it sets
 *     for an event we also use is kept and called by ours after our work
 *     (ompt-target.c); any other passes to the runtime unchanged.  The
 *     finalizer calls the chained tool's.
 * The runtime holds one callback per event, so a tool that asks for one
 * of our events through some other path than the lookup it was given
 * (none known) would replace ours.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "gpuprof/log.h"
#include "ompt.h"

static ompt_start_tool_result_t *tool_chained; /* the chained tool's answer */
static ompt_function_lookup_t tool_rt_lookup;   /* the runtime's lookup */
static ompt_set_callback_t tool_rt_set;         /* the runtime's ompt_set_callback */
static _Atomic int tool_state = -1;             /* -1 not started, 1 running, 0 off */
static char tool_why[160];
static int tool_log_chain;

static void tool_off(const char *why) {
  snprintf(tool_why, sizeof tool_why, "%s", why);
  atomic_store(&tool_state, 0);
  gpd_shim_backend_status(GPD_API_OMPT, 0, 0, why);
}

/* The chained tool's ompt_set_callback: our events are kept for
 * forwarding, the rest go to the runtime. */
static ompt_set_result_t tool_chain_set(ompt_callbacks_t event, ompt_callback_t cb) {
  if (gpd_ompt_target_owns(event)) {
    gpd_ompt_target_chain(event, cb);
    return ompt_set_always;
  }
  return tool_rt_set(event, cb);
}

static ompt_interface_fn_t tool_chain_lookup(const char *name) {
  if (strcmp(name, "ompt_set_callback") == 0)
    return (ompt_interface_fn_t)tool_chain_set;
  return tool_rt_lookup(name);
}

static int tool_initialize(ompt_function_lookup_t lookup, int initial_device_num, ompt_data_t *tool_data) {
  (void)tool_data;
  tool_rt_lookup = lookup;
  tool_rt_set = (ompt_set_callback_t)lookup("ompt_set_callback");
  if (!tool_rt_set) {
    tool_off("the OpenMP runtime has no ompt_set_callback");
    return 0;
  }
  int n = gpd_ompt_target_register(tool_rt_set);
  if (tool_chained && tool_chained->initialize &&
      !tool_chained->initialize(tool_chain_lookup, initial_device_num, &tool_chained->tool_data))
    tool_chained = NULL; /* it declined: no finalizer (5.1 4.2.3) */
  if (n < 4) {
    /* off: the chained tool's callbacks for our events go to the runtime
     * themselves */
    gpd_ompt_target_unchain(tool_rt_set);
    tool_off("the OpenMP runtime has no target callbacks (OpenMP 5.1 EMI)");
    return tool_chained != NULL; /* stay for the chained tool's sake */
  }
  gpd_shim_vendor_module("libomptarget"); /* and the plugins of LLVM < 19 (libomptarget.rtl.*) */
  gpd_shim_vendor_module("libomp.so");
  atomic_store(&tool_state, 1);
  gpd_shim_backend_status(GPD_API_OMPT, 1, 0, NULL);
  return 1;
}

static void tool_finalize(ompt_data_t *tool_data) {
  (void)tool_data;
  if (tool_chained && tool_chained->finalize)
    tool_chained->finalize(&tool_chained->tool_data);
}

/* 1 when `sym` lies in the library of `handle` (not in one it depends on,
 * such as the runtime's own weak ompt_start_tool, nor in the shim). */
static int tool_sym_in(void *handle, const void *sym) {
  struct link_map *lm = NULL;
  Dl_info di;
  return sym && dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && dladdr(sym, &di) && di.dli_fname &&
         lm->l_name && strcmp(di.dli_fname, lm->l_name) == 0;
}

/* Open the tools of OMP_TOOL_LIBRARIES (a ':' list) in order; keep the
 * first whose ompt_start_tool answers. */
static void tool_chain_start(unsigned int omp_version, const char *runtime_version,
                             ompt_start_tool_result_t *(*self)(unsigned int, const char *)) {
  const char *list = getenv("OMP_TOOL_LIBRARIES");
  if (!list || !*list)
    return;
  char *copy = strdup(list), *save = NULL;
  for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p; p = strtok_r(NULL, ":", &save)) {
    void *h = dlopen(p, RTLD_LAZY | RTLD_LOCAL);
    if (!h)
      continue;
    ompt_start_tool_result_t *(*start)(unsigned int, const char *) =
        (ompt_start_tool_result_t * (*)(unsigned int, const char *)) dlsym(h, "ompt_start_tool");
    if (!start || start == self || !tool_sym_in(h, (const void *)start)) { /* not the shim itself */
      dlclose(h);
      continue;
    }
    ompt_start_tool_result_t *r = start(omp_version, runtime_version);
    if (r) {
      tool_chained = r;
      GPD_LOG_ONCE(tool_log_chain, GPD_LOG_INFO, "OMPT: chained to the tool %s", p);
      break;
    }
  }
  free(copy);
}

static int tool_is_offload(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  return info->dlpi_name && strstr(info->dlpi_name, "libomptarget") != NULL;
}

ompt_start_tool_result_t *gpd_ompt_start(unsigned int omp_version, const char *runtime_version,
                                         ompt_start_tool_result_t *(*self)(unsigned int, const char *)) {
  static ompt_start_tool_result_t mine = {tool_initialize, tool_finalize, {0}};
  const char *env = getenv("GPUPROF_OMPT");
  if (env && strcmp(env, "0") == 0)
    return NULL;
  if (!gpd_shim_may_record())
    return NULL;
  /* A program without the offload library (host-only OpenMP) keeps a
   * runtime with no tool: an active tool makes libomp keep OMPT state in
   * every parallel region, for nothing the shim records. */
  if (!dl_iterate_phdr(tool_is_offload, NULL))
    return NULL;
  tool_chain_start(omp_version, runtime_version, self);
  return &mine;
}

static int tool_status(char *why, size_t n) {
  int s = atomic_load(&tool_state);
  if (s != 0)
    return s;
  if (why && n)
    snprintf(why, n, "%s", tool_why);
  return 0;
}

const gpd_backend_t gpd_backend_ompt = {
    .name = "ompt",
    .api = GPD_API_OMPT,
    .status = tool_status,
};
