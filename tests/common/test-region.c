/* test-region.c - region creation, mapping and header validation, ring
 * claim / retire / reclaim. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpuprof/error.h"
#include "gpuprof/region.h"

static void test_create_geometry(void **state) {
  (void)state;
  gpd_region_t r;
  assert_int_equal(gpd_region_create(&r, 0, 64, 1, 1), -EINVAL);
  assert_int_equal(gpd_region_create(&r, 1, 100, 1, 1), -EINVAL);
  assert_int_equal(gpd_region_create(&r, 1, 32, 1, 1), -EINVAL);
  assert_int_equal(gpd_region_create(&r, 1, 1u << 25, 1, 1), -EINVAL);
  assert_int_equal(gpd_region_create(&r, 3, 256, 42, 77), 0);
  assert_true(r.fd >= 0);
  assert_int_equal(r.hdr->magic, GPD_REGION_MAGIC);
  assert_int_equal(r.hdr->nrings, 3);
  assert_int_equal(r.hdr->ring_slots, 256);
  assert_int_equal(r.hdr->pid, 42);
  assert_int_equal(r.hdr->profile_id, 77);
  assert_int_equal(r.hdr->size, r.size);
  assert_int_equal(r.hdr->data_off % 4096, 0);
  assert_int_equal(r.hdr->version, GPD_REGION_VERSION);
  assert_int_equal(r.hdr->slot_size, GPD_SLOT_SIZE);
  assert_int_equal(r.size, r.hdr->data_off + 3 * 256 * GPD_SLOT_SIZE);
  assert_true((uint8_t *)r.data + 3 * 256 * GPD_SLOT_SIZE <= (uint8_t *)r.base + r.size);
  /* sealed: cannot shrink or grow */
  int seals = fcntl(r.fd, F_GET_SEALS);
  assert_true(seals & F_SEAL_SHRINK);
  assert_true(seals & F_SEAL_GROW);
  assert_true(seals & F_SEAL_SEAL);
  assert_int_equal(ftruncate(r.fd, 4096), -1);
  gpd_region_close(&r);
  gpd_region_close(&r); /* idempotent */
  gpd_region_t z;
  memset(&z, 0, sizeof z);
  gpd_region_close(&z); /* zeroed struct */
}

static void test_map_roundtrip(void **state) {
  (void)state;
  gpd_region_t r, m;
  assert_int_equal(gpd_region_create(&r, 2, 128, 5, 6), 0);
  assert_int_equal(gpd_region_map(&m, dup(r.fd)), 0);
  assert_int_equal(m.nrings, 2);
  assert_int_equal(m.ring_slots, 128);
  assert_int_equal(m.size, r.size);
  /* shared: a counter bumped on one side is seen on the other */
  atomic_store(&r.hdr->next_corr, 99);
  assert_int_equal(atomic_load(&m.hdr->next_corr), 99);
  gpd_region_close(&m);
  gpd_region_close(&r);
}

/* Map a copy of the header with one field changed. */
static int map_with(gpd_region_t *r, size_t off, const void *val, size_t n) {
  gpd_region_t m;
  uint8_t save[16];
  memcpy(save, (uint8_t *)r->base + off, n);
  memcpy((uint8_t *)r->base + off, val, n);
  int rc = gpd_region_map(&m, dup(r->fd));
  memcpy((uint8_t *)r->base + off, save, n);
  if (rc == 0)
    gpd_region_close(&m);
  return rc;
}

