/* profile-pending.c - records that wait: NODEs whose parent or module is
 * not known yet, ACTIVITYs whose invocation, node or kernel name is not
 * known yet (pacts, chained per correlation id in pend_corr), bounded
 * (GPD_PROFILE_MAX_PENDING) and retried after each drain pass.  Caller
 * holds the daemon lock. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile-internal.h"

#define PACT_NONE UINT64_MAX

/* pacts index of logical id l (pbase + index). */
static inline uint32_t pact_ix(const gpd_profile_t *p, uint64_t l) { return (uint32_t)(l - p->pbase); }

static void pend_link(gpd_profile_t *p, uint32_t i) {
  int created;
  uint64_t *head = gpd_map_upsert(&p->pend_corr, p->pacts[i].a.corr, &created);
  if (head == NULL) {
    /* out of memory: unchained, found by the next rescan */
    p->pacts[i].next = PACT_NONE;
    p->pact_blocked++;
    p->pend_dirty = 1;
    return;
  }
  p->pacts[i].next = created ? PACT_NONE : *head;
  *head = p->pbase + i;
}

/* Drop the popped prefix [0, pact0) by moving the rest down: logical ids
 * stay valid (pbase grows by as much), so no chain changes. */
static void pact_shift(gpd_profile_t *p) {
  memmove(p->pacts, p->pacts + p->pact0, (size_t)(p->npacts - p->pact0) * sizeof *p->pacts);
  p->npacts -= p->pact0;
  p->pbase += p->pact0;
  p->pact0 = 0;
}

/* Pop matched activities off the front (in-order matching leaves them
 * there): O(popped), nothing moves or is relinked. */
static void pact_pop(gpd_profile_t *p) {
  while (p->pact0 < p->npacts && p->pacts[p->pact0].a.h.type == GPD_REC_NONE) {
    p->pact0++;
    p->ndead--;
  }
  if (p->pact0 == p->npacts) {
    p->pbase += p->npacts;
    p->npacts = p->pact0 = 0;
  }
}

void gpd__profile_pending_activity(gpd_profile_t *p, const gpd_rec_activity_t *a) {
  /* a full array whose popped prefix is a quarter of it moves down
   * instead of growing (moving costs the live entries, fewer than the
   * appends since the last move) */
  if (p->npacts == p->cappacts && p->pact0 > 0 && p->pact0 >= p->cappacts / 4)
    pact_shift(p);
  if (p->npacts - p->pact0 >= GPD_PROFILE_MAX_PENDING ||
      GPD_GROW(p->pacts, p->npacts, p->cappacts, 64) < 0) {
    gpd__profile_attrib_try(p, a, 1); /* bounded: never lost, goes to <unknown> */
    return;
  }
  uint32_t i = p->npacts++;
  p->pacts[i].a = *a;
  p->pacts[i].seq = GPD_PEND_SEQ(2, ++p->pend_seq);
  pend_link(p, i);
}

/* An INVOKE arrived (val: its GPD_CORR_PACK, in the correlation map):
 * match the activities that waited for its corr.  Returns 0 if that
 * consumed the invocation (removed from the map), 1 if it stays. */
int gpd__profile_pending_match(gpd_profile_t *p, uint64_t corr, uint64_t val) {
  uint64_t head;
  if (!gpd_map_take(&p->pend_corr, corr, &head))
    return 1;
  /* chain is newest first; attribute oldest first */
  uint32_t chain[64], n = 0;
  for (uint64_t l = head; l != PACT_NONE && n < 64; l = p->pacts[pact_ix(p, l)].next)
    chain[n++] = pact_ix(p, l);
  uint64_t rest = n == 64 ? p->pacts[chain[63]].next : PACT_NONE;
  if (rest != PACT_NONE) {
    gpd_map_put(&p->pend_corr, corr, rest); /* long chains: the rest waits for a rescan */
    p->pact_blocked++;
    p->pend_dirty = 1;
  }
  int present = 1, multi = (int)((val >> 40) & 1);
  while (n-- > 0) {
    uint32_t i = chain[n];
    int r = present ? gpd__profile_attrib_at(p, &p->pacts[i].a, val, 0) : GPD__ACT_WAIT;
    if (r == GPD__ACT_DONE) {
      p->pacts[i].a.h.type = GPD_REC_NONE;
      gpd__profile_delta_gone(p, p->pacts[i].seq);
      p->ndead++;
      if (!multi) {
        gpd__profile_corr_del(p, corr, val);
        present = 0;
      }
    } else {
      p->pact_blocked += r == GPD__ACT_BLOCKED;
      pend_link(p, i);
    }
  }
  return present;
}

