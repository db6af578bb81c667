/* trace-decode - decode a `gpuprof trace` Perfetto file with the schema
 * (proto/perfetto_trace.proto, protobuf-c) and print what the tests check:
 *
 *   packets N                      every packet decoded
 *   track NAME                     one line per track descriptor
 *   slices TRACK\tNAME\tCOUNT      completed slices per (track, name)
 *   instants TRACK\tNAME\tCOUNT    instants per (track, name)
 *   flows LINKED                   flow ids both started and terminated
 *   idle START_NS DUR_NS BLAMED    every "GPU idle" slice and its blame
 *                                  (its call stack, outermost first)
 *   interned N                     interned entries defined
 *   resolved N                     interned ids referred to, all resolved
 *   ok                             nesting and order held
 *
 * Exit 1 with "bad: ..." when the file is not a well-formed trace (a
 * packet that does not decode, an end without a begin, a slice left open,
 * time going backwards, an event on an undeclared track, a sequence whose
 * first packet does not clear its incremental state, an interned id
 * (name_iid, callstack_iid, a callstack's frame id, a frame's function
 * name id, a debug annotation's name_iid) that no earlier packet of the
 * same sequence, or the packet itself, defined, or an id defined twice
 * with different values).  Timestamps on a sequence's incremental clock
 * (clock_snapshot + trace_packet_defaults) are added up per sequence.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_trace.pb-c.h"

#define MAXT 4096
#define MAXK 8192

typedef struct {
  uint64_t uuid;
  char name[256];
  int depth;
  char open[64][256];
  uint64_t open_ts[64];
  char open_blame[64][1024];
} trk_t;
static trk_t trk[MAXT];
static int ntrk;

typedef struct {
  char track[256], name[256];
  int instant;
  long n;
} cnt_t;
static cnt_t cnt[MAXK];
static int ncnt;

static uint64_t *fstart, *fend;
static size_t nfs, nfe, capfs, capfe;

/* interned entries: (sequence, table, iid) -> value (a string, or a
 * frame's function name id, or a callstack's frames) */
enum { T_EVNAME, T_DANAME, T_FNAME, T_FRAME, T_STACK };
typedef struct {
  uint32_t seq, table;
  uint64_t iid;
  char *str;
  uint64_t fn;
  uint64_t *frames;
  size_t nframes;
} ient_t;
static ient_t *ient;
static size_t nient, capient;
static uint32_t *islot;
static size_t nislot;
static unsigned long n_defined, n_resolved;

static uint64_t ihash(uint32_t seq, uint32_t table, uint64_t iid) {
  uint64_t h = (iid * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)seq << 32 | table);
  h ^= h >> 29;
  return h * 0xbf58476d1ce4e5b9ull;
}

static ient_t *ifind(uint32_t seq, uint32_t table, uint64_t iid) {
  if (nislot == 0)
    return NULL;
  for (size_t h = ihash(seq, table, iid) & (nislot - 1); islot[h]; h = (h + 1) & (nislot - 1)) {
    ient_t *e = &ient[islot[h] - 1];
    if (e->seq == seq && e->table == table && e->iid == iid)
      return e;
  }
  return NULL;
}

/* define an entry; 1 when new, 0 when the same value was there, -1 when a different one */
static int idefine(uint32_t seq, uint32_t table, uint64_t iid, const char *str, uint64_t fn,
                   const uint64_t *frames, size_t nframes) {
  ient_t *o = ifind(seq, table, iid);
  if (o) {
    if ((str && (!o->str || strcmp(o->str, str))) || o->fn != fn || o->nframes != nframes ||
        (nframes && memcmp(o->frames, frames, nframes * sizeof *frames)))
      return -1;
    return 0;
  }
  if (nient * 2 + 2 >= nislot) {
    size_t ns = nislot ? nislot * 2 : 4096;
    uint32_t *sl = calloc(ns, sizeof *sl);
    if (sl == NULL)
      exit(2);
    for (size_t i = 0; i < nient; i++) {
      size_t h = ihash(ient[i].seq, ient[i].table, ient[i].iid) & (ns - 1);
      while (sl[h])
        h = (h + 1) & (ns - 1);
      sl[h] = (uint32_t)(i + 1);
    }
    free(islot);
    islot = sl;
    nislot = ns;
  }
  if (nient == capient) {
    capient = capient ? capient * 2 : 1024;
    if ((ient = realloc(ient, capient * sizeof *ient)) == NULL)
      exit(2);
  }
  ient_t *e = &ient[nient++];
  *e = (ient_t){seq, table, iid, str ? strdup(str) : NULL, fn, NULL, nframes};
  if (nframes) {
    e->frames = malloc(nframes * sizeof *frames);
    if (e->frames == NULL)
      exit(2);
    memcpy(e->frames, frames, nframes * sizeof *frames);
  }
  size_t h = ihash(seq, table, iid) & (nislot - 1);
  while (islot[h])
    h = (h + 1) & (nislot - 1);
  islot[h] = (uint32_t)nient;
  n_defined++;
  return 1;
}

