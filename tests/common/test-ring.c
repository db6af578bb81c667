/* test-ring.c - SPSC rings: wrap-around, full ring, concurrency (also
 * built with ThreadSanitizer as test-ring-tsan), corrupt rings, and a
 * cross-process producer. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpuprof/error.h"
#include "gpuprof/region.h"

#ifndef RING_TEST_N
#define RING_TEST_N 4000000u
#endif

static gpd_rec_invoke_t mk_invoke(uint64_t corr) {
  gpd_rec_invoke_t v;
  memset(&v, 0, sizeof v);
  v.h.type = GPD_REC_INVOKE;
  v.h.version = GPD_REC_VERSION;
  v.api = GPD_API_CUDA;
  v.op = GPD_OP_KERNEL;
  v.node = 1;
  v.corr = corr;
  v.ts = corr * 3;
  return v;
}

/* A STRING record whose text is `len` bytes of (id + i) & 0xff. */
static size_t mk_string(uint8_t *buf, uint32_t id, uint32_t len) {
  gpd_rec_string_t *s = (gpd_rec_string_t *)buf;
  memset(buf, 0, sizeof(gpd_rec_string_t));
  s->h.type = GPD_REC_STRING;
  s->h.version = GPD_REC_VERSION;
  s->h.len = len;
  s->id = id;
  s->kind = GPD_STR_KERNEL;
  for (uint32_t i = 0; i < len; i++)
    s->text[i] = (char)((id + i) & 0xff);
  return sizeof(gpd_rec_string_t) + len;
}

/* ------------------------------------------------------- collectors */

typedef struct {
  uint32_t next_id; /* expected next string id */
  unsigned n;
  int bad;
} str_check_t;

static void check_string(void *arg, const void *rec, size_t nbytes) {
  str_check_t *c = arg;
  const gpd_rec_string_t *s = rec;
  if (((uintptr_t)rec & 63) != 0 || s->h.type != GPD_REC_STRING || s->id != c->next_id ||
      nbytes != (size_t)s->h.nslots * GPD_SLOT_SIZE)
    c->bad++;
  for (uint32_t i = 0; i < s->h.len; i++)
    if ((uint8_t)s->text[i] != (uint8_t)((s->id + i) & 0xff))
      c->bad++;
  /* padding after the text is zero */
  for (size_t i = sizeof *s + s->h.len; i < nbytes; i++)
    if (((const uint8_t *)rec)[i] != 0)
      c->bad++;
  c->next_id++;
  c->n++;
}

static void count_fn(void *arg, const void *rec, size_t nbytes) {
  (void)rec;
  (void)nbytes;
  (*(unsigned *)arg)++;
}

/* ------------------------------------------------------------ tests */

static void test_wrap_multislot(void **state) {
  (void)state;
  gpd_region_t r;
  gpd_producer_t p;
  uint8_t buf[GPD_REC_MAX_BYTES];
  assert_int_equal(gpd_region_create(&r, 1, 64, 1, 1), 0);
  assert_int_equal(gpd_producer_claim(&r, &p, 7), 0);
  str_check_t c = {.next_id = 1};
  uint32_t id = 1;
  int crossed = 0;
  /* Records of 1..10 slots; consume after each so the ring keeps wrapping. */
  for (int round = 0; round < 2000; round++) {
    uint32_t len = (uint32_t)((round * 37) % 300);
    size_t n = mk_string(buf, id, len);
    uint64_t head = p.head;
    unsigned ns = gpd_rec_slots_for(sizeof(gpd_rec_string_t), len);
    if ((head & 63) + ns > 64)
      crossed++;
    assert_int_equal(gpd_producer_push(&p, buf, n), 0);
    id++;
    if (round % 3 == 2) {
      int got = gpd_ring_consume(&r, 0, 1000, check_string, &c);
      assert_true(got > 0);
    }
  }
  assert_true(gpd_ring_consume(&r, 0, 1000, check_string, &c) >= 0);
  assert_int_equal(c.bad, 0);
  assert_int_equal(c.n, 2000);
  assert_true(crossed > 10);
  assert_int_equal(atomic_load(&r.ctl[0].consumed), 2000);
  assert_int_equal(atomic_load(&r.ctl[0].pushed), 2000);
  assert_int_equal(atomic_load(&r.ctl[0].drops), 0);
  assert_int_equal(gpd_ring_pending(&r, 0), 0);
  gpd_region_close(&r);
}

