/* advisor-blame.c - GPA's instruction blamer (Zhou et al., "GPA: A GPU
 * Performance Advisor Based on Instruction Sampling", CGO 2021, section 4)
 * over one kernel's SASS; the driver (advisor.c) then runs the optimizers
 * (advisor-opt.c) on its blame.
 *
 * For every instruction j with dependency stalls (long / short scoreboard,
 * wait) and every resource it reads, a backward slice over the CFG finds
 * the immediate defs: the search goes on along a path until the union of
 * the defs' predicates on it covers j's predicate (section 4, "predicated
 * instructions").  Scoreboards are virtual registers SB0-SB5 (a write or
 * read barrier is a def, the wait mask a use).  Edges are pruned by the
 * three rules of section 4: opcode (a memory-dependency stall comes from a
 * memory instruction, an execution dependency from an arithmetic one),
 * dominating use (a non-predicated use of the same resource on every path
 * i -> j: the stall would have shown there) and latency (every path longer
 * than i's latency upper bound).  The samples of j go to the remaining
 * edges by Eq. 1: S_i = R_path_i R_issue_i / sum_k(R_path_k R_issue_k) S_j
 * with R_issue from the defs' issued (SELECTED) samples and R_path
 * inversely proportional to the longest path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor-internal.h"

#define SLICE_BUDGET 8192u /* instruction steps per (instruction, resource) */
#define MAX_EDGES 64u      /* defs kept per (instruction, reason) */

/* Upper bound of an instruction's latency in instructions (an issue takes
 * at least a cycle, so cycles bound instructions): global / local memory
 * by a TLB miss, shared memory and MIO by their queues, fixed latency by
 * the longest pipeline (GPA section 4, rule 3; values from Jia et al.,
 * "Dissecting the NVIDIA Volta GPU architecture via microbenchmarking"
 * and the Turing/Ampere sequels, rounded up). */
uint32_t gpd__advisor_latency(const gpd_advisor_insn_t *in) {
  switch (in->cls) {
  case GPD_ADV_GLOBAL:
  case GPD_ADV_LOCAL:
    return 1024;
  case GPD_ADV_CONST:
    return 512;
  case GPD_ADV_SHARED:
  case GPD_ADV_MIO:
    return 128;
  case GPD_ADV_LONGOP:
    return 64;
  case GPD_ADV_SYNC:
    return 1024;
  default:
    return 16;
  }
}

/* GPA section 4, rule 1 (opcode): which defs can cause a stall of this reason. */
int gpd__advisor_reason_def_ok(uint32_t reason, const gpd_advisor_insn_t *def) {
  switch (reason) {
  case GPD_ADV_LONG_SB:
    return def->cls == GPD_ADV_GLOBAL || def->cls == GPD_ADV_LOCAL || def->cls == GPD_ADV_CONST;
  case GPD_ADV_SHORT_SB:
    return def->cls == GPD_ADV_SHARED || def->cls == GPD_ADV_MIO || def->cls == GPD_ADV_LONGOP ||
           def->cls == GPD_ADV_CONST;
  case GPD_ADV_WAIT:
    return def->cls == GPD_ADV_FIXED || def->cls == GPD_ADV_LONGOP;
  default:
    return 0;
  }
}

int gpd__advisor_reason_blamed(uint32_t reason) {
  return reason == GPD_ADV_LONG_SB || reason == GPD_ADV_SHORT_SB || reason == GPD_ADV_WAIT;
}

/* --------------------------------------------------- predicate sets */

/* bit 0: "_" (always); bits 1-7: Pi true; bits 8-14: Pi false; uniform
 * predicates UP0-6 in bits 15-28 the same way. */
static uint32_t pred_bit(const gpd_advisor_insn_t *in) {
  if (in->pred < 0)
    return 1;
  unsigned i = in->pred >= GPD_ADV_RES_UP ? (unsigned)(in->pred - GPD_ADV_RES_UP) + 14
                                          : (unsigned)(in->pred - GPD_ADV_RES_P);
  return 1u << (1 + i + (in->pred_neg ? 7 : 0));
}

/* P contains p' (GPA section 4): p' in P, "_" in P, or both Pi and !Pi. */
static int covers(uint32_t P, uint32_t want) {
  if (P & 1)
    return 1;
  if (P & want)
    return 1;
  for (unsigned i = 0; i < 14; i++) {
    unsigned t = i < 7 ? 1 + i : 15 + (i - 7), f = t + 7;
    if ((P >> t & 1) && (P >> f & 1))
      return 1;
  }
  return 0;
}

