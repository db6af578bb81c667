/* advisor-suggest.c - the advisor's list of suggestions: what the code
 * optimizers (advisor-opt.c) and the parallel optimizers
 * (advisor-occupancy.c) append to it, its ranking by estimated speedup,
 * and every optimizer's name and hint (Zhou et al., "GPA: A GPU
 * Performance Advisor Based on Instruction Sampling", CGO 2021, Table 2).
 */
#include <stdio.h>
#include <string.h>

#include "advisor-internal.h"

/* ------------------------------------------------------------ names */

static const struct {
  const char *name, *hint;
} opts[GPD_OPT__COUNT] = {
    [GPD_OPT_REGISTER_REUSE] = {"Register Reuse",
                                "Local memory loads stall: registers spill. Shorten live "
                                "ranges (split the loop, recompute cheap values), keep small "
                                "arrays indexed by constants, or allow more registers "
                                "(__launch_bounds__, -maxrregcount)."},
    [GPD_OPT_STRENGTH_REDUCTION] = {"Strength Reduction",
                                    "Long-latency arithmetic is waited on. Avoid integer "
                                    "division and modulo (multiply by a reciprocal, shifts "
                                    "for powers of two), avoid float<->double conversions "
                                    "(write 2.0f, not 2.0), use intrinsics where exactness "
                                    "allows."},
    [GPD_OPT_WARP_BALANCE] = {"Warp Balance",
                              "Warps wait for each other: at barriers, or lanes of one warp "
                              "take different sides of a branch. Balance the work between "
                              "warps; make branch conditions uniform within a warp (branch on "
                              "threadIdx.x / 32, not on threadIdx.x)."},
    [GPD_OPT_MEMORY_TRANSACTION] = {"Memory Transaction Reduction",
                                    "The memory pipeline is throttled: too many "
                                    "transactions. Use wider loads (float4), shared or "
                                    "constant memory for data threads share, fewer "
                                    "redundant loads."},
    [GPD_OPT_COALESCING] = {"Global Memory Coalescing",
                            "Neighbouring threads access addresses far apart: each warp "
                            "request needs many sectors. Make threadIdx.x index the fastest "
                            "varying dimension, transpose through shared memory, or use a "
                            "structure of arrays."},
    [GPD_OPT_FUNCTION_SPLIT] = {"Function Split",
                                "Instruction fetch stalls: the code is too large for the "
                                "instruction cache. Split the kernel or keep rarely run code "
                                "out of line."},
    [GPD_OPT_LOOP_UNROLLING] = {"Loop Unrolling",
                                "Loads and their uses inside a loop are too close to hide "
                                "latency. Unroll the loop (#pragma unroll N, or by hand where "
                                "the compiler does not) so independent loads issue together."},
    [GPD_OPT_CODE_REORDER] = {"Code Reordering",
                              "A value is used soon after the instruction that produces it. "
                              "Load earlier (prefetch into registers), move independent work "
                              "between the def and its use."},
    [GPD_OPT_FUNCTION_INLINING] = {"Function Inlining",
                                   "Stalls in device functions and at their call sites. "
                                   "Inline the function (__forceinline__, or by hand when the "
                                   "compiler refuses) so its latency can overlap the "
                                   "caller's."},
    [GPD_OPT_BLOCK_INCREASE] = {"Block Increase",
                                "Fewer blocks than SMs: some SMs idle. Launch more, smaller "
                                "blocks."},
    [GPD_OPT_THREAD_INCREASE] = {"Thread Increase",
                                 "Occupancy is limited by the number of threads per block "
                                 "(the per-SM block limit binds first). Launch more threads "
                                 "per block."},
    [GPD_OPT_OCCUPANCY] = {"Occupancy Increase",
                           "Occupancy is limited by registers or shared memory per block. "
                           "Use fewer registers (__launch_bounds__) or less shared memory, "
                           "or a block size that packs better."},
    [GPD_OPT_FAST_MATH] = {"Fast Math",
                           "Accurate math library functions (sinf, cosf, expf, logf: range "
                           "reduction and polynomials) take the time. Where their precision "
                           "is not needed, use the intrinsics (__sinf, __cosf, __expf, __logf) "
                           "or compile with --use_fast_math."},
};

const char *gpd_advisor_opt_name(gpd_advisor_opt_t o) {
  return (unsigned)o < GPD_OPT__COUNT ? opts[o].name : "?";
}
const char *gpd_advisor_opt_hint(gpd_advisor_opt_t o) {
  return (unsigned)o < GPD_OPT__COUNT ? opts[o].hint : "";
}

/* ------------------------------------------------------ the list */

void gpd__advisor_suggest(gpd_advice_t *a, gpd_advisor_opt_t o, double matched, double speedup,
                      const gpd__advisor_match_t *x, int32_t loop, const char *why) {
  if (!(speedup > 1.0005) || !(matched > 0))
    return;
  gpd_advisor_suggest_t *s = &a->sugg[a->nsugg++];
  memset(s, 0, sizeof *s);
  s->opt = o;
  s->matched = matched;
  s->speedup = speedup;
  s->loop = loop;
  if (x) {
    memcpy(s->hot, x->hot, sizeof s->hot);
    s->nhot = x->nhot;
  }
  snprintf(s->why, sizeof s->why, "%s", why);
}

static int is_latency_hiding(gpd_advisor_opt_t o) {
  return o == GPD_OPT_LOOP_UNROLLING || o == GPD_OPT_CODE_REORDER || o == GPD_OPT_FUNCTION_INLINING;
}

void gpd__advisor_suggest_rank(gpd_advice_t *a) {
  for (size_t i = 1; i < a->nsugg; i++)
    for (size_t j = i; j > 0 && a->sugg[j].speedup > a->sugg[j - 1].speedup; j--) {
      gpd_advisor_suggest_t t = a->sugg[j];
      a->sugg[j] = a->sugg[j - 1];
      a->sugg[j - 1] = t;
    }
  /* issue 25's rule: when the block size limits occupancy, the launch
   * configuration comes before latency hiding (Eqs. 4, 5 take the stall
   * slots as the present warps leave them; more warps fill the same
   * slots), so Thread Increase moves above every latency hiding
   * suggestion ranked over it */
  if (strcmp(a->limiter, "blocks per SM") == 0)
    for (size_t i = 0; i < a->nsugg; i++)
      if (a->sugg[i].opt == GPD_OPT_THREAD_INCREASE) {
        size_t j = 0;
        while (j < i && !is_latency_hiding(a->sugg[j].opt))
          j++;
        gpd_advisor_suggest_t t = a->sugg[i];
        memmove(&a->sugg[j + 1], &a->sugg[j], (i - j) * sizeof *a->sugg);
        a->sugg[j] = t;
        break;
      }
}
