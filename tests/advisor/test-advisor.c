/* test-advisor.c - the advisor (analyzer/advisor*.c): SASS operand
 * decoding, the instruction blamer (backward slicing with predicates and
 * scoreboards, the three pruning rules, Eq. 1), each estimator on
 * synthetic instruction streams whose right answer is known by
 * construction, the occupancy calculator, bad input, and the control bits
 * of a real H100 cubin.
 *
 * argv[1]: the fixture folder of tests/gpuanalysis (an H100 cubin and
 * nvdisasm's text of it).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "advisor.h"

static const char *fixtures;

/* ------------------------------------------------------------ helpers */

typedef struct kern_s {
  gpd_disasm_t *d;
  const gpd_disasm_sec_t *sec;
  gpd_advice_t *a;
} kern_t;

/* nvdisasm-like text from instruction lines "LABEL:" or "TEXT" at 16-byte steps */
static char *mktext(const char *const *lines) {
  size_t cap = 1 << 16, n = 0;
  char *t = malloc(cap);
  assert_non_null(t);
  n += (size_t)snprintf(t + n, cap - n, "\t.section\t.text.k,\"ax\",@progbits\n.text.k:\n");
  unsigned off = 0;
  for (; *lines; lines++) {
    size_t l = strlen(*lines);
    if (l && (*lines)[l - 1] == ':')
      n += (size_t)snprintf(t + n, cap - n, "%s\n", *lines);
    else {
      n += (size_t)snprintf(t + n, cap - n, "        /*%04x*/                   %s ;\n", off, *lines);
      off += 16;
    }
  }
  return t;
}

static void run(kern_t *k, const char *const *lines, const gpd_advisor_psamp_t *s, size_t ns,
                const uint64_t *ctrl, size_t nctrl, const gpd_advisor_launch_t *launch) {
  char *t = mktext(lines);
  assert_int_equal(gpd_disasm_parse(t, strlen(t), &k->d), 0);
  free(t);
  k->sec = gpd_disasm_section(k->d, "k");
  assert_non_null(k->sec);
  gpd_advisor_input_t in = {.sec = k->sec, .ctrl = ctrl, .nctrl = nctrl, .s = s, .ns = ns};
  if (launch)
    in.launch = *launch;
  assert_int_equal(gpd_advisor_run(&in, &k->a), 0);
}

static void done(kern_t *k) {
  gpd_advisor_free(k->a);
  gpd_disasm_free(k->d);
}

/* samples blamed on def (from use, when use >= 0) for reason r */
static double blamed(const gpd_advice_t *a, uint32_t def, int use, uint32_t r) {
  double s = 0;
  for (size_t i = 0; i < a->nblame; i++)
    if (a->blame[i].def == def && (use < 0 || a->blame[i].use == (uint32_t)use) &&
        a->blame[i].reason == r)
      s += a->blame[i].samples;
  return s;
}

static const gpd_advisor_suggest_t *sugg(const gpd_advice_t *a, gpd_advisor_opt_t o) {
  for (size_t i = 0; i < a->nsugg; i++)
    if (a->sugg[i].opt == o)
      return &a->sugg[i];
  return NULL;
}

/* Advise lines with samples s (no launch) and check optimizer o's matched
 * samples and estimate; the advice stays in *k for more checks. */
static const gpd_advisor_suggest_t *expect(kern_t *k, const char *const *lines,
                                       const gpd_advisor_psamp_t *s, size_t ns, gpd_advisor_opt_t o,
                                       double matched, double speedup) {
  run(k, lines, s, ns, NULL, 0, NULL);
  const gpd_advisor_suggest_t *g = sugg(k->a, o);
  assert_non_null(g);
  assert_float_equal(g->matched, matched, 1e-9);
  assert_float_equal(g->speedup, speedup, 1e-9);
  return g;
}

static int has(const uint16_t *set, unsigned n, int r) {
  for (unsigned i = 0; i < n; i++)
    if (set[i] == r)
      return 1;
  return 0;
}

#define R(n) (GPD_ADV_RES_R + (n))
#define P(n) (GPD_ADV_RES_P + (n))
#define UR(n) (GPD_ADV_RES_UR + (n))
#define SB(n) (GPD_ADV_RES_SB + (n))
#define PC(i) ((uint64_t)(i) * 16)

/* ------------------------------------------------------------- decode */

static void test_decode(void **state) {
  (void)state;
  gpd_advisor_insn_t in;
  assert_int_equal(gpd_advisor_decode("@!P0 LDG.E.64 R4, desc[UR4][R2.64+0x10]", &in), 0);
  assert_string_equal(in.op, "LDG.E.64");
  assert_int_equal(in.cls, GPD_ADV_GLOBAL);
  assert_int_equal(in.pred, P(0));
  assert_int_equal(in.pred_neg, 1);
  assert_int_equal(in.ndef, 2); /* R4, R5 */
  assert_true(has(in.def, in.ndef, R(4)) && has(in.def, in.ndef, R(5)));
  assert_true(has(in.use, in.nuse, R(2)) && has(in.use, in.nuse, R(3)));
  assert_true(has(in.use, in.nuse, UR(4)) && has(in.use, in.nuse, UR(5)));
  assert_true(has(in.use, in.nuse, P(0))); /* the guard is read */

  assert_int_equal(gpd_advisor_decode("ISETP.GE.AND P0, PT, R0, UR5, PT", &in), 0);
  assert_int_equal(in.ndef, 1);
  assert_int_equal(in.def[0], P(0));
  assert_int_equal(in.nuse, 2);

  assert_int_equal(gpd_advisor_decode("IADD3 R4, P1, R2, R4, RZ", &in), 0);
  assert_int_equal(in.ndef, 2);
  assert_true(has(in.def, in.ndef, R(4)) && has(in.def, in.ndef, P(1)));
  assert_true(has(in.use, in.nuse, R(2)) && has(in.use, in.nuse, R(4)));

  assert_int_equal(gpd_advisor_decode("STG.E.64 desc[UR4][R2.64], R6", &in), 0);
  assert_int_equal(in.ndef, 0);
  assert_int_equal(in.store, 1);
  assert_true(has(in.use, in.nuse, R(6)) && has(in.use, in.nuse, R(7)));

  assert_int_equal(gpd_advisor_decode("IMAD.WIDE R2, R7, 0x4, R4", &in), 0);
  assert_true(has(in.def, in.ndef, R(2)) && has(in.def, in.ndef, R(3)));
  assert_true(has(in.use, in.nuse, R(4)) && has(in.use, in.nuse, R(5)));

  assert_int_equal(gpd_advisor_decode("DFMA R4, R6, R8, R10", &in), 0);
  assert_int_equal(in.cls, GPD_ADV_LONGOP);
  assert_int_equal(in.ndef, 2);
  assert_int_equal(in.nuse, 6);

  assert_int_equal(gpd_advisor_decode("FFMA R5, -R4.reuse, |R5|, R6.H1", &in), 0);
  assert_int_equal(in.nuse, 3);

  assert_int_equal(gpd_advisor_decode("LDL R9, [R1+0x10]", &in), 0);
  assert_int_equal(in.cls, GPD_ADV_LOCAL);
  assert_int_equal(gpd_advisor_decode("MUFU.RCP R3, R2", &in), 0);
  assert_int_equal(in.cls, GPD_ADV_LONGOP);
  assert_int_equal(gpd_advisor_decode("BAR.SYNC.DEFER_BLOCKING 0x0", &in), 0);
  assert_int_equal(in.cls, GPD_ADV_SYNC);
  assert_int_equal(in.ndef + in.nuse, 0);
  assert_int_equal(gpd_advisor_decode("@PT NOP", &in), 0);
  assert_int_equal(in.pred, -1);

  /* bad input: unknown opcodes, constants, out-of-range registers, noise */
  assert_int_equal(gpd_advisor_decode("FOOBAR.X R1, R2, RZ, PT", &in), 0);
  assert_int_equal(in.cls, GPD_ADV_FIXED);
  assert_int_equal(in.ndef, 1);
  assert_int_equal(in.nuse, 1);
  assert_int_equal(gpd_advisor_decode("MOV R300, R999999999999", &in), 0);
  assert_int_equal(in.ndef + in.nuse, 0);
  assert_int_equal(gpd_advisor_decode("", &in), -EINVAL);
  assert_int_equal(gpd_advisor_decode("   @P0   ", &in), -EINVAL);
  assert_int_equal(gpd_advisor_decode(NULL, &in), -EINVAL);
  char big[4096];
  memset(big, 'R', sizeof big - 1);
  big[sizeof big - 1] = 0;
  big[0] = 'M', big[1] = 'O', big[2] = 'V', big[3] = ' ';
  assert_int_equal(gpd_advisor_decode(big, &in), 0);
  char many[2048] = "IADD3 R1";
  for (int i = 0; i < 100; i++)
    snprintf(many + strlen(many), sizeof many - strlen(many), ", R%d", i + 2);
  assert_int_equal(gpd_advisor_decode(many, &in), 0);
  assert_int_equal(in.nuse, GPD_ADV_MAXUSE); /* bounded */

  /* reasons */
  int lat;
  assert_int_equal(gpd_advisor_reason_from_vendor("smsp__pcsamp_warps_issue_stalled_long_scoreboard", &lat),
                   GPD_ADV_LONG_SB);
  assert_int_equal(lat, 0);
  assert_int_equal(gpd_advisor_reason_from_vendor("smsp__pcsamp_warps_issue_stalled_wait_not_issued", &lat),
                   GPD_ADV_WAIT);
  assert_int_equal(lat, 1);
  assert_int_equal(gpd_advisor_reason_from_vendor("selected", &lat), GPD_ADV_SELECTED);
  assert_int_equal(gpd_advisor_reason_from_vendor("no such reason", &lat), GPD_ADV_OTHER);
  assert_int_equal(gpd_advisor_reason_from_vendor("_not_issued", &lat), GPD_ADV_OTHER);
}

