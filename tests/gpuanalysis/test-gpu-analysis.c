/* test-gpu-analysis.c - analyzer/ GPU structure recovery and GPU calling
 * contexts.
 *
 * argv[1]: a cubin nvcc built from pcsamp-known.cu at build time (or "-"
 * when there is no nvcc: those tests SKIP); argv[2]: pcsamp-known.cu
 * (line markers); argv[3]: the fixture folder (real nvdisasm output).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu-analysis.h"

static const char *cubin_path, *src_path, *fixtures;
static uint8_t *cubin;
static size_t cubin_len;

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  uint8_t *b = malloc(cap + 1);
  size_t r;
  while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
    n += r;
    if (n == cap) {
      uint8_t *nb = realloc(b, 2 * cap + 1);
      if (nb == NULL) {
        free(b);
        b = NULL;
        break;
      }
      b = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (b)
    b[n] = 0;
  *len = n;
  return b;
}

/* the line of pcsamp-known.cu that holds `marker` */
static uint32_t marker_line(const char *marker) {
  size_t len;
  char *s = (char *)slurp(src_path, &len);
  assert_non_null(s);
  uint32_t line = 1;
  for (char *p = s; *p; p++) {
    if (strncmp(p, marker, strlen(marker)) == 0)
      break;
    if (*p == '\n')
      line++;
  }
  free(s);
  return line;
}

#define NEED_CUBIN()                                                                               \
  do {                                                                                             \
    if (cubin == NULL)                                                                             \
      skip();                                                                                      \
  } while (0)

static double inclusive(const gpd_gtree_t *t, size_t node) {
  double v = t->nodes[node].ginst;
  for (size_t i = node + 1; i < t->nnodes; i++)
    if (t->nodes[i].parent == (int32_t)node)
      v += inclusive(t, i);
  return v;
}

static int find(const gpd_gtree_t *t, int32_t parent, uint8_t kind, const char *label) {
  for (size_t i = 0; i < t->nnodes; i++)
    if (t->nodes[i].parent == parent && t->nodes[i].kind == kind &&
        strcmp(t->nodes[i].label, label) == 0)
      return (int)i;
  return -1;
}

/* ------------------------------------------------------------ stalls */

static void test_stall_map(void **state) {
  (void)state;
  assert_int_equal(gpd_stall_from_vendor("smsp__pcsamp_warps_issue_stalled_long_scoreboard"),
                   GPD_STALL_GMEM);
  assert_int_equal(gpd_stall_from_vendor("smsp__pcsamp_warps_issue_stalled_selected"),
                   GPD_STALL_NONE);
  assert_int_equal(gpd_stall_from_vendor("smsp__pcsamp_warps_issue_stalled_barrier"),
                   GPD_STALL_SYNC);
  assert_int_equal(
      gpd_stall_from_vendor("smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"),
      GPD_STALL__COUNT);
  assert_int_equal(gpd_stall_from_vendor("memory_dependency"), GPD_STALL_GMEM);
  assert_int_equal(gpd_stall_from_vendor("something_new"), GPD_STALL_OTHR);
  assert_int_equal(gpd_stall_from_vendor(GPD_SASS_EXEC_NAME), GPD_STALL_EXEC_COUNT);
  assert_string_equal(gpd_stall_name(GPD_STALL_GMEM), "GINST:STL_GMEM");
  assert_string_equal(gpd_stall_name((gpd_stall_t)99), "GINST:STL_OTHR");
  /* the enum follows the metric table (gpuprof/metric.h) name by name */
  static const char *const names[] = {"NONE", "IFET", "IDEP", "GMEM", "TMEM", "SYNC",
                                      "CMEM", "PIPE", "MTHR", "NSEL", "OTHR", "SLP"};
  for (unsigned i = 0; i < GPD_STALL__COUNT; i++) {
    char want[32];
    snprintf(want, sizeof want, "GINST:STL_%s", names[i]);
    assert_string_equal(gpd_stall_name((gpd_stall_t)i), want);
  }
}

/* ------------------------------------------------------------ cubins */