static void test_full_drops(void **state) {
  (void)state;
  gpd_region_t r;
  gpd_producer_t p;
  assert_int_equal(gpd_region_create(&r, 2, 64, 1, 1), 0);
  assert_int_equal(gpd_producer_claim(&r, &p, 7), 0);
  for (uint64_t i = 1; i <= 64; i++) {
    gpd_rec_invoke_t v = mk_invoke(i);
    assert_int_equal(gpd_producer_push(&p, &v, sizeof v), 0);
  }
  for (uint64_t i = 0; i < 10; i++) {
    gpd_rec_invoke_t v = mk_invoke(100 + i);
    assert_int_equal(gpd_producer_push(&p, &v, sizeof v), -ENOSPC);
  }
  /* a 2-slot record does not fit either */
  gpd_rec_activity_t a;
  memset(&a, 0, sizeof a);
  assert_int_equal(gpd_producer_push(&p, &a, sizeof a), -ENOSPC);
  assert_int_equal(atomic_load(&r.ctl[0].drops), 11);
  assert_int_equal(atomic_load(&r.ctl[0].pushed), 64);
  assert_int_equal(gpd_ring_pending(&r, 0), 64);
  unsigned n = 0;
  assert_int_equal(gpd_ring_consume(&r, 0, 10, count_fn, &n), 10);
  assert_int_equal(n, 10);
  gpd_rec_invoke_t v = mk_invoke(200);
  assert_int_equal(gpd_producer_push(&p, &v, sizeof v), 0);
  /* oversize and undersize */
  static uint8_t big[GPD_REC_MAX_BYTES + 64];
  assert_int_equal(gpd_producer_push(&p, big, sizeof big), -E2BIG);
  assert_int_equal(gpd_producer_push(&p, big, 4), -E2BIG);
  gpd_region_close(&r);
}

/* ------------------------------------------------------ concurrency */

typedef struct {
  gpd_region_t r;
  uint64_t n;
  uint8_t *dropped; /* producer: 1 for a dropped seq */
  uint8_t *seen;    /* consumer: count per seq */
  uint64_t last;
  uint64_t received;
  uint64_t out_of_order;
  _Atomic int done;
} conc_t;

static void *producer_main(void *arg) {
  conc_t *c = arg;
  gpd_producer_t p;
  if (gpd_producer_claim(&c->r, &p, 1) != 0)
    abort();
  for (uint64_t s = 1; s <= c->n; s++) {
    gpd_rec_invoke_t v = mk_invoke(s);
    if (gpd_producer_push(&p, &v, sizeof v) != 0)
      c->dropped[s] = 1;
    if ((s & 1023) == 0)
      sched_yield(); /* let the consumer run on small machines */
  }
  gpd_producer_retire(&p);
  atomic_store_explicit(&c->done, 1, memory_order_release);
  return NULL;
}

static void conc_fn(void *arg, const void *rec, size_t nbytes) {
  conc_t *c = arg;
  const gpd_rec_invoke_t *v = rec;
  (void)nbytes;
  if (v->corr <= c->last || v->corr > c->n) {
    c->out_of_order++;
    return;
  }
  c->last = v->corr;
  c->seen[v->corr]++;
  c->received++;
}

static void test_concurrent(void **state) {
  (void)state;
  conc_t *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->n = RING_TEST_N;
  c->dropped = calloc(c->n + 1, 1);
  c->seen = calloc(c->n + 1, 1);
  assert_int_equal(gpd_region_create(&c->r, 1, 1024, 1, 1), 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, producer_main, c), 0);
  for (;;) {
    int done = atomic_load_explicit(&c->done, memory_order_acquire);
    int got = gpd_ring_consume(&c->r, 0, 256, conc_fn, c);
    assert_true(got >= 0);
    if (done && got == 0)
      break;
    if (got == 0)
      sched_yield();
  }
  pthread_join(th, NULL);
  uint64_t drops = atomic_load(&c->r.ctl[0].drops), ndropped = 0;
  assert_int_equal(c->out_of_order, 0);
  for (uint64_t s = 1; s <= c->n; s++) {
    assert_int_equal(c->seen[s] + c->dropped[s], 1);
    ndropped += c->dropped[s];
  }
  assert_int_equal(drops, ndropped);
  assert_int_equal(c->received + drops, c->n);
  /* drained + retired -> FREE again */
  assert_int_equal(atomic_load(&c->r.ctl[0].state), GPD_RING_FREE);
  print_message("concurrent: %llu pushed attempts, %llu received, %llu dropped\n", (unsigned long long)c->n,
                (unsigned long long)c->received, (unsigned long long)drops);
  gpd_region_close(&c->r);
  free(c->dropped);
  free(c->seen);
  free(c);
}

