/* caller12.c - a library linked against the stand-in libcudart.so.12
 * (fake-cudart.c -DFAKE_CUDART12): its launches must reach that runtime,
 * not the program's libcudart.so.13, through libgpuprof.so's counting
 * wrapper (shim/cupti/cupti-count.c, several runtimes).  Like the stubs
 * nvcc generates for <<<>>>, the launch takes an argument array on this
 * function's stack (so it is no tail call: the wrapper tells the runtimes
 * apart by the object that called it).  Test cupti.count. */
#include <cuda_runtime_api.h>

cudaError_t caller12_launch(const void *f, dim3 g, dim3 b, void **a, size_t smem, cudaStream_t s);
cudaError_t caller12_launch(const void *f, dim3 g, dim3 b, void **a, size_t smem, cudaStream_t s) {
  void *args[2] = {(void *)a, (void *)f};
  return cudaLaunchKernel(f, g, b, a ? a : args, smem, s); /* a is never NULL here */
}
