/* advisor-sass.c - SASS operands for the advisor's def-use analysis:
 * registers, predicates, uniform registers and the control bits
 * (scoreboard barriers) of each instruction, plus the stall-reason names.
 *
 * Operand text comes from nvdisasm run on a client's binary: every token
 * is bounded, an operand that is not understood contributes nothing.
 */
#include <ctype.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor.h"

/* ---------------------------------------------------- stall reasons */

static const struct {
  const char *name;
  gpd_advisor_reason_t r;
} reasons[] = {
    {"selected", GPD_ADV_SELECTED},          {"not_selected", GPD_ADV_NOT_SELECTED},
    {"long_scoreboard", GPD_ADV_LONG_SB},    {"short_scoreboard", GPD_ADV_SHORT_SB},
    {"wait", GPD_ADV_WAIT},                  {"barrier", GPD_ADV_BARRIER},
    {"membar", GPD_ADV_MEMBAR},              {"lg_throttle", GPD_ADV_LG_THROTTLE},
    {"mio_throttle", GPD_ADV_MIO_THROTTLE},  {"tex_throttle", GPD_ADV_TEX_THROTTLE},
    {"math_pipe_throttle", GPD_ADV_MATH_THROTTLE}, {"no_instructions", GPD_ADV_NO_INSTR},
    {"imc_miss", GPD_ADV_IMC_MISS},          {"branch_resolving", GPD_ADV_BRANCH},
    {"dispatch_stall", GPD_ADV_DISPATCH},    {"drain", GPD_ADV_DRAIN},
    {"sleeping", GPD_ADV_SLEEP},             {"misc", GPD_ADV_MISC},
};

gpd_advisor_reason_t gpd_advisor_reason_from_vendor(const char *name, int *latency) {
  static const char pre[] = "smsp__pcsamp_warps_issue_stalled_";
  static const char suf[] = "_not_issued";
  *latency = 0;
  if (name == NULL)
    return GPD_ADV_OTHER;
  if (strncmp(name, pre, sizeof pre - 1) == 0)
    name += sizeof pre - 1;
  size_t n = strnlen(name, 128);
  if (n > sizeof suf - 1 && strcmp(name + n - (sizeof suf - 1), suf) == 0) {
    *latency = 1;
    n -= sizeof suf - 1;
  }
  for (size_t i = 0; i < sizeof reasons / sizeof *reasons; i++)
    if (strlen(reasons[i].name) == n && strncmp(reasons[i].name, name, n) == 0)
      return reasons[i].r;
  return GPD_ADV_OTHER;
}

const char *gpd_advisor_reason_name(gpd_advisor_reason_t r) {
  if (r == GPD_ADV__COUNT)
    return "divergent branch";
  for (size_t i = 0; i < sizeof reasons / sizeof *reasons; i++)
    if (reasons[i].r == r)
      return reasons[i].name;
  return "other";
}

/* ------------------------------------------------------- opcodes */

static int base_is(const char *op, const char *const *list) {
  size_t b = strcspn(op, ".");
  for (; *list; list++)
    if (strlen(*list) == b && strncmp(op, *list, b) == 0)
      return 1;
  return 0;
}

static const char *const no_dst[] = {
    "ST",    "STG",   "STS",     "STL",     "STSM", "RED",   "REDG",  "BAR",   "BRA",   "BRX",
    "JMP",   "JMX",   "EXIT",    "RET",     "CALL", "BSSY",  "BSYNC", "WARPSYNC", "NOP", "MEMBAR",
    "ERRBAR", "CCTL", "CCTLL",   "DEPBAR",  "YIELD", "BPT",  "KILL",  "BREAK", "BMOV",  "FENCE",
    "UTMASTG", "UTMALDG", "UTMAPF", "UBLKCP", "SYNCS", "ARRIVES", "LDGDEPBAR", "ACQBULK",
    "CGAERRBAR", "UCGABAR_ARV", "UCGABAR_WAIT", "NANOSLEEP", "PREEXIT", "RPCMOV", NULL};
static const char *const op_global[] = {"LDG", "STG", "LD",  "ST",  "ATOM", "ATOMG", "RED",
                                        "REDG", "TEX", "TLD", "TLD4", "TXQ", "SULD", "SUST",
                                        "SUATOM", "SURED", "LDGSTS", "UTMALDG", "UTMASTG", NULL};
static const char *const op_local[] = {"LDL", "STL", NULL};
static const char *const op_const[] = {"LDC", "ULDC", NULL};
static const char *const op_shared[] = {"LDS", "STS", "LDSM", "STSM", "ATOMS", "REDS", NULL};
static const char *const op_mio[] = {"S2R", "S2UR", "SHFL", "CS2R.32", "VOTEU", "MATCH",
                                     "REDUX", "BMOV", "R2UR", "POPC", "FLO", "BREV", NULL};
