/* query.h - answers to CLI queries (ps, top, tree, ...).
 *
 * A query is answered in two steps so that the libuv loop never waits on
 * symbolization (docs/DAEMON.md, "Queries off the loop"):
 *   gpd_query_start  main thread: takes gpd_daemon_t.lock, builds the
 *                    reply from live memory (FRAME nodes "0x<offset>"),
 *                    drops the lock;
 *   gpd_query_run    any one thread, no lock: symbolizes the FRAME nodes
 *                    and encodes the reply frame (client.c runs it in
 *                    libuv's thread pool when gpd_query_slow says so). */
#ifndef GPD_DAEMON_QUERY_H
#define GPD_DAEMON_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "access.h"
#include "profile.h"

typedef struct gpd_daemon_s gpd_daemon_t;
typedef struct gpd_query_s gpd_query_t;

struct Gpuprof__Msg;
/** Build the reply to a query message into *q (free with gpd_query_free).
 *  Main thread; takes d->lock while it reads profiles.  Every string of the
 *  reply is a copy: nothing borrows profile memory afterwards.  0 or
 *  -ENOMEM. */
int gpd_query_start(gpd_daemon_t *d, const gpd_peer_t *peer, const struct Gpuprof__Msg *req,
                    gpd_query_t **q);
/** Does gpd_query_run have FRAME nodes to symbolize (may take seconds:
 *  run it off the loop)?  Without them it only encodes the reply. */
int gpd_query_slow(const gpd_query_t *q);
/** Symbolize the reply's FRAME nodes (gpd_symbols_resolve, never with
 *  d->lock held) and encode it as one frame (header + packed Msg).  Any
 *  thread, one at a time per query.  After gpd_query_cancel it stops
 *  between nodes and encodes nothing. */
void gpd_query_run(gpd_query_t *q);
/** Ask a running gpd_query_run to stop early (any thread). */
void gpd_query_cancel(gpd_query_t *q);
/** The frame gpd_query_run encoded: 0 with *buf (the caller's, header
 *  included; release it with gpd_query_frame_free) and *len;
 *  GPD_EFRAMETOOBIG when the reply is above GPD_REPLY_MAX; -ENOMEM;
 *  -ECANCELED after gpd_query_cancel. */
int gpd_query_take_frame(gpd_query_t *q, uint8_t **buf, size_t *len);
/** Release a frame buffer: one from gpd_query_take_frame, or any malloc'd
 *  one (freed).  The largest recent reply frame (up to 32 MiB) is kept for
 *  the next reply instead: a 4 MB tree reply written to fresh memory paid
 *  a page fault per 4 KiB.  Any thread. */
void gpd_query_frame_free(uint8_t *buf);
/** Free q (NULL is fine); its arena and anything not taken. */
void gpd_query_free(gpd_query_t *q);
/** Label of node i of profile p: a FRAME node's physical function (the
 *  outermost frame of its inline chain), NULL when it has none (print the
 *  offset); *module = its module path.  Symbolizes: may read large files,
 *  so never call it with d->lock held (copy the node first). */
const char *gpd_query_label(const gpd_profile_t *p, uint32_t i, const char **module);

#endif