static int has_res(const uint16_t *set, unsigned n, uint16_t r) {
  for (unsigned i = 0; i < n; i++)
    if (set[i] == r)
      return 1;
  return 0;
}

/* ------------------------------------------------------ the slicer */

typedef struct frame_s {
  uint32_t idx;  /* instruction to look at */
  uint32_t dist; /* instructions from it to the use, inclusive of it */
  uint32_t cov;  /* predicates of the defs on the path */
  uint8_t used;  /* a non-predicated use of the resource seen on the path */
} frame_t;

typedef struct seen_s {
  uint32_t block, cov, dist;
  uint8_t used;
} seen_t;

typedef struct slicer_s {
  const gpd__advisor_t *k;
  frame_t *stack;
  size_t nstack, cap;
  seen_t *seen;
  size_t nseen, capseen;
} slicer_t;

static int push(slicer_t *s, frame_t f) {
  if (s->nstack == s->cap) {
    size_t c = s->cap ? 2 * s->cap : 64;
    frame_t *n = realloc(s->stack, c * sizeof *n);
    if (n == NULL)
      return -ENOMEM;
    s->stack = n;
    s->cap = c;
  }
  s->stack[s->nstack++] = f;
  return 0;
}

/* At a block entry: go on only with a state not seen before there, or the
 * same state with a longer path (longest paths, GPA heuristic 2). */
static int first_visit(slicer_t *s, uint32_t block, const frame_t *f) {
  for (size_t i = 0; i < s->nseen; i++) {
    seen_t *v = &s->seen[i];
    if (v->block == block && v->cov == f->cov && v->used == f->used) {
      if (f->dist <= v->dist)
        return 0;
      v->dist = f->dist;
      return 1;
    }
  }
  if (s->nseen == s->capseen) {
    size_t c = s->capseen ? 2 * s->capseen : 64;
    seen_t *n = realloc(s->seen, c * sizeof *n);
    if (n == NULL)
      return 0;
    s->seen = n;
    s->capseen = c;
  }
  s->seen[s->nseen++] = (seen_t){block, f->cov, f->dist, f->used};
  return 1;
}

/* Push the instructions before idx (same block, else the predecessors' last). */
static int step_back(slicer_t *s, const frame_t *f) {
  const gpd__advisor_t *k = s->k;
  uint32_t idx = f->idx;
  int32_t b = k->block_of[idx];
  if (b < 0)
    return 0;
  if (idx > k->block_first[b]) {
    frame_t n = *f;
    n.idx = idx - 1;
    n.dist = f->dist + 1;
    return push(s, n);
  }
  for (uint32_t p = k->pred_first[b]; p < k->pred_first[b + 1]; p++) {
    uint32_t pb = k->preds[p];
    if (k->block_of[k->block_last[pb]] != (int32_t)pb)
      continue; /* a block without instructions */
    frame_t n = *f;
    n.idx = k->block_last[pb];
    n.dist = f->dist + 1;
    if (!first_visit(s, pb, &n))
      continue;
    if (push(s, n) < 0)
      return -ENOMEM;
  }
  return 0;
}

typedef struct edge_s {
  uint32_t def, dmin, dmax;
} edge_t;

static void add_edge(edge_t *e, size_t *ne, uint32_t def, uint32_t dist) {
  for (size_t i = 0; i < *ne; i++)
    if (e[i].def == def) {
      if (dist < e[i].dmin)
        e[i].dmin = dist;
      if (dist > e[i].dmax)
        e[i].dmax = dist;
      return;
    }
  if (*ne < MAX_EDGES)
    e[(*ne)++] = (edge_t){def, dist, dist};
}

/* Immediate defs of resource r read by instruction j (backward slicing
 * with the predicate rule and the dominating-use rule). */