static void test_cubin_functions_lines(void **state) {
  (void)state;
  NEED_CUBIN();
  char err[256];
  gpd_cubin_t *c;
  assert_int_equal(gpd_cubin_open(cubin, cubin_len, &c, err, sizeof err), 0);
  assert_string_equal(c->notes, "");
  const gpd_cubin_func_t *k = gpd_cubin_func_named(c, "_Z5knownPKfiPf");
  const gpd_cubin_func_t *hot = gpd_cubin_func_named(c, "$_Z5knownPKfiPf$_Z3hotPKfif");
  const gpd_cubin_func_t *fact = gpd_cubin_func_named(c, "$_Z5knownPKfiPf$_Z4facti");
  assert_non_null(k);
  assert_non_null(hot);
  assert_non_null(fact);
  assert_true(k->kernel);
  assert_false(hot->kernel);
  assert_string_equal(gpd_cubin_func_display(hot), "_Z3hotPKfif");
  assert_int_equal(k->lo, 0);
  assert_true(hot->lo > 0 && hot->hi <= k->hi && fact->hi <= k->hi);
  /* innermost function */
  assert_ptr_equal(gpd_cubin_func_at(c, k->section, 0), k);
  assert_ptr_equal(gpd_cubin_func_at(c, k->section, hot->lo), hot);
  assert_ptr_equal(gpd_cubin_func_at(c, k->section, hot->hi - 16), hot);
  assert_ptr_equal(gpd_cubin_func_at(c, k->section, fact->lo), fact);
  assert_null(gpd_cubin_func_at(c, k->section, k->hi));
  /* lines: the loop's lines inside hot, fact's line at its entry */
  uint32_t hot_loop = marker_line("// HOT-LOOP"), hot_line = marker_line("// HOT-LINE");
  uint32_t fact_line = marker_line("// FACT-LINE");
  const char *file;
  uint32_t line;
  assert_int_equal(gpd_cubin_line_at(c, k->section, hot->lo, &file, &line), 0);
  assert_int_equal(line, hot_loop);
  assert_non_null(strstr(file, "pcsamp-known.cu"));
  assert_int_equal(gpd_cubin_line_at(c, k->section, fact->lo, &file, &line), 0);
  assert_int_equal(line, fact_line);
  int seen_hot_line = 0;
  for (uint64_t off = hot->lo; off < hot->hi; off += 16) {
    assert_int_equal(gpd_cubin_line_at(c, k->section, off, &file, &line), 0);
    assert_true(line == hot_loop || line == hot_line || line == hot_line + 1 || line == hot_loop - 1);
    seen_hot_line |= line == hot_line;
  }
  assert_true(seen_hot_line);
  /* the kernel's own code is on the kernel's lines */
  assert_int_equal(gpd_cubin_line_at(c, k->section, 0, &file, &line), 0);
  assert_int_equal(line, marker_line("__global__ void known"));
  /* past the end of the section: the end-of-sequence row */
  assert_int_equal(gpd_cubin_line_at(c, k->section, k->hi + 16, &file, &line), -ENOENT);
  gpd_cubin_free(c);
}

static void test_cubin_bad_input(void **state) {
  (void)state;
  char err[256];
  gpd_cubin_t *c = NULL;
  assert_int_equal(gpd_cubin_open("hello", 5, &c, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, "not an ELF"));
  uint8_t junk[4096];
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 16);
  memcpy(junk, "\177ELF\2\1\1", 7);
  assert_int_equal(gpd_cubin_open(junk, sizeof junk, &c, err, sizeof err), -EINVAL);
  assert_true(err[0] != 0);
  NEED_CUBIN();
  /* every truncation: an error with a message, or a cubin with notes;
   * never a crash (ASan runs this too) */
  for (size_t n = 0; n < cubin_len; n += 7) {
    int r = gpd_cubin_open(cubin, n, &c, err, sizeof err);
    if (r == 0)
      gpd_cubin_free(c);
    else
      assert_true(err[0] != 0);
  }
  /* flipped bytes all over the file */
  uint8_t *copy = malloc(cubin_len);
  assert_non_null(copy);
  for (size_t pos = 16; pos < cubin_len; pos += 3) {
    memcpy(copy, cubin, cubin_len);
    copy[pos] ^= (uint8_t)(0x5a + pos);
    copy[(pos * 7) % cubin_len] ^= 0xff;
    if (gpd_cubin_open(copy, cubin_len, &c, err, sizeof err) == 0) {
      for (size_t i = 0; i < c->nfuncs; i++) {
        const char *f;
        uint32_t l;
        gpd_cubin_line_at(c, c->funcs[i].section, c->funcs[i].lo, &f, &l);
      }
      gpd_cubin_free(c);
    }
  }
  free(copy);
}

