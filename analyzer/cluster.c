/* cluster.c - `gpuprof merge` on one machine: worker threads read
 * contiguous slices of the inputs into parts, the calling thread folds
 * them in input order and writes the result (analyzer.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyzer.h"
#include "gpuprof/error.h"
#include "gpuprof/metric.h"

uint64_t gpd_cluster_in_bytes;
static atomic_int stop_all; /* an input failed without --keep-going */

int gpd_cluster_read_slice(gpd_mpart_t *p, const gpd_cluster_opts_t *o, size_t lo, size_t hi, size_t *skipped) {
  char err[1024];
  for (size_t i = lo; i < hi; i++) {
    if (atomic_load(&stop_all)) return -ECANCELED;
    int e = gpd_minput_read(p, o->inputs[i], &o->filter, err, sizeof(err));
    if (e == -ENOMEM) {
      fprintf(stderr, "gpuprof: %s\n", err);
      return e;
    }
    if (e < 0) {
      fprintf(stderr, "gpuprof: %s%s\n", err, o->keep_going ? " (skipped)" : "");
      if (!o->keep_going) {
        atomic_store(&stop_all, 1);
        return e;
      }
      (*skipped)++;
    }
  }
  return gpd_mpart_group(p);
}

typedef struct worker_s {
  pthread_t th;
  const gpd_cluster_opts_t *o;
  gpd_mpart_t part;
  size_t lo, hi, skipped;
  int err;
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  w->err = gpd_cluster_read_slice(&w->part, w->o, w->lo, w->hi, &w->skipped);
  return NULL;
}

