/* config.c - gpuprofd settings: one declarative table, read with inih.
 *
 * Every setting is one row of `config_keys` below: section, key, type,
 * [min, max], default, where it lives in gpd_config_t and whether a SIGHUP
 * reload may change it ("live").  Parsing, defaults, reload and the
 * documentation table in docs/SERVICE.md all follow this one table.
 *
 * Value syntax by type:
 *   string    the text after '=', trimmed by inih; must fit the field.
 *   uint      decimal or 0x-hex integer, no sign.
 *   bytes     integer with an optional suffix K, M, G, T (binary: 1024^n;
 *             "KiB"/"KB"/"k" spellings accepted, always binary).
 *   duration  integer with an optional suffix us, ms, s, m, h, d; without a
 *             suffix the number is in the field's own unit (the unit in the
 *             key's name: _ms, _s, _us).
 *   loglevel  error | warn | info | debug (or 0..3).
 *   mode      full | detached | duty ([collect] mode).
 *   percent   a number with at most two decimals and an optional '%':
 *             "1", "0.5%", "3 %"; kept in basis points (1 % = 100).
 *
 * Override sections of [collect] (daemon/policy.c applies them):
 *   [collect "exe=PATTERN"]   executable path, fnmatch(3) (no ']' in it)
 *   [collect "uid=U"]         numeric uid
 *   [collect "job=J"]         job id, exact (SLURM_JOB_ID, ...)
 * each with any of [collect]'s keys; a key it does not name comes from
 * below.  Layers, lowest first: [collect], exe sections, uid sections, job
 * sections (each kind in file order; `gpuprof policy set` adds or changes
 * sections after the file's).  At most GPD_COLLECT_RULES_MAX sections; the
 * result of each section over [collect] is checked (window < period,
 * period_min <= period_max) and a bad one is reported at its first line.
 *
 * Errors: the first bad line wins and is reported as
 *   "FILE:LINE: 'key = value': reason"
 * (or "FILE:LINE: 'text': reason" for a line inih could not split).  The
 * daemon prints it and refuses to start; on reload it keeps the old config.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"

typedef enum {
  CT_STRING,
  CT_UINT,
  CT_BYTES,
  CT_DURATION,
  CT_LOGLEVEL,
  CT_MODE,
  CT_PERCENT,
} conf_type_t;

/* CF_COLLECT: a key of gpd_collect_t (off, size within it; [collect] and
 * its override sections). */
enum { CF_LIVE = 1u, CF_POW2 = 2u, CF_NONEMPTY = 4u, CF_ABSPATH = 8u, CF_COLLECT = 16u };

typedef struct {
  const char *section;
  const char *name;
  conf_type_t type;
  uint64_t min, max;   /* numbers: value range, in the field's unit */
  uint64_t unit_ns;    /* CT_DURATION: ns per unit of the field */
  const char *def;     /* default, parsed with the same rules as the file */
  size_t off, size;    /* field in gpd_config_t */
  unsigned flags;
  const char *doc;     /* one line for docs/SERVICE.md and gpuprofd.conf */
} conf_key_t;

#define F(field) offsetof(gpd_config_t, field), sizeof(((gpd_config_t *)0)->field)
#define FC(field) offsetof(gpd_collect_t, field), sizeof(((gpd_collect_t *)0)->field)
#define NS_US 1000ull
#define NS_MS 1000000ull
#define NS_S 1000000000ull

