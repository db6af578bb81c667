/* profile-delta.c - the `pending` table's rows for the writer
 * (docs/FORMATS.md): what changed in the unmatched correlation state
 * (pending NODEs, INVOKEs in the correlation map, pending ACTIVITYs) since
 * the last snapshot, as rows to add and row ids to delete.  Caller holds
 * the daemon lock. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/record.h"

#include "profile-internal.h"

/* A stored `pending` row is gone (matched, placed, evicted): delete it at
 * the next snapshot.  Out of memory: rewrite all rows then. */
void gpd__profile_delta_gone(gpd_profile_t *p, uint64_t seq) {
  if (!(seq & GPD_PEND_STORED) || p->pend_full)
    return;
  if (p->npdel == p->cappdel) {
    uint32_t nc = p->cappdel ? p->cappdel * 2 : 64;
    uint64_t *na = realloc(p->pdel, (size_t)nc * sizeof *na);
    if (na == NULL) {
      p->pend_full = 1;
      return;
    }
    p->pdel = na;
    p->cappdel = nc;
  }
  p->pdel[p->npdel++] = seq & ~GPD_PEND_STORED;
}

/* One row: the record bytes (len) and its id. */
static void prec_set(gpd_prec_t *v, const void *rec, uint32_t len, uint64_t seq) {
  memset(v, 0, sizeof *v);
  memcpy(v->b, rec, len);
  v->len = len;
  v->seq = seq & ~GPD_PEND_STORED;
}

/* The INVOKE record of correlation-map entry (corr, val). */
static void prec_invoke(gpd_prec_t *v, uint64_t corr, uint64_t val) {
  gpd_rec_invoke_t r;
  memset(&r, 0, sizeof r);
  r.h.type = GPD_REC_INVOKE;
  r.h.version = GPD_REC_VERSION;
  r.h.nslots = GPD_REC_NSLOTS(r);
  r.h.flags = ((val >> 40) & 1) ? GPD_INVOKE_MULTI : 0;
  unsigned api = GPD_CORR_API(corr); /* not kept in the map; unused */
  r.api = (uint8_t)(api < GPD_API_MAX ? api : GPD_API_NONE);
  r.op = (uint8_t)(val >> 32);
  r.node = (uint32_t)val;
  r.corr = corr;
  prec_set(v, &r, sizeof r, GPD_PEND_SEQ(1, corr));
}

int gpd_profile_pending_begin(gpd_profile_t *p, gpd_pdelta_t *dl, uint64_t **del, uint32_t *ndel, int *full) {
  memset(dl, 0, sizeof *dl);
  *del = NULL;
  *ndel = 0;
  *full = dl->full = p->pend_full;
  /* new rows: pending NODEs / ACTIVITYs are kept in row order, so the new
   * ones are a suffix; new INVOKEs are the correlation fifo past corr_old */
  uint32_t n0 = 0, a0 = p->pact0, f0 = 0;
  if (!dl->full) {
    n0 = p->npnodes;
    while (n0 > 0 && (p->pnode_seq[n0 - 1] & ~GPD_PEND_STORED) > GPD_PEND_SEQ(0, p->pend_seq_saved))
      n0--;
    a0 = p->npacts;
    while (a0 > p->pact0 && (p->pacts[a0 - 1].seq & ~GPD_PEND_STORED) > GPD_PEND_SEQ(2, p->pend_seq_saved))
      a0--;
    f0 = p->corr_old < p->corr_nfifo ? p->corr_old : p->corr_nfifo;
  }
  size_t cnt = (size_t)(p->npnodes - n0) + (p->npacts - a0) +
               (dl->full ? p->corr.n : (size_t)(p->corr_nfifo - f0));
  dl->v = cnt ? malloc(cnt * sizeof *dl->v) : NULL;
  if (cnt && dl->v == NULL) {
    p->pend_full = 1;
    return -ENOMEM;
  }
  dl->n = n0;
  dl->n_end = p->npnodes;
  dl->c = dl->full ? 0 : f0;
  dl->c_end = dl->full ? p->corr.cap : p->corr_nfifo;
  dl->a = a0;
  dl->a_end = p->npacts;
  if (!dl->full && p->npdel) {
    *del = p->pdel;
    *ndel = p->npdel;
    p->pdel = NULL;
    p->cappdel = 0;
  }
  p->npdel = 0;
  p->pend_full = 0;
  p->pend_seq_saved = p->pend_seq;
  p->corr_old = p->corr_nfifo;
  return 0;
}

uint32_t gpd_profile_pending_step(gpd_profile_t *p, gpd_pdelta_t *dl, uint32_t budget) {
  uint32_t w = 0;
  gpd_prec_t *v = dl->v;
  for (; dl->n < dl->n_end && w < budget; dl->n++, w++) {
    prec_set(&v[dl->k++], &p->pnodes[dl->n], sizeof p->pnodes[dl->n], p->pnode_seq[dl->n]);
    p->pnode_seq[dl->n] |= GPD_PEND_STORED;
  }
  if (dl->full) {
    for (; dl->c < dl->c_end && w < budget; dl->c++, w++) {
      if (p->corr.e[dl->c].key == 0)
        continue;
      prec_invoke(&v[dl->k++], p->corr.e[dl->c].key, p->corr.e[dl->c].val);
      p->corr.e[dl->c].val |= GPD_CORR_STORED;
    }
  } else {
    for (; dl->c < dl->c_end && w < budget; dl->c++, w++) {
      uint32_t f = (uint32_t)dl->c;
      if (f + 16 < dl->c_end)
        gpd_map_prefetch(&p->corr, p->corr_fifo[(p->corr_head + f + 16) & (p->corr_capfifo - 1)].corr);
      uint64_t corr = p->corr_fifo[(p->corr_head + f) & (p->corr_capfifo - 1)].corr, val;
      uint64_t *ref = gpd_map_ref(&p->corr, corr);
      if (ref == NULL || (*ref & GPD_CORR_STORED))
        continue; /* matched since, or listed twice */
      val = *ref;
      prec_invoke(&v[dl->k++], corr, val);
      *ref = val | GPD_CORR_STORED;
    }
  }
  for (; dl->a < dl->a_end && w < budget; dl->a++, w++) {
    if (p->pacts[dl->a].a.h.type == GPD_REC_NONE)
      continue; /* tombstone: matched already */
    prec_set(&v[dl->k++], &p->pacts[dl->a].a, sizeof p->pacts[dl->a].a, p->pacts[dl->a].seq);
    p->pacts[dl->a].seq |= GPD_PEND_STORED;
  }
  return w;
}

int gpd_profile_pending_left(const gpd_pdelta_t *dl) {
  return dl->n < dl->n_end || dl->c < dl->c_end || dl->a < dl->a_end;
}

void gpd_profile_pending_end(gpd_pdelta_t *dl, gpd_prec_t **add, uint32_t *nadd) {
  if (dl->k == 0) {
    free(dl->v);
    dl->v = NULL;
  }
  *add = dl->v;
  *nadd = dl->k;
  dl->v = NULL;
}

int gpd_profile_pending_delta(gpd_profile_t *p, gpd_prec_t **add, uint32_t *nadd, uint64_t **del,
                              uint32_t *ndel, int *full) {
  gpd_pdelta_t dl;
  *add = NULL;
  *nadd = 0;
  int e = gpd_profile_pending_begin(p, &dl, del, ndel, full);
  if (e < 0)
    return e;
  gpd_profile_pending_step(p, &dl, UINT32_MAX);
  gpd_profile_pending_end(&dl, add, nadd);
  return 0;
}
