/* advisor-occupancy.c - an occupancy calculator and GPA's parallel
 * optimizers (Zhou et al., "GPA: A GPU Performance Advisor Based on
 * Instruction Sampling", CGO 2021, section 5, Eqs. 6-10): Block Increase,
 * Thread Increase and Occupancy Increase.  They use the change of active
 * warps per scheduler C_W = W_new / W (Eq. 6) and of issue rate
 * C_I = I_new / I (Eq. 7) with I = 1 - (1 - R_I)^W (Eqs. 8, 9),
 * R_I = issued samples / all samples: S_p = C_I / C_W x f (Eq. 10).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "advisor-internal.h"

/* ------------------------------------------------------- occupancy */

typedef struct arch_s {
  uint32_t sm, max_warps, max_blocks, smem, reserved;
} arch_t;

/* CUDA C++ Programming Guide, "Technical Specifications per Compute
 * Capability": warps / blocks / shared memory per SM (bytes), reserved
 * shared memory per block.  65536 registers per SM on all of them. */
static const arch_t archs[] = {
    {70, 64, 32, 98304, 0},     {72, 64, 32, 98304, 0},     {75, 32, 16, 65536, 0},
    {80, 64, 32, 167936, 1024}, {86, 48, 16, 102400, 1024}, {87, 48, 16, 167936, 1024},
    {89, 48, 24, 102400, 1024}, {90, 64, 32, 233472, 1024}, {100, 64, 32, 233472, 1024},
    {103, 64, 32, 233472, 1024}, {120, 48, 32, 102400, 1024},
};

static const arch_t *arch_of(uint32_t sm) {
  const arch_t *best = &archs[7]; /* unknown: sm_90 */
  for (size_t i = 0; i < sizeof archs / sizeof *archs; i++)
    if (archs[i].sm == sm)
      return &archs[i];
  return best;
}

int gpd_advisor_occupancy(uint32_t sm, double threads, double regs, double smem, uint32_t *blocks,
                      uint32_t *warps, uint32_t *max_warps, const char **limiter) {
  if (!(threads >= 1 && threads <= 1024) || !(regs >= 0 && regs <= 255) ||
      !(smem >= 0 && smem <= 1 << 20))
    return -EINVAL;
  const arch_t *a = arch_of(sm);
  uint32_t wpb = (uint32_t)ceil(threads / 32);
  uint32_t b_warps = a->max_warps / wpb, lim = b_warps;
  const char *why = "warps";
  if (a->max_blocks < lim) {
    lim = a->max_blocks;
    why = "blocks per SM";
  }
  if (regs > 0) {
    /* cuda_occupancy.h: registers per warp rounded up to 256, warps per
     * sub-partition (4 per SM) from a quarter of the register file */
    uint32_t per_warp = (uint32_t)ceil(ceil(regs) * 32 / 256) * 256;
    uint32_t warps_sp = (65536 / 4) / per_warp;
    uint32_t b_regs = (warps_sp * 4) / wpb;
    if (b_regs < lim) {
      lim = b_regs;
      why = "registers";
    }
  }
  if (smem > 0) {
    uint32_t per_block = (uint32_t)ceil((smem + a->reserved) / 128) * 128;
    uint32_t b_smem = per_block ? a->smem / per_block : lim;
    if (b_smem < lim) {
      lim = b_smem;
      why = "shared memory";
    }
  }
  *blocks = lim;
  *warps = lim * wpb;
  *max_warps = a->max_warps;
  *limiter = why;
  return 0;
}

/* ------------------------------------------------ parallel optimizers */

