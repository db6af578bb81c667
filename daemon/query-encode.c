/* query-encode.c - the wire encoding of a Tree reply's nodes, written
 * directly instead of through protobuf-c's descriptor-driven packer.
 *
 * protobuf-c computes a nested message's size again at every level it is
 * packed under (a Metric's size is taken for the Node's size, again for
 * the TreeReply's, the Msg's, and once more when the Node is packed), and
 * it reads each field's descriptor to do so.  `perf record` of gpuprofd
 * answering `tree` for 30 K merged nodes (4.2 MB) showed
 * protobuf_c_message_get_packed_size and protobuf_c_message_pack as its
 * two largest symbols (9 % + 8.5 % of the daemon's samples, more than
 * building the reply).  Here each Node's size is taken once, kept, and the
 * bytes are written in one pass.  The output is byte for byte what
 * gpuprof__msg__pack writes (proto3 rules as protobuf-c 1.4 applies them:
 * zero scalars, 0.0 doubles and NULL or empty strings are left out; fields
 * in number order; every element of a repeated message field written);
 * daemon.encode checks that on nodes with every field set and unset.
 *
 * Field numbers and types: proto/gpuprof.proto (Node, Frame, Metric,
 * TreeReply, Msg.tree); Node's fields 11-14 are packed repeated scalars
 * (one length-delimited field each, absent when empty).  Any thread; no allocation but the size array. */
#include <stdlib.h>
#include <string.h>

#include "gpuprof.pb-c.h"

#include "query-internal.h"

/* tag byte of field f with wire type w (f < 16) */
#define TAG(f, w) ((uint8_t)(((f) << 3) | (w)))
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

static inline size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

static inline uint8_t *varint_put(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

/* a proto3 string field: absent when NULL or "" (as protobuf-c) */
static inline size_t str_size(const char *s) {
  if (s == NULL || s[0] == 0)
    return 0;
  size_t n = strlen(s);
  return 1 + varint_size(n) + n;
}

static inline uint8_t *str_put(uint8_t *p, unsigned field, const char *s) {
  if (s == NULL || s[0] == 0)
    return p;
  size_t n = strlen(s);
  *p++ = TAG(field, WT_LEN);
  p = varint_put(p, n);
  memcpy(p, s, n);
  return p + n;
}

/* enum and int32 fields: a negative value takes 10 bytes (sign-extended) */
static inline size_t int32_size(int32_t v) { return v < 0 ? 10 : varint_size((uint32_t)v); }

static inline uint8_t *int32_put(uint8_t *p, int32_t v) {
  return varint_put(p, v < 0 ? (uint64_t)(int64_t)v : (uint64_t)(uint32_t)v);
}

static inline size_t metric_size(const Gpuprof__Metric *m) {
  return (m->id ? 1 + varint_size(m->id) : 0) + (m->value != 0 ? 9 : 0);
}

static uint8_t *metrics_put(uint8_t *p, unsigned field, Gpuprof__Metric *const *ms, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const Gpuprof__Metric *m = ms[i];
    *p++ = TAG(field, WT_LEN);
    *p++ = (uint8_t)metric_size(m); /* at most 1 + 5 + 9 < 128: one byte */
    if (m->id) {
      *p++ = TAG(1, WT_VARINT);
      p = varint_put(p, m->id);
    }
    if (m->value != 0) {
      *p++ = TAG(2, WT_I64);
      memcpy(p, &m->value, 8); /* little-endian double (x86-64, aarch64) */
      p += 8;
    }
  }
  return p;
}

static size_t metrics_size(Gpuprof__Metric *const *ms, size_t n) {
  size_t s = 0;
  for (size_t i = 0; i < n; i++)
    s += 2 + metric_size(ms[i]);
  return s;
}

/* packed repeated uint32 / double (Node.excl_ids ...): absent when empty */
static size_t packed_u32_size(const uint32_t *v, size_t n) {
  if (n == 0)
    return 0;
  size_t b = 0;
  for (size_t i = 0; i < n; i++)
    b += varint_size(v[i]);
  return 1 + varint_size(b) + b;
}

static uint8_t *packed_u32_put(uint8_t *p, unsigned field, const uint32_t *v, size_t n) {
  if (n == 0)
    return p;
  size_t b = 0;
  for (size_t i = 0; i < n; i++)
    b += varint_size(v[i]);
  *p++ = TAG(field, WT_LEN);
  p = varint_put(p, b);
  for (size_t i = 0; i < n; i++)
    p = varint_put(p, v[i]);
  return p;
}

static size_t packed_f64_size(size_t n) { return n ? 1 + varint_size(8 * n) + 8 * n : 0; }

