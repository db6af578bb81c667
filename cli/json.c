/* json.c - the one JSON writer of the CLI (report --json and tree --json).
 *
 * Document shape (docs/CLI.md):
 *   {"format":"gpuprof-tree","version":1,
 *    "processes":[{pid,uid,gid,exe,job_id,step_id,rank,local_rank,state,
 *                  records,drops,error,backends:[{api,enabled,code,reason}]}],
 *    "hidden_processes":N (never used a GPU API; listed with --all),
 *    "backends_disabled":[{pid,api,code,reason}],
 *    "gpubins":[{hash,kind,size,path}],
 *    "tree":{id,kind,label,module,offset,raw_name,frames:[...],
 *            metrics:{NAME:{unit,excl,incl}},children:[...]}}
 * Ids are hex strings (64-bit values do not fit a JSON double).  Metric
 * values are in their stored unit (ns, bytes, count; "mean" metrics are
 * already divided by GKER:COUNT).
 */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "cli.h"
#include "gpuprof/metric.h"

void gpd_json_str(FILE *f, const char *s) {
  static const char hex[] = "0123456789abcdef";
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    unsigned char c = *p;
    switch (c) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\r': fputs("\\r", f); break;
    case '\t': fputs("\\t", f); break;
    case '\b': fputs("\\b", f); break;
    case '\f': fputs("\\f", f); break;
    default:
      if (c < 0x20 || c == 0x7f) {
        fprintf(f, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
      } else if (c < 0x80) {
        fputc(c, f);
      } else {
        /* Well-formed UTF-8 passes, but C1 controls (\u0080-\u009f);
         * a byte outside a well-formed sequence is written as the text
         * \xNN, as the terminal output shows it (text.c): the document
         * stays valid and says which byte it was. */
        int len = gpd_text_utf8(p, strnlen((const char *)p, 4));
        if (len == 2 && c == 0xc2 && p[1] < 0xa0) {
          fprintf(f, "\\u00%c%c", hex[p[1] >> 4], hex[p[1] & 15]);
          p++;
        } else if (len > 0) {
          fwrite(p, 1, (size_t)len, f);
          p += len - 1;
        } else {
          fprintf(f, "\\\\x%c%c", hex[c >> 4], hex[c & 15]);
        }
      }
    }
  }
  fputc('"', f);
}

static void json_num(FILE *f, double v) {
  if (!isfinite(v))
    fputs("null", f);
  else if (v == floor(v) && fabs(v) < 9.007199254740992e15)
    fprintf(f, "%.0f", v);
  else
    fprintf(f, "%.17g", v);
}

static const char *unit_name(gpd_unit_t u) {
  switch (u) {
  case GPD_UNIT_NS: return "ns";
  case GPD_UNIT_BYTES: return "bytes";
  case GPD_UNIT_COUNT: return "count";
  case GPD_UNIT_MEAN: return "mean";
  }
  return "?";
}

static const char *kind_name(int k) {
  switch (k) {
  case GPD_NODE_ROOT: return "root";
  case GPD_NODE_FRAME: return "frame";
  case GPD_NODE_PLACEHOLDER: return "placeholder";
  case GPD_NODE_KERNEL: return "kernel";
  case GPD_NODE_UNKNOWN: return "unknown";
  case GPD_NODE_PYTHON: return "python";
  case GPD_NODE_OPERATOR: return "operator";
  case GPD_NODE_GPU_FUNC: return "gpu_function";
  case GPD_NODE_GPU_LOOP: return "gpu_loop";
  case GPD_NODE_GPU_LINE: return "gpu_line";
  case GPD_NODE_GPU_INSN: return "gpu_instruction";
  case GPD_NODE_GPU_STALL: return "gpu_stall";
  }
  return "?";
}

static int all_zero(const gpd_mvec_t *m) {
  for (uint32_t i = 0; i < m->n; i++)
    if (m->v[i].v != 0) return 0;
  return 1;
}

