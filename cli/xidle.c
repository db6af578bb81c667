/* xidle.c - the idleness blame (idle.c) of a trace walked in more
 * than one page (xlayout.h): the same intervals and blame as over
 * the whole trace, found as the pages come.
 *
 * The scan finds each thread's first and last launch.  The walk keeps
 * each process's busy union (the end of its GPU work so far); an idle
 * interval [a, b) is found at the operation that starts at b.  Its blame
 * (idle.c: the active threads' launches, synchronizations and CPU samples
 * in [a, b), and for each active thread its first launch at or after b)
 * is known once every such thread's launch after b has come: the
 * interval waits until then, and is computed by gpd_idle_xtrace over a
 * small trace that holds just those rows (two zero-length busy
 * operations at a and b around the hole; each active thread's first
 * launch when before a, and its last when none comes after b: what
 * idle.c's activity test and spans read).  Rows are kept only from the
 * end of their process's GPU work so far (or from its earliest interval
 * still waiting) on.  The intervals go to l->gq; the layout draws each
 * at its place (xlayout.c: its place is kept in the output until
 * its blame is known). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/record.h"

#include "xlayout.h"

/* a synchronization with its launch */
typedef struct {
  gpd_xev_t e;
  gpd_xlaunch_t la;
} xsync_t;

/* one process's GPU work so far */
typedef struct {
  uint64_t profile, cur;
  uint64_t last; /* scan: start of its last GPU operation */
  int any;
} xbusy_t;

struct gpd_xidle_s {
  xbusy_t *busy;
  size_t nbusy, cbusy;
  gpd_xlaunch_t *la; /* launches kept, by time */
  size_t nla, cla;
  gpd_xsample_t *cs;
  size_t ncs, ccs;
  xsync_t *sy;
  size_t nsy, csy;
  xbusy_t *lastb;   /* the scan's busy unions: each process's last start */
  size_t nlastb;
  uint64_t *seen;   /* per thread (l->th): time of its latest launch so far */
  size_t n0;        /* intervals found before the page */
  uint8_t *done;    /* gap_blame: per thread, its launch after the interval taken */
  size_t ndone;
};

static int busy_op(unsigned op) { return op == GPD_OP_KERNEL || op == GPD_OP_COPY || op == GPD_OP_MEMSET; }

static xbusy_t *busy_of(gpd_xidle_t *d, uint64_t profile) {
  for (size_t i = 0; i < d->nbusy; i++)
    if (d->busy[i].profile == profile)
      return &d->busy[i];
  if (gpd_xtrace_grow((void **)&d->busy, d->nbusy, &d->cbusy, sizeof *d->busy) < 0)
    return NULL;
  d->busy[d->nbusy] = (xbusy_t){.profile = profile};
  return &d->busy[d->nbusy++];
}

/* Advance the busy unions over the page's operations; fn(arg, gap) for
 * each hole found.  0 or -errno. */
static int busy_walk(gpd_xidle_t *d, const gpd_xtrace_t *pg, int (*fn)(void *, const gpd_xgap_t *), void *arg) {
  int err = 0;
  for (size_t i = 0; i < pg->nev && err == 0; i++) {
    const gpd_xev_t *e = &pg->ev[i];
    if (!busy_op(e->op) || e->end < e->start)
      continue;
    xbusy_t *b = busy_of(d, e->profile);
    if (b == NULL)
      return -ENOMEM;
    if (b->any && e->start > b->cur) {
      gpd_xgap_t g = {.profile = e->profile, .start = b->cur, .end = e->start};
      err = fn(arg, &g);
    }
    if (!b->any || e->end > b->cur)
      b->cur = e->end;
    b->last = e->start;
    b->any = 1;
  }
  return err;
}

static int gap_mark(void *arg, const gpd_xgap_t *g) {
  gpd_xlayout_t *l = arg;
  for (size_t i = 0; i < l->ngapped; i++)
    if (l->gapped[i] == g->profile)
      return 0;
  if (gpd_xtrace_grow((void **)&l->gapped, l->ngapped, &l->cgapped, sizeof *l->gapped) < 0)
    return -ENOMEM;
  l->gapped[l->ngapped++] = g->profile;
  return 0;
}

/* the interval g found (its end is the page's operation): the one begun
 * earlier at its start gets its end, else it is new */
static int gap_found(void *arg, const gpd_xgap_t *g) {
  gpd_xlayout_t *l = arg;
  for (size_t i = 0; i < l->idle->n0; i++) /* begun in an earlier page */
    if (!l->gq[i].known && l->gq[i].g.profile == g->profile && l->gq[i].g.start == g->start) {
      l->gq[i].g.end = g->end;
      l->gq[i].known = 1;
      return 0;
    }
  if (gpd_xtrace_grow((void **)&l->gq, l->ngq, &l->cgq, sizeof *l->gq) < 0)
    return -ENOMEM;
  l->gq[l->ngq++] = (gpd_xgapq_t){.g = *g, .id = ++l->gqid, .known = 1};
  return 0;
}

