/* xlayout.c - tracks, lanes and time order of a trace's items,
 * walked page by page (xlayout.h).  What crosses a page boundary is
 * kept in structures bounded by the trace's tracks (lane ends), by the
 * slices open at one time (the heap of ends) and by the launches whose
 * activities may still come (the correlation map); a page's rows are
 * held only while it is drawn. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/record.h"

#include "xlayout.h"

int gpd__xlayout_host_op(unsigned op) {
  return op == GPD_OP_SYNC || op == GPD_OP_ALLOC || op == GPD_OP_FREE;
}

int gpd__xlayout_pid(const gpd_xtrace_t *x, uint64_t profile) {
  for (size_t i = 0; i < x->tree.nprocs; i++)
    if (x->tree.procs[i].profile_id == profile)
      return x->tree.procs[i].pid;
  return (int)profile;
}

static int gap_end_push(gpd_xlayout_t *l, gpd_xgapq_t *q);
static int page_item(gpd_xlayout_t *l, gpd_xitem_t *it);
static void gq_order(gpd_xlayout_t *l);
static void gq_drop(gpd_xlayout_t *l);

/* index of track (profile, key, lane) in v, or -1 */
static long trk_find(const gpd_xtrk_t *v, size_t n, uint64_t profile, uint64_t key, unsigned lane) {
  for (size_t i = n; i-- > 0;)
    if (v[i].profile == profile && v[i].key == key && v[i].lane == lane)
      return (long)i;
  return -1;
}

/* index of track (profile, key, lane) in *v, added when new; -ENOMEM */
static long trk_add(gpd_xtrk_t **v, size_t *n, size_t *cap, uint64_t profile, uint64_t key,
                    unsigned lane) {
  long i = trk_find(*v, *n, profile, key, lane);
  if (i >= 0)
    return i;
  if (gpd_xtrace_grow((void **)v, *n, cap, sizeof **v) < 0)
    return -ENOMEM;
  (*v)[*n] = (gpd_xtrk_t){profile, key, lane};
  return (long)(*n)++;
}

/* ------------------------------------------------ the correlation map */

static size_t corr_hash(uint64_t profile, uint64_t corr) {
  uint64_t h = profile * 0x9e3779b97f4a7c15ull ^ corr;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  return (size_t)(h ^ (h >> 32));
}

static gpd_xlref_t *map_slot(gpd_xlref_t *m, size_t cap, uint64_t profile, uint64_t corr) {
  size_t h = corr_hash(profile, corr) & (cap - 1);
  while (m[h].used && !(m[h].la.profile == profile && m[h].la.corr == corr))
    h = (h + 1) & (cap - 1);
  return &m[h];
}

static gpd_xlref_t *map_get(const gpd_xlayout_t *l, uint64_t profile, uint64_t corr) {
  if (l->mapcap == 0)
    return NULL;
  gpd_xlref_t *r = map_slot(l->map, l->mapcap, profile, corr);
  return r->used ? r : NULL;
}

/* The map rebuilt for page l->page: launches whose last activity was two
 * pages ago or more are dropped, room is made for `more` launches.  0 or
 * -ENOMEM. */
static int map_rebuild(gpd_xlayout_t *l, size_t more) {
  size_t keep = 0, cap = 1024;
  for (size_t i = 0; i < l->mapcap; i++)
    keep += l->map[i].used && !(l->map[i].seen && l->map[i].seen + 1 < l->page);
  while (cap < 2 * (keep + more + 1))
    cap *= 2;
  gpd_xlref_t *m = calloc(cap, sizeof *m);
  if (m == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < l->mapcap; i++) {
    const gpd_xlref_t *r = &l->map[i];
    if (r->used && !(r->seen && r->seen + 1 < l->page))
      *map_slot(m, cap, r->la.profile, r->la.corr) = *r;
  }
  free(l->map);
  l->map = m;
  l->mapcap = cap;
  l->mapn = keep;
  return 0;
}

