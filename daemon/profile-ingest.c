/* profile-ingest.c - record dispatch into one process's profile: the
 * monitor's entry points (consume, prefetch, retry, finish) and the
 * hand-back's re-feed of pending rows.
 *
 * Nothing here trusts the shim beyond gpd_rec_validate(): unknown ids wait
 * in bounded pending lists (profile-pending.c); at the final flush what is
 * still unmatched goes to root -> <unknown context>.  Caller holds the
 * daemon lock. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/error.h"
#include "gpuprof/record.h"

#include "cpusample.h"
#include "graph.h"
#include "pcsample.h"
#include "profile-internal.h"
#include "trace.h"

void gpd_profile_ingest(void *arg, const void *rec, size_t nbytes) {
  gpd_profile_t *p = arg;
  const gpd_rec_hdr_t *h = rec;
  p->records++;
  switch (h->type) {
  case GPD_REC_NODE: {
    p->pend_gen++;
    const gpd_rec_node_t *r = rec;
    if (!gpd__profile_nodes_place(p, r))
      gpd__profile_pending_node(p, r);
    break;
  }
  case GPD_REC_STRING: {
    const gpd_rec_string_t *r = rec;
    if (sizeof *r + (size_t)h->len <= nbytes)
      gpd_profile_add_string(p, r->id, r->kind, r->text, h->len);
    break;
  }
  case GPD_REC_MODULE: {
    const gpd_rec_module_t *r = rec;
    if (sizeof *r + (size_t)h->len <= nbytes)
      gpd_profile_add_module(p, r->id, r->build_id, r->build_id_len, r->base, r->size, r->path,
                             h->len);
    break;
  }
  case GPD_REC_INVOKE: {
    const gpd_rec_invoke_t *r = rec;
    p->pend_gen++;
    if (p->trace)
      gpd_trace_invoke(p, r);
    if (r->corr != 0) {
      int created;
      uint64_t val = GPD_CORR_PACK(r->node, r->op, (r->h.flags & GPD_INVOKE_MULTI) != 0);
      uint64_t *slot = gpd_map_upsert(&p->corr, r->corr, &created);
      if (slot == NULL)
        break; /* out of memory: its activities go to <unknown context> */
      if (!created && (*slot & GPD_CORR_STORED))
        gpd__profile_delta_gone(p, GPD_PEND_SEQ(1, r->corr) | GPD_PEND_STORED); /* replaced */
      *slot = val;
      if (p->npacts == 0 || gpd__profile_pending_match(p, r->corr, val))
        gpd__profile_corr_track(p, r->corr); /* still waiting (for more) activities */
    }
    break;
  }
  case GPD_REC_ACTIVITY: {
    const gpd_rec_activity_t *r = rec;
    p->pend_gen++;
    int st = gpd__profile_attrib_try(p, r, 0);
    if (st != GPD__ACT_DONE) {
      p->pact_blocked += st == GPD__ACT_BLOCKED;
      gpd__profile_pending_activity(p, r);
    }
    break;
  }
  case GPD_REC_STATUS: {
    const gpd_rec_status_t *r = rec;
    if (r->api < GPD_API_MAX) {
      gpd_api_status_t *b = &p->backends[r->api];
      b->seen = 1;
      b->enabled = r->state != 0;
      b->code = r->code;
      b->reason = r->reason;
    }
    break;
  }
  case GPD_REC_PCSAMPLE:
  case GPD_REC_PCSTATS:
  case GPD_REC_CUBIN:
    gpd_pcsample_ingest(&p->pcs, rec);
    break;
  case GPD_REC_CPUSAMPLE:
    gpd_cpusample_ingest(p, rec);
    break;
  case GPD_REC_TRACEWIN:
    gpd_tracewin_ingest(&p->tw, rec);
    break;
  case GPD_REC_GRAPHNODE:
    gpd_graph_ingest(p, rec);
    break;
  default:
    break;
  }
}

void gpd_profile_prefetch(void *arg, const void *slot) {
  const gpd_profile_t *p = arg;
  const gpd_rec_hdr_t *h = slot;
  uint8_t type = h->type;
  if (type != GPD_REC_INVOKE && type != GPD_REC_ACTIVITY)
    return;
  /* both records keep corr at the same offset */
  _Static_assert(offsetof(gpd_rec_invoke_t, corr) == offsetof(gpd_rec_activity_t, corr), "corr");
  uint64_t corr;
  memcpy(&corr, (const uint8_t *)slot + offsetof(gpd_rec_invoke_t, corr), sizeof corr);
  gpd_map_prefetch(&p->corr, corr);
  if (p->npacts)
    gpd_map_prefetch(&p->pend_corr, corr);
}

int gpd_profile_consume(gpd_profile_t *p, gpd_region_t *r, uint32_t ring, uint64_t *cursor,
                        unsigned max) {
  return gpd_ring_consume_pf(r, ring, cursor, max, gpd_profile_ingest, gpd_profile_prefetch, p, &p->ring_tid);
}

void gpd_profile_retry(gpd_profile_t *p) {
  if (p->npnodes || p->npacts)
    gpd__profile_pending_retry(p, 0);
  gpd_cpusample_retry(p, 0);
}

void gpd_profile_finish(gpd_profile_t *p) {
  gpd__profile_pending_retry(p, 0);
  p->dropped_nodes += p->npnodes; /* parent/module never announced */
  p->npnodes = 0;
  gpd__profile_pending_retry(p, 1);
  gpd_cpusample_retry(p, 1);
  /* its final event count (and drops/refusals after the last event) into
   * trace_stat: retention sizes the ended profile's trace rows from it */
  if (p->trace_n)
    p->trace_stat_dirty = 1;
  gpd_trace_stat(p);
}

int gpd_profile_restore_pending(gpd_profile_t *p, const void *rec, size_t nbytes) {
  _Alignas(64) uint8_t buf[GPD_REC_FIXED_MAX];
  if (rec == NULL || nbytes < GPD_SLOT_SIZE || nbytes > sizeof buf || nbytes % GPD_SLOT_SIZE)
    return GPD_EBADRECORD;
  memcpy(buf, rec, nbytes);
  const gpd_rec_hdr_t *h = (const gpd_rec_hdr_t *)buf;
  if (gpd_rec_validate(buf, nbytes) < 0 ||
      (h->type != GPD_REC_NODE && h->type != GPD_REC_INVOKE && h->type != GPD_REC_ACTIVITY))
    return GPD_EBADRECORD;
  gpd_profile_ingest(p, buf, nbytes);
  p->records--; /* counted when it was first consumed */
  return 0;
}
