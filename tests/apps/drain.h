/* drain.h - test helper: a locally created region attached to the shim
 * (no daemon), drained with gpd_ring_consume into simple tables. */
#ifndef TEST_DRAIN_H
#define TEST_DRAIN_H

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpuprof/record.h"
#include "gpuprof/region.h"

int gpd_shim__attach_region(int fd); /* shim test hook */

#define DR_MAX 65536

typedef struct dr_s {
  gpd_region_t r;
  long seq;                       /* records seen */
  gpd_rec_node_t nodes[DR_MAX];   /* by arrival */
  long node_seq[DR_MAX];
  int nnodes;
  gpd_rec_module_t mods[256];
  char mod_path[256][512];
  long mod_seq[256];
  int nmods;
  gpd_rec_invoke_t inv[DR_MAX];
  int ninv;
  long ninv_all, nnodes_all; /* counted even beyond DR_MAX */
  gpd_rec_activity_t act[DR_MAX];
  int nact;
  uint32_t str_id[4096];
  char str_text[4096][128];
  int nstr;
  int bad;
} dr_t;

#define DR_FAIL(...)                                                            \
  do {                                                                          \
    fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                        \
    fprintf(stderr, __VA_ARGS__);                                               \
    fputc('\n', stderr);                                                        \
    exit(1);                                                                    \
  } while (0)
#define DR_CHECK(cond, fmt, ...)                                                \
  do {                                                                          \
    if (!(cond))                                                                \
      DR_FAIL("%s: " fmt, #cond, ##__VA_ARGS__);                                \
  } while (0)

static inline void dr_collect(void *arg, const void *rec, size_t n) {
  dr_t *d = arg;
  const gpd_rec_hdr_t *h = rec;
  (void)n;
  d->seq++;
  switch (h->type) {
  case GPD_REC_NODE:
    d->nnodes_all++;
    if (d->nnodes < DR_MAX) {
      d->node_seq[d->nnodes] = d->seq;
      d->nodes[d->nnodes++] = *(const gpd_rec_node_t *)rec;
    }
    break;
  case GPD_REC_MODULE:
    if (d->nmods < 256) {
      const gpd_rec_module_t *m = rec;
      d->mods[d->nmods] = *m;
      size_t l = h->len < 511 ? h->len : 511;
      memcpy(d->mod_path[d->nmods], m->path, l);
      d->mod_path[d->nmods][l] = '\0';
      d->mod_seq[d->nmods++] = d->seq;
    }
    break;
  case GPD_REC_INVOKE:
    d->ninv_all++;
    if (d->ninv < DR_MAX)
      d->inv[d->ninv++] = *(const gpd_rec_invoke_t *)rec;
    break;
  case GPD_REC_ACTIVITY:
    if (d->nact < DR_MAX)
      d->act[d->nact++] = *(const gpd_rec_activity_t *)rec;
    break;
  case GPD_REC_STRING:
    if (d->nstr < 4096) {
      const gpd_rec_string_t *s = rec;
      size_t l = h->len < 127 ? h->len : 127;
      d->str_id[d->nstr] = s->id;
      memcpy(d->str_text[d->nstr], s->text, l);
      d->str_text[d->nstr++][l] = '\0';
    }
    break;
  default:
    break;
  }
}

/* Create a region (nrings x slots) and attach a dup of its fd to the shim. */
static inline void dr_attach(dr_t *d, uint32_t nrings, uint32_t slots) {
  int err = gpd_region_create(&d->r, nrings, slots, (int32_t)getpid(), 1);
  DR_CHECK(err == 0, "gpd_region_create %d", err);
  err = gpd_shim__attach_region(dup(d->r.fd));
  DR_CHECK(err == 0, "attach %d", err);
}

static inline void dr_drain(dr_t *d) {
  for (uint32_t i = 0; i < d->r.nrings; i++) {
    int n;
    while ((n = gpd_ring_consume(&d->r, i, 4096, dr_collect, d)) > 0)
      ;
    if (n < 0)
      DR_FAIL("ring %u corrupt: %d", i, n);
  }
}

static inline const gpd_rec_node_t *dr_node(const dr_t *d, uint32_t id) {
  for (int i = 0; i < d->nnodes; i++)
    if (d->nodes[i].id == id)
      return &d->nodes[i];
  return NULL;
}

static inline const gpd_rec_module_t *dr_module(const dr_t *d, uint32_t id, int *idx) {
  for (int i = 0; i < d->nmods; i++)
    if (d->mods[i].id == id) {
      if (idx)
        *idx = i;
      return &d->mods[i];
    }
  return NULL;
}

static inline const char *dr_string(const dr_t *d, uint32_t id) {
  for (int i = 0; i < d->nstr; i++)
    if (d->str_id[i] == id)
      return d->str_text[i];
  return NULL;
}

/* Make a local region (16 rings x 16 K slots) and run this program again
 * as `argv0 child FD` (posix_spawn, not fork: the shim's connection thread
 * may hold ASan's allocator lock) with the region's descriptor; the child
 * attaches it (gpd_shim__attach_region), runs, exits.  Then drain
 * everything it pushed, its exit handlers' records included.  Returns 0,
 * or 77 when the child exited 77 (no device); fails the test otherwise. */
static inline int dr_run_child(dr_t *d, char *argv0) {
  extern char **environ;
  int err = gpd_region_create(&d->r, 16, 1u << 14, (int32_t)getpid(), 1);
  DR_CHECK(err == 0, "gpd_region_create %d", err);
  char fdarg[16];
  snprintf(fdarg, sizeof fdarg, "%d", dup(d->r.fd)); /* dup: without close-on-exec */
  char *cargv[] = {argv0, "child", fdarg, NULL};
  pid_t pid;
  fflush(stdout);
  DR_CHECK(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, cargv, environ) == 0, "posix_spawn");
  int st = 0;
  DR_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
    return 77;
  DR_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed (status %d)", st);
  dr_drain(d);
  return 0;
}

/* The entry of a test that runs in two processes: as `PROG child FD` run
 * child(FD) and exit with its status; else dr_run_child.  Returns 0 for
 * the parent to go on checking D, or 77 (no device; "NAME: ... SKIP"
 * printed) for main to return. */
static inline int dr_start(dr_t *d, int argc, char **argv, int (*child)(int fd), const char *name) {
  if (argc == 3 && strcmp(argv[1], "child") == 0)
    exit(child(atoi(argv[2])));
  if (dr_run_child(d, argv[0]) == 77) {
    fprintf(stderr, "%s: no OpenCL device: SKIP\n", name);
    return 77;
  }
  return 0;
}

#endif
