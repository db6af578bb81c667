/* merge.c - the node view: live per-process trees merged by Merkle id.
 *
 * Equal call paths have equal context ids in every process (hash.h), so
 * merging is a union of nodes keyed by id with exclusive metrics summed.
 * Adding profiles in order keeps "parents precede children": a node's
 * parent is either already merged from an earlier profile or precedes it in
 * its own profile.  Inclusive values are then one reverse sweep.
 * Caller holds the daemon lock while the merge borrows profile labels.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

uint32_t gpd_merge_find(const gpd_merge_t *m, uint64_t id) {
  uint64_t v;
  return gpd_map_get(&m->by_id, id, &v) ? (uint32_t)v : GPD_NONE;
}

int gpd_merge_add(gpd_merge_t *m, const gpd_profile_t *p) {
  for (uint32_t i = 0; i < p->nnodes; i++) {
    const gpd_node_t *n = &p->nodes[i];
    uint32_t j = gpd_merge_find(m, n->id);
    if (j == GPD_NONE) {
      uint32_t par = GPD_NONE;
      if (n->parent != GPD_NONE) {
        par = gpd_merge_find(m, n->parent_id);
        if (par == GPD_NONE)
          continue; /* cannot happen: parents precede children */
      }
      if (m->n == m->cap) {
        uint32_t nc = m->cap ? m->cap * 2 : 256;
        gpd_mnode_t *na = realloc(m->nodes, nc * sizeof *na);
        if (na == NULL)
          return -ENOMEM;
        m->nodes = na;
        m->cap = nc;
      }
      j = m->n;
      if (gpd_map_put(&m->by_id, n->id, j) < 0)
        return -ENOMEM;
      gpd_mnode_t *mn = &m->nodes[j];
      memset(mn, 0, sizeof *mn);
      mn->id = n->id;
      mn->parent_id = n->parent_id;
      mn->parent = par;
      mn->kind = n->kind;
      mn->prof = p;
      mn->pidx = i;
      mn->depth = par == GPD_NONE ? 0 : m->nodes[par].depth + 1;
      m->n++;
    }
    gpd_mnode_t *mn = &m->nodes[j];
    for (uint32_t k = 0; k < n->nm; k++)
      if (gpd_mval_add(&mn->excl, &mn->nex, &mn->capex, n->m[k].id, n->m[k].v) < 0)
        return -ENOMEM;
  }
  return 0;
}

int gpd_merge_finish(gpd_merge_t *m) {
  for (uint32_t i = 0; i < m->n; i++) {
    gpd_mnode_t *mn = &m->nodes[i];
    mn->nin = 0;
    for (uint32_t k = 0; k < mn->nex; k++)
      if (gpd_mval_add(&mn->incl, &mn->nin, &mn->capin, mn->excl[k].id, mn->excl[k].v) < 0)
        return -ENOMEM;
  }
  for (uint32_t i = m->n; i-- > 1;) {
    gpd_mnode_t *mn = &m->nodes[i];
    if (mn->parent == GPD_NONE)
      continue;
    gpd_mnode_t *pn = &m->nodes[mn->parent];
    for (uint32_t k = 0; k < mn->nin; k++)
      if (gpd_mval_add(&pn->incl, &pn->nin, &pn->capin, mn->incl[k].id, mn->incl[k].v) < 0)
        return -ENOMEM;
  }
  return 0;
}

void gpd_merge_free(gpd_merge_t *m) {
  for (uint32_t i = 0; i < m->n; i++) {
    free(m->nodes[i].excl);
    free(m->nodes[i].incl);
  }
  free(m->nodes);
  gpd_map_free(&m->by_id);
  memset(m, 0, sizeof *m);
}
