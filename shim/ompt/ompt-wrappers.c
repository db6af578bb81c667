/* ompt-wrappers.c - the OMPT back end's exported symbols (only these).
 *
 *  - ompt_start_tool: the OpenMP runtime's tool discovery (OpenMP 5.1
 *    section 4.2.1) finds this definition first in a process that
 *    preloads the shim; a program without an OpenMP runtime never calls
 *    it.
 *  - __tgt_target_kernel: libomptarget's entry for a target region launch
 *    (LLVM 16 and later).  Interposed only to note the construct's source
 *    location (ident_t.psource, ";file;function;line;column;;" when the
 *    program was built with -g) for the kernel name; it calls the next
 *    definition with the same arguments and returns its answer.  Without
 *    a next definition (no libomptarget) it answers 1, a failed offload:
 *    the runtime's callers then run the region on the host.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ompt.h"

GPD_EXPORT ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version, const char *runtime_version) {
  return gpd_ompt_start(omp_version, runtime_version, ompt_start_tool);
}

/* LLVM's ident_t (openmp/runtime/src/kmp.h): psource after four int32. */
typedef struct tgt_ident_s {
  int32_t reserved_1, flags, reserved_2, reserved_3;
  const char *psource;
} tgt_ident_t;

typedef int (*tgt_kernel_fn)(tgt_ident_t *, int64_t, int32_t, int32_t, void *, void *);

GPD_EXPORT int __tgt_target_kernel(tgt_ident_t *loc, int64_t device_id, int32_t num_teams, int32_t thread_limit,
                                   void *host_ptr, void *args) {
  static _Atomic(tgt_kernel_fn) next;
  tgt_kernel_fn f = atomic_load_explicit(&next, memory_order_acquire);
  if (!f) {
    f = (tgt_kernel_fn)dlsym(RTLD_NEXT, "__tgt_target_kernel");
    if (!f)
      return 1;
    atomic_store_explicit(&next, f, memory_order_release);
  }
  gpd_ompt_launch_note(loc ? loc->psource : NULL);
  return f(loc, device_id, num_teams, thread_limit, host_ptr, args);
}
