/* store-client.c - a fake shim for the store tests (tests/store/).
 *   store-client hash OUT             write the test binary to OUT, print its hash
 *   store-client gpubin SOCK N        N registered connections upload the test
 *                                     binary at once, chunks interleaved;
 *                                     prints "SENT <hash>"
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

static void send_chunk(int sock, const char *hash, const unsigned char *b, size_t off) {
  Gpuprof__Msg m = GPUPROF__MSG__INIT;
  Gpuprof__GpuBinary g = GPUPROF__GPU_BINARY__INIT;
  size_t n = BIN_BYTES - off < CHUNK ? BIN_BYTES - off : CHUNK;
  g.hash = (char *)hash;
  g.kind = "cubin";
  g.total_size = BIN_BYTES;
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
  gpd_dclient_string(&c, 1, 1, GPD_STR_KERNEL, "label_kernel");
  gpd_dclient_node(&c, 1, 0, 1, off);
  uint64_t corr = gpd_dclient_corr(&c);
  gpd_rec_invoke_t v;
  gpd_dclient_invoke_init(&v, GPD_OP_KERNEL, 1, corr);
  gpd_dclient_push(&c.ring[0], &v, sizeof v);
  gpd_rec_activity_t a;
  gpd_dclient_activity_init(&a, GPD_OP_KERNEL, corr);
  a.start = 1000;
  a.end = 1100;
  a.name = 1;
  gpd_dclient_push(&c.ring[1], &a, sizeof a);
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
  if (argc >= 6 && strcmp(argv[1], "label") == 0) {
    label(argv[2], argv[3], argv[4], strtoull(argv[5], NULL, 16));
    return 0;
  }
  fprintf(stderr, "usage: store-client hash OUT | gpubin SOCK N | label SOCK PATH BID OFF\n");
  return 2;
}
