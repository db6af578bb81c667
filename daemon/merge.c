/* merge.c - the node view: live per-process trees merged by Merkle id.
 *
 * Equal call paths have equal context ids in every process (hash.h), so
 * merging is a union of nodes keyed by id with exclusive metrics summed.
 * Adding profiles in order keeps "parents precede children": a node's
 * parent is either already merged from an earlier profile or precedes it in
 * its own profile.  Inclusive values are then one reverse sweep.
 *
 * Labels per user: a node's label and module come from the first profile
 * that had it, and that profile's owner (uid) owns the merged node.  A
 * profile of another uid with the same Merkle id (another user can
 * announce any build-id with a file of their own) is merged into a
 * separate node whose id mixes in its uid (gpd_merge_key), below its own
 * parent: one user's announcements never label another user's nodes.
 * The root is shared.  Ids therefore stay the Merkle ids for the first
 * owner and for every single-user view.
 * Caller holds the daemon lock while the merge borrows profile labels.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/hash.h"

#include "daemon.h"

uint32_t gpd_merge_find(const gpd_merge_t *m, uint64_t id) {
  uint64_t v;
  return gpd_map_get(&m->by_id, id, &v) ? (uint32_t)v : GPD_NONE;
}

uint64_t gpd_merge_key(uint64_t id, uid_t uid) {
  uint64_t u = (uint64_t)uid;
  uint64_t k = gpd_hash64(&u, sizeof u, id);
  return k ? k : 1; /* key 0 is the map's empty slot */
}

int gpd_merge_add(gpd_merge_t *m, const gpd_profile_t *p) {
  /* merged index of each of p's nodes (parents precede children) */
  uint32_t *at = malloc((p->nnodes ? p->nnodes : 1) * sizeof *at);
  int err = 0;
  if (at == NULL)
    return -ENOMEM;
  for (uint32_t i = 0; i < p->nnodes; i++) {
    const gpd_node_t *n = &p->nodes[i];
    at[i] = GPD_NONE;
    uint64_t key = n->id;
    uint32_t j = gpd_merge_find(m, key);
    if (j != GPD_NONE && n->parent != GPD_NONE && m->nodes[j].uid != p->uid) {
      key = gpd_merge_key(n->id, p->uid); /* another user's node: keep apart */
      j = gpd_merge_find(m, key);
    }
    if (j == GPD_NONE) {
      uint32_t par = GPD_NONE;
      if (n->parent != GPD_NONE) {
        par = at[n->parent];
        if (par == GPD_NONE)
          continue; /* cannot happen: parents precede children */
      }
      if (m->n == m->cap) {
        uint32_t nc = m->cap ? m->cap * 2 : 256;
        gpd_mnode_t *na = realloc(m->nodes, nc * sizeof *na);
        if (na == NULL) {
          err = -ENOMEM;
          goto out;
        }
        m->nodes = na;
        m->cap = nc;
      }
      j = m->n;
      if (gpd_map_put(&m->by_id, key, j) < 0) {
        err = -ENOMEM;
        goto out;
      }
      gpd_mnode_t *mn = &m->nodes[j];
      memset(mn, 0, sizeof *mn);
      mn->id = key;
      mn->parent_id = par == GPD_NONE ? 0 : m->nodes[par].id;
      mn->parent = par;
      mn->kind = n->kind;
      mn->prof = p;
      mn->uid = p->uid;
      mn->pidx = i;
      mn->depth = par == GPD_NONE ? 0 : m->nodes[par].depth + 1;
      m->n++;
    }
    at[i] = j;
    gpd_mnode_t *mn = &m->nodes[j];
    for (uint32_t k = 0; k < n->nm; k++)
      if (gpd_mval_add(&mn->excl, &mn->nex, &mn->capex, n->m[k].id, n->m[k].v) < 0) {
        err = -ENOMEM;
        goto out;
      }
  }
out:
  free(at);
  return err;
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