double gpd_cluster_clock(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void gpd_cluster_phases(const gpd_cluster_opts_t *o, const char *who, const double t[3], const double c[3]) {
  if (!o->quiet)
    fprintf(stderr, "gpuprof: %s: reading %.2f s (CPU %.2f s), reduce + write %.2f s (CPU %.2f s)\n", who,
            t[1] - t[0], c[1] - c[0], t[2] - t[1], c[2] - c[1]);
}

int gpd_cluster_run(const gpd_cluster_opts_t *o, gpd_mout_info_t *info) {
  double t[3], c[3];
  t[0] = gpd_cluster_clock(CLOCK_MONOTONIC);
  c[0] = gpd_cluster_clock(CLOCK_PROCESS_CPUTIME_ID);
  size_t nt = o->threads > 0 ? (size_t)o->threads : (size_t)sysconf(_SC_NPROCESSORS_ONLN);
  size_t skipped = 0, started = 0;
  worker_t *w;
  int err = 0;
  char msg[1024];
  if (nt < 1) nt = 1;
  if (nt > o->ninputs) nt = o->ninputs ? o->ninputs : 1;
  if (!(w = calloc(nt, sizeof(*w)))) return -ENOMEM;
  atomic_store(&stop_all, 0);
  gpd_cluster_in_bytes = 0;
  for (size_t t = 0; t < nt; t++) {
    w[t].o = o;
    w[t].lo = o->ninputs * t / nt;
    w[t].hi = o->ninputs * (t + 1) / nt;
    gpd_mpart_init(&w[t].part);
  }
  /* worker 0 runs on this thread */
  for (size_t t = 1; t < nt; t++, started++)
    if ((err = -pthread_create(&w[t].th, NULL, worker_main, &w[t])) < 0) break;
  if (!err) worker_main(&w[0]);
  for (size_t t = 1; t <= started; t++) pthread_join(w[t].th, NULL);
  if (err < 0) {
    fprintf(stderr, "gpuprof: cannot start a thread: %s\n", strerror(-err));
    goto out;
  }
  uint32_t ninputs = 0;
  for (size_t t = 0; t < nt; t++) {
    if (w[t].err < 0 && (err == 0 || err == -ECANCELED)) err = w[t].err;
    skipped += w[t].skipped;
    ninputs += w[t].part.ninputs;
    gpd_cluster_in_bytes += w[t].part.in_bytes;
  }
  if (err < 0) {
    if (!o->quiet) fprintf(stderr, "gpuprof: nothing written (--keep-going merges the other inputs)\n");
    goto out;
  }
  if (ninputs == 0) {
    fprintf(stderr, "gpuprof: no input could be read; nothing written\n");
    err = GPD_ESTORE;
    goto out;
  }
  gpd_mpart_t *parts = malloc(nt * sizeof(*parts));
  if (!parts) {
    err = -ENOMEM;
    goto out;
  }
  for (size_t k = 0; k < nt; k++) parts[k] = w[k].part;
  t[1] = gpd_cluster_clock(CLOCK_MONOTONIC);
  c[1] = gpd_cluster_clock(CLOCK_PROCESS_CPUTIME_ID);
  err = gpd_mout_write(parts, nt, o->out, ninputs, info, msg, sizeof(msg));
  t[2] = gpd_cluster_clock(CLOCK_MONOTONIC);
  c[2] = gpd_cluster_clock(CLOCK_PROCESS_CPUTIME_ID);
  free(parts);
  if (err < 0) {
    fprintf(stderr, "gpuprof: %s\n", msg);
    goto out;
  }
  {
    char who[64];
    snprintf(who, sizeof(who), "%zu thread%s", nt, nt == 1 ? "" : "s");
    gpd_cluster_phases(o, who, t, c);
  }
  if (skipped)
    fprintf(stderr, "gpuprof: %zu of %zu inputs skipped; %s holds the other %u\n", skipped, o->ninputs, o->out,
            ninputs);
  err = skipped ? 1 : 0;
out:
  for (size_t t = 0; t < nt; t++) gpd_mpart_free(&w[t].part);
  free(w);
  return err;
}

const char gpd_cluster_usage[] =
    "usage: gpuprof merge -o OUT.gpdb [--job J] [--uid U] [--keep-going] [-j N] [--single-file] [-q] INPUT...\n"
    "  Merge saved profiles (node stores, `gpuprof record` files, merged files) into one\n"
    "  file with per-context statistics over the processes (docs/ANALYZER.md).\n"
    "  -o FILE        the merged profile (written beside it, then renamed into place)\n"
    "  --job J        only the profiles of job J (profile.job_id)\n"
    "  --uid U        only the profiles of user U\n"
    "  --keep-going   skip inputs that cannot be read (named on stderr), merge the rest\n"
    "  -j N           N reading threads (default: one per CPU)\n"
    "  -q             no summary on stderr\n"
    "  Under mpirun the ranks split the inputs; each rank writes its share beside OUT as\n"
    "  OUT.shard-NNN and rank 0 writes OUT, which names them (readers attach them);\n"
    "  --single-file: rank 0 writes everything into OUT alone.  A merge of one sharded\n"
    "  file assembles it into one ordinary file.\n"
    "  Exit: 0 merged, 1 nothing written, 3 written with inputs skipped (--keep-going), 64 usage.\n";

static long parse_num(const char *s) {
  char *e;
  errno = 0;
  long v = strtol(s, &e, 10);
  return errno || e == s || *e || v < 0 ? -1 : v;
}

int gpd_cluster_parse(int argc, char **argv, gpd_cluster_opts_t *o, char *err, size_t errn) {
  memset(o, 0, sizeof(*o));
  o->filter.uid = -1;
  int i = 1, files = 0;
  for (; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--")) {
      i++;
      break;
    }
    if (a[0] != '-' || !a[1]) break;
    if (!strcmp(a, "--keep-going") || !strcmp(a, "-k")) {
      o->keep_going = 1;
    } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
      o->quiet = 1;
    } else if (!strcmp(a, "--single-file")) {
      o->single_file = 1;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      return 1;
    } else if (!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--job") || !strcmp(a, "--uid") ||
               !strcmp(a, "-j") || !strcmp(a, "--threads")) {
      if (!v) return snprintf(err, errn, "%s needs a value", a), -EINVAL;
      i++;
      long n = 0;
      if (a[1] == 'o' || !strcmp(a, "--output")) {
        o->out = v;
      } else if (!strcmp(a, "--job")) {
        o->filter.job_id = v;
      } else if ((n = parse_num(v)) < 0 || (a[2] != 'u' && (n < 1 || n > 1024))) {
        return snprintf(err, errn, "bad %s '%s'", a, v), -EINVAL;
      } else if (!strcmp(a, "--uid")) {
        o->filter.uid = n;
      } else {
        o->threads = (int)n;
      }
    } else {
      return snprintf(err, errn, "unknown option '%s'", a), -EINVAL;
    }
  }
  files = argc - i;
  if (!o->out) return snprintf(err, errn, "no output file (-o FILE)"), -EINVAL;
  if (files < 1) return snprintf(err, errn, "no input file given"), -EINVAL;
  o->inputs = (const char *const *)argv + i;
  o->ninputs = (size_t)files;
  return 0;
}

void gpd_cluster_summary(const gpd_cluster_opts_t *o, const gpd_mout_info_t *s, double secs, uint64_t in_bytes) {
  if (o->quiet) return;
  fprintf(stderr,
          "gpuprof: merged into %s: %llu processes, %llu contexts, %llu (context, metric) pairs, %llu values; "
          "values stored %.1f KiB sparse (both orders) vs %.1f KiB dense (%.1fx; %.1fx against all %d metrics); "
          "%.1f MB read in %.2f s\n",
          o->out, (unsigned long long)s->profiles, (unsigned long long)s->contexts, (unsigned long long)s->keys,
          (unsigned long long)s->values, s->sparse_bytes / 1024.0, s->dense_bytes / 1024.0,
          s->sparse_bytes ? (double)s->dense_bytes / (double)s->sparse_bytes : 0.0,
          s->sparse_bytes ? (double)s->dense_all_bytes / (double)s->sparse_bytes : 0.0, GPD_M__COUNT, in_bytes / 1e6,
          secs);
  if (s->bins)
    fprintf(stderr, "gpuprof: GPU binaries: %llu referred to, %llu copied beside %s, %llu already there, %llu missing\n",
            (unsigned long long)s->bins, (unsigned long long)s->bins_copied, o->out,
            (unsigned long long)(s->bins - s->bins_copied - s->bins_missing), (unsigned long long)s->bins_missing);
}
