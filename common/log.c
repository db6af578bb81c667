/* log.c - leveled logging (log.h). */
#include "gpuprof/log.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

int gpd_log_level = GPD_LOG_WARN;

static _Atomic int log_fd = 2;
static char log_prog[32] = "gpuprof";
static int log_time; /* GPUPROF_LOG_TIME=1: lines start with the UTC time */

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

/** Parse a GPUPROF_LOG value; -1 when unknown. */
static int log_parse_level(const char *s) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (strcasecmp(s, names[i]) == 0)
      return i;
  if (strcasecmp(s, "warning") == 0)
    return GPD_LOG_WARN;
  if (s[0] >= '0' && s[0] <= '3' && s[1] == '\0')
    return s[0] - '0';
  return -1;
}

/** Set the program name shown in lines ("gpuprofd", ...; NULL keeps
 *  "gpuprof") and the level from env GPUPROF_LOG (error|warn|info|debug or
 *  0..3; unknown values are ignored).  Call once at start-up, before other
 *  threads log. */
void gpd_log_init(const char *prog) {
  if (prog && *prog) {
    strncpy(log_prog, prog, sizeof log_prog - 1);
    log_prog[sizeof log_prog - 1] = '\0';
  }
  const char *t = getenv("GPUPROF_LOG_TIME");
  log_time = t && t[0] == '1';
  const char *env = getenv("GPUPROF_LOG");
  if (env) {
    int lvl = log_parse_level(env);
    if (lvl >= 0)
      gpd_log_level = lvl;
  }
}

/** Send log lines to fd (default 2).  The caller keeps ownership. */
void gpd_log_set_fd(int fd) { atomic_store_explicit(&log_fd, fd, memory_order_relaxed); }

/** Format one line "prog[pid] LEVEL: msg\n" and write it with one write(2),
 *  so that lines of concurrent threads do not interleave.  Long messages are
 *  truncated to 1 KiB.  Thread-safe; not async-signal-safe. */
void gpd_log_write(int level, const char *fmt, ...) {
  char line[1024];
  if (level < 0)
    level = 0;
  if (level > GPD_LOG_DEBUG)
    level = GPD_LOG_DEBUG;
  char when[32] = "";
  if (log_time) { /* "HH:MM:SS.mmm " (UTC): a log read without journald's times */
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(when, sizeof when, "%02d:%02d:%02d.%03ld ", tm.tm_hour, tm.tm_min, tm.tm_sec,
             ts.tv_nsec / 1000000);
  }
  int n = snprintf(line, sizeof line, "%s%s[%d] %s: ", when, log_prog, (int)getpid(), level_names[level]);
  if (n < 0)
    return;
  if ((size_t)n >= sizeof line)
    n = sizeof line - 1;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  if (m < 0)
    m = 0;
  size_t len = (size_t)n + (size_t)m;
  if (len > sizeof line - 1)
    len = sizeof line - 1;
  if (len > 0 && line[len - 1] == '\n')
    len--;
  /* A message may quote what a client sent (an exe path, a job id): its
   * control bytes (ESC, CR, a newline that would forge a line) are
   * written as \xNN, so a terminal or a line-based reader of the log sees
   * one plain line per message. */
  static const char hex[] = "0123456789abcdef";
  char out[sizeof line + 64];
  size_t o = 0;
  for (size_t i = 0; i < len && o + 5 < sizeof out; i++) {
    unsigned char c = (unsigned char)line[i];
    if (c >= 0x20 && c != 0x7f) {
      out[o++] = (char)c;
    } else {
      out[o++] = '\\';
      out[o++] = 'x';
      out[o++] = hex[c >> 4];
      out[o++] = hex[c & 15];
    }
  }
  out[o++] = '\n';
  ssize_t w = write(atomic_load_explicit(&log_fd, memory_order_relaxed), out, o);
  (void)w;
}

/** Async-signal-safe: write "prog: msg\n" with write(2) only. */
void gpd_log_signal(const char *msg) {
  int fd = atomic_load_explicit(&log_fd, memory_order_relaxed);
  ssize_t w;
  w = write(fd, log_prog, strlen(log_prog));
  w = write(fd, ": ", 2);
  w = write(fd, msg, strlen(msg));
  w = write(fd, "\n", 1);
  (void)w;
}
