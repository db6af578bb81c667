/* pcsample.c - GPU PC samples of one process (PCSAMPLE, PCSTATS and CUBIN
 * records, shim/cupti/cupti-pcsampling.c), added up per key and written
 * to the store as deltas in the writer's transaction.
 *
 * The records come from a client's ring: ids are only looked up, every
 * table is bounded (GPD_PCS_MAX_KEYS keys, GPD_PCS_MAX_CUBINS cubins,
 * GPD_PCS_MAX_DEV devices per process; what does not fit is counted in
 * `lost` and written as pcsample_stat.lost_keys).  Continuous sampling
 * does not tie a sample to a launch: the report (cli/report.c) attributes
 * a kernel's samples to the kernel's contexts by their GKER time.
 *
 * Locking: like profile.c, the daemon lock is held by every caller.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>


#include "pcsample.h"

#define GPD_PCS_MAX_KEYS (1u << 18)
#define GPD_PCS_MAX_CUBINS 4096u

typedef struct pcs_slot_s {
  gpd_pcs_row_t r;
  uint8_t used;
} pcs_slot_t;

struct gpd_pcsample_s {
  pcs_slot_t *tab; /* open addressing, power-of-two capacity */
  uint32_t cap, n;
  gpd_pcs_cubin_t *cubins; /* new ones since the last snapshot */
  uint32_t ncubins, capcubins, cubins_total;
  gpd_pcs_stat_t stats[GPD_PCS_MAX_DEV]; /* deltas; device = index */
  uint8_t stat_dirty[GPD_PCS_MAX_DEV];
  uint64_t lost;
  /* running totals per (func, stall) for the live replies: dense array
   * and an index (slot = array index + 1, 0 empty; 2x GPD_PCS_MAX_TOTALS) */
  gpd_pcs_total_t *tot;
  uint32_t ntot, captot;
  uint32_t *totix;
};

static uint32_t row_hash(const gpd_pcs_row_t *r) {
  uint64_t h = r->cubin_id * 0x9e3779b97f4a7c15ull ^ r->pc * 0xbf58476d1ce4e5b9ull ^
               ((uint64_t)r->func << 32 | r->stall) * 0x94d049bb133111ebull ^ r->device;
  h ^= h >> 31;
  return (uint32_t)(h ^ (h >> 29));
}

static int same_key(const gpd_pcs_row_t *a, const gpd_pcs_row_t *b) {
  return a->cubin_id == b->cubin_id && a->pc == b->pc && a->func == b->func &&
         a->stall == b->stall && a->device == b->device;
}

static int tab_grow(gpd_pcsample_t *ps) {
  uint32_t cap = ps->cap ? 2 * ps->cap : 1024;
  pcs_slot_t *t = calloc(cap, sizeof *t);
  if (t == NULL)
    return -ENOMEM;
  for (uint32_t i = 0; i < ps->cap; i++) {
    if (!ps->tab[i].used)
      continue;
    uint32_t j = row_hash(&ps->tab[i].r) & (cap - 1);
    while (t[j].used)
      j = (j + 1) & (cap - 1);
    t[j] = ps->tab[i];
  }
  free(ps->tab);
  ps->tab = t;
  ps->cap = cap;
  return 0;
}

/* Add a row's values under its key; a new key past the bound is lost. */
static void add_row(gpd_pcsample_t *ps, const gpd_pcs_row_t *r) {
  if (ps->n + 1 > ps->cap / 2 && ps->n < GPD_PCS_MAX_KEYS)
    (void)tab_grow(ps); /* on failure the table just fills up */
  if (ps->cap == 0) {
    ps->lost += r->samples;
    return;
  }
  for (uint32_t j = row_hash(r) & (ps->cap - 1);; j = (j + 1) & (ps->cap - 1)) {
    pcs_slot_t *s = &ps->tab[j];
    if (!s->used) {
      if (ps->n >= GPD_PCS_MAX_KEYS || ps->n + 1 >= ps->cap) {
        ps->lost += r->samples;
        return;
      }
      s->used = 1;
      s->r = *r;
      ps->n++;
      return;
    }
    if (same_key(&s->r, r)) {
      /* saturating: SASS execution counts (cupti-sass.c) can pass 2^32 */
      s->r.samples = s->r.samples + r->samples < s->r.samples ? UINT32_MAX
                                                              : s->r.samples + r->samples;
      s->r.latency += r->latency;
      return;
    }
  }
}

#define PCS_TOTIX (2u * GPD_PCS_MAX_TOTALS)

/* Add samples to the running total of (func, stall); a key past the bound
 * or a failed allocation is not counted there (the store still has it). */
static void total_add(gpd_pcsample_t *ps, uint32_t func, uint32_t stall, uint64_t samples) {
  if (ps->totix == NULL && (ps->totix = calloc(PCS_TOTIX, sizeof *ps->totix)) == NULL)
    return;
  uint64_t h = ((uint64_t)func << 32 | stall) * 0x9e3779b97f4a7c15ull;
  for (uint32_t j = (uint32_t)(h >> 40) & (PCS_TOTIX - 1);; j = (j + 1) & (PCS_TOTIX - 1)) {
    uint32_t v = ps->totix[j];
    if (v == 0) {
      if (ps->ntot >= GPD_PCS_MAX_TOTALS)
        return;
      if (ps->ntot == ps->captot) {
        uint32_t cap = ps->captot ? 2 * ps->captot : 16;
        gpd_pcs_total_t *t = realloc(ps->tot, cap * sizeof *t);
        if (t == NULL)
          return;
        ps->tot = t;
        ps->captot = cap;
      }
      ps->tot[ps->ntot] = (gpd_pcs_total_t){func, stall, samples};
      ps->totix[j] = ++ps->ntot;
      return;
    }
    gpd_pcs_total_t *t = &ps->tot[v - 1];
    if (t->func == func && t->stall == stall) {
      t->samples = t->samples + samples < t->samples ? UINT64_MAX : t->samples + samples;
      return;
    }
  }
}

