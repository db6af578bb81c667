/* gtree.c - PC samples of one kernel placed in the GPU part of the
 * profile: kernel -> GPU calling context (gcct.c) -> loop (gcfg.c)
 * -> source line (cubin.c) -> instruction.
 *
 * A sample at an instruction of function f counts, in each calling
 * context of f, times that context's share (Zhou et al., Parallel
 * Computing 2021, section 6.3 step 4).  Samples on a call instruction are
 * that call site's weight (step 1), unless the input carries exact
 * execution counts of the kernel's instructions (GPD_STALL_EXEC_COUNT
 * records, from CUPTI's SASS metrics): then a call site weighs its call
 * instruction's count, which measures how often the call ran (samples on
 * a CALL measure how long warps waited there).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-internal.h"

typedef struct key_s {
  int32_t parent;
  uint8_t kind;
  uint64_t key;
  int32_t node; /* -1 empty */
} key_t_;

typedef struct build_s {
  gpd_gtree_t *t;
  size_t cap;
  key_t_ *map;
  size_t mapcap; /* power of two */
} build_t;

#define tnote(t, ...) gpd__cubin_note((t)->notes, sizeof (t)->notes, __VA_ARGS__)

void gpd_gtree_free(gpd_gtree_t *t) {
  if (t == NULL)
    return;
  free(t->nodes);
  free(t);
}

static uint64_t mix(int32_t parent, uint8_t kind, uint64_t key) {
  uint64_t h = key * 0x9e3779b97f4a7c15ull ^ ((uint64_t)(uint32_t)parent << 8 | kind);
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 32);
}

static int map_grow(build_t *b) {
  size_t cap = b->mapcap ? 2 * b->mapcap : 256;
  key_t_ *m = malloc(cap * sizeof *m);
  if (m == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < cap; i++)
    m[i].node = -1;
  for (size_t i = 0; i < b->mapcap; i++) {
    if (b->map[i].node < 0)
      continue;
    size_t j = mix(b->map[i].parent, b->map[i].kind, b->map[i].key) & (cap - 1);
    while (m[j].node >= 0)
      j = (j + 1) & (cap - 1);
    m[j] = b->map[i];
  }
  free(b->map);
  b->map = m;
  b->mapcap = cap;
  return 0;
}

/* The child of `parent` with (kind, key), created with `label` if new. */
static int32_t child(build_t *b, int32_t parent, uint8_t kind, uint64_t key, const char *label) {
  if (2 * (b->t->nnodes + 1) > b->mapcap && map_grow(b) < 0)
    return -ENOMEM;
  size_t j = mix(parent, kind, key) & (b->mapcap - 1);
  for (; b->map[j].node >= 0; j = (j + 1) & (b->mapcap - 1))
    if (b->map[j].parent == parent && b->map[j].kind == kind && b->map[j].key == key)
      return b->map[j].node;
  gpd_gtree_t *t = b->t;
  if (t->nnodes == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 64;
    gpd_gnode_t *n = realloc(t->nodes, cap * sizeof *n);
    if (n == NULL)
      return -ENOMEM;
    t->nodes = n;
    b->cap = cap;
  }
  int32_t id = (int32_t)t->nnodes++;
  gpd_gnode_t *n = &t->nodes[id];
  memset(n, 0, sizeof *n);
  n->parent = parent;
  n->kind = kind;
  snprintf(n->label, sizeof n->label, "%s", label);
  b->map[j] = (key_t_){parent, kind, key, id};
  return id;
}

static void add(gpd_gtree_t *t, int32_t node, const gpd_pcs_t *s, double scale) {
  double v = s->samples * scale;
  t->nodes[node].ginst += v;
  t->nodes[node].stall[s->stall] += v;
}

