/* advise.c - `gpuprof advise FILE.gpdb [--kernel K] [--top N] [--kernels N]
 * [--json]`: the GPA-style advice report (analyzer/advisor.h,
 * docs/ADVISOR.md) for the kernels of a saved profile that have PC
 * samples: ranked optimizations with estimated speedups, their hot def ->
 * use instruction pairs with source lines, and why.
 *
 * Reads the user's own profile with the user's rights; GPU binaries from
 * <folder of the db>/gpubins/ (hashes checked before they name a path),
 * nvdisasm text as `gpuprof report` finds it; control bits from the
 * cubin's bytes.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor.h"
#include "cli.h"
#include "gpuprof/error.h"
#include "gpuprof/grow.h"
#include "store-read.h"
#include "gpuprof/metric.h"

static const char usage[] =
    "usage: gpuprof advise FILE.gpdb [--kernel NAME] [--top N] [--kernels N] [--json]\n"
    "  Ranked optimizations with estimated speedups for the sampled kernels of a\n"
    "  profile recorded with GPUPROF_PC_SAMPLING=1 (docs/ADVISOR.md).\n"
    "  --kernel NAME  only kernels whose name contains NAME\n"
    "  --top N        optimizations shown per kernel (default 5)\n"
    "  --kernels N    kernels shown, most sampled first (default 3; 0 = all)\n"
    "  --json         one JSON document\n";

typedef struct kern_s {
  char *func, *hash;
  gpd_advisor_psamp_t *s;
  size_t n, cap;
  double total;
} kern_t;

typedef struct adv_ctx_s {
  const char *path;
  char dir[PATH_MAX];
  gpd_tree_t t;
  int json, first;
  unsigned top;
  uint32_t sm_count;
  int warned;
} adv_ctx_t;

static int kern_add(kern_t *k, gpd_advisor_psamp_t s) {
  if (gpd_grow(&k->s, &k->cap, k->n, sizeof *k->s, 64) < 0)
    return -ENOMEM;
  k->s[k->n++] = s;
  k->total += s.samples;
  return 0;
}

static int kern_cmp(const void *x, const void *y) {
  const kern_t *a = x, *b = y;
  return a->total < b->total ? 1 : a->total > b->total ? -1 : 0;
}

typedef struct kern_load_s {
  kern_t *k;
  size_t n, cap;
} kern_load_t;

static int on_sample(void *c, const gpd_store_pcsample_t *ps) {
  kern_load_t *kl = c;
  if (ps->func == NULL || ps->hash == NULL || ps->stall == NULL)
    return 0;
  if (kl->n == 0 || strcmp(kl->k[kl->n - 1].func, ps->func) || strcmp(kl->k[kl->n - 1].hash, ps->hash)) {
    if (gpd_grow(&kl->k, &kl->cap, kl->n, sizeof *kl->k, 16) < 0)
      return -ENOMEM;
    memset(&kl->k[kl->n], 0, sizeof kl->k[kl->n]);
    kl->k[kl->n].func = gpd_cli_strdup(ps->func);
    kl->k[kl->n].hash = gpd_cli_strdup(ps->hash);
    kl->n++;
  }
  int lat = 0;
  gpd_advisor_reason_t r = gpd_advisor_reason_from_vendor(ps->stall, &lat);
  double v = ps->samples;
  if (ps->pc < 0 || !(v > 0))
    return 0;
  gpd_advisor_psamp_t s = {(uint64_t)ps->pc, r, lat ? 0 : v, lat ? v : 0};
  return kern_add(&kl->k[kl->n - 1], s);
}

/* Samples per (kernel, binary): base reasons as samples, "_not_issued"
 * subsets as latency samples. */
static int load_samples(struct sqlite3 *db, kern_t **out, size_t *nout) {
  kern_load_t kl = {NULL, 0, 0};
  char serr[256];
  int err = gpd_store_pcsample_each(db, 0, 0, on_sample, &kl, serr, sizeof serr);
  kern_t *k = kl.k;
  size_t n = kl.n;
  if (err == GPD_ESTORE)
    return -EINVAL;
  if (n > 1)
    qsort(k, n, sizeof *k, kern_cmp);
  *out = k;
  *nout = n;
  return err;
}