static const char *const tname[] = {"event name", "debug annotation name", "function name",
                                    "frame", "callstack"};

/* the entry (seq, table, iid), or exit 1 */
static ient_t *resolve(uint32_t seq, uint32_t table, uint64_t iid, size_t pkt) {
  ient_t *e = iid ? ifind(seq, table, iid) : NULL;
  if (e == NULL) {
    printf("bad: packet %zu refers to %s iid %llu not interned earlier on sequence %u\n", pkt,
           tname[table], (unsigned long long)iid, seq);
    exit(1);
  }
  n_resolved++;
  return e;
}

/* per sequence: cleared, default track, incremental clock */
typedef struct {
  int cleared, incr, has_track;
  uint32_t clock;
  uint64_t track, last;
} sstate_t;
#define MAXS 65536
static sstate_t seqs[MAXS];

/* a callstack's frames as "outer > ... > inner" into buf */
static void stack_path(uint32_t seq, uint64_t iid, size_t pkt, char *buf, size_t n) {
  ient_t *cs = resolve(seq, T_STACK, iid, pkt);
  size_t len = 0;
  buf[0] = 0;
  for (size_t k = 0; k < cs->nframes; k++) {
    ient_t *fr = resolve(seq, T_FRAME, cs->frames[k], pkt);
    ient_t *fn = resolve(seq, T_FNAME, fr->fn, pkt);
    int w = snprintf(buf + len, n - len, "%s%s", len ? " > " : "", fn->str);
    if (w < 0 || (size_t)w >= n - len)
      break;
    len += (size_t)w;
  }
}

/* define the packet's interned data; exit 1 on a conflicting definition */
static void intern(uint32_t seq, const Gpdperfetto__InternedData *in, size_t pkt) {
  int r = 0;
  for (size_t j = 0; j < in->n_event_names && r >= 0; j++)
    r = idefine(seq, T_EVNAME, in->event_names[j]->iid, in->event_names[j]->name ? in->event_names[j]->name : "", 0, NULL, 0);
  for (size_t j = 0; j < in->n_debug_annotation_names && r >= 0; j++)
    r = idefine(seq, T_DANAME, in->debug_annotation_names[j]->iid,
                in->debug_annotation_names[j]->name ? in->debug_annotation_names[j]->name : "", 0, NULL, 0);
  for (size_t j = 0; j < in->n_function_names && r >= 0; j++) {
    char tmp[4096];
    size_t l = in->function_names[j]->str.len < sizeof tmp - 1 ? in->function_names[j]->str.len : sizeof tmp - 1;
    memcpy(tmp, in->function_names[j]->str.data, l);
    tmp[l] = 0;
    r = idefine(seq, T_FNAME, in->function_names[j]->iid, tmp, 0, NULL, 0);
  }
  for (size_t j = 0; j < in->n_frames && r >= 0; j++) {
    resolve(seq, T_FNAME, in->frames[j]->function_name_id, pkt);
    r = idefine(seq, T_FRAME, in->frames[j]->iid, NULL, in->frames[j]->function_name_id, NULL, 0);
  }
  for (size_t j = 0; j < in->n_callstacks && r >= 0; j++) {
    for (size_t k = 0; k < in->callstacks[j]->n_frame_ids; k++)
      resolve(seq, T_FRAME, in->callstacks[j]->frame_ids[k], pkt);
    r = idefine(seq, T_STACK, in->callstacks[j]->iid, NULL, 0, in->callstacks[j]->frame_ids,
                in->callstacks[j]->n_frame_ids);
  }
  if (r < 0) {
    printf("bad: packet %zu redefines an interned id with another value\n", pkt);
    exit(1);
  }
}

