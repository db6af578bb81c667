/* trace-layout.c - tracks, lanes and time order of a trace's items
 * (trace-layout.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/record.h"

#include "trace-layout.h"

int gpd__xtrace_host_op(unsigned op) {
  return op == GPD_OP_SYNC || op == GPD_OP_ALLOC || op == GPD_OP_FREE;
}

int gpd__xtrace_pid(const gpd_xtrace_t *x, uint64_t profile) {
  for (size_t i = 0; i < x->tree.nprocs; i++)
    if (x->tree.procs[i].profile_id == profile)
      return x->tree.procs[i].pid;
  return (int)profile;
}

long gpd__xlayout_launch(const gpd_xlayout_t *l, size_t i) {
  return gpd__xcorrix_get(&l->ix, l->x, l->x->ev[i].profile, l->x->ev[i].corr);
}

int gpd__xlayout_on_thread(const gpd_xlayout_t *l, size_t i) {
  return gpd__xtrace_host_op(l->x->ev[i].op) && gpd__xlayout_launch(l, i) >= 0;
}

size_t gpd__xlayout_stream(const gpd_xlayout_t *l, size_t i, size_t *hint) {
  const gpd_xev_t *e = &l->x->ev[i];
  uint64_t key = ((uint64_t)e->device << 32) | e->stream;
  size_t k = *hint;
  if (k < l->nst && l->st[k].profile == e->profile && l->st[k].key == key && l->st[k].lane == l->lane[i])
    return k;
  for (k = 0; k < l->nst; k++)
    if (l->st[k].profile == e->profile && l->st[k].key == key && l->st[k].lane == l->lane[i])
      break;
  *hint = k;
  return k;
}

/* index of track (profile, key, lane) in *v, added when new; -ENOMEM */
static long trk_add(gpd_xtrk_t **v, size_t *n, size_t *cap, uint64_t profile, uint64_t key,
                    unsigned lane) {
  for (size_t i = *n; i-- > 0;)
    if ((*v)[i].profile == profile && (*v)[i].key == key && (*v)[i].lane == lane)
      return (long)i;
  if (gpd_xgrow((void **)v, *n, cap, sizeof **v) < 0)
    return -ENOMEM;
  (*v)[*n] = (gpd_xtrk_t){profile, key, lane};
  return (long)(*n)++;
}

/* The lane of each event on its stream so that slices nest: the first
 * lane whose last slice ended by the event's start (16 at most: a 17th
 * overlapping operation shares the last lane); the stream lanes found on
 * the way are the stream tracks. */
static int assign_lanes(gpd_xlayout_t *l) {
  const gpd_xtrace_t *x = l->x;
  uint64_t (*end)[16] = NULL; /* per stream (lane 0 entries of l->st): lane ends */
  unsigned *nl = NULL;
  size_t ns = 0, cs = 0, cst = 0, ce = 0, cn = 0;
  gpd_xtrk_t *ss = NULL;      /* distinct streams */
  int err = 0;
  size_t last = SIZE_MAX;
  for (size_t i = 0; i < x->nev && err == 0; i++) {
    const gpd_xev_t *e = &x->ev[i];
    l->lane[i] = 0;
    if (gpd__xlayout_on_thread(l, i))
      continue;
    uint64_t key = ((uint64_t)e->device << 32) | e->stream;
    size_t s;
    if (last != SIZE_MAX && ss[last].profile == e->profile && ss[last].key == key) {
      s = last;
    } else {
      size_t before = ns;
      long r = trk_add(&ss, &ns, &cs, e->profile, key, 0);
      if (r < 0) {
        err = -ENOMEM;
        break;
      }
      s = (size_t)r;
      if (ns > before) {
        if (gpd_xgrow((void **)&end, s, &ce, sizeof *end) < 0 ||
            gpd_xgrow((void **)&nl, s, &cn, sizeof *nl) < 0) {
          err = -ENOMEM;
          break;
        }
        memset(end[s], 0, sizeof end[s]);
        nl[s] = 0;
      }
      last = s;
    }
    unsigned k = 0;
    while (k < nl[s] && end[s][k] > e->start)
      k++;
    if (k == 16)
      k = 15;
    if (k == nl[s]) {
      nl[s]++;
      if (trk_add(&l->st, &l->nst, &cst, e->profile, key, k) < 0) {
        err = -ENOMEM;
        break;
      }
    }
    if (e->end > end[s][k])
      end[s][k] = e->end;
    l->lane[i] = (uint8_t)k;
  }
  free(end);
  free(nl);
  free(ss);
  return err;
}