/* ------------------------------------------- calling-context tree */

/* kernel 0 calls 1 (hot) at two sites weighted 3:1; 1 has 400 samples */
static void test_gcct_two_sites(void **state) {
  (void)state;
  double samples[] = {40, 400};
  gpd_gcall_t e[] = {{0, 1, 0x80, 30}, {0, 1, 0xd0, 10}};
  gpd_gcct_t *t;
  assert_int_equal(gpd_gcct_build(2, 0, samples, e, 2, 100, &t), 0);
  assert_int_equal(t->nnodes, 3);
  assert_int_equal(t->nodes[0].parent, -1);
  assert_true(t->nodes[0].samples == 40);
  assert_int_equal(t->nodes[1].call_off, 0x80);
  assert_true(t->nodes[1].samples == 300);
  assert_int_equal(t->nodes[2].call_off, 0xd0);
  assert_true(t->nodes[2].samples == 100);
  assert_int_equal(t->unreached, 0);
  gpd_gcct_free(t);
}

/* A diamond 0->1, 0->2, 1->3, 2->3 with 3 called 1:3; a recursive pair
 * 4<->5 called from 3; 6 sampled but never called (unreached); 7 called
 * by 0 with no call samples and no samples: no context. */
static void test_gcct_diamond_recursion_unreached(void **state) {
  (void)state;
  double samples[] = {8, 16, 32, 64, 12, 4, 5, 0};
  gpd_gcall_t e[] = {
      {0, 1, 0x10, 1}, {0, 2, 0x20, 1}, {1, 3, 0x30, 1}, {2, 3, 0x40, 3},
      {3, 4, 0x50, 0}, /* unsampled call into the recursive group: step 2 */
      {4, 5, 0x60, 7}, {5, 4, 0x70, 9}, {0, 7, 0x80, 0},
  };
  gpd_gcct_t *t;
  assert_int_equal(gpd_gcct_build(8, 0, samples, e, 8, 100, &t), 0);
  /* nodes: 0, 1, 3 (via 1), {4,5} (via 3 via 1), 2, 3 (via 2), {4,5} (via 2), unreached 6 */
  assert_int_equal(t->nnodes, 8);
  double want_func[] = {0, 1, 3, 4, 2, 3, 4, 6};
  double want_samples[] = {8, 16, 16, 4, 32, 48, 12, 5};
  for (size_t i = 0; i < t->nnodes; i++) {
    assert_int_equal(t->nodes[i].func, (uint32_t)want_func[i]);
    assert_true(t->nodes[i].samples == want_samples[i]);
  }
  assert_true(t->nodes[3].scc >= 0 && t->nodes[6].scc >= 0); /* the recursive group */
  assert_int_equal(t->scc_size[t->scc_of[4]], 2);
  assert_int_equal(t->nodes[7].parent, -1);
  assert_int_equal(t->unreached, 1);
  /* the total is kept: every sample is somewhere */
  double total = 0;
  for (size_t i = 0; i < t->nnodes; i++)
    total += t->nodes[i].samples;
  assert_true(total == 8 + 16 + 32 + 64 + 12 + 4 + 5);
  gpd_gcct_free(t);
  /* the same graph past a node cap: -E2BIG */
  assert_int_equal(gpd_gcct_build(8, 0, samples, e, 8, 4, &t), -E2BIG);
  /* DCCG: inclusive at the root equals the tree's reached total */
  gpd_dccg_t *d;
  assert_int_equal(gpd_dccg_build(8, 0, samples, e, 8, &d), 0);
  assert_true(d->inclusive[d->scc_of[0]] == 8 + 16 + 32 + 64 + 16);
  assert_true(d->inclusive[d->scc_of[3]] == 64 + 16);
  assert_true(d->paths == 8); /* 7 is a context of the static graph */
  gpd_dccg_free(d);
  /* bad input */
  gpd_gcall_t bad = {0, 9, 0, 1};
  assert_int_equal(gpd_gcct_build(8, 0, samples, &bad, 1, 100, &t), -EINVAL);
  assert_int_equal(gpd_gcct_build(8, 8, samples, e, 8, 100, &t), -EINVAL);
}

/* ------------------------------------------------------ attribution */

