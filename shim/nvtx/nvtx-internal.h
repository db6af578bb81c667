/* nvtx-internal.h - what nvtx-api.c (NVTX's callbacks) and nvtx-ranges.c
 * (the per-thread ranges, the splice) share.  Not installed. */
#ifndef GPUPROF_SHIM_NVTX_INTERNAL_H
#define GPUPROF_SHIM_NVTX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include "nvtx.h"

/** Bytes of a range's name kept (UTF-8; longer names are cut at a
 *  character boundary). */
#define GPD_NVTX_NAME_MAX 96
/** Bytes of a domain's name kept. */
#define GPD_NVTX_DOMAIN_NAME_MAX 48
/** A label: "<nvtx> " DOMAIN "::" NAME, NUL-terminated. */
#define GPD_NVTX_LABEL_MAX (8 + GPD_NVTX_DOMAIN_NAME_MAX + 2 + GPD_NVTX_NAME_MAX)
/** Domains (index 0: the default domain; the last one takes every domain
 *  created beyond the others). */
#define GPD_NVTX_DOMAINS 64
/** Distinct labels per process; beyond, a range is named
 *  `<nvtx> [DOMAIN::]<more names>` (the shim's string table is shared
 *  with kernel names and must not be filled by per-iteration names). */
#define GPD_NVTX_LABELS 4096
/** Started ranges open at once, process-wide (nvtxRangeStart*). */
#define GPD_NVTX_STARTS 4096
/** Registered strings (nvtxDomainRegisterString*), process-wide. */
#define GPD_NVTX_STRINGS 4096

/** A range's name as NVTX gives it (one of the three is set). */
typedef struct gpd_nvtx_name_s {
  const char *ascii;
  const wchar_t *wide;
  const char *registered; /* a registered string's text (UTF-8) */
} gpd_nvtx_name_t;

/** Counters (relaxed atomics; gpd_shim__nvtx_counts). */
enum {
  GPD_NVTX_C_PUSH,       /* pushes and starts kept */
  GPD_NVTX_C_DEEP,       /* pushes / starts beyond GPD_NVTX_DEPTH (not kept) */
  GPD_NVTX_C_UNBALANCED, /* pops with no open push of their domain */
  GPD_NVTX_C_END_UNKNOWN, /* ends of ids not open (ended twice, untracked) */
  GPD_NVTX_C_STARTS_FULL, /* starts with no free slot (not kept) */
  GPD_NVTX_C_LABELS_FULL, /* ranges named "<more names>" */
  GPD_NVTX_C_NOSITE,     /* ranges whose push site was not recorded */
  GPD_NVTX_C_N
};
void gpd_nvtx__count(int which);

/** Write the label of a range in domain `dom` (NULL: default) named `nm`
 *  into out[GPD_NVTX_LABEL_MAX]; returns its length. */
size_t gpd_nvtx_label(char *out, const char *dom, const gpd_nvtx_name_t *nm);

/** UTF-8 of wide string w into out[cap] (NUL-terminated, cut at a
 *  character boundary, control characters as '?'); returns the length. */
size_t gpd_nvtx_utf8(char *out, size_t cap, const wchar_t *w);

/** Open a range on the calling thread: start = 0 a push (domain index d;
 *  returns the domain's push level before it, as nvtxRangePush does),
 *  start = 1 a start (returns through *id the range id for
 *  gpd_nvtx_range_end, 0 when not kept).  label: text of len bytes. */
int gpd_nvtx_range_open(unsigned d, int start, const char *label, size_t len, uint64_t *id);
/** Pop the calling thread's innermost push of domain d: the level of the
 *  range ended, or -1 when none is open (counted). */
int gpd_nvtx_range_pop(unsigned d);
/** End started range `id` (any thread). */
void gpd_nvtx_range_end(uint64_t id);

/** The shim's capture of the calling thread's path (gpd_shim_capture):
 *  returns its context node, 0 when none. */
typedef uint32_t (*gpd_nvtx_capture_fn)(void);
/** Per-thread state: the thread-exit key (once, from the back end's init
 *  or the first range), and capture, what records a range's push site
 *  (the back end passes gpd_shim_capture, so that this file does not call
 *  up into capture.c, which splices its ranges).  Any thread. */
void gpd_nvtx_ranges_init(gpd_nvtx_capture_fn capture);
/** Fork child: only the forking thread's ranges remain open. */
void gpd_nvtx_ranges_atfork_child(void);

/** Attach to one NVTX instance (nvtx-wrappers.c's InitializeInjectionNvtx2):
 *  fills its callback slots; 1 attached, 0 not (disabled, unusable table). */
int gpd_nvtx_attach(const void *(*get_export_table)(uint32_t));

#endif
