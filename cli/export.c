/* export.c - `gpuprof export`: a saved profile's heterogeneous calling
 * context tree in the formats other tools read (docs/EXPORT.md).  This
 * file holds the command, the folded writer and what the writers share
 * (export.h); the other writers have files of their own:
 *
 *   pprof      profile.proto (proto/profile.proto, the public schema of
 *              github.com/google/pprof), packed with protobuf-c and
 *              gzipped; one sample type per metric (export-pprof.c)
 *   folded     flamegraph.pl's folded stacks ("a;b;c VALUE" lines) of one
 *              metric
 *   speedscope speedscope's JSON file format, one profile per metric
 *              (what `gpuprof view` embeds; export-speedscope.c)
 *
 * Every export has the shape `gpuprof report` prints: the CPU calling path
 * (an inline chain as one frame per function, outermost first), then the
 * `<gpu kernel>`/`<gpu copy>`/... placeholder, then the kernel, as in the
 * heterogeneous CCT of "Measurement and Analysis of GPU-Accelerated
 * Applications with HPCToolkit" (Zhou et al., Parallel Computing 2021,
 * section 4: GPU operations are placeholders below the CPU calling
 * context, the kernel below its placeholder).  A context with a non-zero
 * exclusive value is one sample whose stack is its path from the root
 * (the root frame left out), weighted by its exclusive values: summing the
 * samples of a subtree gives the inclusive values `report` shows.
 * Runs on the CLI's single thread.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "export.h"
#include "gpuprof/outfile.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"

/* ---- the frames a tree node stands for ---- */

uint32_t gpd__export_nframes(const gpd_tnode_t *nd) {
  return nd->kind == GPD_NODE_FRAME && nd->nframes ? nd->nframes : 1;
}

static int known(const char *s) {
  return s[0] && strcmp(s, "??");
}

void gpd__export_frame(const gpd_tnode_t *nd, uint32_t k, gpd_export_frame_t *x) {
  x->file = x->sysname = "";
  x->line = 0;
  x->inlined = k > 0;
  if (nd->kind == GPD_NODE_PYTHON) {
    /* "qualname (filename:line)" (docs/PYTHON.md): function, file and line */
    snprintf(x->buf, sizeof(x->buf), "%s", nd->label);
    char *open = strstr(x->buf, " ("), *colon = strrchr(x->buf, ':');
    size_t n = strlen(x->buf);
    if (open && colon && colon > open && n && x->buf[n - 1] == ')') {
      x->buf[n - 1] = 0;
      *open = *colon = 0;
      x->file = open + 2;
      x->line = (uint32_t)strtoul(colon + 1, NULL, 10);
    }
    x->name = x->buf;
    return;
  }
  if (nd->kind != GPD_NODE_FRAME) {
    gpd_render_node_name(x->buf, sizeof(x->buf), nd);
    x->name = x->buf;
    if (nd->kind == GPD_NODE_KERNEL) x->sysname = nd->raw_name;
    return;
  }
  const char *fn = nd->nframes ? nd->frames[k].function : "";
  if (nd->nframes && known(nd->frames[k].file)) {
    x->file = nd->frames[k].file;
    x->line = nd->frames[k].line;
  }
  if (known(fn)) {
    x->name = fn;
  } else if (k == 0 && known(nd->label)) {
    x->name = nd->label;
  } else if (k == 0 && nd->module[0]) {
    /* no symbol (a stripped binary): where, as `report` says it */
    const char *b = strrchr(nd->module, '/');
    snprintf(x->buf, sizeof(x->buf), "%s+0x%llx", b ? b + 1 : nd->module, (unsigned long long)nd->offset);
    x->name = x->buf;
  } else {
    x->name = "??";
  }
}

/* ---- metrics: which are exported ---- */

size_t gpd__export_metrics(const gpd_tree_t *t, int present[GPD_M__COUNT]) {
  size_t n = 0;
  memset(present, 0, GPD_M__COUNT * sizeof(int));
  for (size_t i = 0; i < t->n; i++)
    for (uint32_t j = 0; j < t->nodes[i].excl.n; j++) {
      const gpd_mval_t *v = &t->nodes[i].excl.v[j];
      if (v->id < GPD_M__COUNT && v->v != 0 && !present[v->id]) {
        present[v->id] = 1;
        n++;
      }
    }
  return n;
}

