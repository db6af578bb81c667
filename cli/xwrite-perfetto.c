/* xwrite-perfetto.c - a trace (trace.h) as a Perfetto protobuf
 * trace (docs/TRACE.md "Perfetto encoding"), with the tracks of
 * xwrite.c; a flow goes from each launch to the GPU operation(s) of
 * the same correlation id.
 *
 * A Trace is `repeated TracePacket packet = 1`, written packet by packet
 * with the protobuf-c code of proto/perfetto_trace.proto.  Sequence 1
 * holds the track descriptors; every other track has a packet sequence of
 * its own whose first packet clears the incremental state and sets the
 * defaults (the track, and an incremental clock of the sequence: each
 * packet's timestamp is the ns since the previous packet of the sequence,
 * the clock snapshot ties it to the gpuprof clock's ns as BOOTTIME).
 * Event names, debug-annotation names, function names, frames and call
 * stacks are interned (InternedData) in the first packet of the sequence
 * that refers to them; events carry name_iid / callstack_iid.  Flows use
 * Perfetto's varint flow ids (the launch's index + 1).  CLI thread only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/record.h"
#include "perfetto_trace.pb-c.h"

#include "xlayout.h"
#include "xwrite.h"

/* debug annotation names (interned ids 1..) */
enum { DA_BYTES = 1, DA_CPU_WAS, DA_DEVICE, DA_STREAM, DA_N };
static const char *const da_name[DA_N] = {NULL, "bytes", "CPU was", "device", "stream"};

/* the incremental clock of every event sequence */
#define SEQ_CLOCK 64
#define CLOCK_BOOTTIME 6
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE 2

/* One packet sequence (an event track). */
typedef struct {
  uint64_t uuid;
  uint32_t id;  /* trusted_packet_sequence_id; 0 until its first packet */
  uint64_t last; /* the incremental clock's value */
  gpd_xwrite_bits_t names, fnames, frames, stacks; /* interned on this sequence */
  unsigned da;                  /* debug annotation names interned (bits) */
} seq_t;

