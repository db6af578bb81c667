/* advisor-opt.c - the advisor's driver, GPA's optimizers and estimators
 * (Zhou et al., "GPA: A GPU Performance Advisor Based on Instruction
 * Sampling", CGO 2021, section 5, Table 2, Eqs. 2-10) and an occupancy
 * calculator.
 *
 * Code optimizers match blamed samples (advisor.c): stall elimination
 * ones estimate S_e = T / (T - M) (Eq. 2), latency hiding ones
 * S_h = T / (T - min(A, M_L)) (Eq. 4), loop unrolling per loop scope
 * S_h_l = T / (T - min(sum of A over l and its nested loops, M_L_l))
 * (Eq. 5).  Parallel optimizers use the change of active warps per
 * scheduler C_W = W_new / W (Eq. 6) and of issue rate C_I = I_new / I
 * (Eq. 7) with I = 1 - (1 - R_I)^W (Eqs. 8, 9), R_I = issued samples /
 * all samples: S_p = C_I / C_W x f (Eq. 10).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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
};

const char *gpd_adv_opt_name(gpd_adv_opt_t o) {
  return (unsigned)o < GPD_OPT__COUNT ? opts[o].name : "?";
}
const char *gpd_adv_opt_hint(gpd_adv_opt_t o) {
  return (unsigned)o < GPD_OPT__COUNT ? opts[o].hint : "";
}

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

int gpd_adv_occupancy(uint32_t sm, double threads, double regs, double smem, uint32_t *blocks,
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

/* -------------------------------------------------- thread index */

/* The coefficient of threadIdx.x in each register's value (bytes of
 * address per thread for address registers): 0 independent, -1 unknown
 * non-zero, else known.  One forward pass in address order; values
 * computed in straight-line code before the loop that uses them, which
 * is how nvcc lays out index arithmetic.  A global access whose address
 * moves by more than its element size per thread is strided; a branch on
 * a predicate computed from a per-lane value diverges. */
/* Coefficient algebra: >= 0 known, SCALED = threadIdx.x times a value
 * known only at run time (a stride), VARIES = per lane, no linear form. */
#define VARIES (-1l)
#define SCALED (-2l)
static long coef_mul(long a, long b) {
  if (a == 0 || b == 0)
    return 0;
  if (a == VARIES || b == VARIES)
    return VARIES;
  if (a == SCALED || b == SCALED || a > (1l << 20) || b > (1l << 20))
    return b < 0 && a < 0 ? VARIES : SCALED;
  return a * b;
}
static long coef_add(long a, long b) {
  if (a == 0 || b == 0)
    return a == 0 ? b : a;
  if (a == VARIES || b == VARIES)
    return VARIES;
  if (a == SCALED || b == SCALED)
    return SCALED;
  return a + b;
}

#define MAXOPS 8

/* Operands of an instruction text (guard and opcode skipped), split at
 * top-level commas into ops[] (copied into buf). */
static unsigned split_ops(const char *text, char *buf, size_t bufn, char **ops) {
  snprintf(buf, bufn, "%s", text ? text : "");
  char *s = buf;
  s[strcspn(s, ";")] = 0;
  s += strspn(s, " \t");
  if (*s == '@') {
    s += strcspn(s, " \t");
    s += strspn(s, " \t");
  }
  s += strcspn(s, " \t"); /* opcode */
  unsigned n = 0;
  while (*s && n < MAXOPS) {
    s += strspn(s, " \t,");
    if (*s == 0)
      break;
    ops[n++] = s;
    int depth = 0;
    while (*s && (depth || *s != ',')) {
      depth += *s == '[' || *s == '{';
      depth -= (*s == ']' || *s == '}') && depth;
      s++;
    }
    if (*s)
      *s++ = 0;
  }
  return n;
}

/* Immediate value of an operand ("0x21", "33", "-0x4"), 1 if it is one. */
static int imm_val(const char *o, long *v) {
  char *e;
  if (o == NULL)
    return 0;
  *v = strtol(o, &e, 0);
  return e != o && (*e == 0 || *e == ' ');
}

