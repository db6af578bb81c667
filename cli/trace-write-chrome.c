/* trace-write-chrome.c - a trace (trace.h) as Chrome trace-event JSON
 * (the compact format), with the tracks of trace-write.c:
 * {"traceEvents": [...], "stackFrames": {...}} with ph X / i / M events,
 * timestamps in us from the trace's first event.  A GPU operation is one
 * X event named by its short kernel name whose "sf" is its launch's call
 * path with the full kernel name as the innermost frame; its args hold
 * only what is not unique to the event (bytes of a copy or memset: no
 * correlation id, see cw_write).  "sf" ids index
 * the stackFrames table (one entry per calling-context node used, with its
 * parent), written after the events.
 *
 * With launches (gpd_xtrace_write_chrome_launches), each launch of a
 * device operation is also an X event of duration 0 on its CPU thread
 * ("launch <gpu kernel>", "sf" its call site) and a flow goes from it to
 * its GPU slice(s) by the trace-event format's flow binding ("bind_id" =
 * the launch's index + 1, as Perfetto's flow ids; "flow_out" on the
 * launch, "flow_in" on the GPU slice), the binding Perfetto's JSON
 * importer reads on X events; speedscope ignores the keys.  Launches are
 * slices, not instants, because Perfetto's importer binds flows to slices
 * only.  Host-timed operations (a sync) are slices on the launching
 * thread already and get no launch event.  Off by default: launches and
 * flows cost about 175 B per operation (bench-tracewrite) and 1 M slices
 * on one thread is more than speedscope's importer handles
 * (docs/PERFORMANCE.md, issue 24).  CLI thread only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/record.h"
#include "trace-layout.h"
#include "trace-write.h"

/* Chrome's pseudo thread id of a GPU stream lane (above any real tid). */
static uint64_t chrome_stream_tid(uint32_t dev, uint32_t s, unsigned lane) {
  return 1000000000ull + (uint64_t)dev * 10000000ull + (uint64_t)(s % 100000) * 100 + lane;
}
static uint64_t chrome_idle_tid(void) { return 999999999ull; }

typedef struct {
  FILE *f;
  gpd_xwrite_t ctx;
  gpd_xwrite_bits_t used; /* stack frames referred to (node index + 1) */
  uint64_t t0;
  int err;
} cw_t;

/* "sf" id of node index + 1 leaf (a call site, or a kernel under its
 * call site): leaf and its CPU ancestors marked for the stackFrames table;
 * 0 when leaf is 0 */
static size_t cw_sf(cw_t *w, size_t leaf) {
  const gpd_tnode_t *nodes = w->ctx.x->tree.nodes;
  for (size_t j = leaf - 1; leaf && j != SIZE_MAX && nodes[j].kind != GPD_NODE_ROOT; j = nodes[j].parent) {
    if (nodes[j].kind == GPD_NODE_PLACEHOLDER || (nodes[j].kind == GPD_NODE_KERNEL && j != leaf - 1))
      continue;
    int r = gpd__xwrite_bits_testset(&w->used, j + 1);
    if (r < 0)
      w->err = r;
    if (r)
      break;
  }
  return leaf;
}

/* ts (ns on the gpuprof clock) as us from t0 with 3 decimals */
static void cw_us(cw_t *w, const char *key, uint64_t ns) {
  fprintf(w->f, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000, (unsigned)(ns % 1000));
}

static void cw_head(cw_t *w, const char *ph, const char *cat, uint64_t name, int pid, uint64_t tid,
                    uint64_t ts) {
  fprintf(w->f, ",\n{\"ph\":\"%s\",\"cat\":\"%s\",\"name\":", ph, cat);
  gpd_json_str(w->f, gpd__xwrite_str(&w->ctx, name));
  fprintf(w->f, ",\"pid\":%d,\"tid\":%" PRIu64, pid, tid);
  cw_us(w, "ts", ts - w->t0);
}

