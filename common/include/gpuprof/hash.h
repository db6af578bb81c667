/* hash.h - calling-context identifiers.
 *
 * A context id is a 64-bit Merkle hash: id(child) = H(id(parent), module
 * key, offset), with id(root) = GPD_CTX_ROOT.  Equal call paths get equal
 * ids in every process and on every node with no coordination (seed 004,
 * "hash-based identifiers instead of MPI consensus").  H is XXH3-64 over
 * the little-endian bytes of parent id, the module key (build-id bytes if
 * the module has one, else its path) and the offset.  Synthetic nodes
 * (placeholders, kernels) use a module key of "<gpu kernel>" etc. or
 * "kernel:" + mangled name, offset 0.  The id is never 0.
 */
#ifndef GPUPROF_HASH_H
#define GPUPROF_HASH_H

#include <stddef.h>
#include <stdint.h>

#define GPD_CTX_ROOT 0x9e3779b97f4a7c15ull

/** Merkle id of a child context. key may be NULL when key_len is 0. */
uint64_t gpd_ctx_id(uint64_t parent, const void *key, size_t key_len, uint64_t offset);

/** XXH3-64 of a buffer (content hash of GPU binaries uses the 128-bit
 *  variant: gpd_hash128_hex). */
uint64_t gpd_hash64(const void *data, size_t n, uint64_t seed);

/** Hex of XXH3-128 of data into out (33 bytes incl. NUL). */
void gpd_hash128_hex(const void *data, size_t n, char out[33]);

#endif