void gpd__advisor_occupancy_opt(gpd__advisor_t *k) {
  gpd_advice_t *a = k->a;
  double T = a->T;
  char why[320];
  const gpd_advisor_launch_t *L = &k->in->launch;
  /* R_I: how often a warp is ready to issue.  GPA counts the issued
   * samples; a warp sampled "not selected" was ready too (another warp of
   * its scheduler issued), so it counts as well (ours): with the scheduler
   * issuing every cycle, issued samples alone put W R_I at 1 and Eq. 8's
   * I far below it */
  double issued = 0;
  for (size_t i = 0; i < a->ninsns; i++)
    issued += a->issued[i];
  for (size_t q = 0; q < k->nagg; q++)
    if (k->agg[q].reason == GPD_ADV_NOT_SELECTED)
      issued += k->agg[q].samples;
  double RI = T > 0 ? issued / T : 0;
  uint32_t blocks, warps, maxw;
  const char *lim;
  if (T > 0 && RI > 0 && RI < 1 &&
      gpd_advisor_occupancy(L->sm, L->threads, L->regs, L->smem_static + L->smem_dynamic, &blocks,
                        &warps, &maxw, &lim) == 0 && warps > 0) {
    a->occupancy = (double)warps / maxw;
    snprintf(a->limiter, sizeof a->limiter, "%s", lim);
    double wpb = ceil(L->threads / 32);
    /* warps per scheduler (4 per SM); a grid smaller than what fits
     * leaves each SM with what it gets */
    double per_sm = (double)warps;
    if (L->blocks > 0 && L->sm_count > 0 && L->blocks < (double)blocks * L->sm_count)
      per_sm = ceil(L->blocks / L->sm_count) * wpb;
    double W = per_sm / 4, I = 1 - pow(1 - RI, W);
    if (L->blocks > 0 && L->sm_count > 0 && L->blocks < L->sm_count) {
      /* Block Increase: the same warps over every SM, S_p = C_I / C_W */
      double Wn = W * L->blocks / L->sm_count, In = 1 - pow(1 - RI, Wn);
      double sp = (In / I) / (Wn / W);
      snprintf(why, sizeof why,
               "%.0f blocks on %u SMs: %.2f warps per scheduler now, %.2f spread over all SMs; "
               "issue rate %.3f -> %.3f (R_I %.3f)",
               L->blocks, L->sm_count, W, Wn, I, In, RI);
      gpd__advisor_suggest(a, GPD_OPT_BLOCK_INCREASE, T, sp, NULL, -1, why);
    } else {
      /* the occupancy without the binding limit: Thread Increase when
       * the per-SM block limit binds, Occupancy Increase for registers
       * and shared memory; the total work per scheduler stays, so
       * S_p = C_I (f = 1, C_W's work term cancels) */
      uint32_t b2, w2, m2;
      const char *l2;
      int rc = -1;
      gpd_advisor_opt_t o = GPD_OPT_OCCUPANCY;
      double t2 = L->threads; /* the new block size */
      if (strcmp(lim, "blocks per SM") == 0) {
        o = GPD_OPT_THREAD_INCREASE;
        while (t2 < 1024) {
          t2 = t2 * 2 > 1024 ? 1024 : t2 * 2;
          rc = gpd_advisor_occupancy(L->sm, t2, L->regs, L->smem_static + L->smem_dynamic, &b2, &w2,
                                 &m2, &l2);
          if (rc == 0 && strcmp(l2, "blocks per SM") != 0)
            break;
        }
      } else if (strcmp(lim, "registers") == 0) {
        rc = gpd_advisor_occupancy(L->sm, L->threads, 0, L->smem_static + L->smem_dynamic, &b2, &w2,
                               &m2, &l2);
      } else if (strcmp(lim, "shared memory") == 0) {
        rc = gpd_advisor_occupancy(L->sm, L->threads, L->regs, 0, &b2, &w2, &m2, &l2);
      }
      if (rc == 0 && w2 > warps) {
        double Wn = W * w2 / warps;
        if (L->blocks > 0 && L->sm_count > 0) { /* no more warps than the grid has */
          double have = ceil(L->blocks / L->sm_count) * wpb / 4;
          if (Wn > have)
            Wn = have > W ? have : W;
        }
        double In = 1 - pow(1 - RI, Wn);
        /* Eq. 10's work term for blocks that fill part of a warp: the
         * same threads in full warps are fewer warp instructions, lanes
         * per warp new / old (1 when both fill their warps) */
        double lanes = L->threads / wpb, lanes2 = t2 / ceil(t2 / 32);
        a->occupancy_new = Wn * 4 / maxw;
        snprintf(why, sizeof why,
                 "occupancy %.0f %% (%u warps of %u per SM, limited by %s) -> %.0f %%: %.2f -> "
                 "%.2f warps per scheduler, issue rate %.3f -> %.3f (R_I %.3f); %.0f -> %.0f "
                 "lanes per warp",
                 100.0 * warps / maxw, warps, maxw, lim, 100.0 * Wn * 4 / maxw, W, Wn, I, In, RI,
                 lanes, lanes2);
        gpd__advisor_suggest(a, o, T, In / I * lanes2 / lanes, NULL, -1, why);
      }
    }
  }
}