static int pcs_cmp(const void *a, const void *b) {
  const gpd_pcs_t *x = a, *y = b;
  return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* Per function of the kernel's section. */
typedef struct fn_s {
  const gpd_cubin_func_t *f;
  gpd_gcfg_t *cfg;
  size_t s0, s1; /* its samples: [s0, s1) of the sorted array */
} fn_t;

/* How the call edges into each callee with more than one call site were
 * weighed (the ones whose weights split the callee's samples), in the
 * tree's notes by the call's offset in its caller, as the contexts'
 * labels give it: "call at 0x70 22 (37 %), call at 0xc0 38 (63 %)" (the
 * share of the weight into that callee), at most 6 edges. */
static void note_shared_edges(gpd_gtree_t *t, const fn_t *fns, const gpd_gcall_t *e, size_t ne,
                              int counts) {
  char buf[320] = "";
  size_t n = 0, shown = 0, more = 0;
  for (size_t i = 0; i < ne; i++) {
    double in = 0;
    size_t sites = 0;
    for (size_t q = 0; q < ne; q++)
      if (e[q].callee == e[i].callee) {
        in += e[q].weight;
        sites++;
      }
    if (sites < 2)
      continue;
    if (shown == 6 || n + 80 >= sizeof buf) {
      more++;
      continue;
    }
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%scall at 0x%llx %.0f (%.0f %%)",
                          shown ? ", " : "",
                          (unsigned long long)(e[i].call_off - fns[e[i].caller].f->lo),
                          e[i].weight, in > 0 ? 100 * e[i].weight / in : 0.0);
    shown++;
  }
  if (shown)
    tnote(t, "call edges weighed by %s (equal cost per call, Zhou et al. 2021 section 6.3): %s%s",
          counts ? "execution counts of the call instructions" : "samples of the call instructions",
          buf, more ? " and more" : "");
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* Samples of function fi, scaled, below node `under`: loops -> line -> insn. */
static int place(build_t *b, const gpd_cubin_t *c, const gpd_disasm_sec_t *dsec, const fn_t *fn,
                 const gpd_pcs_t *s, int32_t under, double scale) {
  char label[160];
  for (size_t i = fn->s0; i < fn->s1; i++) {
    uint64_t off = s[i].pc; /* section bytes here */
    int32_t at = under;
    if (fn->cfg) {
      int32_t blk = gpd_gcfg_block_at(fn->cfg, off);
      int32_t chain[64];
      int nchain = 0;
      for (int32_t l = blk >= 0 ? fn->cfg->blocks[blk].loop : -1; l >= 0 && nchain < 64;
           l = fn->cfg->loops[l].parent)
        chain[nchain++] = l;
      while (nchain--) {
        const gpd_loop_t *lp = &fn->cfg->loops[chain[nchain]];
        const char *file;
        uint32_t line;
        if (gpd_cubin_line_at(c, fn->f->section, lp->head_off, &file, &line) == 0)
          snprintf(label, sizeof label, "loop at %s:%u", base_name(file), line);
        else
          snprintf(label, sizeof label, "loop at 0x%llx", (unsigned long long)lp->head_off);
        if ((at = child(b, at, GPD_GNODE_LOOP, lp->head_off, label)) < 0)
          return at;
      }
    }
    const char *file;
    uint32_t line;
    if (gpd_cubin_line_at(c, fn->f->section, off, &file, &line) == 0) {
      snprintf(label, sizeof label, "%s:%u", base_name(file), line);
      /* key: the line's text, hashed, so equal lines in one loop merge */
      uint64_t key = line;
      for (const char *p = file; *p; p++)
        key = key * 131 + (unsigned char)*p;
      if ((at = child(b, at, GPD_GNODE_LINE, key, label)) < 0)
        return at;
    }
    const char *op = "";
    if (dsec) {
      size_t lo = 0, hi = dsec->ninsns;
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (dsec->insns[mid].off < off)
          lo = mid + 1;
        else
          hi = mid;
      }
      if (lo < dsec->ninsns && dsec->insns[lo].off == off)
        op = dsec->insns[lo].opcode;
    }
    snprintf(label, sizeof label, "0x%04llx%s%s", (unsigned long long)(off - fn->f->lo),
             op[0] ? " " : "", op);
    if ((at = child(b, at, GPD_GNODE_INSN, off, label)) < 0)
      return at;
    add(b->t, at, &s[i], scale);
  }
  return 0;
}

