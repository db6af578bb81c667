/* advisor-tid.c - the advisor's thread-index analysis: which global and
 * shared accesses are strided and which branches diverge within a warp
 * (gpd_advisor_insn_t.stride, .divergent), for GPA's coalescing and warp
 * balance optimizers and the bank-conflict part of memory transaction
 * reduction (advisor-opt.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor-internal.h"

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
  gpd_advisor_insn_t tmp;
  char b[128];
  if (o == NULL)
    return 0;
  snprintf(b, sizeof b, "MOV RZ, %s", o);
  if (gpd_advisor_decode(b, &tmp) < 0)
    return 0;
  for (unsigned k = 0; k < tmp.nuse; k++)
    if (tmp.use[k] < GPD_ADV_RES_P)
      return coef[tmp.use[k]];
  return 0;
}

/* The thread-index coefficient of an instruction's first def. */
static long tid_coef(const long *coef, const gpd_advisor_insn_t *in, char **ops, unsigned n,
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
  if (strncmp(op, "LOP3.LUT", 8) == 0 && n > 4 && strcmp(ops[4], "0xc0") == 0 &&
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

/* Warp-uniform values (same in every lane), in address order like the
 * thread-index pass: an instruction's defs are uniform when it reads only
 * uniform values -- immediates, constant banks, uniform registers (UR,
 * UP), the block index -- loads nothing but constants, and its guard is
 * uniform.  Two passes, the second starting from the first's end, so a
 * value a loop makes per-lane is per-lane at the loop's top; after a
 * branch on a per-lane value, a register written in more than one place
 * is per-lane (lanes may hold different writes).  Marks global atomics /
 * reductions whose address register is uniform at them: every lane
 * updates one address, one at a time. */
static void uniform_addr(gpd_advice_t *a, const gpd_disasm_sec_t *sec) {
  uint8_t uni[GPD_ADV_RES_UR], ndefs[GPD_ADV_RES_UR], *at; /* R and P registers */
  if ((at = calloc(a->ninsns ? a->ninsns : 1, 1)) == NULL)
    return; /* no marks: nothing matched */
  memset(uni, 1, sizeof uni);
  memset(ndefs, 0, sizeof ndefs);
  for (size_t i = 0; i < a->ninsns; i++)
    for (unsigned k = 0; k < a->insns[i].ndef; k++)
      if (a->insns[i].def[k] < GPD_ADV_RES_UR && ndefs[a->insns[i].def[k]] < 2)
        ndefs[a->insns[i].def[k]]++;
  for (int pass = 0; pass < 2; pass++) {
    int diverged = 0;
    for (size_t i = 0; i < a->ninsns; i++) {
      const gpd_advisor_insn_t *in = &a->insns[i];
      const char *text = sec->insns[i].text ? sec->insns[i].text : "";
      /* the address register, for atomics: uniform here? */
      at[i] = 0;
      const char *br = strrchr(text, '[');
      gpd_advisor_insn_t tmp;
      char b[96];
      if (in->cls == GPD_ADV_GLOBAL &&
          (strncmp(in->op, "RED", 3) == 0 || strncmp(in->op, "ATOM", 4) == 0) && br &&
          snprintf(b, sizeof b, "MOV RZ, %.*s", (int)strcspn(br + 1, "]"), br + 1) > 0 &&
          gpd_advisor_decode(b, &tmp) == 0) {
        int any = 0, all = 1;
        for (unsigned k = 0; k < tmp.nuse; k++)
          if (tmp.use[k] < GPD_ADV_RES_P) {
            any = 1;
            all &= uni[tmp.use[k]];
          }
        at[i] = (uint8_t)(any && all);
      }
      int u = !(in->cls == GPD_ADV_GLOBAL || in->cls == GPD_ADV_LOCAL ||
                in->cls == GPD_ADV_SHARED || (in->cls == GPD_ADV_MIO && !strstr(text, "CTAID")));
      for (unsigned k = 0; k < in->nuse && u; k++)
        if (in->use[k] < GPD_ADV_RES_UR && !uni[in->use[k]])
          u = 0;
      if (in->pred >= 0 && in->pred < GPD_ADV_RES_UR && !uni[in->pred])
        u = 0;
      if (in->cls == GPD_ADV_CONTROL && in->pred >= 0 && in->pred < GPD_ADV_RES_UR &&
          !uni[in->pred])
        diverged = 1;
      for (unsigned k = 0; k < in->ndef; k++)
        if (in->def[k] < GPD_ADV_RES_UR)
          uni[in->def[k]] = (uint8_t)(u && !(diverged && ndefs[in->def[k]] > 1));
    }
  }
  for (size_t i = 0; i < a->ninsns; i++)
    a->insns[i].same_addr = at[i];
  free(at);
}

void gpd__advisor_tid(gpd_advice_t *a, const gpd_disasm_sec_t *sec) {
  long coef[GPD_ADV_NRES];
  memset(coef, 0, sizeof coef);
  for (size_t i = 0; i < a->ninsns; i++) {
    gpd_advisor_insn_t *in = &a->insns[i];
    char buf[512], *ops[MAXOPS];
    unsigned n = split_ops(sec->insns[i].text, buf, sizeof buf, ops);
    long any = 0;
    for (unsigned k = 0; k < in->nuse; k++)
      if (in->use[k] < GPD_ADV_RES_SB && coef[in->use[k]] != 0)
        any = coef_add(any, coef[in->use[k]] < 0 ? -1 : 1);
    long res = in->ndef ? tid_coef(coef, in, ops, n, any) : 0;
    if (in->cls == GPD_ADV_GLOBAL || in->cls == GPD_ADV_SHARED) { /* the address register's coefficient */
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
    if (strstr(in->op, "SETP"))
      for (unsigned k = 0; k < in->nuse; k++)
        if (in->use[k] < GPD_ADV_RES_P && coef[in->use[k]] > (long)in->lane_coef &&
            coef[in->use[k]] < (1l << 20)) {
          in->lane_coef = (uint32_t)coef[in->use[k]];
          in->lane_reg = in->use[k];
        }
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
  uniform_addr(a, sec);
}