/* The table.  Keep docs/SERVICE.md and systemd/gpuprofd.conf in step. */
static const conf_key_t config_keys[] = {
    {"daemon", "socket", CT_STRING, 0, 0, 0, GPD_DEFAULT_SOCKET, F(socket),
     CF_NONEMPTY, "control socket path when not socket-activated"},
    {"daemon", "state_dir", CT_STRING, 0, 0, 0, GPD_DEFAULT_STATE_DIR, F(state_dir),
     CF_NONEMPTY | CF_ABSPATH, "profile store directory; env GPUPROF_STATE_DIR wins"},
    {"daemon", "log_level", CT_LOGLEVEL, GPD_LOG_ERROR, GPD_LOG_DEBUG, 0, "warn",
     F(log_level), CF_LIVE, "error, warn, info or debug"},
    {"daemon", "max_clients", CT_UINT, 1, 1u << 20, 0, "4096", F(max_clients), 0,
     "most concurrent socket clients (shims + CLIs)"},
    {"daemon", "max_clients_per_uid", CT_UINT, 1, 1u << 20, 0, "1024", F(max_clients_per_uid), 0,
     "most concurrent connections of one non-root uid"},
    {"daemon", "max_procs_per_uid", CT_UINT, 1, 1u << 20, 0, "1024", F(max_procs_per_uid), 0,
     "most processes of one non-root uid held at once: running, or ended with the profile not stored yet"},
    {"daemon", "clients_reserve", CT_UINT, 0, 1u << 20, 0, "64", F(clients_reserve), 0,
     "last max_clients slots kept for root and light uids"},
    {"daemon", "clients_reserve_per_uid", CT_UINT, 1, 1u << 20, 0, "4",
     F(clients_reserve_per_uid), 0, "a uid holding fewer connections than this may use the reserve"},
    {"daemon", "idle_timeout_ms", CT_DURATION, 100, 86400000, NS_MS, "10000", F(idle_timeout_ms),
     0, "close a connection with no complete frame in or out for this long (not registered shims)"},
    {"daemon", "client_out_max", CT_BYTES, 65536, 1ull << 30, 0, "16M", F(client_out_max), 0,
     "reply bytes queued per connection before the daemon stops reading it"},
    {"daemon", "limit_log_interval_s", CT_DURATION, 1, 86400, NS_S, "60", F(limit_log_interval_s),
     0, "refusals, timeouts and bad frames: one log line per uid and kind per interval"},
    {"store", "db", CT_STRING, 0, 0, 0, "gpuprofd.gpdb", F(db_name), CF_NONEMPTY,
     "SQLite file name, relative to state_dir"},
    {"store", "flush_interval_ms", CT_DURATION, 10, 3600000, NS_MS, "1000", F(flush_ms),
     CF_LIVE, "batch interval of the SQLite writer"},
    {"store", "retention_max_age_s", CT_DURATION, 0, 10ull * 365 * 86400, NS_S, "604800",
     F(retain_age_s), CF_LIVE, "drop stored profiles older than this; 0 = keep"},
    {"store", "retention_max_bytes", CT_BYTES, 0, 1ull << 50, 0, "1G", F(retain_bytes),
     CF_LIVE, "drop oldest profiles above this store size; 0 = no limit"},
    {"store", "retention_uid_max_bytes", CT_BYTES, 0, 1ull << 50, 0, "0", F(retain_uid_bytes),
     CF_LIVE, "one uid's share (profiles, contexts, GPU binaries); above it the uid's oldest go "
     "first; 0 = half of retention_max_bytes"},
    {"store", "cpu_sample_trace_max_rows", CT_UINT, 0, 1ull << 40, 0, "1000000", F(cpu_trace_max),
     CF_LIVE, "most CPU sample trace rows per profile (more: counted, CPUTIME still kept); 0 = none"},
    {"shm", "rings_per_process", CT_UINT, 1, 4096, 0, "64", F(rings), 0,
     "rings (producer threads) per registered process"},
    {"shm", "ring_slots", CT_UINT, 64, 1u << 24, 0, "131072", F(ring_slots), CF_POW2,
     "32-byte slots per ring, power of two"},
    {"access", "admin_group", CT_STRING, 0, 0, 0, "", F(admin_group), CF_LIVE,
     "members see every process; \"\" = root only"},
    {"monitor", "poll_interval_us", CT_DURATION, 10, 1000000, NS_US, "200", F(poll_us),
     CF_LIVE, "idle poll interval of the monitor thread"},
    {"monitor", "threads", CT_UINT, 1, 8, 0, "1", F(monitor_threads), 0,
     "monitor threads draining the rings (processes split between them)"},
    {"devices", "interval_ms", CT_DURATION, 0, 3600000, NS_MS, "1000", F(dev_interval_ms), 0,
     "device and PAPI sampling period; 0 = no device monitoring"},
    {"devices", "nvml_library", CT_STRING, 0, 0, 0, "libnvidia-ml.so.1", F(dev_nvml_lib), 0,
     "NVML library to dlopen; \"\" = no NVML"},
    {"devices", "sysman_library", CT_STRING, 0, 0, 0, "libze_loader.so.1", F(dev_sysman_lib), 0,
     "Level Zero loader to dlopen for Sysman; \"\" = no Sysman"},
    {"devices", "papi_events", CT_STRING, 0, 0, 0, "perf::TASK-CLOCK,perf::CONTEXT-SWITCHES",
     F(dev_papi_events), 0, "PAPI events per profiled process, comma-separated; \"\" = no PAPI"},
    {"devices", "papi_max_procs", CT_UINT, 1, 4096, 0, "256", F(dev_papi_max_procs), 0,
     "most processes PAPI counts at once"},
    {"devices", "max_rows", CT_UINT, 0, 1ull << 40, 0, "1000000", F(dev_max_rows), 0,
     "most stored rows per device series table; 0 = no limit"},
    {"trace", "threads", CT_UINT, 0, 64, 0, "2", F(trace_threads), 0,
     "tracing threads writing per-stream GPU traces; 0 = no traces"},
    {"trace", "streams_per_thread", CT_UINT, 1, 1u << 16, 0, "4", F(trace_streams_per_thread), 0,
     "GPU streams (and CPU threads) given to one tracing thread before the next"},
    {"trace", "queue_events", CT_UINT, 64, 1u << 24, 0, "16384", F(trace_queue_events), CF_POW2,
     "events per hand-off queue (4 queues of 64-byte events per thread); full: dropped, counted"},
    {"trace", "flush_interval_ms", CT_DURATION, 1, 60000, NS_MS, "200", F(trace_flush_ms), 0,
     "how often a tracing thread sorts its window and writes it"},
    {"trace", "max_events_per_profile", CT_UINT, 0, 1ull << 40, 0, "16000000",
     F(trace_max_events), 0, "trace rows kept per profile; beyond, new events are refused; 0 = no limit"},
    /* [collect]: last in the table, in gpd_collect_t's order (the bit of
     * key i in gpd_collect_rule_t.set is its index among these rows). */
    {"collect", "mode", CT_MODE, 0, 2, 0, "duty", FC(mode), CF_LIVE | CF_COLLECT,
     "CUDA collection of attached processes: full, detached or duty (windows)"},
    {"collect", "window_ms", CT_DURATION, 1, 60000, NS_MS, "100", FC(window_ms), CF_LIVE | CF_COLLECT,
     "duty: length of a tracing window"},
    {"collect", "period_ms", CT_DURATION, 2, 3600000, NS_MS, "10000", FC(period_ms), CF_LIVE | CF_COLLECT,
     "duty: window start to window start before the governor has an estimate"},
    {"collect", "period_min_ms", CT_DURATION, 2, 3600000, NS_MS, "500", FC(period_min_ms),
     CF_LIVE | CF_COLLECT, "governor: shortest period it may choose"},
    {"collect", "period_max_ms", CT_DURATION, 2, 3600000, NS_MS, "60000", FC(period_max_ms),
     CF_LIVE | CF_COLLECT, "governor: longest period (the smallest duty: no estimate, over budget)"},
    {"collect", "pc_window_ms", CT_DURATION, 0, 60000, NS_MS, "0", FC(pcs_window_ms), CF_LIVE | CF_COLLECT,
     "rotating PC-sampling window per process (the daemon schedules them, one at a time on the node); 0 = none"},
    {"collect", "pc_period_s", CT_DURATION, 1, 86400, NS_S, "300", FC(pcs_period_s), CF_LIVE | CF_COLLECT,
     "a process is due one PC-sampling window per this period (later when other processes' windows are queued first)"},
    {"collect", "cpu_sample_hz", CT_UINT, 0, 10000, 0, "0", FC(cpu_hz), CF_LIVE | CF_COLLECT,
     "CPU sampling rate of attached processes; 0 = off"},
    {"collect", "budget", CT_PERCENT, 0, 10000, 0, "1%", FC(budget_bp), CF_LIVE | CF_COLLECT,
     "overhead budget per process (estimated slowdown)"},
    {"collect", "governor", CT_UINT, 0, 1, 0, "1", FC(governor), CF_LIVE | CF_COLLECT,
     "1 = size each process's period from its measured cost to hold the budget"},
};
#define NKEYS (sizeof(config_keys) / sizeof(config_keys[0]))
#define COLLECT0 (NKEYS - GPD_COLLECT_NKEYS) /* first [collect] row */
_Static_assert(sizeof(gpd_collect_t) == GPD_COLLECT_NKEYS * sizeof(uint32_t),
               "one row per gpd_collect_t field");