/* nvdisasm-format text written for this test (offsets chosen inside the
 * functions of the nvcc-built cubin; the real nvdisasm output of the same
 * program is tested below against its fixture) */
static const char synth_disasm[] =
    "//--------------------- .text._Z5knownPKfiPf --------------------------\n"
    "\t.section\t.text._Z5knownPKfiPf,\"ax\",@progbits\n"
    "_Z5knownPKfiPf:\n"
    ".text._Z5knownPKfiPf:\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
    "        /*0010*/                   MOV R4, c[0x0][0x210] ;\n"
    "        /*0080*/                   CALL.REL.NOINC `($_Z5knownPKfiPf$_Z3hotPKfif) ;\n"
    "        /*0090*/                   MOV R4, c[0x0][0x210] ;\n"
    "        /*00d0*/                   CALL.REL.NOINC `($_Z5knownPKfiPf$_Z3hotPKfif) ;\n"
    "        /*00e0*/               @P0 BRA `(.L_x_0) ;\n"
    "        /*0110*/                   CALL.REL.NOINC `($_Z5knownPKfiPf$_Z4facti) ;\n"
    ".L_x_0:\n"
    "        /*0120*/                   STG.E desc[UR4][R2.64], R0 ;\n"
    "        /*0130*/                   EXIT ;\n"
    ".L_x_9:\n"
    "        /*0140*/                   BRA `(.L_x_9);\n"
    "        .type           $_Z5knownPKfiPf$_Z3hotPKfif,@function\n"
    "$_Z5knownPKfiPf$_Z3hotPKfif:\n"
    "        /*0210*/                   ISETP.GE.AND P0, PT, R6, 0x1, PT ;\n"
    ".L_x_1:\n"
    "        /*0250*/                   FFMA R0, R0, R7, R9 ;\n"
    "        /*0300*/                   LDG.E R9, desc[UR4][R2.64] ;\n"
    "        /*04d0*/               @P0 BRA `(.L_x_1) ;\n"
    "        /*0580*/                   RET.REL.NODEC R20 `(_Z5knownPKfiPf) ;\n"
    "$_Z5knownPKfiPf$_Z4facti:\n"
    "        /*05c0*/                   ISETP.GE.AND P0, PT, R4, 0x2, PT ;\n"
    "        /*0600*/               @!P0 BRA `(.L_x_2) ;\n"
    "        /*0700*/                   CALL.REL.NOINC `($_Z5knownPKfiPf$_Z4facti) ;\n"
    ".L_x_2:\n"
    "        /*0710*/                   RET.REL.NODEC R20 `(_Z5knownPKfiPf) ;\n";

