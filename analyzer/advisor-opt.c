/* advisor-opt.c - GPA's code optimizers and their estimators (Zhou et
 * al., "GPA: A GPU Performance Advisor Based on Instruction Sampling",
 * CGO 2021, section 5, Table 2, Eqs. 2-5).  The parallel optimizers
 * (Eqs. 6-10) are in advisor-occupancy.c; the list both append to, its
 * ranking and every optimizer's name and hint in advisor-suggest.c.
 *
 * Code optimizers match blamed samples (advisor-blame.c): stall
 * elimination ones estimate S_e = T / (T - M) (Eq. 2), latency hiding ones
 * S_h = T / (T - min(A, M_L)) (Eq. 4), loop unrolling per loop scope
 * S_h_l = T / (T - min(sum of A over l and its nested loops, M_L_l))
 * (Eq. 5).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor-internal.h"

/* ------------------------------------------------------ optimizers */

static void match_add(gpd__advisor_match_t *x, const gpd_advisor_blame_t *b, double m, double ml) {
  x->m += m;
  x->ml += ml;
  double v = m > 0 ? m : ml;
  if (v <= 0)
    return;
  for (size_t i = 0; i < x->nhot; i++)
    if (x->hot[i].def == b->def && x->hot[i].use == b->use) {
      x->hot[i].samples += v;
      goto sort;
    }
  if (x->nhot < GPD_ADV_MAXHOT) {
    x->hot[x->nhot++] = (gpd_advisor_hot_t){b->def, b->use, b->dist, b->reason, v};
  } else if (v > x->hot[GPD_ADV_MAXHOT - 1].samples) {
    x->hot[GPD_ADV_MAXHOT - 1] = (gpd_advisor_hot_t){b->def, b->use, b->dist, b->reason, v};
  } else {
    return;
  }
sort:
  for (size_t i = x->nhot; i-- > 1;)
    if (x->hot[i].samples > x->hot[i - 1].samples) {
      gpd_advisor_hot_t t = x->hot[i];
      x->hot[i] = x->hot[i - 1];
      x->hot[i - 1] = t;
    }
}

/* The innermost loop holding both instructions, -1 none. */
static int32_t common_loop(const gpd__advisor_t *k, uint32_t i, uint32_t j) {
  for (int32_t l = k->loop_of[j]; l >= 0; l = k->loop_parent[l])
    for (int32_t m = k->loop_of[i]; m >= 0; m = k->loop_parent[m])
      if (m == l)
        return l;
  return -1;
}

static double eq2(double T, double M) { /* stall elimination */
  return T > 0 && M < T ? T / (T - M) : 1.0;
}
static double eq4(double T, double A, double ML) { /* latency hiding */
  double h = A < ML ? A : ML;
  return T > 0 && h < T ? T / (T - h) : 1.0;
}

static int is_latency_reason(const gpd_advisor_blame_t *b, const gpd_advisor_insn_t *def) {
  /* GPA Table 2: global memory and execution dependency stalls */
  if (b->def == b->use)
    return 0;
  if (b->reason == GPD_ADV_LONG_SB)
    return def->cls == GPD_ADV_GLOBAL || def->cls == GPD_ADV_CONST;
  return b->reason == GPD_ADV_WAIT || b->reason == GPD_ADV_SHORT_SB;
}

/* Samples in [lo, hi) instruction indexes. */
static double range_samples(const gpd_advice_t *a, size_t lo, size_t hi) {
  double s = 0;
  for (size_t i = lo; i < hi && i < a->ninsns; i++)
    s += a->samples[i];
  return s;
}

static int issues_always(const gpd_advisor_insn_t *in) {
  return in->pred < 0;
}

/* Divergent branches: the samples of the shorter side of each (an
 * if/else whose lanes split runs both sides; uniform per warp, each warp
 * runs one).  Sides by layout: [branch+1, target) falls through; the
 * target side runs from the target to the first reconvergence (BSYNC,
 * WARPSYNC), unconditional branch or exit. */
