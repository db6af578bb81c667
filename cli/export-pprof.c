/* export-pprof.c - `gpuprof export --format pprof` (docs/EXPORT.md): the
 * tree (export.h: a sample per context with exclusive values, its stack
 * the path from the root) as profile.proto (proto/profile.proto, the
 * public schema of github.com/google/pprof), packed with protobuf-c and
 * gzipped.  One sample type per metric with a value; a tree node is one
 * Location (CPU frames: the module as its Mapping, the link-time offset as
 * its address) with one Line per frame of its inline chain; equal
 * functions, locations and mappings are shared.  CLI thread only.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export.h"
#include "gpuprof/metric.h"
#include "profile.pb-c.h"

/* ---- sample types ---- */

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

int64_t gpd__export_pprof_value(unsigned id, double v) {
  double scale;
  pprof_unit(id, &scale);
  v *= scale;
  if (!(v > -9.2e18 && v < 9.2e18)) return 0; /* NaN or beyond int64 */
  return (int64_t)llround(v);
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

/* ---- pprof ---- */

typedef struct pprof_s {
  const gpd_tree_t *t;
  gpd_export_intern_t str, fkey, lkey, mkey; /* strings, functions, locations, mappings */
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
  gpd_export_key_t kb;
} pprof_t;

static int64_t pp_str(pprof_t *p, const char *s, int *err) {
  long i = gpd__export_intern_str(&p->str, s);
  if (i < 0) *err = (int)i;
  return i < 0 ? 0 : i;
}

static uint64_t pp_function(pprof_t *p, const gpd_export_frame_t *x, int *err) {
  if (gpd__export_key_frame(&p->kb, x, 0) < 0) {
    *err = -ENOMEM;
    return 0;
  }
  size_t had = p->fkey.n;
  long i = gpd__export_intern(&p->fkey, p->kb.p, p->kb.n);
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
  long i = gpd__export_intern_str(&p->mkey, module);
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
  uint32_t nf = gpd__export_nframes(nd);
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
  gpd_export_frame_t x;
  for (uint32_t k = 0; k < nf; k++) {
    gpd__export_frame(nd, nf - 1 - k, &x);
    kp[2 + 2 * k] = pp_function(p, &x, err);
    kp[3 + 2 * k] = x.line;
  }
  uint64_t id = 0;
  size_t had = p->lkey.n;
  long i = *err ? -1 : gpd__export_intern(&p->lkey, kp, (2 + 2 * (size_t)nf) * sizeof(*kp));
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
      val[p->col[id]] = gpd__export_pprof_value(id, leaf->excl.v[j].v);
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
  gpd__export_intern_free(&p->str);
  gpd__export_intern_free(&p->fkey);
  gpd__export_intern_free(&p->lkey);
  gpd__export_intern_free(&p->mkey);
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

int gpd__export_pprof(const gpd_tree_t *t, unsigned metric, char **files, int nfiles, uint8_t **out, size_t *outn) {
  pprof_t p;
  int present[GPD_M__COUNT], err = 0;
  Perftools__Profiles__Profile pr = PERFTOOLS__PROFILES__PROFILE__INIT;
  Perftools__Profiles__ValueType vt[GPD_M__COUNT], *vtp[GPD_M__COUNT];
  int64_t *comment = NULL;
  uint8_t *buf = NULL;

  memset(&p, 0, sizeof(p));
  p.t = t;
  pp_str(&p, "", &err); /* string_table[0] must be "" */
  gpd__export_metrics(t, present);
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
  if (err || (err = gpd__export_walk(t, pp_sample, &p)) < 0) goto done;

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