static void test_map_rejects(void **state) {
  (void)state;
  gpd_region_t r;
  assert_int_equal(gpd_region_create(&r, 2, 128, 5, 6), 0);
  uint64_t v64;
  uint32_t v32;
  v64 = 0x1234;
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, magic), &v64, 8), GPD_EBADREGION);
  /* another release's region: version 1 (64-byte slots, no slot_size),
   * a later version, or another slot size */
  v32 = GPD_REGION_VERSION - 1;
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, version), &v32, 4), GPD_EBADVERSION);
  v32 = GPD_REGION_VERSION + 1;
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, version), &v32, 4), GPD_EBADVERSION);
  v32 = 64;
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, slot_size), &v32, 4), GPD_EBADVERSION);
  v32 = 0;
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, slot_size), &v32, 4), GPD_EBADVERSION);
  v32 = 8192;
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, hdr_size), &v32, 4), GPD_EBADREGION);
  v64 = r.size + 64;
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, size), &v64, 8), GPD_EBADREGION);
  v32 = 3; /* more rings than the file holds */
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, nrings), &v32, 4), GPD_EBADREGION);
  v32 = 0xffffffffu;
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, nrings), &v32, 4), GPD_EBADREGION);
  v32 = 0;
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, nrings), &v32, 4), GPD_EBADREGION);
  v32 = 256; /* ring bigger than the data area */
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, ring_slots), &v32, 4), GPD_EBADREGION);
  v32 = 96; /* not a power of two */
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, ring_slots), &v32, 4), GPD_EBADREGION);
  v64 = UINT64_MAX - 10;
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, data_off), &v64, 8), GPD_EBADREGION);
  v64 = 64; /* data overlapping the header */
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, data_off), &v64, 8), GPD_EBADREGION);
  v64 = UINT64_MAX - 63;
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, ctl_off), &v64, 8), GPD_EBADREGION);
  v64 = 100; /* misaligned and inside the header */
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, ctl_off), &v64, 8), GPD_EBADREGION);
  v64 = 1; /* a smaller, still valid ring: accepted */
  v32 = 64;
  assert_int_equal(map_with(&r, offsetof(gpd_region_hdr_t, ring_slots), &v32, 4), 0);
  (void)v64;

  /* an unsealed file (not ours) is refused: truncation would SIGBUS us */
  int fd = memfd_create("x", MFD_CLOEXEC);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, (off_t)r.size), 0);
  assert_int_equal(pwrite(fd, r.base, 4096, 0), 4096);
  assert_int_equal(gpd_region_map(&(gpd_region_t){0}, fd), GPD_EBADREGION);
  close(fd);
  /* too small */
  fd = memfd_create("y", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  assert_int_equal(ftruncate(fd, 100), 0);
  assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  assert_int_equal(gpd_region_map(&(gpd_region_t){0}, fd), GPD_EBADREGION);
  close(fd);
  assert_int_equal(gpd_region_map(&(gpd_region_t){0}, -1), -EBADF);
  gpd_region_close(&r);
}

static void nop_fn(void *arg, const void *rec, size_t nbytes) {
  (void)rec;
  (void)nbytes;
  (*(int *)arg)++;
}

static void test_claim_retire_reclaim(void **state) {
  (void)state;
  gpd_region_t r;
  gpd_producer_t p[3];
  assert_int_equal(gpd_region_create(&r, 2, 64, 1, 1), 0);
  assert_int_equal(gpd_producer_claim(&r, &p[0], 10), 0);
  assert_int_equal(gpd_producer_claim(&r, &p[1], 11), 1);
  assert_int_equal(gpd_producer_claim(&r, &p[2], 12), -EBUSY);
  assert_int_equal(r.ctl[1].tid, 11);
  gpd_rec_node_t nd;
  memset(&nd, 0, sizeof nd);
  nd.h.type = GPD_REC_NODE;
  nd.h.version = GPD_REC_VERSION;
  nd.id = 1;
  assert_int_equal(gpd_producer_push(&p[0], &nd, sizeof nd), 0);
  gpd_producer_retire(&p[0]);
  assert_int_equal(atomic_load(&r.ctl[0].state), GPD_RING_RETIRED);
  assert_int_equal(gpd_producer_claim(&r, &p[2], 12), -EBUSY); /* not drained yet */
  int n = 0;
  assert_int_equal(gpd_ring_consume(&r, 0, 100, nop_fn, &n), 1);
  assert_int_equal(atomic_load(&r.ctl[0].state), GPD_RING_FREE);
  assert_int_equal(gpd_producer_claim(&r, &p[2], 12), 0);
  /* the new owner continues from the old head */
  assert_int_equal(p[2].head, 1);
  assert_int_equal(gpd_producer_push(&p[2], &nd, sizeof nd), 0);
  assert_int_equal(gpd_ring_consume(&r, 0, 100, nop_fn, &n), 1);
  assert_int_equal(n, 2);
  /* an OWNED ring that is empty stays OWNED */
  assert_int_equal(atomic_load(&r.ctl[0].state), GPD_RING_OWNED);
  gpd_region_close(&r);
}

/* reserve / slot / commit: a record written in place across the end */
/* A NODE (1 slot) / an OpenCL kernel ACTIVITY (3 slots) record. */
static gpd_rec_node_t rec_node(uint32_t id) {
  gpd_rec_node_t nd;
  memset(&nd, 0, sizeof nd);
  nd.h.type = GPD_REC_NODE;
  nd.h.version = GPD_REC_VERSION;
  nd.h.nslots = GPD_REC_NSLOTS(nd);
  nd.id = id;
  return nd;
}

