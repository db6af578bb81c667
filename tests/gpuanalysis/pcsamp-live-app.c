/* pcsamp-live-app.c - a fake shim process with GPU PC samples, for the
 * live tree / top test (pcsamp-live.sh).  usage: pcsamp-live-app SOCKET
 *
 * Registers with a real gpuprofd and pushes, through its rings:
 *   kernel KNAME launched 3x (100 ns each) at node 3 (main > 0x200 > 0x300)
 *   and 1x (100 ns) at node 4 (main > 0x400): GKER 300 ns and 100 ns;
 *   PCSAMPLE records of KNAME: long_scoreboard 50 + 30, selected 40,
 *   long_scoreboard_not_issued 7 (a subset, not counted), sass:inst_executed
 *   1000 (an execution count, not a sample);
 *   PCSAMPLE records of K2, never launched: long_scoreboard 5.
 * So KNAME's GINST is 120 (GMEM 80, NONE 40, ANY 80), shared 3:1 by GKER:
 * node 3's kernel 90 (GMEM 60, NONE 30), node 4's 30 (GMEM 20, NONE 10).
 * Prints "READY" once everything is pushed, then stays registered until
 * SIGTERM (or 120 s).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon-client-lib.h"

#define KNAME "_Z10pcs_kernelPfi"
#define K2 "_Z9unlaunchedv"
#define MODPATH "/nonexistent/pcsamp-live-app"

static gpd_dclient_t C;

static void launch(uint32_t node) {
  uint64_t corr = gpd_dclient_corr(&C);
  gpd_rec_invoke_t v;
  gpd_dclient_invoke_init(&v, GPD_OP_KERNEL, node, corr);
  v.ts = 1;
  gpd_dclient_push(&C.ring[0], &v, sizeof v);
  gpd_rec_activity_t a;
  gpd_dclient_activity_init(&a, GPD_OP_KERNEL, corr);
  a.start = 1000 * C.corr_n;
  a.end = a.start + 100;
  a.name = 1;
  a.stream = 1;
  a.blocks = 2;
  gpd_dclient_push(&C.ring[1], &a, sizeof a);
}

static void sample(uint32_t func, uint32_t stall, uint64_t pc, uint32_t n) {
  gpd_rec_pcsample_t r;
  memset(&r, 0, sizeof r);
  r.h = (gpd_rec_hdr_t){GPD_REC_PCSAMPLE, GPD_REC_VERSION, GPD_REC_NSLOTS(gpd_rec_pcsample_t), 0, 0};
  r.func = func;
  r.stall = stall;
  r.cubin_id = 0x1234;
  r.pc = pc;
  r.samples = n;
  gpd_dclient_push(&C.ring[1], &r, sizeof r);
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  gpd_dclient_register(&C, argv[1]);
  gpd_dclient_module(&C, 0, 1, MODPATH);
  gpd_dclient_string(&C, 1, 1, GPD_STR_KERNEL, KNAME);
  gpd_dclient_string(&C, 1, 2, GPD_STR_KERNEL, K2);
  gpd_dclient_string(&C, 1, 3, GPD_STR_STALL, "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  gpd_dclient_string(&C, 1, 4, GPD_STR_STALL, "smsp__pcsamp_warps_issue_stalled_selected");
  gpd_dclient_string(&C, 1, 5, GPD_STR_STALL, "sass:inst_executed");
  gpd_dclient_string(&C, 1, 6, GPD_STR_STALL,
                     "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued");
  for (uint32_t i = 1; i <= 3; i++)
    gpd_dclient_node(&C, i, i - 1, 1, 0x100 * i);
  gpd_dclient_node(&C, 4, 1, 1, 0x400);
  for (int i = 0; i < 3; i++)
    launch(3);
  launch(4);
  sample(1, 3, 0x10, 50);
  sample(1, 3, 0x20, 30);
  sample(1, 4, 0x10, 40);
  sample(1, 6, 0x10, 7);
  sample(1, 5, 0x10, 1000);
  sample(2, 3, 0x30, 5);
  printf("READY\n");
  fflush(stdout);
  for (int i = 0; i < 1200; i++) /* until SIGTERM */
    usleep(100000);
  return 0;
}
