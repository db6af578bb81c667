/* fake-ze-driver.c - a Level Zero driver for tests, loaded by Debian's real
 * loader (libze1 1.8) with ZE_ENABLE_ALT_DRIVERS=/abs/path/libfake-ze.so.
 *
 * One driver, one device.  "Kernels" run on the CPU: a module's input is
 * text "name=ns;name=ns;..." and a launch of kernel `name` sleeps at least
 * `ns` nanoseconds.  Copies and fills really copy and fill.  Commands run
 * in order on a worker thread per command queue (regular lists, at
 * zeCommandQueueExecuteCommandLists) or per immediate list, and signal
 * their event with kernel timestamps in device ticks.
 *
 * Device clock: FAKE_HZ ticks per second, far from the host clock:
 * global ticks = FAKE_TICK0 + (CLOCK_MONOTONIC_RAW ns - start) * HZ / 1e9,
 * kernel timestamps keep the low FAKE_KBITS bits only (as real devices
 * do), so a profiler must convert with the rate, the offset and the wrap.
 *
 * Variants (compile definitions):
 *   FAKE_ZE_FAIL_INIT      zeInit fails (ZE_RESULT_ERROR_UNINITIALIZED)
 *   FAKE_ZE_NO_TIMESTAMPS  no zeDeviceGetGlobalTimestamps and no
 *                          zeEventQueryKernelTimestamp in the DDI tables
 * The native binary of a module is "FAKEZEBIN:" + its input.
 */
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))
#define FAKE_HZ 25000000ull             /* 40 ns per tick */
#define FAKE_TICK0 0x1234500000000ull   /* > 2^32: kernel stamps wrap */
#define FAKE_KBITS 32u
#define FAKE_MAX_KERNELS 16
#define FAKE_MAX_ALLOCS 1024

static uint64_t raw_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t fake_start_ns;
static uint64_t dev_ticks(void) { return FAKE_TICK0 + (raw_ns() - fake_start_ns) * FAKE_HZ / 1000000000ull; }

/* ------------------------------------------------------------- objects */

typedef struct fake_s {
  int magic;
} fake_t;
static fake_t the_driver = {1}, the_device = {2};

typedef struct ev_s {
  int pool_ts; /* pool has ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP */
  _Atomic int signaled;
  uint64_t start, end; /* device ticks */
} ev_t;
typedef struct pool_s {
  uint32_t flags, count;
} pool_t;

typedef struct kernel_s {
  char name[64];
  uint64_t ns;
} kernel_t;
typedef struct module_s {
  char *input;
  size_t len;
  kernel_t kernels[FAKE_MAX_KERNELS];
  int nkernels;
} module_t;

enum { C_KERNEL, C_COPY, C_FILL, C_BARRIER };
typedef struct cmd_s {
  int kind;
  uint64_t ns;
  void *dst;
  const void *src;
  size_t size;
  uint8_t pattern[16];
  size_t psize;
  ev_t *ev;
  ev_t **waits;
  uint32_t nwaits;
} cmd_t;

/* A worker runs commands in order. */
typedef struct worker_s {
  pthread_mutex_t lock;
  pthread_cond_t cv;
  cmd_t *q;
  size_t n, cap, head;
  int busy, stop;
  pthread_t th;
} worker_t;

typedef struct list_s {
  int immediate;
  worker_t *w; /* immediate */
  cmd_t *cmds;
  size_t n, cap;
} list_t;
typedef struct queue_s {
  worker_t w;
} queue_t;

typedef struct alloc_s {
  void *p;
  size_t size;
  ze_memory_type_t type;
} alloc_t;
static alloc_t allocs[FAKE_MAX_ALLOCS];
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;