/* ---------------------------------------------------------- the page */

/* room for n events of per-event layout */
static int page_room(gpd_xlayout_t *l, size_t n) {
  if (n <= l->cap)
    return 0;
  uint8_t *lane = realloc(l->lane, n);
  if (lane)
    l->lane = lane;
  size_t *trk = realloc(l->trk, n * sizeof *trk);
  if (trk)
    l->trk = trk;
  const gpd_xlref_t **ref = realloc(l->ref, n * sizeof *ref);
  if (ref)
    l->ref = ref;
  if (lane == NULL || trk == NULL || ref == NULL)
    return -ENOMEM;
  l->cap = n;
  return 0;
}

/* Keep the window's launches and events of page p (in place; all rows
 * when no window is set), indexing the launches and resolving each
 * event's launch.  0 or -ENOMEM. */
static int page_keep(gpd_xlayout_t *l, gpd_xtrace_t *p) {
  int err = map_rebuild(l, p->nla);
  size_t w = 0;
  if (err == 0)
    err = page_room(l, p->nev);
  if (err < 0)
    return err;
  l->la0 = l->nkept;
  for (size_t i = 0; i < p->nla; i++) {
    const gpd_xlaunch_t *a = &p->la[i];
    int keep = l->to == 0 || (a->ts >= l->from && a->ts <= l->to);
    gpd_xlref_t *r = map_slot(l->map, l->mapcap, a->profile, a->corr);
    if (!r->used) {
      *r = (gpd_xlref_t){.la = *a, .idx = keep ? l->nkept + (long)w : -1, .used = 1};
      l->mapn++;
    }
    if (keep && w != i)
      p->la[w] = *a;
    w += keep;
  }
  p->nla = w;
  l->nkept += (long)w;
  w = 0;
  for (size_t i = 0; i < p->nev; i++) {
    const gpd_xev_t *e = &p->ev[i];
    gpd_xlref_t *r = map_get(l, e->profile, e->corr);
    if (r) /* matched, also when left out: then forgotten as the others */
      r->seen = l->page;
    if (l->to) {
      uint64_t t = r ? r->la.ts : e->start;
      if (t < l->from || t > l->to)
        continue;
    }
    l->ref[w] = r && r->idx >= 0 ? r : NULL;
    if (w != i)
      p->ev[w] = *e;
    w++;
  }
  p->nev = w;
  return 0;
}

/* The lane and track of each event of the page so that slices nest: on
 * its launching thread (a host-timed operation whose launch is known),
 * else the first lane of its stream whose last slice ended by the
 * event's start (16 at most: a 17th overlapping operation shares the
 * last lane); lanes and threads seen first are new tracks. */
