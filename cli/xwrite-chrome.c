/* xwrite-chrome.c - a trace (trace.h) as Chrome trace-event JSON
 * (the compact format), with the tracks of xwrite.c:
 * {"traceEvents": [...], "stackFrames": {...}} with ph X / i / M events,
 * timestamps in us from the trace's first event, exact to the ns with no
 * trailing zeros.  A GPU operation is one X event named by its short
 * kernel name whose "sf" is its launch's call path with the full kernel
 * name as the innermost frame; its args hold only what is not unique to
 * the event (bytes of a copy or memset: no correlation id, see cw_write).
 * "sf" ids index the stackFrames table (one entry per calling-context node
 * used, with its parent), written after the events.  GPU slices and
 * launches, nearly all of a trace's bytes, carry no category (their track
 * says what they are); GPU stream lanes and the idle track are pseudo
 * threads of their process with small ids (1, 2, ...: not a CPU thread's
 * tid nor a pid of the trace), named by thread_name and placed after the
 * CPU threads by thread_sort_index.
 *
 * With launches (gpd_xwrite_chrome_launches), each launch of a
 * device operation is also an X event of duration 0 named "launch" on its
 * CPU thread, and a flow goes from it to its GPU slice(s) by the
 * trace-event format's flow binding on the two slices ("bind_id" = the
 * launch's index + 1, as Perfetto's flow ids; "flow_out" on the launch,
 * "flow_in" on the GPU slice), the binding Perfetto's JSON importer reads
 * on X events (it binds a flow to the slice on top of the track when the
 * event is read: the event itself); speedscope ignores the keys.  The
 * launch has no "sf": its call path is the GPU slice's, one flow away.
 * Launches are slices, not instants, because Perfetto's importer binds
 * flows to slices only.  Host-timed operations (a sync) are slices on
 * the launching thread already and get no launch event.  Off by default:
 * launches and flows cost about 138 B per operation (bench-tracewrite)
 * and 1 M slices on one thread is more than speedscope's importer handles
 * (docs/PERFORMANCE.md, issue 24).  CLI thread only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/record.h"
#include "xlayout.h"
#include "xwrite.h"

typedef struct {
  FILE *f;
  gpd_xwrite_t ctx;
  gpd_xwrite_bits_t used; /* stack frames referred to (node index + 1) */
  uint64_t t0;
  uint32_t *stid;   /* per stream lane (l.st), then per process (its idle
                       track): the pseudo thread id */
  uint64_t launch;  /* name id of "launch" */
  int launches;     /* launch slices and flows */
  int err;
} cw_t;

/* 1 when tid is a CPU thread of the trace (any process) */
static int cw_cpu_tid(const gpd_xlayout_t *l, uint64_t tid) {
  for (size_t i = 0; i < l->nth; i++)
    if (l->th[i].key == tid)
      return 1;
  return 0;
}

/* Pseudo thread ids of the stream lanes (in layout order), then of each
 * process's idle track: 1, 2, ... skipping the tids of the trace's CPU
 * threads and its pids, so that each is its own track, no two processes
 * share one (Perfetto's importer takes a tid seen under another pid for
 * a new thread) and the ids stay short (a few bytes of every GPU
 * slice).  0 or -ENOMEM. */
static int cw_tids(cw_t *w, const gpd_xlayout_t *l) {
  const gpd_xtrace_t *x = l->x;
  uint32_t next = 1;
  if ((w->stid = calloc(l->nst + x->tree.nprocs + 1, sizeof *w->stid)) == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < l->nst + x->tree.nprocs; i++) {
    for (;;) {
      int used = cw_cpu_tid(l, next);
      for (size_t p = 0; p < x->tree.nprocs && !used; p++)
        used = (uint32_t)x->tree.procs[p].pid == next;
      if (!used)
        break;
      next++;
    }
    w->stid[i] = next++;
  }
  return 0;
}

/* pseudo thread id of the idle track of profile */
static uint32_t cw_idle_tid(const cw_t *w, const gpd_xlayout_t *l, uint64_t profile) {
  for (size_t p = 0; p < l->x->tree.nprocs; p++)
    if (l->x->tree.procs[p].profile_id == profile)
      return w->stid[l->nst + p];
  return w->stid[l->nst + l->x->tree.nprocs]; /* 0: no such process */
}

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

