/* profile-qlog.c - change logs of the live queries (gpd_qlog_t,
 * profile.h): which nodes' metrics changed since a reader last took its
 * log.  Caller holds the daemon lock. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile-internal.h"

/* At most this many distinct nodes per change log: past it a reader
 * re-reads every node anyway (merge.c's full sum), so a longer log would
 * only cost memory (bounded to 1/8 of the nodes: 0.5 byte a node). */
static uint32_t qlog_max(const gpd_profile_t *p) { return p->nnodes / 8 > 256 ? p->nnodes / 8 : 256; }

/* Node i's metrics change: append it to each armed log it is not in. */
void gpd__profile_qlog_slow(gpd_profile_t *p, uint32_t i) {
  if (i >= p->capqbit) {
    uint32_t nc = p->capnodes > i ? p->capnodes : i + 1;
    uint8_t *nb = realloc(p->qbit, nc);
    if (nb == NULL) {
      for (unsigned c = 0; c < GPD_QLOG_N; c++)
        p->qlog[c].over |= (p->qarmed >> c) & 1;
      p->qarmed = 0;
      return;
    }
    memset(nb + p->capqbit, 0, nc - p->capqbit);
    p->qbit = nb;
    p->capqbit = nc;
  }
  uint8_t want = p->qarmed & (uint8_t)~p->qbit[i];
  for (unsigned c = 0; c < GPD_QLOG_N; c++) {
    gpd_qlog_t *l = &p->qlog[c];
    if (!((want >> c) & 1))
      continue;
    if (l->n >= qlog_max(p) || GPD_GROW(l->v, l->n, l->cap, 64) < 0) {
      l->over = 1; /* incomplete: no more logging until the next take */
      p->qarmed &= (uint8_t)~(1u << c);
      continue;
    }
    l->v[l->n++] = i;
    p->qbit[i] |= (uint8_t)(1u << c);
  }
}

void gpd_profile_qlog_take(gpd_profile_t *p, unsigned c, const uint32_t **v, uint32_t *n, int *over) {
  gpd_qlog_t *l = &p->qlog[c];
  *over = l->over || !((p->qarmed >> c) & 1);
  p->qarmed |= (uint8_t)(1u << c);
  for (uint32_t k = 0; k < l->n; k++)
    p->qbit[l->v[k]] &= (uint8_t)~(1u << c);
  *v = l->v;
  *n = *over ? 0 : l->n;
  l->n = 0;
  l->over = 0;
}