static const char *const mode_names[] = {"full", "detached", "duty"};

static const char *const level_names[] = {"error", "warn", "info", "debug"};

/* ------------------------------------------------------------- values */

/* Parse an unsigned integer prefix; *end gets the first unparsed char. */
static int parse_u64(const char *s, uint64_t *out, const char **end) {
  char *e;
  if (!isdigit((unsigned char)*s)) return -EINVAL;
  errno = 0;
  unsigned long long v = strtoull(s, &e, 0);
  if (errno == ERANGE) return -ERANGE;
  if (e == s) return -EINVAL;
  *out = v;
  *end = e;
  return 0;
}

static int mul_ovf(uint64_t a, uint64_t b, uint64_t *r) {
  return __builtin_mul_overflow(a, b, r) ? -ERANGE : 0;
}

/* Suffix tables: "" is the field's own unit. */
static int parse_bytes(const char *s, uint64_t *out) {
  static const struct { const char *sfx; uint64_t mul; } t[] = {
      {"", 1},           {"b", 1},
      {"k", 1ull << 10}, {"kb", 1ull << 10}, {"kib", 1ull << 10},
      {"m", 1ull << 20}, {"mb", 1ull << 20}, {"mib", 1ull << 20},
      {"g", 1ull << 30}, {"gb", 1ull << 30}, {"gib", 1ull << 30},
      {"t", 1ull << 40}, {"tb", 1ull << 40}, {"tib", 1ull << 40},
  };
  uint64_t v;
  const char *e;
  int err = parse_u64(s, &v, &e);
  if (err) return err;
  while (*e == ' ' || *e == '\t') e++;
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
    if (strcasecmp(e, t[i].sfx) == 0) return mul_ovf(v, t[i].mul, out);
  return -EINVAL;
}