/* ---- walking the tree ---- */

int gpd__export_walk(const gpd_tree_t *t, gpd_export_stack_fn fn, void *ctx) {
  size_t *path = malloc((t->n + 1) * sizeof(*path));
  size_t *stk = malloc((t->n + 1) * sizeof(*stk));
  size_t *dep = malloc((t->n + 1) * sizeof(*dep));
  size_t ns = 0;
  int err = 0;
  if (!path || !stk || !dep) {
    err = -ENOMEM;
    goto done;
  }
  stk[ns] = t->root;
  dep[ns++] = 0;
  while (ns && !err) {
    ns--;
    size_t i = stk[ns], d = dep[ns];
    const gpd_tnode_t *nd = &t->nodes[i];
    if (d) path[d - 1] = i;
    int any = 0;
    for (uint32_t j = 0; j < nd->excl.n && !any; j++) any = nd->excl.v[j].v != 0;
    if (any) err = d ? fn(ctx, t, path, d) : fn(ctx, t, &t->root, 1);
    for (uint32_t k = nd->nkids; k-- > 0;) {
      stk[ns] = nd->kids[k];
      dep[ns++] = d + 1;
    }
  }
done:
  free(path);
  free(stk);
  free(dep);
  return err;
}

/* ---- an interning table: byte strings -> dense indices ---- */

static uint64_t fnv1a(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
  return h;
}

static int intern_grow(gpd_export_intern_t *in) {
  size_t cap = in->scap ? in->scap * 2 : 256;
  size_t *s = calloc(cap, sizeof(*s));
  if (!s) return -ENOMEM;
  for (size_t i = 0; i < in->n; i++) {
    size_t j = fnv1a(in->key[i], in->len[i]) & (cap - 1);
    while (s[j]) j = (j + 1) & (cap - 1);
    s[j] = i + 1;
  }
  free(in->slot);
  in->slot = s;
  in->scap = cap;
  return 0;
}

long gpd__export_intern(gpd_export_intern_t *in, const void *key, size_t len) {
  if ((in->n + 1) * 2 > in->scap && intern_grow(in) < 0) return -ENOMEM;
  size_t j = fnv1a(key, len) & (in->scap - 1);
  for (; in->slot[j]; j = (j + 1) & (in->scap - 1)) {
    size_t i = in->slot[j] - 1;
    if (in->len[i] == len && !memcmp(in->key[i], key, len)) return (long)i;
  }
  if (in->n == in->cap) {
    size_t cap = in->cap ? in->cap * 2 : 64;
    char **k = realloc(in->key, cap * sizeof(*k));
    if (!k) return -ENOMEM;
    in->key = k;
    size_t *l = realloc(in->len, cap * sizeof(*l));
    if (!l) return -ENOMEM;
    in->len = l;
    in->cap = cap;
  }
  char *c = malloc(len + 1);
  if (!c) return -ENOMEM;
  memcpy(c, key, len);
  c[len] = 0;
  in->key[in->n] = c;
  in->len[in->n] = len;
  in->slot[j] = in->n + 1;
  return (long)in->n++;
}

long gpd__export_intern_str(gpd_export_intern_t *in, const char *s) {
  return gpd__export_intern(in, s, strlen(s));
}

void gpd__export_intern_free(gpd_export_intern_t *in) {
  for (size_t i = 0; i < in->n; i++) free(in->key[i]);
  free(in->key);
  free(in->len);
  free(in->slot);
  memset(in, 0, sizeof(*in));
}

/* ---- composite keys ---- */

static int kbuf_put(gpd_export_key_t *b, const void *p, size_t n) {
  if (b->n + n > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->n + n) c *= 2;
    char *q = realloc(b->p, c);
    if (!q) return -ENOMEM;
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
  return 0;
}