/* The daemon's pattern: consume from a private cursor, release one batch
 * late (as the writer does after its commit).  Also run under TSan. */
static void test_concurrent_lagged(void **state) {
  (void)state;
  conc_t *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->n = RING_TEST_N / 4;
  c->dropped = calloc(c->n + 1, 1);
  c->seen = calloc(c->n + 1, 1);
  assert_int_equal(gpd_region_create(&c->r, 1, 1024, 1, 1), 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, producer_main, c), 0);
  uint64_t cur = 0, prev = 0;
  for (unsigned k = 0;; k++) {
    int done = atomic_load_explicit(&c->done, memory_order_acquire);
    int got = gpd_ring_consume_at(&c->r, 0, &cur, 256, conc_fn, c);
    assert_true(got >= 0);
    if ((k & 3) == 3) {
      gpd_ring_release(&c->r, 0, prev);
      prev = cur;
    }
    if (done && got == 0 && prev == cur)
      break;
    if (got == 0)
      sched_yield();
  }
  pthread_join(th, NULL);
  gpd_ring_release(&c->r, 0, cur);
  uint64_t drops = atomic_load(&c->r.ctl[0].drops), ndropped = 0;
  assert_int_equal(c->out_of_order, 0);
  for (uint64_t s = 1; s <= c->n; s++) {
    assert_int_equal(c->seen[s] + c->dropped[s], 1);
    ndropped += c->dropped[s];
  }
  assert_int_equal(drops, ndropped);
  assert_int_equal(c->received + drops, c->n);
  assert_int_equal(atomic_load(&c->r.ctl[0].state), GPD_RING_FREE);
  print_message("concurrent lagged: %llu received, %llu dropped\n", (unsigned long long)c->received,
                (unsigned long long)drops);
  gpd_region_close(&c->r);
  free(c->dropped);
  free(c->seen);
  free(c);
}

/* A ring changing owners while the consumer reads it: every record a
 * consume_pf call delivers was pushed by the owner it reports (INVOKE
 * carries no thread id: the daemon takes the ring's).  A producer thread
 * claims the one ring as thread 1000 + round, pushes 1..7 records stamped
 * with that id (ts), retires; the ring comes back FREE only once the
 * consumer released everything.  Also run under TSan (the tid store at
 * claim against the consumer's load). */
typedef struct {
  gpd_region_t r;
  uint32_t rounds;
  uint64_t pushed;
  _Atomic int done;
} own_t;

static void *owner_main(void *arg) {
  own_t *o = arg;
  for (uint32_t round = 1; round <= o->rounds; round++) {
    gpd_producer_t p;
    while (gpd_producer_claim(&o->r, &p, 1000 + round) < 0)
      sched_yield(); /* RETIRED until the consumer released it */
    for (uint32_t k = 0; k < 1 + round % 7; k++) {
      gpd_rec_invoke_t v = mk_invoke(++o->pushed);
      v.ts = 1000 + round;
      while (gpd_producer_try_push(&p, &v, sizeof v) == -ENOSPC) /* waits, counts no drop */
        sched_yield();
    }
    gpd_producer_retire(&p);
  }
  atomic_store_explicit(&o->done, 1, memory_order_release);
  return NULL;
}

typedef struct {
  uint32_t owner;
  uint64_t n, bad, last;
} own_check_t;

static void own_fn(void *arg, const void *rec, size_t nbytes) {
  own_check_t *c = arg;
  const gpd_rec_invoke_t *v = rec;
  if (nbytes != GPD_SLOT_SIZE || v->ts != c->owner || v->corr != c->last + 1)
    c->bad++;
  c->last = v->corr;
  c->n++;
}

static void test_owner_handover(void **state) {
  (void)state;
  own_t *o = calloc(1, sizeof *o);
  assert_non_null(o);
  o->rounds = RING_TEST_N / 2000;
  assert_int_equal(gpd_region_create(&o->r, 1, 64, 1, 1), 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, owner_main, o), 0);
  own_check_t c = {0};
  for (;;) {
    int done = atomic_load_explicit(&o->done, memory_order_acquire);
    uint64_t cur = atomic_load(&o->r.ctl[0].tail);
    int got = gpd_ring_consume_pf(&o->r, 0, &cur, 5, own_fn, NULL, &c, &c.owner);
    assert_true(got >= 0);
    gpd_ring_release(&o->r, 0, cur); /* a drained RETIRED ring goes FREE here */
    if (done && got == 0)
      break;
    if (got == 0)
      sched_yield();
  }
  pthread_join(th, NULL);
  assert_int_equal(c.bad, 0);
  assert_int_equal(c.n, o->pushed);
  assert_int_equal(atomic_load(&o->r.ctl[0].drops), 0);
  assert_int_equal(atomic_load(&o->r.ctl[0].state), GPD_RING_FREE);
  print_message("owner handover: %u owners, %llu records\n", o->rounds, (unsigned long long)c.n);
  gpd_region_close(&o->r);
  free(o);
}