static void run_cmd(cmd_t *c) {
  for (uint32_t i = 0; i < c->nwaits; i++)
    while (c->waits[i] && !atomic_load(&c->waits[i]->signaled)) {
      struct timespec t = {0, 50000};
      nanosleep(&t, NULL);
    }
  free(c->waits);
  uint64_t s = dev_ticks();
  switch (c->kind) {
  case C_KERNEL: {
    uint64_t until = raw_ns() + c->ns;
    while (raw_ns() < until) {
      uint64_t left = until - raw_ns();
      struct timespec t = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
      nanosleep(&t, NULL);
    }
    break;
  }
  case C_COPY:
    memmove(c->dst, c->src, c->size);
    break;
  case C_FILL:
    for (size_t i = 0; i + c->psize <= c->size; i += c->psize)
      memcpy((char *)c->dst + i, c->pattern, c->psize);
    break;
  default:
    break;
  }
  uint64_t e = dev_ticks();
  if (c->ev) {
    c->ev->start = s;
    c->ev->end = e;
    atomic_store_explicit(&c->ev->signaled, 1, memory_order_release);
  }
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  pthread_mutex_lock(&w->lock);
  for (;;) {
    while (w->head == w->n && !w->stop)
      pthread_cond_wait(&w->cv, &w->lock);
    if (w->head == w->n && w->stop)
      break;
    cmd_t c = w->q[w->head++];
    w->busy = 1;
    pthread_mutex_unlock(&w->lock);
    run_cmd(&c);
    pthread_mutex_lock(&w->lock);
    w->busy = 0;
    if (w->head == w->n)
      w->head = w->n = 0;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

static void worker_init(worker_t *w) {
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->cv, NULL);
  pthread_create(&w->th, NULL, worker_main, w);
}

static void worker_push(worker_t *w, const cmd_t *c) {
  pthread_mutex_lock(&w->lock);
  if (w->n == w->cap) {
    w->cap = w->cap ? w->cap * 2 : 64;
    w->q = realloc(w->q, w->cap * sizeof *w->q);
  }
  w->q[w->n++] = *c;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->lock);
}

static void worker_idle(worker_t *w) {
  pthread_mutex_lock(&w->lock);
  while (w->head != w->n || w->busy)
    pthread_cond_wait(&w->cv, &w->lock);
  pthread_mutex_unlock(&w->lock);
}

static void worker_fini(worker_t *w) {
  pthread_mutex_lock(&w->lock);
  w->stop = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->th, NULL);
  free(w->q);
}

/* ------------------------------------------------------------- driver */

