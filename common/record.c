/* record.c - validation and names of ring records (record.h).
 *
 * gpd_rec_validate is the daemon's gate for untrusted shared memory: it
 * only reads the caller's private copy of the record, never the ring.
 */
#include "gpuprof/record.h"

#include <stddef.h>
#include <string.h>

#include "gpuprof/error.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define NAME_OF(tab, i) ((i) < ARRAY_LEN(tab) && (tab)[i] ? (tab)[i] : "?")

/** Check a variable-length record: exact slot count for fixed+len. */
static int validate_var(const gpd_rec_hdr_t *h, size_t fixed, size_t nbytes) {
  if (h->len > GPD_REC_MAX_BYTES - fixed)
    return GPD_EBADRECORD;
  if (h->nslots != gpd_rec_slots_for(fixed, h->len))
    return GPD_EBADRECORD;
  if ((size_t)h->nslots * GPD_SLOT_SIZE > nbytes)
    return GPD_EBADRECORD;
  return 0;
}

/** Subkind range allowed for an op (exclusive upper bound). */
static unsigned op_subkind_max(unsigned op) {
  switch (op) {
  case GPD_OP_COPY:
    return GPD_COPY_MAX;
  case GPD_OP_MEMSET:
  case GPD_OP_ALLOC:
  case GPD_OP_FREE:
    return GPD_MEM_MAX;
  case GPD_OP_SYNC:
    return GPD_SYNC_MAX;
  default:
    return 1; /* kernels: subkind must be 0 */
  }
}

static int valid_op(unsigned op) { return op > GPD_OP_NONE && op < GPD_OP_MAX; }

/* Rules (all must hold, else GPD_EBADRECORD; wrong version: GPD_EBADVERSION):
 *   nbytes >= nslots*GPD_SLOT_SIZE;
 *   fixed records (all but STRING/MODULE): nslots == GPD_REC_NSLOTS of the
 *   type's struct (NODE/INVOKE/STATUS 1, PCSAMPLE/PCSTATS/CUBIN/CPUSAMPLE/
 *   TRACEWIN 2, ACTIVITY 3), len 0;
 *   PCSAMPLE func and stall != 0; CUBIN hash lowercase hex;
 *   STRING/MODULE: nslots == gpd_rec_slots_for(fixed, len), len <= max;
 *   api < GPD_API_MAX; op in 1..GPD_OP_MAX-1; subkind in the op's enum;
 *   NODE id != 0 (parent 0 = root), flags one of 0, PYTHON, LABEL, and a
 *   Python or label NODE names a string;
 *   STRING/MODULE id != 0;
 *   MODULE build_id_len <= 20; INVOKE node != 0 and corr != 0;
 *   ACTIVITY corr != 0; kernel subkind 0; end < start and occ_permille
 *   > 1000 are let through (gpd_metric_accumulate clamps them);
 *   CPUSAMPLE: flags 0, node != 0, expirations != 0,
 *   0 < weight <= GPD_CPUSAMPLE_MAX_WEIGHT;
 *   GRAPHNODE: flags 0 or CLONE, 0 < id < GPD_GRAPHNODE_ID_LIMIT; created
 *   (flags 0): node != 0, orig 0; clone: node 0, 0 < orig <
 *   GPD_GRAPHNODE_ID_LIMIT, orig != id. */