/* ----------------------------------------------------------- corrupt */

static void fill_valid(gpd_region_t *r, unsigned n) {
  gpd_producer_t p;
  assert_int_equal(gpd_producer_claim(r, &p, 1), 0);
  for (unsigned i = 1; i <= n; i++) {
    gpd_rec_invoke_t v = mk_invoke(i);
    assert_int_equal(gpd_producer_push(&p, &v, sizeof v), 0);
  }
}

static void test_corrupt_indices(void **state) {
  (void)state;
  gpd_region_t r;
  unsigned n = 0;
  assert_int_equal(gpd_region_create(&r, 1, 64, 1, 1), 0);
  fill_valid(&r, 8);
  gpd_ring_ctl_t *c = &r.ctl[0];
  atomic_store(&c->head, 1000000); /* far beyond tail + ring_slots */
  assert_int_equal(gpd_ring_consume(&r, 0, 100, count_fn, &n), GPD_EBADRING);
  atomic_store(&c->head, UINT64_MAX);
  assert_int_equal(gpd_ring_consume(&r, 0, 100, count_fn, &n), GPD_EBADRING);
  atomic_store(&c->head, 8);
  atomic_store(&c->tail, 9); /* tail beyond head */
  assert_int_equal(gpd_ring_consume(&r, 0, 100, count_fn, &n), GPD_EBADRING);
  assert_int_equal(n, 0);
  assert_int_equal(gpd_ring_pending(&r, 0), 0);
  atomic_store(&c->tail, 0);
  atomic_store(&c->head, 65); /* one beyond capacity */
  assert_int_equal(gpd_ring_consume(&r, 0, 100, count_fn, &n), GPD_EBADRING);
  assert_int_equal(gpd_ring_pending(&r, 0), 64);
  /* out-of-range ring index */
  assert_int_equal(gpd_ring_consume(&r, 1, 100, count_fn, &n), -EINVAL);
  gpd_region_close(&r);
}

static void test_corrupt_records(void **state) {
  (void)state;
  gpd_region_t r;
  unsigned n = 0;
  assert_int_equal(gpd_region_create(&r, 1, 64, 1, 1), 0);
  fill_valid(&r, 4);
  gpd_ring_ctl_t *c = &r.ctl[0];
  uint8_t *d = gpd_region_ring_data(&r, 0);
  /* record 3 gets nslots 0: 2 delivered, then an error, tail stays at 2 */
  ((gpd_rec_hdr_t *)(d + 2 * GPD_SLOT_SIZE))->nslots = 0;
  assert_int_equal(gpd_ring_consume(&r, 0, 100, count_fn, &n), GPD_EBADRECORD);
  assert_int_equal(n, 2);
  assert_int_equal(atomic_load(&c->tail), 2);
  /* nslots beyond what head published */
  ((gpd_rec_hdr_t *)(d + 2 * GPD_SLOT_SIZE))->nslots = 3;
  assert_int_equal(gpd_ring_consume(&r, 0, 100, count_fn, &n), GPD_EBADRECORD);
  /* nslots in range but wrong for the type */
  ((gpd_rec_hdr_t *)(d + 2 * GPD_SLOT_SIZE))->nslots = 2;
  assert_int_equal(gpd_ring_consume(&r, 0, 100, count_fn, &n), GPD_EBADRECORD);
  /* bad type */
  ((gpd_rec_hdr_t *)(d + 2 * GPD_SLOT_SIZE))->nslots = 1;
  ((gpd_rec_hdr_t *)(d + 2 * GPD_SLOT_SIZE))->type = 99;
  assert_int_equal(gpd_ring_consume(&r, 0, 100, count_fn, &n), GPD_EBADRECORD);
  assert_int_equal(n, 2);
  assert_int_equal(atomic_load(&c->tail), 2);
  /* repaired: the rest is consumed */
  ((gpd_rec_hdr_t *)(d + 2 * GPD_SLOT_SIZE))->type = GPD_REC_INVOKE;
  assert_int_equal(gpd_ring_consume(&r, 0, 100, count_fn, &n), 2);
  assert_int_equal(n, 4);
  gpd_region_close(&r);
}

