/* nvtx-wrappers.c - what the NVTX back end exports from libgpuprof.so.
 *
 * InitializeInjectionNvtx2: an NVTX v3 client (the header-only NVTX of a
 * program or library) dlopens the library named by NVTX_INJECTION64_PATH
 * at its first NVTX call and calls this function once per client instance
 * with that instance's export-table getter (nvtx3/nvtxDetail/nvtxInit.h).
 * The NVTX back end's init (nvtx-api.c) points the variable at the shim.
 */
#include <stdint.h>

#include "nvtx-internal.h"

/** NVTX entry point: 1 attached (NVTX then calls the shim's callbacks), 0
 *  not (NVTX makes every call a no-op). */
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t)) {
  return gpd_nvtx_attach(get_export_table);
}
