/* daemon-client-lib.h - a fake shim for tests and benchmarks that drive a
 * real gpuprofd: connect, register (Hello / hand-back Hello), map the
 * region the daemon sends and produce records into two of its rings
 * (ring 0: MODULE / NODE / INVOKE / STATUS, ring 1: STRING / ACTIVITY, as
 * test-daemon-client always did).
 *
 * Test helper, not the shim: every failure prints a line on stderr and
 * exits the process with status 2, and a full ring is waited on (the real
 * shim never blocks).  Single-threaded; one gpd_dclient_t per process.
 */
#ifndef GPD_TESTS_DAEMON_CLIENT_LIB_H
#define GPD_TESTS_DAEMON_CLIENT_LIB_H

#include <stddef.h>
#include <stdint.h>

#include "gpuprof/record.h"
#include "gpuprof/region.h"

/** One registered fake process. */
typedef struct gpd_dclient_s {
  int sock;              /* control connection (EOF = the process ended) */
  gpd_region_t region;   /* mapped region from HelloReply */
  gpd_producer_t ring[2]; /* claimed rings 1 and 2 */
  uint64_t corr_n;       /* last correlation sequence number used */
  uint64_t profile_id;   /* from the last HelloReply */
} gpd_dclient_t;

/** Connected SOCK_STREAM socket to the daemon at path (exits on failure). */
int gpd_dclient_connect(const char *path);

/** Send Hello (handback: with c->region.fd attached and profile id `id`)
 *  on c->sock and wait for HelloReply (gpd_dclient_hello_ms).  Returns the profile id and
 *  the region fd in *fd_out (-1 if none).  Exits if refused. */
uint64_t gpd_dclient_hello(gpd_dclient_t *c, int handback, uint64_t id, int *fd_out);

/** Connect + Hello + map the region + claim rings 1 and 2. */
/** How long registration waits to send the Hello and for its reply (ms,
 *  default 10000); bench-top raises it for 64 clients on a loaded VM. */
extern int gpd_dclient_hello_ms;
void gpd_dclient_register(gpd_dclient_t *c, const char *sock_path);

/** Map region fd and claim rings 1 and 2 (exits on failure). */
void gpd_dclient_setup(gpd_dclient_t *c, int fd);

/** Push one record (len bytes) on producer p, waiting while the ring is
 *  full (200 us sleeps). */
void gpd_dclient_push(gpd_producer_t *p, const void *rec, size_t len);

/** MODULE record `id` for path (no build id) on ring `ring`. */
void gpd_dclient_module(gpd_dclient_t *c, unsigned ring, uint32_t id, const char *path);
/** The same with a build-id of bid_len bytes (at most 20; exits 2 beyond). */
void gpd_dclient_module_bid(gpd_dclient_t *c, unsigned ring, uint32_t id, const char *path,
                            const uint8_t *bid, unsigned bid_len);

/** STRING record `id` of kind (GPD_STR_*) on ring `ring`. */
void gpd_dclient_string(gpd_dclient_t *c, unsigned ring, uint32_t id, uint32_t kind,
                        const char *text);

/** NODE record on ring 0: shim node `id` below `parent` (0 = root), call
 *  site `offset` bytes into module `module`. */
void gpd_dclient_node(gpd_dclient_t *c, uint32_t id, uint32_t parent, uint32_t module,
                      uint64_t offset);

/** Zero *n and fill it as gpd_dclient_node sends it. */
void gpd_dclient_node_init(gpd_rec_node_t *n, uint32_t id, uint32_t parent, uint32_t module,
                           uint64_t offset);

/** Zero *v and fill its header, api (OpenCL), op, node and corr. */
void gpd_dclient_invoke_init(gpd_rec_invoke_t *v, unsigned op, uint32_t node, uint64_t corr);

/** Zero *a and fill its header, api (OpenCL), op and corr. */
void gpd_dclient_activity_init(gpd_rec_activity_t *a, unsigned op, uint64_t corr);

/** Next OpenCL correlation id of this client. */
uint64_t gpd_dclient_corr(gpd_dclient_t *c);

#endif
