/* profile.c - one process's calling context tree, rebuilt from its ring
 * records, and the attribution of GPU activity to it: creation, release
 * and size of a profile.  The parts live in profile-*.c (their list and
 * layering: profile-internal.h).  Caller holds the daemon lock. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/hash.h"

#include "cpusample.h"
#include "graph.h"
#include "pcsample.h"
#include "profile-internal.h"

int gpd_profile_init(gpd_profile_t *p, uint64_t profile_id) {
  gpd__profile_attrib_init(); /* attribution reads the per-op metric ids */
  memset(p, 0, sizeof *p);
  p->profile_id = profile_id;
  p->max_corr = GPD_PROFILE_MAX_CORR;
  p->max_corr_age = GPD_PROFILE_MAX_CORR_AGE;
  p->pend_full = 1; /* rows of an earlier life of this profile go */
  /* correlation ids come in sequence per API (GPD_CORR): runs of 16 share
   * cache lines in the two correlation maps */
  p->corr.run_shift = 4;
  p->pend_corr.run_shift = 4;
  if (gpd__profile_nodes_add(p, GPD_CTX_ROOT, GPD_NONE, GPD_NODE_ROOT) != 0)
    return -ENOMEM;
  return 0;
}

void gpd_profile_free(gpd_profile_t *p) {
  free(p->nodes);
  free(p->mw);
  free(p->mnodes);
  free(p->lp);
  free(p->dirtyv);
  free(p->qbit);
  for (unsigned c = 0; c < GPD_QLOG_N; c++)
    free(p->qlog[c].v);
  for (uint32_t i = 0; i < p->nstrs; i++)
    free(p->strs[i].text);
  free(p->strs);
  for (uint32_t i = 0; i < p->nmods; i++)
    free(p->mods[i].path);
  free(p->mods);
  free(p->pnodes);
  free(p->pnode_seq);
  free(p->pdel);
  free(p->pacts);
  free(p->locals);
  free(p->corr_fifo);
  gpd__profile_index_free(&p->by_ctx);
  gpd__profile_index_free(&p->by_local);
  gpd__profile_index_free(&p->lp_ix);
  gpd_map_free(&p->corr);
  gpd_map_free(&p->pend_corr);
  gpd__profile_index_free(&p->targets);
  gpd_map_free(&p->str_by_id);
  gpd_map_free(&p->mod_by_id);
  gpd_map_free(&p->trace_streams);
  gpd_pcsample_free(p->pcs);
  gpd_cpusample_free(p->cps);
  gpd_graph_free(p);
  gpd_tracewin_free(&p->tw);
  memset(p, 0, sizeof *p);
}

size_t gpd_profile_bytes(const gpd_profile_t *p) {
  size_t b = (size_t)p->capnodes * sizeof *p->nodes + (size_t)p->capmw * sizeof *p->mw + p->caplp +
             ((size_t)p->capdirtyv + p->capmnodes) * 4 + p->capqbit +
             ((size_t)p->by_ctx.cap + p->by_local.cap + p->lp_ix.cap + p->targets.cap) * 4 +
             (size_t)p->caplocals * sizeof *p->locals + (size_t)p->capstrs * sizeof *p->strs +
             (size_t)p->capmods * sizeof *p->mods + p->str_bytes +
             (size_t)p->cappnodes * sizeof *p->pnodes + (size_t)p->cappacts * sizeof *p->pacts +
             (size_t)p->corr_capfifo * sizeof *p->corr_fifo + gpd_tracewin_bytes(&p->tw) +
             gpd_graph_bytes(p);
  for (unsigned c = 0; c < GPD_QLOG_N; c++)
    b += (size_t)p->qlog[c].cap * 4;
  const gpd_map_t *maps[] = {&p->corr, &p->pend_corr, &p->str_by_id, &p->mod_by_id};
  for (size_t i = 0; i < sizeof maps / sizeof *maps; i++)
    b += maps[i]->cap * 16;
  return b;
}
