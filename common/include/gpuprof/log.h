/* log.h - leveled logging shared by shim, daemon and CLI.
 *
 * GPD_LOG(level, fmt, ...) checks the level before formatting.  Output:
 * one line "gpuprof[pid] LEVEL: msg" to stderr (or to the sink set with
 * gpd_log_set_fd).  gpd_log_once(key, ...) logs a given key at most once
 * per process (the shim's "log once and carry on").  gpd_log_signal() is
 * async-signal-safe (write(2) of a preformatted string only).
 */
#ifndef GPUPROF_LOG_H
#define GPUPROF_LOG_H

#include <stdarg.h>

enum { GPD_LOG_ERROR = 0, GPD_LOG_WARN = 1, GPD_LOG_INFO = 2, GPD_LOG_DEBUG = 3 };

extern int gpd_log_level; /* default GPD_LOG_WARN; env GPUPROF_LOG=debug|info|warn|error */

void gpd_log_init(const char *prog);      /* reads GPUPROF_LOG, GPUPROF_LOG_TIME */
void gpd_log_set_fd(int fd);
void gpd_log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gpd_log_signal(const char *msg);

#define GPD_LOG(level, ...)                                                  \
  do {                                                                       \
    if ((level) <= gpd_log_level) gpd_log_write((level), __VA_ARGS__);      \
  } while (0)
#define GPD_ERR(...) GPD_LOG(GPD_LOG_ERROR, __VA_ARGS__)
#define GPD_WARN(...) GPD_LOG(GPD_LOG_WARN, __VA_ARGS__)
#define GPD_INFO(...) GPD_LOG(GPD_LOG_INFO, __VA_ARGS__)
#define GPD_DEBUG(...) GPD_LOG(GPD_LOG_DEBUG, __VA_ARGS__)

/** Log once per process per `flag` (a static int the caller owns). */
#define GPD_LOG_ONCE(flag, level, ...)                                       \
  do {                                                                       \
    if (!__atomic_exchange_n(&(flag), 1, __ATOMIC_RELAXED))                  \
      GPD_LOG(level, __VA_ARGS__);                                           \
  } while (0)

#endif
