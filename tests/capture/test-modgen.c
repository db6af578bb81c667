/* test-modgen - a library unloaded with dlclose and another mapped at the
 * same address must not inherit the old one's name: libcapA.so captures,
 * is closed, libcapB.so (same code and layout) is opened at the same
 * address (else SKIP: the loader chose another place) and captures from
 * the same call site in main; the NODE of each leaf must name its own
 * MODULE.  Then libcapA.so again: its old module and node come back.
 * Usage: test-modgen DIR (where libcapA.so and libcapB.so are). */
#include <dlfcn.h>
#include <limits.h>

#include "drain.h"
#include "shim.h"

#define NOINLINE __attribute__((noinline))
static dr_t D;
static volatile int n_phases = 3, n_reps = 2; /* volatile: loops stay loops (one call site) */

/* One call site for both libraries. */
NOINLINE uint32_t call_lib(uint32_t (*fn)(void)) {
  uint32_t id = fn();
  __asm__ volatile("" ::: "memory");
  return id;
}

static const gpd_rec_module_t *leaf_module(uint32_t id, const char **path, uint64_t *offset,
                                           uint32_t *parent) {
  const gpd_rec_node_t *n = dr_node(&D, id);
  if (!n)
    DR_FAIL("node %u never announced", id);
  int mi = -1;
  const gpd_rec_module_t *m = dr_module(&D, n->module, &mi);
  if (!m)
    DR_FAIL("module %u of node %u never announced", n->module, id);
  *path = D.mod_path[mi];
  *offset = n->offset;
  *parent = n->parent;
  return m;
}

typedef struct {
  void *h;
  uint32_t (*work)(void);
} lib_t;

static void lib_open(lib_t *l, const char *dir, const char *name) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  l->h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
  if (!l->h)
    DR_FAIL("dlopen %s: %s", p, dlerror());
  *(void **)&l->work = dlsym(l->h, "capmod_work");
  if (!l->work)
    DR_FAIL("dlsym capmod_work in %s", name);
}

int main(int argc, char **argv) {
  DR_CHECK(argc == 2, "usage: test-modgen DIR");
  dr_attach(&D, 8, 4096);
  /* Every capture comes from the one call site in the loop below, so
   * libA's and libB's leaves have the same parent node and, at the same
   * address, the same call-site address: only the mapping tells them
   * apart.  Phases: libA, libB, libA again. */
  static const char *const names[3] = {"libcapA.so", "libcapB.so", "libcapA.so"};
  uint32_t ids[3][2] = {{0}};
  uintptr_t addr[3] = {0};
  int phases = 0;
  for (int ph = 0; ph < n_phases; ph++) {
    lib_t l;
    lib_open(&l, argv[1], names[ph]);
    addr[ph] = (uintptr_t)l.work;
    if (ph > 0 && addr[ph] != addr[0]) {
      if (ph == 1) {
        printf("SKIP: libcapB.so mapped at %#lx, libcapA.so was at %#lx\n", (unsigned long)addr[1],
               (unsigned long)addr[0]);
        return 77;
      }
      dlclose(l.h);
      break; /* libA elsewhere the second time: nothing to compare */
    }
    for (int i = 0; i < n_reps; i++)
      ids[ph][i] = call_lib(l.work);
    DR_CHECK(dlclose(l.h) == 0, "dlclose %s", names[ph]);
    phases++;
  }
  dr_drain(&D);
  uint32_t na = ids[0][0], nb = ids[1][0];
  DR_CHECK(na && na == ids[0][1], "libA capture %u / %u", na, ids[0][1]);
  DR_CHECK(nb && nb == ids[1][1], "libB capture %u / %u", nb, ids[1][1]);
  DR_CHECK(nb != na, "libB's call site got libA's node %u", na);

  const char *pa, *pb;
  uint64_t oa, ob;
  uint32_t para, parb;
  const gpd_rec_module_t *ma = leaf_module(na, &pa, &oa, &para);
  const gpd_rec_module_t *mb = leaf_module(nb, &pb, &ob, &parb);
  DR_CHECK(strstr(pa, "libcapA.so"), "first path names %s", pa);
  DR_CHECK(strstr(pb, "libcapB.so"), "second path names %s", pb);
  DR_CHECK(ma->id != mb->id, "one module id %u for two libraries", ma->id);
  DR_CHECK(ma->base == mb->base, "same load address expected");
  /* The worst case was exercised: same offset, same parent (call site). */
  DR_CHECK(oa == ob, "offsets differ (%#lx vs %#lx)", (unsigned long)oa, (unsigned long)ob);
  DR_CHECK(para == parb, "parents differ (%u vs %u)", para, parb);
  /* The same file at the same place again: the same module and node. */
  if (phases == 3)
    DR_CHECK(ids[2][0] == na && ids[2][1] == na, "libA reopened: nodes %u %u, first time %u", ids[2][0],
             ids[2][1], na);
  DR_CHECK(D.bad == 0, "%d bad records", D.bad);
  printf("test-modgen: ok (A node %u, B node %u at %#lx, %d phases)\n", na, nb, (unsigned long)addr[0],
         phases);
  return 0;
}