/* ------------------------------------------------------------ blamer */

/* GPA Fig. 4: IADD reads R0, defined by @P0 LDG (path 5, issued 1), by
 * @!P0 LDC (path 10, issued 2) and by @P1 IMAD (pruned by opcode: an
 * arithmetic instruction causes no memory dependency).  Eq. 1 gives the
 * LDG and the LDC the same share: 2 and 2 of 4 stalls. */
static void test_fig4(void **state) {
  (void)state;
  static const char *const k[] = {
      "@!P0 LDC R0, c[0x0][R4]",  /* 0: path 10 */
      "IADD3 R20, R21, R22, RZ",  /* 1 */
      "@P1 IMAD R0, R4, R5, RZ",  /* 2: path 8, pruned (opcode) */
      "IADD3 R23, R21, R22, RZ",  /* 3 */
      "IADD3 R24, R21, R22, RZ",  /* 4 */
      "@P0 LDG.E R0, desc[UR4][R2.64]", /* 5: path 5 */
      "IADD3 R25, R21, R22, RZ",  /* 6 */
      "IADD3 R26, R21, R22, RZ",  /* 7 */
      "IADD3 R27, R21, R22, RZ",  /* 8 */
      "IADD3 R28, R21, R22, RZ",  /* 9 */
      "IADD3 R8, R0, R7, RZ",     /* 10: 4 long scoreboard stalls */
      "EXIT", NULL};
  gpd_advisor_psamp_t s[] = {
      {PC(5), GPD_ADV_SELECTED, 1, 0},
      {PC(0), GPD_ADV_SELECTED, 2, 0},
      {PC(2), GPD_ADV_SELECTED, 5, 0},
      {PC(10), GPD_ADV_LONG_SB, 4, 0},
      {PC(10), GPD_ADV_LONG_SB, 0, 3}, /* the "_not_issued" subset */
  };
  kern_t x;
  run(&x, k, s, 5, NULL, 0, NULL);
  const gpd_advice_t *a = x.a;
  assert_float_equal(a->T, 12, 1e-9);
  assert_float_equal(a->L, 3, 1e-9);
  assert_float_equal(a->A, 9, 1e-9);
  assert_float_equal(blamed(a, 5, 10, GPD_ADV_LONG_SB), 2, 1e-9);
  assert_float_equal(blamed(a, 0, 10, GPD_ADV_LONG_SB), 2, 1e-9);
  assert_float_equal(blamed(a, 2, 10, GPD_ADV_LONG_SB), 0, 1e-9);
  assert_float_equal(blamed(a, 10, 10, GPD_ADV_LONG_SB), 0, 1e-9);
  for (size_t i = 0; i < a->nblame; i++)
    if (a->blame[i].use == 10 && a->blame[i].def == 5) {
      assert_int_equal(a->blame[i].dist, 5);
      assert_float_equal(a->blame[i].latency, 1.5, 1e-9);
    } else if (a->blame[i].use == 10 && a->blame[i].def == 0) {
      assert_int_equal(a->blame[i].dist, 10);
    }
  assert_true(strstr(a->notes, "no control bits") != NULL);
  done(&x);
}

/* Rule 2 (dominating use) and rule 3 (latency); stalls with no cause
 * found stay where they were seen. */
static void test_pruning(void **state) {
  (void)state;
  static const char *const k[] = {
      "LDG.E R0, desc[UR4][R2.64]", /* 0 */
      "IADD3 R5, R0, R1, RZ",       /* 1: uses R0 on every path to 2 */
      "FADD R6, R0, R7",            /* 2: long scoreboard: not the LDG's (rule 2) */
      "FADD R9, R10, R11",          /* 3: def of R9 */
      "IADD3 R20, R21, R22, RZ", "IADD3 R20, R21, R22, RZ", "IADD3 R20, R21, R22, RZ",
      "IADD3 R20, R21, R22, RZ", "IADD3 R20, R21, R22, RZ", "IADD3 R20, R21, R22, RZ",
      "IADD3 R20, R21, R22, RZ", "IADD3 R20, R21, R22, RZ", "IADD3 R20, R21, R22, RZ",
      "IADD3 R20, R21, R22, RZ", "IADD3 R20, R21, R22, RZ", "IADD3 R20, R21, R22, RZ",
      "IADD3 R20, R21, R22, RZ", "IADD3 R20, R21, R22, RZ", "IADD3 R20, R21, R22, RZ",
      "IADD3 R20, R21, R22, RZ",    /* 4..19 */
      "FMUL R12, R9, R9",           /* 20: wait, def 17 instructions back: pruned (rule 3) */
      "FADD R13, R12, R12",         /* 21: wait, def 1 back: kept */
      "EXIT", NULL};
  gpd_advisor_psamp_t s[] = {
      {PC(2), GPD_ADV_LONG_SB, 7, 7},
      {PC(20), GPD_ADV_WAIT, 3, 0},
      {PC(21), GPD_ADV_WAIT, 5, 5},
  };
  kern_t x;
  run(&x, k, s, 3, NULL, 0, NULL);
  assert_float_equal(blamed(x.a, 0, 2, GPD_ADV_LONG_SB), 0, 1e-9);
  assert_float_equal(blamed(x.a, 2, 2, GPD_ADV_LONG_SB), 7, 1e-9);
  assert_float_equal(blamed(x.a, 3, 20, GPD_ADV_WAIT), 0, 1e-9);
  assert_float_equal(blamed(x.a, 20, 20, GPD_ADV_WAIT), 3, 1e-9);
  assert_float_equal(blamed(x.a, 20, 21, GPD_ADV_WAIT), 5, 1e-9);
  done(&x);
}

