/* store-fixture.h - synthetic profile files for benchmarks (bench/ only;
 * fixture.c).  Not for the product: the daemon writes profiles through
 * store-write.h, `gpuprof merge` through merged-write.h.  These make a
 * node file of a given shape as fast as SQLite can (no journal, no
 * fsync, one transaction), so that a benchmark measures the reader, not
 * the making of its input; and insert trace rows the plainest way, the
 * baseline a writer is measured against.  Single thread; a fixture is
 * not shared.
 */
#ifndef GPUPROF_STORE_FIXTURE_H
#define GPUPROF_STORE_FIXTURE_H

#include <stdint.h>

typedef struct gpd_store_fixture_s gpd_store_fixture_t;

/** Create the file at path anew (an old one is removed): the store's
 *  schema at format version 2, meta rows (format, version, host
 *  'synthetic', clock), a metric_desc row per metric of metric.h, and an
 *  open transaction.  0 or GPD_ESTORE with a message on stderr. */
int gpd_store_fixture_create(const char *path, gpd_store_fixture_t **out);
/** A context row of user uid: id, its parent's id (0 for the root's
 *  children), kind (gpd_node_kind), module path, offset, label.  0 or
 *  GPD_ESTORE. */
int gpd_store_fixture_context(gpd_store_fixture_t *fx, int64_t uid, uint64_t id, uint64_t parent, int kind,
                              const char *module, int64_t offset, const char *label);
/** An exited process of uid/gid 1000 running /opt/app/bin/solver: profile
 *  row id, pid, hostname, job 4242, rank, local_rank; start 1 ns, end
 *  2 ns, one record; and its 'cuda' back end, enabled.  0 or GPD_ESTORE. */
int gpd_store_fixture_process(gpd_store_fixture_t *fx, int64_t id, int pid, const char *host, int rank,
                              int local_rank);
/** A metric row: profile id, context id, metric id, value.  Rows go
 *  fastest in primary-key order (profile, context, metric).  0 or
 *  GPD_ESTORE. */
int gpd_store_fixture_metric(gpd_store_fixture_t *fx, int64_t profile, uint64_t ctx, unsigned metric, double v);
/** Commit and close (fx is freed either way).  0 or GPD_ESTORE. */
int gpd_store_fixture_close(gpd_store_fixture_t *fx);

/** Open an existing store file (made by gpd_dstore_open) to insert trace
 *  rows with plain prepared statements, as a baseline for the tracing
 *  threads' writer (bench-trace).  No transaction is open.  0 or
 *  GPD_ESTORE. */
int gpd_store_fixture_open(const char *path, gpd_store_fixture_t **out);
/** BEGIN / COMMIT on the fixture's connection.  0 or GPD_ESTORE. */
int gpd_store_fixture_begin(gpd_store_fixture_t *fx);
int gpd_store_fixture_commit(gpd_store_fixture_t *fx);
/** One trace_event row (a GPU operation; times in ns) / one trace_launch
 *  row (an API call), INSERT OR IGNORE.  0 or GPD_ESTORE. */
int gpd_store_fixture_trace_gpu(gpd_store_fixture_t *fx, uint64_t profile, uint64_t start, int64_t stream,
                                uint64_t corr, uint64_t end, int64_t device, int op, int subkind, uint64_t node,
                                int64_t name, uint64_t bytes);
int gpd_store_fixture_trace_launch(gpd_store_fixture_t *fx, uint64_t profile, uint64_t ts, int64_t tid,
                                   uint64_t corr, uint64_t node, int op);
/** Close a fixture from gpd_store_fixture_open without committing. */
void gpd_store_fixture_free(gpd_store_fixture_t *fx);
/** Bytes the file at path uses after a WAL checkpoint: pages in use
 *  times the page size (free pages not counted); 0 when it cannot be
 *  opened. */
double gpd_store_fixture_bytes(const char *path);

#endif
