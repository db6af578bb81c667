/* test-intern.c - the CCT intern table: dense ids, idempotence, full vs
 * busy, a stalled filler (waited for, then passed over), find-only, and
 * 4-thread races (also run under TSan). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "gpuprof/intern.h"

static uint32_t get(gpd_intern_t *t, uint32_t parent, uint64_t ip, int *is_new) {
  uint32_t id = 0;
  int rc = gpd_intern_get(t, parent, ip, &id, is_new);
  return rc == 0 ? id : 0;
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The entry that holds (parent, ip) (inserted beforehand). */
static gpd_intern_entry_t *entry_of(gpd_intern_t *t, uint32_t parent, uint64_t ip) {
  for (uint64_t i = 0; i <= t->mask; i++)
    if (atomic_load(&t->tab[i].key_ip) == ip && atomic_load(&t->tab[i].key_parent) == parent)
      return &t->tab[i];
  return NULL;
}

static void test_dense_same(void **state) {
  (void)state;
  gpd_intern_t t;
  int is_new;
  uint32_t id;
  assert_int_equal(gpd_intern_init(&t, 1000), -EINVAL);
  assert_int_equal(gpd_intern_init(&t, 1024), 0);
  for (uint32_t i = 1; i <= 500; i++) {
    assert_int_equal(gpd_intern_get(&t, i - 1, 0x400000 + i * 16, &id, &is_new), 0);
    assert_int_equal(id, i); /* dense from 1 */
    assert_int_equal(is_new, 1);
  }
  for (uint32_t i = 1; i <= 500; i++) {
    assert_int_equal(get(&t, i - 1, 0x400000 + i * 16, &is_new), i);
    assert_int_equal(is_new, 0);
    assert_int_equal(gpd_intern_find(&t, i - 1, 0x400000 + i * 16, &id), 0);
    assert_int_equal(id, i);
  }
  /* same ip, different parent: a different node */
  uint32_t a = get(&t, 7, 0x400010, &is_new);
  assert_int_equal(is_new, 1);
  assert_int_equal(a, 501);
  assert_int_equal(get(&t, 0, 0x400010, NULL), 1);
  assert_int_equal(get(&t, 7, 0x400010, NULL), 501);
  assert_int_equal(gpd_intern_get(&t, 0, 0, &id, &is_new), -EINVAL); /* ip 0 is no key */
  assert_int_equal(id, 0);
  assert_int_equal(gpd_intern_find(&t, 8, 0x400010, &id), -ENOENT);
  assert_int_equal(atomic_load(&t.next_id), 501);
  gpd_intern_free(&t);
}

static void test_full(void **state) {
  (void)state;
  gpd_intern_t t;
  uint32_t id;
  assert_int_equal(gpd_intern_init(&t, 64), 0);
  for (uint32_t i = 0; i < 64; i++)
    assert_int_equal(get(&t, 1, 0x1000 + i, NULL), i + 1);
  assert_int_equal(gpd_intern_get(&t, 1, 0x9999, &id, NULL), -ENOSPC);
  assert_int_equal(gpd_intern_get(&t, 2, 0x1000, &id, NULL), -ENOSPC);
  assert_int_equal(atomic_load(&t.full_fails), 2);
  assert_int_equal(atomic_load(&t.busy_fails), 0);
  /* existing keys are still found */
  assert_int_equal(get(&t, 1, 0x1000 + 63, NULL), 64);
  gpd_intern_free(&t);
}

/* A full table whose only entry with our ip is still being filled (its
 * filler stalled for good): -EBUSY after the bounded wait, not -ENOSPC. */
static void test_full_vs_busy(void **state) {
  (void)state;
  gpd_intern_t t;
  uint32_t id;
  assert_int_equal(gpd_intern_init(&t, 64), 0);
  for (uint32_t i = 0; i < 64; i++)
    assert_int_equal(get(&t, 1, 0x1000 + i, NULL), i + 1);
  gpd_intern_entry_t *e = entry_of(&t, 1, 0x1000 + 5);
  assert_non_null(e);
  atomic_store(&e->id, 0); /* back to "being filled" */
  assert_int_equal(t.busy_wait_ns, GPD_INTERN_BUSY_WAIT_NS);
  uint64_t t0 = mono_ns();
  assert_int_equal(gpd_intern_get(&t, 1, 0x1000 + 5, &id, NULL), -EBUSY);
  uint64_t waited = mono_ns() - t0;
  assert_true(waited >= GPD_INTERN_BUSY_WAIT_NS); /* it waited ... */
  assert_true(waited < 2000000000ull);            /* ... bounded (2 s: a loaded machine) */
  assert_int_equal(atomic_load(&t.busy_fails), 1);
  assert_int_equal(atomic_load(&t.full_fails), 0);
  /* other keys: plain full */
  assert_int_equal(gpd_intern_get(&t, 1, 0x9999, &id, NULL), -ENOSPC);
  assert_int_equal(atomic_load(&t.full_fails), 1);
  /* find never waits: a filling entry is simply not there yet */
  assert_int_equal(gpd_intern_find(&t, 1, 0x1000 + 5, &id), -ENOENT);
  gpd_intern_free(&t);
}

/* A filler that is slow but finishes: the lookup waits and gets its id
 * (no duplicate, no failure). */
typedef struct {
  gpd_intern_entry_t *e;
  uint32_t id;
  uint64_t delay_ns;
} filler_t;