static uint64_t ctrl(unsigned stall, unsigned wbar, unsigned rbar, unsigned wait) {
  uint64_t c = stall | (wbar << 5) | (rbar << 8) | (wait << 11);
  return c << 41;
}

/* Scoreboards as virtual registers (GPA Fig. 3): the BRA reads no
 * register of the LDG but waits on its barrier SB0: its memory stalls are
 * the LDG's.  The control bits decode as the assembler wrote them. */
static void test_barriers(void **state) {
  (void)state;
  static const char *const k[] = {
      "LDG.E R0, desc[UR4][R2.64]",   /* 0: sets SB0 */
      "LDS R4, [R5]",                 /* 1: sets SB1 */
      "IADD3 R20, R21, R22, RZ",      /* 2 */
      "BRA `(.L_x_1)",                /* 3: waits on SB0 */
      ".L_x_1:",
      "FADD R6, R4, R4",              /* 4: waits on SB1: short scoreboard */
      "EXIT", NULL};
  uint64_t c[] = {ctrl(1, 0, 7, 0), ctrl(1, 1, 7, 0), ctrl(4, 7, 7, 0), ctrl(5, 7, 7, 1),
                  ctrl(2, 7, 7, 2), ctrl(5, 7, 7, 0)};
  gpd_advisor_psamp_t s[] = {
      {PC(3), GPD_ADV_LONG_SB, 10, 10},
      {PC(4), GPD_ADV_SHORT_SB, 6, 2},
  };
  kern_t x;
  run(&x, k, s, 2, c, 6, NULL);
  const gpd_advice_t *a = x.a;
  assert_int_equal(a->have_ctrl, 1);
  assert_int_equal(a->insns[0].wbar, 0);
  assert_int_equal(a->insns[0].rbar, 7);
  assert_int_equal(a->insns[3].wait, 1);
  assert_int_equal(a->insns[3].stall, 5);
  assert_true(has(a->insns[0].def, a->insns[0].ndef, SB(0)));
  assert_true(has(a->insns[3].use, a->insns[3].nuse, SB(0)));
  assert_float_equal(blamed(a, 0, 3, GPD_ADV_LONG_SB), 10, 1e-9);
  assert_float_equal(blamed(a, 1, 4, GPD_ADV_SHORT_SB), 6, 1e-9);
  done(&x);
}

/* ------------------------------------------------------ estimators */

/* Register Reuse (Eq. 2): 30 of 100 samples wait on a local load. */
static void test_register_reuse(void **state) {
  (void)state;
  static const char *const k[] = {"LDL R0, [R1+0x8]", "FADD R4, R0, R5", "EXIT", NULL};
  gpd_advisor_psamp_t s[] = {{PC(1), GPD_ADV_LONG_SB, 30, 30}, {PC(0), GPD_ADV_SELECTED, 70, 0}};
  kern_t x;
  run(&x, k, s, 2, NULL, 0, NULL);
  const gpd_advisor_suggest_t *g = sugg(x.a, GPD_OPT_REGISTER_REUSE);
  assert_non_null(g);
  assert_float_equal(g->matched, 30, 1e-9);
  assert_float_equal(g->speedup, 100.0 / 70.0, 1e-9);
  assert_int_equal(x.a->sugg[0].opt, GPD_OPT_REGISTER_REUSE);
  assert_int_equal(g->nhot, 1);
  assert_int_equal(g->hot[0].def, 0);
  assert_int_equal(g->hot[0].use, 1);
  done(&x);
  /* a global load throttled by a queue that local accesses share: the
   * LDL issues 10 of the 40 LSU issues, so 1/4 of the LDG's 40
   * lg_throttle samples is the spill's; T 30 + 40 + 10 + 30 = 110 */
  static const char *const k2[] = {"LDL R0, [R1+0x8]", "LDG.E R6, desc[UR4][R2.64]",
                                   "FADD R4, R0, R6", "EXIT", NULL};
  gpd_advisor_psamp_t s2[] = {{PC(2), GPD_ADV_LONG_SB, 30, 30},
                          {PC(1), GPD_ADV_LG_THROTTLE, 40, 40},
                          {PC(0), GPD_ADV_SELECTED, 10, 0},
                          {PC(1), GPD_ADV_SELECTED, 30, 0}};
  run(&x, k2, s2, 4, NULL, 0, NULL);
  g = sugg(x.a, GPD_OPT_REGISTER_REUSE);
  assert_non_null(g);
  /* the FADD's 30 by Eq. 1: LDL path 2, issue 10 -> 5; LDG path 1,
   * issue 30 -> 30: the LDL gets 30 x 5 / 35 */
  double m = 30.0 * 5.0 / 35.0 + 40.0 / 4;
  assert_float_equal(blamed(x.a, 0, 2, GPD_ADV_LONG_SB), 30.0 * 5.0 / 35.0, 1e-9);
  assert_float_equal(g->matched, m, 1e-9);
  assert_float_equal(g->speedup, 110.0 / (110.0 - m), 1e-9);
  done(&x);
}

/* Strength Reduction (Eq. 2): a conversion waited on. */
static void test_strength_reduction(void **state) {
  (void)state;
  static const char *const k[] = {"F2F.F64.F32 R2, R3", "DMUL R4, R2, R6", "EXIT", NULL};
  gpd_advisor_psamp_t s[] = {{PC(1), GPD_ADV_SHORT_SB, 20, 10}, {PC(0), GPD_ADV_SELECTED, 60, 0}};
  kern_t x;
  run(&x, k, s, 2, NULL, 0, NULL);
  const gpd_advisor_suggest_t *g = sugg(x.a, GPD_OPT_STRENGTH_REDUCTION);
  assert_non_null(g);
  assert_float_equal(g->speedup, 80.0 / 60.0, 1e-9);
  done(&x);
}

/* Loop Unrolling (Eq. 5): 40 latency samples of a load -> use pair in a
 * loop with 60 active samples; then only 20 active in the loop. */
