/* render.c - text output of the CLI: the top-down heterogeneous calling
 * context tree (CPU path -> <gpu op> placeholder -> kernel), the flat
 * profile, processes / back ends / GPU binaries, `ps` and `top`
 * (the summaries by name and `record`'s summary: render-summary.c).  Times are stored in ns and shown in seconds with 4
 * significant digits; percentages are of the root's inclusive value of the
 * same metric.
 */
#include <math.h>
#include <pwd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gpuprof/metric.h"

/* Extra inclusive values shown after a node's label when non-zero. */
static const unsigned extra_ids[] = {GPD_M_GXCOPY_H2D,  GPD_M_GXCOPY_D2H,  GPD_M_GXCOPY_D2D,
                                     GPD_M_GKER_COUNT,  GPD_M_GXCOPY_COUNT, GPD_M_GMEM_COUNT,
                                     GPD_M_GMSET_COUNT, GPD_M_GSYNC_COUNT};
static const unsigned count_ids[] = {GPD_M_GKER_COUNT, GPD_M_GXCOPY_COUNT, GPD_M_GMEM_COUNT, GPD_M_GMSET_COUNT,
                                     GPD_M_GSYNC_COUNT};

const char *gpd_cli_job(char *buf, size_t n, const char *job, int claimed) {
  char raw[300];
  if (!job || !job[0]) return "-";
  snprintf(raw, sizeof raw, claimed ? "%s(claimed)" : "%s", job); /* one word: tables stay split by blanks */
  return gpd_text_line(buf, n, raw);
}

void gpd_render_bytes(char *buf, size_t n, double b) {
  static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  if (fabs(b) < 1024) {
    snprintf(buf, n, "%.0f B", b);
    return;
  }
  while (fabs(b) >= 1024 && i < 5) {
    b /= 1024;
    i++;
  }
  snprintf(buf, n, "%.2f %s", b, u[i]);
}

void gpd_render_value(char *buf, size_t n, unsigned id, double v) {
  const gpd_metric_desc_t *d = gpd_metric_desc(id);
  if (v == 0) {
    snprintf(buf, n, "0");
    return;
  }
  /* one format per unit (the unit is in the column's header) */
  if (d && d->unit == GPD_UNIT_NS)
    snprintf(buf, n, "%.6f", v / 1e9); /* s, to the us */
  else if (d && (d->unit == GPD_UNIT_COUNT || d->unit == GPD_UNIT_BYTES))
    snprintf(buf, n, "%.0f", v);
  else
    snprintf(buf, n, "%.2f", v);
}

/* " s", " B" or "": the unit a column of metric id is shown in */
static const char *unit_suffix(unsigned id) {
  const gpd_metric_desc_t *d = gpd_metric_desc(id);
  return d && d->unit == GPD_UNIT_NS ? " s" : d && d->unit == GPD_UNIT_BYTES ? " B" : "";
}

static const char *metric_name(unsigned id) {
  const gpd_metric_desc_t *d = gpd_metric_desc(id);
  return d ? d->name : "?";
}

double gpd_render_op_count(const gpd_mvec_t *m) {
  double c = 0;
  for (size_t i = 0; i < sizeof(count_ids) / sizeof(count_ids[0]); i++) c += gpd_tree_mvec_get(m, count_ids[i]);
  return c;
}

static int mvec_zero(const gpd_mvec_t *m) {
  for (uint32_t i = 0; i < m->n; i++)
    if (m->v[i].v != 0) return 0;
  return 1;
}

/* The columns: the chosen metric first when it is not GPUOP or GKER,
 * CPUTIME when the profile has CPU samples and GINST when it has GPU PC
 * samples. */
static size_t columns(const gpd_tree_t *t, const gpd_render_opts_t *o, unsigned cols[5]) {
  size_t n = 0;
  if (o->metric != GPD_M_GPUOP && o->metric != GPD_M_GKER) cols[n++] = o->metric;
  cols[n++] = GPD_M_GPUOP;
  cols[n++] = GPD_M_GKER;
  if (o->metric != GPD_M_CPUTIME && t->root != SIZE_MAX && gpd_tree_mvec_get(&t->nodes[t->root].incl, GPD_M_CPUTIME) > 0)
    cols[n++] = GPD_M_CPUTIME;
  if (o->metric != GPD_M_GINST && t->root != SIZE_MAX && gpd_tree_mvec_get(&t->nodes[t->root].incl, GPD_M_GINST) > 0)
    cols[n++] = GPD_M_GINST;
  return n;
}