/* Garbage everywhere, including a claimed multi-slot record that wraps:
 * never crashes, always a count or an error code. */
static void test_garbage(void **state) {
  (void)state;
  gpd_region_t r;
  assert_int_equal(gpd_region_create(&r, 1, 64, 1, 1), 0);
  gpd_ring_ctl_t *c = &r.ctl[0];
  uint8_t *d = gpd_region_ring_data(&r, 0);
  srand(12345);
  int errors = 0;
  for (int it = 0; it < 20000; it++) {
    for (int i = 0; i < 64 * (int)GPD_SLOT_SIZE; i++)
      d[i] = (uint8_t)rand();
    if (it % 4 == 0) { /* plausible headers to get past the first checks */
      for (int s = 0; s < 64; s++) {
        d[s * GPD_SLOT_SIZE + 1] = GPD_REC_VERSION;
        d[s * GPD_SLOT_SIZE] = (uint8_t)(1 + rand() % 6);
        d[s * GPD_SLOT_SIZE + 2] = (uint8_t)(1 + rand() % 4);
      }
    }
    uint64_t t = (uint64_t)rand() * 1000u;
    atomic_store(&c->tail, t);
    atomic_store(&c->head, t + (uint64_t)(rand() % 80));
    unsigned n = 0;
    int rc = gpd_ring_consume(&r, 0, 1000, count_fn, &n);
    if (rc < 0) {
      assert_true(rc == GPD_EBADRING || rc == GPD_EBADRECORD || rc == GPD_EBADVERSION);
      errors++;
    } else {
      assert_int_equal((unsigned)rc, n);
    }
    assert_true(atomic_load(&c->tail) <= atomic_load(&c->head));
  }
  assert_true(errors > 0);
  gpd_region_close(&r);
}

/* Valid records, then a STRING whose slots wrap around the end with a
 * garbage continuation: the prefix is delivered, the string rejected. */
static void test_wrapped_garbage(void **state) {
  (void)state;
  gpd_region_t r;
  gpd_producer_t p;
  uint8_t buf[GPD_REC_MAX_BYTES];
  assert_int_equal(gpd_region_create(&r, 1, 64, 1, 1), 0);
  assert_int_equal(gpd_producer_claim(&r, &p, 1), 0);
  unsigned n = 0;
  for (int i = 1; i <= 62; i++) {
    gpd_rec_invoke_t v = mk_invoke((uint64_t)i);
    assert_int_equal(gpd_producer_push(&p, &v, sizeof v), 0);
  }
  assert_int_equal(gpd_ring_consume(&r, 0, 1000, count_fn, &n), 62);
  size_t len = mk_string(buf, 5, 70); /* 3 slots: 62, 63, 0 */
  assert_int_equal(gpd_producer_push(&p, buf, len), 0);
  str_check_t sc = {.next_id = 5};
  assert_int_equal(gpd_ring_consume(&r, 0, 1000, check_string, &sc), 1);
  assert_int_equal(sc.bad, 0);
  /* now corrupt a wrapped record's len so it claims more slots than it has */
  len = mk_string(buf, 6, 70); /* slots 1,2,3 */
  assert_int_equal(gpd_producer_push(&p, buf, len), 0);
  gpd_rec_string_t *s = (gpd_rec_string_t *)(gpd_region_ring_data(&r, 0) + 1 * GPD_SLOT_SIZE);
  s->h.len = 10000;
  assert_int_equal(gpd_ring_consume(&r, 0, 1000, check_string, &sc), GPD_EBADRECORD);
  gpd_region_close(&r);
}

/* ------------------------------------------- private cursor + release */

typedef struct {
  uint64_t next; /* expected next corr */
  unsigned n;
  int bad;
} seq_check_t;

static void check_seq(void *arg, const void *rec, size_t nbytes) {
  seq_check_t *c = arg;
  const gpd_rec_invoke_t *v = rec;
  if (nbytes != GPD_SLOT_SIZE || v->h.type != GPD_REC_INVOKE || v->corr != c->next)
    c->bad++;
  c->next = v->corr + 1;
  c->n++;
}

/* consume_at does not publish tail: the slots it read stay reserved (the
 * producer drops rather than overwrite them) until they are released. */