static void test_loop_unrolling(void **state) {
  (void)state;
  static const char *const k[] = {
      "MOV R4, RZ",                     /* 0 */
      ".L_x_0:",
      "LDG.E R0, desc[UR4][R2.64]",     /* 1 */
      "FADD R4, R0, R4",                /* 2 */
      "IADD3 R2, R2, 0x4, RZ",          /* 3 */
      "ISETP.NE.AND P0, PT, R2, R9, PT", /* 4 */
      "@P0 BRA `(.L_x_0)",              /* 5 */
      "EXIT", NULL};                    /* 6 */
  gpd_advisor_psamp_t s[] = {{PC(2), GPD_ADV_LONG_SB, 40, 40}, {PC(3), GPD_ADV_SELECTED, 60, 0}};
  kern_t x;
  run(&x, k, s, 2, NULL, 0, NULL);
  const gpd_advisor_suggest_t *g = sugg(x.a, GPD_OPT_LOOP_UNROLLING);
  assert_non_null(g);
  assert_float_equal(g->matched, 40, 1e-9);
  assert_float_equal(g->speedup, 100.0 / 60.0, 1e-9);
  assert_null(sugg(x.a, GPD_OPT_CODE_REORDER)); /* the pair is in the loop */
  done(&x);
  /* active samples outside the loop do not hide its latency */
  gpd_advisor_psamp_t s2[] = {{PC(2), GPD_ADV_LONG_SB, 40, 40},
                          {PC(3), GPD_ADV_SELECTED, 20, 0},
                          {PC(6), GPD_ADV_SELECTED, 40, 0}};
  run(&x, k, s2, 3, NULL, 0, NULL);
  g = sugg(x.a, GPD_OPT_LOOP_UNROLLING);
  assert_non_null(g);
  assert_float_equal(g->speedup, 100.0 / 80.0, 1e-9);
  done(&x);
}

/* Code Reordering (Eq. 4) outside loops: min(A, M_L). */
static void test_code_reorder(void **state) {
  (void)state;
  static const char *const k[] = {"LDG.E R0, desc[UR4][R2.64]", "FADD R4, R0, R4", "EXIT", NULL};
  gpd_advisor_psamp_t s[] = {{PC(1), GPD_ADV_LONG_SB, 50, 45}, {PC(0), GPD_ADV_SELECTED, 30, 0}};
  kern_t x;
  run(&x, k, s, 2, NULL, 0, NULL);
  const gpd_advisor_suggest_t *g = sugg(x.a, GPD_OPT_CODE_REORDER);
  assert_non_null(g);
  /* T 80, A 35, M_L 45: T / (T - 35) */
  assert_float_equal(g->speedup, 80.0 / 45.0, 1e-9);
  done(&x);
}

/* Global memory coalescing: address = base + tid.x * 256 bytes (64
 * floats a thread): 8x the sectors of a coalesced request; the same
 * kernel with tid.x * 4 matches nothing. */
static void test_coalescing(void **state) {
  (void)state;
  static const char *const bad[] = {
      "S2R R0, SR_TID.X", "LDC.64 R4, c[0x0][0x210]", "IMAD.WIDE R2, R0, 0x100, R4",
      "LDG.E R5, desc[UR4][R2.64]", "FADD R6, R5, R5", "EXIT", NULL};
  gpd_advisor_psamp_t s[] = {{PC(4), GPD_ADV_LONG_SB, 50, 50}, {PC(2), GPD_ADV_SELECTED, 50, 0}};
  kern_t x;
  run(&x, bad, s, 2, NULL, 0, NULL);
  assert_int_equal(x.a->insns[3].stride, 256);
  const gpd_advisor_suggest_t *g = sugg(x.a, GPD_OPT_COALESCING);
  assert_non_null(g);
  assert_float_equal(g->matched, 50, 1e-9);
  assert_float_equal(g->speedup, 100.0 / (100.0 - 50.0 * 7.0 / 8.0), 1e-9);
  done(&x);
  static const char *const good[] = {
      "S2R R0, SR_TID.X", "LDC.64 R4, c[0x0][0x210]", "IMAD.WIDE R2, R0, 0x4, R4",
      "LDG.E R5, desc[UR4][R2.64]", "FADD R6, R5, R5", "EXIT", NULL};
  run(&x, good, s, 2, NULL, 0, NULL);
  assert_int_equal(x.a->insns[3].stride, 0);
  assert_null(sugg(x.a, GPD_OPT_COALESCING));
  done(&x);
  /* tid.x times a run-time value: a stride, amount unknown (8x assumed) */
  static const char *const rt[] = {
      "S2R R0, SR_TID.X", "LDC R7, c[0x0][0x218]", "IMAD R1, R0, R7, RZ",
      "IMAD.WIDE R2, R1, 0x4, R4", "LDG.E R5, desc[UR4][R2.64]", "FADD R6, R5, R5", "EXIT", NULL};
  gpd_advisor_psamp_t s3[] = {{PC(5), GPD_ADV_LONG_SB, 50, 50}, {PC(2), GPD_ADV_SELECTED, 50, 0}};
  run(&x, rt, s3, 2, NULL, 0, NULL);
  assert_int_equal(x.a->insns[4].stride, UINT32_MAX);
  assert_non_null(sugg(x.a, GPD_OPT_COALESCING));
  done(&x);
}

/* Function Inlining: call overhead is eliminated (Eq. 2) - branch
 * resolving at the instruction after the RET (where a returning warp is
 * sampled) 40 and instruction fetch at the return point 10; the same
 * reason at an ordinary instruction (the FMUL, 20) is not the call's:
 * T 120, S = 120 / (120 - 50). */
static void test_function_inlining(void **state) {
  (void)state;
  static const char *const k[] = {
      "S2R R0, SR_TID.X", "CALL.REL.NOINC `(.L_f)", "FADD R4, R0, R4", "EXIT", ".L_f:",
      "FMUL R0, R0, 0.5", "RET.REL.NODEC R6 `(k)", ".L_x_1:", "BRA `(.L_x_1)", NULL};
  gpd_advisor_psamp_t s[] = {{PC(6), GPD_ADV_BRANCH, 40, 40},
                         {PC(2), GPD_ADV_NO_INSTR, 10, 10},
                         {PC(4), GPD_ADV_BRANCH, 20, 20},
                         {PC(4), GPD_ADV_SELECTED, 50, 0}};
  kern_t x;
  expect(&x, k, s, 4, GPD_OPT_FUNCTION_INLINING, 50, 120.0 / 70.0);
  done(&x);
}

/* Shared-memory bank conflicts as Memory Transaction Reduction: a column
 * read of a [32][32] float tile (tid.x * 128 bytes: 32-way).  MIO issue:
 * the S2R 10 (one transaction), the LDS 10 (32 each): of 330
 * transactions 310 are replays, so that share of the 40 mio_throttle
 * samples goes, and 31/32 of the 32 short_scoreboard samples waiting on
 * the LDS.  Padded to [32][33] (132 bytes: one bank per lane) and as a
 * 64-bit access 8 bytes apart nothing matches; 64-bit 16 bytes apart is
 * 2-way. */