static void test_attribute_synthetic(void **state) {
  (void)state;
  NEED_CUBIN();
  char err[256];
  gpd_cubin_t *c;
  gpd_disasm_t *d;
  assert_int_equal(gpd_cubin_open(cubin, cubin_len, &c, err, sizeof err), 0);
  assert_int_equal(gpd_disasm_parse(synth_disasm, sizeof synth_disasm - 1, &d), 0);
  const gpd_disasm_sec_t *sec = gpd_disasm_section(d, "_Z5knownPKfiPf");
  assert_non_null(sec);
  assert_int_equal(sec->ninsns, 19);
  assert_int_equal(sec->insns[2].flags, GPD_INSN_CALL);
  assert_int_equal(sec->insns[2].target, 0x210);
  assert_int_equal(sec->insns[5].flags, GPD_INSN_BRANCH | GPD_INSN_COND);
  assert_int_equal(sec->insns[5].target, 0x120);
  gpd_pcs_t s[] = {
      {0x80, GPD_STALL_GMEM, 30},  {0xd0, GPD_STALL_GMEM, 10}, {0x10, GPD_STALL_IDEP, 5},
      {0x300 - 0, GPD_STALL_IDEP, 300}, {0x300, GPD_STALL_GMEM, 100},
      {0x580, GPD_STALL_NONE, 40}, {0x600, GPD_STALL_PIPE, 8}, {0x700, GPD_STALL_PIPE, 2},
      {0x5000, GPD_STALL_PIPE, 3},                 /* outside every function */
      {0x10, GPD_STALL__COUNT, 99},                /* a "_not_issued" subset: not counted */
  };
  gpd_gtree_t *t;
  assert_int_equal(gpd_gtree_attribute(c, d, "_Z5knownPKfiPf", s, 10, 1000, &t), 0);
  assert_non_null(strstr(t->notes, "1 sample records at offsets outside"));
  assert_true(inclusive(t, 0) == 30 + 10 + 5 + 400 + 40 + 8 + 2 + 3);
  int h3 = find(t, 0, GPD_GNODE_FUNC, "_Z3hotPKfif (call at 0x80)");
  int h1 = find(t, 0, GPD_GNODE_FUNC, "_Z3hotPKfif (call at 0xd0)");
  int fa = find(t, 0, GPD_GNODE_FUNC, "[recursive] _Z4facti (call at 0x110)");
  int un = find(t, 0, GPD_GNODE_UNKNOWN, "[outside functions]");
  assert_true(h3 > 0 && h1 > 0 && fa > 0 && un > 0);
  assert_true(inclusive(t, (size_t)h3) == 0.75 * 440);
  assert_true(inclusive(t, (size_t)h1) == 0.25 * 440);
  assert_true(inclusive(t, (size_t)fa) == 10);
  assert_true(t->nodes[un].ginst == 3);
  /* hot's loop holds the 400 loop samples, split 3:1 too */
  char loop[64];
  const char *file;
  uint32_t line;
  const gpd_cubin_func_t *k = gpd_cubin_func_named(c, "_Z5knownPKfiPf");
  assert_int_equal(gpd_cubin_line_at(c, k->section, 0x250, &file, &line), 0);
  snprintf(loop, sizeof loop, "loop at pcsamp-known.cu:%u", line);
  int l3 = find(t, h3, GPD_GNODE_LOOP, loop);
  assert_true(l3 > 0);
  assert_true(inclusive(t, (size_t)l3) == 300);
  double stl_gmem = 0;
  for (size_t i = 0; i < t->nnodes; i++)
    stl_gmem += t->nodes[i].stall[GPD_STALL_GMEM];
  assert_true(stl_gmem == 30 + 10 + 100);
  /* the instruction leaf carries its opcode */
  int found_ldg = 0;
  for (size_t i = 0; i < t->nnodes; i++)
    found_ldg |= t->nodes[i].kind == GPD_GNODE_INSN && strcmp(t->nodes[i].label, "0x00f0 LDG.E") == 0;
  assert_true(found_ldg);
  gpd_gtree_free(t);

  /* exact execution counts of the call instructions (SASS metrics) weigh
   * the call sites instead of their samples: 1:1 here against 3:1
   * samples; they are not samples (GINST unchanged), and a note says
   * which rule the split used */
  gpd_pcs_t sc[12];
  memcpy(sc, s, sizeof s);
  sc[10] = (gpd_pcs_t){0x80, GPD_STALL_EXEC_COUNT, 5120};
  sc[11] = (gpd_pcs_t){0xd0, GPD_STALL_EXEC_COUNT, 5120};
  assert_int_equal(gpd_gtree_attribute(c, d, "_Z5knownPKfiPf", sc, 12, 1000, &t), 0);
  assert_non_null(strstr(t->notes, "exact execution counts of the call instructions"));
  assert_true(inclusive(t, 0) == 30 + 10 + 5 + 400 + 40 + 8 + 2 + 3);
  h3 = find(t, 0, GPD_GNODE_FUNC, "_Z3hotPKfif (call at 0x80)");
  h1 = find(t, 0, GPD_GNODE_FUNC, "_Z3hotPKfif (call at 0xd0)");
  assert_true(h3 > 0 && h1 > 0);
  assert_true(inclusive(t, (size_t)h3) == 0.5 * 440);
  assert_true(inclusive(t, (size_t)h1) == 0.5 * 440);
  gpd_gtree_free(t);
  /* 3:1 counts against 1:1 samples: 3:1 */
  sc[0].samples = sc[1].samples = 20;
  sc[10].samples = 3 * 5120;
  assert_int_equal(gpd_gtree_attribute(c, d, "_Z5knownPKfiPf", sc, 12, 1000, &t), 0);
  h3 = find(t, 0, GPD_GNODE_FUNC, "_Z3hotPKfif (call at 0x80)");
  h1 = find(t, 0, GPD_GNODE_FUNC, "_Z3hotPKfif (call at 0xd0)");
  assert_true(inclusive(t, (size_t)h3) == 0.75 * 440);
  assert_true(inclusive(t, (size_t)h1) == 0.25 * 440);
  gpd_gtree_free(t);
  /* without counts the note is not there */
  assert_int_equal(gpd_gtree_attribute(c, d, "_Z5knownPKfiPf", s, 10, 1000, &t), 0);
  assert_null(strstr(t->notes, "exact execution counts"));
  gpd_gtree_free(t);

  /* without nvdisasm: functions flat under the kernel, and a note */
  assert_int_equal(gpd_gtree_attribute(c, NULL, "_Z5knownPKfiPf", s, 10, 1000, &t), 0);
  assert_non_null(strstr(t->notes, "no nvdisasm output"));
  int hf = find(t, 0, GPD_GNODE_FUNC, "_Z3hotPKfif");
  assert_true(hf > 0);
  assert_true(inclusive(t, (size_t)hf) == 440);
  gpd_gtree_free(t);

  /* a kernel the binary does not have */
  assert_int_equal(gpd_gtree_attribute(c, d, "_Z5otherv", s, 3, 1000, &t), 0);
  assert_non_null(strstr(t->notes, "not in its GPU binary"));
  assert_true(inclusive(t, 0) == 45);
  gpd_gtree_free(t);
  gpd_disasm_free(d);
  gpd_cubin_free(c);
}