/* index of thread (profile, tid) in l->th, or -1 */
static long thread_ix(const gpd_xlayout_t *l, uint64_t profile, uint32_t tid) {
  for (size_t i = 0; i < l->nth; i++)
    if (l->th[i].profile == profile && l->th[i].key == tid)
      return (long)i;
  return -1;
}

int gpd__xidle_scan(gpd_xlayout_t *l) {
  if (l->idle == NULL && (l->idle = calloc(1, sizeof *l->idle)) == NULL)
    return -ENOMEM;
  /* each launching thread's first and last launch (l->th: page_threads
   * added the page's threads already) */
  for (size_t i = 0; i < l->pg.nla; i++) {
    const gpd_xlaunch_t *a = &l->pg.la[i];
    long t = thread_ix(l, a->profile, a->tid);
    if (t < 0)
      return -EINVAL;
    while (l->nthf <= (size_t)t) {
      if (gpd_xtrace_grow((void **)&l->thf, l->nthf, &l->cthf, sizeof *l->thf) < 0 ||
          gpd_xtrace_grow((void **)&l->thl, l->nthf, &l->cthl, sizeof *l->thl) < 0)
        return -ENOMEM;
      l->thf[l->nthf] = l->thl[l->nthf] = (gpd_xlaunch_t){0};
      l->nthf++;
    }
    if (l->thf[t].profile == 0)
      l->thf[t] = *a;
    l->thl[t] = *a;
  }
  return busy_walk(l->idle, &l->pg, gap_mark, l);
}

/* the rows of the page that a blame may read */
static int keep_rows(gpd_xlayout_t *l) {
  gpd_xidle_t *d = l->idle;
  const gpd_xtrace_t *pg = &l->pg;
  if (d->seen == NULL && (d->seen = calloc(l->nth + 1, sizeof *d->seen)) == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < pg->nla; i++) {
    if (gpd_xtrace_grow((void **)&d->la, d->nla, &d->cla, sizeof *d->la) < 0)
      return -ENOMEM;
    d->la[d->nla++] = pg->la[i];
    long t = thread_ix(l, pg->la[i].profile, pg->la[i].tid);
    if (t >= 0)
      d->seen[t] = pg->la[i].ts;
  }
  for (size_t i = 0; i < pg->ncs; i++) {
    if (gpd_xtrace_grow((void **)&d->cs, d->ncs, &d->ccs, sizeof *d->cs) < 0)
      return -ENOMEM;
    d->cs[d->ncs++] = pg->cs[i];
  }
  for (size_t i = 0; i < pg->nev; i++) {
    if (pg->ev[i].op != GPD_OP_SYNC || l->ref[i] == NULL)
      continue;
    if (gpd_xtrace_grow((void **)&d->sy, d->nsy, &d->csy, sizeof *d->sy) < 0)
      return -ENOMEM;
    d->sy[d->nsy++] = (xsync_t){pg->ev[i], l->ref[i]->la};
  }
  return 0;
}

/* 1 when every active thread of g's process has its launch after g (or
 * has none: its last is before g's end) */
static int gap_ready(const gpd_xlayout_t *l, const gpd_xgap_t *g, int last) {
  for (size_t t = 0; t < l->nthf; t++) {
    const gpd_xlaunch_t *f = &l->thf[t], *z = &l->thl[t];
    if (f->profile != g->profile || !(f->ts < g->end && z->ts >= g->start))
      continue;
    if (z->ts >= g->end && l->idle->seen[t] < g->end && !last)
      return 0;
  }
  return 1;
}

static int push_la(gpd_xtrace_t *m, const gpd_xlaunch_t *a) {
  if (gpd_xtrace_grow((void **)&m->la, m->nla, &m->capla, sizeof *m->la) < 0)
    return -ENOMEM;
  m->la[m->nla++] = *a;
  return 0;
}

static int push_ev(gpd_xtrace_t *m, const gpd_xev_t *e) {
  if (gpd_xtrace_grow((void **)&m->ev, m->nev, &m->capev, sizeof *m->ev) < 0)
    return -ENOMEM;
  m->ev[m->nev++] = *e;
  return 0;
}

