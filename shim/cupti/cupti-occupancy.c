/* cupti-occupancy.c - theoretical occupancy of a kernel launch (GKER:OCC_THR).
 *
 * Formula: the one of NVIDIA's CUDA Occupancy Calculator (the spreadsheet
 * shipped with the toolkit, now in Nsight Compute's "Occupancy" section and
 * cudaOccupancyMaxActiveBlocksPerMultiprocessor in cuda_occupancy.h), as the
 * CUDA C++ Best Practices Guide, section "Occupancy" (10.1 "Calculating
 * Occupancy") describes it.  The resident blocks per SM are the smallest of
 *
 *   B_warps = floor(maxWarpsPerSM / W),  W = ceil(blockThreads / warpSize)
 *   B_max   = maxBlocksPerSM
 *   B_regs  = floor(floor(regsPerSM / R) / W) where
 *             R = ceil(regsPerThread * warpSize / 256) * 256
 *             (registers are allocated per warp in units of 256; 0 when a
 *              block needs more than maxRegsPerBlock)
 *   B_smem  = floor(smemPerSM / S) where
 *             S = ceil((staticSmem + dynamicSmem + reservedPerBlock) / G) * G,
 *             G = 128 bytes (cc >= 8.0; 256 before), reservedPerBlock = 1 KiB
 *             on cc >= 8.0 (cudaDevAttrReservedSharedMemoryPerBlock), and
 *             smemPerSM = the carveout the launch ran with
 *             (CUpti_ActivityKernel10.sharedMemoryExecuted) or else the
 *             device maximum; B_smem is unlimited when S is 0.
 *
 * and seed 003 Table 8.6 defines GKER:OCC_THR = active threads per SM /
 * max threads per SM = B * blockThreads / (maxWarpsPerSM * warpSize).
 * Example (a cc 9.0 device: 2048 threads, 64 warps, 32 blocks, 65536 registers,
 * 228 KiB shared memory per SM): 256 threads, 32 regs, no smem -> B_warps 8,
 * B_regs 8 -> 2048/2048 = 1000 permille.
 */
#include "cupti-internal.h"

static uint32_t div_up(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

uint32_t gpd_cupti_occupancy_permille(const gpd_cupti_devprops_t *p, uint32_t block_threads,
                                      uint32_t regs, uint32_t smem, uint32_t smem_config) {
  if (!p || !p->warp_size || !p->max_warps_per_sm || !block_threads) return 0;
  if (p->max_threads_per_sm && block_threads > p->max_threads_per_sm) return 0;
  uint32_t w = div_up(block_threads, p->warp_size);
  uint32_t blocks = p->max_warps_per_sm / w;
  if (p->max_blocks_per_sm && p->max_blocks_per_sm < blocks) blocks = p->max_blocks_per_sm;
  if (regs && p->regs_per_sm) {
    uint32_t per_warp = div_up(regs * p->warp_size, 256) * 256;
    if (p->max_regs_per_block && (uint64_t)per_warp * w > p->max_regs_per_block) return 0;
    uint32_t b = (p->regs_per_sm / per_warp) / w;
    if (b < blocks) blocks = b;
  }
  uint32_t gran = p->cc_major >= 8 ? 128 : 256;
  uint32_t need = smem + p->reserved_smem_per_block;
  uint32_t avail = smem_config ? smem_config : p->smem_per_sm;
  if (need && avail) {
    uint32_t b = avail / (div_up(need, gran) * gran);
    if (b < blocks) blocks = b;
  }
  uint64_t max_threads = (uint64_t)p->max_warps_per_sm * p->warp_size;
  uint64_t active = (uint64_t)blocks * block_threads;
  if (active > max_threads) active = max_threads;
  return (uint32_t)(active * 1000 / max_threads);
}

void gpd_cupti_devprops_from_record(gpd_cupti_devprops_t *p, const CUpti_ActivityDevice5 *d) {
  p->warp_size = d->numThreadsPerWarp;
  p->max_warps_per_sm = d->maxWarpsPerMultiprocessor;
  p->max_threads_per_sm = d->maxWarpsPerMultiprocessor * d->numThreadsPerWarp;
  p->max_blocks_per_sm = d->maxBlocksPerMultiprocessor;
  p->regs_per_sm = d->maxRegistersPerMultiprocessor;
  p->max_regs_per_block = d->maxRegistersPerBlock;
  p->smem_per_sm = d->maxSharedMemoryPerMultiprocessor;
  p->max_smem_per_block = d->maxSharedMemoryPerBlock;
  p->cc_major = d->computeCapabilityMajor;
  p->cc_minor = d->computeCapabilityMinor;
  p->reserved_smem_per_block = p->cc_major >= 8 ? 1024 : 0;
}
