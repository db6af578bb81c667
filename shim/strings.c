/* strings.c - the process-wide string table: text -> id, STRING record
 * pushed once per announcement epoch.
 *
 * Lock-free open addressing over a fixed table (STRINGS_CAP entries): a
 * lookup hashes the text (XXH3) and probes; an insert claims an empty
 * entry with one CAS on its hash word, copies the text (malloc: first
 * sight of a text only; gpd_shim__string_static keeps the caller's
 * permanent text instead) and publishes the id.  Full table: returns 0.
 */
#include <stdlib.h>
#include <string.h>

#include "gpuprof/hash.h"
#include "gpuprof/log.h"
#include "internal.h"

#define STRINGS_CAP 16384u /* power of two */
#define STRINGS_TEXT_MAX 4096u
#define STRINGS_SPIN 100000

typedef struct string_entry_s {
  _Atomic uint64_t hash; /* 0 = empty */
  _Atomic uint32_t id;   /* 0 until published */
  _Atomic uint32_t ann;  /* announcement epoch */
  uint32_t kind;
  uint32_t len;
  char *text;
  int borrowed; /* text is the caller's permanent copy (never freed) */
} string_entry_t;

static string_entry_t strings[STRINGS_CAP];
static int strings_log_full;

void gpd_strings_init(void) {}

void gpd_strings_atfork_child(void) {
  for (uint32_t i = 0; i < STRINGS_CAP; i++) {
    if (!strings[i].borrowed)
      free(strings[i].text);
    memset(&strings[i], 0, sizeof strings[i]);
  }
}

static int string_announce(string_entry_t *e) {
  uint32_t epoch = atomic_load(&gpd_shim__g.epoch), old;
  int c = gpd_shim__ann_claim(&e->ann, epoch, &old);
  if (c != 0)
    return c == 1;
  _Alignas(8) uint8_t buf[sizeof(gpd_rec_string_t) + STRINGS_TEXT_MAX];
  gpd_rec_string_t *r = (gpd_rec_string_t *)buf;
  memset(r, 0, sizeof *r);
  r->h.type = GPD_REC_STRING;
  r->h.version = GPD_REC_VERSION;
  r->h.nslots = (uint8_t)gpd_rec_slots_for(sizeof *r, e->len);
  r->h.len = e->len;
  r->id = atomic_load(&e->id);
  r->kind = e->kind;
  memcpy(r->text, e->text, e->len);
  int ok = gpd_thread_push(r, sizeof *r + e->len) == 0;
  gpd_shim__ann_done(&e->ann, epoch, old, ok);
  return ok;
}

/* Id of text[0..len) of kind, inserted if new: its text copied (malloc),
 * or kept by pointer when `keep` (text permanent, no allocation).  *slot
 * (when not NULL): the entry's index + 1, 0 when none. */
static uint32_t string_get(const char *text, size_t len, unsigned kind, int keep, uint32_t *slot) {
  if (slot)
    *slot = 0;
  uint64_t h = gpd_hash64(text, len, kind);
  if (h == 0)
    h = 1;
  for (uint32_t probe = 0; probe < STRINGS_CAP; probe++) {
    string_entry_t *e = &strings[(h + probe) & (STRINGS_CAP - 1)];
    uint64_t eh = atomic_load_explicit(&e->hash, memory_order_acquire);
    if (eh == 0) {
      if (!atomic_compare_exchange_strong(&e->hash, &eh, h)) {
        if (eh != h)
          continue;
      } else {
        e->borrowed = keep;
        e->text = keep ? (char *)text : malloc(len + 1);
        if (e->text && !keep) {
          memcpy(e->text, text, len);
          e->text[len] = '\0';
        }
        e->len = e->text ? (uint32_t)len : 0;
        e->kind = kind;
        atomic_store_explicit(&e->id, gpd_shim__id_next(), memory_order_release);
        string_announce(e);
        if (slot)
          *slot = (uint32_t)(e - strings) + 1;
        return atomic_load(&e->id);
      }
    }
    if (eh != h)
      continue;
    uint32_t id;
    int spin = 0;
    while ((id = atomic_load_explicit(&e->id, memory_order_acquire)) == 0 && spin++ < STRINGS_SPIN)
      ;
    if (!id)
      return 0;
    if (e->kind == kind && e->len == len && e->text && memcmp(e->text, text, len) == 0) {
      if (atomic_load_explicit(&e->ann, memory_order_acquire) != atomic_load(&gpd_shim__g.epoch))
        string_announce(e);
      if (slot)
        *slot = (uint32_t)(e - strings) + 1;
      return id;
    }
  }
  if (!keep)
    GPD_LOG_ONCE(strings_log_full, GPD_LOG_WARN, "string table full; names dropped");
  return 0;
}

GPD_EXPORT uint32_t gpd_shim_string(const char *text, unsigned kind) { return gpd_shim__string_slot(text, kind, NULL); }

uint32_t gpd_shim__string_static(const char *text, size_t len, unsigned kind) {
  if (!text || !atomic_load_explicit(&gpd_shim__g.active, memory_order_acquire))
    return 0;
  return string_get(text, len < STRINGS_TEXT_MAX ? len : STRINGS_TEXT_MAX, kind, 1, NULL);
}

uint32_t gpd_shim__string_slot(const char *text, unsigned kind, uint32_t *slot) {
  if (slot)
    *slot = 0;
  if (!text || !gpd_shim_active())
    return 0;
  return string_get(text, strnlen(text, STRINGS_TEXT_MAX), kind, 0, slot);
}

uint32_t gpd_shim__string_again(uint32_t slot) {
  if (slot == 0 || slot > STRINGS_CAP || !atomic_load_explicit(&gpd_shim__g.active, memory_order_acquire))
    return 0;
  string_entry_t *e = &strings[slot - 1];
  /* entries are never removed but by a fork child's wipe (then id 0) */
  uint32_t id = atomic_load_explicit(&e->id, memory_order_acquire);
  if (id && atomic_load_explicit(&e->ann, memory_order_acquire) != atomic_load(&gpd_shim__g.epoch))
    string_announce(e);
  return id;
}