static void *filler(void *arg) {
  filler_t *f = arg;
  struct timespec ts = {0, (long)f->delay_ns};
  nanosleep(&ts, NULL);
  atomic_store_explicit(&f->e->id, f->id, memory_order_release);
  return NULL;
}

static void test_slow_filler_waited_for(void **state) {
  (void)state;
  gpd_intern_t t;
  uint32_t id;
  int is_new;
  assert_int_equal(gpd_intern_init(&t, 256), 0);
  /* A long bound: the filler thread must get a CPU within it even on a
   * loaded machine, so the outcome does not depend on scheduling. */
  t.busy_wait_ns = 30000000000ull;
  uint32_t want = get(&t, 3, 0xabc, &is_new);
  assert_int_equal(is_new, 1);
  filler_t f = {entry_of(&t, 3, 0xabc), want, 2000000};
  assert_non_null(f.e);
  atomic_store(&f.e->id, 0); /* the filler has claimed it and stalls */
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, filler, &f), 0);
  assert_int_equal(gpd_intern_get(&t, 3, 0xabc, &id, &is_new), 0);
  pthread_join(th, NULL);
  assert_int_equal(id, want);
  assert_int_equal(is_new, 0);
  assert_int_equal(atomic_load(&t.next_id), 1); /* no duplicate */
  assert_int_equal(atomic_load(&t.busy_skips), 0);
  gpd_intern_free(&t);
}

/* A filler that never finishes (a signal handler interrupting it on its
 * own thread would wait on itself): after the bounded wait the lookup
 * inserts a second entry for the key and reports it new, never 0. */
static void test_stalled_filler_passed_over(void **state) {
  (void)state;
  gpd_intern_t t;
  uint32_t id, again;
  int is_new;
  assert_int_equal(gpd_intern_init(&t, 256), 0);
  uint32_t first = get(&t, 3, 0xabc, &is_new);
  gpd_intern_entry_t *e = entry_of(&t, 3, 0xabc);
  atomic_store(&e->id, 0);
  assert_int_equal(gpd_intern_get(&t, 3, 0xabc, &id, &is_new), 0);
  assert_int_equal(is_new, 1);
  assert_int_equal(id, first + 1);
  assert_int_equal(atomic_load(&t.busy_skips), 1);
  /* the duplicate is found from now on (after another bounded wait) */
  assert_int_equal(gpd_intern_get(&t, 3, 0xabc, &again, &is_new), 0);
  assert_int_equal(again, id);
  assert_int_equal(is_new, 0);
  assert_int_equal(gpd_intern_find(&t, 3, 0xabc, &again), 0);
  assert_int_equal(again, id);
  /* once the filler completes, lookups find its entry first again */
  atomic_store(&e->id, first);
  assert_int_equal(get(&t, 3, 0xabc, NULL), first);
  gpd_intern_free(&t);
}

#define NKEYS 20000
#define NTHREADS 4

typedef struct {
  gpd_intern_t *t;
  int seed;
  uint32_t ids[NKEYS];
  int created;
  int failed;
} worker_t;

static void *worker(void *arg) {
  worker_t *w = arg;
  /* each thread walks the same keys in a different order */
  for (int k = 0; k < NKEYS; k++) {
    int i = (int)(((unsigned)k * 7919u + (unsigned)w->seed * 104729u) % NKEYS);
    int is_new = 0;
    uint32_t parent = (uint32_t)(i % 97);
    uint64_t ip = 0x7f0000000000ull + (uint64_t)i * 4;
    uint32_t id = 0;
    if (gpd_intern_get(w->t, parent, ip, &id, &is_new) != 0)
      w->failed++; /* never: the table is 3x larger than the keys */
    if (is_new)
      w->created++;
    w->ids[i] = id;
  }
  return NULL;
}

static void test_concurrent(void **state) {
  (void)state;
  gpd_intern_t t;
  assert_int_equal(gpd_intern_init(&t, 1 << 16), 0);
  worker_t *w = calloc(NTHREADS, sizeof *w);
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    w[i].t = &t;
    w[i].seed = i;
    assert_int_equal(pthread_create(&th[i], NULL, worker, &w[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++)
    pthread_join(th[i], NULL);
  int created = 0;
  for (int i = 0; i < NTHREADS; i++) {
    created += w[i].created;
    assert_int_equal(w[i].failed, 0); /* busy is never a failure */
  }
  /* Each key created once, plus one per filler passed over after the
   * bounded wait (a preempted racer; normally none). */
  uint64_t skips = atomic_load(&t.busy_skips);
  assert_int_equal(created, NKEYS + (int)skips);
  assert_int_equal(atomic_load(&t.next_id), (uint32_t)created); /* dense */
  assert_int_equal(atomic_load(&t.full_fails), 0);
  uint8_t *used = calloc((size_t)created + 1, 1);
  int disagree = 0;
  for (int k = 0; k < NKEYS; k++) {
    uint32_t id = w[0].ids[k];
    assert_true(id >= 1 && id <= (uint32_t)created);
    for (int i = 1; i < NTHREADS; i++)
      disagree += w[i].ids[k] != id;
    assert_int_equal(used[id], 0); /* distinct keys, distinct ids */
    used[id] = 1;
  }
  assert_true(disagree <= (int)skips * (NTHREADS - 1));
  free(used);
  free(w);
  gpd_intern_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_dense_same),
    cmocka_unit_test(test_full),
    cmocka_unit_test(test_full_vs_busy),
    cmocka_unit_test(test_slow_filler_waited_for),
    cmocka_unit_test(test_stalled_filler_passed_over),
    cmocka_unit_test(test_concurrent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
