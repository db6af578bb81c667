/* query-arena.h - the reply arena of a query (query-arena.c): where a
 * reply's protobuf-c structs, arrays and strings are carved from, and the
 * FRAME nodes it leaves to symbolize.  Used by every query-*.c file and
 * policy.c; below all of them (it calls none).  A thread works on one
 * arena at a time (gpd__query_arena_use): the main thread while it builds a
 * reply under d->lock, a pool thread while it symbolizes and encodes it. */
#ifndef GPD_DAEMON_QUERY_ARENA_H
#define GPD_DAEMON_QUERY_ARENA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpuprof.pb-c.h"

/** FRAME nodes of a reply, symbolized after the unlock. */
typedef struct gpd__qpending_s {
  Gpuprof__Node *node; /* module and offset already set (arena copies) */
  uid_t uid;
  gid_t gid;
} gpd__qpending_t;

/** One query's arena: its chunks and its pending FRAME nodes (malloc'd).
 *  Zeroed = empty. */
typedef struct gpd__qarena_s {
  struct gpd__qchunk_s *chunks;
  gpd__qpending_t *pend;
  uint32_t npend, cappend;
} gpd__qarena_t;

/** The calling thread allocates from a (NULL: from none) until the next
 *  call. */
void gpd__query_arena_use(gpd__qarena_t *a);
/** Free a's chunks (kept for the next query up to a bound) and its pending
 *  list; a is empty afterwards.  Any thread. */
void gpd__query_arena_free(gpd__qarena_t *a);

/** n bytes (16-aligned) / n*size zeroed bytes / a copy of s (NULL -> "")
 *  from the arena the calling thread uses; freed with it.  NULL on ENOMEM. */
void *gpd__query_alloc(size_t n);
void *gpd__query_calloc(size_t n, size_t size);
char *gpd__query_strdup(const char *s);
/** An empty Msg in the arena (NULL on ENOMEM). */
Gpuprof__Msg *gpd__query_msg_new(void);
/** An Error Msg {code, text} in the arena (NULL on ENOMEM). */
Gpuprof__Msg *gpd__query_error_msg(int code, const char *text);
/** Room for one more element of a growing malloc'd array whose count
 *  reached *cap: the capacity doubles (from `first`).  0 or -ENOMEM with the
 *  array as it was. */
int gpd__query_grow(void **arr, uint32_t *cap, size_t elem, uint32_t first);
/** Put FRAME node o (of a process of uid/gid) on the pending list of the
 *  arena the calling thread uses (out of memory: it stays module+offset). */
void gpd__query_pending_add(Gpuprof__Node *o, uid_t uid, gid_t gid);
/** A buffer of n bytes for an encoded reply frame (malloc'd, or the one
 *  large frame kept between replies); give it back with
 *  gpd_query_frame_free.  NULL on ENOMEM.  Any thread. */
uint8_t *gpd__query_frame_take(size_t n);

#endif
