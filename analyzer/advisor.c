/* advisor.c - the advisor's driver (docs/ADVISOR.md): gpd_advisor_run decodes
 * a kernel's SASS (advisor-sass.c), runs the thread-index analysis
 * (advisor-tid.c), builds the structure the blamer and the optimizers
 * walk (blocks, predecessors, loops, functions), places the PC samples on
 * instructions, then blames (advisor-blame.c) and optimizes
 * (advisor-opt.c, advisor-occupancy.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor-internal.h"

void gpd_advisor_free(gpd_advice_t *a) {
  if (a == NULL)
    return;
  free(a->insns);
  free(a->samples);
  free(a->latency);
  free(a->issued);
  free(a->blame);
  free(a);
}

static void k_free(gpd__advisor_t *k) {
  free(k->block_of);
  free(k->block_first);
  free(k->block_last);
  free(k->pred_first);
  free(k->preds);
  free(k->loop_of);
  free(k->loop_parent);
  free(k->loop_head);
  free(k->func_of);
  free(k->agg);
}

static size_t lower_idx(const gpd_disasm_sec_t *sec, uint64_t off) {
  size_t lo = 0, hi = sec->ninsns;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (sec->insns[mid].off < off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void note(gpd_advice_t *a, const char *msg) {
  size_t n = strlen(a->notes);
  snprintf(a->notes + n, sizeof a->notes - n, "%s%s", n ? "; " : "", msg);
}

/* Room for element n in two parallel arrays of 32-bit values. */
static int grow2(void **x, void **y, size_t *cap, size_t n, size_t first) {
  if (n < *cap)
    return 0;
  size_t c = *cap ? 2 * *cap : first;
  void *nx = realloc(*x, c * sizeof(uint32_t));
  if (nx == NULL)
    return -ENOMEM;
  *x = nx;
  void *ny = realloc(*y, c * sizeof(uint32_t));
  if (ny == NULL)
    return -ENOMEM;
  *y = ny;
  *cap = c;
  return 0;
}