/* Launch configuration of a kernel from its tree nodes: means over launches. */
static void launch_of(const gpd_tree_t *t, const char *func, gpd_advisor_launch_t *l, double *gker,
                      double *count, char *name, size_t nn) {
  double sum[6] = {0};
  static const unsigned ids[6] = {GPD_M_GKER_BLK,    GPD_M_GKER_BLK_THR, GPD_M_GKER_THR_REG,
                                  GPD_M_GKER_STMEM,  GPD_M_GKER_DYMEM,   GPD_M_GKER_LMEM};
  *gker = *count = 0;
  snprintf(name, nn, "%s", func);
  for (size_t i = 0; i < t->n; i++) {
    const gpd_tnode_t *nd = &t->nodes[i];
    if (nd->kind != GPD_NODE_KERNEL || strcmp(nd->raw_name, func) != 0)
      continue;
    gpd_render_node_name(name, nn, nd);
    *gker += gpd_tree_mvec_get(&nd->excl, GPD_M_GKER);
    *count += gpd_tree_mvec_get(&nd->excl, GPD_M_GKER_COUNT);
    for (int m = 0; m < 6; m++)
      sum[m] += gpd_tree_mvec_get(&nd->excl, ids[m]);
  }
  if (*count > 0) {
    l->blocks = sum[0] / *count;
    l->threads = sum[1] / *count;
    l->regs = sum[2] / *count;
    l->smem_static = sum[3] / *count;
    l->smem_dynamic = sum[4] / *count;
    l->lmem = sum[5] / *count;
  }
}

/* Source line of instruction i: nvdisasm's line info, else the cubin's table. */
static void where(const gpd_disasm_t *d, const gpd_disasm_sec_t *sec, const gpd_cubin_t *c,
                  uint32_t section, size_t i, const char **file, uint32_t *line) {
  *file = NULL;
  *line = 0;
  const gpd_insn_t *in = &sec->insns[i];
  if (in->line && in->file >= 0 && (size_t)in->file < d->nfiles) {
    *file = d->files[in->file];
    *line = in->line;
    return;
  }
  if (c)
    gpd_cubin_line_at(c, section, in->off, file, line);
}

static const char *base_name(const char *f) {
  const char *s = f ? strrchr(f, '/') : NULL;
  return s ? s + 1 : (f ? f : "?");
}

static void text_insn(FILE *f, const char *tag, const gpd_disasm_t *d, const gpd_disasm_sec_t *sec,
                      const gpd_cubin_t *c, uint32_t section, uint64_t klo, size_t i) {
  const char *file;
  uint32_t line;
  where(d, sec, c, section, i, &file, &line);
  char loc[160] = "";
  if (file)
    snprintf(loc, sizeof loc, "  %s:%u", base_name(file), line);
  fprintf(f, "        %s 0x%04llx  %-44.44s%s\n", tag, (unsigned long long)(sec->insns[i].off - klo),
          sec->insns[i].text ? sec->insns[i].text : sec->insns[i].opcode, loc);
}

static void json_insn(FILE *f, const char *key, const gpd_disasm_t *d,
                      const gpd_disasm_sec_t *sec, const gpd_cubin_t *c, uint32_t section,
                      uint64_t klo, size_t i) {
  const char *file;
  uint32_t line;
  where(d, sec, c, section, i, &file, &line);
  fprintf(f, "\"%s\":{\"pc\":%llu,\"insn\":", key, (unsigned long long)(sec->insns[i].off - klo));
  gpd_json_str(f, sec->insns[i].text ? sec->insns[i].text : sec->insns[i].opcode);
  fprintf(f, ",\"file\":");
  gpd_json_str(f, file ? file : "");
  fprintf(f, ",\"line\":%u}", line);
}