static void test_bank_conflicts(void **state) {
  (void)state;
  static const char *const bad[] = {"S2R R0, SR_TID.X", "SHF.L.U32 R2, R0, 0x7, RZ",
                                    "LDS R5, [R2]", "FADD R6, R5, R5", "EXIT", NULL};
  gpd_advisor_psamp_t s[] = {{PC(2), GPD_ADV_MIO_THROTTLE, 40, 40},
                         {PC(3), GPD_ADV_SHORT_SB, 32, 32},
                         {PC(2), GPD_ADV_SELECTED, 10, 0},
                         {PC(0), GPD_ADV_SELECTED, 10, 0}};
  kern_t x;
  double m = 40.0 * 310.0 / 330.0 + 32.0 * 31.0 / 32.0;
  const gpd_advisor_suggest_t *g =
      expect(&x, bad, s, 4, GPD_OPT_MEMORY_TRANSACTION, m, 92.0 / (92.0 - m));
  assert_int_equal(x.a->insns[2].stride, 128);
  assert_ptr_equal(&x.a->sugg[0], g); /* ranked first */
  done(&x);
  static const char *const padded[] = {"S2R R0, SR_TID.X", "IMAD R2, R0, 0x84, RZ",
                                       "LDS R5, [R2]", "FADD R6, R5, R5", "EXIT", NULL};
  run(&x, padded, s, 4, NULL, 0, NULL);
  assert_int_equal(x.a->insns[2].stride, 132);
  assert_null(sugg(x.a, GPD_OPT_MEMORY_TRANSACTION));
  done(&x);
  static const char *const wide[] = {"S2R R0, SR_TID.X", "SHF.L.U32 R2, R0, 0x3, RZ",
                                     "LDS.64 R4, [R2]", "FADD R6, R5, R5", "EXIT", NULL};
  run(&x, wide, s, 4, NULL, 0, NULL);
  assert_int_equal(x.a->insns[2].stride, 0); /* 8 bytes a lane: the element */
  assert_null(sugg(x.a, GPD_OPT_MEMORY_TRANSACTION));
  done(&x);
  static const char *const wide2[] = {"S2R R0, SR_TID.X", "SHF.L.U32 R2, R0, 0x4, RZ",
                                      "LDS.64 R4, [R2]", "FADD R6, R5, R5", "EXIT", NULL};
  m = 40.0 * 10.0 / 30.0 + 32.0 / 2.0; /* 2-way: of 10 + 20 transactions 10 are replays */
  expect(&x, wide2, s, 4, GPD_OPT_MEMORY_TRANSACTION, m, 92.0 / (92.0 - m));
  assert_int_equal(x.a->insns[2].stride, 16);
  done(&x);
}

/* Atomics on one address in every lane (the block's bin): drain stalls
 * past EXIT, 62, times the serialized updates' share of global write
 * transactions (issued 10 x 32: 310 of 320), plus the 32 lg_throttle
 * samples at the REDG (global throttling, counted once).  The address
 * from threadIdx.x, or from loaded data (a histogram), is not one address:
 * only the throttling matches. */
static void test_atomic_contention(void **state) {
  (void)state;
  /* the address's source, then the same four instructions */
  const char *k[] = {"S2R R0, SR_CTAID.X", "LDC.64 R4, c[0x0][0x218]",
                     "IMAD.WIDE.U32 R4, R0, 0x4, R4",
                     "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R4.64], R7",
                     "EXIT", ".L_x_1:", "BRA `(.L_x_1)", NULL};
  gpd_advisor_psamp_t s[] = {{PC(5), GPD_ADV_DRAIN, 62, 62},
                         {PC(3), GPD_ADV_LG_THROTTLE, 32, 32},
                         {PC(3), GPD_ADV_SELECTED, 10, 0}};
  static const char *const src[] = {"S2R R0, SR_CTAID.X", "S2R R0, SR_TID.X",
                                    "LDG.E R0, desc[UR4][R2.64]"};
  for (int v = 0; v < 3; v++) {
    kern_t x;
    double m = v == 0 ? 32 + 62.0 * 310.0 / 320.0 : 32;
    k[0] = src[v];
    expect(&x, k, s, 3, GPD_OPT_MEMORY_TRANSACTION, m, 104.0 / (104.0 - m));
    assert_int_equal(x.a->insns[3].same_addr, v == 0);
    done(&x);
  }
}

/* Same-address atomics fill the memory pipeline the other accesses wait
 * on: issued 10 LDG (one transaction each) and 10 REDG (32 each), so 310
 * of 330 global transactions are the serialized updates, and that share
 * of the drain (60), of the long_scoreboard wait on the load (30) and of
 * the short_scoreboard wait on the S2Rs (MIO, 20) matches: T 130. */
static void test_atomic_queue(void **state) {
  (void)state;
  static const char *const k[] = {"S2R R0, SR_CTAID.X",                  /* 0 */
                                  "S2R R2, SR_TID.X",                    /* 1 */
                                  "IMAD R2, R0, 0x100, R2",              /* 2 */
                                  "LDC.64 R4, c[0x0][0x218]",            /* 3 */
                                  "IMAD.WIDE R6, R2, 0x4, R4",           /* 4 */
                                  "LDG.E R7, desc[UR4][R6.64]",          /* 5 */
                                  "IMAD.WIDE.U32 R4, R0, 0x4, R4",       /* 6 */
                                  "FMUL R7, R7, 0.5",                    /* 7 */
                                  "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R4.64], R7",
                                  "EXIT",                                /* 9 */
                                  ".L_x_1:", "BRA `(.L_x_1)", NULL};      /* 10 */
  gpd_advisor_psamp_t s[] = {{PC(10), GPD_ADV_DRAIN, 60, 60},
                             {PC(7), GPD_ADV_LONG_SB, 30, 30},
                             {PC(2), GPD_ADV_SHORT_SB, 20, 20},
                             {PC(5), GPD_ADV_SELECTED, 10, 0},
                             {PC(8), GPD_ADV_SELECTED, 10, 0}};
  kern_t x;
  double m = 110.0 * 310.0 / 330.0;
  expect(&x, k, s, 5, GPD_OPT_MEMORY_TRANSACTION, m, 130.0 / (130.0 - m));
  assert_int_equal(x.a->insns[8].same_addr, 1);
  assert_int_equal(x.a->insns[5].same_addr, 0);
  done(&x);
}

/* Warp balance: an if/else on threadIdx.x & 1 runs both sides in every
 * warp: the shorter side's samples (20 of 50) go; on (threadIdx.x >> 5)
 * & 1 the branch is uniform per warp and nothing matches. */
