/* pthread-wrappers.c - pthread_create, interposed (exported from
 * libgpuprof.so, shim/libgpuprof.map) so that CPU sampling covers every
 * thread the application creates after the shim loaded, not only those
 * that make a GPU call (docs/SHIM.md, "CPU sampling").
 *
 * While CPU sampling is on (GPUPROF_CPU_SAMPLING=HZ, the handler
 * installed, not backed off), a new thread starts in thread_begin: it
 * allocates the thread's capture memo, which starts its CPU-time timer
 * (thread.c, cpu-sampler.c), and then calls the application's start routine
 * as a sibling call, so that its stack shows no shim frame.  The timer is
 * deleted by the memo's pthread key destructor when the thread exits
 * (return, pthread_exit or cancellation), after blocking the signal: no
 * timer outlives its thread, no signal reaches a thread that is leaving.
 *
 * Never hurts the host: with sampling off (the default, GPUPROF_DISABLE,
 * an application that took the signal) the call goes to the next
 * pthread_create unchanged; when the small start block cannot be
 * allocated too; a thread whose memo or timer cannot be made runs
 * unsampled.  No lock is held: a fork at any time is safe (a fork child's
 * threads start their own timers, cpu-sampler.c's fork generation).
 *
 * Threads that existed before the shim was loaded are not enumerated
 * (/proc/self/task): their per-thread state could only be made by
 * themselves (the handler may not allocate) and no key destructor would
 * delete their timers at exit.  Preloaded, the shim's constructor runs
 * before main(), so only threads started by other libraries' constructors
 * are missed; they are sampled from their first capture, as before.
 *
 * A thread that starts with the sampling signal blocked (the caller's
 * mask, or the attribute's, pthread_attr_setsigmask_np) could never take
 * a sample and is left alone: the shim's own threads (connection, vendor
 * collectors) are all made with every signal blocked.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static _Atomic(create_fn) real_create;

/* The next pthread_create (libc's), looked up once; NULL if none. */
static create_fn next_create(void) {
  create_fn f = atomic_load_explicit(&real_create, memory_order_acquire);
  if (__builtin_expect(f != NULL, 1))
    return f;
  *(void **)&f = dlsym(RTLD_NEXT, "pthread_create");
  if (f)
    atomic_store_explicit(&real_create, f, memory_order_release);
  return f;
}

typedef struct thread_start_s {
  void *(*fn)(void *);
  void *arg;
} thread_start_t;

static void *thread_begin(void *p) {
  thread_start_t s = *(thread_start_t *)p;
  free(p);
  gpd_cpu_sampler_thread_begin();
  return s.fn(s.arg); /* a sibling call (-O2): the thread's stack is start_thread -> fn */
}

/* 1 when a thread made with attr now would start with signal sig blocked. */
static int starts_blocked(const pthread_attr_t *attr, int sig) {
  sigset_t m;
#ifdef PTHREAD_ATTR_NO_SIGMASK_NP
  if (attr) {
    int rc = pthread_attr_getsigmask_np(attr, &m);
    if (rc == 0)
      return sigismember(&m, sig) == 1;
    if (rc != PTHREAD_ATTR_NO_SIGMASK_NP)
      return 1; /* cannot tell: leave it alone */
  }
#else
  (void)attr;
#endif
  if (pthread_sigmask(SIG_BLOCK, NULL, &m) != 0)
    return 1;
  return sigismember(&m, sig) == 1;
}

/* Interposed: same contract and return values as pthread_create(3). */
GPD_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  create_fn f = next_create();
  if (!f)
    return EAGAIN; /* no pthread_create after ours: cannot happen with a libc loaded */
  int sig = gpd_cpu_sampler_wanted();
  if (!sig || starts_blocked(attr, sig))
    return f(th, attr, fn, arg);
  thread_start_t *s = malloc(sizeof *s);
  if (!s)
    return f(th, attr, fn, arg); /* unsampled, unchanged */
  s->fn = fn;
  s->arg = arg;
  int rc = f(th, attr, thread_begin, s);
  if (rc != 0)
    free(s); /* no thread: it never ran thread_begin */
  return rc;
}
