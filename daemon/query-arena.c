/* query-arena.c - the reply arena (query-arena.h).
 *
 * A reply (every protobuf-c struct, array and string of it) is carved from
 * 64 KiB chunks owned by its query: a 30 K-node TreeReply is ~500 K small
 * objects, and malloc + protobuf_c_message_free_unpacked of them cost about
 * as much as building the tree.  gpd_query_run frees the chunks once the
 * reply is encoded (gpd_query_free if it never was).
 *
 * q_arena is the arena the calling thread works on: gpd_query_start (main
 * thread) and gpd_query_run (a pool thread) point it at the query's arena
 * for their duration (gpd__query_arena_use), so the helpers need no query
 * argument. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "query-arena.h"

typedef struct gpd__qchunk_s {
  struct gpd__qchunk_s *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} q_chunk_t;

static _Thread_local gpd__qarena_t *q_arena; /* the arena this thread works on */

/* Freed 64 KiB chunks are kept for the next query (up to Q_POOL_MAX
 * bytes): a 30 K-node tree fills ~20 MiB of chunks, and fresh memory from
 * malloc costs a page fault per 4 KiB (glibc trims the heap top after each
 * query) -- measured as the largest part of a `tree` reply's build time.
 * Any thread (the pool threads free, main allocates): q_pool_lock. */
#define Q_CHUNK (64u << 10)
#define Q_POOL_MAX (32u << 20)
static pthread_mutex_t q_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static q_chunk_t *q_pool;
static size_t q_pool_bytes;

static void chunks_free(q_chunk_t *c) {
  while (c) {
    q_chunk_t *n = c->next;
    int kept = 0;
    if (c->cap == Q_CHUNK) {
      pthread_mutex_lock(&q_pool_lock);
      if (q_pool_bytes + Q_CHUNK <= Q_POOL_MAX) {
        c->next = q_pool;
        q_pool = c;
        q_pool_bytes += Q_CHUNK;
        kept = 1;
      }
      pthread_mutex_unlock(&q_pool_lock);
    }
    if (!kept)
      free(c);
    c = n;
  }
}

static q_chunk_t *q_chunk_new(size_t cap) {
  q_chunk_t *c = NULL;
  if (cap == Q_CHUNK) {
    pthread_mutex_lock(&q_pool_lock);
    if ((c = q_pool) != NULL) {
      q_pool = c->next;
      q_pool_bytes -= Q_CHUNK;
    }
    pthread_mutex_unlock(&q_pool_lock);
  }
  if (c == NULL && (c = malloc(sizeof *c + cap)) == NULL)
    return NULL;
  c->cap = cap;
  c->used = 0;
  return c;
}

/* One large reply frame kept between replies (q_pool_lock): q_frame, its
 * capacity, lent while a client's send holds it.  Frames of at least
 * Q_FRAME_MIN bytes and at most Q_FRAME_KEEP are kept. */
#define Q_FRAME_MIN (256u << 10)
#define Q_FRAME_KEEP (32u << 20)
static uint8_t *q_frame;
static size_t q_frame_cap;
static int q_frame_lent;

uint8_t *gpd__query_frame_take(size_t n) {
  uint8_t *old = NULL, *b = NULL;
  if (n >= Q_FRAME_MIN && n <= Q_FRAME_KEEP) {
    pthread_mutex_lock(&q_pool_lock);
    if (q_frame && !q_frame_lent && q_frame_cap >= n) {
      q_frame_lent = 1;
      b = q_frame;
    } else if (!q_frame_lent) { /* idle and too small (or none): replace */
      old = q_frame;
      q_frame = NULL;
      q_frame_cap = 0;
    }
    pthread_mutex_unlock(&q_pool_lock);
    free(old);
    if (b)
      return b;
  }
  if ((b = malloc(n)) == NULL || n < Q_FRAME_MIN || n > Q_FRAME_KEEP)
    return b;
  pthread_mutex_lock(&q_pool_lock);
  if (q_frame == NULL) {
    q_frame = b;
    q_frame_cap = n;
    q_frame_lent = 1;
  }
  pthread_mutex_unlock(&q_pool_lock);
  return b;
}

void gpd_query_frame_free(uint8_t *buf) {
  if (buf == NULL)
    return;
  pthread_mutex_lock(&q_pool_lock);
  int kept = buf == q_frame;
  if (kept)
    q_frame_lent = 0;
  pthread_mutex_unlock(&q_pool_lock);
  if (!kept)
    free(buf);
}

void *gpd__query_alloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  q_chunk_t *cur = q_arena->chunks;
  if (cur == NULL || cur->cap - cur->used < n) {
    q_chunk_t *c = q_chunk_new(n > Q_CHUNK ? n : Q_CHUNK);
    if (c == NULL)
      return NULL;
    if (cur && n > Q_CHUNK) { /* big: keep filling the current chunk */
      c->next = cur->next;
      cur->next = c;
    } else {
      c->next = cur;
      q_arena->chunks = c;
    }
    c->used = n;
    return c->data;
  }
  void *p = cur->data + cur->used;
  cur->used += n;
  return p;
}

void *gpd__query_calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size)
    return NULL;
  void *p = gpd__query_alloc(n * size);
  if (p)
    memset(p, 0, n * size);
  return p;
}

char *gpd__query_strdup(const char *s) {
  if (s == NULL)
    s = "";
  size_t n = strlen(s) + 1;
  char *d = gpd__query_alloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

/* Room for one more element of a growing array whose `n` reached `*cap`:
 * the capacity doubles (from `first`).  0, or -ENOMEM with the array as it
 * was.  The one growth rule of the Top index and its scratch lists. */
int gpd__query_grow(void **arr, uint32_t *cap, size_t elem, uint32_t first) {
  uint32_t nc = *cap ? *cap * 2 : first;
  void *na = realloc(*arr, (size_t)nc * elem);
  if (na == NULL)
    return -ENOMEM;
  *arr = na;
  *cap = nc;
  return 0;
}

void gpd__query_pending_add(Gpuprof__Node *o, uid_t uid, gid_t gid) {
  gpd__qarena_t *a = q_arena;
  if (a->npend == a->cappend &&
      gpd__query_grow((void **)&a->pend, &a->cappend, sizeof *a->pend, 256) < 0)
    return; /* left as module+offset */
  a->pend[a->npend++] = (gpd__qpending_t){o, uid, gid};
}

Gpuprof__Msg *gpd__query_msg_new(void) {
  Gpuprof__Msg *m = gpd__query_alloc(sizeof *m);
  if (m)
    gpuprof__msg__init(m);
  return m;
}

Gpuprof__Msg *gpd__query_error_msg(int code, const char *text) {
  Gpuprof__Msg *m = gpd__query_msg_new();
  Gpuprof__Error *e = gpd__query_alloc(sizeof *e);
  if (m == NULL || e == NULL)
    return NULL;
  gpuprof__error__init(e);
  e->code = code;
  e->message = gpd__query_strdup(text);
  m->body_case = GPUPROF__MSG__BODY_ERROR;
  m->error = e;
  return m;
}

void gpd__query_arena_use(gpd__qarena_t *a) { q_arena = a; }

void gpd__query_arena_free(gpd__qarena_t *a) {
  chunks_free(a->chunks);
  free(a->pend);
  memset(a, 0, sizeof *a);
}