static uint8_t *packed_f64_put(uint8_t *p, unsigned field, const double *v, size_t n) {
  if (n == 0)
    return p;
  *p++ = TAG(field, WT_LEN);
  p = varint_put(p, 8 * n);
  memcpy(p, v, 8 * n); /* little-endian doubles (x86-64, aarch64) */
  return p + 8 * n;
}

static size_t frame_size(const Gpuprof__Frame *f) {
  return str_size(f->function) + str_size(f->file) + (f->line ? 1 + varint_size(f->line) : 0) +
         (f->inlined ? 2 : 0);
}

size_t gpd__query_node_size(const Gpuprof__Node *o) {
  size_t s = 0;
  if (o->id)
    s += 1 + varint_size(o->id);
  if (o->parent)
    s += 1 + varint_size(o->parent);
  if (o->kind)
    s += 1 + int32_size((int32_t)o->kind);
  s += str_size(o->label) + str_size(o->module);
  if (o->offset)
    s += 1 + varint_size(o->offset);
  for (size_t i = 0; i < o->n_frames; i++) {
    size_t f = frame_size(o->frames[i]);
    s += 1 + varint_size(f) + f;
  }
  s += metrics_size(o->excl, o->n_excl) + metrics_size(o->incl, o->n_incl);
  s += str_size(o->raw_name);
  s += packed_u32_size(o->excl_ids, o->n_excl_ids) + packed_f64_size(o->n_excl_values);
  return s + packed_u32_size(o->incl_ids, o->n_incl_ids) + packed_f64_size(o->n_incl_values);
}

uint8_t *gpd__query_node_put(const Gpuprof__Node *o, uint8_t *p) {
  if (o->id) {
    *p++ = TAG(1, WT_VARINT);
    p = varint_put(p, o->id);
  }
  if (o->parent) {
    *p++ = TAG(2, WT_VARINT);
    p = varint_put(p, o->parent);
  }
  if (o->kind) {
    *p++ = TAG(3, WT_VARINT);
    p = int32_put(p, (int32_t)o->kind);
  }
  p = str_put(p, 4, o->label);
  p = str_put(p, 5, o->module);
  if (o->offset) {
    *p++ = TAG(6, WT_VARINT);
    p = varint_put(p, o->offset);
  }
  for (size_t i = 0; i < o->n_frames; i++) {
    const Gpuprof__Frame *f = o->frames[i];
    *p++ = TAG(7, WT_LEN);
    p = varint_put(p, frame_size(f));
    p = str_put(p, 1, f->function);
    p = str_put(p, 2, f->file);
    if (f->line) {
      *p++ = TAG(3, WT_VARINT);
      p = varint_put(p, f->line);
    }
    if (f->inlined) {
      *p++ = TAG(4, WT_VARINT);
      *p++ = 1;
    }
  }
  p = metrics_put(p, 8, o->excl, o->n_excl);
  p = metrics_put(p, 9, o->incl, o->n_incl);
  p = str_put(p, 10, o->raw_name);
  p = packed_u32_put(p, 11, o->excl_ids, o->n_excl_ids);
  p = packed_f64_put(p, 12, o->excl_values, o->n_excl_values);
  p = packed_u32_put(p, 13, o->incl_ids, o->n_incl_ids);
  return packed_f64_put(p, 14, o->incl_values, o->n_incl_values);
}

size_t gpd__query_tree_msg_size(const Gpuprof__Msg *m, uint32_t *sizes, size_t *body_len) {
  Gpuprof__TreeReply *t = m->tree;
  size_t body = 0;
  for (size_t i = 0; i < t->n_nodes; i++) {
    size_t s = gpd__query_node_size(t->nodes[i]);
    if (s > UINT32_MAX)
      return SIZE_MAX;
    sizes[i] = (uint32_t)s;
    body += 1 + varint_size(s) + s;
  }
  /* the rest (procs, gpu_samples) through protobuf-c: nodes are field 1,
   * so they come first either way */
  size_t nn = t->n_nodes;
  t->n_nodes = 0;
  body += gpuprof__tree_reply__get_packed_size(t);
  t->n_nodes = nn;
  *body_len = body;
  return 1 + varint_size(body) + body;
}

size_t gpd__query_tree_msg_pack(const Gpuprof__Msg *m, const uint32_t *sizes, size_t body_len,
                                uint8_t *out) {
  Gpuprof__TreeReply *t = m->tree;
  uint8_t *p = out;
  *p++ = TAG(GPUPROF__MSG__BODY_TREE, WT_LEN);
  p = varint_put(p, body_len);
  for (size_t i = 0; i < t->n_nodes; i++) {
    *p++ = TAG(1, WT_LEN);
    p = varint_put(p, sizes[i]);
    p = gpd__query_node_put(t->nodes[i], p);
  }
  size_t nn = t->n_nodes;
  t->n_nodes = 0;
  p += gpuprof__tree_reply__pack(t, p);
  t->n_nodes = nn;
  return (size_t)(p - out);
}
