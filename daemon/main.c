/* main.c - gpuprofd: wiring only (arguments, config, threads, signals).
 *
 *   gpuprofd [--socket PATH] [--config FILE] [--state-dir DIR] [--db FILE]
 *            [--foreground] [--exit-when-idle] [--release-on-consume]
 *            [--journal-dir DIR]
 *
 * SIGTERM/SIGINT: stop accepting, drain every ring, persist, release the
 * rings to what was persisted, exit 0 (running processes are stored as
 * 'lost' and can be handed back).  SIGHUP: RELOADING=1, reload the live
 * config fields, READY=1.  A bad configuration: the message on stderr and
 * exit 78 (EX_CONFIG, systemd's RestartPreventExitStatus) before the
 * socket is bound.  SIGPIPE is ignored.  --exit-when-idle (gpuprof
 * record): exit once a process registered and every registered process
 * ended and was flushed.  --release-on-consume (gpuprof record): ring
 * slots go back to the producer as soon as the monitor consumed them
 * (monitor.c), not after the commit: a daemon killed then loses what it
 * had not committed, which no successor of a private recorder re-reads.
 * --journal-dir DIR (gpuprof record): the ring journal is made in
 * DIR/journal rather than beside the database; a private recorder uses
 * it only for the spans of a frozen process (journal-hold.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "config.h"
#include "cpusample.h"
#include "daemon.h"
#include "sizer.h"
#include "notify.h"

#define EXIT_CONFIG 78 /* EX_CONFIG */

static gpd_daemon_t D;
static uv_signal_t sig_term, sig_int, sig_hup;
static uv_timer_t tick;
static int stopping;

static void usage(FILE *f) {
  fprintf(f, "usage: gpuprofd [--socket PATH] [--config FILE] [--state-dir DIR] [--db FILE]\n"
             "                [--foreground] [--exit-when-idle] [--release-on-consume]\n"
             "                [--collect full|detached|duty] [--journal-dir DIR]\n"
             "  The node daemon of gpuprof: profiles the GPU programs that load libgpuprof.so\n"
             "  (calling-context trees, traces, PC samples) and answers gpuprof's queries.\n"
             "  --socket PATH          the control socket (default " GPD_DEFAULT_SOCKET ")\n"
             "  --config FILE          settings (default " GPD_DEFAULT_CONFIG "; docs/SERVICE.md)\n"
             "  --state-dir DIR        where the daemon keeps its state\n"
             "  --db FILE              the profile store (SQLite)\n"
             "  --foreground           log to stderr, do not detach\n"
             "  --exit-when-idle       exit once no process is profiled (gpuprof record)\n"
             "  --release-on-consume   hand each finished profile back and forget it\n"
             "  --journal-dir DIR      make the ring journal in DIR/journal, not beside the store\n"
             "                         (gpuprof record's embedded daemon: its private folder)\n"
             "  --collect MODE         [collect] mode for every process, override sections dropped\n"
             "                         (gpuprof record's embedded daemon: full)\n"
             "  --version              print the version and exit\n"
             "  --help                 this text\n");
}

/* --collect MODE (`gpuprof record`'s embedded daemon: full): [collect]
 * mode for every process, override sections dropped; also after a
 * reload.  0 or -1 (not a mode). */
static const char *collect_forced;
static int collect_force(gpd_config_t *c) {
  char why[200];
  if (!collect_forced)
    return 0;
  c->ncollect_rules = 0;
  return gpd_config_collect_set(c, NULL, "mode", collect_forced, why, sizeof why) ? -1 : 0;
}

/* Create the parents of dir (0755, as system directories are) and dir
 * itself (0700: the state is private). */
static int mkdir_p(const char *dir) {
  char buf[PATH_MAX];
  snprintf(buf, sizeof buf, "%s", dir);
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p != 0)
      continue;
    char c = *p;
    *p = 0;
    if (mkdir(buf, c == 0 ? 0700 : 0755) < 0 && errno != EEXIST)
      return -errno;
    *p = c;
    if (c == 0)
      break;
  }
  return 0;
}