typedef struct {
  FILE *f;
  int err;
  uint8_t *buf;
  size_t cap;
  gpd_xwrite_t ctx;
  seq_t *seq; /* by track uuid */
  size_t nseq;
  uint32_t next_seq;
  /* the interned data of the packet being built */
  Gpdperfetto__InternedData in;
  Gpdperfetto__EventName en[2], *enp[2];
  Gpdperfetto__DebugAnnotationName dn[DA_N], *dnp[DA_N];
  Gpdperfetto__InternedString fs[GPD_XWRITE_MAXF], *fsp[GPD_XWRITE_MAXF];
  Gpdperfetto__Frame fr[GPD_XWRITE_MAXF], *frp[GPD_XWRITE_MAXF];
  Gpdperfetto__Callstack cs, *csp;
  uint64_t fids[GPD_XWRITE_MAXF];
  size_t fidx[GPD_XWRITE_MAXF];
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

static void pw_track(pw_t *w, int first, uint64_t uuid, uint64_t parent, const char *name,
                     Gpdperfetto__ProcessDescriptor *pd, Gpdperfetto__ThreadDescriptor *td) {
  Gpdperfetto__TracePacket p = GPDPERFETTO__TRACE_PACKET__INIT;
  Gpdperfetto__TrackDescriptor t = GPDPERFETTO__TRACK_DESCRIPTOR__INIT;
  p.has_trusted_packet_sequence_id = 1;
  p.trusted_packet_sequence_id = 1;
  if (first) {
    p.has_sequence_flags = 1;
    p.sequence_flags = SEQ_INCREMENTAL_STATE_CLEARED;
  }
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

/* The sequence of track uuid at time ts: started (state cleared, the
 * defaults, the clock snapshot) on its first use. */
static seq_t *pw_seq(pw_t *w, uint64_t uuid, uint64_t ts) {
  seq_t *s = &w->seq[uuid];
  if (s->id)
    return s;
  s->id = w->next_seq++;
  s->uuid = uuid;
  s->last = ts;
  Gpdperfetto__TracePacket p = GPDPERFETTO__TRACE_PACKET__INIT;
  Gpdperfetto__TracePacketDefaults d = GPDPERFETTO__TRACE_PACKET_DEFAULTS__INIT;
  Gpdperfetto__TrackEventDefaults td = GPDPERFETTO__TRACK_EVENT_DEFAULTS__INIT;
  Gpdperfetto__ClockSnapshot cs = GPDPERFETTO__CLOCK_SNAPSHOT__INIT;
  Gpdperfetto__ClockSnapshot__Clock c[2] = {GPDPERFETTO__CLOCK_SNAPSHOT__CLOCK__INIT,
                                            GPDPERFETTO__CLOCK_SNAPSHOT__CLOCK__INIT};
  Gpdperfetto__ClockSnapshot__Clock *cp[2] = {&c[0], &c[1]};
  p.has_trusted_packet_sequence_id = 1;
  p.trusted_packet_sequence_id = s->id;
  p.has_sequence_flags = 1;
  p.sequence_flags = SEQ_INCREMENTAL_STATE_CLEARED;
  td.has_track_uuid = 1;
  td.track_uuid = uuid;
  d.has_timestamp_clock_id = 1;
  d.timestamp_clock_id = SEQ_CLOCK;
  d.track_event_defaults = &td;
  p.trace_packet_defaults = &d;
  c[0].has_clock_id = c[0].has_timestamp = 1;
  c[0].clock_id = CLOCK_BOOTTIME;
  c[0].timestamp = ts;
  c[1].has_clock_id = c[1].has_timestamp = c[1].has_is_incremental = 1;
  c[1].clock_id = SEQ_CLOCK;
  c[1].timestamp = ts;
  c[1].is_incremental = 1;
  cs.clocks = cp;
  cs.n_clocks = 2;
  p.clock_snapshot = &cs;
  pw_packet(w, &p);
  return s;
}

static void pw_in_reset(pw_t *w) {
  gpdperfetto__interned_data__init(&w->in);
  w->in.event_names = w->enp;
  w->in.debug_annotation_names = w->dnp;
  w->in.function_names = w->fsp;
  w->in.frames = w->frp;
}

/* name_iid of string id on s (interned in this packet when new) */
static uint64_t pw_name(pw_t *w, seq_t *s, uint64_t id) {
  int r = gpd__xwrite_bits_testset(&s->names, id);
  if (r < 0)
    w->err = r;
  if (r == 0 && w->in.n_event_names < 2) {
    Gpdperfetto__EventName *e = &w->en[w->in.n_event_names];
    gpdperfetto__event_name__init(e);
    e->has_iid = 1;
    e->iid = id;
    e->name = (char *)gpd__xwrite_str(&w->ctx, id);
    w->enp[w->in.n_event_names++] = e;
  }
  return id;
}

static Gpdperfetto__DebugAnnotation *pw_da(pw_t *w, seq_t *s, Gpdperfetto__DebugAnnotation *a,
                                           unsigned name) {
  gpdperfetto__debug_annotation__init(a);
  a->has_name_iid = 1;
  a->name_iid = name;
  if (!(s->da & (1u << name))) {
    s->da |= 1u << name;
    Gpdperfetto__DebugAnnotationName *d = &w->dn[w->in.n_debug_annotation_names];
    gpdperfetto__debug_annotation_name__init(d);
    d->has_iid = 1;
    d->iid = name;
    d->name = (char *)da_name[name];
    w->dnp[w->in.n_debug_annotation_names++] = d;
  }
  return a;
}

/* callstack_iid of call site cs (index + 1) on s, its frames and
 * function names interned in this packet when new; 0 when cs is 0 */
static uint64_t pw_stack(pw_t *w, seq_t *s, size_t cs) {
  if (cs == 0)
    return 0;
  int r = gpd__xwrite_bits_testset(&s->stacks, cs);
  if (r)
    return r < 0 ? (w->err = r, 0) : cs;
  size_t n = gpd__xwrite_frames(&w->ctx, cs, w->fidx);
  for (size_t k = 0; k < n; k++) {
    size_t j = w->fidx[k];
    w->fids[k] = j + 1;
    if ((r = gpd__xwrite_bits_testset(&s->frames, j + 1)) != 0) {
      if (r < 0)
        w->err = r;
      continue;
    }
    uint64_t fn = gpd__xwrite_fn(&w->ctx, j);
    if ((r = gpd__xwrite_bits_testset(&s->fnames, fn)) < 0)
      w->err = r;
    if (r == 0) {
      Gpdperfetto__InternedString *is = &w->fs[w->in.n_function_names];
      gpdperfetto__interned_string__init(is);
      is->has_iid = is->has_str = 1;
      is->iid = fn;
      is->str.data = (uint8_t *)gpd__xwrite_str(&w->ctx, fn);
      is->str.len = strlen((const char *)is->str.data);
      w->fsp[w->in.n_function_names++] = is;
    }
    Gpdperfetto__Frame *fr = &w->fr[w->in.n_frames];
    gpdperfetto__frame__init(fr);
    fr->has_iid = fr->has_function_name_id = 1;
    fr->iid = j + 1;
    fr->function_name_id = fn;
    w->frp[w->in.n_frames++] = fr;
  }
  gpdperfetto__callstack__init(&w->cs);
  w->cs.has_iid = 1;
  w->cs.iid = cs;
  w->cs.frame_ids = w->fids;
  w->cs.n_frame_ids = n;
  w->csp = &w->cs;
  w->in.callstacks = &w->csp;
  w->in.n_callstacks = 1;
  return cs;
}

/* Track uuids: processes 1.., their idle tracks, threads, stream lanes. */
typedef struct {
  const gpd_xlayout_t *l;
  size_t lth; /* last thread found */
} uuids_t;

static uint64_t uuid_proc(const gpd_xtrace_t *x, uint64_t profile) {
  for (size_t i = 0; i < x->tree.nprocs; i++)
    if (x->tree.procs[i].profile_id == profile)
      return 1 + i;
  return 0;
}
static uint64_t uuid_idle(const gpd_xtrace_t *x, uint64_t profile) {
  uint64_t p = uuid_proc(x, profile);
  return p ? p + x->tree.nprocs : 0;
}
static uint64_t uuid_thread(uuids_t *u, uint64_t profile, uint32_t tid) {
  const gpd_xlayout_t *l = u->l;
  if (u->lth >= l->nth || l->th[u->lth].profile != profile || l->th[u->lth].key != tid)
    for (u->lth = 0; u->lth < l->nth; u->lth++)
      if (l->th[u->lth].profile == profile && l->th[u->lth].key == tid)
        break;
  return 1 + 2 * l->x->tree.nprocs + u->lth;
}
/* the track of GPU operation item it (its thread's or its stream lane's) */
static uint64_t uuid_event(const uuids_t *u, const gpd_xitem_t *it) {
  return 1 + 2 * u->l->x->tree.nprocs + (it->thread ? 0 : u->l->nth) + it->trk;
}

static void pw_descriptors(pw_t *w, const gpd_xlayout_t *l) {
  const gpd_xtrace_t *x = l->x;
  char name[1024];
  int first = 1;
  for (size_t i = 0; i < x->tree.nprocs; i++) {
    const gpd_tproc_t *pr = &x->tree.procs[i];
    Gpdperfetto__ProcessDescriptor pd = GPDPERFETTO__PROCESS_DESCRIPTOR__INIT;
    pd.has_pid = 1;
    pd.pid = pr->pid;
    snprintf(name, sizeof name, "%s (profile %" PRIu64 ")", gpd__xwrite_base(pr->exe), pr->profile_id);
    pd.process_name = name;
    pw_track(w, first, uuid_proc(x, pr->profile_id), 0, NULL, &pd, NULL);
    first = 0;
    if (gpd__xlayout_has_gap(l, pr->profile_id))
      pw_track(w, 0, uuid_idle(x, pr->profile_id), uuid_proc(x, pr->profile_id),
               "GPU idle (blame)", NULL, NULL);
  }
  if (first) /* no process: the sequence's state still starts cleared */
    pw_track(w, 1, 1u << 30, 0, "gpuprof", NULL, NULL);
  for (size_t i = 0; i < l->nth; i++) {
    Gpdperfetto__ThreadDescriptor td = GPDPERFETTO__THREAD_DESCRIPTOR__INIT;
    td.has_pid = td.has_tid = 1;
    td.pid = gpd__xlayout_pid(x, l->th[i].profile);
    td.tid = (int32_t)l->th[i].key;
    snprintf(name, sizeof name, "CPU thread %u", (unsigned)l->th[i].key);
    td.thread_name = name;
    pw_track(w, 0, 1 + 2 * x->tree.nprocs + i, 0, NULL, NULL, &td);
  }
  for (size_t i = 0; i < l->nst; i++) {
    uint32_t dev = (uint32_t)(l->st[i].key >> 32), s = (uint32_t)l->st[i].key;
    if (l->st[i].lane)
      snprintf(name, sizeof name, "GPU %u stream %u (overlap %u)", dev, s, l->st[i].lane);
    else
      snprintf(name, sizeof name, "GPU %u stream %u", dev, s);
    pw_track(w, 0, 1 + 2 * x->tree.nprocs + l->nth + i, uuid_proc(x, l->st[i].profile), name,
             NULL, NULL);
  }
}

/* draws one item (gpd__xlayout_walk) */
typedef struct {
  pw_t *w;
  uuids_t u;
} pwd_t;

static int pw_draw(void *arg, gpd_xlayout_t *l, const gpd_xitem_t *it) {
  pw_t *w = ((pwd_t *)arg)->w;
  uuids_t *u = &((pwd_t *)arg)->u;
  const gpd_xtrace_t *x = &l->pg;
  Gpdperfetto__TracePacket pk = GPDPERFETTO__TRACE_PACKET__INIT;
  Gpdperfetto__TrackEvent te = GPDPERFETTO__TRACK_EVENT__INIT;
  Gpdperfetto__DebugAnnotation a[2], *ap[2];
  uint64_t flow;
  size_t na = 0;
  seq_t *s;
  pw_in_reset(w);
  te.has_type = 1;
  switch (it->kind) {
  case GPD_XIT_EV_B:
  case GPD_XIT_EV_E: {
    s = pw_seq(w, uuid_event(u, it), it->ts);
    if (it->kind == GPD_XIT_EV_E) {
      te.type = GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_SLICE_END;
      break;
    }
    const gpd_xev_t *e = &x->ev[it->i];
    te.type = GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
    te.has_name_iid = 1;
    te.name_iid = pw_name(w, s, gpd__xwrite_ev_name(&w->ctx, e));
    te.has_correlation_id = 1;
    te.correlation_id = e->corr;
    if (gpd__xlayout_host_op(e->op)) { /* on its thread: where it was called from */
      size_t cs = gpd__xwrite_cpu(&w->ctx, it->lnode ? it->lnode : e->node);
      if ((te.callstack_iid = pw_stack(w, s, cs)) != 0)
        te.has_callstack_iid = 1;
    } else if (it->la >= 0) {
      flow = (uint64_t)it->la + 1;
      te.terminating_flow_ids_old = &flow;
      te.n_terminating_flow_ids_old = 1;
    }
    if (e->bytes) {
      ap[na] = pw_da(w, s, &a[na], DA_BYTES);
      a[na].has_uint_value = 1;
      a[na++].uint_value = e->bytes;
    }
    break;
  }
  case GPD_XIT_LAUNCH: {
    const gpd_xlaunch_t *la = &x->la[it->i];
    char name[64];
    s = pw_seq(w, uuid_thread(u, la->profile, la->tid), it->ts);
    te.type = GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_INSTANT;
    snprintf(name, sizeof name, "launch %s", gpd_op_placeholder(la->op));
    te.has_name_iid = 1;
    te.name_iid = pw_name(w, s, gpd__xwrite_intern(&w->ctx, name));
    if ((te.callstack_iid = pw_stack(w, s, gpd__xwrite_cpu(&w->ctx, la->node))) != 0)
      te.has_callstack_iid = 1;
    if (!gpd__xlayout_host_op(la->op)) {
      flow = (uint64_t)it->la + 1;
      te.flow_ids_old = &flow;
      te.n_flow_ids_old = 1;
    }
    break;
  }
  case GPD_XIT_SAMPLE: {
    const gpd_xsample_t *cs = &x->cs[it->i];
    s = pw_seq(w, uuid_thread(u, cs->profile, cs->tid), it->ts);
    size_t site = gpd__xwrite_cpu(&w->ctx, cs->node);
    te.type = GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_INSTANT;
    te.has_name_iid = 1;
    te.name_iid = pw_name(w, s, gpd__xwrite_sample_name(&w->ctx, site));
    if ((te.callstack_iid = pw_stack(w, s, site)) != 0)
      te.has_callstack_iid = 1;
    break;
  }
  default: {
    s = pw_seq(w, uuid_idle(l->x, it->profile), it->ts);
    if (it->kind == GPD_XIT_GAP_E) {
      te.type = GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_SLICE_END;
      break;
    }
    const gpd_xgap_t *g = gpd__xlayout_gap(l, it);
    te.type = GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
    te.has_name_iid = 1;
    te.name_iid = pw_name(w, s, gpd__xwrite_intern(&w->ctx, "GPU idle"));
    /* the blamed context is the slice's call stack; none: no CPU context known */
    if ((te.callstack_iid = pw_stack(w, s, gpd__xwrite_cpu(&w->ctx, g->node))) != 0)
      te.has_callstack_iid = 1;
    ap[na] = pw_da(w, s, &a[na], DA_CPU_WAS);
    a[na++].string_value = (char *)gpd_idle_cpu_name(g->cpu);
    break;
  }
  }
  te.debug_annotations = na ? ap : NULL;
  te.n_debug_annotations = na;
  pk.has_trusted_packet_sequence_id = pk.has_sequence_flags = pk.has_timestamp = 1;
  pk.trusted_packet_sequence_id = s->id;
  pk.sequence_flags = SEQ_NEEDS_INCREMENTAL_STATE;
  pk.timestamp = it->ts - s->last;
  s->last = it->ts;
  if (w->in.n_event_names || w->in.n_debug_annotation_names || w->in.n_function_names ||
      w->in.n_frames || w->in.n_callstacks)
    pk.interned_data = &w->in;
  pk.track_event = &te;
  pw_packet(w, &pk);
  return w->err ? w->err : w->ctx.err;
}

int gpd__xwrite_perfetto_pages(FILE *f, gpd_xlayout_t *l, gpd_xpages_t *src) {
  pw_t w = {.f = f, .next_seq = 2};
  pwd_t d = {.w = &w, .u = {.l = l}};
  int err = gpd__xwrite_init(&w.ctx, l->x);
  if (err < 0)
    goto out;
  w.nseq = 2 + 2 * l->x->tree.nprocs + l->nth + l->nst;
  if ((w.seq = calloc(w.nseq, sizeof *w.seq)) == NULL) {
    err = -ENOMEM;
    goto out;
  }
  pw_descriptors(&w, l);
  err = gpd__xlayout_walk(l, src, pw_draw, &d, &w.f);
  if (err == 0)
    err = w.err ? w.err : w.ctx.err;
out:
  if (w.seq)
    for (size_t i = 0; i < w.nseq; i++) {
      free(w.seq[i].names.w);
      free(w.seq[i].fnames.w);
      free(w.seq[i].frames.w);
      free(w.seq[i].stacks.w);
    }
  free(w.seq);
  free(w.buf);
  gpd__xwrite_free(&w.ctx);
  return err;
}

int gpd_xwrite_perfetto(FILE *f, const gpd_xtrace_t *x) {
  gpd_xlayout_t l;
  gpd_xpages_one_t one;
  int err = gpd__xlayout_whole(&l, &one, x);
  if (err == 0)
    err = gpd__xwrite_perfetto_pages(f, &l, &one.src);
  gpd__xlayout_free(&l);
  return err;
}