static void report(adv_ctx_t *x, const kern_t *k, const char *name, double gker, double count,
                   const gpd_advisor_launch_t *L, const gpd_advice_t *a, const gpd_disasm_t *d,
                   const gpd_disasm_sec_t *sec, const gpd_cubin_t *c, uint32_t section,
                   uint64_t klo, const char *why_none) {
  FILE *f = stdout;
  if (x->json) {
    fprintf(f, "%s{\"name\":", x->first ? "" : ",");
    x->first = 0;
    gpd_json_str(f, name);
    fprintf(f, ",\"mangled\":");
    gpd_json_str(f, k->func);
    fprintf(f, ",\"gpubin\":\"%s\",\"gker_ns\":%.0f,\"launches\":%.0f,\"samples\":%.10g", k->hash,
            gker, count, k->total);
    fprintf(f, ",\"launch\":{\"sm\":%u,\"sm_count\":%u,\"blocks\":%.10g,\"threads\":%.10g,"
               "\"regs\":%.10g,\"smem\":%.10g,\"lmem\":%.10g}",
            L->sm, L->sm_count, L->blocks, L->threads, L->regs, L->smem_static + L->smem_dynamic,
            L->lmem);
    if (a) {
      fprintf(f, ",\"active\":%.10g,\"latency\":%.10g,\"placed\":%.10g,\"occupancy\":%.4f,"
                 "\"limiter\":",
              a->A, a->L, a->T, a->occupancy);
      gpd_json_str(f, a->limiter);
      fprintf(f, ",\"control_bits\":%s,\"notes\":", a->have_ctrl ? "true" : "false");
      gpd_json_str(f, a->notes);
      fprintf(f, ",\"advice\":[");
      for (size_t i = 0; i < a->nsugg && i < x->top; i++) {
        const gpd_advisor_suggest_t *s = &a->sugg[i];
        fprintf(f, "%s{\"rank\":%zu,\"optimization\":", i ? "," : "", i + 1);
        gpd_json_str(f, gpd_advisor_opt_name(s->opt));
        fprintf(f, ",\"speedup\":%.6f,\"matched\":%.10g,\"ratio\":%.4f,\"hint\":", s->speedup,
                s->matched, a->T > 0 ? s->matched / a->T : 0);
        gpd_json_str(f, gpd_advisor_opt_hint(s->opt));
        fprintf(f, ",\"why\":");
        gpd_json_str(f, s->why);
        fprintf(f, ",\"hotspots\":[");
        for (size_t h = 0; h < s->nhot; h++) {
          const gpd_advisor_hot_t *hs = &s->hot[h];
          fprintf(f, "%s{\"reason\":\"%s\",\"samples\":%.10g,\"distance\":%u,", h ? "," : "",
                  gpd_advisor_reason_name(hs->reason), hs->samples, hs->dist);
          json_insn(f, "def", d, sec, c, section, klo, hs->def);
          fputc(',', f);
          json_insn(f, "use", d, sec, c, section, klo, hs->use);
          fputc('}', f);
        }
        fprintf(f, "]}");
      }
      fprintf(f, "]");
    } else {
      fprintf(f, ",\"advice\":[],\"notes\":");
      gpd_json_str(f, why_none);
    }
    fprintf(f, "}");
    return;
  }
  char tb[32];
  gpd_render_value(tb, sizeof tb, GPD_M_GKER, gker);
  fprintf(f, "== %s\n   GKER %s s in %.0f launches, %.0f PC samples", name, tb, count, k->total);
  if (L->threads > 0)
    fprintf(f, "; %.0f blocks x %.0f threads, %.0f registers, %.0f B shared", L->blocks,
            L->threads, L->regs, L->smem_static + L->smem_dynamic);
  fprintf(f, "\n");
  if (a == NULL) {
    fprintf(f, "   no advice: %s\n\n", why_none);
    return;
  }
  fprintf(f, "   active %.0f, latency %.0f samples (%.1f %% latency)", a->A, a->L,
          a->T > 0 ? 100 * a->L / a->T : 0);
  if (a->occupancy > 0)
    fprintf(f, "; occupancy %.0f %% (limited by %s), sm_%u", 100 * a->occupancy, a->limiter, L->sm);
  fprintf(f, "\n");
  if (a->notes[0])
    fprintf(f, "   note: %s\n", a->notes);
  if (a->nsugg == 0)
    fprintf(f, "   no optimization matched\n");
  for (size_t i = 0; i < a->nsugg && i < x->top; i++) {
    const gpd_advisor_suggest_t *s = &a->sugg[i];
    fprintf(f, "%2zu. Apply %s: ratio %.2f %%, estimated speedup %.3fx\n", i + 1,
            gpd_advisor_opt_name(s->opt), a->T > 0 ? 100 * s->matched / a->T : 0, s->speedup);
    fprintf(f, "    %s\n    why: %s\n", gpd_advisor_opt_hint(s->opt), s->why);
    for (size_t h = 0; h < s->nhot && h < 3; h++) {
      const gpd_advisor_hot_t *hs = &s->hot[h];
      double r = a->T > 0 ? hs->samples / a->T : 0;
      fprintf(f, "    %zu. Hot %s, ratio %.2f %%, speedup %.3fx, distance %u\n", h + 1,
              hs->reason == GPD_ADV__COUNT ? "DIVERGENCE"
              : hs->def == hs->use         ? gpd_advisor_reason_name(hs->reason)
                                           : "BLAME",
              100 * r, r < 1 ? 1 / (1 - r) : 1, hs->dist);
      if (hs->reason == GPD_ADV__COUNT) {
        fprintf(f, "       divergent branch: its shorter side\n");
        text_insn(f, "at  ", d, sec, c, section, klo, hs->def);
        text_insn(f, "side", d, sec, c, section, klo, hs->use);
      } else if (hs->def != hs->use) {
        fprintf(f, "       %s stall\n", gpd_advisor_reason_name(hs->reason));
        text_insn(f, "from", d, sec, c, section, klo, hs->def);
        text_insn(f, "to  ", d, sec, c, section, klo, hs->use);
      } else {
        text_insn(f, "at  ", d, sec, c, section, klo, hs->use);
      }
    }
  }
  fprintf(f, "\n");
}

