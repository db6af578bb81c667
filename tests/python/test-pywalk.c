/* test-pywalk.c - the shim's Python frame walker (shim/pyframes.c)
 * against synthetic memory, no interpreter:
 *   lines   a hand-made location table (CPython 3.11+ format) gives the
 *           lines PyCode_Addr2Line gives;
 *   chain   a well-formed 3.11 and 3.12 chain (fake type objects, code
 *           objects, strings, line tables) gives its frames, innermost
 *           first, incomplete frames left out;
 *   torn    garbage: random frames and objects in a region with unmapped
 *           and PROT_NONE pages, pointers into them, cycles; the walk must
 *           never fault and stay bounded (20 000 random chains per layout).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int gpd_shim__pywalk(unsigned hex, uintptr_t f, uintptr_t code_type, uintptr_t str_type,
                     uintptr_t bytes_type, uint64_t *keys, int max);
int gpd_shim__py_addr2line(const uint8_t *tab, size_t len, int first, long addr);

#include "check.h"

/* Offsets as in pyframes.c's table (the walker's contract). */
typedef struct {
  unsigned hex, fr_code, fr_prev, fr_instr, fr_owner, fr_entry, cstack;
  unsigned co_first, co_file, co_qual, co_lt, co_firsttr, co_code, str_ascii;
} lay_t;
static const lay_t L311 = {0x030b, 32, 48, 56, 69, 68, 0, 72, 112, 128, 136, 168, 184, 48};
static const lay_t L312 = {0x030c, 0, 8, 56, 70, 0, 3, 68, 112, 128, 136, 176, 192, 40};

static uint64_t code_type[32], str_type[32], bytes_type[32]; /* fake type objects */

/* every synthetic object, freed at the end (LeakSanitizer) */
static void *objs[256];
static int nobjs;
static void *obj(size_t n) {
  void *o = calloc(1, n);
  if (o && nobjs < 256)
    objs[nobjs++] = o;
  return o;
}

#define P(base, off) (*(uintptr_t *)((char *)(base) + (off)))

static void *str_new(const lay_t *L, const char *s) {
  size_t n = strlen(s);
  char *o = obj(L->str_ascii + n + 1);
  P(o, 8) = (uintptr_t)str_type;
  *(long *)(o + 16) = (long)n;
  *(unsigned *)(o + 32) = (1u << 2) | (1u << 5) | (1u << 6); /* kind 1, compact, ascii */
  memcpy(o + L->str_ascii, s, n);
  return o;
}

/* A line table: code 13 (no columns) one entry per 2 code units, line
 * first + 1, first + 2, ... */
static void *bytes_lines(int nent) {
  char *o = obj(32 + 2 * nent + 1);
  P(o, 8) = (uintptr_t)bytes_type;
  *(long *)(o + 16) = 2 * nent;
  for (int i = 0; i < nent; i++) {
    o[32 + 2 * i] = (char)(0x80 | 13 << 3 | 1); /* 2 code units */
    o[32 + 2 * i + 1] = 2;                      /* svarint +1 */
  }
  return o;
}

static void *code_new(const lay_t *L, const char *qual, const char *file, int first) {
  char *o = obj(L->co_code + 64);
  P(o, 8) = (uintptr_t)code_type;
  *(long *)(o + 16) = 32; /* code units */
  *(int *)(o + L->co_first) = first;
  P(o, L->co_file) = (uintptr_t)str_new(L, file);
  P(o, L->co_qual) = (uintptr_t)str_new(L, qual);
  P(o, L->co_lt) = (uintptr_t)bytes_lines(16);
  *(int *)(o + L->co_firsttr) = 1;
  return o;
}

/* frame running code co at byte offset off (prev_instr = code + off) */
static char *frame_new(const lay_t *L, void *co, int off, void *prev, int owner, int entry) {
  char *f = obj(128);
  P(f, L->fr_code) = (uintptr_t)co;
  P(f, L->fr_prev) = (uintptr_t)prev;
  P(f, L->fr_instr) = (uintptr_t)co + L->co_code + (uintptr_t)(intptr_t)off;
  f[L->fr_owner] = (char)owner;
  if (L->fr_entry)
    f[L->fr_entry] = (char)entry;
  return f;
}

static int walk(const lay_t *L, void *f, uint64_t *keys, int max) {
  return gpd_shim__pywalk(L->hex, (uintptr_t)f, (uintptr_t)code_type, (uintptr_t)str_type,
                          (uintptr_t)bytes_type, keys, max);
}

static void test_lines(void) {
  /* first line 10: [0,4) +1 -> 11; [4,6) one-line form +2 -> 13 (2 column
   * bytes); [6,8) no location; [8,14) short form, same line 13 (1 byte). */
  const uint8_t tab[] = {0x80 | 13 << 3 | 1, 2, 0x80 | 12 << 3 | 0, 5, 9, 0x80 | 15 << 3 | 0,
                         0x80 | 0 << 3 | 2, 7};
  struct { long addr; int line; } want[] = {{-1, 10}, {0, 11}, {3, 11}, {4, 13}, {5, 13}, {6, -1},
                                            {7, -1}, {8, 13}, {13, 13}, {14, -1}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int got = gpd_shim__py_addr2line(tab, sizeof tab, 10, want[i].addr);
    CHECK(got == want[i].line, "addr %ld: line %d, want %d", want[i].addr, got, want[i].line);
  }
  /* long form: negative delta -3 (svarint 7), then 3 varints */
  const uint8_t tab2[] = {0x80 | 14 << 3 | 0, 7, 0, 1, 1};
  CHECK(gpd_shim__py_addr2line(tab2, sizeof tab2, 20, 0) == 17, "long form");
  /* truncated varint, a table that does not start at an entry */
  const uint8_t bad[] = {0x80 | 13 << 3, 0x40};
  CHECK(gpd_shim__py_addr2line(bad, sizeof bad, 1, 0) == -1, "truncated varint");
  const uint8_t bad2[] = {0x05};
  CHECK(gpd_shim__py_addr2line(bad2, sizeof bad2, 1, 0) == -1, "no entry start");
}

