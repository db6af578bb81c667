/* label-target.c - built twice with a different TARGET_FN: the same code
 * at the same offsets under another name (tests/store/labels.sh). */
#include <stdio.h>
__attribute__((noinline)) int TARGET_FN(int x) { return printf("%d\n", x * 3 + 1); }
int main(int argc, char **argv) { (void)argv; return TARGET_FN(argc) < 0; }
