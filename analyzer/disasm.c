/* disasm.c - instructions of a cubin from NVIDIA's nvdisasm text.
 *
 * nvdisasm prints each code section as
 *     .text._Z1kPfiS_:
 *             / *0080* /                   CALL.REL.NOINC `($_Z1kPfiS_$_Z3hotPfi) ;
 *     .L_x_1:
 *             / *0160* /               @!P0 BRA `(.L_x_1) ;
 * with "//## File "f.cu", line 4" comments when asked for line info.  The
 * text comes from a tool run on a client's binary: lines that do not parse
 * are skipped, every name and number is bounded.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-analysis.h"

#define DISASM_MAX_INSNS (1u << 24)

typedef struct label_s {
  char *name;
  uint32_t sec;
  uint64_t off;
} label_t;

typedef struct fixup_s { /* an instruction whose target is a label */
  uint32_t sec;
  size_t insn;
  char *label;
} fixup_t;

typedef struct parse_s {
  gpd_disasm_t *d;
  size_t cap_secs, cap_insns, cap_files;
  label_t *labels;
  size_t nlabels, cap_labels;
  char **pending; /* labels seen before their instruction */
  size_t npending, cap_pending;
  fixup_t *fix;
  size_t nfix, cap_fix;
  int32_t file;
  uint32_t line;
} parse_t;

static int grow(void **p, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return 0;
  size_t c = *cap ? 2 * *cap : 16;
  void *q = realloc(*p, c * size);
  if (q == NULL)
    return -ENOMEM;
  *p = q;
  *cap = c;
  return 0;
}

static int new_section(parse_t *x, const char *name, size_t n) {
  gpd_disasm_t *d = x->d;
  if (grow((void **)&d->secs, &x->cap_secs, d->nsecs, sizeof *d->secs) < 0)
    return -ENOMEM;
  gpd_disasm_sec_t *s = &d->secs[d->nsecs];
  memset(s, 0, sizeof *s);
  if ((s->name = strndup(name, n)) == NULL)
    return -ENOMEM;
  d->nsecs++;
  x->cap_insns = 0;
  x->file = -1;
  x->line = 0;
  for (size_t i = 0; i < x->npending; i++)
    free(x->pending[i]);
  x->npending = 0;
  return 0;
}

static int add_label(parse_t *x, const char *name, size_t n) {
  if (x->d->nsecs == 0 || n == 0 || n > 1024)
    return 0;
  if (grow((void **)&x->pending, &x->cap_pending, x->npending, sizeof *x->pending) < 0)
    return -ENOMEM;
  if ((x->pending[x->npending] = strndup(name, n)) == NULL)
    return -ENOMEM;
  x->npending++;
  return 0;
}

static int32_t file_id(parse_t *x, const char *name, size_t n) {
  gpd_disasm_t *d = x->d;
  for (size_t i = 0; i < d->nfiles; i++)
    if (strlen(d->files[i]) == n && memcmp(d->files[i], name, n) == 0)
      return (int32_t)i;
  if (d->nfiles >= 4096 ||
      grow((void **)&d->files, &x->cap_files, d->nfiles, sizeof *d->files) < 0)
    return -1;
  if ((d->files[d->nfiles] = strndup(name, n)) == NULL)
    return -1;
  return (int32_t)d->nfiles++;
}

/* "//## File "path", line N ..." */
static void parse_lineinfo(parse_t *x, const char *s) {
  const char *q = strstr(s, "File \"");
  if (q == NULL)
    return;
  q += 6;
  const char *e = strchr(q, '"');
  if (e == NULL)
    return;
  const char *l = strstr(e, "line ");
  x->file = file_id(x, q, (size_t)(e - q));
  x->line = l ? (uint32_t)strtoul(l + 5, NULL, 10) : 0;
}

static int is_op(const char *base, size_t n, const char *want) {
  return strlen(want) == n && memcmp(base, want, n) == 0;
}

