/* store-client.c - a fake shim for the store tests (tests/store/).
 *   store-client hash OUT             write the test binary to OUT, print its hash
 *   store-client gpubin SOCK N        N registered connections upload the test
 *                                     binary at once, chunks interleaved;
 *                                     prints "SENT <hash>"
 *   store-client bins SOCK N SIZE SEED
 *                                     register, upload N distinct binaries of SIZE
 *                                     bytes (contents from SEED), one kernel
 *                                     launch, exit; prints "BIN <hash>" for each
 *   store-client label SOCK PATH BID OFF
 *                                     register, announce module PATH with build-id
 *                                     BID (hex) and one call site OFF (hex) bytes
 *                                     into it, one kernel launch there, exit
 * Every failure exits 2 (daemon-client-lib.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuprof/frame.h"
#include "gpuprof/hash.h"
#include "gpuprof.pb-c.h"

#include "daemon-client-lib.h"

#define BIN_BYTES ((5u << 20) / 2 + 77) /* three 1 MiB chunks */
#define CHUNK (1u << 20)

static unsigned char *make_bin(char hash[33]) {
  unsigned char *b = malloc(BIN_BYTES);
  if (b == NULL)
    exit(2);
  unsigned x = 4242;
  for (size_t i = 0; i < BIN_BYTES; i++)
    b[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
  gpd_hash128_hex(b, BIN_BYTES, hash);
  return b;
}

static void send_chunk_of(int sock, const char *hash, const unsigned char *b, size_t off,
                          size_t total) {
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  Gpuprof__GpuBinary g = GPUPROF__GPU_BINARY__INIT;
  size_t n = total - off < CHUNK ? total - off : CHUNK;
  g.hash = (char *)hash;
  g.kind = "cubin";
  g.total_size = total;
  g.offset = off;
  g.data.data = (uint8_t *)b + off;
  g.data.len = n;
  m.body_case = GPUPROF__MSG__BODY_GPUBIN;
  m.gpubin = &g;
  size_t len = gpuprof__msg__get_packed_size(&m);
  uint8_t *buf = malloc(len);
  if (buf == NULL)
    exit(2);
  gpuprof__msg__pack(&m, buf);
  if (gpd_frame_send(sock, buf, (uint32_t)len, -1, 10000) < 0) {
    fprintf(stderr, "client: send GpuBinary failed\n");
    exit(2);
  }
  free(buf);
}

static void send_chunk(int sock, const char *hash, const unsigned char *b, size_t off) {
  send_chunk_of(sock, hash, b, off, BIN_BYTES);
}

/* one launch of kernel `name` (string 1) at node 1 (module, offset):
 * invoke and activity */
static void one_kernel(gpd_dclient_t *c, const char *name, uint32_t module, uint64_t off) {
  gpd_dclient_string(c, 1, 1, GPD_STR_KERNEL, name);
  gpd_dclient_node(c, 1, 0, module, off);
  uint64_t corr = gpd_dclient_corr(c);
  gpd_rec_invoke_t v;
  gpd_dclient_invoke_init(&v, GPD_OP_KERNEL, 1, corr);
  gpd_dclient_push(&c->ring[0], &v, sizeof v);
  gpd_rec_activity_t a;
  gpd_dclient_activity_init(&a, GPD_OP_KERNEL, corr);
  a.start = 1000;
  a.end = 1100;
  a.name = 1;
  gpd_dclient_push(&c->ring[1], &a, sizeof a);
}

static void bins(const char *sock, int n, size_t size, unsigned seed) {
  gpd_dclient_t c;
  memset(&c, 0, sizeof c);
  gpd_dclient_register(&c, sock);
  unsigned char *b = malloc(size);
  if (b == NULL)
    exit(2);
  for (int k = 0; k < n; k++) {
    unsigned x = seed * 7919u + (unsigned)k * 104729u + 1;
    for (size_t i = 0; i < size; i++)
      b[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
    char hash[33];
    gpd_hash128_hex(b, size, hash);
    for (size_t off = 0; off < size; off += CHUNK)
      send_chunk_of(c.sock, hash, b, off, size);
    printf("BIN %s\n", hash);
  }
  free(b);
  one_kernel(&c, "bin_kernel", 0, 0x10);
  fflush(stdout);
}

static void label(const char *sock, const char *path, const char *bidhex, uint64_t off) {
  gpd_dclient_t c;
  memset(&c, 0, sizeof c);
  gpd_dclient_register(&c, sock);
  uint8_t bid[20];
  unsigned bid_len = 0;
  for (unsigned i = 0; i < 20 && bidhex[2 * i] && bidhex[2 * i + 1]; i++) {
    unsigned v;
    if (sscanf(bidhex + 2 * i, "%2x", &v) != 1)
      break;
    bid[i] = (uint8_t)v;
    bid_len = i + 1;
  }
  gpd_dclient_module_bid(&c, 0, 1, path, bid, bid_len);
  one_kernel(&c, "label_kernel", 1, off);
}

int main(int argc, char **argv) {
  char hash[33];
  if (argc >= 3 && strcmp(argv[1], "hash") == 0) {
    unsigned char *b = make_bin(hash);
    FILE *f = fopen(argv[2], "wb");
    int ok = f != NULL && fwrite(b, 1, BIN_BYTES, f) == BIN_BYTES;
    if (f != NULL && fclose(f) != 0)
      ok = 0;
    free(b);
    if (!ok)
      return 2;
    printf("%s\n", hash);
    return 0;
  }
  if (argc >= 4 && strcmp(argv[1], "gpubin") == 0) {
    int n = atoi(argv[3]);
    if (n < 1 || n > 16)
      return 2;
    unsigned char *b = make_bin(hash);
    gpd_dclient_t c[16];
    memset(c, 0, sizeof c);
    for (int i = 0; i < n; i++) {
      int fd = -1;
      c[i].sock = gpd_dclient_connect(argv[2]);
      gpd_dclient_hello(&c[i], 0, 0, &fd);
      if (fd >= 0)
        close(fd);
    }
    /* every upload is in progress before any completes */
    for (size_t off = 0; off < BIN_BYTES; off += CHUNK)
      for (int i = 0; i < n; i++)
        send_chunk(c[i].sock, hash, b, off);
    printf("SENT %s\n", hash);
    fflush(stdout);
    for (int i = 0; i < n; i++)
      close(c[i].sock);
    free(b);
    return 0;
  }
  if (argc >= 6 && strcmp(argv[1], "bins") == 0) {
    int n = atoi(argv[3]);
    long long size = atoll(argv[4]);
    if (n < 1 || n > 64 || size < 1 || size > (64ll << 20))
      return 2;
    bins(argv[2], n, (size_t)size, (unsigned)atoi(argv[5]));
    return 0;
  }
  if (argc >= 6 && strcmp(argv[1], "label") == 0) {
    label(argv[2], argv[3], argv[4], strtoull(argv[5], NULL, 16));
    return 0;
  }
  fprintf(stderr, "usage: store-client hash OUT | gpubin SOCK N | bins SOCK N SIZE SEED |"
                  " label SOCK PATH BID OFF\n");
  return 2;
}