const gpd_pcs_total_t *gpd_pcsample_totals(const gpd_pcsample_t *ps, uint32_t *n) {
  *n = ps ? ps->ntot : 0;
  return *n ? ps->tot : NULL;
}

void gpd_pcsample_ingest(gpd_pcsample_t **pps, const void *rec) {
  const gpd_rec_hdr_t *h = rec;
  gpd_pcsample_t *ps = *pps;
  if (ps == NULL && (ps = *pps = calloc(1, sizeof *ps)) == NULL)
    return;
  switch (h->type) {
  case GPD_REC_PCSAMPLE: {
    const gpd_rec_pcsample_t *r = rec;
    gpd_pcs_row_t row = {r->cubin_id, r->pc, r->func, r->stall, r->device, r->samples,
                         r->latency};
    if (r->samples || r->latency)
      add_row(ps, &row);
    if (r->samples)
      total_add(ps, r->func, r->stall, r->samples);
    break;
  }
  case GPD_REC_PCSTATS: {
    const gpd_rec_pcstats_t *r = rec;
    if (r->device >= GPD_PCS_MAX_DEV)
      break;
    gpd_pcs_stat_t *s = &ps->stats[r->device];
    s->device = r->device;
    s->period_log2 = r->period_log2;
    s->sm_count = r->sm_count;
    s->clock_khz = r->clock_khz;
    s->total += r->total;
    s->dropped += r->dropped;
    s->non_user += r->non_user;
    ps->stat_dirty[r->device] = 1;
    break;
  }
  case GPD_REC_CUBIN: {
    const gpd_rec_cubin_t *r = rec;
    if (ps->cubins_total >= GPD_PCS_MAX_CUBINS)
      break;
    if (ps->ncubins == ps->capcubins) {
      uint32_t cap = ps->capcubins ? 2 * ps->capcubins : 8;
      gpd_pcs_cubin_t *c = realloc(ps->cubins, cap * sizeof *c);
      if (c == NULL)
        break;
      ps->cubins = c;
      ps->capcubins = cap;
    }
    gpd_pcs_cubin_t *c = &ps->cubins[ps->ncubins++];
    c->cubin_id = r->cubin_id;
    memcpy(c->hash, r->hash, 32); /* lowercase hex: gpd_rec_validate */
    c->hash[32] = 0;
    ps->cubins_total++;
    break;
  }
  default:
    break;
  }
}

int gpd_pcsample_snap(gpd_pcsample_t *ps, gpd_pcs_snap_t *out) {
  memset(out, 0, sizeof *out);
  if (ps == NULL)
    return 0;
  if (ps->n) {
    if ((out->rows = malloc(ps->n * sizeof *out->rows)) == NULL)
      return -ENOMEM;
    for (uint32_t i = 0; i < ps->cap; i++)
      if (ps->tab[i].used)
        out->rows[out->nrows++] = ps->tab[i].r;
    /* moved out: the table starts again from zero (deltas) */
    memset(ps->tab, 0, ps->cap * sizeof *ps->tab);
    ps->n = 0;
  }
  out->cubins = ps->cubins;
  out->ncubins = ps->ncubins;
  ps->cubins = NULL;
  ps->ncubins = ps->capcubins = 0;
  for (uint32_t d = 0; d < GPD_PCS_MAX_DEV; d++)
    if (ps->stat_dirty[d]) {
      out->stats[out->nstats++] = ps->stats[d];
      memset(&ps->stats[d], 0, sizeof ps->stats[d]);
      ps->stat_dirty[d] = 0;
    }
  out->lost = ps->lost;
  ps->lost = 0;
  return 0;
}

void gpd_pcsample_unsnap(gpd_pcsample_t *ps, gpd_pcs_snap_t *s) {
  if (ps == NULL)
    return;
  for (uint32_t i = 0; i < s->nrows; i++)
    add_row(ps, &s->rows[i]);
  for (uint32_t i = 0; i < s->ncubins; i++) {
    gpd_rec_cubin_t r = {.h = {.type = GPD_REC_CUBIN}, .cubin_id = s->cubins[i].cubin_id};
    memcpy(r.hash, s->cubins[i].hash, 32);
    ps->cubins_total--;
    gpd_pcsample_ingest(&ps, &r);
  }
  for (uint32_t i = 0; i < s->nstats; i++) {
    const gpd_pcs_stat_t *st = &s->stats[i];
    gpd_rec_pcstats_t r = {.h = {.type = GPD_REC_PCSTATS}, .device = st->device,
                           .period_log2 = st->period_log2, .total = st->total,
                           .dropped = st->dropped, .non_user = st->non_user,
                           .sm_count = st->sm_count, .clock_khz = st->clock_khz};
    gpd_pcsample_ingest(&ps, &r);
  }
  ps->lost += s->lost;
}

void gpd_pcsample_snap_free(gpd_pcs_snap_t *s) {
  free(s->rows);
  free(s->cubins);
  memset(s, 0, sizeof *s);
}

void gpd_pcsample_free(gpd_pcsample_t *ps) {
  if (ps == NULL)
    return;
  free(ps->tab);
  free(ps->cubins);
  free(ps->tot);
  free(ps->totix);
  free(ps);
}