/* One instruction line: s points after "/ *" */
static int parse_insn(parse_t *x, const char *s) {
  gpd_disasm_t *d = x->d;
  if (d->nsecs == 0)
    return 0;
  char *end;
  unsigned long long off = strtoull(s, &end, 16);
  if (end == s || strncmp(end, "*/", 2) != 0)
    return 0;
  s = end + 2;
  while (*s == ' ' || *s == '\t')
    s++;
  if (*s == 0 || *s == ';')
    return 0; /* the second line of an encoding */
  gpd_disasm_sec_t *sec = &d->secs[d->nsecs - 1];
  if (sec->ninsns >= DISASM_MAX_INSNS)
    return 0;
  if (grow((void **)&sec->insns, &x->cap_insns, sec->ninsns, sizeof *sec->insns) < 0)
    return -ENOMEM;
  gpd_insn_t *in = &sec->insns[sec->ninsns];
  memset(in, 0, sizeof *in);
  in->off = off;
  in->target = UINT64_MAX;
  in->file = x->file;
  in->line = x->line;
  size_t tl = strcspn(s, ";");
  while (tl && (s[tl - 1] == ' ' || s[tl - 1] == '\t'))
    tl--;
  in->text = strndup(s, tl);
  int pred = 0;
  if (*s == '@') {
    const char *p = s + 1;
    if (*p == '!')
      p++;
    pred = strncmp(p, "PT", 2) != 0 || isalnum((unsigned char)p[2]) || s[1] == '!';
    while (*s && *s != ' ' && *s != '\t')
      s++;
    while (*s == ' ' || *s == '\t')
      s++;
  }
  size_t n = strcspn(s, " \t;");
  snprintf(in->opcode, sizeof in->opcode, "%.*s", (int)n, s);
  size_t b = strcspn(in->opcode, ".");
  const char *op = in->opcode;
  const char *args = s + n;
  if (is_op(op, b, "BRA") || is_op(op, b, "JMP") || is_op(op, b, "BRX") || is_op(op, b, "JMX")) {
    in->flags |= GPD_INSN_BRANCH;
    if (op[0] == 'B' && op[2] == 'X')
      in->flags |= GPD_INSN_INDIRECT;
    if (op[0] == 'J' && op[2] == 'X')
      in->flags |= GPD_INSN_INDIRECT;
    /* BRA.DIV / a predicate operand before the target: may fall through */
    const char *tick = strchr(args, '`');
    if (pred || strstr(in->opcode, ".DIV") ||
        (tick && memchr(args, ',', (size_t)(tick - args)) != NULL))
      in->flags |= GPD_INSN_COND;
  } else if (is_op(op, b, "CALL")) {
    in->flags |= GPD_INSN_CALL;
  } else if (is_op(op, b, "RET") || is_op(op, b, "EXIT")) {
    in->flags |= GPD_INSN_RETURN;
    if (pred)
      in->flags |= GPD_INSN_COND;
  }
  if (in->flags & (GPD_INSN_BRANCH | GPD_INSN_CALL)) {
    const char *t = strstr(args, "`(");
    if (t) {
      t += 2;
      size_t tn = strcspn(t, ")");
      if (t[tn] == ')' && tn > 0 && tn <= 1024) {
        if (grow((void **)&x->fix, &x->cap_fix, x->nfix, sizeof *x->fix) < 0)
          return -ENOMEM;
        fixup_t *f = &x->fix[x->nfix];
        if ((f->label = strndup(t, tn)) == NULL)
          return -ENOMEM;
        f->sec = (uint32_t)(d->nsecs - 1);
        f->insn = sec->ninsns;
        x->nfix++;
      }
    } else if (!(in->flags & GPD_INSN_INDIRECT)) {
      in->flags |= GPD_INSN_INDIRECT; /* absolute or register target */
    }
  }
  sec->ninsns++;
  for (size_t i = 0; i < x->npending; i++) {
    if (grow((void **)&x->labels, &x->cap_labels, x->nlabels, sizeof *x->labels) < 0)
      return -ENOMEM;
    x->labels[x->nlabels++] = (label_t){x->pending[i], (uint32_t)(d->nsecs - 1), off};
  }
  x->npending = 0;
  return 0;
}

