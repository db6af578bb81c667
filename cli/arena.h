/* arena.h - a region that a reply is unpacked into and freed with at once.
 *
 * protobuf-c's unpack allocates every message, string and array of a reply
 * on its own: a `gpuprof tree` of a busy node is hundreds of thousands of
 * mallocs and as many frees, most of the client's time
 * (docs/PERFORMANCE.md, "Tree client").  Through a
 * ProtobufCAllocator backed by an arena they become pointer bumps in a few
 * large chunks, populated by the kernel in one call each (MAP_POPULATE:
 * no page fault per 4 KiB), and the reply is freed with gpd_arena_free
 * instead of gpuprof__msg__free_unpacked.  Single-threaded (the CLI).
 */
#ifndef GPD_CLI_ARENA_H
#define GPD_CLI_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "gpuprof.pb-c.h"

typedef struct gpd_arena_s gpd_arena_t;

/** A new arena whose first chunk holds about `hint` bytes (0: 64 KiB);
 *  later chunks double, up to 64 MiB each.  NULL when out of memory. */
gpd_arena_t *gpd_arena_new(size_t hint);
/** n bytes, 16-byte aligned, valid until gpd_arena_free; NULL when out of
 *  memory.  No per-object free. */
void *gpd_arena_alloc(gpd_arena_t *a, size_t n);
/** Everything allocated from a, and a itself (NULL: nothing). */
void gpd_arena_free(gpd_arena_t *a);
/** Bytes the arena holds (its chunks), for measurements. */
size_t gpd_arena_size(const gpd_arena_t *a);

/** Unpack a Msg of len bytes into a fresh arena sized from len; *arena is
 *  set to it (free the reply with gpd_arena_free(*arena), never
 *  gpuprof__msg__free_unpacked).  NULL (and *arena NULL) when the bytes do
 *  not decode or memory ran out. */
Gpuprof__Msg *gpd_arena_unpack_msg(size_t len, const uint8_t *data, gpd_arena_t **arena);

#endif