int gpd_rec_validate(const void *buf, size_t nbytes) {
  const gpd_rec_hdr_t *h = buf;
  if (!buf || nbytes < GPD_SLOT_SIZE)
    return GPD_EBADRECORD;
  if (h->version != GPD_REC_VERSION)
    return GPD_EBADVERSION;
  if (h->nslots < 1 || (size_t)h->nslots * GPD_SLOT_SIZE > nbytes)
    return GPD_EBADRECORD;

  switch (h->type) {
  case GPD_REC_NODE: {
    const gpd_rec_node_t *n = buf;
    if (h->nslots != GPD_REC_NSLOTS(*n) || h->len != 0 || n->id == 0 ||
        (h->flags & ~(GPD_NODE_F_PYTHON | GPD_NODE_F_LABEL)) ||
        h->flags == (GPD_NODE_F_PYTHON | GPD_NODE_F_LABEL) || (h->flags && n->module == 0))
      return GPD_EBADRECORD;
    return 0;
  }
  case GPD_REC_STRING: {
    const gpd_rec_string_t *s = buf;
    int err = validate_var(h, sizeof(gpd_rec_string_t), nbytes);
    if (err)
      return err;
    if (s->id == 0 || s->kind > GPD_STR_STALL)
      return GPD_EBADRECORD;
    return 0;
  }
  case GPD_REC_MODULE: {
    const gpd_rec_module_t *m = buf;
    int err = validate_var(h, sizeof(gpd_rec_module_t), nbytes);
    if (err)
      return err;
    if (m->id == 0 || m->build_id_len > sizeof m->build_id)
      return GPD_EBADRECORD;
    return 0;
  }
  case GPD_REC_INVOKE:
    return gpd_rec_invoke_ok(buf) ? 0 : GPD_EBADRECORD; /* version checked above */
  case GPD_REC_ACTIVITY: {
    const gpd_rec_activity_t *a = buf;
    if (h->nslots != GPD_REC_NSLOTS(*a) || h->len != 0)
      return GPD_EBADRECORD;
    if (a->api >= GPD_API_MAX || !valid_op(a->op) || a->corr == 0)
      return GPD_EBADRECORD;
    if (a->subkind >= op_subkind_max(a->op))
      return GPD_EBADRECORD;
    return 0;
  }
  case GPD_REC_STATUS: {
    const gpd_rec_status_t *s = buf;
    if (h->nslots != GPD_REC_NSLOTS(*s) || h->len != 0)
      return GPD_EBADRECORD;
    if (s->api >= GPD_API_MAX || s->state > 1)
      return GPD_EBADRECORD;
    return 0;
  }
  case GPD_REC_PCSAMPLE: {
    const gpd_rec_pcsample_t *r = buf;
    if (h->nslots != GPD_REC_NSLOTS(*r) || h->len != 0 || r->func == 0 || r->stall == 0)
      return GPD_EBADRECORD;
    return 0;
  }
  case GPD_REC_PCSTATS:
    if (h->nslots != GPD_REC_NSLOTS(gpd_rec_pcstats_t) || h->len != 0)
      return GPD_EBADRECORD;
    return 0;
  case GPD_REC_CUBIN: {
    const gpd_rec_cubin_t *r = buf;
    if (h->nslots != GPD_REC_NSLOTS(*r) || h->len != 0)
      return GPD_EBADRECORD;
    for (size_t i = 0; i < sizeof r->hash; i++)
      if (!((r->hash[i] >= '0' && r->hash[i] <= '9') || (r->hash[i] >= 'a' && r->hash[i] <= 'f')))
        return GPD_EBADRECORD;
    return 0;
  }
  case GPD_REC_CPUSAMPLE: {
    const gpd_rec_cpusample_t *r = buf;
    if (h->nslots != GPD_REC_NSLOTS(*r) || h->len != 0 || h->flags != 0 || r->node == 0 || r->weight == 0 ||
        r->weight > GPD_CPUSAMPLE_MAX_WEIGHT || r->expirations == 0)
      return GPD_EBADRECORD;
    return 0;
  }
  case GPD_REC_TRACEWIN: {
    const gpd_rec_tracewin_t *r = buf;
    if (h->nslots != GPD_REC_NSLOTS(*r) || h->len != 0 || (h->flags & ~GPD_TRACEWIN_F_FINAL) ||
        r->api >= GPD_API_MAX ||
        r->duty > 1 || r->t0 > r->start || r->start > r->end || r->window_ns > r->end - r->t0 ||
        ((h->flags & GPD_TRACEWIN_F_FINAL) && r->start != r->end) || r->launches_in > r->launches)
      return GPD_EBADRECORD;
    return 0;
  }
  case GPD_REC_GRAPHNODE: {
    const gpd_rec_graphnode_t *r = buf;
    int clone = (h->flags & GPD_GRAPHNODE_F_CLONE) != 0;
    if (h->nslots != GPD_REC_NSLOTS(*r) || h->len != 0 || (h->flags & ~GPD_GRAPHNODE_F_CLONE) ||
        r->id == 0 || r->id >= GPD_GRAPHNODE_ID_LIMIT || r->orig >= GPD_GRAPHNODE_ID_LIMIT)
      return GPD_EBADRECORD;
    if (clone ? (r->node != 0 || r->orig == 0 || r->orig == r->id) : (r->node == 0 || r->orig != 0))
      return GPD_EBADRECORD;
    return 0;
  }
  default:
    return GPD_EBADRECORD;
  }
}

static const char *const type_names[] = {"none",   "node",     "string",  "module", "invoke",
                                         "activity", "status", "pcsample", "pcstats", "cubin",
                                         "cpusample", "tracewin", "graphnode"};
static const char *const api_names[] = {"none", "opencl", "cuda", "level0", "ompt"};
static const char *const op_names[] = {"none", "kernel", "copy", "memset", "alloc", "free", "sync"};
static const char *const op_placeholders[] = {"<gpu none>", "<gpu kernel>", "<gpu copy>", "<gpu memset>",
                                              "<gpu alloc>", "<gpu free>", "<gpu sync>"};
static const char *const copy_names[] = {"UNK", "H2D", "D2H", "H2A", "A2H", "A2A",
                                         "A2D", "D2A", "D2D", "H2H", "P2P"};
static const char *const mem_names[] = {"UNK", "PAG", "PIN", "DEV", "ARY", "MAN", "DST", "MST"};
static const char *const sync_names[] = {"UNK", "EVT", "STRE", "STR", "CTX"};

_Static_assert(ARRAY_LEN(type_names) == GPD_REC_TYPE_MAX, "type names");
_Static_assert(ARRAY_LEN(api_names) == GPD_API_MAX, "api names");
_Static_assert(ARRAY_LEN(op_names) == GPD_OP_MAX, "op names");
_Static_assert(ARRAY_LEN(op_placeholders) == GPD_OP_MAX, "placeholders");
_Static_assert(ARRAY_LEN(copy_names) == GPD_COPY_MAX, "copy names");
_Static_assert(ARRAY_LEN(mem_names) == GPD_MEM_MAX, "mem names");
_Static_assert(ARRAY_LEN(sync_names) == GPD_SYNC_MAX, "sync names");

/* Name functions: static strings, "?" for out-of-range values. */
const char *gpd_rec_type_name(unsigned type) { return NAME_OF(type_names, type); }
const char *gpd_api_name(unsigned api) { return NAME_OF(api_names, api); }
const char *gpd_op_name(unsigned op) { return NAME_OF(op_names, op); }
const char *gpd_op_placeholder(unsigned op) { return NAME_OF(op_placeholders, op); }
const char *gpd_copy_name(unsigned kind) { return NAME_OF(copy_names, kind); }
const char *gpd_mem_name(unsigned kind) { return NAME_OF(mem_names, kind); }
const char *gpd_sync_name(unsigned kind) { return NAME_OF(sync_names, kind); }