static int parse_line(parse_t *x, const char *s, size_t len) {
  char buf[2048];
  if (len >= sizeof buf)
    len = sizeof buf - 1;
  memcpy(buf, s, len);
  buf[len] = 0;
  char *p = buf;
  while (*p == ' ' || *p == '\t')
    p++;
  if (strncmp(p, "//##", 4) == 0) {
    parse_lineinfo(x, p);
    return 0;
  }
  if (strncmp(p, "/*", 2) == 0)
    return parse_insn(x, p + 2);
  if (strncmp(p, ".section", 8) == 0 && (p[8] == ' ' || p[8] == '\t')) {
    char *q = p + 9;
    while (*q == ' ' || *q == '\t')
      q++;
    if (strncmp(q, ".text.", 6) == 0) {
      q += 6;
      return new_section(x, q, strcspn(q, ", \t"));
    }
    return 0;
  }
  size_t n = strcspn(p, ": \t");
  if (n && p[n] == ':' && (p[n + 1] == 0 || p[n + 1] == ' ' || p[n + 1] == '\t')) {
    if (strncmp(p, ".text.", 6) == 0) {
      /* a section label; the ".section" line may have started it already */
      gpd_disasm_t *d = x->d;
      if (d->nsecs && strlen(d->secs[d->nsecs - 1].name) == n - 6 &&
          memcmp(d->secs[d->nsecs - 1].name, p + 6, n - 6) == 0 &&
          d->secs[d->nsecs - 1].ninsns == 0)
        return 0;
      return new_section(x, p + 6, n - 6);
    }
    return add_label(x, p, n);
  }
  return 0;
}

static int insn_cmp(const void *a, const void *b) {
  const gpd_insn_t *x = a, *y = b;
  return x->off < y->off ? -1 : x->off > y->off;
}

void gpd_disasm_free(gpd_disasm_t *d) {
  if (d == NULL)
    return;
  for (size_t i = 0; i < d->nsecs; i++) {
    free(d->secs[i].name);
    for (size_t j = 0; j < d->secs[i].ninsns; j++)
      free(d->secs[i].insns[j].text);
    free(d->secs[i].insns);
  }
  for (size_t i = 0; i < d->nfiles; i++)
    free(d->files[i]);
  free(d->secs);
  free(d->files);
  free(d);
}

int gpd_disasm_parse(const char *text, size_t len, gpd_disasm_t **out) {
  int err = 0;
  parse_t x = {.file = -1};
  if (text == NULL || out == NULL)
    return -EINVAL;
  *out = NULL;
  if ((x.d = calloc(1, sizeof *x.d)) == NULL)
    return -ENOMEM;
  const char *p = text, *end = text + len;
  while (p < end && err == 0) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    err = parse_line(&x, p, (size_t)(le - p));
    p = le + 1;
  }
  size_t total = 0, unresolved = 0;
  for (size_t i = 0; err == 0 && i < x.nfix; i++) {
    fixup_t *f = &x.fix[i];
    gpd_insn_t *in = &x.d->secs[f->sec].insns[f->insn];
    for (size_t j = 0; j < x.nlabels; j++)
      if (x.labels[j].sec == f->sec && strcmp(x.labels[j].name, f->label) == 0) {
        in->target = x.labels[j].off;
        break;
      }
    if (in->target == UINT64_MAX) {
      in->flags |= GPD_INSN_INDIRECT;
      unresolved++;
    }
  }
  for (size_t i = 0; err == 0 && i < x.d->nsecs; i++) {
    gpd_disasm_sec_t *s = &x.d->secs[i];
    if (s->ninsns > 1)
      qsort(s->insns, s->ninsns, sizeof *s->insns, insn_cmp);
    total += s->ninsns;
  }
  if (unresolved)
    snprintf(x.d->notes, sizeof x.d->notes, "%zu branch/call targets outside their section",
             unresolved);
  for (size_t i = 0; i < x.nfix; i++)
    free(x.fix[i].label);
  for (size_t i = 0; i < x.nlabels; i++)
    free(x.labels[i].name);
  for (size_t i = 0; i < x.npending; i++)
    free(x.pending[i]);
  free(x.fix);
  free(x.labels);
  free(x.pending);
  if (err == 0 && total == 0)
    err = -EINVAL;
  if (err < 0) {
    gpd_disasm_free(x.d);
    return err;
  }
  *out = x.d;
  return 0;
}

const gpd_disasm_sec_t *gpd_disasm_section(const gpd_disasm_t *d, const char *kernel) {
  for (size_t i = 0; d && kernel && i < d->nsecs; i++)
    if (strcmp(d->secs[i].name, kernel) == 0)
      return &d->secs[i];
  return NULL;
}