static gpd_rec_activity_t rec_act(uint64_t corr) {
  gpd_rec_activity_t a;
  memset(&a, 0, sizeof a);
  a.h.type = GPD_REC_ACTIVITY;
  a.h.version = GPD_REC_VERSION;
  a.h.nslots = GPD_REC_NSLOTS(a);
  a.api = GPD_API_OPENCL;
  a.op = GPD_OP_KERNEL;
  a.corr = corr;
  return a;
}

static void test_reserve_commit(void **state) {
  (void)state;
  gpd_region_t r;
  gpd_producer_t p;
  uint64_t seq;
  assert_int_equal(gpd_region_create(&r, 1, 64, 1, 1), 0);
  assert_int_equal(gpd_producer_claim(&r, &p, 1), 0);
  assert_int_equal(gpd_producer_reserve(&p, 0, &seq), -E2BIG);
  assert_int_equal(gpd_producer_reserve(&p, 256, &seq), -E2BIG);
  assert_int_equal(gpd_producer_reserve(&p, 65, &seq), -ENOSPC);
  gpd_rec_node_t nd = rec_node(3);
  for (int i = 0; i < 63; i++)
    assert_int_equal(gpd_producer_push(&p, &nd, sizeof nd), 0);
  int n = 0;
  assert_int_equal(gpd_ring_consume(&r, 0, 100, nop_fn, &n), 63);
  gpd_rec_activity_t a = rec_act(9);
  const unsigned ns = GPD_REC_NSLOTS(a);
  assert_int_equal(gpd_producer_reserve(&p, ns, &seq), 0);
  assert_int_equal(seq, 63);
  for (unsigned k = 0; k < ns; k++)
    memcpy(gpd_producer_slot(&p, seq + k), (uint8_t *)&a + k * GPD_SLOT_SIZE, GPD_SLOT_SIZE);
  assert_ptr_equal(gpd_producer_slot(&p, seq + 1), gpd_region_ring_data(&r, 0));
  gpd_producer_commit(&p, ns);
  assert_int_equal(gpd_ring_consume(&r, 0, 100, nop_fn, &n), 1);
  gpd_region_close(&r);
}

/* gpd_ring_consume_pf: the prefetch hook sees every record's first slot,
 * in order and ahead of fn, never a record past max or head, and the
 * records delivered are gpd_ring_consume_at's. */
typedef struct {
  uint64_t pf[64], fn[64];
  unsigned npf, nfn, lead; /* lead: most pf calls ahead of fn */
} pfseen_t;

static void pf_hook(void *arg, const void *slot) {
  pfseen_t *s = arg;
  const gpd_rec_node_t *n = slot; /* NODE and ACTIVITY share the header */
  assert_true(s->npf < 64);
  s->pf[s->npf++] = n->h.type == GPD_REC_NODE ? n->id : ((const gpd_rec_activity_t *)slot)->corr;
  if (s->npf - s->nfn > s->lead)
    s->lead = s->npf - s->nfn;
}

static void pf_fn(void *arg, const void *rec, size_t nbytes) {
  pfseen_t *s = arg;
  const gpd_rec_node_t *n = rec;
  (void)nbytes;
  assert_true(s->nfn < 64);
  s->fn[s->nfn++] = n->h.type == GPD_REC_NODE ? n->id : ((const gpd_rec_activity_t *)rec)->corr;
}

static void test_consume_prefetch(void **state) {
  (void)state;
  gpd_region_t r;
  gpd_producer_t p;
  assert_int_equal(gpd_region_create(&r, 1, 128, 1, 1), 0);
  assert_int_equal(gpd_producer_claim(&r, &p, 4711), 0);
  for (uint64_t k = 1; k <= 40; k++) { /* NODEs (1 slot) and ACTIVITYs (3) alternate */
    if (k % 2) {
      gpd_rec_node_t nd = rec_node((uint32_t)k);
      assert_int_equal(gpd_producer_push(&p, &nd, sizeof nd), 0);
    } else {
      gpd_rec_activity_t a = rec_act(k);
      assert_int_equal(gpd_producer_push(&p, &a, sizeof a), 0);
    }
  }
  pfseen_t s;
  memset(&s, 0, sizeof s);
  uint64_t cur = 0;
  uint32_t owner = 0;
  assert_int_equal(gpd_ring_consume_pf(&r, 0, &cur, 25, pf_fn, pf_hook, &s, &owner), 25);
  assert_int_equal(owner, 4711); /* the ring's producer (its claim) */
  assert_int_equal(s.nfn, 25);
  assert_int_equal(s.npf, 25); /* not past max */
  assert_true(s.lead > 1);     /* ahead of fn */
  for (unsigned i = 0; i < 25; i++) {
    assert_int_equal(s.fn[i], i + 1);
    assert_int_equal(s.pf[i], i + 1);
  }
  memset(&s, 0, sizeof s);
  assert_int_equal(gpd_ring_consume_pf(&r, 0, &cur, 100, pf_fn, pf_hook, &s, NULL), 15);
  assert_int_equal(s.npf, 15); /* not past head */
  for (unsigned i = 0; i < 15; i++)
    assert_int_equal(s.pf[i], s.fn[i]);
  assert_int_equal(s.fn[14], 40);
  assert_int_equal(cur, 20 * 1 + 20 * 3);
  /* no hook: gpd_ring_consume_at */
  assert_int_equal(gpd_ring_consume_pf(&r, 0, &cur, 100, pf_fn, NULL, &s, NULL), 0);
  gpd_region_close(&r);
}