static void test_divergence(void **state) {
  (void)state;
  static const char *const bad[] = {
      "S2R R0, SR_TID.X",                     /* 0 */
      "LOP3.LUT R1, R0, 0x1, RZ, 0xc0, !PT",  /* 1 */
      "ISETP.NE.AND P0, PT, R1, RZ, PT",      /* 2 */
      "BSSY B0, `(.L_x_2)",                   /* 3 */
      "@P0 BRA `(.L_x_1)",                    /* 4 */
      "FFMA R5, R5, R4, 0.25",                /* 5 then */
      "FFMA R5, R5, R4, 0.25",                /* 6 */
      "BRA `(.L_x_2)",                        /* 7 */
      ".L_x_1:",
      "FFMA R5, R5, R6, 0.5",                 /* 8 else */
      "FFMA R5, R5, R6, 0.5",                 /* 9 */
      ".L_x_2:",
      "BSYNC B0",                             /* 10 */
      "EXIT", NULL};
  gpd_advisor_psamp_t s[] = {{PC(5), GPD_ADV_SELECTED, 15, 0}, {PC(6), GPD_ADV_SELECTED, 15, 0},
                         {PC(8), GPD_ADV_SELECTED, 10, 0}, {PC(9), GPD_ADV_SELECTED, 10, 0}};
  kern_t x;
  run(&x, bad, s, 4, NULL, 0, NULL);
  assert_int_equal(x.a->insns[4].divergent, 1);
  const gpd_advisor_suggest_t *g = sugg(x.a, GPD_OPT_WARP_BALANCE);
  assert_non_null(g);
  assert_float_equal(g->matched, 20, 1e-9);
  assert_float_equal(g->speedup, 50.0 / 30.0, 1e-9);
  assert_int_equal(g->nhot, 1);
  assert_int_equal(g->hot[0].reason, GPD_ADV__COUNT);
  assert_int_equal(g->hot[0].def, 4); /* the branch */
  assert_int_equal(g->hot[0].use, 8); /* the shorter (else) side starts at .L_x_1 */
  assert_string_equal(gpd_advisor_reason_name(GPD_ADV__COUNT), "divergent branch");
  done(&x);
  static const char *const good[] = {
      "S2R R0, SR_TID.X", "SHF.R.U32.HI R1, RZ, 0x5, R0", "ISETP.NE.AND P0, PT, R1, RZ, PT",
      "BSSY B0, `(.L_x_2)", "@P0 BRA `(.L_x_1)", "FFMA R5, R5, R4, 0.25", "FFMA R5, R5, R4, 0.25",
      "BRA `(.L_x_2)", ".L_x_1:", "FFMA R5, R5, R6, 0.5", "FFMA R5, R5, R6, 0.5", ".L_x_2:",
      "BSYNC B0", "EXIT", NULL};
  run(&x, good, s, 4, NULL, 0, NULL);
  assert_int_equal(x.a->insns[4].divergent, 0);
  assert_null(sugg(x.a, GPD_OPT_WARP_BALANCE));
  done(&x);
}

/* Fast Math: an accurate sinf's 2/pi multiply marks its loop; the stall
 * samples of the loop's arithmetic (not its memory access, not the
 * branch, not the issued ones, not the code after the loop) are M; the
 * intrinsic's code (__sinf: 1/(2 pi), MUFU.SIN) matches nothing. */
static void test_fast_math(void **state) {
  (void)state;
  static const char *const k[] = {
      "MOV R4, RZ",                                   /* 0 */
      ".L_x_0:",
      "FMUL R0, R8, 0.63661974668502807617",          /* 1 */
      "FFMA R4, R0, -1.5707962512969970703, R4",      /* 2 */
      "LDG.E R8, desc[UR4][R2.64]",                   /* 3 */
      "IADD3 R9, R9, -0x1, RZ",                       /* 4 */
      "ISETP.NE.AND P0, PT, R9, RZ, PT",              /* 5 */
      "@P0 BRA `(.L_x_0)",                            /* 6 */
      "FADD R4, R4, 1",                               /* 7 */
      "EXIT", NULL};                                  /* 8 */
  gpd_advisor_psamp_t s[] = {{PC(1), GPD_ADV_WAIT, 20, 20},      {PC(1), GPD_ADV_SELECTED, 10, 0},
                         {PC(2), GPD_ADV_MATH_THROTTLE, 30, 30}, {PC(2), GPD_ADV_SELECTED, 10, 0},
                         {PC(3), GPD_ADV_LG_THROTTLE, 15, 15}, {PC(5), GPD_ADV_SELECTED, 5, 0},
                         {PC(6), GPD_ADV_BRANCH, 4, 4},        {PC(7), GPD_ADV_WAIT, 25, 25}};
  kern_t x;
  const gpd_advisor_suggest_t *g = expect(&x, k, s, 8, GPD_OPT_FAST_MATH, 50, 119.0 / 69.0);
  assert_int_equal(g->hot[0].def, 2);
  assert_string_equal(gpd_advisor_opt_name(GPD_OPT_FAST_MATH), "Fast Math");
  done(&x);
  static const char *const fast[] = {
      "MOV R4, RZ", ".L_x_0:", "FMUL.RZ R0, R8, 0.15915493667125701904", "MUFU.SIN R0, R0",
      "LDG.E R8, desc[UR4][R2.64]", "IADD3 R9, R9, -0x1, RZ", "ISETP.NE.AND P0, PT, R9, RZ, PT",
      "@P0 BRA `(.L_x_0)", "FADD R4, R4, 1", "EXIT", NULL};
  run(&x, fast, s, 8, NULL, 0, NULL);
  assert_null(sugg(x.a, GPD_OPT_FAST_MATH));
  done(&x);
}

/* Warp Balance for a loop whose trip count moves by lane: the counter is
 * 8 + 8 (tid.x & 31) (LOP3's mask form keeps the coefficient 8), stepped
 * by 8, so lanes leave up to 31 iterations apart: half of the loop's 80
 * samples are idle lanes.  The same loop stepped by a register (a
 * grid-stride loop) or by more than 31 x 8 matches nothing. */
static void test_lane_trip_count(void **state) {
  (void)state;
  const char *k[] = {
      "S2R R0, SR_TID.X",                       /* 0 */
      "SHF.L.U32 R2, R0, 0x3, RZ",              /* 1 */
      "LOP3.LUT R2, R2, 0xf8, RZ, 0xc0, !PT",   /* 2 */
      "IADD3 R2, R2, 0x8, RZ",                  /* 3 */
      ".L_x_0:",
      "FFMA R4, R4, R3, 0.25",                  /* 4 */
      "IADD3 R2, R2, -0x8, RZ",                 /* 5 */
      "ISETP.GT.AND P0, PT, R2, RZ, PT",        /* 6 */
      "@P0 BRA `(.L_x_0)",                      /* 7 */
      "EXIT", NULL};                            /* 8 */
  gpd_advisor_psamp_t s[] = {{PC(4), GPD_ADV_SELECTED, 40, 0}, {PC(4), GPD_ADV_WAIT, 20, 20},
                         {PC(5), GPD_ADV_SELECTED, 10, 0}, {PC(7), GPD_ADV_SELECTED, 10, 0},
                         {PC(8), GPD_ADV_SELECTED, 20, 0}};
  kern_t x;
  const gpd_advisor_suggest_t *g = expect(&x, k, s, 5, GPD_OPT_WARP_BALANCE, 40, 100.0 / 60.0);
  assert_int_equal(x.a->insns[6].lane_coef, 8);
  assert_int_equal(x.a->insns[7].divergent, 1);
  assert_int_equal(g->hot[0].def, 7); /* the branch */
  assert_int_equal(g->hot[0].use, 4); /* the loop's head */
  done(&x);
  static const char *const steps[] = {"IADD3 R2, R2, -UR4, RZ", "IADD3 R2, R2, -0x200, RZ"};
  for (int i = 0; i < 2; i++) {
    k[6] = steps[i];
    run(&x, k, s, 5, NULL, 0, NULL);
    assert_null(sugg(x.a, GPD_OPT_WARP_BALANCE));
    done(&x);
  }
}