static int parse_duration(const char *s, uint64_t unit_ns, uint64_t *out) {
  static const struct { const char *sfx; uint64_t ns; } t[] = {
      {"us", NS_US}, {"ms", NS_MS}, {"s", NS_S},           {"sec", NS_S},
      {"m", 60 * NS_S}, {"min", 60 * NS_S}, {"h", 3600 * NS_S}, {"d", 86400 * NS_S},
  };
  uint64_t v, ns;
  const char *e;
  int err = parse_u64(s, &v, &e);
  if (err) return err;
  while (*e == ' ' || *e == '\t') e++;
  if (*e == '\0') {
    *out = v;
    return 0;
  }
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    if (strcasecmp(e, t[i].sfx) != 0) continue;
    if (mul_ovf(v, t[i].ns, &ns)) return -ERANGE;
    if (ns % unit_ns) return -EDOM; /* finer than the field's unit */
    *out = ns / unit_ns;
    return 0;
  }
  return -EINVAL;
}

/* Where key k lives: in c, or for a collect key in `coll` (c->collect or
 * an override section's values). */
static char *key_base(const conf_key_t *k, gpd_config_t *c, gpd_collect_t *coll) {
  return (k->flags & CF_COLLECT) ? (char *)coll : (char *)c;
}

/* "1", "0.5%", "3 %" -> basis points. */
static int parse_percent(const char *s, uint64_t *out) {
  uint64_t v, frac = 0;
  const char *e;
  int err = parse_u64(s, &v, &e);
  if (err) return err;
  if (*e == '.') {
    int nd = 0;
    for (e++; isdigit((unsigned char)*e); e++, nd++) {
      if (nd >= 2) return -EDOM;
      frac = frac * 10 + (uint64_t)(*e - '0');
    }
    if (nd == 0) return -EINVAL;
    if (nd == 1) frac *= 10;
  }
  while (*e == ' ' || *e == '\t') e++;
  if (*e == '%') e++;
  if (*e) return -EINVAL;
  if (v > 100000) return -ERANGE;
  *out = v * 100 + frac;
  return 0;
}

static void store_uint(const conf_key_t *k, char *base, uint64_t v) {
  void *p = base + k->off;
  if (k->size == sizeof(uint64_t)) {
    uint64_t x = v;
    memcpy(p, &x, sizeof x);
  } else if (k->type == CT_LOGLEVEL) {
    int x = (int)v;
    memcpy(p, &x, sizeof x);
  } else {
    uint32_t x = (uint32_t)v;
    memcpy(p, &x, sizeof x);
  }
}

/* Parse `value` for key k into c.  On error writes the reason (no file or
 * line) into why and returns GPD_ECONFIG. */