static int la_ts_cmp(const void *a, const void *b) {
  const gpd_xlaunch_t *x = a, *y = b;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* first index of v (n elements of sz bytes sorted by the time at byte
 * offset off) at or after t */
static size_t ts_from(const void *v, size_t n, size_t sz, size_t off, uint64_t t) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint64_t ts;
    memcpy(&ts, (const char *)v + mid * sz + off, sizeof ts);
    if (ts < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* g's blame: gpd_idle_xtrace over the rows it reads (above) */
static int gap_blame(gpd_xlayout_t *l, gpd_xgap_t *g) {
  gpd_xidle_t *d = l->idle;
  gpd_xtrace_t m;
  memset(&m, 0, sizeof m);
  m.tree = l->x->tree;
  gpd_xev_t a = {.profile = g->profile, .start = g->start, .end = g->start, .op = GPD_OP_KERNEL};
  gpd_xev_t b = {.profile = g->profile, .start = g->end, .end = g->end, .op = GPD_OP_KERNEL};
  int err = push_ev(&m, &a);
  for (size_t i = 0; i < d->nsy && d->sy[i].e.start < g->end && err == 0; i++)
    if (d->sy[i].e.profile == g->profile && d->sy[i].e.end > g->start &&
        (err = push_ev(&m, &d->sy[i].e)) == 0)
      err = push_la(&m, &d->sy[i].la);
  if (err == 0)
    err = push_ev(&m, &b);
  /* per thread: its first launch when before a, its last when before a
   * (none after it); the launches in [a, b) and each thread's first at
   * or after b, until every active thread whose launches go on after b
   * has its own */
  size_t need = 0;
  if (err == 0 && d->ndone < l->nthf) {
    uint8_t *nd = realloc(d->done, l->nthf);
    if (nd == NULL)
      err = -ENOMEM;
    else
      d->done = nd, d->ndone = l->nthf;
  }
  for (size_t t = 0; t < l->nthf && err == 0; t++) {
    const gpd_xlaunch_t *f = &l->thf[t], *z = &l->thl[t];
    d->done[t] = 0;
    if (f->profile != g->profile)
      continue;
    if (f->ts < g->start)
      err = push_la(&m, f);
    if (err == 0 && z->ts < g->start)
      err = push_la(&m, z);
    need += f->ts < g->end && z->ts >= g->end;
  }
  for (size_t i = ts_from(d->la, d->nla, sizeof *d->la, offsetof(gpd_xlaunch_t, ts), g->start); i < d->nla && err == 0; i++) {
    const gpd_xlaunch_t *x = &d->la[i];
    if (x->profile != g->profile)
      continue;
    if (x->ts >= g->end) {
      if (need == 0)
        break;
      long t = thread_ix(l, x->profile, x->tid);
      if (t < 0 || (size_t)t >= l->nthf || d->done[t])
        continue;
      d->done[t] = 1;
      need -= l->thf[t].ts < g->end && l->thl[t].ts >= g->end;
    }
    err = push_la(&m, x);
  }
  if (err == 0 && m.nla > 1)
    qsort(m.la, m.nla, sizeof *m.la, la_ts_cmp);
  for (size_t i = ts_from(d->cs, d->ncs, sizeof *d->cs, offsetof(gpd_xsample_t, ts), g->start); i < d->ncs && d->cs[i].ts < g->end && err == 0; i++)
    if (d->cs[i].profile == g->profile) {
      if ((err = gpd_xtrace_grow((void **)&m.cs, m.ncs, &m.capcs, sizeof *m.cs)) == 0)
        m.cs[m.ncs++] = d->cs[i];
    }
  gpd_xgap_t *gaps = NULL;
  gpd_xblame_t *bl = NULL;
  size_t ng = 0, nbl = 0;
  double idle, span;
  if (err == 0)
    err = gpd_idle_xtrace(&m, &gaps, &ng, &bl, &nbl, &idle, &span);
  if (err == 0 && ng == 1) {
    g->node = gaps[0].node;
    g->ns = gaps[0].ns;
    g->cpu = gaps[0].cpu;
  }
  free(gaps);
  free(bl);
  free(m.ev);
  free(m.la);
  free(m.cs);
  return err;
}

/* Where the rows of each process (d->busy) that an interval may read
 * start: its earliest interval whose blame is not known, or the end of
 * its GPU work so far; into lo[k] for d->busy[k]. */
static void keep_from(const gpd_xlayout_t *l, uint64_t *lo) {
  const gpd_xidle_t *d = l->idle;
  for (size_t k = 0; k < d->nbusy; k++)
    lo[k] = d->busy[k].cur;
  for (size_t i = 0; i < l->ngq; i++)
    for (size_t k = 0; k < d->nbusy && !l->gq[i].blamed; k++)
      if (d->busy[k].profile == l->gq[i].g.profile && l->gq[i].g.start < lo[k])
        lo[k] = l->gq[i].g.start;
}

/* lo of profile (0: a process of no GPU work yet, all kept) */
static uint64_t lo_of(const gpd_xidle_t *d, const uint64_t *lo, uint64_t profile) {
  for (size_t k = 0; k < d->nbusy; k++)
    if (d->busy[k].profile == profile)
      return lo[k];
  return 0;
}

/* Drop the rows no interval can read any more.  0 or -ENOMEM. */
static int trim(gpd_xlayout_t *l) {
  gpd_xidle_t *d = l->idle;
  uint64_t *lo = malloc((d->nbusy + 1) * sizeof *lo);
  if (lo == NULL)
    return -ENOMEM;
  keep_from(l, lo);
  size_t w = 0;
  for (size_t i = 0; i < d->nla; i++)
    if (d->la[i].ts >= lo_of(d, lo, d->la[i].profile))
      d->la[w++] = d->la[i];
  d->nla = w;
  w = 0;
  for (size_t i = 0; i < d->ncs; i++)
    if (d->cs[i].ts >= lo_of(d, lo, d->cs[i].profile))
      d->cs[w++] = d->cs[i];
  d->ncs = w;
  w = 0;
  for (size_t i = 0; i < d->nsy; i++)
    if (d->sy[i].e.end > lo_of(d, lo, d->sy[i].e.profile))
      d->sy[w++] = d->sy[i];
  d->nsy = w;
  free(lo);
  return 0;
}

int gpd__xidle_begin(gpd_xlayout_t *l) {
  gpd_xidle_t *d = l->idle;
  int err = keep_rows(l);
  d->n0 = l->ngq;
  if (err == 0)
    err = busy_walk(d, &l->pg, gap_found, l);
  /* a process whose GPU work ended in the page and starts again after
   * it: an interval begins in the page */
  for (size_t i = 0; i < d->nbusy && err == 0; i++) {
    const xbusy_t *b = &d->busy[i];
    uint64_t last = 0;
    for (size_t k = 0; k < d->nlastb; k++)
      if (d->lastb[k].profile == b->profile)
        last = d->lastb[k].last;
    if (!b->any || b->cur >= l->hi || last <= l->hi)
      continue;
    size_t k = 0;
    while (k < l->ngq && !(l->gq[k].g.profile == b->profile && l->gq[k].g.start == b->cur))
      k++;
    if (k < l->ngq)
      continue;
    if (gpd_xtrace_grow((void **)&l->gq, l->ngq, &l->cgq, sizeof *l->gq) < 0)
      return -ENOMEM;
    l->gq[l->ngq++] = (gpd_xgapq_t){.g = {.profile = b->profile, .start = b->cur}, .id = ++l->gqid};
  }
  size_t held = d->nla + d->ncs + d->nsy + l->ngq;
  if (held > l->max_idle)
    l->max_idle = held;
  return err;
}

int gpd__xidle_force(gpd_xlayout_t *l, gpd_xgapq_t *q) {
  int err = gap_blame(l, &q->g);
  if (err == 0)
    q->blamed = 1;
  return err;
}

int gpd__xidle_end(gpd_xlayout_t *l, int last) {
  int err = 0;
  for (size_t n = 0; n < l->ngq && err == 0; n++) {
    gpd_xgapq_t *q = &l->gq[n];
    if (q->blamed)
      continue;
    if (!q->known || !gap_ready(l, &q->g, last))
      break;
    if ((err = gap_blame(l, &q->g)) == 0)
      q->blamed = 1;
  }
  return err < 0 ? err : trim(l);
}

void gpd__xidle_rewind(gpd_xlayout_t *l) {
  gpd_xidle_t *d = l->idle;
  if (d == NULL)
    return;
  if (!l->writing) { /* the scan's busy unions: each process's last start */
    free(d->lastb);
    d->lastb = NULL;
    d->nlastb = 0;
  } else if (d->lastb == NULL && d->nbusy) {
    if ((d->lastb = malloc(d->nbusy * sizeof *d->lastb)) != NULL) {
      memcpy(d->lastb, d->busy, d->nbusy * sizeof *d->lastb);
      d->nlastb = d->nbusy;
    }
  }
  d->nbusy = d->nla = d->ncs = d->nsy = 0;
  l->ngq = 0;
  free(d->seen);
  d->seen = NULL;
}

void gpd__xidle_free(gpd_xlayout_t *l) {
  gpd_xidle_t *d = l->idle;
  if (d) {
    free(d->busy);
    free(d->la);
    free(d->cs);
    free(d->sy);
    free(d->lastb);
    free(d->seen);
    free(d->done);
    free(d);
  }
  l->idle = NULL;
  free(l->gq);
  l->gq = NULL;
  l->ngq = l->cgq = 0;
  free(l->thf);
  free(l->thl);
  l->thf = l->thl = NULL;
  l->nthf = l->cthf = l->cthl = 0;
}
