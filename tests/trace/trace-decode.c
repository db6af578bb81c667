/* trace-decode - decode a `gpuprof trace` Perfetto file with the schema
 * (proto/perfetto_trace.proto, protobuf-c) and print what the tests check:
 *
 *   packets N                      every packet decoded
 *   track NAME                     one line per track descriptor
 *   slices TRACK\tNAME\tCOUNT      completed slices per (track, name)
 *   instants TRACK\tNAME\tCOUNT    instants per (track, name)
 *   flows LINKED                   flow ids both started and terminated
 *   idle START_NS DUR_NS BLAMED    every "GPU idle" slice and its blame
 *   ok                             nesting and order held
 *
 * Exit 1 with "bad: ..." when the file is not a well-formed trace (a
 * packet that does not decode, an end without a begin, a slice left open,
 * time going backwards, an event on an undeclared track).
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
    if (!p->has_trusted_packet_sequence_id || p->trusted_packet_sequence_id == 0) {
      printf("bad: packet %zu has no sequence id\n", i);
      return 1;
    }
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
    if (p->timestamp < last_ts) {
      printf("bad: packet %zu goes back in time\n", i);
      return 1;
    }
    last_ts = p->timestamp;
    trk_t *k = find(e->track_uuid);
    if (k == NULL) {
      printf("bad: event on undeclared track %llu\n", (unsigned long long)e->track_uuid);
      return 1;
    }
    for (size_t j = 0; j < e->n_flow_ids; j++)
      add(&fstart, &nfs, &capfs, e->flow_ids[j]);
    for (size_t j = 0; j < e->n_terminating_flow_ids; j++)
      add(&fend, &nfe, &capfe, e->terminating_flow_ids[j]);
    switch (e->type) {
    case GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN:
      if (k->depth == 64) {
        printf("bad: slices nested too deep on %s\n", k->name);
        return 1;
      }
      snprintf(k->open[k->depth], sizeof k->open[0], "%s", e->name ? e->name : "");
      k->open_ts[k->depth] = p->timestamp;
      k->open_blame[k->depth][0] = 0;
      for (size_t j = 0; j < e->n_debug_annotations; j++)
        if (e->debug_annotations[j]->name && !strcmp(e->debug_annotations[j]->name, "blamed on") &&
            e->debug_annotations[j]->string_value)
          snprintf(k->open_blame[k->depth], sizeof k->open_blame[0], "%s",
                   e->debug_annotations[j]->string_value);
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
               (unsigned long long)(p->timestamp - k->open_ts[k->depth]), k->open_blame[k->depth]);
      break;
    case GPDPERFETTO__TRACK_EVENT__TYPE__TYPE_INSTANT:
      count(k->name, e->name ? e->name : "", 1);
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
  printf("ok\n");
  gpdperfetto__trace__free_unpacked(t, NULL);
  free(buf);
  free(fstart);
  free(fend);
  return 0;
}