static double divergence(const gpd_advice_t *a, const gpd_disasm_sec_t *sec, gpd__advisor_match_t *x) {
  double m = 0;
  for (size_t b = 0; b < a->ninsns; b++) {
    const gpd_advisor_insn_t *in = &a->insns[b];
    if (!in->divergent)
      continue;
    size_t t = b + 1;
    /* the target: first instruction at the branch's target offset */
    for (size_t i = b + 1; i < a->ninsns; i++)
      if (a->insns[i].off >= sec->insns[b].target) {
        t = i;
        break;
      }
    if (sec->insns[b].target == UINT64_MAX || t <= b)
      continue;
    size_t end = t;
    while (end < a->ninsns) {
      const gpd_advisor_insn_t *e = &a->insns[end];
      if (strncmp(e->op, "BSYNC", 5) == 0 || strncmp(e->op, "WARPSYNC", 8) == 0 ||
          ((strncmp(e->op, "BRA", 3) == 0 || strncmp(e->op, "EXIT", 4) == 0) && issues_always(e)))
        break;
      end++;
    }
    double ft = range_samples(a, b + 1, t), tg = range_samples(a, t, end);
    double side = ft < tg ? ft : tg;
    if (side > 0) {
      m += side;
      gpd_advisor_blame_t pseudo = {(uint32_t)b, (uint32_t)(ft < tg ? b + 1 : t), 0, GPD_ADV__COUNT,
                                side, 0};
      match_add(x, &pseudo, side, 0);
      x->m -= side; /* counted by the caller */
    }
  }
  return m;
}

/* Bank conflict degree of a shared access (ours; GPA has no bank-conflict
 * optimizer): 32 banks of 4 bytes, lanes s bytes apart (s a multiple of
 * 4) fall gcd(s / 4, 32) to a bank; an access of e > 4 bytes is served
 * e / 4 lanes' worth at a time, so conflicts start e / 4 words later.
 * 1 when conflict-free or the stride is unknown. */
double gpd__advisor_bank_ways(const gpd_advisor_insn_t *in) {
  if (in->cls != GPD_ADV_SHARED || in->stride == 0 || in->stride == UINT32_MAX ||
      in->stride % 4)
    return 1;
  unsigned w = in->stride / 4, g = 32;
  while (w) { /* gcd(w, 32) */
    unsigned t = g % w;
    g = w;
    w = t;
  }
  unsigned e = strstr(in->op, ".128") ? 4 : strstr(in->op, ".64") ? 2 : 1;
  return g > e ? (double)g / e : 1;
}

/* Instructions that go through the MIO queue (shared, global, local and
 * constant memory, S2R/SHFL and the like, MUFU / conversions). */
static int is_mio(const gpd_advisor_insn_t *in) {
  return in->cls == GPD_ADV_SHARED || in->cls == GPD_ADV_GLOBAL || in->cls == GPD_ADV_LOCAL ||
         in->cls == GPD_ADV_CONST || in->cls == GPD_ADV_MIO || in->cls == GPD_ADV_LONGOP;
}

/* Shared-memory bank conflicts as Memory Transaction Reduction (replayed
 * shared transactions), M in Eq. 2's form: a conflicted access of k ways
 * is k transactions where one would do.  (1) mio_throttle stalls, where
 * ever seen, come from a full MIO queue; the replays' share of its
 * transactions is rho = sum issued_i (k_i - 1) / sum issued_j k_j over MIO
 * instructions (issued = SELECTED samples, GPA's R_issue), so rho of them
 * go.  (2) short_scoreboard stalls blamed on a conflicted access i wait
 * k_i transactions; (1 - 1/k_i) of them go.  Returns M; *ways the
 * largest k seen. */
