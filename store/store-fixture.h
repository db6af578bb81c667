/* store-fixture.h - synthetic profile files for benchmarks (bench/ only;
 * fixture.c).  Not for the product: the daemon writes profiles through
 * store-write.h, `gpuprof merge` through merged-write.h.  These make a
 * node file of a given shape as fast as SQLite can (no journal, no
 * fsync, one transaction), so that a benchmark measures the reader, not
 * the making of its input.  Single thread; a fixture is not shared.
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

#endif