/* Blocks, predecessors and loops of every function of the section. */
static int structure(gpd__advisor_t *k) {
  const gpd_disasm_sec_t *sec = k->in->sec;
  size_t n = sec->ninsns, capb = 0, capl = 0, cape = 0, ne = 0;
  uint32_t *eto = NULL, *efrom = NULL;
  int err = 0;
  if ((k->block_of = malloc(n * sizeof *k->block_of)) == NULL ||
      (k->loop_of = malloc(n * sizeof *k->loop_of)) == NULL ||
      (k->func_of = malloc(n * sizeof *k->func_of)) == NULL)
    return -ENOMEM;
  k->kernel_func = -1;
  const gpd_cubin_t *c = k->in->cubin;
  for (size_t i = 0; i < n; i++) {
    k->block_of[i] = -1;
    k->loop_of[i] = -1;
    k->func_of[i] = -1;
    const gpd_cubin_func_t *f = c ? gpd_cubin_func_at(c, k->in->section, sec->insns[i].off) : NULL;
    if (f)
      k->func_of[i] = (int32_t)(f - c->funcs);
  }
  if (c) {
    const gpd_cubin_func_t *kf = gpd_cubin_func_at(c, k->in->section, k->in->kernel_lo);
    k->kernel_func = kf ? (int32_t)(kf - c->funcs) : -1;
  }
  for (size_t s0 = 0; s0 < n && err == 0;) {
    size_t s1 = s0 + 1;
    while (s1 < n && k->func_of[s1] == k->func_of[s0])
      s1++;
    uint64_t lo = sec->insns[s0].off, hi = s1 < n ? sec->insns[s1].off : sec->insns[s1 - 1].off + 16;
    gpd_gcfg_t *g = NULL;
    int rc = gpd_gcfg_build(sec, lo, hi, &g);
    if (rc == -ENOMEM)
      err = rc;
    if (rc < 0) {
      s0 = s1;
      continue;
    }
    size_t b0 = k->nblocks, l0 = k->nloops;
    for (size_t b = 0; b < g->nblocks && err == 0; b++) {
      if (grow2((void **)&k->block_first, (void **)&k->block_last, &capb, k->nblocks, 64) < 0) {
        err = -ENOMEM;
        break;
      }
      size_t f = lower_idx(sec, g->blocks[b].lo), l = lower_idx(sec, g->blocks[b].hi);
      k->block_first[k->nblocks] = (uint32_t)f;
      k->block_last[k->nblocks] = (uint32_t)(l > f ? l - 1 : 0);
      for (size_t i = f; i < l; i++) {
        k->block_of[i] = (int32_t)k->nblocks;
        k->loop_of[i] = g->blocks[b].loop >= 0 ? (int32_t)(l0 + (size_t)g->blocks[b].loop) : -1;
      }
      for (uint32_t s = 0; s < g->blocks[b].nsucc; s++) {
        if (grow2((void **)&eto, (void **)&efrom, &cape, ne, 256) < 0) {
          err = -ENOMEM;
          break;
        }
        efrom[ne] = (uint32_t)k->nblocks;
        eto[ne] = (uint32_t)(b0 + g->blocks[b].succ[s]);
        ne++;
      }
      k->nblocks++;
    }
    for (size_t l = 0; l < g->nloops && err == 0; l++) {
      if (grow2((void **)&k->loop_parent, (void **)&k->loop_head, &capl, k->nloops, 16) < 0) {
        err = -ENOMEM;
        break;
      }
      k->loop_parent[k->nloops] = g->loops[l].parent >= 0 ? (int32_t)(l0 + (size_t)g->loops[l].parent) : -1;
      k->loop_head[k->nloops] = (uint32_t)lower_idx(sec, g->loops[l].head_off);
      k->nloops++;
    }
    gpd_gcfg_free(g);
    s0 = s1;
  }
  /* predecessors, CSR */
  if (err == 0 && (k->pred_first = calloc(k->nblocks + 2, sizeof *k->pred_first)) == NULL)
    err = -ENOMEM;
  if (err == 0 && (k->preds = malloc((ne ? ne : 1) * sizeof *k->preds)) == NULL)
    err = -ENOMEM;
  if (err == 0) {
    for (size_t e = 0; e < ne; e++)
      k->pred_first[eto[e] + 1]++;
    for (size_t b = 0; b < k->nblocks; b++)
      k->pred_first[b + 1] += k->pred_first[b];
    uint32_t *fill = calloc(k->nblocks + 1, sizeof *fill);
    if (fill == NULL) {
      err = -ENOMEM;
    } else {
      for (size_t e = 0; e < ne; e++)
        k->preds[k->pred_first[eto[e]] + fill[eto[e]]++] = efrom[e];
      free(fill);
    }
  }
  free(eto);
  free(efrom);
  return err;
}

static int agg_cmp(const void *x, const void *y) {
  const gpd__agg_t *a = x, *b = y;
  if (a->idx != b->idx)
    return a->idx < b->idx ? -1 : 1;
  return a->reason < b->reason ? -1 : a->reason > b->reason;
}