static int advise_kernel(adv_ctx_t *x, kern_t *k) {
  gpd_advisor_launch_t L = {.sm_count = x->sm_count};
  double gker, count;
  char name[512];
  launch_of(&x->t, k->func, &L, &gker, &count, name, sizeof name);
  char *bytes = NULL;
  size_t blen = 0;
  gpd_cubin_t *c = NULL;
  gpd_disasm_t *d = NULL;
  const char *why = NULL;
  gpd_advice_t *a = NULL;
  uint64_t *ctrl = NULL;
  size_t nctrl = 0;
  int err = 0;
  if (k->hash[0] == 0)
    why = "the profile names no GPU binary for these samples";
  else if (gpd_report_gpu_bin(x->dir, k->hash, &bytes, &blen, &c, &d, &x->warned) < 0)
    why = "its GPU binary is missing or unreadable";
  else if (d == NULL)
    why = "no instructions (nvdisasm not found or failed; set GPUPROF_NVDISASM)";
  const gpd_disasm_sec_t *sec = d ? gpd_disasm_section(d, k->func) : NULL;
  const gpd_cubin_func_t *fn = c ? gpd_cubin_func_named(c, k->func) : NULL;
  if (why == NULL && sec == NULL)
    why = "nvdisasm's output has no section for this kernel";
  if (why == NULL) {
    uint32_t sm = 0;
    gpd_advisor_cubin_ctrl(bytes, blen, k->func, &ctrl, &nctrl, &sm);
    L.sm = sm;
    gpd_advisor_input_t in = {.sec = sec, .cubin = c, .section = fn ? fn->section : 0,
                          .kernel_lo = fn ? fn->lo : 0, .ctrl = ctrl, .nctrl = nctrl,
                          .s = k->s, .ns = k->n, .launch = L};
    err = gpd_advisor_run(&in, &a);
    if (err == -ENOMEM)
      goto out;
    if (err < 0)
      why = "the kernel has no instructions";
    err = 0;
  }
  report(x, k, name, gker, count, &L, a, d, sec, c, fn ? fn->section : 0, fn ? fn->lo : 0,
         why ? why : "");
out:
  gpd_advisor_free(a);
  free(ctrl);
  free(bytes);
  gpd_cubin_free(c);
  gpd_disasm_free(d);
  return err;
}