static void *valid_code; /* a well-formed code object, for the garbage */

static void test_chain(const lay_t *L) {
  void *a = code_new(L, "outer", "/x/app.py", 100), *b = code_new(L, "Model.forward", "/x/m.py", 200);
  void *c = code_new(L, "leaf", "/x/app.py", 300);
  uint64_t keys[16];
  /* innermost first: leaf (line 303) <- forward (202) | activation | outer (101) */
  char *fa = frame_new(L, a, 2, NULL, 0, 1);
  char *entry = L->cstack ? frame_new(L, a, 0, fa, (int)L->cstack, 0) : NULL;
  char *fb = frame_new(L, b, 2, entry ? entry : fa, 0, 1);
  char *fc = frame_new(L, c, 4, fb, 0, 0);
  /* an incomplete frame (before _co_firsttraceable) on top is left out */
  char *fi = frame_new(L, c, -2, fc, 0, 0);
  int n = walk(L, fi, keys, 16);
  CHECK(n == 3, "%x: %d frames, want 3", L->hex, n);
  CHECK(n == 3 && keys[0] != keys[1] && keys[1] != keys[2] && keys[0] != keys[2], "%x: keys differ", L->hex);
  for (int i = 0; i < n; i++)
    CHECK(keys[i] >> 48 == 0xffff, "%x: key %d tagged", L->hex, i);
  /* the same frames again: the same keys (sites are interned) */
  uint64_t again[16];
  CHECK(walk(L, fi, again, 16) == 3 && memcmp(keys, again, 3 * sizeof keys[0]) == 0, "%x: stable keys",
        L->hex);
  /* a generator frame is complete even before firsttraceable */
  char *fg = frame_new(L, c, -2, fc, 1, 0);
  CHECK(walk(L, fg, keys, 16) == 4, "%x: generator frame kept", L->hex);
  /* wrong type pointer: the walk stops there, keeps what it read */
  P(b, 8) = (uintptr_t)str_type;
  CHECK(walk(L, fi, keys, 16) == 1, "%x: a non-code object ends the walk", L->hex);
  P(b, 8) = (uintptr_t)code_type;
  /* a cycle: bounded */
  P(fa, L->fr_prev) = (uintptr_t)fc;
  n = walk(L, fi, keys, 16);
  CHECK(n > 3 && n <= 256, "%x: cycle bounded (%d)", L->hex, n);
  P(fa, L->fr_prev) = 0;
  valid_code = c;
}

/* Garbage: a 64-page region, a hole and PROT_NONE pages inside; words are
 * random, region pointers, fake type pointers or small numbers. */
static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void test_torn(const lay_t *L) {
  size_t pages = 64, sz = pages * 4096;
  char *r = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(r != MAP_FAILED, "mmap");
  if (r == MAP_FAILED)
    return;
  uint64_t keys[256];
  long total = 0;
  for (int round = 0; round < 20000; round++) {
    if (round % 500 == 0) {
      mprotect(r, sz, PROT_READ | PROT_WRITE);
      uint64_t *w = (uint64_t *)r;
      for (size_t i = 0; i < sz / 8; i++) {
        uint64_t x = rnd();
        switch (x & 7) {
        case 0: case 1: case 2: w[i] = (uint64_t)(uintptr_t)r + (rnd() % sz); break;
        case 3: w[i] = (uint64_t)(uintptr_t)r + (rnd() % sz & ~7ull); break;
        case 4: w[i] = (uint64_t)(uintptr_t)(x & 8 ? code_type : x & 16 ? str_type : bytes_type); break;
        case 5: w[i] = x & 8 ? rnd() & 0xff : (uint64_t)(uintptr_t)valid_code + (x & 16 ? 0 : L->co_code + (rnd() % 80)); break;
        default: w[i] = rnd();
        }
      }
      /* pages 10..13 PROT_NONE, 20..23 unmapped (re-mapped next time) */
      mprotect(r + 10 * 4096, 4 * 4096, PROT_NONE);
      munmap(r + 20 * 4096, 4 * 4096);
    }
    uintptr_t f = (uintptr_t)r + (rnd() % sz & ~7ull);
    if (round % 7 == 0)
      f = (uintptr_t)r + 20 * 4096 + 8; /* unmapped */
    if (round % 11 == 0)
      f = (uintptr_t)r + 10 * 4096 + 64; /* PROT_NONE */
    int n = walk(L, (void *)f, keys, 256);
    CHECK(n >= 0 && n <= 256, "%x: walk of garbage returned %d", L->hex, n);
    total += n;
    if (round % 500 == 499)
      mmap(r + 20 * 4096, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  }
  printf("torn %x: 20000 garbage chains walked, %ld frames accepted, no fault\n", L->hex, total);
  munmap(r, sz);
}

int main(void) {
  code_type[1] = str_type[1] = bytes_type[1] = 0;
  test_lines();
  test_chain(&L311);
  test_torn(&L311);
  test_chain(&L312);
  test_torn(&L312);
  for (int i = 0; i < nobjs; i++)
    free(objs[i]);
  if (fails) {
    printf("%d failures\n", fails);
    return 1;
  }
  printf("PASS test-pywalk\n");
  return 0;
}