static void test_consume_at_reserves(void **state) {
  (void)state;
  gpd_region_t r;
  gpd_producer_t p;
  assert_int_equal(gpd_region_create(&r, 1, 64, 1, 1), 0);
  assert_int_equal(gpd_producer_claim(&r, &p, 7), 0);
  gpd_ring_ctl_t *c = &r.ctl[0];
  uint64_t corr = 1;
  for (int i = 0; i < 40; i++) {
    gpd_rec_invoke_t v = mk_invoke(corr++);
    assert_int_equal(gpd_producer_push(&p, &v, sizeof v), 0);
  }
  uint64_t cur = atomic_load(&c->tail);
  seq_check_t sc = {.next = 1};
  assert_int_equal(gpd_ring_consume_at(&r, 0, &cur, 1000, check_seq, &sc), 40);
  assert_int_equal(cur, 40);
  assert_int_equal(atomic_load(&c->tail), 0); /* not published */
  assert_int_equal(gpd_ring_pending(&r, 0), 40);
  assert_int_equal(atomic_load(&c->consumed), 40);
  /* nothing new: 0, cursor unchanged */
  assert_int_equal(gpd_ring_consume_at(&r, 0, &cur, 1000, check_seq, &sc), 0);
  assert_int_equal(cur, 40);
  /* 24 more fit, the 25th would overwrite an unreleased slot */
  for (int i = 0; i < 24; i++) {
    gpd_rec_invoke_t v = mk_invoke(corr++);
    assert_int_equal(gpd_producer_push(&p, &v, sizeof v), 0);
  }
  gpd_rec_invoke_t v = mk_invoke(corr);
  assert_int_equal(gpd_producer_push(&p, &v, sizeof v), -ENOSPC);
  assert_int_equal(gpd_ring_consume_at(&r, 0, &cur, 1000, check_seq, &sc), 24);
  assert_int_equal(cur, 64);
  assert_int_equal(gpd_producer_push(&p, &v, sizeof v), -ENOSPC); /* still reserved */
  /* release part of it: exactly that many slots come back (wrap-around) */
  gpd_ring_release(&r, 0, 30);
  assert_int_equal(atomic_load(&c->tail), 30);
  for (int i = 0; i < 30; i++) {
    v = mk_invoke(corr++);
    assert_int_equal(gpd_producer_push(&p, &v, sizeof v), 0);
  }
  v = mk_invoke(corr);
  assert_int_equal(gpd_producer_push(&p, &v, sizeof v), -ENOSPC);
  assert_int_equal(gpd_ring_consume_at(&r, 0, &cur, 1000, check_seq, &sc), 30);
  assert_int_equal(cur, 94);
  assert_int_equal(sc.n, 94);
  assert_int_equal(sc.bad, 0);
  /* a second reader from the shared tail (a restarted daemon) sees
   * exactly the unreleased records again, in order */
  uint64_t cur2 = atomic_load(&c->tail);
  seq_check_t sc2 = {.next = 31};
  assert_int_equal(gpd_ring_consume_at(&r, 0, &cur2, 1000, check_seq, &sc2), 64);
  assert_int_equal(cur2, 94);
  assert_int_equal(sc2.bad, 0);
  /* gpd_ring_consume = consume_at from tail + release */
  gpd_ring_release(&r, 0, 94);
  v = mk_invoke(95);
  assert_int_equal(gpd_producer_push(&p, &v, sizeof v), 0);
  unsigned n = 0;
  assert_int_equal(gpd_ring_consume(&r, 0, 100, count_fn, &n), 1);
  assert_int_equal(atomic_load(&c->tail), 95);
  assert_int_equal(atomic_load(&c->drops), 3);
  gpd_region_close(&r);
}