static ze_result_t ZE_APICALL f_init(ze_init_flags_t flags) {
  (void)flags;
#ifdef FAKE_ZE_FAIL_INIT
  return ZE_RESULT_ERROR_UNINITIALIZED;
#else
  if (!fake_start_ns)
    fake_start_ns = raw_ns();
  return ZE_RESULT_SUCCESS;
#endif
}
static ze_result_t ZE_APICALL f_driver_get(uint32_t *n, ze_driver_handle_t *d) {
  if (*n == 0 || !d) {
    *n = 1;
    return ZE_RESULT_SUCCESS;
  }
  *n = 1;
  d[0] = (ze_driver_handle_t)&the_driver;
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_driver_version(ze_driver_handle_t d, ze_api_version_t *v) {
  (void)d;
  *v = ZE_API_VERSION_1_4;
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_driver_props(ze_driver_handle_t d, ze_driver_properties_t *p) {
  (void)d;
  p->driverVersion = 1;
  memset(&p->uuid, 0x5a, sizeof p->uuid);
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_device_get(ze_driver_handle_t drv, uint32_t *n, ze_device_handle_t *d) {
  (void)drv;
  if (*n == 0 || !d) {
    *n = 1;
    return ZE_RESULT_SUCCESS;
  }
  *n = 1;
  d[0] = (ze_device_handle_t)&the_device;
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_device_props(ze_device_handle_t d, ze_device_properties_t *p) {
  (void)d;
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0x8086;
  p->deviceId = 0xfa1e;
  p->coreClockRate = 1000;
  p->maxMemAllocSize = 1ull << 32;
  /* DEVICE_PROPERTIES_1_2: cycles per second; before: ns per cycle */
  p->timerResolution = p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 ? FAKE_HZ : 1000000000ull / FAKE_HZ;
  p->timestampValidBits = 64;
  p->kernelTimestampValidBits = FAKE_KBITS;
  snprintf(p->name, sizeof p->name, "gpuprof fake Level Zero device");
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_device_ts(ze_device_handle_t d, uint64_t *host, uint64_t *dev) {
  (void)d;
  /* The host stamp is on another clock on purpose (CLOCK_REALTIME): the
   * profiler must measure its own offset. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  *dev = dev_ticks();
  *host = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_ctx_create(ze_driver_handle_t d, const ze_context_desc_t *desc,
                                           ze_context_handle_t *c) {
  (void)d, (void)desc;
  *c = (ze_context_handle_t)calloc(1, 16);
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_ctx_destroy(ze_context_handle_t c) {
  free(c);
  return ZE_RESULT_SUCCESS;
}

/* ------------------------------------------------------------- queues, lists */

static ze_result_t ZE_APICALL f_queue_create(ze_context_handle_t c, ze_device_handle_t d,
                                             const ze_command_queue_desc_t *desc, ze_command_queue_handle_t *q) {
  (void)c, (void)d, (void)desc;
  queue_t *x = calloc(1, sizeof *x);
  worker_init(&x->w);
  *q = (ze_command_queue_handle_t)x;
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_queue_destroy(ze_command_queue_handle_t q) {
  queue_t *x = (queue_t *)q;
  worker_fini(&x->w);
  free(x);
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_queue_exec(ze_command_queue_handle_t q, uint32_t n, ze_command_list_handle_t *l,
                                           ze_fence_handle_t f) {
  (void)f;
  queue_t *x = (queue_t *)q;
  for (uint32_t i = 0; i < n; i++) {
    list_t *li = (list_t *)l[i];
    for (size_t j = 0; j < li->n; j++) {
      cmd_t c = li->cmds[j];
      if (c.nwaits) {
        c.waits = malloc(c.nwaits * sizeof *c.waits);
        memcpy(c.waits, li->cmds[j].waits, c.nwaits * sizeof *c.waits);
      }
      worker_push(&x->w, &c);
    }
  }
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_queue_sync(ze_command_queue_handle_t q, uint64_t timeout) {
  (void)timeout;
  worker_idle(&((queue_t *)q)->w);
  return ZE_RESULT_SUCCESS;
}
static list_t *list_new(int imm) {
  list_t *l = calloc(1, sizeof *l);
  l->immediate = imm;
  if (imm) {
    l->w = calloc(1, sizeof *l->w);
    worker_init(l->w);
  }
  return l;
}
static ze_result_t ZE_APICALL f_list_create(ze_context_handle_t c, ze_device_handle_t d,
                                            const ze_command_list_desc_t *desc, ze_command_list_handle_t *l) {
  (void)c, (void)d, (void)desc;
  *l = (ze_command_list_handle_t)list_new(0);
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_list_create_imm(ze_context_handle_t c, ze_device_handle_t d,
                                                const ze_command_queue_desc_t *desc, ze_command_list_handle_t *l) {
  (void)c, (void)d, (void)desc;
  *l = (ze_command_list_handle_t)list_new(1);
  return ZE_RESULT_SUCCESS;
}
static void list_clear(list_t *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->cmds[i].waits);
  l->n = 0;
}
static ze_result_t ZE_APICALL f_list_destroy(ze_command_list_handle_t h) {
  list_t *l = (list_t *)h;
  if (l->w) {
    worker_fini(l->w);
    free(l->w);
  }
  list_clear(l);
  free(l->cmds);
  free(l);
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_list_close(ze_command_list_handle_t h) {
  (void)h;
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_list_reset(ze_command_list_handle_t h) {
  list_clear((list_t *)h);
  return ZE_RESULT_SUCCESS;
}
static ze_result_t list_add(ze_command_list_handle_t h, cmd_t *c, ze_event_handle_t sig, uint32_t nw,
                            ze_event_handle_t *w) {
  list_t *l = (list_t *)h;
  if (!l)
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  c->ev = (ev_t *)sig;
  c->nwaits = nw;
  c->waits = NULL;
  if (nw) {
    c->waits = malloc(nw * sizeof *c->waits);
    memcpy(c->waits, w, nw * sizeof *c->waits);
  }
  if (l->immediate) {
    worker_push(l->w, c);
    return ZE_RESULT_SUCCESS;
  }
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 16;
    l->cmds = realloc(l->cmds, l->cap * sizeof *l->cmds);
  }
  l->cmds[l->n++] = *c;
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_launch(ze_command_list_handle_t l, ze_kernel_handle_t k, const ze_group_count_t *g,
                                       ze_event_handle_t sig, uint32_t nw, ze_event_handle_t *w) {
  (void)g;
  if (!k)
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  cmd_t c = {.kind = C_KERNEL, .ns = ((kernel_t *)k)->ns};
  return list_add(l, &c, sig, nw, w);
}
static ze_result_t ZE_APICALL f_copy(ze_command_list_handle_t l, void *dst, const void *src, size_t size,
                                     ze_event_handle_t sig, uint32_t nw, ze_event_handle_t *w) {
  cmd_t c = {.kind = C_COPY, .dst = dst, .src = src, .size = size};
  return list_add(l, &c, sig, nw, w);
}
static ze_result_t ZE_APICALL f_fill(ze_command_list_handle_t l, void *p, const void *pat, size_t psize,
                                     size_t size, ze_event_handle_t sig, uint32_t nw, ze_event_handle_t *w) {
  if (psize == 0 || psize > 16)
    return ZE_RESULT_ERROR_INVALID_SIZE;
  cmd_t c = {.kind = C_FILL, .dst = p, .size = size, .psize = psize};
  memcpy(c.pattern, pat, psize);
  return list_add(l, &c, sig, nw, w);
}
static ze_result_t ZE_APICALL f_barrier(ze_command_list_handle_t l, ze_event_handle_t sig, uint32_t nw,
                                        ze_event_handle_t *w) {
  cmd_t c = {.kind = C_BARRIER};
  return list_add(l, &c, sig, nw, w);
}

/* ------------------------------------------------------------- events */

static ze_result_t ZE_APICALL f_pool_create(ze_context_handle_t c, const ze_event_pool_desc_t *d, uint32_t nd,
                                            ze_device_handle_t *devs, ze_event_pool_handle_t *p) {
  (void)c, (void)nd, (void)devs;
  pool_t *x = calloc(1, sizeof *x);
  x->flags = d->flags;
  x->count = d->count;
  *p = (ze_event_pool_handle_t)x;
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_pool_destroy(ze_event_pool_handle_t p) {
  free(p);
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_ev_create(ze_event_pool_handle_t p, const ze_event_desc_t *d, ze_event_handle_t *e) {
  pool_t *x = (pool_t *)p;
  if (d->index >= x->count)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ev_t *v = calloc(1, sizeof *v);
  v->pool_ts = (x->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) != 0;
  *e = (ze_event_handle_t)v;
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_ev_destroy(ze_event_handle_t e) {
  free(e);
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_ev_sync(ze_event_handle_t e, uint64_t timeout) {
  ev_t *v = (ev_t *)e;
  uint64_t end = timeout == UINT64_MAX ? UINT64_MAX : raw_ns() + timeout;
  while (!atomic_load_explicit(&v->signaled, memory_order_acquire)) {
    if (raw_ns() >= end)
      return ZE_RESULT_NOT_READY;
    struct timespec t = {0, 50000};
    nanosleep(&t, NULL);
  }
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_ev_query(ze_event_handle_t e) {
  return atomic_load_explicit(&((ev_t *)e)->signaled, memory_order_acquire) ? ZE_RESULT_SUCCESS
                                                                            : ZE_RESULT_NOT_READY;
}
static ze_result_t ZE_APICALL f_ev_reset(ze_event_handle_t e) {
  atomic_store(&((ev_t *)e)->signaled, 0);
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_ev_signal(ze_event_handle_t e) {
  ev_t *v = (ev_t *)e;
  v->start = v->end = dev_ticks();
  atomic_store(&v->signaled, 1);
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_ev_ts(ze_event_handle_t e, ze_kernel_timestamp_result_t *r) {
  ev_t *v = (ev_t *)e;
  if (!v->pool_ts)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!atomic_load_explicit(&v->signaled, memory_order_acquire))
    return ZE_RESULT_NOT_READY;
  uint64_t m = (1ull << FAKE_KBITS) - 1;
  r->global.kernelStart = r->context.kernelStart = v->start & m;
  r->global.kernelEnd = r->context.kernelEnd = v->end & m;
  return ZE_RESULT_SUCCESS;
}

/* ------------------------------------------------------------- modules */

static ze_result_t ZE_APICALL f_module_create(ze_context_handle_t c, ze_device_handle_t d, const ze_module_desc_t *desc,
                                              ze_module_handle_t *m, ze_module_build_log_handle_t *log) {
  (void)c, (void)d;
  if (log)
    *log = NULL;
  if (!desc || !desc->pInputModule || !desc->inputSize)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  module_t *x = calloc(1, sizeof *x);
  x->len = desc->inputSize;
  x->input = malloc(x->len + 1);
  memcpy(x->input, desc->pInputModule, x->len);
  x->input[x->len] = 0;
  char *save = NULL, *copy = strdup(x->input);
  for (char *t = strtok_r(copy, ";", &save); t && x->nkernels < FAKE_MAX_KERNELS; t = strtok_r(NULL, ";", &save)) {
    char *eq = strchr(t, '=');
    if (!eq)
      continue;
    *eq = 0;
    kernel_t *k = &x->kernels[x->nkernels++];
    snprintf(k->name, sizeof k->name, "%s", t);
    k->ns = strtoull(eq + 1, NULL, 10);
  }
  free(copy);
  *m = (ze_module_handle_t)x;
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_module_destroy(ze_module_handle_t m) {
  module_t *x = (module_t *)m;
  free(x->input);
  free(x);
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_module_native(ze_module_handle_t m, size_t *size, uint8_t *out) {
  module_t *x = (module_t *)m;
  static const char tag[] = "FAKEZEBIN:";
  size_t n = sizeof tag - 1 + x->len;
  if (out) {
    if (*size < n)
      return ZE_RESULT_ERROR_INVALID_SIZE;
    memcpy(out, tag, sizeof tag - 1);
    memcpy(out + sizeof tag - 1, x->input, x->len);
  }
  *size = n;
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_kernel_create(ze_module_handle_t m, const ze_kernel_desc_t *d, ze_kernel_handle_t *k) {
  module_t *x = (module_t *)m;
  for (int i = 0; i < x->nkernels; i++)
    if (d && d->pKernelName && strcmp(x->kernels[i].name, d->pKernelName) == 0) {
      kernel_t *y = malloc(sizeof *y);
      *y = x->kernels[i];
      *k = (ze_kernel_handle_t)y;
      return ZE_RESULT_SUCCESS;
    }
  return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
}
static ze_result_t ZE_APICALL f_kernel_destroy(ze_kernel_handle_t k) {
  free(k);
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_kernel_group(ze_kernel_handle_t k, uint32_t x, uint32_t y, uint32_t z) {
  (void)k, (void)x, (void)y, (void)z;
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_kernel_arg(ze_kernel_handle_t k, uint32_t i, size_t n, const void *v) {
  (void)k, (void)i, (void)n, (void)v;
  return ZE_RESULT_SUCCESS;
}

/* ------------------------------------------------------------- memory */

static ze_result_t mem_alloc(size_t size, ze_memory_type_t type, void **p) {
  void *m = aligned_alloc(64, (size + 63) & ~(size_t)63);
  if (!m)
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  pthread_mutex_lock(&alloc_lock);
  for (int i = 0; i < FAKE_MAX_ALLOCS; i++)
    if (!allocs[i].p) {
      allocs[i] = (alloc_t){m, size, type};
      pthread_mutex_unlock(&alloc_lock);
      *p = m;
      return ZE_RESULT_SUCCESS;
    }
  pthread_mutex_unlock(&alloc_lock);
  free(m);
  return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
}
static alloc_t *mem_find(const void *p) {
  for (int i = 0; i < FAKE_MAX_ALLOCS; i++)
    if (allocs[i].p && (const char *)p >= (char *)allocs[i].p && (const char *)p < (char *)allocs[i].p + allocs[i].size)
      return &allocs[i];
  return NULL;
}
static ze_result_t ZE_APICALL f_alloc_dev(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *d, size_t size,
                                          size_t align, ze_device_handle_t dev, void **p) {
  (void)c, (void)d, (void)align, (void)dev;
  return mem_alloc(size, ZE_MEMORY_TYPE_DEVICE, p);
}
static ze_result_t ZE_APICALL f_alloc_host(ze_context_handle_t c, const ze_host_mem_alloc_desc_t *d, size_t size,
                                           size_t align, void **p) {
  (void)c, (void)d, (void)align;
  return mem_alloc(size, ZE_MEMORY_TYPE_HOST, p);
}
static ze_result_t ZE_APICALL f_alloc_shared(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *d,
                                             const ze_host_mem_alloc_desc_t *h, size_t size, size_t align,
                                             ze_device_handle_t dev, void **p) {
  (void)c, (void)d, (void)h, (void)align, (void)dev;
  return mem_alloc(size, ZE_MEMORY_TYPE_SHARED, p);
}
static ze_result_t ZE_APICALL f_free(ze_context_handle_t c, void *p) {
  (void)c;
  pthread_mutex_lock(&alloc_lock);
  alloc_t *a = mem_find(p);
  if (!a || a->p != p) {
    pthread_mutex_unlock(&alloc_lock);
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  a->p = NULL;
  pthread_mutex_unlock(&alloc_lock);
  free(p);
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_alloc_props(ze_context_handle_t c, const void *p, ze_memory_allocation_properties_t *r,
                                            ze_device_handle_t *dev) {
  (void)c;
  pthread_mutex_lock(&alloc_lock);
  alloc_t *a = mem_find(p);
  r->type = a ? a->type : ZE_MEMORY_TYPE_UNKNOWN;
  r->id = a ? (uint64_t)(a - allocs) + 1 : 0;
  r->pageSize = 4096;
  pthread_mutex_unlock(&alloc_lock);
  if (dev)
    *dev = a && a->type != ZE_MEMORY_TYPE_HOST ? (ze_device_handle_t)&the_device : NULL;
  return ZE_RESULT_SUCCESS;
}
static ze_result_t ZE_APICALL f_addr_range(ze_context_handle_t c, const void *p, void **base, size_t *size) {
  (void)c;
  pthread_mutex_lock(&alloc_lock);
  alloc_t *a = mem_find(p);
  if (a) {
    if (base)
      *base = a->p;
    if (size)
      *size = a->size;
  }
  pthread_mutex_unlock(&alloc_lock);
  return a ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

/* ------------------------------------------------------------- DDI tables */

EXPORT ze_result_t ZE_APICALL zeGetGlobalProcAddrTable(ze_api_version_t v, ze_global_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnInit = f_init;
  return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t ZE_APICALL zeGetDriverProcAddrTable(ze_api_version_t v, ze_driver_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnGet = f_driver_get;
  t->pfnGetApiVersion = f_driver_version;
  t->pfnGetProperties = f_driver_props;
  return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t ZE_APICALL zeGetDeviceProcAddrTable(ze_api_version_t v, ze_device_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnGet = f_device_get;
  t->pfnGetProperties = f_device_props;
#ifndef FAKE_ZE_NO_TIMESTAMPS
  t->pfnGetGlobalTimestamps = f_device_ts;
#else
  (void)f_device_ts;
#endif
  return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t ZE_APICALL zeGetContextProcAddrTable(ze_api_version_t v, ze_context_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnCreate = f_ctx_create;
  t->pfnDestroy = f_ctx_destroy;
  return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t ZE_APICALL zeGetCommandQueueProcAddrTable(ze_api_version_t v, ze_command_queue_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnCreate = f_queue_create;
  t->pfnDestroy = f_queue_destroy;
  t->pfnExecuteCommandLists = f_queue_exec;
  t->pfnSynchronize = f_queue_sync;
  return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t ZE_APICALL zeGetCommandListProcAddrTable(ze_api_version_t v, ze_command_list_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnCreate = f_list_create;
  t->pfnCreateImmediate = f_list_create_imm;
  t->pfnDestroy = f_list_destroy;
  t->pfnClose = f_list_close;
  t->pfnReset = f_list_reset;
  t->pfnAppendLaunchKernel = f_launch;
  t->pfnAppendMemoryCopy = f_copy;
  t->pfnAppendMemoryFill = f_fill;
  t->pfnAppendBarrier = f_barrier;
  return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t ZE_APICALL zeGetEventPoolProcAddrTable(ze_api_version_t v, ze_event_pool_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnCreate = f_pool_create;
  t->pfnDestroy = f_pool_destroy;
  return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t ZE_APICALL zeGetEventProcAddrTable(ze_api_version_t v, ze_event_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnCreate = f_ev_create;
  t->pfnDestroy = f_ev_destroy;
  t->pfnHostSynchronize = f_ev_sync;
  t->pfnQueryStatus = f_ev_query;
  t->pfnHostReset = f_ev_reset;
  t->pfnHostSignal = f_ev_signal;
#ifndef FAKE_ZE_NO_TIMESTAMPS
  t->pfnQueryKernelTimestamp = f_ev_ts;
#else
  (void)f_ev_ts;
#endif
  return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t ZE_APICALL zeGetModuleProcAddrTable(ze_api_version_t v, ze_module_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnCreate = f_module_create;
  t->pfnDestroy = f_module_destroy;
  t->pfnGetNativeBinary = f_module_native;
  return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t ZE_APICALL zeGetKernelProcAddrTable(ze_api_version_t v, ze_kernel_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnCreate = f_kernel_create;
  t->pfnDestroy = f_kernel_destroy;
  t->pfnSetGroupSize = f_kernel_group;
  t->pfnSetArgumentValue = f_kernel_arg;
  return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t ZE_APICALL zeGetMemProcAddrTable(ze_api_version_t v, ze_mem_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnAllocDevice = f_alloc_dev;
  t->pfnAllocHost = f_alloc_host;
  t->pfnAllocShared = f_alloc_shared;
  t->pfnFree = f_free;
  t->pfnGetAllocProperties = f_alloc_props;
  t->pfnGetAddressRange = f_addr_range;
  return ZE_RESULT_SUCCESS;
}

/* Tables the loader asks for and this driver leaves empty. */
#define FAKE_EMPTY(getter, type)                                             \
  EXPORT ze_result_t ZE_APICALL getter(ze_api_version_t v, type *t) {        \
    (void)v;                                                                 \
    memset(t, 0, sizeof *t);                                                 \
    return ZE_RESULT_SUCCESS;                                                \
  }
FAKE_EMPTY(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
FAKE_EMPTY(zeGetImageProcAddrTable, ze_image_dditable_t)
FAKE_EMPTY(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
FAKE_EMPTY(zeGetFenceProcAddrTable, ze_fence_dditable_t)
FAKE_EMPTY(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
FAKE_EMPTY(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)
FAKE_EMPTY(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
FAKE_EMPTY(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
FAKE_EMPTY(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)
FAKE_EMPTY(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)
FAKE_EMPTY(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
FAKE_EMPTY(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)
FAKE_EMPTY(zetGetDeviceProcAddrTable, zet_device_dditable_t)
FAKE_EMPTY(zetGetContextProcAddrTable, zet_context_dditable_t)
FAKE_EMPTY(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
FAKE_EMPTY(zetGetModuleProcAddrTable, zet_module_dditable_t)
FAKE_EMPTY(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
FAKE_EMPTY(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
FAKE_EMPTY(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
FAKE_EMPTY(zetGetMetricProcAddrTable, zet_metric_dditable_t)
FAKE_EMPTY(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
FAKE_EMPTY(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
FAKE_EMPTY(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
FAKE_EMPTY(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
FAKE_EMPTY(zetGetDebugProcAddrTable, zet_debug_dditable_t)
FAKE_EMPTY(zesGetDriverProcAddrTable, zes_driver_dditable_t)
FAKE_EMPTY(zesGetDeviceProcAddrTable, zes_device_dditable_t)
FAKE_EMPTY(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
FAKE_EMPTY(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
FAKE_EMPTY(zesGetPowerProcAddrTable, zes_power_dditable_t)
FAKE_EMPTY(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
FAKE_EMPTY(zesGetEngineProcAddrTable, zes_engine_dditable_t)
FAKE_EMPTY(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
FAKE_EMPTY(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
FAKE_EMPTY(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
FAKE_EMPTY(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
FAKE_EMPTY(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
FAKE_EMPTY(zesGetPsuProcAddrTable, zes_psu_dditable_t)
FAKE_EMPTY(zesGetFanProcAddrTable, zes_fan_dditable_t)
FAKE_EMPTY(zesGetLedProcAddrTable, zes_led_dditable_t)
FAKE_EMPTY(zesGetRasProcAddrTable, zes_ras_dditable_t)
FAKE_EMPTY(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)