/* Coefficient of the first R register of an operand (0 for constants). */
static long op_coef(const long *coef, const char *o) {
  gpd_adv_insn_t tmp;
  char b[128];
  if (o == NULL)
    return 0;
  snprintf(b, sizeof b, "MOV RZ, %s", o);
  if (gpd_adv_decode(b, &tmp) < 0)
    return 0;
  for (unsigned k = 0; k < tmp.nuse; k++)
    if (tmp.use[k] < GPD_ADV_RES_P)
      return coef[tmp.use[k]];
  return 0;
}

/* The thread-index coefficient of an instruction's first def. */
static long tid_coef(const long *coef, const gpd_adv_insn_t *in, char **ops, unsigned n,
                     long any) {
  const char *op = in->op;
  long v;
  if (in->tid && strncmp(op, "S2R", 3) == 0)
    return 1;
  if (strncmp(op, "MOV", 3) == 0)
    return op_coef(coef, n > 1 ? ops[1] : NULL);
  size_t ol = strlen(op);
  if ((ol > 2 && strcmp(op + ol - 2, ".X") == 0) || strstr(op, ".X.") || strstr(op, ".U64.HI"))
    return 0; /* the high word of an address */
  if (strncmp(op, "LOP3.LUT", 8) == 0 && n > 5 && strcmp(ops[5], "0xc0") == 0 &&
      imm_val(ops[2], &v) && v > 0) /* a & mask: lanes stay in order (until the wrap) */
    return op_coef(coef, ops[1]);
  if (strncmp(op, "IADD3", 5) == 0 || strcmp(op, "IADD") == 0 || strncmp(op, "VIADD", 5) == 0) {
    long r = 0;
    for (unsigned k = 1; k < n; k++)
      if (ops[k][0] != 'P' && ops[k][0] != '!')
        r = coef_add(r, op_coef(coef, ops[k]));
    return r;
  }
  if ((strncmp(op, "IMAD", 4) == 0 || strncmp(op, "IMUL", 4) == 0) && !strstr(op, ".HI")) {
    /* d, a, b[, c]: a * b + c */
    long ca = op_coef(coef, n > 1 ? ops[1] : NULL), prod;
    if (n > 2 && imm_val(ops[2], &v))
      prod = coef_mul(ca, v);
    else
      prod = ca != 0 || (n > 2 && op_coef(coef, ops[2]) != 0) ? SCALED : 0;
    return coef_add(prod, n > 3 ? op_coef(coef, ops[3]) : 0);
  }
  if (strncmp(op, "LEA", 3) == 0 && !strstr(op, ".HI")) {
    /* d, a, b, s: (a << s) + b */
    long ca = op_coef(coef, n > 1 ? ops[1] : NULL), cb = op_coef(coef, n > 2 ? ops[2] : NULL);
    if (n > 3 && imm_val(ops[3], &v) && v >= 0 && v < 20)
      return coef_add(coef_mul(ca, 1l << v), cb);
    return any ? -1 : 0;
  }
  if (strncmp(op, "SHF.L", 5) == 0) { /* d, a, s, b: a << s */
    long ca = op_coef(coef, n > 1 ? ops[1] : NULL);
    if (n > 2 && imm_val(ops[2], &v) && v >= 0 && v < 20)
      return coef_mul(ca, 1l << v);
    return any ? -1 : 0;
  }
  if (strncmp(op, "SHF.R", 5) == 0) { /* d, lo, s, hi: tid >> 5 or more is warp-uniform */
    long c = op_coef(coef, n > 1 ? ops[1] : NULL);
    c = coef_add(c, op_coef(coef, n > 3 ? ops[3] : NULL));
    if (c == 1 && n > 2 && imm_val(ops[2], &v) && v >= 5)
      return 0;
    return any ? -1 : 0;
  }
  if (in->cls == GPD_ADV_GLOBAL || in->cls == GPD_ADV_LOCAL || in->cls == GPD_ADV_SHARED ||
      in->cls == GPD_ADV_CONST)
    return 0; /* loaded data: not an index we can follow */
  return any ? -1 : 0;
}

