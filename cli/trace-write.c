/* trace-write.c - a trace (trace.h) as Perfetto protobuf or Chrome JSON.
 *
 * Tracks (both formats): per process, one per CPU thread that made GPU API
 * calls (its launches as instants, its host-measured GPU operations such
 * as synchronizations as slices, its CPU samples as instants), one per GPU
 * stream (device, stream; operations that overlap on one stream go to
 * extra "lanes" so that slices nest), and one "GPU idle" track with the
 * idle intervals and the context each is blamed on (idle.c).  A flow goes
 * from each launch to the GPU operation(s) of the same correlation id;
 * the launch's call path is an argument ("call path") of both ends.
 *
 * Perfetto: a Trace is `repeated TracePacket packet = 1`, so the file is
 * written packet by packet (field 1, length, packed TracePacket) with the
 * protobuf-c code of proto/perfetto_trace.proto; timestamps are the
 * gpuprof clock's ns.  Chrome: {"traceEvents": [...]} with ph X / i / s /
 * f / M events, timestamps in us from the trace's first event.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/record.h"
#include "perfetto_trace.pb-c.h"

#include "trace.h"

/* ------------------------------------------------------------ helpers */

static uint64_t mix(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  uint64_t v[4] = {a, b, c, d};
  for (int i = 0; i < 4; i++) {
    h ^= v[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
  }
  return h ? h : 1;
}

static int host_op(unsigned op) {
  return op == GPD_OP_SYNC || op == GPD_OP_ALLOC || op == GPD_OP_FREE;
}

static const gpd_tproc_t *proc_of(const gpd_xtrace_t *x, uint64_t profile) {
  for (size_t i = 0; i < x->tree.nprocs; i++)
    if (x->tree.procs[i].profile_id == profile)
      return &x->tree.procs[i];
  return NULL;
}

static int pid_of(const gpd_xtrace_t *x, uint64_t profile) {
  const gpd_tproc_t *p = proc_of(x, profile);
  return p ? p->pid : (int)profile;
}

static const char *base(const char *s) {
  const char *b = s ? strrchr(s, '/') : NULL;
  return b ? b + 1 : s ? s : "";
}

/* launch index by (profile, corr): open addressing, value index + 1 */
typedef struct {
  size_t *slot;
  size_t cap;
} corrix_t;

static int corrix_build(corrix_t *ix, const gpd_xtrace_t *x) {
  ix->cap = 64;
  while (ix->cap < x->nla * 2)
    ix->cap <<= 1;
  ix->slot = calloc(ix->cap, sizeof *ix->slot);
  if (ix->slot == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < x->nla; i++) {
    size_t h = mix(x->la[i].profile, x->la[i].corr, 0, 0) & (ix->cap - 1);
    while (ix->slot[h])
      h = (h + 1) & (ix->cap - 1);
    ix->slot[h] = i + 1;
  }
  return 0;
}

static long corrix_get(const corrix_t *ix, const gpd_xtrace_t *x, uint64_t profile, uint64_t corr) {
  size_t h = mix(profile, corr, 0, 0) & (ix->cap - 1);
  for (; ix->slot[h]; h = (h + 1) & (ix->cap - 1)) {
    const gpd_xlaunch_t *l = &x->la[ix->slot[h] - 1];
    if (l->profile == profile && l->corr == corr)
      return (long)(ix->slot[h] - 1);
  }
  return -1;
}

/* Lanes: the lane of each GPU event on its stream so that slices nest. */
typedef struct {
  uint64_t profile;
  uint32_t device, stream;
  uint64_t end[16];
  unsigned nlanes;
} lanes_t;

static int assign_lanes(const gpd_xtrace_t *x, const corrix_t *ix, uint8_t *lane) {
  lanes_t *ls = NULL;
  size_t nls = 0, cap = 0;
  for (size_t i = 0; i < x->nev; i++) {
    const gpd_xev_t *e = &x->ev[i];
    lane[i] = 0;
    if (host_op(e->op) && corrix_get(ix, x, e->profile, e->corr) >= 0)
      continue; /* drawn on its thread */
    lanes_t *l = NULL;
    for (size_t k = 0; k < nls; k++)
      if (ls[k].profile == e->profile && ls[k].device == e->device && ls[k].stream == e->stream) {
        l = &ls[k];
        break;
      }
    if (l == NULL) {
      if (nls == cap) {
        size_t nc = cap ? cap * 2 : 16;
        lanes_t *n = realloc(ls, nc * sizeof *n);
        if (n == NULL) {
          free(ls);
          return -ENOMEM;
        }
        ls = n;
        cap = nc;
      }
      l = &ls[nls++];
      memset(l, 0, sizeof *l);
      l->profile = e->profile;
      l->device = e->device;
      l->stream = e->stream;
    }
    unsigned k = 0;
    while (k < l->nlanes && l->end[k] > e->start)
      k++;
    if (k == 16)
      k = 15; /* a 17th overlapping operation shares the last lane */
    if (k == l->nlanes)
      l->nlanes++;
    if (e->end > l->end[k])
      l->end[k] = e->end;
    lane[i] = (uint8_t)k;
  }
  free(ls);
  return 0;
}

static uint64_t proc_uuid(uint64_t profile) { return mix(1, profile, 0, 0); }
static uint64_t thread_uuid(uint64_t profile, uint32_t tid) { return mix(2, profile, tid, 0); }
static uint64_t stream_uuid(uint64_t profile, uint32_t dev, uint32_t s, unsigned lane) {
  return mix(3, profile, ((uint64_t)dev << 32) | s, lane);
}
static uint64_t idle_uuid(uint64_t profile) { return mix(4, profile, 0, 0); }
static uint64_t flow_id(uint64_t profile, uint64_t corr) { return mix(5, profile, corr, 0); }

/* ------------------------------------------------------------ perfetto */

typedef struct {
  FILE *f;
  int err;
  uint8_t *buf;
  size_t cap;
  int first;
} pw_t;

static void pw_varint(pw_t *w, uint64_t v) {
  uint8_t b[10];
  int n = 0;
  do {
    b[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  if (fwrite(b, 1, (size_t)n, w->f) != (size_t)n)
    w->err = -EIO;
}

static void pw_packet(pw_t *w, Gpdperfetto__TracePacket *p) {
  if (w->err)
    return;
  p->has_trusted_packet_sequence_id = 1;
  p->trusted_packet_sequence_id = 1;
  if (w->first) {
    p->has_sequence_flags = 1;
    p->sequence_flags = 1; /* SEQ_INCREMENTAL_STATE_CLEARED */
    w->first = 0;
  }
  size_t n = gpdperfetto__trace_packet__get_packed_size(p);
  if (n > w->cap) {
    uint8_t *nb = realloc(w->buf, n);
    if (nb == NULL) {
      w->err = -ENOMEM;
      return;
    }
    w->buf = nb;
    w->cap = n;
  }
  gpdperfetto__trace_packet__pack(p, w->buf);
  pw_varint(w, (1u << 3) | 2u); /* Trace.packet, length-delimited */
  pw_varint(w, n);
  if (n && fwrite(w->buf, 1, n, w->f) != n)
    w->err = -EIO;
}

static void pw_track(pw_t *w, uint64_t uuid, uint64_t parent, const char *name,
                     Gpdperfetto__ProcessDescriptor *pd, Gpdperfetto__ThreadDescriptor *td) {
  Gpdperfetto__TracePacket p = GPDPERFETTO__TRACE_PACKET__INIT;
  Gpdperfetto__TrackDescriptor t = GPDPERFETTO__TRACK_DESCRIPTOR__INIT;
  t.has_uuid = 1;
  t.uuid = uuid;
  if (parent) {
    t.has_parent_uuid = 1;
    t.parent_uuid = parent;
  }
  t.name = (char *)name;
  t.process = pd;
  t.thread = td;
  p.track_descriptor = &t;
  pw_packet(w, &p);
}

/* One emitted item, sorted by time before writing. */
enum { IT_EV_B, IT_EV_E, IT_LAUNCH, IT_SAMPLE, IT_GAP_B, IT_GAP_E };
typedef struct {
  uint64_t ts;
  uint8_t kind;
  size_t i;
} item_t;

static int item_cmp(const void *a, const void *b) {
  const item_t *x = a, *y = b;
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  /* at equal times: ends before begins (adjacent slices), then the rest */
  int kx = x->kind == IT_EV_E || x->kind == IT_GAP_E ? 0 : 1;
  int ky = y->kind == IT_EV_E || y->kind == IT_GAP_E ? 0 : 1;
  if (kx != ky)
    return kx - ky;
  return x->i < y->i ? -1 : x->i > y->i;
}

typedef struct {
  const gpd_xtrace_t *x;
  corrix_t ix;
  uint8_t *lane;
  gpd_xgap_t *gaps;
  size_t ngaps;
  item_t *it;
  size_t nit;
} prep_t;

static void prep_free(prep_t *p) {
  free(p->ix.slot);
  free(p->lane);
  free(p->gaps);
  free(p->it);
}

static int prep(prep_t *p, const gpd_xtrace_t *x) {
  memset(p, 0, sizeof *p);
  p->x = x;
  gpd_xblame_t *bl = NULL;
  size_t nbl = 0;
  double idle, span;
  int err = corrix_build(&p->ix, x);
  if (err == 0 && (p->lane = malloc(x->nev + 1)) == NULL)
    err = -ENOMEM;
  if (err == 0)
    err = assign_lanes(x, &p->ix, p->lane);
  if (err == 0)
    err = gpd_xtrace_idle(x, &p->gaps, &p->ngaps, &bl, &nbl, &idle, &span);
  free(bl);
  if (err == 0 &&
      (p->it = malloc((2 * x->nev + x->nla + x->ncs + 2 * p->ngaps + 1) * sizeof *p->it)) == NULL)
    err = -ENOMEM;
  if (err < 0)
    return err;
  for (size_t i = 0; i < x->nev; i++) {
    p->it[p->nit++] = (item_t){x->ev[i].start, IT_EV_B, i};
    p->it[p->nit++] = (item_t){x->ev[i].end > x->ev[i].start ? x->ev[i].end : x->ev[i].start,
                               IT_EV_E, i};
  }
  for (size_t i = 0; i < x->nla; i++)
    p->it[p->nit++] = (item_t){x->la[i].ts, IT_LAUNCH, i};
  for (size_t i = 0; i < x->ncs; i++)
    p->it[p->nit++] = (item_t){x->cs[i].ts, IT_SAMPLE, i};
  for (size_t i = 0; i < p->ngaps; i++) {
    p->it[p->nit++] = (item_t){p->gaps[i].start, IT_GAP_B, i};
    p->it[p->nit++] = (item_t){p->gaps[i].end, IT_GAP_E, i};
  }
  qsort(p->it, p->nit, sizeof *p->it, item_cmp);
  return 0;
}

static int has_gap(const prep_t *p, uint64_t profile) {
  for (size_t i = 0; i < p->ngaps; i++)
    if (p->gaps[i].profile == profile)
      return 1;
  return 0;
}

/* the track an event is drawn on */
static uint64_t ev_track(const prep_t *p, size_t i) {
  const gpd_xev_t *e = &p->x->ev[i];
  if (host_op(e->op)) {
    long l = corrix_get(&p->ix, p->x, e->profile, e->corr);
    if (l >= 0)
      return thread_uuid(e->profile, p->x->la[l].tid);
  }
  return stream_uuid(e->profile, e->device, e->stream, p->lane[i]);
}

/* distinct (profile, tid) and (profile, device, stream, lane) tracks */
typedef struct {
  uint64_t profile, key;
  unsigned lane;
} trk_t;

static int trk_add(trk_t **v, size_t *n, size_t *cap, uint64_t profile, uint64_t key, unsigned lane) {
  for (size_t i = *n; i-- > 0;)
    if ((*v)[i].profile == profile && (*v)[i].key == key && (*v)[i].lane == lane)
      return 0;
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    trk_t *nv = realloc(*v, nc * sizeof *nv);
    if (nv == NULL)
      return -ENOMEM;
    *v = nv;
    *cap = nc;
  }
  (*v)[(*n)++] = (trk_t){profile, key, lane};
  return 0;
}

/* threads and streams of the trace */
static int collect_tracks(const prep_t *p, trk_t **th, size_t *nth, trk_t **st, size_t *nst) {
  size_t cth = 0, cst = 0;
  int err = 0;
  const gpd_xtrace_t *x = p->x;
  for (size_t i = 0; i < x->nla && err == 0; i++)
    err = trk_add(th, nth, &cth, x->la[i].profile, x->la[i].tid, 0);
  for (size_t i = 0; i < x->ncs && err == 0; i++)
    err = trk_add(th, nth, &cth, x->cs[i].profile, x->cs[i].tid, 0);
  for (size_t i = 0; i < x->nev && err == 0; i++) {
    const gpd_xev_t *e = &x->ev[i];
    if (host_op(e->op) && corrix_get(&p->ix, x, e->profile, e->corr) >= 0)
      continue;
    err = trk_add(st, nst, &cst, e->profile, ((uint64_t)e->device << 32) | e->stream, p->lane[i]);
  }
  return err;
}

static Gpdperfetto__DebugAnnotation *ann_str(Gpdperfetto__DebugAnnotation *a, const char *name,
                                             const char *v) {
  gpdperfetto__debug_annotation__init(a);
  a->name = (char *)name;
  a->string_value = (char *)v;
  return a;
}
static Gpdperfetto__DebugAnnotation *ann_uint(Gpdperfetto__DebugAnnotation *a, const char *name,
                                              uint64_t v) {
  gpdperfetto__debug_annotation__init(a);
  a->name = (char *)name;
  a->has_uint_value = 1;
  a->uint_value = v;
  return a;
}

int gpd_xtrace_write_perfetto(FILE *f, const gpd_xtrace_t *x) {
  prep_t p;
  pw_t w = {.f = f, .first = 1};
  trk_t *th = NULL, *st = NULL;
  size_t nth = 0, nst = 0;
  int err = prep(&p, x);
  if (err == 0)
    err = collect_tracks(&p, &th, &nth, &st, &nst);
  if (err < 0)
    goto out;
  char name[1024], path[4096], path2[4096];
  /* processes (every selected profile, even without events) */
  for (size_t i = 0; i < x->tree.nprocs; i++) {
    const gpd_tproc_t *pr = &x->tree.procs[i];
    Gpdperfetto__ProcessDescriptor pd = GPDPERFETTO__PROCESS_DESCRIPTOR__INIT;
    pd.has_pid = 1;
    pd.pid = pr->pid;
    snprintf(name, sizeof name, "%s (profile %" PRIu64 ")", base(pr->exe), pr->profile_id);
    pd.process_name = name;
    pw_track(&w, proc_uuid(pr->profile_id), 0, NULL, &pd, NULL);
    if (has_gap(&p, pr->profile_id))
      pw_track(&w, idle_uuid(pr->profile_id), proc_uuid(pr->profile_id), "GPU idle (blame)", NULL,
               NULL);
  }
  for (size_t i = 0; i < nth; i++) {
    Gpdperfetto__ThreadDescriptor td = GPDPERFETTO__THREAD_DESCRIPTOR__INIT;
    td.has_pid = td.has_tid = 1;
    td.pid = pid_of(x, th[i].profile);
    td.tid = (int32_t)th[i].key;
    snprintf(name, sizeof name, "CPU thread %u", (unsigned)th[i].key);
    td.thread_name = name;
    pw_track(&w, thread_uuid(th[i].profile, (uint32_t)th[i].key), 0, NULL, NULL, &td);
  }
  for (size_t i = 0; i < nst; i++) {
    uint32_t dev = (uint32_t)(st[i].key >> 32), s = (uint32_t)st[i].key;
    if (st[i].lane)
      snprintf(name, sizeof name, "GPU %u stream %u (overlap %u)", dev, s, st[i].lane);
    else
      snprintf(name, sizeof name, "GPU %u stream %u", dev, s);
    pw_track(&w, stream_uuid(st[i].profile, dev, s, st[i].lane), proc_uuid(st[i].profile), name,
             NULL, NULL);
  }
  for (size_t k = 0; k < p.nit && w.err == 0; k++) {
    const item_t *it = &p.it[k];
    Gpdperfetto__TracePacket pk = GPDPERFETTO__TRACE_PACKET__INIT;
    Gpdperfetto__TrackEvent te = GPDPERFETTO__TRACK_EVENT__INIT;
    Gpdperfetto__DebugAnnotation a[6], *ap[6];
    char *cats[1];
    uint64_t flow;
    size_t na = 0;
    pk.has_timestamp = 1;
    pk.timestamp = it->ts;
    pk.track_event = &te;
    te.has_type = 1;
    switch (it->kind) {
    case IT_EV_B:
    case IT_EV_E: {
      const gpd_xev_t *e = &x->ev[it->i];
      te.has_track_uuid = 1;
      te.track_uuid = ev_track(&p, it->i);
      if (it->kind == IT_EV_E) {
        te.type = GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_SLICE_END;
        break;
      }
      te.type = GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
      gpd_xtrace_ev_name(x, e, name, sizeof name);
      te.name = name;
      cats[0] = host_op(e->op) ? "host" : "gpu";
      te.categories = cats;
      te.n_categories = 1;
      long l = corrix_get(&p.ix, x, e->profile, e->corr);
      gpd_xtrace_path(x, l >= 0 && x->la[l].node ? x->la[l].node : e->node, 1, path, sizeof path);
      if (path[0])
        ap[na] = ann_str(&a[na], "call path", path), na++;
      ap[na] = ann_uint(&a[na], "correlation id", e->corr), na++;
      ap[na] = ann_uint(&a[na], "device", e->device), na++;
      ap[na] = ann_uint(&a[na], "stream", e->stream), na++;
      if (e->bytes)
        ap[na] = ann_uint(&a[na], "bytes", e->bytes), na++;
      if (l >= 0 && !host_op(e->op)) {
        flow = flow_id(e->profile, e->corr);
        te.terminating_flow_ids = &flow;
        te.n_terminating_flow_ids = 1;
      }
      break;
    }
    case IT_LAUNCH: {
      const gpd_xlaunch_t *l = &x->la[it->i];
      te.type = GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_INSTANT;
      te.has_track_uuid = 1;
      te.track_uuid = thread_uuid(l->profile, l->tid);
      snprintf(name, sizeof name, "launch %s", gpd_op_placeholder(l->op));
      te.name = name;
      cats[0] = "launch";
      te.categories = cats;
      te.n_categories = 1;
      gpd_xtrace_path(x, l->node, 1, path, sizeof path);
      if (path[0])
        ap[na] = ann_str(&a[na], "call path", path), na++;
      ap[na] = ann_uint(&a[na], "correlation id", l->corr), na++;
      if (!host_op(l->op)) {
        flow = flow_id(l->profile, l->corr);
        te.flow_ids = &flow;
        te.n_flow_ids = 1;
      }
      break;
    }
    case IT_SAMPLE: {
      const gpd_xsample_t *s = &x->cs[it->i];
      te.type = GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_INSTANT;
      te.has_track_uuid = 1;
      te.track_uuid = thread_uuid(s->profile, s->tid);
      gpd_xtrace_path(x, s->node, 1, path, sizeof path);
      const char *leaf = path; /* the innermost frame: after the last " > " */
      for (const char *q = strstr(path, " > "); q; q = strstr(q + 3, " > "))
        leaf = q + 3;
      snprintf(name, sizeof name, "cpu sample: %.900s", leaf[0] ? leaf : "?");
      te.name = name;
      cats[0] = "cpu";
      te.categories = cats;
      te.n_categories = 1;
      if (path[0])
        ap[na] = ann_str(&a[na], "call path", path), na++;
      break;
    }
    case IT_GAP_B:
    case IT_GAP_E: {
      const gpd_xgap_t *g = &p.gaps[it->i];
      te.has_track_uuid = 1;
      te.track_uuid = idle_uuid(g->profile);
      if (it->kind == IT_GAP_E) {
        te.type = GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_SLICE_END;
        break;
      }
      te.type = GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
      te.name = "GPU idle";
      cats[0] = "idle";
      te.categories = cats;
      te.n_categories = 1;
      gpd_xtrace_path(x, g->node, 1, path2, sizeof path2);
      ap[na] = ann_str(&a[na], "blamed on", path2[0] ? path2 : "<no CPU context known>"), na++;
      ap[na] = ann_str(&a[na], "CPU was", g->via_sync ? "waiting (sync)" : "running"), na++;
      break;
    }
    }
    te.debug_annotations = na ? ap : NULL;
    te.n_debug_annotations = na;
    pw_packet(&w, &pk);
  }
  err = w.err;
out:
  free(th);
  free(st);
  free(w.buf);
  prep_free(&p);
  return err;
}

/* -------------------------------------------------------------- chrome */

static void js(FILE *f, const char *s) { gpd_json_str(f, s); }

/* Chrome's pseudo thread id of a GPU stream lane (above any real tid). */
static uint64_t chrome_stream_tid(uint32_t dev, uint32_t s, unsigned lane) {
  return 1000000000ull + (uint64_t)dev * 10000000ull + (uint64_t)(s % 100000) * 100 + lane;
}
static uint64_t chrome_idle_tid(void) { return 999999999ull; }
/* Launches go to a pseudo thread beside their thread's own (zero-length
 * slices that start where a host-measured slice such as a sync starts
 * would not nest on one thread). */
static uint64_t chrome_launch_tid(uint32_t tid) { return 500000000ull + tid; }

int gpd_xtrace_write_chrome(FILE *f, const gpd_xtrace_t *x) {
  prep_t p;
  trk_t *th = NULL, *st = NULL;
  size_t nth = 0, nst = 0;
  int err = prep(&p, x);
  if (err == 0)
    err = collect_tracks(&p, &th, &nth, &st, &nst);
  if (err < 0)
    goto out;
  uint64_t t0 = gpd_xtrace_t0(x);
  char name[1024], path[4096];
  int first = 1;
#define SEP() (fputs(first ? "\n" : ",\n", f), first = 0)
  fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"gpuprof trace\"},\"traceEvents\":[", f);
  for (size_t i = 0; i < x->tree.nprocs; i++) {
    const gpd_tproc_t *pr = &x->tree.procs[i];
    snprintf(name, sizeof name, "%s (profile %" PRIu64 ")", base(pr->exe), pr->profile_id);
    SEP();
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":", pr->pid);
    js(f, name);
    fputs("}}", f);
    if (has_gap(&p, pr->profile_id)) {
      SEP();
      fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%" PRIu64
                 ",\"args\":{\"name\":\"GPU idle (blame)\"}}", pr->pid, chrome_idle_tid());
    }
  }
  for (size_t i = 0; i < nth; i++) {
    SEP();
    fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"CPU thread %u\"}}",
            pid_of(x, th[i].profile), (unsigned)th[i].key, (unsigned)th[i].key);
    SEP();
    fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%" PRIu64
               ",\"args\":{\"name\":\"CPU thread %u launches\"}}",
            pid_of(x, th[i].profile), chrome_launch_tid((uint32_t)th[i].key), (unsigned)th[i].key);
  }
  for (size_t i = 0; i < nst; i++) {
    uint32_t dev = (uint32_t)(st[i].key >> 32), s = (uint32_t)st[i].key;
    SEP();
    fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%" PRIu64
               ",\"args\":{\"name\":\"GPU %u stream %u%s\"}}",
            pid_of(x, st[i].profile), chrome_stream_tid(dev, s, st[i].lane), dev, s,
            st[i].lane ? " (overlap)" : "");
  }
  for (size_t k = 0; k < p.nit; k++) {
    const item_t *it = &p.it[k];
    double ts = (double)(it->ts - t0) / 1e3;
    switch (it->kind) {
    case IT_EV_B: {
      const gpd_xev_t *e = &x->ev[it->i];
      long l = corrix_get(&p.ix, x, e->profile, e->corr);
      uint64_t tid = host_op(e->op) && l >= 0 ? x->la[l].tid
                                              : chrome_stream_tid(e->device, e->stream, p.lane[it->i]);
      gpd_xtrace_ev_name(x, e, name, sizeof name);
      gpd_xtrace_path(x, l >= 0 && x->la[l].node ? x->la[l].node : e->node, 1, path, sizeof path);
      if (l >= 0 && !host_op(e->op)) {
        SEP();
        fprintf(f, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"name\":\"launch\",\"id\":%" PRIu64
                   ",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f}",
                flow_id(e->profile, e->corr) >> 11, pid_of(x, e->profile), tid, ts);
      }
      SEP();
      fprintf(f, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", host_op(e->op) ? "host" : "gpu");
      js(f, name);
      fprintf(f, ",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"call path\":",
              pid_of(x, e->profile), tid, ts,
              e->end > e->start ? (double)(e->end - e->start) / 1e3 : 0.0);
      js(f, path);
      fprintf(f, ",\"correlation id\":%" PRIu64 ",\"device\":%u,\"stream\":%u,\"bytes\":%" PRIu64 "}}",
              e->corr, e->device, e->stream, e->bytes);
      break;
    }
    case IT_LAUNCH: {
      const gpd_xlaunch_t *l = &x->la[it->i];
      gpd_xtrace_path(x, l->node, 1, path, sizeof path);
      SEP();
      fprintf(f, "{\"ph\":\"X\",\"cat\":\"launch\",\"name\":\"launch %s\",\"pid\":%d,\"tid\":%" PRIu64
                 ",\"ts\":%.3f,\"dur\":0,\"args\":{\"call path\":",
              gpd_op_placeholder(l->op), pid_of(x, l->profile), chrome_launch_tid(l->tid), ts);
      js(f, path);
      fprintf(f, ",\"correlation id\":%" PRIu64 "}}", l->corr);
      if (!host_op(l->op)) {
        SEP();
        fprintf(f, "{\"ph\":\"s\",\"cat\":\"flow\",\"name\":\"launch\",\"id\":%" PRIu64
                   ",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f}",
                flow_id(l->profile, l->corr) >> 11, pid_of(x, l->profile), chrome_launch_tid(l->tid), ts);
      }
      break;
    }
    case IT_SAMPLE: {
      const gpd_xsample_t *s = &x->cs[it->i];
      gpd_xtrace_path(x, s->node, 1, path, sizeof path);
      SEP();
      fprintf(f, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu\",\"name\":\"cpu sample\",\"pid\":%d,"
                 "\"tid\":%u,\"ts\":%.3f,\"args\":{\"call path\":",
              pid_of(x, s->profile), (unsigned)s->tid, ts);
      js(f, path);
      fputs("}}", f);
      break;
    }
    case IT_GAP_B: {
      const gpd_xgap_t *g = &p.gaps[it->i];
      gpd_xtrace_path(x, g->node, 1, path, sizeof path);
      SEP();
      fprintf(f, "{\"ph\":\"X\",\"cat\":\"idle\",\"name\":\"GPU idle\",\"pid\":%d,\"tid\":%" PRIu64
                 ",\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"blamed on\":",
              pid_of(x, g->profile), chrome_idle_tid(), ts, (double)(g->end - g->start) / 1e3);
      js(f, path[0] ? path : "<no CPU context known>");
      fprintf(f, ",\"CPU was\":\"%s\"}}", g->via_sync ? "waiting (sync)" : "running");
      break;
    }
    default:
      break;
    }
  }
#undef SEP
  fputs("\n]}\n", f);
  if (ferror(f))
    err = -EIO;
out:
  free(th);
  free(st);
  prep_free(&p);
  return err;
}