int gpd_advisor_run(const gpd_advisor_input_t *in, gpd_advice_t **out) {
  if (in == NULL || out == NULL || in->sec == NULL || in->sec->ninsns == 0)
    return -EINVAL;
  *out = NULL;
  const gpd_disasm_sec_t *sec = in->sec;
  size_t n = sec->ninsns;
  gpd__advisor_t k = {.in = in};
  gpd_advice_t *a = calloc(1, sizeof *a);
  int err = -ENOMEM;
  if (a == NULL)
    return -ENOMEM;
  k.a = a;
  a->ninsns = n;
  if ((a->insns = calloc(n, sizeof *a->insns)) == NULL ||
      (a->samples = calloc(n, sizeof *a->samples)) == NULL ||
      (a->latency = calloc(n, sizeof *a->latency)) == NULL ||
      (a->issued = calloc(n, sizeof *a->issued)) == NULL)
    goto out;
  size_t unknown = 0;
  for (size_t i = 0; i < n; i++) {
    gpd_advisor_insn_t *d = &a->insns[i];
    if (gpd_advisor_decode(sec->insns[i].text, d) < 0) {
      memset(d, 0, sizeof *d);
      d->pred = -1;
      d->wbar = d->rbar = 7;
      snprintf(d->op, sizeof d->op, "%s", sec->insns[i].opcode);
      unknown++;
    }
    d->off = sec->insns[i].off;
    uint64_t slot = d->off / 16;
    if (in->ctrl && d->off % 16 == 0 && slot < in->nctrl) {
      gpd_advisor_apply_ctrl(d, in->ctrl[slot]);
      a->have_ctrl = 1;
    }
  }
  if (unknown) {
    char m[96];
    snprintf(m, sizeof m, "%zu instructions without operands", unknown);
    note(a, m);
  }
  if (!a->have_ctrl)
    note(a, "no control bits: scoreboard dependencies approximated by registers");
  gpd__advisor_tid(a, sec);
  if ((err = structure(&k)) < 0)
    goto out;
  /* samples -> instructions */
  if (in->ns && (k.agg = malloc(in->ns * sizeof *k.agg)) == NULL) {
    err = -ENOMEM;
    goto out;
  }
  for (size_t q = 0; q < in->ns; q++) {
    const gpd_advisor_psamp_t *s = &in->s[q];
    double sm = s->samples > 0 && s->samples < 1e15 ? s->samples : 0;
    double lt = s->latency > 0 && s->latency < 1e15 ? s->latency : 0;
    uint64_t off = s->pc + in->kernel_lo;
    size_t i = lower_idx(sec, off);
    if (s->reason >= GPD_ADV__COUNT || i >= n || sec->insns[i].off != off || off < s->pc) {
      a->unplaced += sm;
      continue;
    }
    k.agg[k.nagg++] = (gpd__agg_t){(uint32_t)i, s->reason, sm, lt};
  }
  if (k.nagg > 1)
    qsort(k.agg, k.nagg, sizeof *k.agg, agg_cmp);
  size_t m = 0;
  for (size_t q = 0; q < k.nagg; q++) {
    if (m && k.agg[m - 1].idx == k.agg[q].idx && k.agg[m - 1].reason == k.agg[q].reason) {
      k.agg[m - 1].samples += k.agg[q].samples;
      k.agg[m - 1].latency += k.agg[q].latency;
    } else {
      k.agg[m++] = k.agg[q];
    }
  }
  k.nagg = m;
  for (size_t q = 0; q < k.nagg; q++) {
    gpd__agg_t *g = &k.agg[q];
    if (g->latency > g->samples) /* a subset of the samples, never more */
      g->latency = g->samples;
    a->samples[g->idx] += g->samples;
    a->latency[g->idx] += g->latency;
    if (g->reason == GPD_ADV_SELECTED)
      a->issued[g->idx] += g->samples;
    a->T += g->samples;
    a->L += g->latency;
  }
  a->A = a->T - a->L;
  if (a->unplaced > 0) {
    char msg[96];
    snprintf(msg, sizeof msg, "%.0f samples at no instruction of the kernel", a->unplaced);
    note(a, msg);
  }
  if ((err = gpd__advisor_blame(&k)) < 0 || (err = gpd__advisor_optimize(&k)) < 0)
    goto out;
  gpd__advisor_occupancy_opt(&k);
  gpd__advisor_suggest_rank(a);
  err = 0;
out:
  k_free(&k);
  if (err < 0) {
    gpd_advisor_free(a);
    return err;
  }
  *out = a;
  return 0;
}