static double bank_conflicts(const gpd_advice_t *a, gpd__advisor_match_t *x, double *ways) {
  double all = 0, replay = 0, mio = 0, sb = 0;
  *ways = 1;
  for (size_t i = 0; i < a->ninsns; i++) {
    const gpd_advisor_insn_t *in = &a->insns[i];
    if (!is_mio(in))
      continue;
    double kw = gpd__advisor_bank_ways(in);
    all += a->issued[i] * kw;
    replay += a->issued[i] * (kw - 1);
    if (kw > *ways)
      *ways = kw;
  }
  if (!(replay > 0))
    return 0;
  double rho = replay / all;
  for (size_t q = 0; q < a->nblame; q++) {
    const gpd_advisor_blame_t *b = &a->blame[q];
    const gpd_advisor_insn_t *d = &a->insns[b->def];
    double kw = gpd__advisor_bank_ways(d), m = 0;
    if (b->reason == GPD_ADV_MIO_THROTTLE && b->def == b->use && is_mio(d)) {
      m = b->samples * rho;
      mio += m;
    } else if (b->reason == GPD_ADV_SHORT_SB && b->def != b->use && kw > 1) {
      m = b->samples * (1 - 1 / kw);
      sb += m;
    }
    if (m > 0) {
      match_add(x, b, m, 0);
      x->m -= m; /* counted by the caller */
    }
  }
  return mio + sb;
}

/* Where a call's own cost shows (Function Inlining, ours on GPA's
 * "stalls at call sites"): a CALL or RET, the callee's first
 * instruction, the return point after a CALL, and the instruction after
 * an unconditional RET (a warp whose RET is resolving its target is
 * sampled at the next PC). */
static int is_call_overhead(const gpd__advisor_t *k, uint32_t i) {
  const gpd_advisor_insn_t *in = &k->a->insns[i];
  if (strncmp(in->op, "CALL", 4) == 0 || strncmp(in->op, "RET", 3) == 0)
    return 1;
  if (k->kernel_func >= 0 && k->func_of[i] >= 0 && k->func_of[i] != k->kernel_func &&
      (i == 0 || k->func_of[i - 1] != k->func_of[i]))
    return 1;
  if (i == 0)
    return 0;
  const gpd_advisor_insn_t *p = &k->a->insns[i - 1];
  return strncmp(p->op, "CALL", 4) == 0 || (strncmp(p->op, "RET", 3) == 0 && issues_always(p));
}

/* Global atomics / reductions on one address in every lane (ours, as
 * Memory Transaction Reduction: a warp-level reduction first makes one
 * update of 32): the 32 lanes' updates are serialized, k = 32 where one
 * would do.  The serialized updates fill the memory pipeline that every
 * other access goes through, so every wait on that pipeline is, by share,
 * a wait behind them: rho = sum issued_i (k_i - 1) / sum issued_j k_j over
 * global accesses (loads and stores; k = 32 for such an atomic, 1 for the
 * rest).  M in Eq. 2's form: rho of the drain stalls (warps past EXIT
 * waiting for their writes), of the long_scoreboard waits on global loads
 * and of the short_scoreboard waits on MIO instructions (whose queue the
 * LSU's backlog fills), plus (1 - 1/k) of the waits on those atomics'
 * results.  No fitted constant.  Returns M. */
static double atomic_contention(const gpd_advice_t *a, gpd__advisor_match_t *x) {
  const double kw = 32;
  double all = 0, replay = 0, m = 0;
  for (size_t i = 0; i < a->ninsns; i++) {
    const gpd_advisor_insn_t *in = &a->insns[i];
    if (in->cls != GPD_ADV_GLOBAL)
      continue;
    all += a->issued[i] * (in->same_addr ? kw : 1);
    replay += in->same_addr ? a->issued[i] * (kw - 1) : 0;
  }
  if (!(replay > 0))
    return 0;
  double rho = replay / all;
  for (size_t q = 0; q < a->nblame; q++) {
    const gpd_advisor_blame_t *b = &a->blame[q];
    const gpd_advisor_insn_t *d = &a->insns[b->def];
    double v = 0;
    if (b->reason == GPD_ADV_DRAIN && b->def == b->use)
      v = b->samples * rho;
    else if (d->same_addr && b->reason == GPD_ADV_LONG_SB && b->def != b->use)
      v = b->samples * (1 - 1 / kw); /* (its throttling counts as global throttling) */
    else if (b->def != b->use &&
             ((b->reason == GPD_ADV_LONG_SB && d->cls == GPD_ADV_GLOBAL && !d->store) ||
              (b->reason == GPD_ADV_SHORT_SB && is_mio(d))))
      v = b->samples * rho;
    if (v > 0) {
      m += v;
      match_add(x, b, v, 0);
      x->m -= v; /* counted by the caller */
    }
  }
  return m;
}