static trk_t *find(uint64_t uuid) {
  for (int i = 0; i < ntrk; i++)
    if (trk[i].uuid == uuid)
      return &trk[i];
  return NULL;
}

static void count(const char *track, const char *name, int instant) {
  for (int i = 0; i < ncnt; i++)
    if (cnt[i].instant == instant && !strcmp(cnt[i].track, track) && !strcmp(cnt[i].name, name)) {
      cnt[i].n++;
      return;
    }
  if (ncnt == MAXK)
    return;
  snprintf(cnt[ncnt].track, sizeof cnt[ncnt].track, "%s", track);
  snprintf(cnt[ncnt].name, sizeof cnt[ncnt].name, "%s", name);
  cnt[ncnt].instant = instant;
  cnt[ncnt++].n = 1;
}

static void add(uint64_t **v, size_t *n, size_t *cap, uint64_t x) {
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 256;
    *v = realloc(*v, *cap * sizeof **v);
    if (*v == NULL)
      exit(2);
  }
  (*v)[(*n)++] = x;
}

static int u64cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: trace-decode FILE.pftrace\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(sz > 0 ? (size_t)sz : 1);
  if (!buf || fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
    fprintf(stderr, "bad: cannot read %s\n", argv[1]);
    return 1;
  }
  fclose(f);
  Gpdperfetto__Trace *t = gpdperfetto__trace__unpack(NULL, (size_t)sz, buf);
  if (t == NULL) {
    printf("bad: the file does not decode as a Trace\n");
    return 1;
  }
  printf("packets %zu\n", t->n_packet);
  uint64_t last_ts = 0;
  for (size_t i = 0; i < t->n_packet; i++) {
    Gpdperfetto__TracePacket *p = t->packet[i];
    if (!p->has_trusted_packet_sequence_id || p->trusted_packet_sequence_id == 0 ||
        p->trusted_packet_sequence_id >= MAXS) {
      printf("bad: packet %zu has no sequence id\n", i);
      return 1;
    }
    uint32_t sq = p->trusted_packet_sequence_id;
    sstate_t *ss = &seqs[sq];
    if (p->sequence_flags & 1) {
      memset(ss, 0, sizeof *ss);
      ss->cleared = 1;
    }
    if (!ss->cleared) {
      printf("bad: packet %zu: sequence %u did not start with its incremental state cleared\n", i, sq);
      return 1;
    }
    if (p->trace_packet_defaults) {
      const Gpdperfetto__TracePacketDefaults *d = p->trace_packet_defaults;
      ss->clock = d->has_timestamp_clock_id ? d->timestamp_clock_id : 0;
      if (d->track_event_defaults && d->track_event_defaults->has_track_uuid) {
        ss->has_track = 1;
        ss->track = d->track_event_defaults->track_uuid;
      }
    }
    if (p->clock_snapshot)
      for (size_t j = 0; j < p->clock_snapshot->n_clocks; j++) {
        const Gpdperfetto__ClockSnapshot__Clock *c = p->clock_snapshot->clocks[j];
        if (c->clock_id >= 64 && c->clock_id < 128 && c->clock_id == ss->clock) {
          ss->incr = c->is_incremental;
          ss->last = c->timestamp;
        }
      }
    if (p->interned_data)
      intern(sq, p->interned_data, i);
    uint32_t clk = p->has_timestamp_clock_id ? p->timestamp_clock_id : ss->clock;
    uint64_t ts = p->timestamp;
    if (p->has_timestamp && clk == ss->clock && ss->incr)
      ts = ss->last += p->timestamp;
    if (p->track_descriptor) {
      Gpdperfetto__TrackDescriptor *d = p->track_descriptor;
      if (ntrk == MAXT || find(d->uuid)) {
        printf("bad: track %llu declared twice\n", (unsigned long long)d->uuid);
        return 1;
      }
      trk_t *k = &trk[ntrk++];
      k->uuid = d->uuid;
      const char *nm = d->name ? d->name
                       : d->thread && d->thread->thread_name ? d->thread->thread_name
                       : d->process && d->process->process_name ? d->process->process_name
                                                                 : "?";
      snprintf(k->name, sizeof k->name, "%s", nm);
      printf("track %s\n", k->name);
      continue;
    }
    Gpdperfetto__TrackEvent *e = p->track_event;
    if (e == NULL)
      continue;
    if (ts < last_ts) {
      printf("bad: packet %zu goes back in time\n", i);
      return 1;
    }
    last_ts = ts;
    char evname[4096];
    snprintf(evname, sizeof evname, "%s",
             e->name ? e->name : e->has_name_iid ? resolve(sq, T_EVNAME, e->name_iid, i)->str : "");
    char stack[8192] = "";
    if (e->has_callstack_iid)
      stack_path(sq, e->callstack_iid, i, stack, sizeof stack);
    for (size_t j = 0; j < e->n_debug_annotations; j++)
      if (e->debug_annotations[j]->has_name_iid)
        resolve(sq, T_DANAME, e->debug_annotations[j]->name_iid, i);
    trk_t *k = find(e->has_track_uuid || !ss->has_track ? e->track_uuid : ss->track);
    if (k == NULL) {
      printf("bad: event on undeclared track %llu\n", (unsigned long long)e->track_uuid);
      return 1;
    }
    for (size_t j = 0; j < e->n_flow_ids; j++)
      add(&fstart, &nfs, &capfs, e->flow_ids[j]);
    for (size_t j = 0; j < e->n_terminating_flow_ids; j++)
      add(&fend, &nfe, &capfe, e->terminating_flow_ids[j]);
    for (size_t j = 0; j < e->n_flow_ids_old; j++)
      add(&fstart, &nfs, &capfs, e->flow_ids_old[j]);
    for (size_t j = 0; j < e->n_terminating_flow_ids_old; j++)
      add(&fend, &nfe, &capfe, e->terminating_flow_ids_old[j]);
    switch (e->type) {
    case GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN:
      if (k->depth == 64) {
        printf("bad: slices nested too deep on %s\n", k->name);
        return 1;
      }
      snprintf(k->open[k->depth], sizeof k->open[0], "%.255s", evname);
      k->open_ts[k->depth] = ts;
      snprintf(k->open_blame[k->depth], sizeof k->open_blame[0], "%s", stack);
      k->depth++;
      break;
    case GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_SLICE_END:
      if (k->depth == 0) {
        printf("bad: slice end without a begin on %s\n", k->name);
        return 1;
      }
      k->depth--;
      count(k->name, k->open[k->depth], 0);
      if (!strcmp(k->open[k->depth], "GPU idle"))
        printf("idle %llu %llu %s\n", (unsigned long long)k->open_ts[k->depth],
               (unsigned long long)(ts - k->open_ts[k->depth]), k->open_blame[k->depth]);
      break;
    case GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_INSTANT:
      count(k->name, evname, 1);
      break;
    default:
      printf("bad: event of type %d\n", (int)e->type);
      return 1;
    }
  }
  for (int i = 0; i < ntrk; i++)
    if (trk[i].depth) {
      printf("bad: %d slices left open on %s\n", trk[i].depth, trk[i].name);
      return 1;
    }
  for (int i = 0; i < ncnt; i++)
    printf("%s %s\t%s\t%ld\n", cnt[i].instant ? "instants" : "slices", cnt[i].track, cnt[i].name,
           cnt[i].n);
  size_t linked = 0;
  if (nfs && nfe) {
    qsort(fstart, nfs, sizeof *fstart, u64cmp);
    for (size_t j = 0; j < nfe; j++)
      linked += bsearch(&fend[j], fstart, nfs, sizeof *fstart, u64cmp) != NULL;
  }
  printf("flows %zu\n", linked);
  printf("interned %lu\nresolved %lu\n", n_defined, n_resolved);
  printf("ok\n");
  gpdperfetto__trace__free_unpacked(t, NULL);
  free(buf);
  free(fstart);
  free(fend);
  return 0;
}