/* ",key:" and ns as us: exact, without trailing zeros ("12", "12.5",
 * "12.345") */
static void cw_us(cw_t *w, const char *key, uint64_t ns) {
  unsigned frac = (unsigned)(ns % 1000), digits = 3;
  if (frac == 0) {
    fprintf(w->f, ",\"%s\":%" PRIu64, key, ns / 1000);
    return;
  }
  for (; frac % 10 == 0; frac /= 10)
    digits--;
  fprintf(w->f, ",\"%s\":%" PRIu64 ".%0*u", key, ns / 1000, (int)digits, frac);
}

/* an event's opening up to its ts; cat NULL: none (GPU slices and
 * launches, the bulk of a trace: their track says what they are) */
static void cw_head(cw_t *w, const char *ph, const char *cat, uint64_t name, int pid, uint64_t tid,
                    uint64_t ts) {
  fprintf(w->f, ",\n{\"ph\":\"%s\",", ph);
  if (cat)
    fprintf(w->f, "\"cat\":\"%s\",", cat);
  fputs("\"name\":", w->f);
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

/* a track's name and place (CPU threads first, then the streams, then
 * the idle track: thread_sort_index, read by chrome://tracing) */
static void cw_track(FILE *f, int pid, uint64_t tid, const char *name, size_t sort) {
  fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%" PRIu64 ",\"args\":{\"name\":", pid,
          tid);
  gpd_json_str(f, name);
  fprintf(f, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%" PRIu64
             ",\"args\":{\"sort_index\":%zu}}",
          pid, tid, sort);
}

/* draws one item (gpd__xlayout_walk) */
static int cw_draw(void *arg, gpd_xlayout_t *l, const gpd_xitem_t *it) {
  cw_t *w = arg;
  const gpd_xtrace_t *x = &l->pg, *tx = l->x;
  FILE *f = w->f;
  switch (it->kind) {
  case GPD_XIT_EV_B: {
    const gpd_xev_t *e = &x->ev[it->i];
    int host = gpd__xlayout_host_op(e->op);
    uint64_t tid = it->thread ? l->th[it->trk].key : w->stid[it->trk];
    long k = e->node ? gpd_tree_find(&tx->tree, e->node) : -1;
    size_t leaf;
    if (k >= 0 && tx->tree.nodes[k].kind == GPD_NODE_KERNEL) {
      leaf = (size_t)k + 1; /* the full name, under the launch's call site */
      cw_head(w, "X", NULL, gpd__xwrite_short_name(&w->ctx, (size_t)k), gpd__xlayout_pid(tx, e->profile),
              tid, it->ts);
    } else {
      leaf = gpd__xwrite_cpu(&w->ctx, it->lnode ? it->lnode : e->node);
      cw_head(w, "X", host ? "host" : NULL, gpd__xwrite_ev_name(&w->ctx, e),
              gpd__xlayout_pid(tx, e->profile), tid, it->ts);
    }
    cw_us(w, "dur", e->end > e->start ? e->end - e->start : 0);
    if (cw_sf(w, leaf))
      fprintf(f, ",\"sf\":%zu", leaf);
    if (w->launches && it->la >= 0 && !host)
      fprintf(f, ",\"bind_id\":%ld,\"flow_in\":true", it->la + 1);
    /* no per-event unique args (a correlation id): speedscope keys a
     * frame by name + args, and one frame per event makes its call-tree
     * builder quadratic (a node's children searched linearly) */
    if (e->bytes)
      fprintf(f, ",\"args\":{\"bytes\":%" PRIu64 "}", e->bytes);
    fputs("}", f);
    break;
  }
  case GPD_XIT_LAUNCH: {
    /* the call path is the GPU slice's "sf", one flow away */
    const gpd_xlaunch_t *la = &x->la[it->i];
    if (!w->launches || gpd__xlayout_host_op(la->op))
      break;
    cw_head(w, "X", NULL, w->launch, gpd__xlayout_pid(tx, la->profile), la->tid, it->ts);
    fprintf(f, ",\"dur\":0,\"bind_id\":%ld,\"flow_out\":true}", it->la + 1);
    break;
  }
  case GPD_XIT_SAMPLE: {
    const gpd_xsample_t *s = &x->cs[it->i];
    size_t site = gpd__xwrite_cpu(&w->ctx, s->node);
    cw_head(w, "i", "cpu", gpd__xwrite_intern(&w->ctx, "cpu sample"), gpd__xlayout_pid(tx, s->profile),
            s->tid, it->ts);
    fputs(",\"s\":\"t\"", f);
    if (cw_sf(w, site))
      fprintf(f, ",\"sf\":%zu", site);
    fputs("}", f);
    break;
  }
  case GPD_XIT_GAP_B: {
    const gpd_xgap_t *g = gpd__xlayout_gap(l, it);
    size_t site = gpd__xwrite_cpu(&w->ctx, g->node);
    cw_head(w, "X", "idle", gpd__xwrite_intern(&w->ctx, "GPU idle"), gpd__xlayout_pid(tx, g->profile),
            cw_idle_tid(w, l, g->profile), it->ts);
    cw_us(w, "dur", g->end - g->start);
    if (cw_sf(w, site))
      fprintf(f, ",\"sf\":%zu", site);
    fprintf(f, ",\"args\":{\"CPU was\":\"%s\"}}", gpd_idle_cpu_name(g->cpu));
    break;
  }
  default:
    break;
  }
  return w->err ? w->err : w->ctx.err;
}

