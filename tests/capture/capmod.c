/* capmod.c - built twice, as libcapA.so and libcapB.so (same code, same
 * layout, only CAPMOD_NAME differs): a library whose function captures.
 * test-modgen loads one, unloads it and loads the other at its address. */
#include <stdint.h>

uint32_t gpd_shim_capture(void);

const char capmod_name[] = CAPMOD_NAME;

__attribute__((noinline)) uint32_t capmod_work(void) {
  uint32_t id = gpd_shim_capture();
  __asm__ volatile("" ::: "memory"); /* keep this frame (no tail call) */
  return id;
}
