/* stall.c - the one table from vendor stall-reason names to the
 * vendor-neutral GINST:STL_* metrics of the HPCToolkit manual (chapter
 * "GPU-accelerated applications", Table 8.7).
 *
 * CUPTI's PC Sampling API (CUDA 11+) names reasons like
 * "smsp__pcsamp_warps_issue_stalled_long_scoreboard"; older activity-API
 * names ("memory_dependency", ...) are accepted too.  The grouping follows
 * the reasons' meaning in NVIDIA's Nsight Compute stall descriptions.
 */
#include <string.h>

#include "gpu-analysis.h"

static const struct {
  const char *vendor;
  gpd_stall_t stall;
} stall_table[] = {
    /* PC Sampling API names (prefix and "_not_issued" stripped) */
    {"selected", GPD_STALL_NONE},
    {"branch_resolving", GPD_STALL_IFET},
    {"no_instructions", GPD_STALL_IFET},
    {"imc_miss", GPD_STALL_CMEM},
    {"wait", GPD_STALL_IDEP},             /* fixed-latency dependency */
    {"short_scoreboard", GPD_STALL_IDEP}, /* MIO (shared memory, special math) result */
    {"long_scoreboard", GPD_STALL_GMEM},  /* L1TEX (global, local, texture) result */
    {"drain", GPD_STALL_GMEM},            /* memory stores draining at exit */
    {"lg_throttle", GPD_STALL_MTHR},      /* local/global memory queue full */
    {"mio_throttle", GPD_STALL_MTHR},
    {"tex_throttle", GPD_STALL_TMEM},
    {"math_pipe_throttle", GPD_STALL_PIPE},
    {"dispatch_stall", GPD_STALL_PIPE},
    {"tensor", GPD_STALL_PIPE},
    {"gmma", GPD_STALL_PIPE},
    {"barrier", GPD_STALL_SYNC},
    {"membar", GPD_STALL_SYNC},
    {"not_selected", GPD_STALL_NSEL},
    {"sleeping", GPD_STALL_SLP},
    {"misc", GPD_STALL_OTHR},
    /* activity-API (CUpti_ActivityPCSamplingStallReason) names */
    {"none", GPD_STALL_NONE},
    {"inst_fetch", GPD_STALL_IFET},
    {"exec_dependency", GPD_STALL_IDEP},
    {"memory_dependency", GPD_STALL_GMEM},
    {"texture", GPD_STALL_TMEM},
    {"sync", GPD_STALL_SYNC},
    {"constant_memory_dependency", GPD_STALL_CMEM},
    {"pipe_busy", GPD_STALL_PIPE},
    {"memory_throttle", GPD_STALL_MTHR},
    {"other", GPD_STALL_OTHR},
};

gpd_stall_t gpd_stall_from_vendor(const char *name) {
  static const char prefix[] = "smsp__pcsamp_warps_issue_stalled_";
  static const char subset[] = "_not_issued";
  if (name == NULL)
    return GPD_STALL_OTHR;
  if (strcmp(name, GPD_SASS_EXEC_NAME) == 0)
    return GPD_STALL_EXEC_COUNT;
  if (strncmp(name, prefix, sizeof prefix - 1) == 0)
    name += sizeof prefix - 1;
  size_t n = strlen(name);
  if (n > sizeof subset - 1 && strcmp(name + n - (sizeof subset - 1), subset) == 0)
    return GPD_STALL__COUNT;
  for (size_t i = 0; i < sizeof stall_table / sizeof stall_table[0]; i++)
    if (strcmp(stall_table[i].vendor, name) == 0)
      return stall_table[i].stall;
  return GPD_STALL_OTHR;
}

_Static_assert(GPD_M_GINST_STL_SLP - GPD_M_GINST_STL_NONE == GPD_STALL_SLP &&
                   GPD_STALL__COUNT == GPD_STALL_SLP + 1,
               "stall order = metric order");

const char *gpd_stall_name(gpd_stall_t s) {
  if ((unsigned)s >= GPD_STALL__COUNT)
    s = GPD_STALL_OTHR;
  return gpd_metric_desc(GPD_M_GINST_STL_NONE + s)->name;
}

const char *gpd_stall_desc(gpd_stall_t s) {
  if ((unsigned)s >= GPD_STALL__COUNT)
    s = GPD_STALL_OTHR;
  return gpd_metric_desc(GPD_M_GINST_STL_NONE + s)->desc;
}