int gpd__xwrite_chrome_pages(FILE *f, gpd_xlayout_t *l, gpd_xpages_t *src, int launches) {
  const gpd_xtrace_t *x = l->x;
  cw_t w = {.f = f, .t0 = l->t0, .launches = launches};
  int err = gpd__xwrite_init(&w.ctx, x);
  if (err == 0)
    err = cw_tids(&w, l);
  if (err < 0)
    goto out;
  w.launch = gpd__xwrite_intern(&w.ctx, "launch");
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
    if (gpd__xlayout_has_gap(l, pr->profile_id))
      cw_track(f, pr->pid, w.stid[l->nst + i], "GPU idle (blame)", l->nth + l->nst);
  }
  for (size_t i = 0; i < l->nth; i++) {
    unsigned tid = (unsigned)l->th[i].key;
    snprintf(name, sizeof name, "CPU thread %u", tid);
    cw_track(f, gpd__xlayout_pid(x, l->th[i].profile), tid, name, i);
  }
  for (size_t i = 0; i < l->nst; i++) {
    uint32_t dev = (uint32_t)(l->st[i].key >> 32), s = (uint32_t)l->st[i].key;
    snprintf(name, sizeof name, "GPU %u stream %u%s", dev, s, l->st[i].lane ? " (overlap)" : "");
    cw_track(f, gpd__xlayout_pid(x, l->st[i].profile), w.stid[i], name, l->nth + i);
  }
  err = gpd__xlayout_walk(l, src, cw_draw, &w, &w.f);
  if (err == 0)
    err = w.err ? w.err : w.ctx.err;
  if (err == 0)
    cw_stack_frames(&w);
  if (err == 0 && ferror(f))
    err = -EIO;
out:
  free(w.used.w);
  free(w.stid);
  gpd__xwrite_free(&w.ctx);
  return err;
}

static int cw_whole(FILE *f, const gpd_xtrace_t *x, int launches) {
  gpd_xlayout_t l;
  gpd_xpages_one_t one;
  int err = gpd__xlayout_whole(&l, &one, x);
  if (err == 0)
    err = gpd__xwrite_chrome_pages(f, &l, &one.src, launches);
  gpd__xlayout_free(&l);
  return err;
}

int gpd_xwrite_chrome(FILE *f, const gpd_xtrace_t *x) { return cw_whole(f, x, 0); }
int gpd_xwrite_chrome_launches(FILE *f, const gpd_xtrace_t *x) { return cw_whole(f, x, 1); }