static const char *const op_long[] = {"MUFU", "I2F", "F2I", "F2F", "I2I", "FRND", "DADD", "DMUL",
                                      "DFMA", "DSETP", "DMNMX", "F2FP", "I2FP", "F2IP", NULL};
static const char *const op_sync[] = {"BAR", "BSYNC", "WARPSYNC", "MEMBAR", "DEPBAR", "ERRBAR",
                                      "SYNCS", NULL};
static const char *const op_control[] = {"BRA", "BRX", "JMP", "JMX", "EXIT", "RET", "CALL",
                                         "BSSY", "NOP", "BREAK", "YIELD", "KILL", NULL};
static const char *const op_carry[] = {"IADD3", "LEA", "LOP3", "IADD", "ISCADD", "UIADD3",
                                       "ULEA", "ULOP3", NULL};
static const char *const op_wide64[] = {"DADD", "DMUL", "DFMA", "DMNMX", NULL};
static const char *const op_stores[] = {"ST", "STG", "STS", "STL", "STSM", "RED", "REDG",
                                        "ATOM", "ATOMG", "ATOMS", "SUST", "SURED", NULL};

static gpd_advisor_class_t classify(const char *op) {
  if (base_is(op, op_local))
    return GPD_ADV_LOCAL;
  if (base_is(op, op_global))
    return GPD_ADV_GLOBAL;
  if (base_is(op, op_const))
    return GPD_ADV_CONST;
  if (base_is(op, op_shared))
    return GPD_ADV_SHARED;
  if (base_is(op, op_sync))
    return GPD_ADV_SYNC;
  if (base_is(op, op_control))
    return GPD_ADV_CONTROL;
  if (base_is(op, op_long))
    return GPD_ADV_LONGOP;
  if (base_is(op, op_mio) || strncmp(op, "CS2R.32", 7) == 0)
    return GPD_ADV_MIO;
  return GPD_ADV_FIXED;
}

/* ------------------------------------------------------ operands */

/* A register token at t (n chars): its resource id and width, or -1.
 * "R2.64" -> R2 with width 2; RZ/PT/URZ/UPT -> -1 (constants). */
static int reg_token(const char *t, size_t n, unsigned *width) {
  unsigned base, max;
  size_t skip;
  *width = 1;
  if (n >= 2 && t[0] == 'U' && t[1] == 'R' && n > 2 && isdigit((unsigned char)t[2])) {
    base = GPD_ADV_RES_UR, max = 63, skip = 2;
  } else if (n >= 2 && t[0] == 'U' && t[1] == 'P' && n > 2 && isdigit((unsigned char)t[2])) {
    base = GPD_ADV_RES_UP, max = 7, skip = 2;
  } else if (t[0] == 'R' && n > 1 && isdigit((unsigned char)t[1])) {
    base = GPD_ADV_RES_R, max = 255, skip = 1;
  } else if (t[0] == 'P' && n > 1 && isdigit((unsigned char)t[1])) {
    base = GPD_ADV_RES_P, max = 7, skip = 1;
  } else {
    return -1;
  }
  unsigned v = 0;
  size_t i = skip;
  for (; i < n && isdigit((unsigned char)t[i]) && v < 1000; i++)
    v = v * 10 + (unsigned)(t[i] - '0');
  if (v >= max) /* R255 = RZ, P7 = PT, UR63 = URZ */
    return -1;
  if (i < n && t[i] == '.') {
    if (n - i == 3 && strncmp(t + i, ".64", 3) == 0)
      *width = 2;
    else if (n - i == 4 && strncmp(t + i, ".128", 4) == 0)
      *width = 4;
  }
  if (base != GPD_ADV_RES_R && base != GPD_ADV_RES_UR)
    *width = 1;
  return (int)(base + v);
}

static void add_res(uint16_t *set, uint8_t *n, unsigned max, int res, unsigned width) {
  for (unsigned w = 0; w < width; w++) {
    int r = res + (int)w;
    if (res < GPD_ADV_RES_P && r >= 255)
      break;
    int dup = 0;
    for (unsigned i = 0; i < *n; i++)
      dup |= set[i] == r;
    if (!dup && *n < max)
      set[(*n)++] = (uint16_t)r;
  }
}

/* Width (registers) of a data operand from the opcode's modifiers. */
static unsigned data_width(const char *op) {
  if (strstr(op, ".128"))
    return 4;
  if (strstr(op, ".64") || base_is(op, op_wide64))
    return 2;
  return 1;
}