/* A node up to and including its `"children":[`. */
static void json_head(FILE *f, const gpd_tree_t *t, size_t i) {
  const gpd_tnode_t *nd = &t->nodes[i];
  fprintf(f, "{\"id\":\"%016llx\",\"parent\":\"%016llx\",\"kind\":\"%s\",\"label\":", (unsigned long long)nd->id,
          (unsigned long long)nd->parent_id, kind_name(nd->kind));
  gpd_json_str(f, nd->label);
  fputs(",\"module\":", f);
  gpd_json_str(f, nd->module);
  fprintf(f, ",\"offset\":%llu,\"raw_name\":", (unsigned long long)nd->offset);
  gpd_json_str(f, nd->raw_name);
  fputs(",\"frames\":[", f);
  for (uint32_t k = 0; k < nd->nframes; k++) {
    fputs(k ? ",{\"function\":" : "{\"function\":", f);
    gpd_json_str(f, nd->frames[k].function);
    fputs(",\"file\":", f);
    gpd_json_str(f, nd->frames[k].file);
    fprintf(f, ",\"line\":%u,\"inlined\":%s}", nd->frames[k].line, nd->frames[k].inlined ? "true" : "false");
  }
  fputs("],\"metrics\":{", f);
  /* every metric present in incl (a superset of excl's ids) */
  int first = 1;
  for (uint32_t k = 0; k < nd->incl.n; k++) {
    unsigned id = nd->incl.v[k].id;
    const gpd_metric_desc_t *d = gpd_metric_desc(id);
    char name[32];
    if (d)
      snprintf(name, sizeof(name), "%s", d->name);
    else
      snprintf(name, sizeof(name), "metric%u", id);
    if (!first) fputc(',', f);
    first = 0;
    gpd_json_str(f, name);
    fprintf(f, ":{\"id\":%u,\"unit\":\"%s\",\"excl\":", id, d ? unit_name(d->unit) : "?");
    json_num(f, gpd_tree_mvec_shown(&nd->excl, id));
    fputs(",\"incl\":", f);
    json_num(f, gpd_tree_mvec_shown(&nd->incl, id));
    fputc('}', f);
  }
  fputs("},\"children\":[", f);
}

/* The tree from node `root`, depth first with an explicit stack (a profile
 * may be 200 000 levels deep); children in sorted order, all-zero
 * subtrees left out, cut below o->depth. */
static void json_node(FILE *f, const gpd_tree_t *t, size_t root, const gpd_render_opts_t *o) {
  typedef struct { size_t i; unsigned depth; uint32_t k; int any; } json_frame_t;
  json_frame_t *st = malloc((t->n + 1) * sizeof(*st));
  size_t ns = 0;
  if (!st) abort();
  json_head(f, t, root);
  st[ns++] = (json_frame_t){root, 0, 0, 0};
  while (ns) {
    json_frame_t *top = &st[ns - 1];
    const gpd_tnode_t *nd = &t->nodes[top->i];
    if (!o->depth || top->depth < o->depth) {
      while (top->k < nd->nkids && all_zero(&t->nodes[nd->kids[top->k]].incl)) top->k++;
      if (top->k < nd->nkids) {
        size_t c = nd->kids[top->k++];
        if (top->any) fputc(',', f);
        top->any = 1;
        json_head(f, t, c);
        st[ns] = (json_frame_t){c, top->depth + 1, 0, 0};
        ns++;
        continue;
      }
    }
    fputs("]}", f);
    ns--;
  }
  free(st);
}

void gpd_json_tree(FILE *f, const gpd_tree_t *t, const gpd_render_opts_t *o) {
  gpd_json_tree_open(f, t, o);
  fputs("}\n", f);
}