static int key_set(const conf_key_t *k, char *base, const char *value, char *why,
                   size_t whylen) {
  uint64_t v = 0;
  int err = 0;

  switch (k->type) {
  case CT_STRING: {
    size_t n = strlen(value);
    if (n >= k->size) {
      snprintf(why, whylen, "too long (at most %zu bytes)", k->size - 1);
      return GPD_ECONFIG;
    }
    if ((k->flags & CF_NONEMPTY) && n == 0) {
      snprintf(why, whylen, "must not be empty");
      return GPD_ECONFIG;
    }
    if ((k->flags & CF_ABSPATH) && value[0] != '/') {
      snprintf(why, whylen, "must be an absolute path");
      return GPD_ECONFIG;
    }
    memcpy(base + k->off, value, n + 1);
    return 0;
  }
  case CT_LOGLEVEL:
    for (size_t i = 0; i < 4; i++)
      if (strcasecmp(value, level_names[i]) == 0 ||
          (value[0] == (char)('0' + i) && value[1] == '\0')) {
        store_uint(k, base, i);
        return 0;
      }
    snprintf(why, whylen, "expected error, warn, info or debug");
    return GPD_ECONFIG;
  case CT_MODE:
    for (size_t i = 0; i < 3; i++)
      if (strcasecmp(value, mode_names[i]) == 0) {
        store_uint(k, base, i);
        return 0;
      }
    snprintf(why, whylen, "expected full, detached or duty");
    return GPD_ECONFIG;
  case CT_PERCENT:
    err = parse_percent(value, &v);
    break;
  case CT_UINT: {
    const char *e;
    err = parse_u64(value, &v, &e);
    if (!err && *e != '\0') err = -EINVAL;
    break;
  }
  case CT_BYTES:
    err = parse_bytes(value, &v);
    break;
  case CT_DURATION:
    err = parse_duration(value, k->unit_ns, &v);
    break;
  }

  if (err == -EINVAL) {
    snprintf(why, whylen, "%s",
             k->type == CT_BYTES      ? "not a size (number with optional K, M, G, T)"
             : k->type == CT_DURATION ? "not a duration (number with optional us, ms, s, m, h, d)"
             : k->type == CT_PERCENT  ? "not a percentage (number with at most 2 decimals, optional %)"
                                      : "not a number");
    return GPD_ECONFIG;
  }
  if (err == -EDOM) {
    snprintf(why, whylen, "finer than the key's unit");
    return GPD_ECONFIG;
  }
  if (err == -ERANGE || v < k->min || v > k->max) {
    snprintf(why, whylen, "out of range [%" PRIu64 ", %" PRIu64 "]", k->min, k->max);
    return GPD_ECONFIG;
  }
  if ((k->flags & CF_POW2) && (v & (v - 1)) != 0) {
    snprintf(why, whylen, "not a power of two");
    return GPD_ECONFIG;
  }
  store_uint(k, base, v);
  return 0;
}

static const conf_key_t *key_find(const char *section, const char *name, int *section_known) {
  *section_known = 0;
  for (size_t i = 0; i < NKEYS; i++) {
    if (strcmp(config_keys[i].section, section) != 0) continue;
    *section_known = 1;
    if (strcmp(config_keys[i].name, name) == 0) return &config_keys[i];
  }
  return NULL;
}

/* --------------------------------------------------------------- public */

void gpd_config_defaults(gpd_config_t *c) {
  char why[128];
  memset(c, 0, sizeof *c);
  for (size_t i = 0; i < NKEYS; i++) {
    int err = key_set(&config_keys[i], key_base(&config_keys[i], c, &c->collect), config_keys[i].def, why,
                      sizeof why);
    (void)err; /* the compiled-in defaults are valid; test-config checks it */
  }
}

/* Parser state: inih calls our reader once per line and the handler right
 * after it, so `lineno` is the line of the pair being handled. */
typedef struct {
  FILE *f;
  gpd_config_t *c;
  const char *path;
  int lineno;
  int failed;
  char *err;
  size_t errlen;
} parse_ctx_t;

static char *ctx_reader(char *str, int num, void *stream) {
  parse_ctx_t *p = stream;
  char *r = fgets(str, num, p->f);
  if (r) p->lineno++;
  return r;
}

/* ------------------------------------------------ [collect] sections */

/* Parse an override section name: `collect "job=J"` (from the file) or
 * `job=J` (gpuprof policy set).  0, or -EINVAL with why. */
static int rule_parse(const char *sel, uint32_t *kind, char *pat, size_t patlen, char *why,
                      size_t whylen) {
  static const char *const kinds[] = {"exe=", "uid=", "job="};
  size_t n = strlen(sel);
  for (uint32_t k = 0; k < 3; k++) {
    if (strncmp(sel, kinds[k], 4) != 0) continue;
    const char *v = sel + 4;
    n -= 4;
    if (n == 0 || n >= patlen) {
      snprintf(why, whylen, "the %.3s of an override section must have 1..%zu bytes", kinds[k], patlen - 1);
      return -EINVAL;
    }
    for (size_t i = 0; i < n; i++)
      if ((unsigned char)v[i] < 0x20 || v[i] == '"' || v[i] == 0x7f) {
        snprintf(why, whylen, "override section: control character or '\"' in the pattern");
        return -EINVAL;
      }
    if (k == GPD_COLLECT_UID) {
      uint64_t u;
      const char *e;
      if (parse_u64(v, &u, &e) || *e || u >= 0xffffffffull) {
        snprintf(why, whylen, "override section: uid must be a number");
        return -EINVAL;
      }
    }
    *kind = k;
    memcpy(pat, v, n + 1);
    return 0;
  }
  snprintf(why, whylen, "override section must be exe=PATTERN, uid=U or job=J");
  return -EINVAL;
}