static void begin_stop(const char *why) {
  if (stopping)
    return;
  stopping = 1;
  GPD_INFO("stopping: %s", why);
  gpd_notify_stopping();
  /* a retention pass holds the database in turns with the tracing threads'
   * and the device sampler's writes, which the stop below waits for */
  __atomic_store_n(&D.retain_stop, 1, __ATOMIC_RELAXED);
  D.shutting_down = 1;
  gpd_server_stop(&D);
  gpd_client_close_all(&D);
  uv_signal_stop(&sig_term);
  uv_signal_stop(&sig_int);
  uv_signal_stop(&sig_hup);
  uv_timer_stop(&tick);
  uv_close((uv_handle_t *)&sig_term, NULL);
  uv_close((uv_handle_t *)&sig_int, NULL);
  uv_close((uv_handle_t *)&sig_hup, NULL);
  uv_close((uv_handle_t *)&tick, NULL);
}

static void on_signal(uv_signal_t *s, int signum) {
  (void)s;
  if (signum == SIGHUP) {
    char err[512];
    gpd_notify_reloading();
    /* Reload into a private copy (main is the only writer of D.cfg, so
     * reading it here needs no lock), then publish the live fields under
     * the state lock with atomic stores: the monitor (poll_us) and the
     * writer (flush_ms, retention) read them with atomic loads. */
    gpd_config_t fresh = D.cfg;
    if (gpd_config_reload(&fresh, D.config_path, err, sizeof err) < 0 || collect_force(&fresh) < 0) {
      GPD_ERR("reload failed, keeping the old settings: %s", err);
    } else {
      pthread_mutex_lock(&D.lock);
      memcpy(D.cfg.admin_group, fresh.admin_group, sizeof D.cfg.admin_group);
      __atomic_store_n(&D.cfg.flush_ms, fresh.flush_ms, __ATOMIC_RELAXED);
      __atomic_store_n(&D.cfg.retain_age_s, fresh.retain_age_s, __ATOMIC_RELAXED);
      __atomic_store_n(&D.cfg.retain_bytes, fresh.retain_bytes, __ATOMIC_RELAXED);
      __atomic_store_n(&D.cfg.retain_uid_bytes, fresh.retain_uid_bytes, __ATOMIC_RELAXED);
      __atomic_store_n(&D.cfg.poll_us, fresh.poll_us, __ATOMIC_RELAXED);
      __atomic_store_n(&D.cfg.log_level, fresh.log_level, __ATOMIC_RELAXED);
      atomic_store(&gpd_cpusample_trace_max, fresh.cpu_trace_max);
      pthread_cond_signal(&D.writer_cv); /* a shorter flush interval takes effect now */
      pthread_mutex_unlock(&D.lock);
      if (!getenv("GPUPROF_LOG"))
        gpd_log_level = fresh.log_level;
      /* the collection policy (main thread only): running processes
       * whose resolved policy changed are sent the new one */
      D.cfg.collect = fresh.collect;
      D.cfg.collect_set = fresh.collect_set;
      D.cfg.ncollect_rules = fresh.ncollect_rules;
      memcpy(D.cfg.collect_rules, fresh.collect_rules, sizeof D.cfg.collect_rules);
      unsigned sent = gpd_policy_push_all(&D); /* not inside GPD_INFO: it skips its arguments */
      GPD_INFO("reloaded %s; collection policy sent to %u process(es)", D.config_path, sent);
    }
    gpd_notify_ready();
    return;
  }
  begin_stop(signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void on_tick(uv_timer_t *t) {
  (void)t;
  /* never waits for the lock on the loop thread: a busy monitor pass
   * (seconds while many processes load on a loaded machine) would hold
   * every Hello behind this tick; the next tick trims instead */
  if (gpd_registry_trylock(&D) != 0)
    return;
  gpd_registry_trim(&D, 256);
  unsigned live = gpd_registry_live(&D);
  int idle = D.exit_when_idle && D.had_client && live == 0;
  pthread_mutex_unlock(&D.lock);
  gpd_pcrotate_tick(&D); /* rotating PC-sampling windows (pcrotate.h) */
  gpd_notify_status("%u profiled processes", live);
  if (idle)
    begin_stop("idle (--exit-when-idle)");
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"socket", required_argument, NULL, 's'},  {"config", required_argument, NULL, 'c'},
      {"state-dir", required_argument, NULL, 'S'}, {"db", required_argument, NULL, 'd'},
      {"foreground", no_argument, NULL, 'f'},    {"exit-when-idle", no_argument, NULL, 'x'},
      {"release-on-consume", no_argument, NULL, 'r'}, {"collect", required_argument, NULL, 'C'},
      {"journal-dir", required_argument, NULL, 'J'},
      {"help", no_argument, NULL, 'h'},          {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  const char *sock = NULL, *state_dir = NULL, *db = NULL, *journal_dir = NULL;
  int rc = 1, activated = 0;
  char err[1024];

  gpd_log_init("gpuprofd");
  signal(SIGPIPE, SIG_IGN);
  umask(077); /* every file the daemon creates is private (state, gpubins) */
  snprintf(D.config_path, sizeof D.config_path, "%s", GPD_DEFAULT_CONFIG);
  for (int o; (o = getopt_long(argc, argv, "s:c:S:d:fxrC:J:hV", opts, NULL)) != -1;) {
    switch (o) {
    case 's': sock = optarg; break;
    case 'c':
      snprintf(D.config_path, sizeof D.config_path, "%s", optarg);
      D.config_explicit = 1;
      break;
    case 'S': state_dir = optarg; break;
    case 'd': db = optarg; break;
    case 'f': D.foreground = 1; break;
    case 'x': D.exit_when_idle = 1; break;
    case 'r': D.release_on_consume = 1; break;
    case 'C': collect_forced = optarg; break;
    case 'J': journal_dir = optarg; break;
    case 'h': usage(stdout); return 0;
    case 'V': printf("gpuprofd %s\n", GPD_VERSION); return 0;
    default: usage(stderr); return 2;
    }
  }
  gpd_config_defaults(&D.cfg);
  if (gpd_config_load(&D.cfg, D.config_path, D.config_explicit, err, sizeof err) < 0) {
    fprintf(stderr, "gpuprofd: %s\n", err);
    return EXIT_CONFIG;
  }
  if (collect_force(&D.cfg) < 0) {
    fprintf(stderr, "gpuprofd: --collect %s: expected full, detached or duty\n", collect_forced);
    return EXIT_CONFIG;
  }
  if (!getenv("GPUPROF_LOG"))
    gpd_log_level = D.cfg.log_level;
  atomic_store(&gpd_cpusample_trace_max, D.cfg.cpu_trace_max);
  if (sock == NULL)
    sock = getenv("GPUPROF_SOCKET");
  if (sock && *sock) {
    if (strlen(sock) >= sizeof D.cfg.socket) {
      fprintf(stderr, "gpuprofd: socket path too long: %s\n", sock);
      return 1;
    }
    snprintf(D.cfg.socket, sizeof D.cfg.socket, "%s", sock);
  }
  if (state_dir)
    snprintf(D.cfg.state_dir, sizeof D.cfg.state_dir, "%s", state_dir);
  if (db) {
    snprintf(D.db_path, sizeof D.db_path, "%s", db);
  } else {
    int e = mkdir_p(D.cfg.state_dir);
    if (e < 0) {
      fprintf(stderr, "gpuprofd: state dir %s: %s\n", D.cfg.state_dir, strerror(-e));
      return 1;
    }
    /* refused: a link, another user's directory, or one others can write
     * to (they could plant the database or its -wal) */
    e = gpd_dstore_private_dir(D.cfg.state_dir, 0, err, sizeof err);
    if (e < 0) {
      fprintf(stderr, "gpuprofd: state dir refused: %s\n", err);
      return 1;
    }
    close(e);
    snprintf(D.db_path, sizeof D.db_path, "%s/%s", D.cfg.state_dir, D.cfg.db_name);
  }

  pthread_mutex_init(&D.lock, NULL);
  pthread_mutex_init(&D.reg_lock, NULL);
  if (getenv("GPUPROF_TEST_MONITOR_HOLD") && /* tests only: monitor.c test_hold */
      sscanf(getenv("GPUPROF_TEST_MONITOR_HOLD"), "%u,%u", &D.test_hold_ms, &D.test_hold_procs) != 2)
    D.test_hold_ms = 0;
  D.test_hold_ms %= 10000u;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&D.writer_cv, &ca);
  if (gpd_dstore_open(&D.store, D.db_path) < 0) {
    fprintf(stderr, "gpuprofd: cannot open the profile store %s\n", D.db_path);
    return 1;
  }
  D.next_profile_id = gpd_dstore_first_profile_id(D.store);
  /* the journal sits beside the database, or in --journal-dir; a private
   * recorder without --journal-dir has none (its frozen processes wait) */
  if (journal_dir) {
    (void)gpd_journal_open(&D, journal_dir, GPD_JOURNAL_UID_MAX);
  } else if (!D.release_on_consume) {
    char jdir[sizeof D.db_path];
    snprintf(jdir, sizeof jdir, "%s", D.db_path);
    char *slash = strrchr(jdir, '/');
    if (slash == jdir)
      slash[1] = 0;
    else if (slash)
      *slash = 0;
    else
      snprintf(jdir, sizeof jdir, ".");
    (void)gpd_journal_open(&D, jdir, GPD_JOURNAL_UID_MAX);
  }
  /* the live view goes on across a restart: stored profiles come back */
  (void)gpd_handback_restore(&D, 256);
  D.loop = uv_default_loop();
  /* Signals are caught before the socket exists: a SIGTERM sent as soon as
   * the socket appears (systemd, a test) must stop the daemon cleanly, not
   * kill it while the threads below start.  It is handled once uv_run runs. */
  uv_signal_init(D.loop, &sig_term);
  uv_signal_init(D.loop, &sig_int);
  uv_signal_init(D.loop, &sig_hup);
  uv_signal_start(&sig_term, on_signal, SIGTERM);
  uv_signal_start(&sig_int, on_signal, SIGINT);
  uv_signal_start(&sig_hup, on_signal, SIGHUP);

  int e = gpd_server_start(&D, &activated);
  if (e < 0) {
    fprintf(stderr, "gpuprofd: cannot listen on %s: %s%s\n", D.cfg.socket, gpd_strerror(e),
            e == -EPERM ? " (its directory belongs to another user)" : "");
    goto out;
  }
  if (D.cfg.trace_threads) {
    gpd_trace_cfg_t tc = {.threads = D.cfg.trace_threads,
                          .streams_per_thread = D.cfg.trace_streams_per_thread,
                          .queue_events = D.cfg.trace_queue_events,
                          .flush_ms = D.cfg.trace_flush_ms,
                          .max_events = D.cfg.trace_max_events};
    if ((e = gpd_trace_start(&D.trace, D.db_path, &tc)) < 0)
      GPD_ERR("tracing threads did not start (%s): no traces", gpd_strerror(e));
  }
  /* a private recorder (gpuprof record) symbolizes on its writer, as its
   * saved file must be complete when it exits; it has one user and
   * releases its rings on consume */
  if ((!D.release_on_consume && (e = gpd_symbolizer_start(&D)) < 0) || (e = gpd_monitor_start(&D)) < 0 ||
      (gpd_sizer_start(&D), 0) || (e = gpd_checkpoint_writer_start(&D)) < 0 ||
      (e = gpd_devices_start(&D)) < 0) {
    fprintf(stderr, "gpuprofd: cannot start threads: %s\n", gpd_strerror(e));
    goto out;
  }
  uv_timer_init(D.loop, &tick);
  uv_timer_start(&tick, on_tick, 100, 100);
  GPD_INFO("listening on %s%s, store %s", D.cfg.socket, activated ? " (socket activation)" : "",
           D.db_path);
  gpd_notify_ready();
  uv_run(D.loop, UV_RUN_DEFAULT);
  rc = 0;
out:
  if (!stopping) {
    D.shutting_down = 1;
    gpd_server_stop(&D);
    gpd_client_close_all(&D);
  }
  gpd_devices_stop(&D);
  gpd_monitor_stop(&D);
  gpd_sizer_stop(&D); /* it reads the tracing threads' state */
  /* traces before the writer's last commit, which releases the rings */
  gpd_trace_stop(D.trace);
  D.trace = NULL;
  gpd_checkpoint_writer_stop(&D);
  gpd_sizer_free(&D);
  gpd_symbolizer_stop(&D);
  uv_run(D.loop, UV_RUN_NOWAIT);
  uv_loop_close(D.loop);
  while (D.procs) {
    gpd_proc_t *p = D.procs;
    D.procs = p->next;
    gpd_registry_free_proc(p);
  }
  gpd_registry_fini(&D);
  gpd_dstore_close(D.store);
  gpd_journal_close(&D);
  gpd_symbols_shutdown();
  return rc;
}