void gpd_json_tree_open(FILE *f, const gpd_tree_t *t, const gpd_render_opts_t *o) {
  const gpd_metric_desc_t *md = gpd_metric_desc(o->metric);
  fputs("{\"format\":\"gpuprof-tree\",\"version\":1,\"sort_metric\":", f);
  gpd_json_str(f, md ? md->name : "GPUOP");
  fputs(",\"processes\":[", f);
  for (size_t i = 0; i < t->nprocs; i++) {
    const gpd_tproc_t *p = &t->procs[i];
    if (i) fputc(',', f);
    fprintf(f, "{\"profile_id\":%llu,\"pid\":%d,\"uid\":%u,\"gid\":%u,\"exe\":", (unsigned long long)p->profile_id,
            p->pid, p->uid, p->gid);
    gpd_json_str(f, p->exe);
    fputs(",\"hostname\":", f);
    gpd_json_str(f, p->hostname);
    fputs(",\"job_id\":", f);
    gpd_json_str(f, p->job_id);
    if (p->job_claimed) fputs(",\"job_claimed\":true", f);
    fputs(",\"step_id\":", f);
    gpd_json_str(f, p->step_id);
    fprintf(f, ",\"rank\":%d,\"local_rank\":%d,\"state\":", p->rank, p->local_rank);
    gpd_json_str(f, p->state && p->state[0] ? p->state : (p->running ? "running" : "exited"));
    fprintf(f, ",\"rings\":%u,\"records\":%llu,\"drops\":%llu,\"start_ns\":%llu,\"end_ns\":%llu,\"error\":", p->rings,
            (unsigned long long)p->records, (unsigned long long)p->drops, (unsigned long long)p->start_ns,
            (unsigned long long)p->end_ns);
    gpd_json_str(f, p->error);
    if (p->source) {
      fputs(",\"source\":", f);
      gpd_json_str(f, p->source);
    }
    if (p->pcs_state && p->pcs_state[0]) {
      fputs(",\"pcs_state\":", f);
      gpd_json_str(f, p->pcs_state);
    }
    fputs(",\"backends\":[", f);
    for (uint32_t j = 0; j < p->nbackends; j++) {
      const gpd_tbackend_t *b = &p->backends[j];
      if (j) fputc(',', f);
      fputs("{\"api\":", f);
      gpd_json_str(f, b->api);
      fprintf(f, ",\"enabled\":%s,\"code\":%d,\"reason\":", b->enabled ? "true" : "false", b->code);
      gpd_json_str(f, b->reason);
      fputc('}', f);
    }
    fputs("]}", f);
  }
  fprintf(f, "],\"hidden_processes\":%zu", t->nhidden);
  fputs(",\"backends_disabled\":[", f);
  int first = 1;
  for (size_t i = 0; i < t->nprocs; i++)
    for (uint32_t j = 0; j < t->procs[i].nbackends; j++) {
      const gpd_tbackend_t *b = &t->procs[i].backends[j];
      if (b->enabled) continue;
      if (!first) fputc(',', f);
      first = 0;
      fprintf(f, "{\"pid\":%d,\"api\":", t->procs[i].pid);
      gpd_json_str(f, b->api);
      fprintf(f, ",\"code\":%d,\"reason\":", b->code);
      gpd_json_str(f, b->reason);
      fputc('}', f);
    }
  fputs("],\"gpubins\":[", f);
  for (size_t i = 0; i < t->ngpubins; i++) {
    const gpd_tgpubin_t *g = &t->gpubins[i];
    if (i) fputc(',', f);
    fputs("{\"hash\":", f);
    gpd_json_str(f, g->hash);
    fputs(",\"kind\":", f);
    gpd_json_str(f, g->kind);
    fprintf(f, ",\"size\":%llu,\"path\":", (unsigned long long)g->size);
    gpd_json_str(f, g->path);
    fputc('}', f);
  }
  fputs("],\"tree\":", f);
  if (t->root == SIZE_MAX)
    fputs("null", f);
  else
    json_node(f, t, t->root, o);
}
