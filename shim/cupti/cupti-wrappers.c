/* cupti-wrappers.c - what the CUDA back end exports from libgpuprof.so.
 *
 * InitializeInjection: the CUDA driver dlopens the library named by
 * CUDA_INJECTION64_PATH during cuInit and calls this function once (the
 * official CUPTI injection interface, see the CUPTI documentation,
 * "CUPTI Injection").  `gpuprof record` and gpd_cupti_init() point that
 * variable at libgpuprof.so.
 */
#include <stdlib.h>
#include <string.h>

int gpd_cupti_start(void);

/** Driver entry point: start the CUDA back end.  Returns 1 (the driver
 *  ignores failures; a failure has disabled the back end already). */
__attribute__((visibility("default"))) int InitializeInjection(void) {
  const char *dis = getenv("GPUPROF_DISABLE"); /* the shim's off switch */
  const char *cuda = getenv("GPUPROF_CUDA");
  if ((dis && *dis && strcmp(dis, "0") != 0) || (cuda && *cuda == '0')) return 1;
  (void)gpd_cupti_start();
  return 1;
}