int gpd__export_key_frame(gpd_export_key_t *b, const gpd_export_frame_t *x, int with_line) {
  char ln[24];
  int w = snprintf(ln, sizeof(ln), "%u", x->line);
  b->n = 0;
  if (kbuf_put(b, x->name, strlen(x->name) + 1) < 0 || kbuf_put(b, x->file, strlen(x->file) + 1) < 0 ||
      kbuf_put(b, x->sysname, strlen(x->sysname) + (with_line ? 1 : 0)) < 0 ||
      (with_line && kbuf_put(b, ln, (size_t)w) < 0))
    return -ENOMEM;
  return 0;
}

/* ---- folded stacks ---- */

typedef struct folded_s {
  FILE *f;
  unsigned metric;
} folded_t;

/* A frame name as flamegraph.pl can split it: ';' separates frames and a
 * line ends the stack, so both are replaced. */
static void folded_name(FILE *f, const char *s) {
  for (; *s; s++) fputc(*s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s, f);
}

static int folded_stack(void *ctx, const gpd_tree_t *t, const size_t *path, size_t n) {
  folded_t *fo = ctx;
  const gpd_tnode_t *leaf = &t->nodes[path[n - 1]];
  int64_t v = gpd__export_pprof_value(fo->metric, gpd_mvec_get(&leaf->excl, fo->metric));
  if (v == 0) return 0;
  gpd_export_frame_t x;
  for (size_t k = 0; k < n; k++) {
    const gpd_tnode_t *nd = &t->nodes[path[k]];
    for (uint32_t j = 0, nf = gpd__export_nframes(nd); j < nf; j++) {
      gpd__export_frame(nd, j, &x);
      if (k || j) fputc(';', fo->f);
      folded_name(fo->f, x.name);
      /* flamegraph.pl's annotation of an inlined function (its
       * documentation: "_[i] for inlined", after Linux perf's "_[k]") */
      if (x.inlined) fputs("_[i]", fo->f);
    }
  }
  fprintf(fo->f, " %lld\n", (long long)v);
  return ferror(fo->f) ? -EIO : 0;
}

/* ---- the command ---- */

int gpd_export_load(gpd_tree_t *t, char **files, int nfiles, int pid, unsigned metric) {
  char err[1024];
  int r;
  for (int i = 0; i < nfiles; i++)
    if (gpd_load_file(t, files[i], pid, 0, err, sizeof(err)) < 0) {
      fprintf(stderr, "gpuprof: %s\n", err);
      return GPD_EXIT_FAIL;
    }
  if ((r = gpd_tree_finish(t, metric)) < 0) {
    fprintf(stderr, "gpuprof: %s\n", gpd_strerror(r));
    return GPD_EXIT_FAIL;
  }
  return 0;
}

static const char export_usage[] =
    "usage: gpuprof export --format pprof|folded|speedscope [-o OUT] [--metric NAME] [--pid N] [--python] [--native] FILE...\n"
    "  Write saved profiles (merged by context, as `report` shows them) for other tools.\n"
    "  --format pprof       pprof's profile.proto, gzipped: one sample type per metric\n"
    "  --format folded      flamegraph.pl folded stacks of one metric (--metric, default GPUOP)\n"
    "  --format speedscope  speedscope JSON: one profile per metric\n"
    "  -o OUT               output file (default: standard output; pprof is never written to a terminal)\n"
    "  --metric NAME        folded: the metric; pprof/speedscope: the one shown first (default GPUOP)\n"
    "  --pid N              only the profiles of process N\n"
    "  --python             Python view: Python frames, operators, placeholders and the GPU part only\n"
    "  --native             every native frame (default: PyTorch's dispatcher folded into aten::NAME)\n";

enum { FMT_NONE, FMT_PPROF, FMT_FOLDED, FMT_SPEEDSCOPE };