/* The override section of (kind, pattern), created when missing.  NULL
 * with why when GPD_COLLECT_RULES_MAX are taken. */
static gpd_collect_rule_t *rule_get(gpd_config_t *c, uint32_t kind, const char *pat, int line, char *why,
                                    size_t whylen) {
  for (uint32_t i = 0; i < c->ncollect_rules; i++)
    if (c->collect_rules[i].kind == kind && strcmp(c->collect_rules[i].pattern, pat) == 0)
      return &c->collect_rules[i];
  if (c->ncollect_rules >= GPD_COLLECT_RULES_MAX) {
    snprintf(why, whylen, "more than %u [collect] override sections", GPD_COLLECT_RULES_MAX);
    return NULL;
  }
  gpd_collect_rule_t *r = &c->collect_rules[c->ncollect_rules++];
  memset(r, 0, sizeof *r);
  r->kind = kind;
  snprintf(r->pattern, sizeof r->pattern, "%s", pat);
  r->line = line;
  return r;
}

/* Keys of r over base (the result of this section over [collect]). */
static void collect_over(gpd_collect_t *out, const gpd_collect_t *base, const gpd_collect_rule_t *r) {
  const uint32_t *src = (const uint32_t *)(const void *)&r->v;
  uint32_t *dst = (uint32_t *)(void *)out;
  *out = *base;
  for (unsigned i = 0; i < GPD_COLLECT_NKEYS; i++)
    if (r->set & (1u << i)) dst[i] = src[i];
}

/* The combination checks a single key cannot make.  0 or -EINVAL, why. */
static int collect_check(const gpd_collect_t *v, char *why, size_t whylen) {
  if (v->window_ms >= v->period_ms) {
    snprintf(why, whylen, "window_ms (%u) must be shorter than period_ms (%u)", v->window_ms, v->period_ms);
    return -EINVAL;
  }
  if (v->period_min_ms > v->period_max_ms) {
    snprintf(why, whylen, "period_min_ms (%u) above period_max_ms (%u)", v->period_min_ms, v->period_max_ms);
    return -EINVAL;
  }
  if (v->window_ms >= v->period_min_ms) {
    snprintf(why, whylen, "window_ms (%u) must be shorter than period_min_ms (%u)", v->window_ms,
             v->period_min_ms);
    return -EINVAL;
  }
  if (v->pcs_window_ms && (uint64_t)v->pcs_window_ms >= (uint64_t)v->pcs_period_s * 1000u) {
    snprintf(why, whylen, "pc_window_ms (%u) must be shorter than pc_period_s (%u s)", v->pcs_window_ms,
             v->pcs_period_s);
    return -EINVAL;
  }
  return 0;
}

/* Every override section over [collect], and [collect] itself: 0, or the
 * bad section's index + 1 (-1: [collect]) with why. */
static int collect_check_all(const gpd_config_t *c, char *why, size_t whylen) {
  gpd_collect_t v;
  if (collect_check(&c->collect, why, whylen)) return -1;
  for (uint32_t i = 0; i < c->ncollect_rules; i++) {
    collect_over(&v, &c->collect, &c->collect_rules[i]);
    if (collect_check(&v, why, whylen)) return (int)i + 1;
  }
  return 0;
}

/* Set collect key k from value in [collect] (r NULL) or section r. */
static int collect_key_set(gpd_config_t *c, gpd_collect_rule_t *r, const conf_key_t *k, const char *value,
                           char *why, size_t whylen) {
  int err = key_set(k, (char *)(r ? &r->v : &c->collect), value, why, whylen);
  if (err) return err;
  if (r)
    r->set |= 1u << (k - &config_keys[COLLECT0]);
  else
    c->collect_set |= 1u << (k - &config_keys[COLLECT0]);
  return 0;
}