void gpd_render_pct(char *buf, size_t n, double v, double total) {
  if (total > 0)
    snprintf(buf, n, "%.1f%%", 100.0 * v / total);
  else
    snprintf(buf, n, "-");
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

void gpd_render_short_name(char *buf, size_t n, const char *name) {
  const char *s = name;
  size_t len = 0;
  int depth = 0;
  if (n == 0)
    return;
  if (!strncmp(s, "void ", 5) && strchr(s, '('))
    s += 5; /* a kernel's return type */
  static const char anon[] = "(anonymous namespace)";
  int brace = 0; /* inside {lambda(...)#1}: its parentheses are not the argument list */
  for (; *s && len + 1 < n; s++) {
    if (depth == 0 && *s == '(' && !strncmp(s, anon, sizeof anon - 1)) {
      for (size_t i = 0; i < sizeof anon - 1 && len + 1 < n; i++)
        buf[len++] = anon[i];
      s += sizeof anon - 2;
      continue;
    }
    if (depth == 0 && (*s == '{' || (*s == '}' && brace > 0))) {
      brace += *s == '{' ? 1 : -1;
      buf[len++] = *s;
      continue;
    }
    int op = s - name >= 8 && !strncmp(s - 8, "operator", 8); /* operator<, operator<< */
    if (*s == '<' && s > name && !op && s[-1] != '<') {
      depth++;
      continue;
    }
    if (*s == '>' && depth > 0) {
      depth--;
      continue;
    }
    if (depth > 0)
      continue;
    if (*s == '(' && s[1] == ')' && op && len + 2 < n) {
      buf[len++] = '(';
      buf[len++] = ')';
      s++; /* operator() */
      continue;
    }
    if (*s == '(' && len > 0 && brace == 0)
      break; /* the argument list */
    buf[len++] = *s;
  }
  buf[len] = 0;
  if (len == 0)
    snprintf(buf, n, "%s", name);
}

void gpd_render_node_name(char *buf, size_t n, const gpd_tnode_t *nd) {
  const char *label = nd->label;
  switch (nd->kind) {
  case GPD_NODE_ROOT:
    snprintf(buf, n, "%s", label[0] ? label : "<program root>");
    return;
  case GPD_NODE_FRAME:
    if (nd->nframes) {
      const gpd_tframe_t *f = &nd->frames[0];
      const char *fn = f->function[0] ? f->function : label;
      if ((!fn[0] || !strcmp(fn, "??")) && nd->module[0]) {
        /* no symbol (a stripped binary): say where, as perf does */
        snprintf(buf, n, "%s+0x%llx", base_name(nd->module), (unsigned long long)nd->offset);
        return;
      }
      if (f->file[0] && strcmp(f->file, "??"))
        snprintf(buf, n, "%s (%s:%u)", fn[0] ? fn : "??", f->file, f->line);
      else
        snprintf(buf, n, "%s", fn[0] ? fn : "??");
      return;
    }
    if (!strcmp(label, "??"))
      label = ""; /* no symbol: where, below */
    if (label[0] && nd->module[0])
      snprintf(buf, n, "%s [%s+0x%llx]", label, base_name(nd->module), (unsigned long long)nd->offset);
    else if (label[0])
      snprintf(buf, n, "%s", label);
    else if (nd->module[0])
      snprintf(buf, n, "%s+0x%llx", base_name(nd->module), (unsigned long long)nd->offset);
    else
      snprintf(buf, n, "0x%llx", (unsigned long long)nd->offset);
    return;
  case GPD_NODE_UNKNOWN:
    snprintf(buf, n, "%s", label[0] ? label : "<unknown>");
    return;
  default:
    snprintf(buf, n, "%s", label[0] ? label : (nd->raw_name[0] ? nd->raw_name : "<gpu op>"));
  }
}

static void extras(char *buf, size_t n, const gpd_mvec_t *m) {
  size_t len = 0;
  buf[0] = 0;
  for (size_t i = 0; i < sizeof(extra_ids) / sizeof(extra_ids[0]); i++) {
    double v = gpd_tree_mvec_get(m, extra_ids[i]);
    char val[48];
    if (v == 0) continue;
    if (gpd_metric_desc(extra_ids[i])->unit == GPD_UNIT_BYTES)
      gpd_render_bytes(val, sizeof(val), v);
    else
      snprintf(val, sizeof(val), "%.0f", v);
    int w = snprintf(buf + len, n - len, "%s%s=%s", len ? ", " : "  {", metric_name(extra_ids[i]), val);
    if (w < 0 || (size_t)w >= n - len) break;
    len += (size_t)w;
  }
  if (len && len + 2 < n) strcat(buf, "}");
}

static void tree_header(FILE *f, const unsigned *cols, size_t nc) {
  for (size_t c = 0; c < nc; c++) {
    char a[64], b[64];
    snprintf(a, sizeof(a), "%s:incl%s", metric_name(cols[c]), unit_suffix(cols[c]));
    snprintf(b, sizeof(b), "%s:excl%s", metric_name(cols[c]), unit_suffix(cols[c]));
    fprintf(f, "%14s %6s %14s ", a, "%", b);
  }
  fprintf(f, " calling context\n");
}

/* Indentation of a line at `depth` levels: 2 columns a level up to
 * INDENT_MAX levels; deeper lines keep that indentation and say their
 * depth ("[depth 200000] "), so a very deep chain prints in linear size. */
#define INDENT_MAX 64

static void indent(FILE *f, unsigned depth) {
  if (depth <= INDENT_MAX)
    fprintf(f, "%*s", (int)(2 * depth), "");
  else
    fprintf(f, "%*s[depth %u] ", 2 * INDENT_MAX, "", depth);
}

/* 1 when nd and another child of its parent would print the same name
 * (two calls from one line, frames without a symbol or a line): then the
 * call site's offset tells them apart. */
static int shares_name(const gpd_tree_t *t, const gpd_tnode_t *nd) {
  if (nd->parent == SIZE_MAX || nd->kind != GPD_NODE_FRAME) return 0;
  const gpd_tnode_t *p = &t->nodes[nd->parent];
  for (uint32_t k = 0; k < p->nkids; k++) {
    const gpd_tnode_t *s = &t->nodes[p->kids[k]];
    if (s == nd || s->kind != nd->kind || strcmp(s->label, nd->label) || s->nframes != nd->nframes) continue;
    if (nd->nframes && (strcmp(s->frames[0].function, nd->frames[0].function) ||
                        strcmp(s->frames[0].file, nd->frames[0].file) || s->frames[0].line != nd->frames[0].line))
      continue;
    if (s->offset != nd->offset || strcmp(s->module, nd->module)) return 1;
  }
  return 0;
}

/* The width tree lines are cut to: the terminal's (or COLUMNS) when
 * output goes to a terminal or COLUMNS is set, else 0 (whole lines: a
 * file or pipe gets every name whole); 0 with --wide. */
static unsigned tree_width(const gpd_render_opts_t *o) {
  if (o->wide || (!isatty(fileno(stdout)) && getenv("COLUMNS") == NULL))
    return 0;
  return gpd_cli_width();
}

/* Cut `name` (a tree line's text after its indentation: the node's name,
 * call site, extra metrics) so that a line whose text starts at column
 * `at` ends by column `width` (0: no cut): "..." replaces the end; 24
 * characters are always kept. */
static void fit_name(char *name, size_t at, unsigned width) {
  size_t len = strlen(name), room = width > at + 24 ? width - at : 24;
  if (width == 0 || len <= room)
    return;
  memcpy(name + room - 3, "...", 4);
}

static void tree_line(FILE *f, const gpd_tree_t *t, const gpd_tnode_t *nd, const unsigned *cols, size_t nc,
                      unsigned depth, unsigned width) {
  const gpd_tnode_t *root = &t->nodes[t->root];
  char raw[1024], name[1024], ex[512], fn[512], file[512];
  for (size_t c = 0; c < nc; c++) {
    char iv[48], pv[16], ev[48];
    double inc = gpd_tree_mvec_shown(&nd->incl, cols[c]);
    gpd_render_value(iv, sizeof(iv), cols[c], inc);
    gpd_render_value(ev, sizeof(ev), cols[c], gpd_tree_mvec_shown(&nd->excl, cols[c]));
    gpd_render_pct(pv, sizeof(pv), inc, gpd_tree_mvec_shown(&root->incl, cols[c]));
    fprintf(f, "%14s %6s %14s ", iv, pv, ev);
  }
  gpd_render_node_name(raw, sizeof(raw), nd);
  gpd_text_line(name, sizeof(name), raw); /* a name with a newline is one row */
  extras(ex, sizeof(ex), &nd->incl);
  fputc(' ', f);
  indent(f, depth);
  size_t at = nc * 37 + 1 + (depth <= INDENT_MAX ? 2 * depth : 2 * INDENT_MAX + 20);
  char line[2048];
  if (shares_name(t, nd) && !strstr(name, "+0x"))
    snprintf(line, sizeof line, "%s @%s+0x%llx%s", name, base_name(nd->module), (unsigned long long)nd->offset, ex);
  else
    snprintf(line, sizeof line, "%s%s", name, ex);
  fit_name(line, at, width);
  fprintf(f, "%s\n", line);
  /* inlined frames: nested lines, no metric columns of their own; each
   * says where the next outer function calls it */
  for (uint32_t k = 1; k < nd->nframes; k++) {
    const gpd_tframe_t *fr = &nd->frames[k];
    fprintf(f, "%*s ", (int)(nc * 37), "");
    indent(f, depth + k);
    fprintf(f, "[inlined] %s", fr->function[0] ? gpd_text_line(fn, sizeof fn, fr->function) : "??");
    if (fr->file[0] && strcmp(fr->file, "??")) fprintf(f, " (%s:%u)", gpd_text_line(file, sizeof file, fr->file), fr->line);
    fputc('\n', f);
  }
}

/* Pre-order walk with an explicit stack (a profile may be 200 000 levels
 * deep): children pushed in reverse so that they print in sorted order. */
static void tree_walk(FILE *f, const gpd_tree_t *t, const unsigned *cols, size_t nc, const gpd_render_opts_t *o) {
  typedef struct { size_t i; unsigned depth, indent; } item_t;
  unsigned width = tree_width(o);
  item_t *st = malloc((t->n + 1) * sizeof(*st));
  size_t ns = 0;
  if (!st) abort();
  st[ns++] = (item_t){t->root, 0, 0};
  while (ns) {
    item_t it = st[--ns];
    const gpd_tnode_t *nd = &t->nodes[it.i];
    if (it.i != t->root && mvec_zero(&nd->incl)) continue; /* hide zero subtrees */
    tree_line(f, t, nd, cols, nc, it.indent, width);
    if (o->depth && it.depth >= o->depth) continue;
    unsigned sub = it.indent + 1 + (nd->nframes > 1 ? nd->nframes - 1 : 0);
    for (uint32_t k = nd->nkids; k-- > 0;) st[ns++] = (item_t){nd->kids[k], it.depth + 1, sub};
  }
  free(st);
}

void gpd_render_tree(FILE *f, const gpd_tree_t *t, const gpd_render_opts_t *o) {
  unsigned cols[5];
  size_t nc = columns(t, o, cols);
  if (t->root == SIZE_MAX) {
    fprintf(f, "(empty profile)\n");
    return;
  }
  fprintf(f, "Calling context tree (top-down; units in the headers: s, B; %% of the root's inclusive value; sorted by %s)\n",
          metric_name(o->metric));
  tree_header(f, cols, nc);
  tree_walk(f, t, cols, nc, o);
}

/* ---- flat profile ---- */

typedef struct flat_row_s {
  int kind;
  const char *label;
  gpd_mvec_t excl, incl;
} flat_row_t;

static const gpd_tree_t *flat_tree;
static unsigned flat_metric;
static char **flat_where; /* per node: "module+0xoffset" of a frame without a symbol, else NULL */

static const char *flat_label(const gpd_tnode_t *nd) {
  const char *w = flat_where ? flat_where[nd - flat_tree->nodes] : NULL;
  if (w) return w; /* spelled as the tree spells it, never ?? */
  if (nd->kind == GPD_NODE_FRAME && !nd->label[0] && nd->nframes) return nd->frames[0].function;
  return nd->label;
}

static int flat_key_cmp(const void *a, const void *b) {
  const gpd_tnode_t *x = &flat_tree->nodes[*(const size_t *)a];
  const gpd_tnode_t *y = &flat_tree->nodes[*(const size_t *)b];
  if (x->kind != y->kind) return x->kind - y->kind;
  return strcmp(flat_label(x), flat_label(y));
}

static int flat_row_cmp(const void *a, const void *b) {
  const flat_row_t *x = a, *y = b;
  double vx = gpd_tree_mvec_get(&x->excl, flat_metric), vy = gpd_tree_mvec_get(&y->excl, flat_metric);
  if (vx != vy) return vx > vy ? -1 : 1;
  vx = gpd_tree_mvec_get(&x->incl, flat_metric);
  vy = gpd_tree_mvec_get(&y->incl, flat_metric);
  if (vx != vy) return vx > vy ? -1 : 1;
  if (x->kind != y->kind) return x->kind - y->kind;
  return strcmp(x->label, y->label);
}

static const char *kind_name(int k) {
  switch (k) {
  case GPD_NODE_ROOT: return "root";
  case GPD_NODE_FRAME: return "cpu";
  case GPD_NODE_PLACEHOLDER: return "gpu-op";
  case GPD_NODE_KERNEL: return "kernel";
  case GPD_NODE_UNKNOWN: return "unknown";
  case GPD_NODE_PYTHON: return "python";
  case GPD_NODE_OPERATOR: return "op";
  case GPD_NODE_GPU_FUNC: return "gpu-fn";
  case GPD_NODE_GPU_LOOP: return "gpu-loop";
  case GPD_NODE_GPU_LINE: return "gpu-line";
  case GPD_NODE_GPU_INSN: return "gpu-insn";
  case GPD_NODE_GPU_STALL: return "gpu-stall";
  }
  return "?";
}

/** Build the flat rows (exclusive sums by kind+label; inclusive sums
 *  counted once per recursion chain: a node adds its inclusive value only
 *  when no ancestor has the same row, found with per-row counts of the
 *  current root path during one iterative pre-order walk).  Returns the
 *  row count; *out is malloc'd (caller frees rows' vectors and the array). */
static size_t flat_rows(const gpd_tree_t *t, unsigned metric, flat_row_t **out) {
  size_t *idx = malloc((t->n + 1) * sizeof(*idx)), ni = 0, nr = 0;
  size_t *row_of = malloc((t->n + 1) * sizeof(*row_of));
  flat_row_t *rows = calloc(t->n + 1, sizeof(*rows));
  if (!idx || !rows || !row_of) abort();
  for (size_t i = 0; i < t->n; i++) {
    const gpd_tnode_t *nd = &t->nodes[i];
    row_of[i] = SIZE_MAX;
    if (i == t->root || nd->parent == SIZE_MAX || nd->kind == GPD_NODE_ROOT) continue;
    if (mvec_zero(&nd->incl)) continue;
    idx[ni++] = i;
  }
  flat_tree = t;
  flat_where = calloc(t->n + 1, sizeof(*flat_where));
  if (!flat_where) abort();
  for (size_t k = 0; k < ni; k++) {
    const gpd_tnode_t *nd = &t->nodes[idx[k]];
    const char *fn = nd->nframes && nd->frames[0].function[0] ? nd->frames[0].function : nd->label;
    if (nd->kind == GPD_NODE_FRAME && (!fn[0] || !strcmp(fn, "??")) && nd->module[0]) {
      char buf[1024];
      gpd_render_node_name(buf, sizeof(buf), nd);
      flat_where[idx[k]] = gpd_cli_strdup(buf);
    }
  }
  qsort(idx, ni, sizeof(*idx), flat_key_cmp);
  for (size_t k = 0; k < ni; k++) {
    const gpd_tnode_t *nd = &t->nodes[idx[k]];
    if (!nr || rows[nr - 1].kind != nd->kind || strcmp(rows[nr - 1].label, flat_label(nd))) {
      rows[nr].kind = nd->kind;
      rows[nr].label = flat_label(nd);
      nr++;
    }
    row_of[idx[k]] = nr - 1;
    flat_row_t *r = &rows[nr - 1];
    for (uint32_t j = 0; j < nd->excl.n; j++) gpd_tree_mvec_add(&r->excl, nd->excl.v[j].id, nd->excl.v[j].v);
  }
  free(idx);
  /* walk: stack entries are node indexes; ~index marks "leaving" */
  uint32_t *on_path = calloc(nr + 1, sizeof(*on_path));
  size_t *st = malloc((2 * t->n + 2) * sizeof(*st)), ns = 0;
  if (!on_path || !st) abort();
  if (t->root != SIZE_MAX) st[ns++] = t->root;
  while (ns) {
    size_t e = st[--ns];
    if (e >= (SIZE_MAX >> 1)) { /* leaving node ~e */
      on_path[row_of[~e]]--;
      continue;
    }
    const gpd_tnode_t *nd = &t->nodes[e];
    size_t r = row_of[e];
    if (r != SIZE_MAX) {
      if (!on_path[r])
        for (uint32_t j = 0; j < nd->incl.n; j++) gpd_tree_mvec_add(&rows[r].incl, nd->incl.v[j].id, nd->incl.v[j].v);
      on_path[r]++;
      st[ns++] = ~e;
    }
    for (uint32_t k = 0; k < nd->nkids; k++) st[ns++] = nd->kids[k];
  }
  free(st);
  free(on_path);
  free(row_of);
  flat_metric = metric;
  qsort(rows, nr, sizeof(*rows), flat_row_cmp);
  *out = rows;
  return nr;
}

void gpd_render_flat(FILE *f, const gpd_tree_t *t, const gpd_render_opts_t *o) {
  unsigned cols[5];
  size_t nc = columns(t, o, cols);
  flat_row_t *rows;
  if (t->root == SIZE_MAX) {
    fprintf(f, "(empty profile)\n");
    return;
  }
  const gpd_tnode_t *root = &t->nodes[t->root];
  size_t nr = flat_rows(t, o->metric, &rows);
  fprintf(f, "Flat profile (by kind and label; units in the headers: s, B; %% of the root's inclusive value; sorted by %s "
             "exclusive)\n",
          metric_name(o->metric));
  for (size_t c = 0; c < nc; c++) {
    char a[64], b[64];
    snprintf(a, sizeof(a), "%s:excl%s", metric_name(cols[c]), unit_suffix(cols[c]));
    snprintf(b, sizeof(b), "%s:incl%s", metric_name(cols[c]), unit_suffix(cols[c]));
    fprintf(f, "%14s %6s %14s ", a, "%", b);
  }
  fprintf(f, "%8s  %-7s %s\n", "COUNT", "KIND", "NAME");
  for (size_t r = 0; r < nr; r++) {
    for (size_t c = 0; c < nc; c++) {
      char ev[48], pv[16], iv[48];
      double ex = gpd_tree_mvec_shown(&rows[r].excl, cols[c]);
      gpd_render_value(ev, sizeof(ev), cols[c], ex);
      gpd_render_value(iv, sizeof(iv), cols[c], gpd_tree_mvec_shown(&rows[r].incl, cols[c]));
      gpd_render_pct(pv, sizeof(pv), ex, gpd_tree_mvec_shown(&root->incl, cols[c]));
      fprintf(f, "%14s %6s %14s ", ev, pv, iv);
    }
    char lab[1024];
    fprintf(f, "%8.0f  %-7s %s\n", gpd_render_op_count(&rows[r].incl), kind_name(rows[r].kind),
            rows[r].label[0] ? gpd_text_line(lab, sizeof lab, rows[r].label) : "??");
    gpd_tree_mvec_free(&rows[r].excl);
    gpd_tree_mvec_free(&rows[r].incl);
  }
  free(rows);
  for (size_t i = 0; i < t->n; i++) free(flat_where[i]);
  free(flat_where);
  flat_where = NULL;
}

/* ---- processes, back ends, GPU binaries ---- */

static void backends_col(char *buf, size_t n, const gpd_tproc_t *p) {
  size_t len = 0;
  buf[0] = 0;
  for (uint32_t i = 0; i < p->nbackends && len + 1 < n; i++) {
    int w = snprintf(buf + len, n - len, "%s%s%s", len ? "," : "", p->backends[i].enabled ? "" : "-",
                     p->backends[i].api);
    if (w < 0) break;
    len += (size_t)w;
  }
  if (!len) snprintf(buf, n, "-");
}

/* The error bound of PC samples from rotating windows (daemon/pcrotate.c),
 * under the processes that had them.  A stall reason's share p of n
 * samples is a binomial proportion: its standard error is
 * sqrt(p (1 - p) / n) <= 1 / (2 sqrt(n)) (at p = 1/2), printed in
 * percentage points; a reason's own count k has the Poisson relative error
 * 1 / sqrt(k).  Shares need no scaling; sample counts are shown as
 * sampled, not scaled to the lifetime (window time / lifetime is printed
 * with each process). */
static void render_pcs_bound(FILE *f, const gpd_tree_t *t) {
  int rot = 0;
  for (size_t i = 0; i < t->nprocs && !rot; i++)
    rot = t->procs[i].pcs_state && strstr(t->procs[i].pcs_state, "rotating window") != NULL;
  if (!rot)
    return;
  double n = t->root < t->n ? gpd_tree_mvec_get(&t->nodes[t->root].incl, GPD_M_GINST) : 0;
  if (n >= 1)
    fprintf(f, "  PC samples are estimates from rotating windows: a stall share from %.0f samples is within "
               "+-%.1f percentage points (one standard error, 50/sqrt(n)); counts are as sampled, not scaled\n",
            n, 50.0 / sqrt(n));
  else
    fprintf(f, "  PC samples are estimates from rotating windows: none sampled yet\n");
}

void gpd_render_procs(FILE *f, const gpd_tree_t *t) {
  fprintf(f, "\nProcesses (%zu):\n", t->nprocs);
  if (t->nhidden)
    fprintf(f, "  (%zu more that never used a GPU API not listed; --all lists them)\n", t->nhidden);
  if (t->nprocs)
    fprintf(f, "  %8s %-10s %5s %-8s %10s %8s  %-16s %s\n", "PID", "JOB", "RANK", "STATE", "RECORDS", "DROPS",
            "BACKENDS", "EXE");
  for (size_t i = 0; i < t->nprocs; i++) {
    const gpd_tproc_t *p = &t->procs[i];
    char rank[16], be[256];
    if (p->rank >= 0)
      snprintf(rank, sizeof(rank), "%d", p->rank);
    else
      snprintf(rank, sizeof(rank), "-");
    backends_col(be, sizeof(be), p);
    char job[300], exe[1024], err[1024];
    fprintf(f, "  %8d %-10s %5s %-8s %10llu %8llu  %-16s %s\n", p->pid, gpd_cli_job(job, sizeof job, p->job_id, p->job_claimed),
            rank, p->state && p->state[0] ? p->state : (p->running ? "running" : "exited"),
            (unsigned long long)p->records, (unsigned long long)p->drops, be,
            p->exe && p->exe[0] ? gpd_text_line(exe, sizeof exe, p->exe) : "?");
    if (p->error && p->error[0]) fprintf(f, "  %8s error: %s\n", "", gpd_text_line(err, sizeof err, p->error));
    if (p->pcs_state && p->pcs_state[0]) fprintf(f, "  %8s %s\n", "", gpd_text_line(err, sizeof err, p->pcs_state));
  }
  render_pcs_bound(f, t);
  size_t ndis = 0;
  for (size_t i = 0; i < t->nprocs; i++)
    for (uint32_t j = 0; j < t->procs[i].nbackends; j++) ndis += !t->procs[i].backends[j].enabled;
  if (ndis) {
    fprintf(f, "\nBack ends disabled (%zu):\n", ndis);
    for (size_t i = 0; i < t->nprocs; i++)
      for (uint32_t j = 0; j < t->procs[i].nbackends; j++) {
        const gpd_tbackend_t *b = &t->procs[i].backends[j];
        if (b->enabled) continue;
        fprintf(f, "  %-8s pid %d: %s (code %d)\n", b->api, t->procs[i].pid,
                b->reason && b->reason[0] ? b->reason : "no reason given", b->code);
      }
  }
  if (t->ngpubins) {
    fprintf(f, "\nGPU binaries (%zu):\n", t->ngpubins);
    for (size_t i = 0; i < t->ngpubins; i++) {
      const gpd_tgpubin_t *g = &t->gpubins[i];
      char sz[48];
      gpd_render_bytes(sz, sizeof(sz), (double)g->size);
      fprintf(f, "  %-32s %-6s %12s  %s\n", g->hash, g->kind, sz, g->path);
    }
  }
}

/* ---- ps ---- */

/* The collection line of a running process under `ps`: its CUDA mode,
 * the estimated overhead and how it was estimated, a deep dive, and
 * "busy: held by another tool (...)" while its windows are refused. */
static void gpd_render_ps_collect(FILE *f, const Gpuprof__Process *p) {
  if (!p->running || (!p->collect_mode[0] && !p->overhead_how[0]))
    return;
  fprintf(f, "%8s collect: %s; overhead ", "", p->collect_mode[0] ? p->collect_mode : "-");
  if (p->overhead >= 0)
    fprintf(f, "~%.2f %%", p->overhead * 100);
  else
    fprintf(f, "unknown");
  fprintf(f, " (%s)\n", p->overhead_how);
  if (p->deep_dive[0]) fprintf(f, "%8s %s\n", "", p->deep_dive);
  if (p->pcs_state[0]) fprintf(f, "%8s %s\n", "", p->pcs_state); /* "busy: held by another tool (...)" */
}

void gpd_render_ps(FILE *f, const Gpuprof__PsReply *r, int all) {
  size_t hidden = 0;
  fprintf(f, "%8s %-10s %-10s %5s %-8s %5s %10s %8s %-16s %s\n", "PID", "USER", "JOB", "RANK", "STATE", "RINGS",
          "RECORDS", "DROPS", "BACKENDS", "EXE");
  for (size_t i = 0; i < r->n_procs; i++) {
    const Gpuprof__Process *p = r->procs[i];
    char user[32], rank[16], be[256];
    /* never used a GPU API: no back end reported its state (the shim does
     * at the first call into an API), e.g. a linker PoCL spawns */
    if (!all && p->n_backends == 0 && !p->error[0]) {
      hidden++;
      continue;
    }
    size_t len = 0;
    struct passwd *pw = getpwuid(p->uid);
    if (pw)
      snprintf(user, sizeof(user), "%s", pw->pw_name);
    else
      snprintf(user, sizeof(user), "%u", p->uid);
    if (p->rank >= 0)
      snprintf(rank, sizeof(rank), "%d", p->rank);
    else
      snprintf(rank, sizeof(rank), "-");
    be[0] = 0;
    for (size_t j = 0; j < p->n_backends && len + 1 < sizeof(be); j++) {
      int w = snprintf(be + len, sizeof(be) - len, "%s%s%s", len ? "," : "", p->backends[j]->enabled ? "" : "-",
                       p->backends[j]->api);
      if (w < 0) break;
      len += (size_t)w;
    }
    if (!len) snprintf(be, sizeof(be), "-");
    char job[300], exe[1024], err[1024];
    fprintf(f, "%8d %-10s %-10s %5s %-8s %5u %10llu %8llu %-16s %s\n", p->pid, user,
            gpd_cli_job(job, sizeof job, p->job_id, p->job_claimed), rank, p->error[0] ? "error" : (p->running ? "running" : "exited"),
            p->rings, (unsigned long long)p->records, (unsigned long long)p->drops, be,
            p->exe[0] ? gpd_text_line(exe, sizeof exe, p->exe) : "?");
    if (p->error[0]) fprintf(f, "%8s error: %s\n", "", gpd_text_line(err, sizeof err, p->error));
    gpd_render_ps_collect(f, p);
    /* a disabled back end ("-cuda" above) says why on its own line */
    for (size_t j = 0; j < p->n_backends; j++)
      if (!p->backends[j]->enabled)
        fprintf(f, "%8s %s disabled: %s (code %d)\n", "", p->backends[j]->api,
                p->backends[j]->reason[0] ? p->backends[j]->reason : "no reason given", p->backends[j]->code);
  }
  if (!r->n_procs) fprintf(f, "(no processes visible)\n");
  if (hidden)
    fprintf(f, "(%zu process%s that never used a GPU API not shown; --all shows them)\n", hidden,
            hidden == 1 ? "" : "es");
}

/* ---- top ---- */

static double metrics_get(Gpuprof__Metric **m, size_t n, unsigned id) {
  double v = 0;
  for (size_t i = 0; i < n; i++)
    if (m[i]->id == id) v += m[i]->value;
  return v;
}

void gpd_render_top(FILE *f, const Gpuprof__TopReply *r, unsigned metric, double total, const double *ginst) {
  char head[64];
  snprintf(head, sizeof(head), "%s%s", metric_name(metric),
           gpd_metric_desc(metric) && gpd_metric_desc(metric)->unit == GPD_UNIT_NS ? " (s)" : "");
  fprintf(f, "%4s  %-48s %12s %6s %8s  ", "#", "KERNEL/OP", head, "%", "COUNT");
  if (ginst) fprintf(f, "%10s  ", "GINST");
  fprintf(f, "%s\n", "HEAVIEST CPU PATH");
  for (size_t i = 0; i < r->n_entries; i++) {
    const Gpuprof__TopEntry *e = r->entries[i];
    char val[48], pv[16], label[64], path[512];
    double v = metrics_get(e->metrics, e->n_metrics, metric);
    double cnt = 0;
    for (size_t k = 0; k < sizeof(count_ids) / sizeof(count_ids[0]); k++)
      cnt += metrics_get(e->metrics, e->n_metrics, count_ids[k]);
    gpd_render_value(val, sizeof(val), metric, v);
    gpd_render_pct(pv, sizeof(pv), v, total);
    if (strlen(e->label) > 48)
      snprintf(label, sizeof(label), "%.45s...", e->label);
    else
      snprintf(label, sizeof(label), "%s", e->label[0] ? e->label : "<gpu op>");
    /* innermost 3 CPU frames of the heaviest path, outermost of them first;
     * Python frames (docs/PYTHON.md) when the path has any: the user's
     * code, not the interpreter's and ctypes' frames below it */
    int want = GPUPROF__NODE_KIND__NODE_FRAME;
    for (size_t k = 0; k < e->n_path; k++)
      if (e->path[k]->kind == GPUPROF__NODE_KIND__NODE_PYTHON) want = GPUPROF__NODE_KIND__NODE_PYTHON;
    size_t frames[3], nf = 0, total_frames = 0;
    for (size_t k = e->n_path; k-- > 0;) {
      if ((int)e->path[k]->kind != want) continue;
      total_frames++;
      if (nf < 3) frames[nf++] = k;
    }
    size_t len = 0;
    path[0] = 0;
    if (total_frames > nf) len += (size_t)snprintf(path, sizeof(path), "... > ");
    for (size_t k = nf; k-- > 0 && len + 1 < sizeof(path);) {
      const Gpuprof__Node *nd = e->path[frames[k]];
      const char *fn = nd->n_frames && nd->frames[0]->function[0] ? nd->frames[0]->function : nd->label;
      char where[256];
      if ((!fn[0] || !strcmp(fn, "??")) && nd->module[0]) {
        /* no symbol: where, as report spells it (module+offset) */
        snprintf(where, sizeof(where), "%s+0x%llx", base_name(nd->module), (unsigned long long)nd->offset);
        fn = where;
      } else if (!fn[0]) {
        fn = "??";
      }
      int w = snprintf(path + len, sizeof(path) - len, "%s%s", fn, k ? " > " : "");
      if (w < 0) break;
      len += (size_t)w;
    }
    if (!nf) snprintf(path, sizeof(path), "-");
    char lab1[256], path1[4096];
    fprintf(f, "%4zu  %-48s %12s %6s %8.0f  ", i + 1, gpd_text_line(lab1, sizeof lab1, label), val, pv, cnt);
    if (ginst) fprintf(f, "%10.0f  ", ginst[i]);
    fprintf(f, "%s\n", gpd_text_line(path1, sizeof path1, path));
  }
  if (!r->n_entries) fprintf(f, "(no GPU operations yet)\n");
}