static void cw_stack_frames(cw_t *w) {
  const gpd_tnode_t *nodes = w->ctx.x->tree.nodes;
  int first = 1;
  fputs("],\n\"stackFrames\":{", w->f);
  for (size_t k = 0; k < w->used.nw; k++)
    for (uint64_t m = w->used.w[k]; m; m &= m - 1) {
      size_t id = k * 64 + (size_t)__builtin_ctzll(m), j = id - 1;
      size_t parent = nodes[j].parent == SIZE_MAX ? 0 : gpd__xwrite_cpu(&w->ctx, nodes[nodes[j].parent].id);
      fprintf(w->f, "%s\n\"%zu\":{\"name\":", first ? "" : ",", id);
      gpd_json_str(w->f, gpd__xwrite_str(&w->ctx, gpd__xwrite_fn(&w->ctx, j)));
      if (parent)
        fprintf(w->f, ",\"parent\":\"%zu\"", parent);
      fputs("}", w->f);
      first = 0;
    }
  fputs("}}\n", w->f);
}

static int cw_write(FILE *f, const gpd_xtrace_t *x, int launches) {
  gpd_xlayout_t l;
  cw_t w = {.f = f, .t0 = gpd_xtrace_t0(x)};
  int err = gpd__xlayout_init(&l, x);
  if (err == 0)
    err = gpd__xwrite_init(&w.ctx, x);
  if (err < 0)
    goto out;
  char name[1024];
  fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"gpuprof trace\"},\"traceEvents\":[\n"
        "{\"ph\":\"M\",\"name\":\"trace_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"gpuprof trace\"}}",
        f);
  for (size_t i = 0; i < x->tree.nprocs; i++) {
    const gpd_tproc_t *pr = &x->tree.procs[i];
    snprintf(name, sizeof name, "%s (profile %" PRIu64 ")", gpd__xwrite_base(pr->exe), pr->profile_id);
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":", pr->pid);
    gpd_json_str(f, name);
    fputs("}}", f);
    if (gpd__xlayout_has_gap(&l, pr->profile_id))
      fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%" PRIu64
                 ",\"args\":{\"name\":\"GPU idle (blame)\"}}", pr->pid, chrome_idle_tid());
  }
  for (size_t i = 0; i < l.nth; i++) {
    int pid = gpd__xtrace_pid(x, l.th[i].profile);
    unsigned tid = (unsigned)l.th[i].key;
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"CPU thread %u\"}}",
            pid, tid, tid);
  }
  for (size_t i = 0; i < l.nst; i++) {
    uint32_t dev = (uint32_t)(l.st[i].key >> 32), s = (uint32_t)l.st[i].key;
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%" PRIu64
               ",\"args\":{\"name\":\"GPU %u stream %u%s\"}}",
            gpd__xtrace_pid(x, l.st[i].profile), chrome_stream_tid(dev, s, l.st[i].lane), dev, s,
            l.st[i].lane ? " (overlap)" : "");
  }
  gpd_xitem_t it;
  int r = 0;
  while (w.err == 0 && w.ctx.err == 0 && (r = gpd__xlayout_next(&l, &it)) > 0) {
    switch (it.kind) {
    case GPD_XIT_EV_B: {
      const gpd_xev_t *e = &x->ev[it.i];
      long la = gpd__xlayout_launch(&l, it.i);
      int host = gpd__xtrace_host_op(e->op);
      uint64_t tid = host && la >= 0 ? x->la[la].tid
                                     : chrome_stream_tid(e->device, e->stream, l.lane[it.i]);
      long k = e->node ? gpd_tree_find(&x->tree, e->node) : -1;
      size_t leaf;
      if (k >= 0 && x->tree.nodes[k].kind == GPD_NODE_KERNEL) {
        leaf = (size_t)k + 1; /* the full name, under the launch's call site */
        cw_head(&w, "X", "gpu", gpd__xwrite_short_name(&w.ctx, (size_t)k), gpd__xtrace_pid(x, e->profile),
                tid, it.ts);
      } else {
        leaf = gpd__xwrite_cpu(&w.ctx, la >= 0 && x->la[la].node ? x->la[la].node : e->node);
        cw_head(&w, "X", host ? "host" : "gpu", gpd__xwrite_ev_name(&w.ctx, e),
                gpd__xtrace_pid(x, e->profile), tid, it.ts);
      }
      cw_us(&w, "dur", e->end > e->start ? e->end - e->start : 0);
      if (cw_sf(&w, leaf))
        fprintf(f, ",\"sf\":%zu", leaf);
      if (launches && la >= 0 && !host)
        fprintf(f, ",\"bind_id\":%ld,\"flow_in\":true", la + 1);
      /* no per-event unique args (a correlation id): speedscope keys a
       * frame by name + args, and one frame per event makes its call-tree
       * builder quadratic (a node's children searched linearly) */
      if (e->bytes)
        fprintf(f, ",\"args\":{\"bytes\":%" PRIu64 "}", e->bytes);
      fputs("}", f);
      break;
    }
    case GPD_XIT_LAUNCH: {
      const gpd_xlaunch_t *la = &x->la[it.i];
      if (!launches || gpd__xtrace_host_op(la->op))
        break;
      snprintf(name, sizeof name, "launch %s", gpd_op_placeholder(la->op));
      size_t site = gpd__xwrite_cpu(&w.ctx, la->node);
      cw_head(&w, "X", "launch", gpd__xwrite_intern(&w.ctx, name), gpd__xtrace_pid(x, la->profile), la->tid,
              it.ts);
      fputs(",\"dur\":0", f);
      if (cw_sf(&w, site))
        fprintf(f, ",\"sf\":%zu", site);
      fprintf(f, ",\"bind_id\":%zu,\"flow_out\":true}", it.i + 1);
      break;
    }
    case GPD_XIT_SAMPLE: {
      const gpd_xsample_t *s = &x->cs[it.i];
      size_t site = gpd__xwrite_cpu(&w.ctx, s->node);
      cw_head(&w, "i", "cpu", gpd__xwrite_intern(&w.ctx, "cpu sample"), gpd__xtrace_pid(x, s->profile),
              s->tid, it.ts);
      fputs(",\"s\":\"t\"", f);
      if (cw_sf(&w, site))
        fprintf(f, ",\"sf\":%zu", site);
      fputs("}", f);
      break;
    }
    case GPD_XIT_GAP_B: {
      const gpd_xgap_t *g = &l.gaps[it.i];
      size_t site = gpd__xwrite_cpu(&w.ctx, g->node);
      cw_head(&w, "X", "idle", gpd__xwrite_intern(&w.ctx, "GPU idle"), gpd__xtrace_pid(x, g->profile),
              chrome_idle_tid(), it.ts);
      cw_us(&w, "dur", g->end - g->start);
      if (cw_sf(&w, site))
        fprintf(f, ",\"sf\":%zu", site);
      fprintf(f, ",\"args\":{\"CPU was\":\"%s\"}}", gpd_xcpu_name(g->cpu));
      break;
    }
    default:
      break;
    }
  }
  err = w.err ? w.err : w.ctx.err ? w.ctx.err : r < 0 ? r : 0;
  if (err == 0)
    cw_stack_frames(&w);
  if (err == 0 && ferror(f))
    err = -EIO;
out:
  free(w.used.w);
  gpd__xwrite_free(&w.ctx);
  gpd__xlayout_free(&l);
  return err;
}

int gpd_xtrace_write_chrome(FILE *f, const gpd_xtrace_t *x) { return cw_write(f, x, 0); }
int gpd_xtrace_write_chrome_launches(FILE *f, const gpd_xtrace_t *x) { return cw_write(f, x, 1); }
