/* advisor-internal.h - what the advisor's files share (not installed). */
#ifndef GPUPROF_ADVISOR_INTERNAL_H
#define GPUPROF_ADVISOR_INTERNAL_H

#include "advisor.h"

/** Samples of one (instruction, reason), duplicates summed. */
typedef struct gpd__agg_s {
  uint32_t idx, reason;
  double samples, latency;
} gpd__agg_t;

/** A kernel being analyzed: its advice plus the structure the blamer and
 *  the optimizers walk.  Blocks and loops of all the section's functions
 *  are numbered together. */
typedef struct gpd__advisor_s {
  gpd_advice_t *a;
  const gpd_advisor_input_t *in;
  int32_t *block_of;       /* per instruction: block, -1 none */
  uint32_t *block_first, *block_last; /* per block: instruction range */
  uint32_t *pred_first;    /* per block + 1: CSR into preds */
  uint32_t *preds;
  size_t nblocks;
  int32_t *loop_of;        /* per instruction: innermost loop, -1 none */
  int32_t *loop_parent;    /* per loop */
  uint32_t *loop_head;     /* per loop: the header's first instruction */
  size_t nloops;
  int32_t *func_of;        /* per instruction: cubin function index, -1 unknown */
  int32_t kernel_func;     /* the kernel's own function index, -1 unknown */
  gpd__agg_t *agg;
  size_t nagg;
} gpd__advisor_t;

uint32_t gpd__advisor_latency(const gpd_advisor_insn_t *in);
int gpd__advisor_reason_def_ok(uint32_t reason, const gpd_advisor_insn_t *def);
int gpd__advisor_reason_blamed(uint32_t reason);
/** The blamer: fills k->a->blame from k->agg.  0 or -ENOMEM. */
int gpd__advisor_blame(gpd__advisor_t *k);
/** Thread-index analysis (advisor-tid.c): insns[].stride and .divergent. */
void gpd__advisor_tid(gpd_advice_t *a, const gpd_disasm_sec_t *sec);
/** The code optimizers and their estimators (advisor-opt.c): append to
 *  k->a->sugg (unranked).  0 or -ENOMEM. */
int gpd__advisor_optimize(gpd__advisor_t *k);
/** What an optimizer matched: samples and the hottest (def, use) pairs,
 *  hottest first (filled in advisor-opt.c). */
typedef struct gpd__advisor_match_s {
  double m;                   /* matched samples (stall elimination) */
  double ml;                  /* matched latency samples (latency hiding) */
  gpd_advisor_hot_t hot[GPD_ADV_MAXHOT];
  size_t nhot;
} gpd__advisor_match_t;
/** Append suggestion o to a->sugg when speedup > 1.0005 and matched > 0
 *  (advisor-suggest.c): matched samples, the estimated speedup, x's hot
 *  pairs (x may be NULL), the loop (-1 none) and the reason text. */
void gpd__advisor_suggest(gpd_advice_t *a, gpd_advisor_opt_t o, double matched, double speedup,
                      const gpd__advisor_match_t *x, int32_t loop, const char *why);
/** Bank conflict degree k of a shared access from its tid.x stride
 *  (advisor-opt.c): the transactions a warp request takes, 1 when
 *  conflict-free or unknown. */
double gpd__advisor_bank_ways(const gpd_advisor_insn_t *in);
/** The parallel optimizers (advisor-occupancy.c: Block Increase, Thread
 *  Increase, Occupancy Increase) from k's launch and issue samples; sets
 *  a->occupancy, ->occupancy_new and ->limiter. */
void gpd__advisor_occupancy_opt(gpd__advisor_t *k);
/** Sort a->sugg by estimated speedup, highest first (stable: insertion
 *  sort, the order of equal ones kept) (advisor-suggest.c). */
void gpd__advisor_suggest_rank(gpd_advice_t *a);

#endif