/* Occupancy (NVIDIA's calculator) and the parallel estimators (Eqs. 6-10). */
static void test_occupancy(void **state) {
  (void)state;
  uint32_t b, w, m;
  const char *lim;
  assert_int_equal(gpd_advisor_occupancy(90, 256, 32, 0, &b, &w, &m, &lim), 0);
  assert_int_equal(b, 8);
  assert_int_equal(w, 64);
  assert_int_equal(m, 64);
  assert_string_equal(lim, "warps");
  assert_int_equal(gpd_advisor_occupancy(90, 256, 64, 0, &b, &w, &m, &lim), 0);
  assert_int_equal(w, 32);
  assert_string_equal(lim, "registers");
  assert_int_equal(gpd_advisor_occupancy(90, 256, 40, 0, &b, &w, &m, &lim), 0);
  assert_int_equal(b, 6); /* 40 regs -> 1280 per warp -> 12 warps per sub-partition */
  assert_int_equal(gpd_advisor_occupancy(90, 32, 16, 0, &b, &w, &m, &lim), 0);
  assert_int_equal(b, 32);
  assert_int_equal(w, 32);
  assert_string_equal(lim, "blocks per SM");
  assert_int_equal(gpd_advisor_occupancy(90, 128, 16, 48 * 1024, &b, &w, &m, &lim), 0);
  assert_int_equal(b, 4); /* 233472 / (49152 + 1024) */
  assert_string_equal(lim, "shared memory");
  assert_int_equal(gpd_advisor_occupancy(86, 1024, 16, 0, &b, &w, &m, &lim), 0);
  assert_int_equal(b, 1);
  assert_int_equal(m, 48);
  assert_int_equal(gpd_advisor_occupancy(75, 64, 16, 0, &b, &w, &m, &lim), 0);
  assert_int_equal(b, 16);
  assert_int_equal(gpd_advisor_occupancy(90, 0, 16, 0, &b, &w, &m, &lim), -EINVAL);
  assert_int_equal(gpd_advisor_occupancy(90, 2048, 16, 0, &b, &w, &m, &lim), -EINVAL);
  assert_int_equal(gpd_advisor_occupancy(90, 256, 300, 0, &b, &w, &m, &lim), -EINVAL);

  /* Thread Increase: 32-thread blocks, R_I 0.1: W 8 -> 16 per scheduler */
  static const char *const k[] = {"FADD R4, R0, R4", "EXIT", NULL};
  gpd_advisor_psamp_t s[] = {{PC(0), GPD_ADV_SELECTED, 10, 0}, {PC(0), GPD_ADV_WAIT, 90, 80}};
  gpd_advisor_launch_t L = {.sm = 90, .sm_count = 132, .blocks = 1e6, .threads = 32, .regs = 16};
  kern_t x;
  run(&x, k, s, 2, NULL, 0, &L);
  const gpd_advisor_suggest_t *g = sugg(x.a, GPD_OPT_THREAD_INCREASE);
  assert_non_null(g);
  double I = 1 - pow(0.9, 8), In = 1 - pow(0.9, 16);
  assert_float_equal(g->speedup, In / I, 1e-9);
  assert_float_equal(x.a->occupancy, 0.5, 1e-9);
  done(&x);
  /* 16-thread blocks (half-empty warps): the same 32 blocks of one warp,
   * W 8 -> 16 at 64 threads, and the same threads in full warps are half
   * the warp instructions: S = C_I x 32 / 16 */
  L.threads = 16;
  run(&x, k, s, 2, NULL, 0, &L);
  g = sugg(x.a, GPD_OPT_THREAD_INCREASE);
  assert_non_null(g);
  assert_float_equal(g->speedup, In / I * 2, 1e-9);
  done(&x);
  /* Occupancy Increase: 64 registers limit to 32 warps; without: 64 */
  L.threads = 256;
  L.regs = 64;
  run(&x, k, s, 2, NULL, 0, &L);
  g = sugg(x.a, GPD_OPT_OCCUPANCY);
  assert_non_null(g);
  assert_float_equal(g->speedup, In / I, 1e-9);
  assert_null(sugg(x.a, GPD_OPT_THREAD_INCREASE));
  done(&x);
  /* Block Increase: 33 blocks of 256 threads on 132 SMs: W 2 -> 0.5 */
  L.regs = 32;
  L.blocks = 33;
  run(&x, k, s, 2, NULL, 0, &L);
  g = sugg(x.a, GPD_OPT_BLOCK_INCREASE);
  assert_non_null(g);
  double Ib = 1 - pow(0.9, 2), Ibn = 1 - pow(0.9, 0.5);
  assert_float_equal(g->speedup, (Ibn / Ib) / 0.25, 1e-9);
  done(&x);
  /* warps sampled "not selected" were ready too: 10 issued + 30 not
   * selected of 100 make R_I 0.4 */
  gpd_advisor_psamp_t s3[] = {s[0], s[1], {s[1].pc, GPD_ADV_NOT_SELECTED, 30, 30}};
  s3[1].samples = 60;
  s3[1].latency = 60;
  run(&x, k, s3, 3, NULL, 0, &L);
  g = sugg(x.a, GPD_OPT_BLOCK_INCREASE);
  assert_non_null(g);
  assert_float_equal(g->speedup, ((1 - pow(0.6, 0.5)) / (1 - pow(0.6, 2))) / 0.25, 1e-9);
  done(&x);
  /* full occupancy, enough blocks: no parallel suggestion */
  L.blocks = 1e6;
  run(&x, k, s, 2, NULL, 0, &L);
  assert_null(sugg(x.a, GPD_OPT_OCCUPANCY));
  assert_null(sugg(x.a, GPD_OPT_THREAD_INCREASE));
  assert_null(sugg(x.a, GPD_OPT_BLOCK_INCREASE));
  done(&x);
}

/* ---------------------------------------------------------- bad input */

/* Issue 25's rule: with the block size as the limiter, Thread Increase is ranked
 * above a latency hiding suggestion whose estimate is larger (Code
 * Reordering 80 / 45 against C_I 1.02). */
static void test_thread_increase(void **state) {
  (void)state;
  static const char *const lat[] = {"LDG.E R0, desc[UR4][R2.64]", "FADD R4, R0, R4", "EXIT",
                                    NULL};
  gpd_advisor_psamp_t s2[] = {{PC(1), GPD_ADV_LONG_SB, 50, 45}, {PC(0), GPD_ADV_SELECTED, 30, 0}};
  gpd_advisor_launch_t L = {.sm = 90, .sm_count = 132, .blocks = 1e6, .threads = 32, .regs = 16};
  kern_t x;
  run(&x, lat, s2, 2, NULL, 0, &L);
  assert_true(x.a->nsugg >= 2);
  assert_int_equal(x.a->sugg[0].opt, GPD_OPT_THREAD_INCREASE);
  assert_int_equal(x.a->sugg[1].opt, GPD_OPT_CODE_REORDER);
  double I2 = 1 - pow(0.625, 8), In2 = 1 - pow(0.625, 16);
  assert_float_equal(x.a->sugg[0].speedup, In2 / I2, 1e-9);
  assert_float_equal(x.a->sugg[1].speedup, 80.0 / 45.0, 1e-9);
  done(&x);
  /* 256-thread blocks: no Thread Increase, Code Reordering first */
  L.threads = 256;
  run(&x, lat, s2, 2, NULL, 0, &L);
  assert_null(sugg(x.a, GPD_OPT_THREAD_INCREASE));
  assert_int_equal(x.a->sugg[0].opt, GPD_OPT_CODE_REORDER);
  done(&x);
}

