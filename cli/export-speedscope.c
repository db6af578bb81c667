/* export-speedscope.c - `gpuprof export --format speedscope` and what
 * `gpuprof view` embeds (docs/EXPORT.md): speedscope's JSON file format
 * (file-format-schema.json), one "sampled" profile per metric over one
 * shared frame table; the samples are the contexts with exclusive values
 * (export.h).  CLI thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "export.h"
#include "gpuprof/metric.h"

typedef struct ss_s {
  FILE *f;
  gpd_export_intern_t frames; /* key: gpd__export_key_frame's with the line */
  gpd_export_key_t kb;
  unsigned metric;
  int first;
} ss_t;

/* Index of frame j of node nd in the shared frame table (added when new),
 * or -ENOMEM.  An inlined frame is named as `report` shows it. */
static long ss_frame(ss_t *s, const gpd_tnode_t *nd, uint32_t j) {
  gpd_export_frame_t x;
  gpd__export_frame(nd, j, &x);
  if (x.inlined) {
    char b[sizeof(x.buf)];
    snprintf(b, sizeof(b), "[inlined] %s", x.name);
    memcpy(x.buf, b, sizeof(b));
    x.name = x.buf;
  }
  if (gpd__export_key_frame(&s->kb, &x, 1) < 0) return -ENOMEM;
  return gpd__export_intern(&s->frames, s->kb.p, s->kb.n);
}

/* pass 1: fill the frame table; pass 2 (f set): print the stacks */
static int ss_stack(void *ctx, const gpd_tree_t *t, const size_t *path, size_t n) {
  ss_t *s = ctx;
  int sep = 0;
  if (s->f && gpd_tree_mvec_get(&t->nodes[path[n - 1]].excl, s->metric) == 0) return 0;
  if (s->f) fputs(s->first ? "[" : ",[", s->f);
  s->first = 0;
  for (size_t k = 0; k < n; k++) {
    const gpd_tnode_t *nd = &t->nodes[path[k]];
    for (uint32_t j = 0, nf = gpd__export_nframes(nd); j < nf; j++) {
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
  double v = gpd_tree_mvec_get(&t->nodes[path[n - 1]].excl, s->metric);
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
  if ((err = gpd__export_walk(t, ss_stack, &s)) < 0) goto done;
  s.f = f;
  gpd__export_metrics(t, present);
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
            gpd_tree_mvec_get(&t->nodes[t->root].incl, id));
    s.metric = id;
    s.first = 1;
    if ((err = gpd__export_walk(t, ss_stack, &s)) < 0) goto done;
    fputs("],\"weights\":[", f);
    s.first = 1;
    if ((err = gpd__export_walk(t, ss_weight, &s)) < 0) goto done;
    fputs("]}", f);
  }
  fprintf(f, "],\"activeProfileIndex\":%d}\n", active);
  if (ferror(f)) err = -EIO;
done:
  free(s.kb.p);
  gpd__export_intern_free(&s.frames);
  return err;
}