static int gap_cmp(const void *a, const void *b) {
  const gpd_xgap_t *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

int gpd__xlayout_init(gpd_xlayout_t *l, const gpd_xtrace_t *x) {
  memset(l, 0, sizeof *l);
  l->x = x;
  gpd_xblame_t *bl = NULL;
  size_t nbl = 0, cth = 0;
  double idle, span;
  int err = gpd__xcorrix_build(&l->ix, x);
  if (err == 0 && (l->lane = malloc(x->nev + 1)) == NULL)
    err = -ENOMEM;
  if (err == 0)
    err = assign_lanes(l);
  if (err == 0)
    err = gpd_xtrace_idle(x, &l->gaps, &l->ngaps, &bl, &nbl, &idle, &span);
  free(bl);
  if (err < 0)
    return err;
  if (l->ngaps)
    qsort(l->gaps, l->ngaps, sizeof *l->gaps, gap_cmp);
  for (size_t i = 0; i < x->nla; i++)
    if (trk_add(&l->th, &l->nth, &cth, x->la[i].profile, x->la[i].tid, 0) < 0)
      return -ENOMEM;
  for (size_t i = 0; i < x->ncs; i++)
    if (trk_add(&l->th, &l->nth, &cth, x->cs[i].profile, x->cs[i].tid, 0) < 0)
      return -ENOMEM;
  return 0;
}

void gpd__xlayout_free(gpd_xlayout_t *l) {
  free(l->ix.slot);
  free(l->lane);
  free(l->gaps);
  free(l->th);
  free(l->st);
  free(l->heap);
  memset(l, 0, sizeof *l);
}

int gpd__xlayout_has_gap(const gpd_xlayout_t *l, uint64_t profile) {
  for (size_t i = 0; i < l->ngaps; i++)
    if (l->gaps[i].profile == profile)
      return 1;
  return 0;
}

/* heap order: time, then index (the order the slices began in) */
static int heap_less(const gpd_xitem_t *a, const gpd_xitem_t *b) {
  if (a->ts != b->ts)
    return a->ts < b->ts;
  if (a->kind != b->kind)
    return a->kind < b->kind;
  return a->i < b->i;
}

static int heap_push(gpd_xlayout_t *l, gpd_xitem_t it) {
  if (gpd_xgrow((void **)&l->heap, l->nheap, &l->capheap, sizeof *l->heap) < 0)
    return -ENOMEM;
  size_t k = l->nheap++;
  while (k > 0 && heap_less(&it, &l->heap[(k - 1) / 2])) {
    l->heap[k] = l->heap[(k - 1) / 2];
    k = (k - 1) / 2;
  }
  l->heap[k] = it;
  return 0;
}

static gpd_xitem_t heap_pop(gpd_xlayout_t *l) {
  gpd_xitem_t top = l->heap[0], last = l->heap[--l->nheap];
  size_t k = 0, n = l->nheap;
  for (;;) {
    size_t c = 2 * k + 1;
    if (c >= n)
      break;
    if (c + 1 < n && heap_less(&l->heap[c + 1], &l->heap[c]))
      c++;
    if (!heap_less(&l->heap[c], &last))
      break;
    l->heap[k] = l->heap[c];
    k = c;
  }
  if (n)
    l->heap[k] = last;
  return top;
}

int gpd__xlayout_next(gpd_xlayout_t *l, gpd_xitem_t *it) {
  const gpd_xtrace_t *x = l->x;
  /* candidates in the order they win a tie: ends, idle begins, GPU
   * operations, launches, CPU samples */
  gpd_xitem_t c[5];
  int nc = 0;
  if (l->nheap)
    c[nc++] = l->heap[0];
  if (l->igap < l->ngaps)
    c[nc++] = (gpd_xitem_t){l->gaps[l->igap].start, GPD_XIT_GAP_B, l->igap};
  if (l->iev < x->nev)
    c[nc++] = (gpd_xitem_t){x->ev[l->iev].start, GPD_XIT_EV_B, l->iev};
  if (l->ila < x->nla)
    c[nc++] = (gpd_xitem_t){x->la[l->ila].ts, GPD_XIT_LAUNCH, l->ila};
  if (l->ics < x->ncs)
    c[nc++] = (gpd_xitem_t){x->cs[l->ics].ts, GPD_XIT_SAMPLE, l->ics};
  if (nc == 0)
    return 0;
  int b = 0;
  for (int k = 1; k < nc; k++)
    if (c[k].ts < c[b].ts)
      b = k;
  *it = c[b];
  switch (it->kind) {
  case GPD_XIT_EV_E:
  case GPD_XIT_GAP_E:
    heap_pop(l);
    return 1;
  case GPD_XIT_GAP_B: {
    const gpd_xgap_t *g = &l->gaps[l->igap++];
    return heap_push(l, (gpd_xitem_t){g->end > g->start ? g->end : g->start, GPD_XIT_GAP_E, it->i})
               ? -ENOMEM : 1;
  }
  case GPD_XIT_EV_B: {
    const gpd_xev_t *e = &x->ev[l->iev++];
    return heap_push(l, (gpd_xitem_t){e->end > e->start ? e->end : e->start, GPD_XIT_EV_E, it->i})
               ? -ENOMEM : 1;
  }
  case GPD_XIT_LAUNCH:
    l->ila++;
    return 1;
  default:
    l->ics++;
    return 1;
  }
}
