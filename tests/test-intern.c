/* test-intern.c - the CCT intern table: dense ids, idempotence,
 * publication, 4-thread races, full table. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpuprof/intern.h"

static void test_dense_same(void **state) {
  (void)state;
  gpd_intern_t t;
  int is_new;
  assert_int_equal(gpd_intern_init(&t, 1000), -22);
  assert_int_equal(gpd_intern_init(&t, 1024), 0);
  for (uint32_t i = 1; i <= 500; i++) {
    uint32_t id = gpd_intern_get(&t, i - 1, 0x400000 + i * 16, &is_new);
    assert_int_equal(id, i); /* dense from 1 */
    assert_int_equal(is_new, 1);
    gpd_intern_publish(&t, i - 1, 0x400000 + i * 16, id);
  }
  for (uint32_t i = 1; i <= 500; i++) {
    assert_int_equal(gpd_intern_get(&t, i - 1, 0x400000 + i * 16, &is_new), i);
    assert_int_equal(is_new, 0);
  }
  /* same ip, different parent: a different node */
  uint32_t a = gpd_intern_get(&t, 7, 0x400010, &is_new);
  assert_int_equal(is_new, 1);
  assert_int_equal(a, 501);
  gpd_intern_publish(&t, 7, 0x400010, a);
  assert_int_equal(gpd_intern_get(&t, 0, 0x400010, NULL), 1);
  assert_int_equal(gpd_intern_get(&t, 7, 0x400010, NULL), 501);
  assert_int_equal(gpd_intern_get(&t, 0, 0, &is_new), 0); /* ip 0 is no key */
  assert_int_equal(atomic_load(&t.next_id), 501);
  gpd_intern_free(&t);
}

static void test_full(void **state) {
  (void)state;
  gpd_intern_t t;
  assert_int_equal(gpd_intern_init(&t, 64), 0);
  for (uint32_t i = 0; i < 64; i++) {
    uint32_t id = gpd_intern_get(&t, 1, 0x1000 + i, NULL);
    assert_int_equal(id, i + 1);
    gpd_intern_publish(&t, 1, 0x1000 + i, id);
  }
  assert_int_equal(gpd_intern_get(&t, 1, 0x9999, NULL), 0);
  assert_int_equal(gpd_intern_get(&t, 2, 0x1000, NULL), 0);
  assert_int_equal(atomic_load(&t.full_fails), 2);
  /* existing keys are still found */
  assert_int_equal(gpd_intern_get(&t, 1, 0x1000 + 63, NULL), 64);
  gpd_intern_free(&t);
}

/* An unpublished entry makes racers wait (bounded), then give up with 0. */
static void test_unpublished_gives_up(void **state) {
  (void)state;
  gpd_intern_t t;
  int is_new;
  assert_int_equal(gpd_intern_init(&t, 256), 0);
  uint32_t id = gpd_intern_get(&t, 3, 0xabc, &is_new);
  assert_int_equal(is_new, 1);
  assert_int_equal(gpd_intern_get(&t, 3, 0xabc, &is_new), 0);
  assert_int_equal(is_new, 0);
  gpd_intern_publish(&t, 3, 0xabc, id);
  assert_int_equal(gpd_intern_get(&t, 3, 0xabc, &is_new), id);
  gpd_intern_free(&t);
}

#define NKEYS 20000
#define NTHREADS 4

typedef struct {
  gpd_intern_t *t;
  int seed;
  uint32_t ids[NKEYS];
  int created;
} worker_t;

static void *worker(void *arg) {
  worker_t *w = arg;
  /* each thread walks the same keys in a different order */
  for (int k = 0; k < NKEYS; k++) {
    int i = (int)(((unsigned)k * 7919u + (unsigned)w->seed * 104729u) % NKEYS);
    int is_new = 0;
    uint32_t parent = (uint32_t)(i % 97);
    uint64_t ip = 0x7f0000000000ull + (uint64_t)i * 4;
    uint32_t id = gpd_intern_get(w->t, parent, ip, &is_new);
    /* 0 after a bounded wait is allowed (creator preempted): retry */
    for (int tries = 0; id == 0 && tries < 1000; tries++)
      id = gpd_intern_get(w->t, parent, ip, &is_new);
    if (is_new) {
      w->created++;
      gpd_intern_publish(w->t, parent, ip, id);
    }
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
  uint8_t *used = calloc(NKEYS + 1, 1);
  for (int i = 0; i < NTHREADS; i++)
    created += w[i].created;
  assert_int_equal(created, NKEYS); /* each key created exactly once */
  for (int k = 0; k < NKEYS; k++) {
    uint32_t id = w[0].ids[k];
    assert_true(id >= 1 && id <= NKEYS);
    for (int i = 1; i < NTHREADS; i++)
      assert_int_equal(w[i].ids[k], id); /* all threads agree */
    assert_int_equal(used[id], 0);       /* distinct keys, distinct ids */
    used[id] = 1;
  }
  assert_int_equal(atomic_load(&t.next_id), NKEYS); /* dense */
  free(used);
  free(w);
  gpd_intern_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_dense_same),
    cmocka_unit_test(test_full),
    cmocka_unit_test(test_unpublished_gives_up),
    cmocka_unit_test(test_concurrent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