static void test_bad_input(void **state) {
  (void)state;
  static const char *const k[] = {"FOOBAR R1, R2", "WHAT.EVER", "LDG.E R0, [R2.64]",
                                  "FADD R3, R0, R0", "EXIT", NULL};
  /* samples outside every instruction, a bad reason, NaN and negative counts */
  gpd_advisor_psamp_t s[] = {{PC(3), GPD_ADV_LONG_SB, 10, 10}, {PC(100), GPD_ADV_SELECTED, 7, 0},
                         {PC(3) + 4, GPD_ADV_SELECTED, 3, 0}, {PC(3), GPD_ADV__COUNT, 5, 0},
                         {PC(1), GPD_ADV_WAIT, NAN, NAN}, {PC(1), GPD_ADV_WAIT, -4, 9},
                         {UINT64_MAX, GPD_ADV_WAIT, 1, 0}};
  kern_t x;
  run(&x, k, s, 7, NULL, 0, NULL);
  assert_float_equal(x.a->unplaced, 7 + 3 + 5 + 1, 1e-9);
  assert_float_equal(x.a->T, 10, 1e-9);
  assert_true(x.a->L <= x.a->T);
  assert_true(strstr(x.a->notes, "at no instruction") != NULL);
  assert_float_equal(blamed(x.a, 2, 3, GPD_ADV_LONG_SB), 10, 1e-9);
  done(&x);
  /* an empty profile: nothing to suggest */
  run(&x, k, NULL, 0, NULL, 0, NULL);
  assert_int_equal(x.a->nsugg, 0);
  assert_float_equal(x.a->T, 0, 0);
  done(&x);
  /* no section, an empty section */
  gpd_advice_t *a = NULL;
  gpd_advisor_input_t in = {0};
  assert_int_equal(gpd_advisor_run(&in, &a), -EINVAL);
  gpd_disasm_sec_t empty = {.name = "k"};
  in.sec = &empty;
  assert_int_equal(gpd_advisor_run(&in, &a), -EINVAL);
  assert_int_equal(gpd_advisor_run(NULL, &a), -EINVAL);
  /* control words for fewer instructions than there are: the rest without */
  uint64_t c[] = {ctrl(1, 0, 7, 0)};
  run(&x, k, s, 1, c, 1, NULL);
  assert_int_equal(x.a->insns[0].has_ctrl, 1);
  assert_int_equal(x.a->insns[1].has_ctrl, 0);
  done(&x);
  /* not a cubin */
  uint64_t *hi;
  size_t n;
  uint32_t sm;
  assert_int_equal(gpd_advisor_cubin_ctrl("nonsense that is no ELF file at all, not even close....", 56,
                                      "k", &hi, &n, &sm),
                   -EINVAL);
  assert_int_equal(gpd_advisor_cubin_ctrl(NULL, 0, "k", &hi, &n, &sm), -EINVAL);
}

/* ------------------------------------------- a real H100 cubin */

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  if (b)
    b[n] = 0;
  *len = (size_t)n;
  return b;
}

/* The cubin the H100 run stored (tests/gpuanalysis/fixtures/h100): sm_90
 * from the ELF flags; each global load sets a write scoreboard, and the
 * FFMA that consumes its register waits on that scoreboard. */
static void test_h100_cubin(void **state) {
  (void)state;
  char p[4096];
  snprintf(p, sizeof p, "%s/h100/gpubins/c093beaf1608ac1626d8f4a117d40950.gpubin", fixtures);
  size_t blen, tlen;
  char *bin = slurp(p, &blen);
  snprintf(p, sizeof p, "%s/h100/gpubins/c093beaf1608ac1626d8f4a117d40950.nvdisasm", fixtures);
  char *text = slurp(p, &tlen);
  assert_non_null(bin);
  assert_non_null(text);
  uint64_t *hi;
  size_t n;
  uint32_t sm;
  assert_int_equal(gpd_advisor_cubin_ctrl(bin, blen, "_Z5knownPKfiPf", &hi, &n, &sm), 0);
  assert_int_equal(sm, 90);
  free(hi);
  assert_int_equal(gpd_advisor_cubin_ctrl(bin, blen, "nosuchkernel", &hi, &n, &sm), -ENOENT);
  assert_int_equal(gpd_advisor_cubin_ctrl(bin, blen, "_Z5knownPKfiPf", &hi, &n, &sm), 0);
  gpd_disasm_t *d;
  assert_int_equal(gpd_disasm_parse(text, tlen, &d), 0);
  const gpd_disasm_sec_t *sec = gpd_disasm_section(d, "_Z5knownPKfiPf");
  assert_non_null(sec);
  gpd_advisor_input_t in = {.sec = sec, .ctrl = hi, .nctrl = n};
  gpd_advice_t *a;
  assert_int_equal(gpd_advisor_run(&in, &a), 0);
  assert_int_equal(a->have_ctrl, 1);
  size_t loads = 0;
  for (size_t i = 0; i < a->ninsns; i++) {
    const gpd_advisor_insn_t *ld = &a->insns[i];
    if (strncmp(ld->op, "LDG", 3) != 0)
      continue;
    loads++;
    assert_true(ld->wbar < 6);
    /* the first reader of the loaded register waits on its scoreboard */
    for (size_t j = i + 1; j < a->ninsns; j++) {
      const gpd_advisor_insn_t *u = &a->insns[j];
      int reads = 0;
      for (unsigned q = 0; q < u->nuse; q++)
        reads |= u->use[q] == ld->def[0];
      if (reads) {
        assert_true(u->wait & (1u << ld->wbar));
        break;
      }
    }
  }
  assert_true(loads >= 4);
  gpd_advisor_free(a);
  gpd_disasm_free(d);
  free(hi);
  free(bin);
  free(text);
}

int main(int argc, char **argv) {
  fixtures = argc > 1 ? argv[1] : "tests/gpuanalysis/fixtures";
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decode),          cmocka_unit_test(test_fig4),
      cmocka_unit_test(test_pruning),         cmocka_unit_test(test_barriers),
      cmocka_unit_test(test_register_reuse),  cmocka_unit_test(test_strength_reduction),
      cmocka_unit_test(test_loop_unrolling),  cmocka_unit_test(test_code_reorder),
      cmocka_unit_test(test_coalescing),      cmocka_unit_test(test_bank_conflicts),
      cmocka_unit_test(test_function_inlining), cmocka_unit_test(test_atomic_contention),
      cmocka_unit_test(test_atomic_queue),
      cmocka_unit_test(test_divergence),      cmocka_unit_test(test_fast_math),
      cmocka_unit_test(test_lane_trip_count),
      cmocka_unit_test(test_occupancy),       cmocka_unit_test(test_thread_increase),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_h100_cubin),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