static int page_lanes(gpd_xlayout_t *l) {
  const gpd_xtrace_t *x = &l->pg;
  for (size_t i = 0; i < x->nev; i++) {
    const gpd_xev_t *e = &x->ev[i];
    l->lane[i] = 0;
    if (gpd__xlayout_host_op(e->op) && l->ref[i]) {
      uint32_t tid = l->ref[i]->la.tid;
      if (l->lth >= l->nth || l->th[l->lth].profile != e->profile || l->th[l->lth].key != tid) {
        long t = trk_find(l->th, l->nth, e->profile, tid, 0);
        if (t < 0) { /* a launch kept is a thread of the scan's */
          l->grew = 1;
          return 0;
        }
        l->lth = (size_t)t;
      }
      l->trk[i] = l->lth;
      continue;
    }
    uint64_t key = ((uint64_t)e->device << 32) | e->stream;
    size_t s = l->lss;
    if (!(s < l->ns && l->ss[s].profile == e->profile && l->ss[s].key == key)) {
      size_t before = l->ns;
      long r = trk_add(&l->ss, &l->ns, &l->css, e->profile, key, 0);
      if (r < 0)
        return -ENOMEM;
      s = (size_t)r;
      if (l->ns > before) {
        if (gpd_xtrace_grow((void **)&l->end, s, &l->cend, sizeof *l->end) < 0 ||
            gpd_xtrace_grow((void **)&l->sti, s, &l->csti, sizeof *l->sti) < 0 ||
            gpd_xtrace_grow((void **)&l->nl, s, &l->cnl, sizeof *l->nl) < 0)
          return -ENOMEM;
        memset(l->end[s], 0, sizeof l->end[s]);
        l->nl[s] = 0;
      }
      l->lss = s;
    }
    unsigned k = 0;
    while (k < l->nl[s] && l->end[s][k] > e->start)
      k++;
    if (k == 16)
      k = 15;
    if (k == l->nl[s]) {
      size_t before = l->nst;
      long t = trk_add(&l->st, &l->nst, &l->cst, e->profile, key, k);
      if (t < 0)
        return -ENOMEM;
      l->grew |= l->writing && l->nst > before;
      l->sti[s][k] = (size_t)t;
      l->nl[s]++;
    }
    if (e->end > l->end[s][k])
      l->end[s][k] = e->end;
    l->lane[i] = (uint8_t)k;
    l->trk[i] = l->sti[s][k];
  }
  return 0;
}

