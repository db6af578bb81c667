// launch-bound.cu - launch overhead: N launches of an empty kernel on one
// stream, then one synchronize.  Prints "launch_us <µs per launch>" (wall
// time of the launch loop including the final synchronize / N), best of
// REPS repetitions after a warm-up.  Usage: launch-bound [N] [REPS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void empty(void) {}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 100000;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  if (cudaFree(0) != cudaSuccess) { std::printf("no CUDA device\n"); return 2; }
  for (int i = 0; i < 1000; i++) empty<<<1, 1>>>();
  cudaDeviceSynchronize();
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; i++) empty<<<1, 1>>>();
    cudaDeviceSynchronize();
    auto t1 = std::chrono::steady_clock::now();
    double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
    if (us < best) best = us;
  }
  std::printf("launch_us %.3f n=%d reps=%d\n", best, n, reps);
  return 0;
}