/* Room for one more pending NODE (pnodes and pnode_seq).  0 or -ENOMEM. */
static int pnode_room(gpd_profile_t *p) {
  if (p->npnodes < p->cappnodes)
    return 0;
  uint32_t nc = p->cappnodes ? p->cappnodes * 2 : 64;
  gpd_rec_node_t *na = realloc(p->pnodes, (size_t)nc * sizeof *na);
  if (na == NULL)
    return -ENOMEM;
  p->pnodes = na;
  uint64_t *ns = realloc(p->pnode_seq, (size_t)nc * sizeof *ns);
  if (ns == NULL)
    return -ENOMEM;
  p->pnode_seq = ns;
  p->cappnodes = nc;
  return 0;
}

void gpd__profile_pending_node(gpd_profile_t *p, const gpd_rec_node_t *r) {
  if (p->npnodes >= GPD_PROFILE_MAX_PENDING || pnode_room(p) < 0) {
    p->dropped_nodes++;
    p->full = 1;
    return;
  }
  p->pnode_seq[p->npnodes] = GPD_PEND_SEQ(0, ++p->pend_seq);
  p->pnodes[p->npnodes++] = *r;
}

void gpd__profile_pending_retry(gpd_profile_t *p, int force) {
  p->pend_gen++;
  /* nodes: chains may arrive child-first across rings; loop to a fixpoint */
  int progress = 1;
  while (progress && p->npnodes > 0) {
    progress = 0;
    uint32_t w = 0;
    for (uint32_t i = 0; i < p->npnodes; i++) {
      if (gpd__profile_nodes_place(p, &p->pnodes[i])) {
        progress = 1;
        gpd__profile_delta_gone(p, p->pnode_seq[i]);
      } else {
        p->pnode_seq[w] = p->pnode_seq[i];
        p->pnodes[w++] = p->pnodes[i];
      }
    }
    p->npnodes = w;
  }
  /* A new node or string can only complete activities whose invocation
   * is known (GPD__ACT_BLOCKED); those waiting for their INVOKE are matched by
   * gpd__profile_pending_match when it comes.  So rescan on pend_dirty only if some are
   * blocked (pact_blocked: an upper bound, recounted here), and compact
   * when half the list is tombstones. */
  if (p->pend_dirty && p->pact_blocked == 0)
    p->pend_dirty = 0;
  pact_pop(p);
  if (!force && !p->pend_dirty && p->ndead * 2 <= p->npacts - p->pact0)
    return;
  p->pend_dirty = 0;
  p->pact_blocked = 0;
  /* rescan (or compact) the pending activities; rebuild the chains in a
   * cleared map (its table kept: no regrowth, no fresh pages) */
  gpd_map_reset(&p->pend_corr, p->npacts - p->pact0 - p->ndead);
  uint32_t w = 0;
  for (uint32_t i = p->pact0; i < p->npacts; i++) {
    if (i + 16 < p->npacts) { /* the lookups below miss the cache with many pending */
      gpd_map_prefetch(&p->corr, p->pacts[i + 16].a.corr);
      gpd_map_prefetch(&p->pend_corr, p->pacts[i + 16].a.corr);
    }
    if (p->pacts[i].a.h.type == GPD_REC_NONE)
      continue;
    int st = gpd__profile_attrib_try(p, &p->pacts[i].a, force);
    if (st == GPD__ACT_DONE) {
      gpd__profile_delta_gone(p, p->pacts[i].seq);
      continue;
    }
    p->pact_blocked += st == GPD__ACT_BLOCKED;
    if (w != i)
      p->pacts[w] = p->pacts[i];
    pend_link(p, w);
    w++;
  }
  p->npacts = w;
  p->pact0 = 0;
  p->ndead = 0;
}