static int gap_cmp(const void *a, const void *b) {
  const gpd_xgap_t *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* the walk: an interval of a process the scan found none of: l->grew */
static int gapped_add(gpd_xlayout_t *l, uint64_t profile) {
  if (!gpd__xlayout_has_gap(l, profile))
    l->grew = 1;
  return 0;
}

/* the scan's threads: of launches in their order, then of CPU samples */
static int page_threads(gpd_xlayout_t *l) {
  for (size_t i = 0; i < l->pg.nla; i++)
    if (trk_add(&l->th, &l->nth, &l->cth, l->pg.la[i].profile, l->pg.la[i].tid, 0) < 0)
      return -ENOMEM;
  for (size_t i = 0; i < l->pg.ncs; i++)
    if (trk_add(&l->ths, &l->nths, &l->cths, l->pg.cs[i].profile, l->pg.cs[i].tid, 0) < 0)
      return -ENOMEM;
  return 0;
}

/* the walk: every thread of the page is one the scan found (else
 * l->grew) */
static void page_threads_known(gpd_xlayout_t *l) {
  for (size_t i = 0; i < l->pg.nla + l->pg.ncs && !l->grew; i++) {
    uint64_t profile = i < l->pg.nla ? l->pg.la[i].profile : l->pg.cs[i - l->pg.nla].profile;
    uint32_t tid = i < l->pg.nla ? l->pg.la[i].tid : l->pg.cs[i - l->pg.nla].tid;
    if (l->lth < l->nth && l->th[l->lth].profile == profile && l->th[l->lth].key == tid)
      continue;
    long t = trk_find(l->th, l->nth, profile, tid, 0);
    if (t < 0)
      l->grew = 1;
    else
      l->lth = (size_t)t;
  }
}

/* Start drawing page p (NULL: after the last page, to end the slices
 * still open) whose later pages start after hi.  0 or -errno. */
static int page_begin(gpd_xlayout_t *l, gpd_xtrace_t *p, uint64_t hi) {
  free(l->gaps);
  l->gaps = NULL;
  l->ngaps = l->iev = l->ila = l->ics = l->igap = 0;
  memset(&l->pg, 0, sizeof l->pg);
  l->pg.tree = l->x->tree;
  l->hi = hi;
  l->page++;
  if (p == NULL)
    return 0;
  size_t rows = p->nev + p->nla + p->ncs;
  if (rows > l->max_rows)
    l->max_rows = rows;
  int err = page_keep(l, p);
  if (err < 0)
    return err;
  l->pg.ev = p->ev;
  l->pg.nev = p->nev;
  l->pg.la = p->la;
  l->pg.nla = p->nla;
  l->pg.cs = p->cs;
  l->pg.ncs = p->ncs;
  if (l->writing)
    page_threads_known(l);
  else if ((err = page_threads(l)) < 0)
    return err;
  if ((err = page_lanes(l)) < 0)
    return err;
  if (!l->writing && (err = gpd__xidle_scan(l)) < 0)
    return err;
  if (l->writing && l->npages > 1) {
    gq_drop(l); /* the intervals the page before drew whole */
    if ((err = gpd__xidle_begin(l)) < 0)
      return err;
    gq_order(l);
    for (size_t i = 0; i < l->ngq && err == 0; i++) /* ends of intervals begun before */
      if (l->gq[i].begun && l->gq[i].known && !l->gq[i].endq)
        err = gap_end_push(l, &l->gq[i]);
    if (err < 0)
      return err;
  }
  if (l->writing && l->npages == 1 && l->pg.nev) { /* one page: its intervals in time order */
    gpd_xblame_t *bl = NULL;
    size_t nbl = 0;
    double idle, span;
    err = gpd_idle_xtrace(&l->pg, &l->gaps, &l->ngaps, &bl, &nbl, &idle, &span);
    free(bl);
    if (err < 0)
      return err;
    if (l->ngaps)
      qsort(l->gaps, l->ngaps, sizeof *l->gaps, gap_cmp);
    for (size_t i = 0; i < l->ngaps && err == 0; i++)
      err = gapped_add(l, l->gaps[i].profile);
  }
  l->npages += !l->writing;
  if (!l->writing) {
    uint64_t t = gpd_xtrace_t0(&l->pg);
    if ((l->pg.nev || l->pg.nla || l->pg.ncs) && (l->t0 == 0 || t < l->t0))
      l->t0 = t;
    l->nev += l->pg.nev;
    l->nla += l->pg.nla;
    l->ncs += l->pg.ncs;
  }
  return err;
}

/* ------------------------------------------------------ the merge */

static int heap_push(gpd_xlayout_t *l, gpd_xitem_t it);

/* the end of interval q (more than one page) into the heap */
static int gap_end_push(gpd_xlayout_t *l, gpd_xgapq_t *q) {
  q->endq = 1;
  return heap_push(l, (gpd_xitem_t){.ts = q->g.end > q->g.start ? q->g.end : q->g.start, .kind = GPD_XIT_GAP_E,
                                    .i = (size_t)q->id, .ord = q->ord, .profile = q->g.profile});
}

/* heap order: time, kind, then ordinal (the order the slices began in) */
static int heap_less(const gpd_xitem_t *a, const gpd_xitem_t *b) {
  if (a->ts != b->ts)
    return a->ts < b->ts;
  if (a->kind != b->kind)
    return a->kind < b->kind;
  return a->ord < b->ord;
}

static int heap_push(gpd_xlayout_t *l, gpd_xitem_t it) {
  if (gpd_xtrace_grow((void **)&l->heap, l->nheap, &l->capheap, sizeof *l->heap) < 0)
    return -ENOMEM;
  size_t k = l->nheap++;
  while (k > 0 && heap_less(&it, &l->heap[(k - 1) / 2])) {
    l->heap[k] = l->heap[(k - 1) / 2];
    k = (k - 1) / 2;
  }
  l->heap[k] = it;
  if (l->mapn + l->nheap > l->max_pending)
    l->max_pending = l->mapn + l->nheap;
  return 0;
}

static void heap_pop(gpd_xlayout_t *l) {
  gpd_xitem_t last = l->heap[--l->nheap];
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
}

/* The page's next item in time order, ends of earlier pages' slices
 * included up to l->hi.  1 and *it set, 0 when the page is drawn,
 * -ENOMEM. */
static int page_next(gpd_xlayout_t *l, gpd_xitem_t *it) {
  int r;
  while ((r = page_item(l, it)) == 2) /* an interval kept its place */
    ;
  return r;
}

/* l->gq's interval of id (ids grow along l->gq) */
static gpd_xgapq_t *gq_find(gpd_xlayout_t *l, uint64_t id) {
  size_t lo = 0, hi = l->ngq;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (l->gq[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < l->ngq && l->gq[lo].id == id ? &l->gq[lo] : NULL;
}

static int gq_start_cmp(const void *a, const void *b) {
  const gpd_xgapq_t *x = a, *y = b;
  return x->g.start < y->g.start ? -1 : x->g.start > y->g.start;
}

/* the intervals not begun (those the page found) sorted by start, with
 * ids in that order after the others': they are begun from l->gqb on */
static void gq_order(gpd_xlayout_t *l) {
  l->gqb = 0;
  while (l->gqb < l->ngq && l->gq[l->gqb].begun)
    l->gqb++;
  if (l->ngq - l->gqb > 1)
    qsort(l->gq + l->gqb, l->ngq - l->gqb, sizeof *l->gq, gq_start_cmp);
  for (size_t i = l->gqb; i < l->ngq; i++)
    l->gq[i].id = ++l->gqid;
}

static int marks_flush(gpd_xlayout_t *l, int (*draw)(void *arg, gpd_xlayout_t *l, const gpd_xitem_t *it),
                       void *arg);

/* Places kept at once at most (a temporary file each): beyond, the
 * earliest kept is blamed with the rows at hand. */
#define MARKS_MAX 64

/* what follows goes to a temporary file, after the place of interval
 * id's begin or end (drawn when its blame is known).  0 or -errno. */
static int divert(gpd_xlayout_t *l, uint64_t id, int end) {
  int err = 0;
  while (l->nmk >= MARKS_MAX && err == 0) {
    gpd_xgapq_t *q = NULL;
    size_t i = 0;
    for (; i < l->nmk; i++) /* the earliest with its end known (not of a process idle still) */
      if ((q = gq_find(l, l->mk[i].id)) != NULL && q->known && !q->blamed)
        break;
    if (i == l->nmk)
      break;
    if ((err = gpd__xidle_force(l, q)) == 0)
      err = marks_flush(l, l->draw, l->arg);
  }
  if (err < 0)
    return err;
  if (gpd_xtrace_grow((void **)&l->mk, l->nmk, &l->cmk, sizeof *l->mk) < 0)
    return -ENOMEM;
  FILE *seg = tmpfile();
  if (seg == NULL)
    return -errno;
  l->mk[l->nmk++] = (gpd_xmark_t){id, (uint8_t)end, seg};
  *l->fp = seg;
  return 0;
}

/* drop the intervals drawn whole */
static void gq_drop(gpd_xlayout_t *l) {
  size_t w = 0;
  for (size_t i = 0; i < l->ngq; i++) {
    const gpd_xgapq_t *q = &l->gq[i];
    int marked = 0;
    for (size_t k = 0; k < l->nmk && !marked; k++)
      marked = l->mk[k].id == q->id;
    if (!(q->blamed && q->ended && !marked))
      l->gq[w++] = *q;
  }
  l->ngq = w;
  l->gqb = 0;
  while (l->gqb < l->ngq && l->gq[l->gqb].begun)
    l->gqb++;
}

/* Draw at their places the begins and ends of the intervals whose blame
 * is now known: each into the output before its place (the file, or the
 * temporary file of the place before), followed by what was drawn after
 * it.  0 or -errno. */
static int marks_flush(gpd_xlayout_t *l, int (*draw)(void *arg, gpd_xlayout_t *l, const gpd_xitem_t *it),
                       void *arg) {
  int err = 0;
  size_t i = 0;
  while (i < l->nmk && err == 0) {
    gpd_xmark_t m = l->mk[i];
    const gpd_xgapq_t *q = gq_find(l, m.id);
    if (q == NULL || !q->blamed) {
      i++;
      continue;
    }
    FILE *to = i == 0 ? l->real : l->mk[i - 1].seg;
    *l->fp = to;
    l->gapnow = q->g;
    gpd_xitem_t it = {.ts = m.end && q->g.end > q->g.start ? q->g.end : q->g.start,
                      .kind = m.end ? GPD_XIT_GAP_E : GPD_XIT_GAP_B, .i = SIZE_MAX, .ord = q->ord,
                      .profile = q->g.profile};
    err = draw(arg, l, &it);
    char buf[65536];
    size_t n;
    rewind(m.seg);
    while (err == 0 && (n = fread(buf, 1, sizeof buf, m.seg)) > 0)
      if (fwrite(buf, 1, n, to) != n)
        err = -EIO;
    if (err == 0 && ferror(m.seg))
      err = -EIO;
    fclose(m.seg);
    memmove(l->mk + i, l->mk + i + 1, (l->nmk - i - 1) * sizeof *l->mk);
    l->nmk--;
  }
  if (l->fp)
    *l->fp = l->nmk ? l->mk[l->nmk - 1].seg : l->real;
  gq_drop(l);
  return err;
}

/* the places kept, dropped (a walk that failed); the writer's stream the file again */
static void marks_drop(gpd_xlayout_t *l) {
  for (size_t i = 0; i < l->nmk; i++)
    fclose(l->mk[i].seg);
  l->nmk = 0;
  if (l->fp)
    *l->fp = l->real;
}

/* the next item (1), 2 when an interval's begin or end kept its place
 * in the output instead (nothing to draw), 0 at the page's end,
 * -errno */
static int page_item(gpd_xlayout_t *l, gpd_xitem_t *it) {
  const gpd_xtrace_t *x = &l->pg;
  /* candidates in the order they win a tie: ends, idle begins, GPU
   * operations, launches, CPU samples */
  gpd_xitem_t c[5];
  int nc = 0;
  if (l->nheap && l->heap[0].ts <= l->hi)
    c[nc++] = l->heap[0];
  if (l->igap < l->ngaps)
    c[nc++] = (gpd_xitem_t){.ts = l->gaps[l->igap].start, .kind = GPD_XIT_GAP_B, .i = l->igap};
  size_t q0 = SIZE_MAX; /* more than one page: the earliest interval not begun */
  if (l->gqb < l->ngq && l->gq[l->gqb].g.start <= l->hi)
    q0 = l->gqb;
  if (q0 != SIZE_MAX)
    c[nc++] = (gpd_xitem_t){.ts = l->gq[q0].g.start, .kind = GPD_XIT_GAP_B, .i = SIZE_MAX};
  if (l->iev < x->nev)
    c[nc++] = (gpd_xitem_t){.ts = x->ev[l->iev].start, .kind = GPD_XIT_EV_B, .i = l->iev};
  if (l->ila < x->nla)
    c[nc++] = (gpd_xitem_t){.ts = x->la[l->ila].ts, .kind = GPD_XIT_LAUNCH, .i = l->ila};
  if (l->ics < x->ncs)
    c[nc++] = (gpd_xitem_t){.ts = x->cs[l->ics].ts, .kind = GPD_XIT_SAMPLE, .i = l->ics};
  if (nc == 0)
    return 0;
  int b = 0;
  for (int k = 1; k < nc; k++)
    if (c[k].ts < c[b].ts)
      b = k;
  *it = c[b];
  switch (it->kind) {
  case GPD_XIT_EV_E:
    heap_pop(l);
    return 1;
  case GPD_XIT_GAP_E: {
    heap_pop(l);
    gpd_xgapq_t *q = it->i == SIZE_MAX ? NULL : l->npages > 1 ? gq_find(l, it->i) : NULL;
    if (q == NULL)
      return 1;
    q->ended = 1;
    if (!q->blamed) {
      int err = divert(l, q->id, 1);
      return err < 0 ? err : 2;
    }
    l->gapnow = q->g;
    it->i = SIZE_MAX;
    return 1;
  }
  case GPD_XIT_GAP_B: {
    if (it->i == SIZE_MAX) { /* more than one page */
      gpd_xgapq_t *q = &l->gq[q0];
      q->begun = 1;
      l->gqb++;
      q->ord = l->gapord++;
      it->ord = q->ord;
      it->profile = q->g.profile;
      if (q->known && gap_end_push(l, q) < 0)
        return -ENOMEM;
      if (!q->blamed) {
        int err = divert(l, q->id, 0);
        return err < 0 ? err : 2;
      }
      l->gapnow = q->g;
      return 1;
    }
    const gpd_xgap_t *g = &l->gaps[l->igap++];
    it->ord = l->gapord + it->i;
    it->profile = g->profile;
    gpd_xitem_t e = *it;
    e.kind = GPD_XIT_GAP_E;
    e.ts = g->end > g->start ? g->end : g->start;
    return heap_push(l, e) ? -ENOMEM : 1;
  }
  case GPD_XIT_EV_B: {
    const gpd_xev_t *e = &x->ev[l->iev++];
    const gpd_xlref_t *r = l->ref[it->i];
    it->ord = l->evord + it->i;
    it->profile = e->profile;
    it->thread = gpd__xlayout_host_op(e->op) && r;
    it->trk = l->trk[it->i];
    it->la = r ? r->idx : -1;
    it->lnode = r ? r->la.node : 0;
    gpd_xitem_t end = *it;
    end.kind = GPD_XIT_EV_E;
    end.ts = e->end > e->start ? e->end : e->start;
    return heap_push(l, end) ? -ENOMEM : 1;
  }
  case GPD_XIT_LAUNCH:
    it->la = l->la0 + (long)l->ila++;
    return 1;
  default:
    l->ics++;
    return 1;
  }
}

/* ------------------------------------------------------ the passes */

void gpd__xlayout_open(gpd_xlayout_t *l, const gpd_xtrace_t *x, uint64_t from, uint64_t to) {
  memset(l, 0, sizeof *l);
  l->x = x;
  l->from = from;
  l->to = to;
}

/* back to before the first page: what crosses pages is emptied */
static void layout_rewind(gpd_xlayout_t *l) {
  free(l->map);
  l->map = NULL;
  l->mapn = l->mapcap = 0;
  l->ns = l->lss = l->lth = 0;
  l->nkept = l->la0 = 0;
  l->evord = l->gapord = 0;
  l->page = 0;
  l->nheap = 0;
  l->grew = 0;
  gpd__xidle_rewind(l);
}

void gpd__xlayout_free(gpd_xlayout_t *l) {
  layout_rewind(l);
  gpd__xidle_free(l);
  free(l->th);
  free(l->st);
  free(l->ths);
  free(l->gapped);
  free(l->ss);
  free(l->end);
  free(l->sti);
  free(l->nl);
  free(l->heap);
  free(l->mk);
  free(l->lane);
  free(l->trk);
  free(l->ref);
  free(l->gaps);
  memset(l, 0, sizeof *l);
}

int gpd__xlayout_scan(gpd_xlayout_t *l, gpd_xpages_t *src) {
  int err = src->rewind(src), r;
  if (err < 0)
    return err;
  l->writing = 0;
  layout_rewind(l);
  l->nth = l->nst = l->nths = l->ngapped = l->nthf = l->npages = 0;
  l->t0 = 0;
  l->nev = l->nla = l->ncs = 0;
  l->max_rows = l->max_pending = l->max_idle = 0;
  gpd_xtrace_t *p;
  uint64_t hi;
  while ((r = src->next(src, &p, &hi)) > 0)
    if ((err = page_begin(l, p, hi)) < 0)
      return err;
  if (r < 0)
    return r;
  for (size_t i = 0; i < l->nths; i++)
    if (trk_add(&l->th, &l->nth, &l->cth, l->ths[i].profile, l->ths[i].key, 0) < 0)
      return -ENOMEM;
  l->missing = 0;
  for (size_t i = 0; i < l->mapcap; i++)
    l->missing += l->map[i].used && l->map[i].idx >= 0 && l->map[i].seen == 0;
  return 0;
}

static int walk_pages(gpd_xlayout_t *l, gpd_xpages_t *src,
                      int (*draw)(void *arg, gpd_xlayout_t *l, const gpd_xitem_t *it), void *arg) {
  int err = src->rewind(src), r = 1;
  if (err < 0)
    return err;
  l->writing = 1;
  layout_rewind(l);
  while (r > 0) {
    gpd_xtrace_t *p = NULL;
    uint64_t hi = UINT64_MAX;
    if ((r = src->next(src, &p, &hi)) < 0)
      return r;
    if ((err = page_begin(l, r ? p : NULL, r ? hi : UINT64_MAX)) < 0)
      return err;
    if (l->grew)
      return -EAGAIN;
    /* more than one page: the blame the page's rows complete (before its
     * items, so that few intervals wait while it is drawn), and their
     * places filled */
    if (l->npages > 1 && r > 0 && ((err = gpd__xidle_end(l, 0)) < 0 || (err = marks_flush(l, draw, arg)) < 0))
      return err;
    gpd_xitem_t it;
    int n;
    while ((n = page_next(l, &it)) > 0)
      if ((err = draw(arg, l, &it)) < 0)
        return err;
    if (n < 0)
      return n;
    l->evord += l->pg.nev;
    l->gapord += l->ngaps;
    if (l->npages > 1 && r == 0 && ((err = gpd__xidle_end(l, 1)) < 0 || (err = marks_flush(l, draw, arg)) < 0))
      return err;
  }
  /* every interval drawn (else the rows changed since the scan) */
  return l->nmk || l->ngq ? -EAGAIN : 0;
}

int gpd__xlayout_walk(gpd_xlayout_t *l, gpd_xpages_t *src,
                      int (*draw)(void *arg, gpd_xlayout_t *l, const gpd_xitem_t *it), void *arg, FILE **fp) {
  l->fp = fp;
  l->real = *fp;
  l->draw = draw;
  l->arg = arg;
  int err = walk_pages(l, src, draw, arg);
  marks_drop(l);
  l->fp = NULL;
  return err;
}

const gpd_xgap_t *gpd__xlayout_gap(const gpd_xlayout_t *l, const gpd_xitem_t *it) {
  return it->i == SIZE_MAX ? &l->gapnow : &l->gaps[it->i];
}

int gpd__xlayout_has_gap(const gpd_xlayout_t *l, uint64_t profile) {
  for (size_t i = 0; i < l->ngapped; i++)
    if (l->gapped[i] == profile)
      return 1;
  return 0;
}

static int one_next(gpd_xpages_t *p, gpd_xtrace_t **page, uint64_t *hi) {
  gpd_xpages_one_t *o = (gpd_xpages_one_t *)p;
  if (o->done)
    return 0;
  o->done = 1;
  *page = o->x;
  *hi = UINT64_MAX;
  return 1;
}

static int one_rewind(gpd_xpages_t *p) {
  ((gpd_xpages_one_t *)p)->done = 0;
  return 0;
}

void gpd__xlayout_pages_one(gpd_xpages_one_t *p, gpd_xtrace_t *x) {
  p->src = (gpd_xpages_t){one_next, one_rewind};
  p->x = x;
  p->done = 0;
}

int gpd__xlayout_whole(gpd_xlayout_t *l, gpd_xpages_one_t *one, const gpd_xtrace_t *x) {
  gpd__xlayout_open(l, x, 0, 0);
  gpd__xlayout_pages_one(one, (gpd_xtrace_t *)x); /* not modified: no window */
  return gpd__xlayout_scan(l, &one->src);
}