static void test_release_bounds(void **state) {
  (void)state;
  gpd_region_t r;
  assert_int_equal(gpd_region_create(&r, 2, 64, 1, 1), 0);
  gpd_ring_ctl_t *c = &r.ctl[0];
  fill_valid(&r, 20);
  uint64_t cur = 0;
  unsigned n = 0;
  assert_int_equal(gpd_ring_consume_at(&r, 0, &cur, 1000, count_fn, &n), 20);
  gpd_ring_release(&r, 0, 12);
  assert_int_equal(atomic_load(&c->tail), 12);
  gpd_ring_release(&r, 0, 5); /* monotonic: never backwards */
  assert_int_equal(atomic_load(&c->tail), 12);
  gpd_ring_release(&r, 0, 12);
  assert_int_equal(atomic_load(&c->tail), 12);
  gpd_ring_release(&r, 0, 1000); /* beyond head: clamped to head */
  assert_int_equal(atomic_load(&c->tail), 20);
  /* a head a peer scribbled far ahead: a release of more than ring_slots
   * past the tail is ignored */
  atomic_store(&c->head, 500);
  gpd_ring_release(&r, 0, 200);
  assert_int_equal(atomic_load(&c->tail), 20);
  atomic_store(&c->head, 20);
  /* out of range: no-op, no crash */
  gpd_ring_release(&r, 2, 5);
  gpd_ring_release(NULL, 0, 5);
  /* consume_at validation: cursor below tail or beyond head */
  cur = 10;
  assert_int_equal(gpd_ring_consume_at(&r, 0, &cur, 100, count_fn, &n), GPD_EBADRING);
  assert_int_equal(cur, 10);
  cur = 21;
  assert_int_equal(gpd_ring_consume_at(&r, 0, &cur, 100, count_fn, &n), GPD_EBADRING);
  assert_int_equal(cur, 21);
  atomic_store(&c->head, 20 + 65); /* beyond capacity */
  cur = 20;
  assert_int_equal(gpd_ring_consume_at(&r, 0, &cur, 100, count_fn, &n), GPD_EBADRING);
  atomic_store(&c->head, 20);
  assert_int_equal(gpd_ring_consume_at(&r, 0, NULL, 100, count_fn, &n), -EINVAL);
  assert_int_equal(gpd_ring_consume_at(&r, 2, &cur, 100, count_fn, &n), -EINVAL);
  gpd_region_close(&r);
  /* a bad record: the prefix is delivered, the cursor stays on it */

  assert_int_equal(gpd_region_create(&r, 1, 64, 1, 1), 0);
  fill_valid(&r, 4);
  ((gpd_rec_hdr_t *)(gpd_region_ring_data(&r, 0) + 2 * GPD_SLOT_SIZE))->nslots = 0;
  cur = 0;
  n = 0;
  assert_int_equal(gpd_ring_consume_at(&r, 0, &cur, 100, count_fn, &n), GPD_EBADRECORD);
  assert_int_equal(n, 2);
  assert_int_equal(cur, 2);
  assert_int_equal(atomic_load(&r.ctl[0].tail), 0);
  gpd_region_close(&r);
}

/* A RETIRED ring goes back to FREE only when its tail (not the private
 * cursor) reached head. */
static void test_reclaim_after_release(void **state) {
  (void)state;
  gpd_region_t r;
  gpd_producer_t p;
  assert_int_equal(gpd_region_create(&r, 1, 64, 1, 1), 0);
  assert_int_equal(gpd_producer_claim(&r, &p, 7), 0);
  gpd_ring_ctl_t *c = &r.ctl[0];
  for (uint64_t i = 1; i <= 10; i++) {
    gpd_rec_invoke_t v = mk_invoke(i);
    assert_int_equal(gpd_producer_push(&p, &v, sizeof v), 0);
  }
  gpd_producer_retire(&p);
  uint64_t cur = 0;
  unsigned n = 0;
  assert_int_equal(gpd_ring_consume_at(&r, 0, &cur, 100, count_fn, &n), 10);
  assert_int_equal(gpd_ring_consume_at(&r, 0, &cur, 100, count_fn, &n), 0);
  assert_int_equal(atomic_load(&c->state), GPD_RING_RETIRED); /* drained, not released */
  gpd_ring_release(&r, 0, 9);
  assert_int_equal(atomic_load(&c->state), GPD_RING_RETIRED);
  gpd_ring_release(&r, 0, cur);
  assert_int_equal(atomic_load(&c->state), GPD_RING_FREE);
  /* a new producer continues from head; the cursor goes on from there */
  assert_int_equal(gpd_producer_claim(&r, &p, 8), 0);
  gpd_rec_invoke_t v = mk_invoke(11);
  assert_int_equal(gpd_producer_push(&p, &v, sizeof v), 0);
  seq_check_t sc = {.next = 11};
  assert_int_equal(gpd_ring_consume_at(&r, 0, &cur, 100, check_seq, &sc), 1);
  assert_int_equal(sc.bad, 0);
  assert_int_equal(cur, 11);
  /* an OWNED ring at tail == head stays OWNED */
  gpd_ring_release(&r, 0, cur);
  assert_int_equal(atomic_load(&c->state), GPD_RING_OWNED);
  gpd_region_close(&r);
}

/* Multi-slot records wrapping around the end while the consumer releases
 * lagging behind its cursor: content intact, nothing overwritten, every
 * record pushed is read once. */