void gpd__adv_tid(gpd_advice_t *a, const gpd_disasm_sec_t *sec) {
  long coef[GPD_ADV_NRES];
  memset(coef, 0, sizeof coef);
  for (size_t i = 0; i < a->ninsns; i++) {
    gpd_adv_insn_t *in = &a->insns[i];
    char buf[512], *ops[MAXOPS];
    unsigned n = split_ops(sec->insns[i].text, buf, sizeof buf, ops);
    long any = 0;
    for (unsigned k = 0; k < in->nuse; k++)
      if (in->use[k] < GPD_ADV_RES_SB && coef[in->use[k]] != 0)
        any = coef_add(any, coef[in->use[k]] < 0 ? -1 : 1);
    long res = in->ndef ? tid_coef(coef, in, ops, n, any) : 0;
    if (in->cls == GPD_ADV_GLOBAL) { /* the address register's coefficient */
      long c = 0;
      for (unsigned k = 0; k < n && c == 0; k++) {
        for (char *br = strchr(ops[k], '['); br && c == 0; br = strchr(br + 1, '[')) {
          char inner[96];
          snprintf(inner, sizeof inner, "%.*s", (int)strcspn(br + 1, "]"), br + 1);
          if (inner[0] == 'R')
            c = op_coef(coef, inner);
        }
      }
      unsigned elem = strstr(in->op, ".128") ? 16 : strstr(in->op, ".64") ? 8 : 4;
      if (strstr(in->op, ".U8") || strstr(in->op, ".S8"))
        elem = 1;
      else if (strstr(in->op, ".U16") || strstr(in->op, ".S16"))
        elem = 2;
      if (c == SCALED)
        in->stride = UINT32_MAX; /* threadIdx.x times a run-time stride */
      else if (c > (long)elem)
        in->stride = (uint32_t)c;
    }
    if (in->pred >= 0 && strncmp(in->op, "BRA", 3) == 0 && coef[in->pred] != 0)
      in->divergent = 1;
    for (unsigned k = 0; k < in->ndef; k++) {
      uint16_t d = in->def[k];
      if (d >= GPD_ADV_RES_SB)
        continue;
      if ((d >= GPD_ADV_RES_P && d < GPD_ADV_RES_UR) || (d >= GPD_ADV_RES_UP))
        coef[d] = any != 0 ? -1 : 0; /* a compare of per-lane values */
      else
        coef[d] = k == 0 ? res : 0; /* the high half of a pair: not an index */
      if (in->pred >= 0 && any && coef[d] == 0) /* predicated: some lanes keep the old value */
        coef[d] = -1;
    }
  }
}

/* ------------------------------------------------------ optimizers */

typedef struct match_s {
  double m;                   /* matched samples (stall elimination) */
  double ml;                  /* matched latency samples (latency hiding) */
  gpd_adv_hot_t hot[GPD_ADV_MAXHOT];
  size_t nhot;
} match_t;

static void match_add(match_t *x, const gpd_adv_blame_t *b, double m, double ml) {
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
    x->hot[x->nhot++] = (gpd_adv_hot_t){b->def, b->use, b->dist, b->reason, v};
  } else if (v > x->hot[GPD_ADV_MAXHOT - 1].samples) {
    x->hot[GPD_ADV_MAXHOT - 1] = (gpd_adv_hot_t){b->def, b->use, b->dist, b->reason, v};
  } else {
    return;
  }
sort:
  for (size_t i = x->nhot; i-- > 1;)
    if (x->hot[i].samples > x->hot[i - 1].samples) {
      gpd_adv_hot_t t = x->hot[i];
      x->hot[i] = x->hot[i - 1];
      x->hot[i - 1] = t;
    }
}