/* ------------------------------------- real nvdisasm output (H100 run) */

/* fixtures/h100/gpubins/<hash>.{gpubin,nvdisasm}: pcsamp-known.cu as the
 * program loaded it on the H100 (docs/VALIDATION.md) and CUDA 13's
 * `nvdisasm -c -g` of it */
static void test_real_nvdisasm(void **state) {
  (void)state;
  char path[4096], err[256];
  snprintf(path, sizeof path, "%s/h100/gpubins/c093beaf1608ac1626d8f4a117d40950.gpubin", fixtures);
  size_t blen, tlen;
  uint8_t *bin = slurp(path, &blen);
  snprintf(path, sizeof path, "%s/h100/gpubins/c093beaf1608ac1626d8f4a117d40950.nvdisasm", fixtures);
  char *text = (char *)slurp(path, &tlen);
  assert_non_null(bin);
  assert_non_null(text);
  gpd_cubin_t *c;
  gpd_disasm_t *d;
  assert_int_equal(gpd_cubin_open(bin, blen, &c, err, sizeof err), 0);
  assert_int_equal(gpd_disasm_parse(text, tlen, &d), 0);
  assert_string_equal(d->notes, "");
  const gpd_disasm_sec_t *ks = gpd_disasm_section(d, "_Z5knownPKfiPf");
  const gpd_disasm_sec_t *cs = gpd_disasm_section(d, "_Z11known_callsPKfiiPf");
  assert_non_null(ks);
  assert_non_null(cs);
  const gpd_cubin_func_t *k = gpd_cubin_func_named(c, "_Z5knownPKfiPf");
  const gpd_cubin_func_t *hot = gpd_cubin_func_named(c, "$_Z5knownPKfiPf$_Z3hotPKfif");
  const gpd_cubin_func_t *fact = gpd_cubin_func_named(c, "$_Z5knownPKfiPf$_Z4facti");
  const gpd_cubin_func_t *kc = gpd_cubin_func_named(c, "_Z11known_callsPKfiiPf");
  const gpd_cubin_func_t *hotc = gpd_cubin_func_named(c, "$_Z11known_callsPKfiiPf$_Z3hotPKfif");
  assert_true(k && hot && fact && kc && hotc);
  /* every instruction nvdisasm printed lies in the kernel's symbol */
  assert_int_equal(ks->insns[ks->ninsns - 1].off + 16 <= k->hi, 1);
  /* known(): three calls, two to hot() and one to fact() */
  gpd_gcfg_t *g;
  assert_int_equal(gpd_gcfg_build(ks, k->lo, hot->lo, &g), 0);
  assert_int_equal(g->ncalls, 3);
  assert_int_equal(g->calls[0], 0x70);
  assert_int_equal(g->callees[0], hot->lo);
  assert_int_equal(g->calls[1], 0xc0);
  assert_int_equal(g->callees[1], hot->lo);
  assert_int_equal(g->callees[2], fact->lo);
  /* blocks end at calls (the poster's repair): a block boundary after each */
  for (size_t i = 0; i < g->ncalls; i++)
    assert_true(gpd_gcfg_block_at(g, g->calls[i] + 16) != gpd_gcfg_block_at(g, g->calls[i]));
  gpd_gcfg_free(g);
  /* hot(): its loop, headed on the loop's source line */
  assert_int_equal(gpd_gcfg_build(ks, hot->lo, hot->hi, &g), 0);
  assert_true(g->nloops >= 1);
  const char *file;
  uint32_t line, hot_loop = marker_line("// HOT-LOOP"), hot_line = marker_line("// HOT-LINE");
  int loop_on_line = 0;
  for (size_t l = 0; l < g->nloops; l++)
    if (gpd_cubin_line_at(c, hot->section, g->loops[l].head_off, &file, &line) == 0)
      loop_on_line |= line == hot_loop || line == hot_line;
  assert_true(loop_on_line);
  gpd_gcfg_free(g);
  /* known_calls(): the call at 0x100 is inside the reps loop, 0x160 not */
  assert_int_equal(gpd_gcfg_build(cs, kc->lo, hotc->lo, &g), 0);
  assert_int_equal(g->ncalls, 2);
  assert_int_equal(g->calls[0], 0x100);
  assert_int_equal(g->calls[1], 0x160);
  assert_int_equal(g->nloops, 1);
  assert_true(g->blocks[gpd_gcfg_block_at(g, 0x100)].loop == 0);
  assert_true(g->blocks[gpd_gcfg_block_at(g, 0x160)].loop == -1);
  assert_int_equal(gpd_cubin_line_at(c, kc->section, g->loops[0].head_off, &file, &line), 0);
  assert_true(line == marker_line("// reps = 3") || line == marker_line("// CALLS-3"));
  gpd_gcfg_free(g);
  /* line info in nvdisasm agrees with the cubin's own line table */
  size_t agree = 0, both = 0;
  for (size_t i = 0; i < ks->ninsns; i++) {
    if (ks->insns[i].line == 0 || gpd_cubin_line_at(c, hot->section, ks->insns[i].off, &file, &line))
      continue;
    both++;
    agree += line == ks->insns[i].line;
  }
  assert_true(both > 50);
  assert_int_equal(agree, both);
  gpd_disasm_free(d);
  gpd_cubin_free(c);
  free(bin);
  free(text);
}