/* Fast Math (GPA Table 2: "stalls in CUDA math functions").  Inlined, the
 * accurate single-precision functions keep no name and no line of their
 * own, so they are recognized by immediates of their code that the
 * intrinsics do not have: 2/pi of sinf / cosf / tanf's argument reduction,
 * the round-to-integer constant 1.5 * 2^23 + 1 of expf / exp2f / exp10f,
 * the first polynomial coefficient and the 2/3 mantissa split of logf /
 * log2f.  Each function's scope is the innermost loop around such an
 * instruction (its nested loops included), the whole section when it is
 * in no loop.  M in Eq. 2's form: the stall samples (all but SELECTED) of
 * the arithmetic, conversion and select instructions in those scopes
 * (memory accesses and control flow are not the functions' work).
 * Returns M; *n the signature instructions found. */
static const char *const math_sig[] = {
    "0.63661974668502807617", /* 2/pi: sinf, cosf, tanf, sincosf */
    "12582913",               /* 1.5 * 2^23 + 1, rounding to an integer: expf, exp2f, exp10f */
    "0.14084610342979431152", /* logf, log2f, log10f: polynomial */
    "-0x3f2aaaab",            /* logf, log2f, log10f: mantissa split at 2/3 */
};

static int in_scope(const gpd__advisor_t *k, size_t i, int32_t scope) {
  if (scope == -2)
    return 1;
  for (int32_t l = k->loop_of[i]; l >= 0; l = k->loop_parent[l])
    if (l == scope)
      return 1;
  return 0;
}

static double fast_math(const gpd__advisor_t *k, gpd__advisor_match_t *x, size_t *n) {
  const gpd_advice_t *a = k->a;
  const gpd_disasm_sec_t *sec = k->in->sec;
  int32_t scopes[8];
  size_t ns = 0;
  *n = 0;
  for (size_t i = 0; i < a->ninsns && i < sec->ninsns; i++) {
    const char *t = sec->insns[i].text;
    int hit = 0;
    for (size_t s = 0; t && s < sizeof math_sig / sizeof *math_sig && !hit; s++)
      hit = strstr(t, math_sig[s]) != NULL;
    if (!hit)
      continue;
    ++*n;
    int32_t sc = k->loop_of[i] >= 0 ? k->loop_of[i] : -2, dup = 0;
    for (size_t j = 0; j < ns; j++)
      dup |= in_scope(k, i, scopes[j]) || scopes[j] == sc;
    if (!dup && ns < sizeof scopes / sizeof *scopes)
      scopes[ns++] = sc;
  }
  double m = 0;
  for (size_t q = 0; q < k->nagg; q++) {
    const gpd__agg_t *g = &k->agg[q];
    const gpd_advisor_insn_t *in = &a->insns[g->idx];
    if (g->reason == GPD_ADV_SELECTED || !(g->samples > 0) ||
        (in->cls != GPD_ADV_FIXED && in->cls != GPD_ADV_LONGOP))
      continue;
    int hit = 0;
    for (size_t j = 0; j < ns && !hit; j++)
      hit = in_scope(k, g->idx, scopes[j]);
    if (!hit)
      continue;
    m += g->samples;
    gpd_advisor_blame_t self = {g->idx, g->idx, 0, g->reason, g->samples, 0};
    match_add(x, &self, g->samples, 0);
  }
  x->m = m;
  return m;
}

/* The immediate step of an add (IADD3 / VIADD / IADD Rd, Rd, imm): its
 * absolute value, 0 when there is none. */