static int slice(slicer_t *s, uint32_t j, uint16_t r, uint32_t maxdist, edge_t *e, size_t *ne) {
  const gpd__advisor_t *k = s->k;
  uint32_t want = pred_bit(&k->a->insns[j]);
  s->nstack = 0;
  s->nseen = 0;
  frame_t f0 = {.idx = j, .dist = 0, .cov = 0, .used = 0};
  if (step_back(s, &f0) < 0)
    return -ENOMEM;
  unsigned budget = SLICE_BUDGET;
  while (s->nstack && budget--) {
    frame_t f = s->stack[--s->nstack];
    if (f.dist > maxdist)
      continue;
    const gpd_advisor_insn_t *in = &k->a->insns[f.idx];
    if (has_res(in->def, in->ndef, r)) {
      if (!f.used)
        add_edge(e, ne, f.idx, f.dist);
      f.cov |= pred_bit(in);
      if (covers(f.cov, want))
        continue;
    } else if (in->pred < 0 && has_res(in->use, in->nuse, r)) {
      f.used = 1; /* rule 2: a use k on the path would have stalled instead */
    }
    if (step_back(s, &f) < 0)
      return -ENOMEM;
  }
  return 0;
}

static int add_blame(gpd_advice_t *a, size_t *cap, gpd_advisor_blame_t b) {
  if (a->nblame == *cap) {
    size_t c = *cap ? 2 * *cap : 256;
    gpd_advisor_blame_t *n = realloc(a->blame, c * sizeof *n);
    if (n == NULL)
      return -ENOMEM;
    a->blame = n;
    *cap = c;
  }
  a->blame[a->nblame++] = b;
  return 0;
}

int gpd__advisor_blame(gpd__advisor_t *k) {
  gpd_advice_t *a = k->a;
  slicer_t s = {.k = k};
  size_t cap = 0;
  int err = 0;
  edge_t e[MAX_EDGES];
  for (size_t q = 0; q < k->nagg && err == 0; q++) {
    const gpd__agg_t *g = &k->agg[q];
    uint32_t j = g->idx;
    size_t ne = 0;
    if (gpd__advisor_reason_blamed(g->reason)) {
      const gpd_advisor_insn_t *u = &a->insns[j];
      int sb = g->reason != GPD_ADV_WAIT && u->has_ctrl; /* scoreboards say it exactly */
      for (unsigned i = 0; i < u->nuse && err == 0; i++) {
        uint16_t r = u->use[i];
        if ((r >= GPD_ADV_RES_SB) != sb)
          continue;
        edge_t tmp[MAX_EDGES];
        size_t nt = 0;
        err = slice(&s, j, r, 1024, tmp, &nt);
        for (size_t t = 0; t < nt; t++) {
          const gpd_advisor_insn_t *d = &a->insns[tmp[t].def];
          if (!gpd__advisor_reason_def_ok(g->reason, d)) /* rule 1 */
            continue;
          if (tmp[t].dmin > gpd__advisor_latency(d)) /* rule 3 */
            continue;
          /* the longest path (GPA heuristic 2), unless only a trip round
           * a loop makes it longer than the def's latency */
          add_edge(e, &ne, tmp[t].def, tmp[t].dmin);
          if (tmp[t].dmax <= gpd__advisor_latency(d))
            add_edge(e, &ne, tmp[t].def, tmp[t].dmax);
        }
      }
    }
    if (err)
      break;
    if (ne == 0) { /* the stall stays where it was seen */
      err = add_blame(a, &cap, (gpd_advisor_blame_t){j, j, 0, g->reason, g->samples, g->latency});
      continue;
    }
    /* Eq. 1 */
    double issued = 0, inv = 0, wsum = 0, w[MAX_EDGES];
    for (size_t t = 0; t < ne; t++) {
      issued += a->issued[e[t].def];
      inv += 1.0 / (e[t].dmax ? e[t].dmax : 1);
    }
    for (size_t t = 0; t < ne; t++) {
      double ri = issued > 0 ? a->issued[e[t].def] / issued : 1.0 / (double)ne;
      double rp = (1.0 / (e[t].dmax ? e[t].dmax : 1)) / inv;
      w[t] = ri * rp;
      wsum += w[t];
    }
    for (size_t t = 0; t < ne && err == 0; t++) {
      double f = wsum > 0 ? w[t] / wsum : 1.0 / (double)ne;
      if (f == 0)
        continue;
      err = add_blame(a, &cap,
                      (gpd_advisor_blame_t){e[t].def, j, e[t].dmax, g->reason, f * g->samples,
                                        f * g->latency});
    }
  }
  free(s.stack);
  free(s.seen);
  return err;
}