static void test_disasm_garbage(void **state) {
  (void)state;
  gpd_disasm_t *d;
  assert_int_equal(gpd_disasm_parse("", 0, &d), -EINVAL);
  const char g[] = "/*zz*/ BRA\n.text.x:\n/*0010*/ @P0 BRA `(.L_nowhere) ;\n/*0020*/ CALL `(\n"
                   "/*0030*/ BRX R2 -0x10 ;\n:\n\n/*ffffffffffffffffff*/ EXIT ;\n";
  assert_int_equal(gpd_disasm_parse(g, sizeof g - 1, &d), 0);
  const gpd_disasm_sec_t *s = gpd_disasm_section(d, "x");
  assert_non_null(s);
  assert_true(s->ninsns >= 3);
  assert_true(s->insns[0].flags & GPD_INSN_INDIRECT); /* unresolved label */
  gpd_gcfg_t *cfg;
  assert_int_equal(gpd_gcfg_build(s, 0, 0x40, &cfg), 0);
  gpd_gcfg_free(cfg);
  gpd_disasm_free(d);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s CUBIN|- SOURCE FIXTURES\n", argv[0]);
    return 2;
  }
  cubin_path = argv[1];
  src_path = argv[2];
  fixtures = argv[3];
  if (strcmp(cubin_path, "-") != 0 && (cubin = slurp(cubin_path, &cubin_len)) == NULL) {
    fprintf(stderr, "cannot read %s\n", cubin_path);
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stall_map),
      cmocka_unit_test(test_cubin_functions_lines),
      cmocka_unit_test(test_cubin_bad_input),
      cmocka_unit_test(test_gcct_two_sites),
      cmocka_unit_test(test_gcct_diamond_recursion_unreached),
      cmocka_unit_test(test_attribute_synthetic),
      cmocka_unit_test(test_disasm_garbage),
      cmocka_unit_test(test_real_nvdisasm),
  };
  int r = cmocka_run_group_tests(tests, NULL, NULL);
  free(cubin);
  return r;
}
