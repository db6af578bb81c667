/* cpusample.c - CPU-time samples of one process (cpusample.h).
 *
 * A CPUSAMPLE record names the shim's node id of the sampled context and
 * the CPU time it stands for (the sampler's period times the timer
 * expirations; record.c bounds it).  The weight goes to CPUTIME of that
 * node, exclusive, like GPU time goes to a placeholder: the CCT, `tree`,
 * `top` and `report` show it as any metric.  The sample's node may be
 * announced on another thread's ring that is drained later: the sample
 * waits (bounded, GPD_CPS_MAX_PENDING) and is attributed after the node,
 * or to <unknown context> at the end.  Waiting samples live in memory only
 * (not in the store's `pending` table): a daemon killed while some wait
 * loses those.
 *
 * Each attributed sample is also a row of the CPU sample trace
 * (trace_cpu_sample: profile, tid, ts_ns, node = Merkle context id, the
 * `id` of the context rows), up to gpd_cpusample_trace_max rows per
 * profile in this daemon's life; the rest are counted (trace_dropped in
 * cpu_sample_stat).  Rows reach the store in the writer's transaction
 * (checkpoint.c), so they are committed with the ring tails that cover
 * them; cpu_sample_stat is written as differences since the last
 * snapshot (like pcsample), so its totals stay right when a restarted
 * daemon reloads the profile and carries on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/cct.h"
#include "gpuprof/metric.h"
#include "gpuprof/record.h"

#include "cpusample.h"
#include "profile.h"

_Atomic uint64_t gpd_cpusample_trace_max = GPD_CPS_TRACE_MAX_DEFAULT;

struct gpd_cpusample_s {
  gpd_rec_cpusample_t *pend; /* waiting for their node */
  uint32_t npend, cappend;
  gpd_cps_row_t *rows; /* trace rows since the last snapshot */
  uint32_t nrows, caprows;
  uint64_t samples, cputime_ns, trace_rows, trace_dropped, unknown;
  /* the same as of the last snapshot: a snapshot writes the differences */
  uint64_t s_samples, s_cputime_ns, s_trace_rows, s_trace_dropped, s_unknown;
};

static int grow(void **arr, uint32_t n, uint32_t *cap, size_t size) {
  if (n < *cap)
    return 0;
  uint32_t nc = *cap ? *cap * 2 : 256;
  void *na = realloc(*arr, (size_t)nc * size);
  if (na == NULL)
    return -ENOMEM;
  *arr = na;
  *cap = nc;
  return 0;
}

static void attribute(gpd_profile_t *p, gpd_cpusample_t *cs, uint32_t at, const gpd_rec_cpusample_t *r) {
  if (gpd_profile_metric_add(p, at, GPD_M_CPUTIME, (double)r->weight) < 0)
    return;
  cs->samples++;
  cs->cputime_ns += r->weight;
  uint64_t max = atomic_load_explicit(&gpd_cpusample_trace_max, memory_order_relaxed);
  if (cs->trace_rows >= max ||
      grow((void **)&cs->rows, cs->nrows, &cs->caprows, sizeof *cs->rows) < 0) {
    cs->trace_dropped++;
    return;
  }
  cs->rows[cs->nrows++] = (gpd_cps_row_t){.ts = r->ts, .ctx = p->nodes[at].id, .tid = r->tid};
  cs->trace_rows++;
}

static uint32_t unknown_at(gpd_profile_t *p) {
  uint32_t u = gpd_profile_child(p, 0, GPD_NODE_UNKNOWN, GPD_UNKNOWN_LABEL, GPD_UNKNOWN_LABEL, NULL);
  return u == GPD_NONE ? 0 : u;
}

void gpd_cpusample_ingest(gpd_profile_t *p, const void *rec) {
  const gpd_rec_cpusample_t *r = rec;
  if (p->cps == NULL && (p->cps = calloc(1, sizeof *p->cps)) == NULL)
    return; /* out of memory: this sample is lost */
  gpd_cpusample_t *cs = p->cps;
  uint32_t at = gpd_profile_local(p, r->node);
  if (at != GPD_NONE) {
    attribute(p, cs, at, r);
    return;
  }
  if (cs->npend >= GPD_CPS_MAX_PENDING || grow((void **)&cs->pend, cs->npend, &cs->cappend, sizeof *r) < 0) {
    cs->unknown++;
    attribute(p, cs, unknown_at(p), r);
    return;
  }
  cs->pend[cs->npend++] = *r;
}

void gpd_cpusample_retry(gpd_profile_t *p, int force) {
  gpd_cpusample_t *cs = p->cps;
  if (cs == NULL || cs->npend == 0)
    return;
  uint32_t w = 0;
  for (uint32_t i = 0; i < cs->npend; i++) {
    uint32_t at = gpd_profile_local(p, cs->pend[i].node);
    if (at == GPD_NONE && force) {
      cs->unknown++;
      at = unknown_at(p);
    }
    if (at != GPD_NONE)
      attribute(p, cs, at, &cs->pend[i]);
    else
      cs->pend[w++] = cs->pend[i];
  }
  cs->npend = w;
}

int gpd_cpusample_snap(gpd_cpusample_t *cs, gpd_cps_snap_t *out) {
  memset(out, 0, sizeof *out);
  if (cs == NULL)
    return 0;
  out->have = 1;
  out->rows = cs->rows;
  out->nrows = cs->nrows;
  cs->rows = NULL;
  cs->nrows = cs->caprows = 0;
  out->samples = cs->samples - cs->s_samples;
  out->cputime_ns = cs->cputime_ns - cs->s_cputime_ns;
  out->trace_rows = cs->trace_rows - cs->s_trace_rows;
  out->trace_dropped = cs->trace_dropped - cs->s_trace_dropped;
  out->unknown = cs->unknown - cs->s_unknown;
  cs->s_samples = cs->samples;
  cs->s_cputime_ns = cs->cputime_ns;
  cs->s_trace_rows = cs->trace_rows;
  cs->s_trace_dropped = cs->trace_dropped;
  cs->s_unknown = cs->unknown;
  return 0;
}

void gpd_cpusample_unsnap(gpd_cpusample_t *cs, gpd_cps_snap_t *s) {
  if (cs == NULL)
    return;
  /* its differences are written with the next snapshot */
  cs->s_samples -= s->samples;
  cs->s_cputime_ns -= s->cputime_ns;
  cs->s_trace_rows -= s->trace_rows;
  cs->s_trace_dropped -= s->trace_dropped;
  cs->s_unknown -= s->unknown;
  if (s->nrows == 0)
    return;
  /* the snapshot's rows go back in front of the ones that came since */
  gpd_cps_row_t *na = realloc(s->rows, ((size_t)s->nrows + cs->nrows) * sizeof *na);
  if (na == NULL) {
    cs->trace_dropped += s->nrows; /* cannot keep them: counted */
    cs->trace_rows -= s->nrows;
    return;
  }
  if (cs->nrows)
    memcpy(na + s->nrows, cs->rows, (size_t)cs->nrows * sizeof *na);
  free(cs->rows);
  cs->rows = na;
  cs->nrows += s->nrows;
  cs->caprows = cs->nrows;
  s->rows = NULL;
  s->nrows = 0;
}

void gpd_cpusample_snap_free(gpd_cps_snap_t *s) {
  free(s->rows);
  memset(s, 0, sizeof *s);
}

void gpd_cpusample_free(gpd_cpusample_t *cs) {
  if (cs == NULL)
    return;
  free(cs->pend);
  free(cs->rows);
  free(cs);
}