static int ctx_handler(void *user, const char *section, const char *name, const char *value) {
  parse_ctx_t *p = user;
  char why[200];
  int known;
  gpd_collect_rule_t *r = NULL;
  if (p->failed) return 1; /* first error wins; keep inih going quietly */
  if (strncmp(section, "collect", 7) == 0 && section[7] != '\0') {
    /* [collect "exe=..."]: inih gives the text between the brackets */
    const char *q = section + 7;
    size_t n;
    char sel[300];
    uint32_t kind;
    char pat[sizeof r->pattern];
    while (*q == ' ' || *q == '\t') q++;
    n = strlen(q);
    if (n < 2 || q[0] != '"' || q[n - 1] != '"' || n - 2 >= sizeof sel) {
      snprintf(why, sizeof why, "override section must read [collect \"exe=PATTERN\"], "
                                "[collect \"uid=U\"] or [collect \"job=J\"]");
      goto bad;
    }
    memcpy(sel, q + 1, n - 2);
    sel[n - 2] = '\0';
    if (rule_parse(sel, &kind, pat, sizeof pat, why, sizeof why)) goto bad;
    if (!(r = rule_get(p->c, kind, pat, p->lineno, why, sizeof why))) goto bad;
    section = "collect";
  }
  const conf_key_t *k = key_find(section, name, &known);
  if (!k) {
    if (!known)
      snprintf(why, sizeof why, "unknown section [%s]", section);
    else
      snprintf(why, sizeof why, "unknown key '%s' in [%s]", name, section);
  } else if (k->flags & CF_COLLECT) {
    if (collect_key_set(p->c, r, k, value, why, sizeof why) == 0) return 1;
  } else if (key_set(k, (char *)p->c, value, why, sizeof why) == 0) {
    return 1;
  }
bad:
  p->failed = p->lineno;
  snprintf(p->err, p->errlen, "%s:%d: '%s = %s': %s", p->path, p->lineno, name, value, why);
  return 0;
}

/* Text of line `n` of `path`, newline stripped, for syntax errors. */
static void line_text(const char *path, int n, char *out, size_t outlen) {
  FILE *f = fopen(path, "re");
  char buf[1024];
  out[0] = '\0';
  if (!f) return;
  for (int i = 1; fgets(buf, sizeof buf, f); i++) {
    if (i < n) continue;
    size_t len = strcspn(buf, "\r\n");
    if (len >= outlen) len = outlen - 1; /* long lines are cut, on purpose */
    memcpy(out, buf, len);
    out[len] = '\0';
    break;
  }
  fclose(f);
}

static int config_apply_env(gpd_config_t *c, char *err, size_t errlen) {
  const char *sd = getenv("GPUPROF_STATE_DIR");
  if (!sd || !*sd) return 0;
  size_t n = strlen(sd);
  if (n >= sizeof c->state_dir) {
    if (err && errlen) snprintf(err, errlen, "GPUPROF_STATE_DIR: too long");
    return GPD_ECONFIG;
  }
  memcpy(c->state_dir, sd, n + 1);
  return 0;
}

int gpd_config_load(gpd_config_t *c, const char *path, int explicit_path, char *err,
                    size_t errlen) {
  char dummy[8];
  parse_ctx_t p = {0};
  int rc;

  if (!c) return -EINVAL;
  if (!err || errlen == 0) {
    err = dummy;
    errlen = sizeof dummy;
  }
  err[0] = '\0';
  if (!path) path = GPD_DEFAULT_CONFIG;

  p.f = fopen(path, "re");
  if (!p.f) {
    int e = errno;
    if (e == ENOENT && !explicit_path) return config_apply_env(c, err, errlen);
    snprintf(err, errlen, "%s: %s", path, strerror(e));
    return GPD_ECONFIG;
  }
  p.c = c;
  p.path = path;
  p.err = err;
  p.errlen = errlen;
  rc = ini_parse_stream(ctx_reader, &p, ctx_handler, &p);
  fclose(p.f);

  /* rc: 0, -1 (open), -2 (memory) or the line of the first error, which is
   * either ours (p.failed) or a line inih could not parse. */
  if (rc < 0) {
    snprintf(err, errlen, "%s: %s", path, rc == -2 ? "out of memory" : "cannot read");
    return GPD_ECONFIG;
  }
  if (rc > 0 && (!p.failed || rc < p.failed)) {
    char text[256];
    line_text(path, rc, text, sizeof text);
    snprintf(err, errlen, "%s:%d: '%s': syntax error (expected [section] or key = value)",
             path, rc, text);
    return GPD_ECONFIG;
  }
  if (p.failed) return GPD_ECONFIG;
  {
    char why[200];
    int bad = collect_check_all(c, why, sizeof why);
    if (bad == -1) {
      snprintf(err, errlen, "%s: [collect]: %s", path, why);
      return GPD_ECONFIG;
    }
    if (bad > 0) {
      const gpd_collect_rule_t *r = &c->collect_rules[bad - 1];
      snprintf(err, errlen, "%s:%d: [collect \"%s=%s\"]: %s", path, r->line,
               r->kind == GPD_COLLECT_EXE ? "exe" : r->kind == GPD_COLLECT_UID ? "uid" : "job", r->pattern,
               why);
      return GPD_ECONFIG;
    }
  }
  return config_apply_env(c, err, errlen);
}