int gpd_cmd_advise(int argc, char **argv) {
  adv_ctx_t x = {.top = 5, .first = 1};
  const char *filter = NULL;
  long kernels = 3;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--json")) {
      x.json = 1;
    } else if (!strcmp(a, "--kernel") && i + 1 < argc) {
      filter = argv[++i];
    } else if (!strcmp(a, "--top") && i + 1 < argc) {
      long v = gpd_cli_parse_uint(argv[++i]);
      if (v < 1)
        return gpd_cli_usage(usage, "--top wants a number >= 1");
      x.top = (unsigned)v;
    } else if (!strcmp(a, "--kernels") && i + 1 < argc) {
      if ((kernels = gpd_cli_parse_uint(argv[++i])) < 0)
        return gpd_cli_usage(usage, "--kernels wants a number");
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(usage, stdout);
      return 0;
    } else if (a[0] == '-' || x.path) {
      return gpd_cli_usage(usage, "unexpected argument '%s'", a);
    } else {
      x.path = a;
    }
  }
  if (x.path == NULL)
    return gpd_cli_usage(usage, "which profile?");
  const char *slash = strrchr(x.path, '/');
  if (slash)
    snprintf(x.dir, sizeof x.dir, "%.*s", (int)(slash - x.path), x.path);
  else
    snprintf(x.dir, sizeof x.dir, ".");
  if (x.dir[0] == 0)
    snprintf(x.dir, sizeof x.dir, "/");
  char err[512] = "";
  gpd_tree_init(&x.t);
  gpd_report_gpu_opts.enabled = 0; /* the advisor reads the samples itself */
  if (gpd_load_file(&x.t, x.path, 0, 1, err, sizeof err) < 0) {
    fprintf(stderr, "gpuprof: %s\n", err);
    gpd_tree_free(&x.t);
    return 1;
  }
  struct sqlite3 *db = NULL;
  kern_t *ks = NULL;
  size_t nk = 0;
  int rc = 0;
  char oerr[512];
  if (gpd_store_file_open(x.path, &db, oerr, sizeof(oerr)) < 0) {
    fprintf(stderr, "gpuprof: %s\n", oerr);
    rc = 1;
    goto out;
  }
  gpd_store_pcstat_t ps;
  if (gpd_store_pcsample_stat(db, 0, &ps))
    x.sm_count = (uint32_t)ps.sm_count;
  int lr = load_samples(db, &ks, &nk);
  if (lr == -ENOMEM) {
    fprintf(stderr, "gpuprof: out of memory\n");
    rc = 1;
    goto out;
  }
  if (x.json) {
    printf("{\"file\":");
    gpd_json_str(stdout, x.path);
    printf(",\"kernels\":[");
  }
  size_t shown = 0;
  for (size_t i = 0; i < nk && rc == 0; i++) {
    if (filter) {
      char name[512];
      double g, cnt;
      gpd_advisor_launch_t L = {0};
      launch_of(&x.t, ks[i].func, &L, &g, &cnt, name, sizeof name);
      if (!strstr(ks[i].func, filter) && !strstr(name, filter))
        continue;
    }
    if (kernels > 0 && shown >= (size_t)kernels)
      break;
    shown++;
    if (advise_kernel(&x, &ks[i]) < 0) {
      fprintf(stderr, "gpuprof: out of memory\n");
      rc = 1;
    }
  }
  const char *notes = gpd_report_gpu_notes();
  if (x.json) {
    printf("],\"notes\":");
    gpd_json_str(stdout, notes);
    printf("}\n");
  } else {
    if (shown == 0)
      printf("%s: no PC samples%s (%s)\n", x.path, filter ? " of a matching kernel" : "",
             gpd_store_profile_has_cuda(x.path)
                 ? "record with GPUPROF_PC_SAMPLING=1"
                 : "PC sampling is CUDA-only (CUPTI): no process in this profile used CUDA");
    if (notes[0])
      fprintf(stderr, "%s", notes);
  }
out:
  for (size_t i = 0; i < nk; i++) {
    free(ks[i].func);
    free(ks[i].hash);
    free(ks[i].s);
  }
  free(ks);
  gpd_store_file_close(db);
  gpd_tree_free(&x.t);
  return rc;
}
