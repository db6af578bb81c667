/* ompt.h - internals of the shim's OpenMP target offload back end: an OMPT
 * tool (OpenMP 5.1, "Tool Interfaces") inside libgpuprof.so.
 *
 *   ompt-wrappers.c   the exported symbols: ompt_start_tool (the runtime's
 *                     tool discovery) and __tgt_target_kernel (the
 *                     construct's source location and entry, for names)
 *   ompt-api.c        talks to the runtime: start, chaining to the tools
 *                     of OMP_TOOL_LIBRARIES, callback registration, the
 *                     back end's status
 *   ompt-target.c     the target callbacks (EMI forms): per-thread state
 *                     of the construct in progress, INVOKE/ACTIVITY pushes,
 *                     the bracket a vendor back end claims (count once)
 *   ompt-translate.c  OMPT kinds -> vendor-neutral op/subkind, construct
 *                     labels, kernel names
 *
 * Device times: the runtimes seen so far (LLVM 19's libomptarget) offer no
 * OMPT device tracing (ompt_start_trace is NULL from every device's
 * lookup), so an operation's time is the host interval between its
 * begin and end callbacks (GPD_ACTIVITY_HOST_TIME); docs/OMPT.md.
 */
#ifndef GPUPROF_SHIM_OMPT_H
#define GPUPROF_SHIM_OMPT_H

#include <omp-tools.h>
#include <stdint.h>

#include "../internal.h"

/** The construct's source location as the compiler wrote it for the
 *  launch (ident_t.psource of __tgt_target_kernel: ";file;function;line;
 *  column;;", or NULL), set by the wrapper on the launching thread just
 *  before the runtime's target callback reads it. */
void gpd_ompt_launch_note(const char *psource);

/** ompt_start_tool's body (ompt-wrappers.c exports it).  `self` is the
 *  shim's own ompt_start_tool, passed by the wrapper: a tool of
 *  OMP_TOOL_LIBRARIES whose ompt_start_tool is `self` (the shim named
 *  there again) is skipped when chaining. */
ompt_start_tool_result_t *gpd_ompt_start(unsigned int omp_version, const char *runtime_version,
                                         ompt_start_tool_result_t *(*self)(unsigned int, const char *));

/** Register the target callbacks through `set` (the runtime's, or the
 *  chaining one).  Returns how many were accepted. */
int gpd_ompt_target_register(ompt_set_callback_t set);
/** The tool's own callbacks, and what a chained tool registered for the
 *  same events (forwarded after ours; NULL = none). */
void gpd_ompt_target_chain(ompt_callbacks_t event, ompt_callback_t cb);
/** 1 when `event` is one of ours (a chained tool's callback for it is
 *  forwarded by ours instead of replacing it). */
int gpd_ompt_target_owns(ompt_callbacks_t event);
/** The tool is off after all: register the chained tool's callbacks for
 *  our events with the runtime through `set` (replacing ours) and forget
 *  them.  Initialization only. */
void gpd_ompt_target_unchain(ompt_set_callback_t set);

/* ---- translate (ompt-translate.c); pure, any thread ---- */

/** op (gpd_op_t) and subkind of a data operation; GPD_OP_NONE for the
 *  ones that move nothing (associate, disassociate). */
unsigned gpd_ompt_data_op(ompt_target_data_op_t t, unsigned *subkind);
/** The label of the context node of a construct kind: "<omp target>",
 *  "<omp target enter data>", "<omp target exit data>",
 *  "<omp target update>"; "<omp target>" for unknown kinds. */
const char *gpd_ompt_label(ompt_target_t kind);
/** Write a kernel name for a target region into buf (n bytes):
 *  "omp target region @ FILE:LINE" from psource when it names a line,
 *  else "omp target region @ MODULE+0xOFFSET" of codeptr_ra, else
 *  "omp target region". */
void gpd_ompt_kernel_name(const char *psource, const void *codeptr_ra, char *buf, size_t n);

#endif
