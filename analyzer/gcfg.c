/* gcfg.c - basic blocks, natural loops and device calls of one GPU
 * function, built from its instructions (disasm.c).
 *
 * nvdisasm's own -cfg graphs are not used: "Poster: complete CPU+GPU
 * profile view in HPCToolkit" (section "structure recovery") lists their
 * shortcomings, and building from the instruction stream gives the
 * repaired form directly: blocks end at every branch and every call,
 * and a block no branch reaches is linked by offset to the block it
 * follows (fall-through), never left dangling.  Loops are natural loops
 * of back edges to dominators (Cooper, Harvey, Kennedy, "A simple, fast
 * dominance algorithm", 2001); an irreducible cycle is not reported.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-analysis.h"

void gpd_gcfg_free(gpd_gcfg_t *g) {
  if (g == NULL)
    return;
  for (size_t i = 0; i < g->nblocks; i++)
    free(g->blocks[i].succ);
  free(g->blocks);
  free(g->loops);
  free(g->calls);
  free(g->callees);
  free(g);
}

int32_t gpd_gcfg_block_at(const gpd_gcfg_t *g, uint64_t off) {
  if (g == NULL || g->nblocks == 0 || off < g->lo || off >= g->hi)
    return -1;
  size_t lo = 0, hi = g->nblocks;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->blocks[mid].lo <= off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo ? (int32_t)(lo - 1) : -1;
}

static int add_succ(gpd_block_t *b, uint32_t to) {
  for (uint32_t i = 0; i < b->nsucc; i++)
    if (b->succ[i] == to)
      return 0;
  uint32_t *s = realloc(b->succ, (b->nsucc + 1) * sizeof *s);
  if (s == NULL)
    return -ENOMEM;
  s[b->nsucc++] = to;
  b->succ = s;
  return 0;
}

static int intersect(const int32_t *idom, const uint32_t *rpo_num, int32_t a, int32_t b) {
  while (a != b) {
    while (rpo_num[a] > rpo_num[b])
      a = idom[a];
    while (rpo_num[b] > rpo_num[a])
      b = idom[b];
  }
  return a;
}

static int dominates(const int32_t *idom, int32_t h, int32_t n) {
  for (;;) {
    if (n == h)
      return 1;
    if (idom[n] == n || idom[n] < 0)
      return 0;
    n = idom[n];
  }
}

int gpd_gcfg_build(const gpd_disasm_sec_t *sec, uint64_t lo, uint64_t hi, gpd_gcfg_t **out) {
  int err = -ENOMEM;
  if (sec == NULL || out == NULL || hi <= lo)
    return -EINVAL;
  *out = NULL;
  size_t first = 0, last;
  while (first < sec->ninsns && sec->insns[first].off < lo)
    first++;
  last = first;
  while (last < sec->ninsns && sec->insns[last].off < hi)
    last++;
  size_t n = last - first;
  if (n == 0)
    return -ENOENT;
  const gpd_insn_t *in = sec->insns + first;

  gpd_gcfg_t *g = calloc(1, sizeof *g);
  uint8_t *leader = calloc(n, 1);
  uint32_t *blk_of = calloc(n, sizeof *blk_of);
  int32_t *idom = NULL, *order = NULL, *stack = NULL;
  uint32_t *rpo_num = NULL, *pred_cnt = NULL, **preds = NULL, *loop_size = NULL;
  uint8_t *seen = NULL, *inloop = NULL;
  if (g == NULL || leader == NULL || blk_of == NULL)
    goto fail;
  g->lo = lo;
  g->hi = hi;

  /* leaders: entry, branch targets, instructions after a branch, call or return */
  leader[0] = 1;
  size_t ncalls = 0;
  for (size_t i = 0; i < n; i++) {
    if (in[i].flags & (GPD_INSN_BRANCH | GPD_INSN_CALL | GPD_INSN_RETURN)) {
      if (i + 1 < n)
        leader[i + 1] = 1;
    }
    if (in[i].flags & GPD_INSN_CALL)
      ncalls++;
    if ((in[i].flags & GPD_INSN_BRANCH) && in[i].target != UINT64_MAX && in[i].target >= lo &&
        in[i].target < hi) {
      size_t a = 0, z = n; /* instructions are sorted by offset */
      while (a < z) {
        size_t mid = a + (z - a) / 2;
        if (in[mid].off < in[i].target)
          a = mid + 1;
        else
          z = mid;
      }
      if (a < n)
        leader[a] = 1; /* a target inside an instruction starts the next one */
    }
  }
  size_t nb = 0;
  for (size_t i = 0; i < n; i++)
    nb += leader[i];
  if ((g->blocks = calloc(nb, sizeof *g->blocks)) == NULL)
    goto fail;
  g->nblocks = nb;
  for (size_t i = 0, b = 0; i < n; i++) {
    if (leader[i] && i > 0)
      b++;
    blk_of[i] = (uint32_t)b;
    if (leader[i]) {
      g->blocks[b].lo = in[i].off;
      g->blocks[b].loop = -1;
    }
    g->blocks[b].hi = i + 1 < n ? in[i + 1].off : hi;
  }
  if (ncalls) {
    if ((g->calls = calloc(ncalls, sizeof *g->calls)) == NULL ||
        (g->callees = calloc(ncalls, sizeof *g->callees)) == NULL)
      goto fail;
  }
  /* edges, from each block's last instruction */
  for (size_t i = 0; i < n; i++) {
    if (in[i].flags & GPD_INSN_CALL) {
      g->calls[g->ncalls] = in[i].off;
      g->callees[g->ncalls++] = in[i].target;
    }
    if (i + 1 < n && !leader[i + 1])
      continue;
    gpd_block_t *b = &g->blocks[blk_of[i]];
    uint32_t f = in[i].flags;
    if ((f & GPD_INSN_BRANCH) && !(f & GPD_INSN_INDIRECT) && in[i].target >= lo &&
        in[i].target < hi) {
      int32_t t = gpd_gcfg_block_at(g, in[i].target);
      if (t >= 0 && add_succ(b, (uint32_t)t) < 0)
        goto fail;
    }
    int falls = !(f & (GPD_INSN_BRANCH | GPD_INSN_RETURN)) || (f & GPD_INSN_COND);
    if (falls && i + 1 < n && add_succ(b, blk_of[i + 1]) < 0)
      goto fail;
  }

  /* reverse post-order from the entry (iterative DFS) */
  idom = malloc(nb * sizeof *idom);
  order = malloc(nb * sizeof *order);
  stack = malloc(2 * nb * sizeof *stack);
  rpo_num = malloc(nb * sizeof *rpo_num);
  seen = calloc(nb, 1);
  pred_cnt = calloc(nb, sizeof *pred_cnt);
  preds = calloc(nb, sizeof *preds);
  if (!idom || !order || !stack || !rpo_num || !seen || !pred_cnt || !preds)
    goto fail;
  size_t nord = 0, sp = 0;
  stack[sp++] = 0;
  stack[sp++] = 0;
  seen[0] = 1;
  while (sp) {
    int32_t b = stack[sp - 2], k = stack[sp - 1];
    if ((uint32_t)k < g->blocks[b].nsucc) {
      stack[sp - 1]++;
      uint32_t s = g->blocks[b].succ[k];
      if (!seen[s]) {
        seen[s] = 1;
        stack[sp++] = (int32_t)s;
        stack[sp++] = 0;
      }
    } else {
      order[nord++] = b;
      sp -= 2;
    }
  }
  for (size_t i = 0; i < nb; i++) {
    idom[i] = -1;
    rpo_num[i] = UINT32_MAX;
  }
  for (size_t i = 0; i < nord; i++) /* order[] is post-order; reverse it */
    rpo_num[order[i]] = (uint32_t)(nord - 1 - i);
  for (size_t b = 0; b < nb; b++)
    for (uint32_t k = 0; k < g->blocks[b].nsucc; k++)
      if (seen[b])
        pred_cnt[g->blocks[b].succ[k]]++;
  for (size_t b = 0; b < nb; b++)
    if (pred_cnt[b] && (preds[b] = malloc(pred_cnt[b] * sizeof **preds)) == NULL)
      goto fail;
  memset(pred_cnt, 0, nb * sizeof *pred_cnt);
  for (size_t b = 0; b < nb; b++)
    for (uint32_t k = 0; seen[b] && k < g->blocks[b].nsucc; k++) {
      uint32_t s = g->blocks[b].succ[k];
      preds[s][pred_cnt[s]++] = (uint32_t)b;
    }
  /* Cooper-Harvey-Kennedy: iterate idom to a fixed point in RPO */
  idom[0] = 0;
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t i = nord; i-- > 0;) {
      int32_t b = order[i];
      if (b == 0)
        continue;
      int32_t nd = -1;
      for (uint32_t k = 0; k < pred_cnt[b]; k++) {
        int32_t p = (int32_t)preds[b][k];
        if (idom[p] < 0)
          continue;
        nd = nd < 0 ? p : intersect(idom, rpo_num, p, nd);
      }
      if (nd >= 0 && idom[b] != nd) {
        idom[b] = nd;
        changed = 1;
      }
    }
  }
  /* natural loops: back edge u -> h with h dominating u; body = h plus
   * everything reaching u backwards without passing h */
  size_t cap_loops = 0;
  inloop = calloc(nb, 1);
  if (inloop == NULL)
    goto fail;
  uint8_t **bodies = NULL;
  for (size_t h = 0; h < nb; h++) {
    if (!seen[h])
      continue;
    int is_header = 0;
    for (uint32_t k = 0; k < pred_cnt[h]; k++)
      if (dominates(idom, (int32_t)h, (int32_t)preds[h][k]))
        is_header = 1;
    if (!is_header)
      continue;
    uint8_t *body = calloc(nb, 1);
    if (body == NULL)
      goto fail_bodies;
    body[h] = 1;
    sp = 0;
    for (uint32_t k = 0; k < pred_cnt[h]; k++) {
      uint32_t u = preds[h][k];
      if (dominates(idom, (int32_t)h, (int32_t)u) && !body[u]) {
        body[u] = 1;
        stack[sp++] = (int32_t)u;
      }
    }
    while (sp) {
      int32_t u = stack[--sp];
      for (uint32_t k = 0; k < pred_cnt[u]; k++) {
        uint32_t p = preds[u][k];
        if (!body[p]) {
          body[p] = 1;
          stack[sp++] = (int32_t)p;
        }
      }
    }
    if (g->nloops == cap_loops) {
      cap_loops = cap_loops ? 2 * cap_loops : 4;
      gpd_loop_t *l = realloc(g->loops, cap_loops * sizeof *l);
      uint8_t **bs = realloc(bodies, cap_loops * sizeof *bs);
      if (l)
        g->loops = l;
      if (bs)
        bodies = bs;
      if (!l || !bs) {
        free(body);
        goto fail_bodies;
      }
    }
    bodies[g->nloops] = body;
    g->loops[g->nloops++] = (gpd_loop_t){(uint32_t)h, -1, g->blocks[h].lo, 0};
  }
  if (g->nloops) {
    if ((loop_size = calloc(g->nloops, sizeof *loop_size)) == NULL)
      goto fail_bodies;
    for (size_t l = 0; l < g->nloops; l++)
      for (size_t b = 0; b < nb; b++)
        loop_size[l] += bodies[l][b];
    /* outer (larger) loops first: a selection sort keeps bodies[] in step */
    for (size_t i = 0; i < g->nloops; i++) {
      size_t m = i;
      for (size_t j = i + 1; j < g->nloops; j++)
        if (loop_size[j] > loop_size[m] ||
            (loop_size[j] == loop_size[m] && g->loops[j].head_off < g->loops[m].head_off))
          m = j;
      gpd_loop_t tl = g->loops[i];
      g->loops[i] = g->loops[m];
      g->loops[m] = tl;
      uint8_t *tb = bodies[i];
      bodies[i] = bodies[m];
      bodies[m] = tb;
      uint32_t ts = loop_size[i];
      loop_size[i] = loop_size[m];
      loop_size[m] = ts;
    }
    for (size_t l = 0; l < g->nloops; l++) {
      /* parent: the innermost earlier (larger) loop holding this header */
      for (size_t p = l; p-- > 0;)
        if (bodies[p][g->loops[l].header]) {
          g->loops[l].parent = (int32_t)p;
          break;
        }
      g->loops[l].depth = g->loops[l].parent < 0 ? 1 : g->loops[g->loops[l].parent].depth + 1;
      for (size_t b = 0; b < nb; b++)
        if (bodies[l][b])
          g->blocks[b].loop = (int32_t)l; /* later loops are inner */
    }
  }
  err = 0;
fail_bodies:
  for (size_t l = 0; bodies && l < g->nloops; l++)
    free(bodies[l]);
  free(bodies);
fail:
  for (size_t b = 0; preds && b < (g ? g->nblocks : 0); b++)
    free(preds[b]);
  free(preds);
  free(pred_cnt);
  free(seen);
  free(inloop);
  free(rpo_num);
  free(stack);
  free(order);
  free(idom);
  free(loop_size);
  free(blk_of);
  free(leader);
  if (err < 0) {
    gpd_gcfg_free(g);
    return err;
  }
  *out = g;
  return 0;
}