static long add_step(const char *text) {
  const char *s = text ? strchr(text, ',') : NULL;
  for (; s; s = strchr(s + 1, ',')) {
    const char *t = s + 1 + strspn(s + 1, " ");
    if (*t == '-' || (*t >= '0' && *t <= '9')) {
      long v = strtol(t, NULL, 0);
      return v < 0 ? -v : v;
    }
  }
  return 0;
}

/* Loops whose trip count differs between the lanes of a warp (ours, as
 * Warp Balance): a divergent branch in loop l on a compare of a register
 * that moves by c per lane (thread-index analysis) and steps by an
 * immediate d in l with 31 c >= d, so the warp's lanes leave l up to
 * 31 c / d iterations apart; a warp runs l as long as its longest lane.
 * Lane-linear trip counts n_0 + (c / d) lane have a mean over the warp of
 * at least half their maximum (exactly half when n_0 = 0, the bound
 * taken), so half of l's samples are idle lanes that warp-uniform trip
 * counts (the fix) give back: M = 1/2 of the samples of each such loop
 * (its nested loops included, each loop once).  No fitted constant. */
static double lane_trip_counts(const gpd__advisor_t *k, gpd__advisor_match_t *x) {
  const gpd_advice_t *a = k->a;
  const gpd_disasm_sec_t *sec = k->in->sec;
  double m = 0;
  uint8_t *done = calloc(k->nloops ? k->nloops : 1, 1);
  if (done == NULL)
    return 0;
  for (size_t b = 0; b < a->ninsns; b++) {
    const gpd_advisor_insn_t *in = &a->insns[b];
    int32_t l = k->loop_of[b];
    if (!in->divergent || l < 0 || done[l])
      continue;
    size_t j = b, found = 0; /* the compare that set the branch's predicate, in l */
    while (!found && j-- > 0 && in_scope(k, j, l))
      for (unsigned d = 0; d < a->insns[j].ndef; d++)
        found |= a->insns[j].def[d] == in->pred;
    if (!found)
      continue;
    if (a->insns[j].lane_coef == 0)
      continue;
    const gpd_advisor_insn_t *cmp = &a->insns[j];
    long step = 0;
    for (size_t i = 0; i < a->ninsns && !step; i++) {
      const gpd_advisor_insn_t *u = &a->insns[i];
      if (!(strncmp(u->op, "IADD", 4) == 0 || strncmp(u->op, "VIADD", 5) == 0) || u->ndef == 0 ||
          u->def[0] != cmp->lane_reg || !in_scope(k, i, l))
        continue;
      int self = 0;
      for (unsigned q = 0; q < u->nuse; q++)
        self |= u->use[q] == cmp->lane_reg;
      if (self && i < sec->ninsns)
        step = add_step(sec->insns[i].text);
    }
    if (step == 0 || 31l * (long)cmp->lane_coef < step)
      continue;
    done[l] = 1;
    double ls = 0;
    for (size_t i = 0; i < a->ninsns; i++)
      ls += in_scope(k, i, l) ? a->samples[i] : 0;
    m += ls / 2;
    gpd_advisor_blame_t pseudo = {(uint32_t)b, k->loop_head[l], 0, GPD_ADV__COUNT, ls / 2, 0};
    match_add(x, &pseudo, ls / 2, 0);
    x->m -= ls / 2; /* counted by the caller */
  }
  free(done);
  return m;
}