int gpd_config_reload(gpd_config_t *live, const char *path, char *err, size_t errlen) {
  gpd_config_t fresh;
  int rc;

  if (!live) return -EINVAL;
  /* Start from defaults so that a key removed from the file returns to its
   * default; a missing file at the default path means "all defaults". */
  gpd_config_defaults(&fresh);
  if (!path) path = GPD_DEFAULT_CONFIG;
  rc = gpd_config_load(&fresh, path, strcmp(path, GPD_DEFAULT_CONFIG) != 0, err, errlen);
  if (rc) return rc;
  for (size_t i = 0; i < NKEYS; i++) {
    const conf_key_t *k = &config_keys[i];
    if ((k->flags & CF_LIVE) && !(k->flags & CF_COLLECT))
      memcpy((char *)live + k->off, (const char *)&fresh + k->off, k->size);
  }
  /* the collection policy as a whole (run-time changes are dropped) */
  live->collect = fresh.collect;
  live->collect_set = fresh.collect_set;
  live->ncollect_rules = fresh.ncollect_rules;
  memcpy(live->collect_rules, fresh.collect_rules, sizeof live->collect_rules);
  return 0;
}

int gpd_config_collect_set(gpd_config_t *c, const char *rule, const char *key, const char *value,
                           char *why, size_t whylen) {
  int known;
  const conf_key_t *k;
  gpd_config_t *t = NULL;
  gpd_collect_rule_t *r = NULL;
  int err = GPD_ECONFIG;
  if (!c || !key || !value || !why) return -EINVAL;
  k = key_find("collect", key, &known);
  if (!k) {
    snprintf(why, whylen, "unknown policy key '%s' (see gpuprof policy)", key);
    return GPD_ECONFIG;
  }
  /* on a copy, so that a refused change leaves nothing behind */
  t = malloc(sizeof *t);
  if (!t) return -ENOMEM;
  memcpy(t, c, sizeof *t);
  if (rule && *rule) {
    uint32_t kind;
    char pat[sizeof r->pattern];
    if (rule_parse(rule, &kind, pat, sizeof pat, why, whylen)) goto out;
    if (!(r = rule_get(t, kind, pat, 0, why, whylen))) {
      err = -ENOSPC;
      goto out;
    }
    r->runtime = 1;
  }
  if (collect_key_set(t, r, k, value, why, whylen)) goto out;
  if (collect_check_all(t, why, whylen)) goto out;
  memcpy(c, t, sizeof *t);
  err = 0;
out:
  free(t);
  return err;
}

const char *gpd_config_collect_key(unsigned i) {
  return i < GPD_COLLECT_NKEYS ? config_keys[COLLECT0 + i].name : NULL;
}

void gpd_config_collect_value(const gpd_collect_t *v, unsigned i, char *out, size_t n) {
  if (!out || !n) return;
  out[0] = '\0';
  if (!v || i >= GPD_COLLECT_NKEYS) return;
  const conf_key_t *k = &config_keys[COLLECT0 + i];
  uint32_t x;
  memcpy(&x, (const char *)v + k->off, sizeof x);
  if (k->type == CT_MODE)
    snprintf(out, n, "%s", x < 3 ? mode_names[x] : "?");
  else if (k->type == CT_PERCENT)
    snprintf(out, n, "%u.%02u%%", x / 100, x % 100);
  else
    snprintf(out, n, "%u", x);
}

/* ------------------------------------------------------- introspection */

size_t gpd_config_nkeys(void) { return NKEYS; }

int gpd_config_key_describe(size_t i, char *out, size_t outlen) {
  if (i >= NKEYS || !out) return -EINVAL;
  const conf_key_t *k = &config_keys[i];
  static const char *const tn[] = {"string", "uint", "bytes", "duration", "loglevel", "mode", "percent"};
  int n = snprintf(out, outlen, "| [%s] | %s | %s | %s | ", k->section, k->name, tn[k->type],
                   k->def[0] ? k->def : "\"\"");
  if (k->type == CT_STRING || k->type == CT_LOGLEVEL || k->type == CT_MODE)
    n += snprintf(out + n, n < (int)outlen ? outlen - n : 0, "-");
  else if (k->type == CT_PERCENT)
    n += snprintf(out + n, n < (int)outlen ? outlen - n : 0, "%" PRIu64 "%%..%" PRIu64 "%%", k->min / 100,
                  k->max / 100);
  else
    n += snprintf(out + n, n < (int)outlen ? outlen - n : 0, "%" PRIu64 "..%" PRIu64, k->min,
                  k->max);
  snprintf(out + n, n < (int)outlen ? outlen - n : 0, " | %s | %s |",
           (k->flags & CF_LIVE) ? "yes" : "no", k->doc);
  return 0;
}
