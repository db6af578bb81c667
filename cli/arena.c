/* arena.c - the reply arena (arena.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "arena.h"

#define ARENA_MIN (64u << 10)
#define ARENA_MAX_CHUNK (64u << 20)
#define ARENA_ALIGN 16u

typedef struct chunk_s {
  struct chunk_s *next;
  size_t cap;  /* bytes of the mapping, header included */
  size_t used; /* bytes handed out, header included */
} chunk_t;

struct gpd_arena_s {
  chunk_t *cur; /* newest chunk; older ones follow */
  size_t next;  /* size of the next chunk */
  size_t total;
};

#define HDR ((sizeof(chunk_t) + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1))

static chunk_t *chunk_new(size_t cap) {
  size_t page = 4096;
  cap = (cap + page - 1) & ~(page - 1);
  /* MAP_POPULATE: the kernel fills the pages in this call instead of one
   * fault per 4 KiB as the unpack first touches them */
  void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                 -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  chunk_t *c = p;
  c->next = NULL;
  c->cap = cap;
  c->used = HDR;
  return c;
}

gpd_arena_t *gpd_arena_new(size_t hint) {
  gpd_arena_t *a = calloc(1, sizeof *a);
  if (a == NULL)
    return NULL;
  a->next = hint < ARENA_MIN ? ARENA_MIN : hint > ARENA_MAX_CHUNK ? ARENA_MAX_CHUNK : hint;
  return a;
}

void *gpd_arena_alloc(gpd_arena_t *a, size_t n) {
  n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (n == 0)
    n = ARENA_ALIGN;
  chunk_t *c = a->cur;
  if (c == NULL || c->cap - c->used < n) {
    size_t cap = a->next;
    if (cap < n + HDR)
      cap = n + HDR;
    if ((c = chunk_new(cap)) == NULL)
      return NULL;
    c->next = a->cur;
    a->cur = c;
    a->total += c->cap;
    if (a->next < ARENA_MAX_CHUNK)
      a->next *= 2;
  }
  void *p = (uint8_t *)c + c->used;
  c->used += n;
  return p;
}

void gpd_arena_free(gpd_arena_t *a) {
  if (a == NULL)
    return;
  for (chunk_t *c = a->cur, *next; c; c = next) {
    next = c->next;
    munmap(c, c->cap);
  }
  free(a);
}

size_t gpd_arena_size(const gpd_arena_t *a) { return a ? a->total : 0; }

static void *pb_alloc(void *data, size_t n) { return gpd_arena_alloc(data, n); }
static void pb_free(void *data, void *p) {
  (void)data;
  (void)p; /* freed with the arena */
}

Gpuprof__Msg *gpd_arena_unpack_msg(size_t len, const uint8_t *data, gpd_arena_t **arena) {
  /* protobuf-c's structs take somewhat over 4x the wire bytes of a tree
   * reply (docs/PERFORMANCE.md, "Tree client"); the first chunk holds 5x,
   * so one chunk (one populate) does */
  gpd_arena_t *a = gpd_arena_new(len * 5 + ARENA_MIN);
  *arena = NULL;
  if (a == NULL)
    return NULL;
  ProtobufCAllocator al = {.alloc = pb_alloc, .free = pb_free, .allocator_data = a};
  Gpuprof__Msg *m = gpuprof__msg__unpack(&al, len, data);
  if (m == NULL) {
    gpd_arena_free(a);
    return NULL;
  }
  *arena = a;
  return m;
}