static void test_lagged_release_wrap(void **state) {
  (void)state;
  gpd_region_t r;
  gpd_producer_t p;
  uint8_t buf[GPD_REC_MAX_BYTES];
  assert_int_equal(gpd_region_create(&r, 1, 64, 1, 1), 0);
  assert_int_equal(gpd_producer_claim(&r, &p, 7), 0);
  str_check_t c = {.next_id = 1};
  uint32_t id = 1;
  uint64_t cur = 0, prev = 0;
  unsigned pushed = 0, full = 0;
  for (int round = 0; round < 3000; round++) {
    uint32_t len = (uint32_t)((round * 53) % 250);
    size_t n = mk_string(buf, id, len);
    if (gpd_producer_push(&p, buf, n) == 0) {
      id++;
      pushed++;
    } else {
      full++;
    }
    if (round % 12 == 11) { /* ~33 slots a batch, two batches held */
      assert_true(gpd_ring_consume_at(&r, 0, &cur, 1000, check_string, &c) >= 0);
      gpd_ring_release(&r, 0, prev); /* the position of the batch before */
      assert_true(atomic_load(&r.ctl[0].tail) <= cur);
      prev = cur;
    }
  }
  assert_true(gpd_ring_consume_at(&r, 0, &cur, 1000, check_string, &c) >= 0);
  gpd_ring_release(&r, 0, cur);
  assert_int_equal(c.bad, 0);
  assert_int_equal(c.n, pushed);
  assert_true(full > 0); /* the lag made the ring full at times */
  assert_int_equal(atomic_load(&r.ctl[0].drops), full);
  assert_int_equal(gpd_ring_pending(&r, 0), 0);
  gpd_region_close(&r);
}

/* ----------------------------------------------------- cross-process */

static void test_cross_process(void **state) {
  (void)state;
  gpd_region_t r;
  const uint64_t n = 1000000;
  assert_int_equal(gpd_region_create(&r, 4, 4096, 1, 1), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    gpd_region_t cr;
    gpd_producer_t p;
    int fd = dup(r.fd);
    if (gpd_region_map(&cr, fd) != 0)
      _exit(2);
    if (gpd_producer_claim(&cr, &p, (uint32_t)getpid()) < 0)
      _exit(3);
    for (uint64_t s = 1; s <= n; s++) {
      gpd_rec_invoke_t v = mk_invoke(s);
      while (gpd_producer_push(&p, &v, sizeof v) == -ENOSPC)
        sched_yield(); /* the test wants every record; the shim would drop */
    }
    gpd_producer_retire(&p);
    _exit(0);
  }
  conc_t c = {0};
  c.n = n;
  c.seen = calloc(n + 1, 1);
  assert_non_null(c.seen);
  int status = 0, exited = 0;
  for (;;) {
    int any = 0;
    for (uint32_t i = 0; i < r.nrings; i++) {
      int got = gpd_ring_consume(&r, i, 4096, conc_fn, &c);
      assert_true(got >= 0);
      any += got;
    }
    if (exited && any == 0)
      break;
    if (!exited && waitpid(pid, &status, WNOHANG) == pid)
      exited = 1;
    if (!any)
      sched_yield();
  }
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(c.received, n);
  assert_int_equal(c.out_of_order, 0);
  uint64_t drops = 0;
  for (uint32_t i = 0; i < r.nrings; i++)
    drops += atomic_load(&r.ctl[i].drops);
  print_message("cross-process: %llu received, %llu full-ring retries\n", (unsigned long long)c.received,
                (unsigned long long)drops);
  for (uint32_t i = 0; i < r.nrings; i++)
    assert_int_equal(atomic_load(&r.ctl[i].state), GPD_RING_FREE);
  free(c.seen);
  gpd_region_close(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#ifndef RING_TEST_ONLY_CONCURRENT
    cmocka_unit_test(test_wrap_multislot),
    cmocka_unit_test(test_full_drops),
    cmocka_unit_test(test_corrupt_indices),
    cmocka_unit_test(test_corrupt_records),
    cmocka_unit_test(test_garbage),
    cmocka_unit_test(test_wrapped_garbage),
    cmocka_unit_test(test_cross_process),
    cmocka_unit_test(test_consume_at_reserves),
    cmocka_unit_test(test_release_bounds),
    cmocka_unit_test(test_reclaim_after_release),
    cmocka_unit_test(test_lagged_release_wrap),
#endif
    cmocka_unit_test(test_concurrent),
    cmocka_unit_test(test_concurrent_lagged),
    cmocka_unit_test(test_owner_handover),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