int gpd_export_main(int argc, char **argv) {
  static const struct option opts[] = {{"format", required_argument, NULL, 'F'}, {"output", required_argument, NULL, 'o'},
                                       {"metric", required_argument, NULL, 'm'}, {"pid", required_argument, NULL, 'p'},
                                       {"help", no_argument, NULL, 'h'},         {"python", no_argument, NULL, 'P'},
                                       {"native", no_argument, NULL, 'N'},        {NULL, 0, NULL, 0}};
  int fmt = FMT_NONE, pid = 0, c, rc = GPD_EXIT_FAIL, r = 0;
  unsigned view = 0;
  unsigned metric = GPD_M_GPUOP;
  const char *out = NULL;
  long v;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+F:o:m:p:hPN", opts, NULL)) != -1) {
    switch (c) {
    case 'F':
      if (!strcmp(optarg, "pprof"))
        fmt = FMT_PPROF;
      else if (!strcmp(optarg, "folded"))
        fmt = FMT_FOLDED;
      else if (!strcmp(optarg, "speedscope"))
        fmt = FMT_SPEEDSCOPE;
      else
        return gpd_cli_usage(export_usage, "unknown format '%s'", optarg);
      break;
    case 'o': out = optarg; break;
    case 'm':
      if ((v = gpd_cli_metric(optarg)) < 0) return gpd_cli_usage(export_usage, "unknown metric '%s'", optarg);
      metric = (unsigned)v;
      break;
    case 'p':
      if ((v = gpd_cli_parse_uint(optarg)) <= 0) return gpd_cli_usage(export_usage, "bad --pid '%s'", optarg);
      pid = (int)v;
      break;
    case 'P': view |= GPD_VIEW_PYTHON; break;
    case 'N': view |= GPD_VIEW_NATIVE; break;
    case 'h': fputs(export_usage, stdout); return GPD_EXIT_OK;
    default: return gpd_cli_usage(export_usage, "unknown or incomplete option '%s'", argv[optind - 1]);
    }
  }
  if (fmt == FMT_NONE) return gpd_cli_usage(export_usage, "--format is required");
  if (optind >= argc) return gpd_cli_usage(export_usage, "no profile file given");
  if (out && !strcmp(out, "-")) out = NULL;
  if (fmt == FMT_PPROF && !out && isatty(STDOUT_FILENO))
    return gpd_cli_usage(export_usage, "pprof output is binary: give -o FILE or redirect standard output");

  gpd_tree_t t;
  uint8_t *gz = NULL;
  size_t gzn = 0;
  FILE *f = NULL;
  gpd_outfile_t of = {.fd = -1};
  char oerr[600];
  gpd_tree_init(&t);
  if (gpd_export_load(&t, argv + optind, argc - optind, pid, metric)) goto done;
  if ((r = gpd_tree_view(&t, view, metric)) < 0) {
    fprintf(stderr, "gpuprof: %s\n", gpd_strerror(r));
    goto done;
  }
  /* build first: nothing is written (no empty output file) on failure */
  if (fmt == FMT_PPROF && (r = gpd__export_pprof(&t, metric, argv + optind, argc - optind, &gz, &gzn)) < 0) {
    fprintf(stderr, "gpuprof: cannot build the pprof profile: %s\n", gpd_strerror(r));
    goto done;
  }
  if (!out) {
    /* pprof is binary: past the terminal filter (text.c) */
    f = fmt == FMT_PPROF && gpd_text_raw_stdout ? gpd_text_raw_stdout : stdout;
  } else if (gpd_outfile_open(&of, out, oerr, sizeof oerr) < 0) {
    fprintf(stderr, "gpuprof: %s\n", oerr);
    goto done;
  } else {
    f = of.f;
  }
  if (fmt == FMT_PPROF) {
    if (fwrite(gz, 1, gzn, f) != gzn) r = -EIO;
  } else if (fmt == FMT_FOLDED) {
    folded_t fo = {f, metric};
    r = gpd__export_walk(&t, folded_stack, &fo);
  } else {
    r = gpd_export_speedscope(f, &t, metric, argv[optind]);
  }
  if ((fflush(f) != 0 || ferror(f)) && r == 0) r = errno ? -errno : -EIO;
  if (r < 0) {
    fprintf(stderr, "gpuprof: cannot write %s: %s\n", out ? out : "standard output", gpd_strerror(r));
    goto done;
  }
  if (out && gpd_outfile_commit(&of, oerr, sizeof oerr) < 0) {
    fprintf(stderr, "gpuprof: %s\n", oerr);
    goto done;
  }
  rc = GPD_EXIT_OK;
done:
  if (out) gpd_outfile_abort(&of);
  free(gz);
  gpd_tree_free(&t);
  return rc;
}