/* Pages of ring 0 resident in this mapping (mincore), among the first n. */
static unsigned resident_pages(gpd_region_t *r, unsigned n) {
  unsigned char vec[1024];
  assert_true(n <= sizeof vec);
  assert_int_equal(mincore(gpd_region_ring_data(r, 0), (size_t)n * 4096, vec), 0);
  unsigned k = 0;
  for (unsigned i = 0; i < n; i++)
    k += vec[i] & 1;
  return k;
}

/* The first lap populates the pages ahead in batches of 1, 2, 4 .. 64
 * pages (SPP slots per page), never beyond the ring and never again after
 * the first lap; a ring claimed after it wrapped is not populated. */
#define SPP (4096u / GPD_SLOT_SIZE)
static void test_first_lap_populate(void **state) {
  (void)state;
  gpd_region_t r;
  gpd_producer_t p;
  const uint32_t slots = 1024u * SPP; /* 1024 pages */
  assert_int_equal(gpd_region_create(&r, 1, slots, 1, 1), 0);
  assert_int_equal(resident_pages(&r, 1024), 0);
  assert_int_equal(gpd_producer_claim(&r, &p, 1), 0);
  gpd_rec_hdr_t h = {.type = GPD_REC_STATUS, .version = GPD_REC_VERSION};
  uint8_t rec[GPD_SLOT_SIZE] = {0}; /* one slot each */
  memcpy(rec, &h, sizeof h);
  assert_int_equal(gpd_producer_push(&p, rec, sizeof rec), 0);
#ifdef MADV_POPULATE_WRITE
  if (p.populated == UINT64_MAX) { /* kernel without MADV_POPULATE_WRITE */
    gpd_region_close(&r);
    skip();
  }
  assert_int_equal(p.populated, SPP);   /* 1 page */
  assert_int_equal(resident_pages(&r, 1024), 1);
  for (unsigned i = 0; i < SPP; i++)     /* into page 2: 2 more pages */
    assert_int_equal(gpd_producer_push(&p, rec, sizeof rec), 0);
  assert_int_equal(p.populated, 3 * SPP);
  assert_int_equal(resident_pages(&r, 1024), 3);
  /* batches of 4, 8, 16, 32, then 64 pages to the end of the ring (the
   * last one clipped there) */
  for (uint32_t i = SPP + 1; i < slots; i++) {
    assert_int_equal(gpd_producer_push(&p, rec, sizeof rec), 0);
    atomic_store(&r.ctl[0].tail, i);
  }
  assert_int_equal(p.populated, UINT64_MAX); /* first lap done */
  assert_int_equal(p.pop_pages, 64);
  assert_int_equal(resident_pages(&r, 1024), 1024);
#endif
  gpd_producer_retire(&p);
  /* drain and reclaim: the next owner starts at head = ring_slots */
  atomic_store(&r.ctl[0].tail, atomic_load(&r.ctl[0].head));
  gpd_ring_release(&r, 0, atomic_load(&r.ctl[0].head));
  assert_int_equal(gpd_producer_claim(&r, &p, 2), 0);
  assert_int_equal(p.populated, UINT64_MAX);
  gpd_region_close(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_create_geometry),
    cmocka_unit_test(test_map_roundtrip),
    cmocka_unit_test(test_map_rejects),
    cmocka_unit_test(test_claim_retire_reclaim),
    cmocka_unit_test(test_reserve_commit),
    cmocka_unit_test(test_consume_prefetch),
    cmocka_unit_test(test_first_lap_populate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