int gpd_gtree_attribute(const gpd_cubin_t *c, const gpd_disasm_t *d, const char *kernel,
                      const gpd_pcs_t *in, size_t n, size_t max_nodes, gpd_gtree_t **out) {
  int err = -ENOMEM;
  if (kernel == NULL || out == NULL || (n && in == NULL))
    return -EINVAL;
  *out = NULL;
  build_t b = {0};
  gpd_pcs_t *s = NULL, *cnt = NULL;
  fn_t *fns = NULL;
  size_t nfns = 0;
  double *fsamples = NULL;
  gpd_gcall_t *edges = NULL;
  gpd_gcct_t *tree = NULL;
  if ((b.t = calloc(1, sizeof *b.t)) == NULL)
    goto fail;
  gpd_gtree_t *t = b.t;
  if (child(&b, -1, GPD_GNODE_KERNEL, 0, kernel) < 0)
    goto fail;
  const gpd_cubin_func_t *kf = c ? gpd_cubin_func_named(c, kernel) : NULL;
  if (kf == NULL) {
    tnote(t, c ? "kernel %.100s is not in its GPU binary: %zu sample records not placed"
               : "no GPU binary for kernel %.100s: %zu sample records not placed",
          kernel, n);
    int32_t u = child(&b, 0, GPD_GNODE_UNKNOWN, 0, "[no structure]");
    if (u < 0)
      goto fail;
    for (size_t i = 0; i < n; i++)
      if (in[i].stall < GPD_STALL__COUNT)
        add(t, u, &in[i], 1);
    err = 0;
    goto fail;
  }
  /* samples to section offsets, sorted; the ones outside every function
   * of the kernel's section are set aside */
  if ((s = malloc((n ? n : 1) * sizeof *s)) == NULL)
    goto fail;
  size_t ns = 0, outside = 0, ncnt = 0;
  int32_t unknown = -1;
  for (size_t i = 0; i < n; i++)
    ncnt += in[i].stall == GPD_STALL_EXEC_COUNT && in[i].pc < kf->hi - kf->lo;
  if ((cnt = malloc((ncnt ? ncnt : 1) * sizeof *cnt)) == NULL)
    goto fail;
  ncnt = 0;
  for (size_t i = 0; i < n; i++) {
    if (in[i].stall == GPD_STALL_EXEC_COUNT && in[i].pc < kf->hi - kf->lo) {
      cnt[ncnt] = in[i];
      cnt[ncnt++].pc = kf->lo + in[i].pc;
      continue;
    }
    if (in[i].stall >= GPD_STALL__COUNT || !(in[i].samples > 0))
      continue;
    uint64_t off = kf->lo + in[i].pc;
    if (in[i].pc >= kf->hi - kf->lo || off < kf->lo ||
        gpd_cubin_func_at(c, kf->section, off) == NULL) {
      outside++;
      if (unknown < 0 && (unknown = child(&b, 0, GPD_GNODE_UNKNOWN, 1, "[outside functions]")) < 0)
        goto fail;
      add(t, unknown, &in[i], 1);
      continue;
    }
    s[ns] = in[i];
    s[ns++].pc = off;
  }
  if (outside)
    tnote(t, "%zu sample records at offsets outside the functions of %.100s", outside, kernel);
  qsort(s, ns, sizeof *s, pcs_cmp);

  /* functions of the kernel's section that lie inside the kernel */
  if ((fns = calloc(c->nfuncs, sizeof *fns)) == NULL ||
      (fsamples = calloc(c->nfuncs, sizeof *fsamples)) == NULL)
    goto fail;
  uint32_t root = 0;
  for (size_t i = 0; i < c->nfuncs; i++) {
    const gpd_cubin_func_t *f = &c->funcs[i];
    if (f->section != kf->section || f->lo < kf->lo || f->hi > kf->hi)
      continue;
    if (f == kf)
      root = (uint32_t)nfns;
    fns[nfns++].f = f;
  }
  /* each sample to its innermost function; then grouped by function
   * (counting sort, stable: offsets stay sorted within a function) */
  {
    uint32_t *owner = malloc((ns ? ns : 1) * sizeof *owner);
    gpd_pcs_t *s2 = malloc((ns ? ns : 1) * sizeof *s2);
    if (owner == NULL || s2 == NULL) {
      free(owner);
      free(s2);
      goto fail;
    }
    for (size_t i = 0; i < ns; i++) {
      const gpd_cubin_func_t *f = gpd_cubin_func_at(c, kf->section, s[i].pc);
      owner[i] = root;
      for (size_t j = 0; j < nfns; j++)
        if (fns[j].f == f)
          owner[i] = (uint32_t)j;
      fns[owner[i]].s1++;
      fsamples[owner[i]] += s[i].samples;
    }
    size_t pos = 0;
    for (size_t j = 0; j < nfns; j++) {
      fns[j].s0 = pos;
      pos += fns[j].s1;
      fns[j].s1 = fns[j].s0;
    }
    for (size_t i = 0; i < ns; i++)
      s2[fns[owner[i]].s1++] = s[i];
    free(owner);
    free(s);
    s = s2;
  }
  const gpd_disasm_sec_t *dsec = d ? gpd_disasm_section(d, kernel) : NULL;
  if (d == NULL)
    tnote(t, "no nvdisasm output: device functions shown flat under the kernel, no loops");
  else if (dsec == NULL)
    tnote(t, "kernel %.100s not in the nvdisasm output: functions only", kernel);
  size_t nedges = 0, capedges = 0;
  for (size_t j = 0; dsec && j < nfns; j++) {
    const gpd_cubin_func_t *f = fns[j].f;
    /* the kernel's own range stops at its first nested function */
    uint64_t hi = f->hi;
    for (size_t q = 0; q < nfns; q++)
      if (q != j && fns[q].f->lo > f->lo && fns[q].f->lo < hi)
        hi = fns[q].f->lo;
    if (gpd_gcfg_build(dsec, f->lo, hi, &fns[j].cfg) < 0)
      continue;
    const gpd_gcfg_t *g = fns[j].cfg;
    for (size_t k = 0; k < g->ncalls; k++) {
      int32_t callee = -1;
      for (size_t q = 0; q < nfns; q++)
        if (fns[q].f->lo == g->callees[k] && q != root)
          callee = (int32_t)q;
      if (callee < 0)
        continue;
      /* call-edge weight: the samples of the call instruction (Zhou et
       * al. 2021, section 6.3 step 1), or its execution count */
      double w = 0;
      if (ncnt) {
        for (size_t q = 0; q < ncnt; q++)
          if (cnt[q].pc == g->calls[k])
            w += cnt[q].samples;
      } else {
        for (size_t q = fns[j].s0; q < fns[j].s1; q++)
          if (s[q].pc == g->calls[k])
            w += s[q].samples;
      }
      if (nedges == capedges) {
        capedges = capedges ? 2 * capedges : 16;
        gpd_gcall_t *e = realloc(edges, capedges * sizeof *e);
        if (e == NULL)
          goto fail;
        edges = e;
      }
      edges[nedges++] = (gpd_gcall_t){(uint32_t)j, (uint32_t)callee, g->calls[k], w};
    }
  }
  if (dsec && ncnt)
    tnote(t, "call-edge weights: exact execution counts of the call instructions (SASS metrics)");
  if (dsec)
    note_shared_edges(t, fns, edges, nedges, ncnt > 0);
  if (dsec) {
    err = gpd_gcct_build((uint32_t)nfns, root, fsamples, edges, nedges, max_nodes, &tree);
    if (err == -E2BIG)
      tnote(t, "GPU call graph too large for a tree: each function shown once (graph form)");
    else if (err < 0)
      goto fail;
  }
  char label[160];
  if (tree) {
    if (tree->unreached)
      tnote(t, "%zu sampled GPU functions not reached from the kernel's call sites",
            tree->unreached);
    int32_t *at = malloc((tree->nnodes ? tree->nnodes : 1) * sizeof *at);
    if (at == NULL)
      goto fail;
    for (size_t i = 0; i < tree->nnodes; i++) {
      const gpd_gctx_t *x = &tree->nodes[i];
      int32_t parent = x->parent >= 0 ? at[x->parent] : 0;
      int32_t node = 0;
      if (i > 0) {
        const char *nm = gpd_cubin_func_display(fns[x->func].f);
        if (x->parent < 0)
          snprintf(label, sizeof label, "[unreached] %s", nm);
        else if (x->scc >= 0)
          snprintf(label, sizeof label, "[recursive] %s (call at 0x%llx)", nm,
                   (unsigned long long)(x->call_off - fns[tree->nodes[x->parent].func].f->lo));
        else
          snprintf(label, sizeof label, "%s (call at 0x%llx)", nm,
                   (unsigned long long)(x->call_off - fns[tree->nodes[x->parent].func].f->lo));
        node = child(&b, parent, GPD_GNODE_FUNC, i, label);
        if (node < 0) {
          free(at);
          goto fail;
        }
      }
      at[i] = node;
      /* every member of a recursive group under the group's node */
      uint32_t grp = tree->scc_of[x->func];
      for (size_t j = 0; j < nfns; j++) {
        if (tree->scc_of[j] != grp)
          continue;
        int32_t under = node;
        if (tree->scc_size[grp] > 1 && j != x->func &&
            (under = child(&b, node, GPD_GNODE_FUNC, ((uint64_t)i << 20) | j,
                           gpd_cubin_func_display(fns[j].f))) < 0) {
          free(at);
          goto fail;
        }
        if ((err = place(&b, c, dsec, &fns[j], s, under, x->fraction)) < 0) {
          free(at);
          goto fail;
        }
      }
    }
    free(at);
  } else {
    for (size_t j = 0; j < nfns; j++) {
      int32_t under = 0;
      if (j != root && fns[j].s1 > fns[j].s0 &&
          (under = child(&b, 0, GPD_GNODE_FUNC, j, gpd_cubin_func_display(fns[j].f))) < 0)
        goto fail;
      if ((err = place(&b, c, dsec, &fns[j], s, under, 1)) < 0)
        goto fail;
    }
  }
  if (c->notes[0])
    tnote(t, "%s", c->notes);
  if (d && d->notes[0])
    tnote(t, "%s", d->notes);
  err = 0;
fail:
  for (size_t j = 0; j < nfns; j++)
    gpd_gcfg_free(fns[j].cfg);
  free(fns);
  free(fsamples);
  free(edges);
  free(s);
  free(cnt);
  free(b.map);
  gpd_gcct_free(tree);
  if (err < 0) {
    gpd_gtree_free(b.t);
    return err;
  }
  *out = b.t;
  return 0;
}