/* The innermost loop holding both instructions, -1 none. */
static int32_t common_loop(const gpd__adv_t *k, uint32_t i, uint32_t j) {
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

static void suggest(gpd_advice_t *a, gpd_adv_opt_t o, double matched, double speedup,
                    const match_t *x, int32_t loop, const char *why) {
  if (!(speedup > 1.0005) || !(matched > 0))
    return;
  gpd_adv_suggest_t *s = &a->sugg[a->nsugg++];
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

static int is_latency_reason(const gpd_adv_blame_t *b, const gpd_adv_insn_t *def) {
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

static int issues_always(const gpd_adv_insn_t *in) {
  return in->pred < 0;
}

/* Divergent branches: the samples of the shorter side of each (an
 * if/else whose lanes split runs both sides; uniform per warp, each warp
 * runs one).  Sides by layout: [branch+1, target) falls through; the
 * target side runs from the target to the first reconvergence (BSYNC,
 * WARPSYNC), unconditional branch or exit. */
static double divergence(const gpd_advice_t *a, const gpd_disasm_sec_t *sec, match_t *x) {
  double m = 0;
  for (size_t b = 0; b < a->ninsns; b++) {
    const gpd_adv_insn_t *in = &a->insns[b];
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
      const gpd_adv_insn_t *e = &a->insns[end];
      if (strncmp(e->op, "BSYNC", 5) == 0 || strncmp(e->op, "WARPSYNC", 8) == 0 ||
          ((strncmp(e->op, "BRA", 3) == 0 || strncmp(e->op, "EXIT", 4) == 0) && issues_always(e)))
        break;
      end++;
    }
    double ft = range_samples(a, b + 1, t), tg = range_samples(a, t, end);
    double side = ft < tg ? ft : tg;
    if (side > 0) {
      m += side;
      gpd_adv_blame_t pseudo = {(uint32_t)b, (uint32_t)(ft < tg ? b + 1 : t), 0, GPD_ADV__COUNT,
                                side, 0};
      match_add(x, &pseudo, side, 0);
      x->m -= side; /* counted by the caller */
    }
  }
  return m;
}

int gpd__adv_optimize(gpd__adv_t *k) {
  gpd_advice_t *a = k->a;
  double T = a->T, A = a->A;
  match_t mx[GPD_OPT__COUNT];
  memset(mx, 0, sizeof mx);
  double *loop_ml = calloc(k->nloops ? k->nloops : 1, sizeof *loop_ml);
  double *loop_a = calloc(k->nloops ? k->nloops : 1, sizeof *loop_a);
  match_t *loop_mx = calloc(k->nloops ? k->nloops : 1, sizeof *loop_mx);
  if (loop_ml == NULL || loop_a == NULL || loop_mx == NULL) {
    free(loop_ml);
    free(loop_a);
    free(loop_mx);
    return -ENOMEM;
  }
  double coal_k_num = 0, coal_m = 0;
  for (size_t q = 0; q < a->nblame; q++) {
    const gpd_adv_blame_t *b = &a->blame[q];
    const gpd_adv_insn_t *d = &a->insns[b->def], *u = &a->insns[b->use];
    int self = b->def == b->use;
    /* Register Reuse: local memory dependency / throttle (spills) */
    if (d->cls == GPD_ADV_LOCAL &&
        (b->reason == GPD_ADV_LONG_SB || b->reason == GPD_ADV_LG_THROTTLE))
      match_add(&mx[GPD_OPT_REGISTER_REUSE], b, b->samples, 0);
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
    if (self && (strncmp(u->op, "CALL", 4) == 0 || strncmp(u->op, "RET", 3) == 0))
      match_add(&mx[GPD_OPT_FUNCTION_INLINING], b, 0, b->latency);
  }
  char why[320];
  /* stall elimination (Eq. 2) */
  snprintf(why, sizeof why, "%.0f samples of local memory (spill) dependency and throttling",
           mx[GPD_OPT_REGISTER_REUSE].m);
  suggest(a, GPD_OPT_REGISTER_REUSE, mx[GPD_OPT_REGISTER_REUSE].m, eq2(T, mx[GPD_OPT_REGISTER_REUSE].m),
          &mx[GPD_OPT_REGISTER_REUSE], -1, why);
  snprintf(why, sizeof why, "%.0f samples wait on long-latency arithmetic (MUFU, conversions, FP64)",
           mx[GPD_OPT_STRENGTH_REDUCTION].m);
  suggest(a, GPD_OPT_STRENGTH_REDUCTION, mx[GPD_OPT_STRENGTH_REDUCTION].m,
          eq2(T, mx[GPD_OPT_STRENGTH_REDUCTION].m), &mx[GPD_OPT_STRENGTH_REDUCTION], -1, why);
  {
    double sync = mx[GPD_OPT_WARP_BALANCE].m;
    double div = divergence(a, k->in->sec, &mx[GPD_OPT_WARP_BALANCE]);
    double m = sync + div;
    mx[GPD_OPT_WARP_BALANCE].m = m;
    snprintf(why, sizeof why,
             "%.0f samples wait at barriers, %.0f on the shorter side of "
             "branches that diverge within a warp",
             sync, div);
    suggest(a, GPD_OPT_WARP_BALANCE, m, eq2(T, m), &mx[GPD_OPT_WARP_BALANCE], -1, why);
  }
  snprintf(why, sizeof why, "%.0f samples of global memory throttling",
           mx[GPD_OPT_MEMORY_TRANSACTION].m);
  suggest(a, GPD_OPT_MEMORY_TRANSACTION, mx[GPD_OPT_MEMORY_TRANSACTION].m,
          eq2(T, mx[GPD_OPT_MEMORY_TRANSACTION].m), &mx[GPD_OPT_MEMORY_TRANSACTION], -1, why);
  snprintf(why, sizeof why,
           "%.0f samples at or waiting on global accesses whose address moves by more than "
           "an element per thread; coalesced, the sectors per request shrink, so %.0f of "
           "them go",
           coal_m, coal_k_num);
  suggest(a, GPD_OPT_COALESCING, coal_m, eq2(T, coal_k_num), &mx[GPD_OPT_COALESCING], -1, why);
  snprintf(why, sizeof why, "%.0f samples of instruction fetch stalls",
           mx[GPD_OPT_FUNCTION_SPLIT].m);
  suggest(a, GPD_OPT_FUNCTION_SPLIT, mx[GPD_OPT_FUNCTION_SPLIT].m,
          eq2(T, mx[GPD_OPT_FUNCTION_SPLIT].m), &mx[GPD_OPT_FUNCTION_SPLIT], -1, why);
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
    suggest(a, GPD_OPT_LOOP_UNROLLING, loop_ml[best], best_s, &loop_mx[best], best, why);
  }
  snprintf(why, sizeof why,
           "%.0f latency samples of dependencies outside loops, %.0f active samples (Eq. 4)",
           mx[GPD_OPT_CODE_REORDER].ml, A);
  suggest(a, GPD_OPT_CODE_REORDER, mx[GPD_OPT_CODE_REORDER].ml,
          eq4(T, A, mx[GPD_OPT_CODE_REORDER].ml), &mx[GPD_OPT_CODE_REORDER], -1, why);
  snprintf(why, sizeof why,
           "%.0f latency samples in device functions and at their calls and returns",
           mx[GPD_OPT_FUNCTION_INLINING].ml);
  suggest(a, GPD_OPT_FUNCTION_INLINING, mx[GPD_OPT_FUNCTION_INLINING].ml,
          eq4(T, A, mx[GPD_OPT_FUNCTION_INLINING].ml), &mx[GPD_OPT_FUNCTION_INLINING], -1, why);
  free(loop_ml);
  free(loop_a);
  free(loop_mx);
  /* parallel optimizers (Eqs. 6-10) */
  const gpd_adv_launch_t *L = &k->in->launch;
  double issued = 0;
  for (size_t i = 0; i < a->ninsns; i++)
    issued += a->issued[i];
  double RI = T > 0 ? issued / T : 0;
  uint32_t blocks, warps, maxw;
  const char *lim;
  if (T > 0 && RI > 0 && RI < 1 &&
      gpd_adv_occupancy(L->sm, L->threads, L->regs, L->smem_static + L->smem_dynamic, &blocks,
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
      suggest(a, GPD_OPT_BLOCK_INCREASE, T, sp, NULL, -1, why);
    } else {
      /* the occupancy without the binding limit: Thread Increase when
       * the per-SM block limit binds, Occupancy Increase for registers
       * and shared memory; the total work per scheduler stays, so
       * S_p = C_I (f = 1, C_W's work term cancels) */
      uint32_t b2, w2, m2;
      const char *l2;
      int rc = -1;
      gpd_adv_opt_t o = GPD_OPT_OCCUPANCY;
      if (strcmp(lim, "blocks per SM") == 0) {
        o = GPD_OPT_THREAD_INCREASE;
        double t2 = L->threads;
        while (t2 < 1024) {
          t2 = t2 * 2 > 1024 ? 1024 : t2 * 2;
          rc = gpd_adv_occupancy(L->sm, t2, L->regs, L->smem_static + L->smem_dynamic, &b2, &w2,
                                 &m2, &l2);
          if (rc == 0 && strcmp(l2, "blocks per SM") != 0)
            break;
        }
      } else if (strcmp(lim, "registers") == 0) {
        rc = gpd_adv_occupancy(L->sm, L->threads, 0, L->smem_static + L->smem_dynamic, &b2, &w2,
                               &m2, &l2);
      } else if (strcmp(lim, "shared memory") == 0) {
        rc = gpd_adv_occupancy(L->sm, L->threads, L->regs, 0, &b2, &w2, &m2, &l2);
      }
      if (rc == 0 && w2 > warps) {
        double Wn = W * w2 / warps;
        if (L->blocks > 0 && L->sm_count > 0) { /* no more warps than the grid has */
          double have = ceil(L->blocks / L->sm_count) * wpb / 4;
          if (Wn > have)
            Wn = have > W ? have : W;
        }
        double In = 1 - pow(1 - RI, Wn);
        a->occupancy_new = Wn * 4 / maxw;
        snprintf(why, sizeof why,
                 "occupancy %.0f %% (%u warps of %u per SM, limited by %s) -> %.0f %%: %.2f -> "
                 "%.2f warps per scheduler, issue rate %.3f -> %.3f (R_I %.3f)",
                 100.0 * warps / maxw, warps, maxw, lim, 100.0 * Wn * 4 / maxw, W, Wn, I, In, RI);
        suggest(a, o, T, In / I, NULL, -1, why);
      }
    }
  }
  /* rank */
  for (size_t i = 1; i < a->nsugg; i++)
    for (size_t j = i; j > 0 && a->sugg[j].speedup > a->sugg[j - 1].speedup; j--) {
      gpd_adv_suggest_t t = a->sugg[j];
      a->sugg[j] = a->sugg[j - 1];
      a->sugg[j - 1] = t;
    }
  return 0;
}

/* ---------------------------------------------------------- driver */

void gpd_advice_free(gpd_advice_t *a) {
  if (a == NULL)
    return;
  free(a->insns);
  free(a->samples);
  free(a->latency);
  free(a->issued);
  free(a->blame);
  free(a);
}

static void k_free(gpd__adv_t *k) {
  free(k->block_of);
  free(k->block_first);
  free(k->block_last);
  free(k->pred_first);
  free(k->preds);
  free(k->loop_of);
  free(k->loop_parent);
  free(k->loop_head);
  free(k->func_of);
  free(k->agg);
}

static size_t lower_idx(const gpd_disasm_sec_t *sec, uint64_t off) {
  size_t lo = 0, hi = sec->ninsns;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (sec->insns[mid].off < off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void note(gpd_advice_t *a, const char *msg) {
  size_t n = strlen(a->notes);
  snprintf(a->notes + n, sizeof a->notes - n, "%s%s", n ? "; " : "", msg);
}

/* Room for element n in two parallel arrays of 32-bit values. */
static int grow2(void **x, void **y, size_t *cap, size_t n, size_t first) {
  if (n < *cap)
    return 0;
  size_t c = *cap ? 2 * *cap : first;
  void *nx = realloc(*x, c * sizeof(uint32_t));
  if (nx == NULL)
    return -ENOMEM;
  *x = nx;
  void *ny = realloc(*y, c * sizeof(uint32_t));
  if (ny == NULL)
    return -ENOMEM;
  *y = ny;
  *cap = c;
  return 0;
}

/* Blocks, predecessors and loops of every function of the section. */
static int structure(gpd__adv_t *k) {
  const gpd_disasm_sec_t *sec = k->in->sec;
  size_t n = sec->ninsns, capb = 0, capl = 0, cape = 0, ne = 0;
  uint32_t *eto = NULL, *efrom = NULL;
  int err = 0;
  if ((k->block_of = malloc(n * sizeof *k->block_of)) == NULL ||
      (k->loop_of = malloc(n * sizeof *k->loop_of)) == NULL ||
      (k->func_of = malloc(n * sizeof *k->func_of)) == NULL)
    return -ENOMEM;
  k->kernel_func = -1;
  const gpd_cubin_t *c = k->in->cubin;
  for (size_t i = 0; i < n; i++) {
    k->block_of[i] = -1;
    k->loop_of[i] = -1;
    k->func_of[i] = -1;
    const gpd_cubin_func_t *f = c ? gpd_cubin_func_at(c, k->in->section, sec->insns[i].off) : NULL;
    if (f)
      k->func_of[i] = (int32_t)(f - c->funcs);
  }
  if (c) {
    const gpd_cubin_func_t *kf = gpd_cubin_func_at(c, k->in->section, k->in->kernel_lo);
    k->kernel_func = kf ? (int32_t)(kf - c->funcs) : -1;
  }
  for (size_t s0 = 0; s0 < n && err == 0;) {
    size_t s1 = s0 + 1;
    while (s1 < n && k->func_of[s1] == k->func_of[s0])
      s1++;
    uint64_t lo = sec->insns[s0].off, hi = s1 < n ? sec->insns[s1].off : sec->insns[s1 - 1].off + 16;
    gpd_cfg_t *g = NULL;
    int rc = gpd_cfg_build(sec, lo, hi, &g);
    if (rc == -ENOMEM)
      err = rc;
    if (rc < 0) {
      s0 = s1;
      continue;
    }
    size_t b0 = k->nblocks, l0 = k->nloops;
    for (size_t b = 0; b < g->nblocks && err == 0; b++) {
      if (grow2((void **)&k->block_first, (void **)&k->block_last, &capb, k->nblocks, 64) < 0) {
        err = -ENOMEM;
        break;
      }
      size_t f = lower_idx(sec, g->blocks[b].lo), l = lower_idx(sec, g->blocks[b].hi);
      k->block_first[k->nblocks] = (uint32_t)f;
      k->block_last[k->nblocks] = (uint32_t)(l > f ? l - 1 : 0);
      for (size_t i = f; i < l; i++) {
        k->block_of[i] = (int32_t)k->nblocks;
        k->loop_of[i] = g->blocks[b].loop >= 0 ? (int32_t)(l0 + (size_t)g->blocks[b].loop) : -1;
      }
      for (uint32_t s = 0; s < g->blocks[b].nsucc; s++) {
        if (grow2((void **)&eto, (void **)&efrom, &cape, ne, 256) < 0) {
          err = -ENOMEM;
          break;
        }
        efrom[ne] = (uint32_t)k->nblocks;
        eto[ne] = (uint32_t)(b0 + g->blocks[b].succ[s]);
        ne++;
      }
      k->nblocks++;
    }
    for (size_t l = 0; l < g->nloops && err == 0; l++) {
      if (grow2((void **)&k->loop_parent, (void **)&k->loop_head, &capl, k->nloops, 16) < 0) {
        err = -ENOMEM;
        break;
      }
      k->loop_parent[k->nloops] = g->loops[l].parent >= 0 ? (int32_t)(l0 + (size_t)g->loops[l].parent) : -1;
      k->loop_head[k->nloops] = (uint32_t)lower_idx(sec, g->loops[l].head_off);
      k->nloops++;
    }
    gpd_cfg_free(g);
    s0 = s1;
  }
  /* predecessors, CSR */
  if (err == 0 && (k->pred_first = calloc(k->nblocks + 2, sizeof *k->pred_first)) == NULL)
    err = -ENOMEM;
  if (err == 0 && (k->preds = malloc((ne ? ne : 1) * sizeof *k->preds)) == NULL)
    err = -ENOMEM;
  if (err == 0) {
    for (size_t e = 0; e < ne; e++)
      k->pred_first[eto[e] + 1]++;
    for (size_t b = 0; b < k->nblocks; b++)
      k->pred_first[b + 1] += k->pred_first[b];
    uint32_t *fill = calloc(k->nblocks + 1, sizeof *fill);
    if (fill == NULL) {
      err = -ENOMEM;
    } else {
      for (size_t e = 0; e < ne; e++)
        k->preds[k->pred_first[eto[e]] + fill[eto[e]]++] = efrom[e];
      free(fill);
    }
  }
  free(eto);
  free(efrom);
  return err;
}

static int agg_cmp(const void *x, const void *y) {
  const gpd__agg_t *a = x, *b = y;
  if (a->idx != b->idx)
    return a->idx < b->idx ? -1 : 1;
  return a->reason < b->reason ? -1 : a->reason > b->reason;
}

int gpd_advise(const gpd_adv_input_t *in, gpd_advice_t **out) {
  if (in == NULL || out == NULL || in->sec == NULL || in->sec->ninsns == 0)
    return -EINVAL;
  *out = NULL;
  const gpd_disasm_sec_t *sec = in->sec;
  size_t n = sec->ninsns;
  gpd__adv_t k = {.in = in};
  gpd_advice_t *a = calloc(1, sizeof *a);
  int err = -ENOMEM;
  if (a == NULL)
    return -ENOMEM;
  k.a = a;
  a->ninsns = n;
  if ((a->insns = calloc(n, sizeof *a->insns)) == NULL ||
      (a->samples = calloc(n, sizeof *a->samples)) == NULL ||
      (a->latency = calloc(n, sizeof *a->latency)) == NULL ||
      (a->issued = calloc(n, sizeof *a->issued)) == NULL)
    goto out;
  size_t unknown = 0;
  for (size_t i = 0; i < n; i++) {
    gpd_adv_insn_t *d = &a->insns[i];
    if (gpd_adv_decode(sec->insns[i].text, d) < 0) {
      memset(d, 0, sizeof *d);
      d->pred = -1;
      d->wbar = d->rbar = 7;
      snprintf(d->op, sizeof d->op, "%s", sec->insns[i].opcode);
      unknown++;
    }
    d->off = sec->insns[i].off;
    uint64_t slot = d->off / 16;
    if (in->ctrl && d->off % 16 == 0 && slot < in->nctrl) {
      gpd_adv_apply_ctrl(d, in->ctrl[slot]);
      a->have_ctrl = 1;
    }
  }
  if (unknown) {
    char m[96];
    snprintf(m, sizeof m, "%zu instructions without operands", unknown);
    note(a, m);
  }
  if (!a->have_ctrl)
    note(a, "no control bits: scoreboard dependencies approximated by registers");
  gpd__adv_tid(a, sec);
  if ((err = structure(&k)) < 0)
    goto out;
  /* samples -> instructions */
  if (in->ns && (k.agg = malloc(in->ns * sizeof *k.agg)) == NULL) {
    err = -ENOMEM;
    goto out;
  }
  for (size_t q = 0; q < in->ns; q++) {
    const gpd_adv_psamp_t *s = &in->s[q];
    double sm = s->samples > 0 && s->samples < 1e15 ? s->samples : 0;
    double lt = s->latency > 0 && s->latency < 1e15 ? s->latency : 0;
    uint64_t off = s->pc + in->kernel_lo;
    size_t i = lower_idx(sec, off);
    if (s->reason >= GPD_ADV__COUNT || i >= n || sec->insns[i].off != off || off < s->pc) {
      a->unplaced += sm;
      continue;
    }
    k.agg[k.nagg++] = (gpd__agg_t){(uint32_t)i, s->reason, sm, lt};
  }
  if (k.nagg > 1)
    qsort(k.agg, k.nagg, sizeof *k.agg, agg_cmp);
  size_t m = 0;
  for (size_t q = 0; q < k.nagg; q++) {
    if (m && k.agg[m - 1].idx == k.agg[q].idx && k.agg[m - 1].reason == k.agg[q].reason) {
      k.agg[m - 1].samples += k.agg[q].samples;
      k.agg[m - 1].latency += k.agg[q].latency;
    } else {
      k.agg[m++] = k.agg[q];
    }
  }
  k.nagg = m;
  for (size_t q = 0; q < k.nagg; q++) {
    gpd__agg_t *g = &k.agg[q];
    if (g->latency > g->samples) /* a subset of the samples, never more */
      g->latency = g->samples;
    a->samples[g->idx] += g->samples;
    a->latency[g->idx] += g->latency;
    if (g->reason == GPD_ADV_SELECTED)
      a->issued[g->idx] += g->samples;
    a->T += g->samples;
    a->L += g->latency;
  }
  a->A = a->T - a->L;
  if (a->unplaced > 0) {
    char msg[96];
    snprintf(msg, sizeof msg, "%.0f samples at no instruction of the kernel", a->unplaced);
    note(a, msg);
  }
  if ((err = gpd__adv_blame(&k)) < 0 || (err = gpd__adv_optimize(&k)) < 0)
    goto out;
  err = 0;
out:
  k_free(&k);
  if (err < 0) {
    gpd_advice_free(a);
    return err;
  }
  *out = a;
  return 0;
}
