/* backends.h - vendor back ends of the shim, perf-style: when a back end
 * is not built, static inline stubs stand in, so shim core call sites carry
 * no #ifdef.  Each init is called once from the shim constructor (after the
 * first connection attempt, connected or not); each fini from the shim
 * destructor / atexit.  A back end that fails disables itself, reports
 * gpd_shim_backend_status(api, 0, code, why) and returns a negative code;
 * it never harms the application.
 */
#ifndef GPUPROF_SHIM_BACKENDS_H
#define GPUPROF_SHIM_BACKENDS_H

/* OpenCL works by symbol interposition (shim/opencl/opencl-wrappers.c):
 * nothing to initialize beyond its lazy dlsym(RTLD_NEXT) lookups. */

#ifdef GPD_HAVE_CUPTI
int gpd_cupti_init(void);
void gpd_cupti_fini(void);
#else
static inline int gpd_cupti_init(void) { return 0; }
static inline void gpd_cupti_fini(void) {}
#endif

#endif
