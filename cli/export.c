/* export.c - `gpuprof export`: a saved profile's heterogeneous calling
 * context tree in the formats other tools read (docs/EXPORT.md):
 *
 *   pprof      profile.proto (proto/profile.proto, the public schema of
 *              github.com/google/pprof), packed with protobuf-c and
 *              gzipped; one sample type per metric
 *   folded     flamegraph.pl's folded stacks ("a;b;c VALUE" lines) of one
 *              metric
 *   speedscope speedscope's JSON file format, one profile per metric
 *              (what `gpuprof view` embeds)
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
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "cli.h"
#include "gpuprof/outfile.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"
#include "profile.pb-c.h"

/* ---- the frames a tree node stands for ---- */

/** One frame of an exported stack. */
typedef struct xframe_s {
  const char *name;    /* function / placeholder / kernel (demangled) */
  const char *file;    /* source file, "" when unknown */
  const char *sysname; /* a kernel's mangled name, else "" */
  uint32_t line;       /* line in file of the call (of the next frame), 0 unknown */
  int inlined;         /* inlined into the frame before it */
  char buf[512];
} xframe_t;

/* A CPU context with an inline chain stands for one frame per function of
 * the chain (docs/CLI.md: the physical function, then the [inlined] ones);
 * every other node for one frame. */
static uint32_t node_nframes(const gpd_tnode_t *nd) {
  return nd->kind == GPD_NODE_FRAME && nd->nframes ? nd->nframes : 1;
}

static int known(const char *s) {
  return s[0] && strcmp(s, "??");
}