int gpd__advisor_optimize(gpd__advisor_t *k) {
  gpd_advice_t *a = k->a;
  double T = a->T, A = a->A;
  gpd__advisor_match_t mx[GPD_OPT__COUNT];
  memset(mx, 0, sizeof mx);
  double *loop_ml = calloc(k->nloops ? k->nloops : 1, sizeof *loop_ml);
  double *loop_a = calloc(k->nloops ? k->nloops : 1, sizeof *loop_a);
  gpd__advisor_match_t *loop_mx = calloc(k->nloops ? k->nloops : 1, sizeof *loop_mx);
  if (loop_ml == NULL || loop_a == NULL || loop_mx == NULL) {
    free(loop_ml);
    free(loop_a);
    free(loop_mx);
    return -ENOMEM;
  }
  double coal_k_num = 0, coal_m = 0, call_m = 0, lsu_local = 0, lsu_all = 0;
  for (size_t i = 0; i < a->ninsns; i++)
    if (a->insns[i].cls == GPD_ADV_LOCAL || a->insns[i].cls == GPD_ADV_GLOBAL) {
      lsu_all += a->issued[i];
      lsu_local += a->insns[i].cls == GPD_ADV_LOCAL ? a->issued[i] : 0;
    }
  lsu_local = lsu_all > 0 ? lsu_local / lsu_all : 0;
  for (size_t q = 0; q < a->nblame; q++) {
    const gpd_advisor_blame_t *b = &a->blame[q];
    const gpd_advisor_insn_t *d = &a->insns[b->def], *u = &a->insns[b->use];
    int self = b->def == b->use;
    /* Register Reuse: local memory dependency / throttle (spills) */
    if (d->cls == GPD_ADV_LOCAL &&
        (b->reason == GPD_ADV_LONG_SB || b->reason == GPD_ADV_LG_THROTTLE))
      match_add(&mx[GPD_OPT_REGISTER_REUSE], b, b->samples, 0);
    else if (self && d->cls == GPD_ADV_GLOBAL && b->reason == GPD_ADV_LG_THROTTLE &&
             lsu_local > 0) /* the local accesses' share of a full LSU queue */
      match_add(&mx[GPD_OPT_REGISTER_REUSE], b, b->samples * lsu_local, 0);
    /* Strength Reduction: execution dependency on long-latency arithmetic */
    if (!self && d->cls == GPD_ADV_LONGOP &&
        (b->reason == GPD_ADV_WAIT || b->reason == GPD_ADV_SHORT_SB))
      match_add(&mx[GPD_OPT_STRENGTH_REDUCTION], b, b->samples, 0);
    /* Warp Balance: synchronization stalls */
    if (self && (b->reason == GPD_ADV_BARRIER || b->reason == GPD_ADV_MEMBAR))
      match_add(&mx[GPD_OPT_WARP_BALANCE], b, b->samples, 0);
    /* Global Memory Coalescing: the stalls a strided access causes or sees */
    if (d->cls == GPD_ADV_GLOBAL && d->stride &&
        (b->reason == GPD_ADV_LONG_SB || b->reason == GPD_ADV_LG_THROTTLE ||
         b->reason == GPD_ADV_TEX_THROTTLE)) {
      /* sectors per warp request: one per lane up to 32 when each lane's
       * address moves by >= 32 bytes, vs. elem x 32 / 32 coalesced */
      double kf = d->stride == UINT32_MAX ? 8.0 : (d->stride >= 32 ? 32.0 : (double)d->stride) /
                                                      (strstr(d->op, ".64") ? 8.0 : 4.0);
      if (kf < 1)
        kf = 1;
      coal_m += b->samples;
      coal_k_num += b->samples * (1.0 - 1.0 / kf);
      match_add(&mx[GPD_OPT_COALESCING], b, b->samples, 0);
    } else if (self && d->cls == GPD_ADV_GLOBAL &&
               (b->reason == GPD_ADV_LG_THROTTLE || b->reason == GPD_ADV_TEX_THROTTLE)) {
      /* Memory Transaction Reduction: throttled global memory */
      match_add(&mx[GPD_OPT_MEMORY_TRANSACTION], b, b->samples, 0);
    }
    /* Function Split: instruction fetch */
    if (self && b->reason == GPD_ADV_NO_INSTR)
      match_add(&mx[GPD_OPT_FUNCTION_SPLIT], b, b->samples, 0);
    /* latency hiding: loops, straight-line code, device functions */
    if (is_latency_reason(b, d)) {
      int32_t l = common_loop(k, b->def, b->use);
      if (l >= 0) {
        for (int32_t p = l; p >= 0; p = k->loop_parent[p]) { /* scope l and the loops around it */
          loop_ml[p] += b->latency;
          match_add(&loop_mx[p], b, 0, b->latency);
        }
      } else {
        match_add(&mx[GPD_OPT_CODE_REORDER], b, 0, b->latency);
      }
      if (k->kernel_func >= 0 && (k->func_of[b->def] != k->kernel_func ||
                                  k->func_of[b->use] != k->kernel_func))
        match_add(&mx[GPD_OPT_FUNCTION_INLINING], b, 0, b->latency);
    }
    if (self && (b->reason == GPD_ADV_BRANCH || b->reason == GPD_ADV_NO_INSTR) &&
        is_call_overhead(k, b->use)) {
      call_m += b->samples; /* what inlining removes (Eq. 2) */
      match_add(&mx[GPD_OPT_FUNCTION_INLINING], b, b->samples, 0);
    } else if (self && (strncmp(u->op, "CALL", 4) == 0 || strncmp(u->op, "RET", 3) == 0)) {
      match_add(&mx[GPD_OPT_FUNCTION_INLINING], b, 0, b->latency);
    }
  }
  char why[320];
  /* stall elimination (Eq. 2) */
  snprintf(why, sizeof why, "%.0f samples of local memory (spill) dependency and throttling",
           mx[GPD_OPT_REGISTER_REUSE].m);
  gpd__advisor_suggest(a, GPD_OPT_REGISTER_REUSE, mx[GPD_OPT_REGISTER_REUSE].m, eq2(T, mx[GPD_OPT_REGISTER_REUSE].m),
          &mx[GPD_OPT_REGISTER_REUSE], -1, why);
  snprintf(why, sizeof why, "%.0f samples wait on long-latency arithmetic (MUFU, conversions, FP64)",
           mx[GPD_OPT_STRENGTH_REDUCTION].m);
  gpd__advisor_suggest(a, GPD_OPT_STRENGTH_REDUCTION, mx[GPD_OPT_STRENGTH_REDUCTION].m,
          eq2(T, mx[GPD_OPT_STRENGTH_REDUCTION].m), &mx[GPD_OPT_STRENGTH_REDUCTION], -1, why);
  {
    double sync = mx[GPD_OPT_WARP_BALANCE].m;
    double div = divergence(a, k->in->sec, &mx[GPD_OPT_WARP_BALANCE]);
    double trip = lane_trip_counts(k, &mx[GPD_OPT_WARP_BALANCE]);
    double m = sync + div + trip;
    mx[GPD_OPT_WARP_BALANCE].m = m;
    snprintf(why, sizeof why,
             "%.0f samples wait at barriers, %.0f on the shorter side of "
             "branches that diverge within a warp, %.0f idle lanes of loops whose trip count "
             "differs per lane (half their samples)",
             sync, div, trip);
    gpd__advisor_suggest(a, GPD_OPT_WARP_BALANCE, m, eq2(T, m), &mx[GPD_OPT_WARP_BALANCE], -1, why);
  }
  {
    double glob = mx[GPD_OPT_MEMORY_TRANSACTION].m, ways;
    double bank = bank_conflicts(a, &mx[GPD_OPT_MEMORY_TRANSACTION], &ways);
    double atom = atomic_contention(a, &mx[GPD_OPT_MEMORY_TRANSACTION]);
    double m = glob + bank + atom;
    mx[GPD_OPT_MEMORY_TRANSACTION].m = m;
    int n = snprintf(why, sizeof why, "%.0f samples of global memory throttling", glob);
    if (bank > 0 && n > 0 && (size_t)n < sizeof why)
      n += snprintf(why + n, sizeof why - (size_t)n,
                    "; shared accesses with up to %.0f-way bank conflicts: %.0f samples of MIO "
                    "throttling and waits on them are replays",
                    ways, bank);
    if (atom > 0 && n > 0 && (size_t)n < sizeof why)
      snprintf(why + n, sizeof why - (size_t)n,
               "; atomics on one address in every lane: %.0f samples of drain and waits "
               "are their serialized updates",
               atom);
    gpd__advisor_suggest(a, GPD_OPT_MEMORY_TRANSACTION, m, eq2(T, m), &mx[GPD_OPT_MEMORY_TRANSACTION],
                     -1, why);
  }
  snprintf(why, sizeof why,
           "%.0f samples at or waiting on global accesses whose address moves by more than "
           "an element per thread; coalesced, the sectors per request shrink, so %.0f of "
           "them go",
           coal_m, coal_k_num);
  gpd__advisor_suggest(a, GPD_OPT_COALESCING, coal_m, eq2(T, coal_k_num), &mx[GPD_OPT_COALESCING], -1, why);
  snprintf(why, sizeof why, "%.0f samples of instruction fetch stalls",
           mx[GPD_OPT_FUNCTION_SPLIT].m);
  gpd__advisor_suggest(a, GPD_OPT_FUNCTION_SPLIT, mx[GPD_OPT_FUNCTION_SPLIT].m,
          eq2(T, mx[GPD_OPT_FUNCTION_SPLIT].m), &mx[GPD_OPT_FUNCTION_SPLIT], -1, why);
  {
    size_t nsig;
    double m = fast_math(k, &mx[GPD_OPT_FAST_MATH], &nsig);
    snprintf(why, sizeof why,
             "%.0f stall samples of arithmetic in the scope of %zu instructions of accurate "
             "math library code (sinf / cosf / expf / logf range reduction and polynomials)",
             m, nsig);
    gpd__advisor_suggest(a, GPD_OPT_FAST_MATH, m, eq2(T, m), &mx[GPD_OPT_FAST_MATH], -1, why);
  }
  /* latency hiding (Eqs. 4, 5) */
  for (size_t i = 0; i < a->ninsns; i++)
    for (int32_t l = k->loop_of[i]; l >= 0; l = k->loop_parent[l])
      loop_a[l] += a->samples[i] - a->latency[i];
  int32_t best = -1;
  double best_s = 1;
  for (size_t l = 0; l < k->nloops; l++) {
    double s = eq4(T, loop_a[l], loop_ml[l]);
    if (s > best_s) {
      best_s = s;
      best = (int32_t)l;
    }
  }
  if (best >= 0) {
    snprintf(why, sizeof why,
             "%.0f latency samples of global memory / execution dependencies inside the loop, "
             "%.0f active samples in it to hide them (Eq. 5)",
             loop_ml[best], loop_a[best]);
    gpd__advisor_suggest(a, GPD_OPT_LOOP_UNROLLING, loop_ml[best], best_s, &loop_mx[best], best, why);
  }
  snprintf(why, sizeof why,
           "%.0f latency samples of dependencies outside loops, %.0f active samples (Eq. 4)",
           mx[GPD_OPT_CODE_REORDER].ml, A);
  gpd__advisor_suggest(a, GPD_OPT_CODE_REORDER, mx[GPD_OPT_CODE_REORDER].ml,
          eq4(T, A, mx[GPD_OPT_CODE_REORDER].ml), &mx[GPD_OPT_CODE_REORDER], -1, why);
  {
    /* call overhead goes (Eq. 2), latency across the call is hidden
     * (Eq. 4): T / (T - M_call - min(A, M_L)) */
    double ml = mx[GPD_OPT_FUNCTION_INLINING].ml, h = (A < ml ? A : ml) + call_m;
    snprintf(why, sizeof why,
             "%.0f samples of call overhead (branch resolving and instruction fetch at calls, "
             "returns, the callee's entry and the return points), %.0f latency samples in "
             "device functions and at their calls and returns",
             call_m, ml);
    gpd__advisor_suggest(a, GPD_OPT_FUNCTION_INLINING, call_m + ml, T > 0 && h < T ? T / (T - h) : 1.0,
                     &mx[GPD_OPT_FUNCTION_INLINING], -1, why);
  }
  free(loop_ml);
  free(loop_a);
  free(loop_mx);
  return 0;
}