/* Next register token of an operand from *t on: resource id (or -1 at
 * the end), its width; "R4.reuse", "R4.H1", "|R4|", "-R4" give R4. */
static int next_reg(const char **t, unsigned *width) {
  static const char id[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.";
  while (**t) {
    const char *p = *t;
    if (!(isalnum((unsigned char)*p) || *p == '_')) {
      (*t)++;
      continue;
    }
    size_t n = strspn(p, id), rn = n;
    *t = p + n;
    const char *dot = memchr(p, '.', n);
    if (dot && !((size_t)(dot - p) + 3 == n && strncmp(dot, ".64", 3) == 0) &&
        !((size_t)(dot - p) + 4 == n && strncmp(dot, ".128", 4) == 0))
      rn = (size_t)(dot - p);
    int r = reg_token(p, rn, width);
    if (r >= 0)
      return r;
  }
  return -1;
}

static int is_pred_res(int r) {
  return (r >= GPD_ADV_RES_P && r < GPD_ADV_RES_UR) || (r >= GPD_ADV_RES_UP && r < GPD_ADV_RES_SB);
}

/* Operand k (text s) of instruction `in`: defs while *defs_open (the
 * destination, a second predicate of a SETP, carry-out predicates of
 * IADD3/LEA/LOP3, the register after an atomic's PT), else uses. */
static void operand(gpd_advisor_insn_t *in, const char *s, unsigned k, int *defs_open, int pdst,
                    int carry, int atom, int wide_dst, unsigned dw) {
  int memop = strchr(s, '[') != NULL;
  if (strstr(s, "SR_TID.X") || strstr(s, "SR_LANEID"))
    in->tid = 1;
  const char *t = s;
  unsigned w;
  int r = next_reg(&t, &w);
  int constant = strncmp(s, "RZ", 2) == 0 || strncmp(s, "PT", 2) == 0 ||
                 strncmp(s, "URZ", 3) == 0 || strncmp(s, "UPT", 3) == 0;
  if (*defs_open && !memop) {
    int def = k == 0 || (k == 1 && pdst && (constant || is_pred_res(r))) ||
              (k <= 2 && carry && (constant || is_pred_res(r))) ||
              (k == 1 && atom && in->ndef == 0);
    if (def) {
      if (r >= 0) {
        if (k == 0 || (atom && k == 1)) {
          if (!is_pred_res(r) && w == 1)
            w = wide_dst ? 2 : dw;
        }
        add_res(in->def, &in->ndef, GPD_ADV_MAXDEF, r, w);
      }
      return;
    }
  }
  *defs_open = 0;
  for (; r >= 0; r = next_reg(&t, &w)) {
    if (!memop && w == 1 && r < GPD_ADV_RES_P) {
      if (base_is(in->op, op_wide64))
        w = 2; /* FP64 operands are register pairs */
      else if (in->store && dw > 1)
        w = dw; /* the data of a 64/128-bit store */
      else if (wide_dst && k == 3)
        w = 2; /* IMAD.WIDE d, a, b, c: c is 64-bit */
    }
    if (memop && r >= GPD_ADV_RES_UR && r < GPD_ADV_RES_UP && w == 1 && strstr(s, "desc["))
      w = 2; /* desc[URn]: a 64-bit descriptor */
    add_res(in->use, &in->nuse, GPD_ADV_MAXUSE, r, w);
  }
}

int gpd_advisor_decode(const char *text, gpd_advisor_insn_t *out) {
  memset(out, 0, sizeof *out);
  out->pred = -1;
  out->wbar = out->rbar = 7;
  if (text == NULL)
    return -EINVAL;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", text);
  char *s = buf;
  char *semi = strchr(s, ';');
  if (semi)
    *semi = 0;
  while (*s == ' ' || *s == '\t')
    s++;
  if (*s == '@') { /* guard predicate */
    s++;
    if (*s == '!') {
      out->pred_neg = 1;
      s++;
    }
    size_t n = strcspn(s, " \t");
    unsigned w;
    int r = reg_token(s, n, &w);
    if (r >= GPD_ADV_RES_P && r < GPD_ADV_RES_UR + 0)
      out->pred = (int16_t)r;
    else if (r >= GPD_ADV_RES_UP && r < GPD_ADV_RES_SB)
      out->pred = (int16_t)r;
    else
      out->pred_neg = 0; /* @PT: always */
    s += n;
    while (*s == ' ' || *s == '\t')
      s++;
  }
  size_t on = strcspn(s, " \t");
  if (on == 0)
    return -EINVAL;
  snprintf(out->op, sizeof out->op, "%.*s", (int)on, s);
  s += on;
  out->cls = (uint8_t)classify(out->op);
  out->store = (uint8_t)base_is(out->op, op_stores);
  int has_dst = !base_is(out->op, no_dst);
  int carry = base_is(out->op, op_carry);
  int pdst = strstr(out->op, "SETP") != NULL ||
             base_is(out->op, (const char *const[]){"PLOP3", "UPLOP3", "ELECT", NULL});
  int wide_dst = strstr(out->op, ".WIDE") != NULL;
  unsigned dw = data_width(out->op);
  /* split operands at top-level commas; leading operands are defs */
  unsigned k = 0;
  int defs_open = has_dst, atom = base_is(out->op, (const char *const[]){"ATOM", "ATOMG", "ATOMS",
                                                                          NULL});
  while (*s) {
    while (*s == ' ' || *s == '\t' || *s == ',')
      s++;
    if (*s == 0)
      break;
    char *e = s;
    int depth = 0;
    while (*e && (depth > 0 || *e != ',')) {
      if (*e == '[' || *e == '{')
        depth++;
      else if ((*e == ']' || *e == '}') && depth > 0)
        depth--;
      e++;
    }
    char save = *e;
    *e = 0;
    operand(out, s, k, &defs_open, pdst, carry, atom, wide_dst, dw);
    k++;
    *e = save;
    s = e;
  }
  if (out->pred >= 0)
    add_res(out->use, &out->nuse, GPD_ADV_MAXUSE, out->pred, 1);
  return 0;
}

void gpd_advisor_apply_ctrl(gpd_advisor_insn_t *in, uint64_t hi) {
  uint32_t c = (uint32_t)(hi >> 41);
  in->has_ctrl = 1;
  in->stall = (uint8_t)(c & 0xf);
  in->wbar = (uint8_t)((c >> 5) & 7);
  in->rbar = (uint8_t)((c >> 8) & 7);
  in->wait = (uint8_t)((c >> 11) & 0x3f);
  if (in->wbar < 6)
    add_res(in->def, &in->ndef, GPD_ADV_MAXDEF, GPD_ADV_RES_SB + in->wbar, 1);
  if (in->rbar < 6)
    add_res(in->def, &in->ndef, GPD_ADV_MAXDEF, GPD_ADV_RES_SB + in->rbar, 1);
  for (unsigned b = 0; b < 6; b++)
    if (in->wait & (1u << b))
      add_res(in->use, &in->nuse, GPD_ADV_MAXUSE, GPD_ADV_RES_SB + (int)b, 1);
}

/* ---------------------------------------------------- cubin control */

int gpd_advisor_cubin_ctrl(const void *data, size_t len, const char *kernel, uint64_t **hi, size_t *n,
                       uint32_t *sm) {
  *hi = NULL;
  *n = 0;
  *sm = 0;
  if (data == NULL || len < 64 || kernel == NULL)
    return -EINVAL;
  elf_version(EV_CURRENT);
  Elf *e = elf_memory((char *)data, len);
  GElf_Ehdr eh;
  if (e == NULL || elf_kind(e) != ELF_K_ELF || gelf_getehdr(e, &eh) == NULL ||
      eh.e_ident[EI_CLASS] != ELFCLASS64) {
    if (e)
      elf_end(e);
    return -EINVAL;
  }
  /* CUDA ELF flags: ABI version >= 8 keeps the SM in bits 8-15, older ones
   * in bits 0-7 (EF_CUDA_SM). */
  *sm = eh.e_ident[EI_ABIVERSION] >= 8 ? (uint32_t)((eh.e_flags >> 8) & 0xff)
                                       : (uint32_t)(eh.e_flags & 0xff);
  size_t shstrndx;
  int err = -ENOENT;
  if (elf_getshdrstrndx(e, &shstrndx) != 0 || *sm < 70) {
    elf_end(e);
    return -ENOENT;
  }
  for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_PROGBITS)
      continue;
    const char *nm = elf_strptr(e, shstrndx, sh.sh_name);
    if (nm == NULL || strncmp(nm, ".text.", 6) != 0 || strcmp(nm + 6, kernel) != 0)
      continue;
    Elf_Data *d = elf_getdata(scn, NULL);
    if (d == NULL || d->d_buf == NULL || d->d_size < 16)
      break;
    size_t cnt = d->d_size / 16;
    uint64_t *v = malloc(cnt * sizeof *v);
    if (v == NULL) {
      err = -ENOMEM;
      break;
    }
    for (size_t i = 0; i < cnt; i++)
      memcpy(&v[i], (const char *)d->d_buf + 16 * i + 8, 8); /* little endian */
    *hi = v;
    *n = cnt;
    err = 0;
    break;
  }
  elf_end(e);
  return err;
}