/* Frame k (0 = outermost) of node nd. */
static void node_frame(const gpd_tnode_t *nd, uint32_t k, xframe_t *x) {
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

/* ---- metrics: which are exported and in what unit ---- */

/* Metrics with a non-zero exclusive value somewhere, in id order. */
static size_t metrics_present(const gpd_tree_t *t, int present[GPD_M__COUNT]) {
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

/* pprof unit of a metric and the factor its stored value is multiplied by
 * (pprof values are integers).  The kernel characteristics are stored as
 * sums over launches (metric.h); they are exported as those sums (divide
 * by GKER:COUNT for the per-launch mean `report` shows), the occupancy
 * fraction in per mille. */
static const char *pprof_unit(unsigned id, double *scale) {
  *scale = 1;
  switch (id) {
  case GPD_M_GKER_OCC_THR: *scale = 1000; return "permille";
  case GPD_M_GKER_STMEM:
  case GPD_M_GKER_DYMEM:
  case GPD_M_GKER_LMEM:
  case GPD_M_GKER_BLK_SM: return "bytes";
  case GPD_M_GKER_THR_REG:
  case GPD_M_GKER_BLK_THR:
  case GPD_M_GKER_BLK: return "count";
  }
  switch (gpd_metric_desc(id)->unit) {
  case GPD_UNIT_NS: return "nanoseconds";
  case GPD_UNIT_BYTES: return "bytes";
  default: return "count";
  }
}

static int64_t pprof_value(unsigned id, double v) {
  double scale;
  pprof_unit(id, &scale);
  v *= scale;
  if (!(v > -9.2e18 && v < 9.2e18)) return 0; /* NaN or beyond int64 */
  return (int64_t)llround(v);
}

/* ---- walking the tree ---- */

/* Called for each context with a non-zero exclusive value: path holds the
 * node indices from below the root down to that context (the root itself
 * when it is the context).  Returns 0 or a negative error (stops the walk). */
typedef int (*stack_fn)(void *ctx, const gpd_tree_t *t, const size_t *path, size_t n);

/* Pre-order in the tree's order (children by inclusive metric), with an
 * explicit stack: a profile may be 200 000 levels deep. */
static int export_walk(const gpd_tree_t *t, stack_fn fn, void *ctx) {
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

typedef struct intern_s {
  char **key; /* NUL-terminated copies (a key may hold NULs of its own) */
  size_t *len;
  size_t n, cap;
  size_t *slot; /* open addressing: index + 1 */
  size_t scap;  /* power of two */
} intern_t;

static uint64_t fnv1a(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
  return h;
}

static int intern_grow(intern_t *in) {
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

/* Index of key (added at the end when new), or -ENOMEM. */
static long intern(intern_t *in, const void *key, size_t len) {
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

static long intern_str(intern_t *in, const char *s) {
  return intern(in, s, strlen(s));
}

static void intern_free(intern_t *in) {
  for (size_t i = 0; i < in->n; i++) free(in->key[i]);
  free(in->key);
  free(in->len);
  free(in->slot);
  memset(in, 0, sizeof(*in));
}

/* Make room for n + 1 elements of size sz in *v (capacity *cap). */
static int grow(void *v, size_t *cap, size_t n, size_t sz) {
  if (n < *cap) return 0;
  size_t c = *cap ? *cap * 2 : 64;
  void *p = realloc(*(void **)v, c * sz);
  if (!p) return -ENOMEM;
  *(void **)v = p;
  *cap = c;
  return 0;
}

/* A growable byte buffer for composite keys. */
typedef struct kbuf_s {
  char *p;
  size_t n, cap;
} kbuf_t;

static int kbuf_put(kbuf_t *b, const void *p, size_t n) {
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

/* name NUL file NUL sysname (NUL line): the identity of a frame, read
 * back field by field (a C string holds no NUL). */
static int kbuf_frame(kbuf_t *b, const xframe_t *x, int with_line) {
  char ln[24];
  int w = snprintf(ln, sizeof(ln), "%u", x->line);
  b->n = 0;
  if (kbuf_put(b, x->name, strlen(x->name) + 1) < 0 || kbuf_put(b, x->file, strlen(x->file) + 1) < 0 ||
      kbuf_put(b, x->sysname, strlen(x->sysname) + (with_line ? 1 : 0)) < 0 ||
      (with_line && kbuf_put(b, ln, (size_t)w) < 0))
    return -ENOMEM;
  return 0;
}

/* ---- pprof ---- */

typedef struct pprof_s {
  const gpd_tree_t *t;
  intern_t str, fkey, lkey, mkey; /* strings, functions, locations, mappings */
  Perftools__Profiles__Function *fn;
  size_t fcap;
  Perftools__Profiles__Location *loc;
  size_t lcap, nloc; /* nloc: initialized (may trail lkey.n after ENOMEM) */
  Perftools__Profiles__Mapping *map;
  size_t mcap;
  Perftools__Profiles__Sample *smp;
  size_t nsmp, scap;
  uint64_t *loc_of; /* per tree node: its location id, 0 = not made yet */
  int col[GPD_M__COUNT];
  unsigned colid[GPD_M__COUNT];
  size_t ncol;
  kbuf_t kb;
} pprof_t;

static int64_t pp_str(pprof_t *p, const char *s, int *err) {
  long i = intern_str(&p->str, s);
  if (i < 0) *err = (int)i;
  return i < 0 ? 0 : i;
}

static uint64_t pp_function(pprof_t *p, const xframe_t *x, int *err) {
  if (kbuf_frame(&p->kb, x, 0) < 0) {
    *err = -ENOMEM;
    return 0;
  }
  size_t had = p->fkey.n;
  long i = intern(&p->fkey, p->kb.p, p->kb.n);
  if (i < 0) {
    *err = (int)i;
    return 0;
  }
  if (p->fkey.n > had) {
    if ((*err = grow(&p->fn, &p->fcap, (size_t)i, sizeof(*p->fn))) < 0) return 0;
    Perftools__Profiles__Function *f = &p->fn[i];
    perftools__profiles__function__init(f);
    f->id = (uint64_t)i + 1;
    f->name = pp_str(p, x->name, err);
    /* a system name only when there is one (a kernel's mangled name):
     * pprof demangles a function whose system name equals its name, and
     * its C++ heuristics cut "<gpu kernel>" or "<module>" to nothing */
    f->system_name = pp_str(p, x->sysname[0] && strcmp(x->sysname, x->name) ? x->sysname : "", err);
    f->filename = pp_str(p, x->file, err);
  }
  return (uint64_t)i + 1;
}

static uint64_t pp_mapping(pprof_t *p, const char *module, int *err) {
  size_t had = p->mkey.n;
  long i = intern_str(&p->mkey, module);
  if (i < 0) {
    *err = (int)i;
    return 0;
  }
  if (p->mkey.n > had) {
    if ((*err = grow(&p->map, &p->mcap, (size_t)i, sizeof(*p->map))) < 0) return 0;
    Perftools__Profiles__Mapping *m = &p->map[i];
    perftools__profiles__mapping__init(m);
    m->id = (uint64_t)i + 1;
    m->filename = pp_str(p, module, err);
    /* the daemon symbolized already: no tool should try again */
    m->has_functions = m->has_filenames = m->has_line_numbers = m->has_inline_frames = 1;
  }
  return (uint64_t)i + 1;
}

/* The location of tree node idx: its mapping and address (CPU frames:
 * module and link-time offset) and one Line per frame, innermost first
 * (profile.proto: "the last entry represents the caller into which the
 * preceding entries were inlined").  Equal locations are shared. */
static uint64_t pp_location(pprof_t *p, size_t idx, int *err) {
  if (p->loc_of[idx]) return p->loc_of[idx];
  const gpd_tnode_t *nd = &p->t->nodes[idx];
  uint32_t nf = node_nframes(nd);
  uint64_t key[2 + 2 * 64], *kp = key, *heap = NULL;
  if (2 + 2 * (size_t)nf > sizeof(key) / sizeof(key[0])) {
    if (!(heap = malloc((2 + 2 * (size_t)nf) * sizeof(*heap)))) {
      *err = -ENOMEM;
      return 0;
    }
    kp = heap;
  }
  kp[0] = nd->kind == GPD_NODE_FRAME && nd->module[0] ? pp_mapping(p, nd->module, err) : 0;
  kp[1] = nd->kind == GPD_NODE_FRAME ? nd->offset : 0;
  xframe_t x;
  for (uint32_t k = 0; k < nf; k++) {
    node_frame(nd, nf - 1 - k, &x);
    kp[2 + 2 * k] = pp_function(p, &x, err);
    kp[3 + 2 * k] = x.line;
  }
  uint64_t id = 0;
  size_t had = p->lkey.n;
  long i = *err ? -1 : intern(&p->lkey, kp, (2 + 2 * (size_t)nf) * sizeof(*kp));
  if (i < 0) {
    if (!*err) *err = (int)i;
    goto done;
  }
  id = (uint64_t)i + 1;
  if (p->lkey.n > had) {
    if ((*err = grow(&p->loc, &p->lcap, (size_t)i, sizeof(*p->loc))) < 0) goto done;
    Perftools__Profiles__Location *l = &p->loc[i];
    perftools__profiles__location__init(l);
    p->nloc = (size_t)i + 1;
    l->id = id;
    l->mapping_id = kp[0];
    l->address = kp[1];
    Perftools__Profiles__Line *lines = calloc(nf, sizeof(*lines));
    l->line = calloc(nf, sizeof(*l->line));
    if (!lines || !l->line) {
      free(lines);
      free(l->line);
      l->line = NULL;
      *err = -ENOMEM;
      goto done;
    }
    for (uint32_t k = 0; k < nf; k++) {
      perftools__profiles__line__init(&lines[k]);
      lines[k].function_id = kp[2 + 2 * k];
      lines[k].line = (int64_t)kp[3 + 2 * k];
      l->line[k] = &lines[k];
    }
    l->n_line = nf;
  }
  p->loc_of[idx] = id;
done:
  free(heap);
  return *err ? 0 : id;
}

static int pp_sample(void *ctx, const gpd_tree_t *t, const size_t *path, size_t n) {
  pprof_t *p = ctx;
  const gpd_tnode_t *leaf = &t->nodes[path[n - 1]];
  int err = 0, any = 0;
  int64_t *val = calloc(p->ncol ? p->ncol : 1, sizeof(*val));
  uint64_t *ids = malloc(n * sizeof(*ids));
  if (!val || !ids) {
    err = -ENOMEM;
    goto fail;
  }
  for (uint32_t j = 0; j < leaf->excl.n; j++) {
    unsigned id = leaf->excl.v[j].id;
    if (id < GPD_M__COUNT && p->col[id] >= 0) {
      val[p->col[id]] = pprof_value(id, leaf->excl.v[j].v);
      any |= val[p->col[id]] != 0;
    }
  }
  if (!any) goto fail; /* rounds to zero everywhere: no sample */
  for (size_t k = 0; k < n; k++) /* leaf first */
    if (!(ids[k] = pp_location(p, path[n - 1 - k], &err))) goto fail;
  if ((err = grow(&p->smp, &p->scap, p->nsmp, sizeof(*p->smp))) < 0) goto fail;
  Perftools__Profiles__Sample *s = &p->smp[p->nsmp++];
  perftools__profiles__sample__init(s);
  s->location_id = ids;
  s->n_location_id = n;
  s->value = val;
  s->n_value = p->ncol;
  return 0;
fail:
  free(val);
  free(ids);
  return err;
}

static void pprof_free(pprof_t *p) {
  for (size_t i = 0; i < p->nloc; i++)
    if (p->loc[i].line) {
      free(p->loc[i].line[0]); /* the Line array */
      free(p->loc[i].line);
    }
  for (size_t i = 0; i < p->nsmp; i++) {
    free(p->smp[i].location_id);
    free(p->smp[i].value);
  }
  free(p->fn);
  free(p->loc);
  free(p->map);
  free(p->smp);
  free(p->loc_of);
  free(p->kb.p);
  intern_free(&p->str);
  intern_free(&p->fkey);
  intern_free(&p->lkey);
  intern_free(&p->mkey);
}

/* Pointer array over an array of n messages of size sz. */
static void **ptrs(void *base, size_t n, size_t sz) {
  void **v = calloc(n ? n : 1, sizeof(*v));
  if (v)
    for (size_t i = 0; i < n; i++) v[i] = (char *)base + i * sz;
  return v;
}

/* gzip (RFC 1952) of buf into *out. */
static int gzip_buf(const uint8_t *buf, size_t n, uint8_t **out, size_t *outn) {
  z_stream z;
  memset(&z, 0, sizeof(z));
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -ENOMEM;
  size_t cap = deflateBound(&z, (uLong)n) + 64;
  uint8_t *o = malloc(cap);
  if (!o) {
    deflateEnd(&z);
    return -ENOMEM;
  }
  z.next_in = (Bytef *)buf;
  z.avail_in = (uInt)n;
  z.next_out = o;
  z.avail_out = (uInt)cap;
  int rc = deflate(&z, Z_FINISH);
  *outn = cap - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) {
    free(o);
    return -EIO;
  }
  *out = o;
  return 0;
}

/** The tree as a gzipped pprof Profile in *out (malloc'd, *outn bytes).
 *  files: the inputs, named in the profile's comments.  0 or -ENOMEM. */
static int pprof_build(const gpd_tree_t *t, unsigned metric, char **files, int nfiles, uint8_t **out, size_t *outn) {
  pprof_t p;
  int present[GPD_M__COUNT], err = 0;
  Perftools__Profiles__Profile pr = PERFTOOLS__PROFILES__PROFILE__INIT;
  Perftools__Profiles__ValueType vt[GPD_M__COUNT], *vtp[GPD_M__COUNT];
  int64_t *comment = NULL;
  uint8_t *buf = NULL;

  memset(&p, 0, sizeof(p));
  p.t = t;
  pp_str(&p, "", &err); /* string_table[0] must be "" */
  metrics_present(t, present);
  for (unsigned id = 0; id < GPD_M__COUNT; id++) {
    p.col[id] = -1;
    if (!present[id]) continue;
    double scale;
    perftools__profiles__value_type__init(&vt[p.ncol]);
    vt[p.ncol].type = pp_str(&p, gpd_metric_desc(id)->name, &err);
    vt[p.ncol].unit = pp_str(&p, pprof_unit(id, &scale), &err);
    vtp[p.ncol] = &vt[p.ncol];
    p.colid[p.ncol] = id;
    p.col[id] = (int)p.ncol++;
  }
  if (!(p.loc_of = calloc(t->n + 1, sizeof(*p.loc_of)))) err = -ENOMEM;
  if (err || (err = export_walk(t, pp_sample, &p)) < 0) goto done;

  pr.n_sample_type = p.ncol;
  pr.sample_type = vtp;
  if (p.ncol)
    pr.default_sample_type = vt[p.col[metric] >= 0 ? p.col[metric] : 0].type;
  /* comments: what was exported, then one line per process */
  size_t nc = (size_t)nfiles + t->nprocs;
  if (!(comment = calloc(nc + 1, sizeof(*comment)))) {
    err = -ENOMEM;
    goto done;
  }
  char line[4400];
  for (int i = 0; i < nfiles; i++) {
    snprintf(line, sizeof(line), "gpuprof %s export of %s", GPD_VERSION, files[i]);
    comment[pr.n_comment++] = pp_str(&p, line, &err);
  }
  uint64_t t0 = UINT64_MAX, t1 = 0;
  for (size_t i = 0; i < t->nprocs; i++) {
    const gpd_tproc_t *q = &t->procs[i];
    snprintf(line, sizeof(line), "process %d %s on %s (%s)", q->pid, q->exe, q->hostname, q->source);
    comment[pr.n_comment++] = pp_str(&p, line, &err);
    if (q->start_ns && q->end_ns >= q->start_ns) {
      if (q->start_ns < t0) t0 = q->start_ns;
      if (q->end_ns > t1) t1 = q->end_ns;
    }
  }
  pr.comment = comment;
  if (t1 > t0 && t1 - t0 < (uint64_t)INT64_MAX) pr.duration_nanos = (int64_t)(t1 - t0);
  if (err) goto done;
  pr.n_string_table = p.str.n;
  pr.string_table = p.str.key;
  pr.n_function = p.fkey.n;
  pr.n_location = p.lkey.n;
  pr.n_mapping = p.mkey.n;
  pr.n_sample = p.nsmp;
  pr.function = (Perftools__Profiles__Function **)ptrs(p.fn, p.fkey.n, sizeof(*p.fn));
  pr.location = (Perftools__Profiles__Location **)ptrs(p.loc, p.lkey.n, sizeof(*p.loc));
  pr.mapping = (Perftools__Profiles__Mapping **)ptrs(p.map, p.mkey.n, sizeof(*p.map));
  pr.sample = (Perftools__Profiles__Sample **)ptrs(p.smp, p.nsmp, sizeof(*p.smp));
  if (!pr.function || !pr.location || !pr.mapping || !pr.sample) {
    err = -ENOMEM;
    goto done;
  }
  size_t len = perftools__profiles__profile__get_packed_size(&pr);
  if (!(buf = malloc(len ? len : 1))) {
    err = -ENOMEM;
    goto done;
  }
  perftools__profiles__profile__pack(&pr, buf);
  err = gzip_buf(buf, len, out, outn);
done:
  free(buf);
  free(comment);
  free(pr.function);
  free(pr.location);
  free(pr.mapping);
  free(pr.sample);
  pprof_free(&p);
  return err;
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
  int64_t v = pprof_value(fo->metric, gpd_mvec_get(&leaf->excl, fo->metric));
  if (v == 0) return 0;
  xframe_t x;
  for (size_t k = 0; k < n; k++) {
    const gpd_tnode_t *nd = &t->nodes[path[k]];
    for (uint32_t j = 0, nf = node_nframes(nd); j < nf; j++) {
      node_frame(nd, j, &x);
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

/* ---- speedscope ---- */

typedef struct ss_s {
  FILE *f;
  intern_t frames; /* key: kbuf_frame's with the line */
  kbuf_t kb;
  unsigned metric;
  int first;
} ss_t;

/* Index of frame j of node nd in the shared frame table (added when new),
 * or -ENOMEM.  An inlined frame is named as `report` shows it. */
static long ss_frame(ss_t *s, const gpd_tnode_t *nd, uint32_t j) {
  xframe_t x;
  node_frame(nd, j, &x);
  if (x.inlined) {
    char b[sizeof(x.buf)];
    snprintf(b, sizeof(b), "[inlined] %s", x.name);
    memcpy(x.buf, b, sizeof(b));
    x.name = x.buf;
  }
  if (kbuf_frame(&s->kb, &x, 1) < 0) return -ENOMEM;
  return intern(&s->frames, s->kb.p, s->kb.n);
}

/* pass 1: fill the frame table; pass 2 (f set): print the stacks */
static int ss_stack(void *ctx, const gpd_tree_t *t, const size_t *path, size_t n) {
  ss_t *s = ctx;
  int sep = 0;
  if (s->f && gpd_mvec_get(&t->nodes[path[n - 1]].excl, s->metric) == 0) return 0;
  if (s->f) fputs(s->first ? "[" : ",[", s->f);
  s->first = 0;
  for (size_t k = 0; k < n; k++) {
    const gpd_tnode_t *nd = &t->nodes[path[k]];
    for (uint32_t j = 0, nf = node_nframes(nd); j < nf; j++) {
      long i = ss_frame(s, nd, j);
      if (i < 0) return (int)i;
      if (s->f) fprintf(s->f, sep++ ? ",%ld" : "%ld", i);
    }
  }
  if (s->f) fputc(']', s->f);
  return s->f && ferror(s->f) ? -EIO : 0;
}

static int ss_weight(void *ctx, const gpd_tree_t *t, const size_t *path, size_t n) {
  ss_t *s = ctx;
  double v = gpd_mvec_get(&t->nodes[path[n - 1]].excl, s->metric);
  if (v == 0) return 0;
  fprintf(s->f, s->first ? "%.17g" : ",%.17g", v);
  s->first = 0;
  return 0;
}

static const char *ss_unit(unsigned id) {
  switch (gpd_metric_desc(id)->unit) {
  case GPD_UNIT_NS: return "nanoseconds";
  case GPD_UNIT_BYTES: return "bytes";
  default: return "none";
  }
}

int gpd_export_speedscope(FILE *f, const gpd_tree_t *t, unsigned metric, const char *name) {
  ss_t s;
  int present[GPD_M__COUNT], err = 0;
  memset(&s, 0, sizeof(s));
  /* the shared frame table first: every frame of every exported stack */
  if ((err = export_walk(t, ss_stack, &s)) < 0) goto done;
  s.f = f;
  metrics_present(t, present);
  int active = 0, np = 0;
  fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":", f);
  gpd_json_str(f, "gpuprof " GPD_VERSION);
  fputs(",\"name\":", f);
  gpd_json_str(f, name);
  fputs(",\"shared\":{\"frames\":[", f);
  for (size_t i = 0; i < s.frames.n; i++) {
    const char *fn = s.frames.key[i], *file = fn + strlen(fn) + 1, *sys = file + strlen(file) + 1;
    long line = atol(sys + strlen(sys) + 1);
    fputs(i ? ",{\"name\":" : "{\"name\":", f);
    gpd_json_str(f, fn);
    if (file[0]) {
      fputs(",\"file\":", f);
      gpd_json_str(f, file);
      if (line > 0) fprintf(f, ",\"line\":%ld", line);
    }
    fputc('}', f);
  }
  fputs("]},\"profiles\":[", f);
  for (unsigned id = 0; id < GPD_M__COUNT; id++) {
    if (!present[id]) continue;
    const gpd_metric_desc_t *d = gpd_metric_desc(id);
    char pname[256];
    snprintf(pname, sizeof(pname), "%s%s", d->name, d->unit == GPD_UNIT_MEAN ? " (sum over launches)" : "");
    if (id == metric) active = np;
    fputs(np++ ? ",{\"type\":\"sampled\",\"name\":" : "{\"type\":\"sampled\",\"name\":", f);
    gpd_json_str(f, pname);
    fprintf(f, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%.17g,\"samples\":[", ss_unit(id),
            gpd_mvec_get(&t->nodes[t->root].incl, id));
    s.metric = id;
    s.first = 1;
    if ((err = export_walk(t, ss_stack, &s)) < 0) goto done;
    fputs("],\"weights\":[", f);
    s.first = 1;
    if ((err = export_walk(t, ss_weight, &s)) < 0) goto done;
    fputs("]}", f);
  }
  fprintf(f, "],\"activeProfileIndex\":%d}\n", active);
  if (ferror(f)) err = -EIO;
done:
  free(s.kb.p);
  intern_free(&s.frames);
  return err;
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
    "usage: gpuprof export --format pprof|folded|speedscope [-o OUT] [--metric NAME] [--pid N] FILE...\n"
    "  Write saved profiles (merged by context, as `report` shows them) for other tools.\n"
    "  --format pprof       pprof's profile.proto, gzipped: one sample type per metric\n"
    "  --format folded      flamegraph.pl folded stacks of one metric (--metric, default GPUOP)\n"
    "  --format speedscope  speedscope JSON: one profile per metric\n"
    "  -o OUT               output file (default: standard output; pprof is never written to a terminal)\n"
    "  --metric NAME        folded: the metric; pprof/speedscope: the one shown first (default GPUOP)\n"
    "  --pid N              only the profiles of process N\n";

enum { FMT_NONE, FMT_PPROF, FMT_FOLDED, FMT_SPEEDSCOPE };

int gpd_export_main(int argc, char **argv) {
  static const struct option opts[] = {{"format", required_argument, NULL, 'F'}, {"output", required_argument, NULL, 'o'},
                                       {"metric", required_argument, NULL, 'm'}, {"pid", required_argument, NULL, 'p'},
                                       {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
  int fmt = FMT_NONE, pid = 0, c, rc = GPD_EXIT_FAIL, r = 0;
  unsigned metric = GPD_M_GPUOP;
  const char *out = NULL;
  long v;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+F:o:m:p:h", opts, NULL)) != -1) {
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
  /* build first: nothing is written (no empty output file) on failure */
  if (fmt == FMT_PPROF && (r = pprof_build(&t, metric, argv + optind, argc - optind, &gz, &gzn)) < 0) {
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
    r = export_walk(&t, folded_stack, &fo);
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
