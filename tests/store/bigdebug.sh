#!/bin/sh
# bigdebug.sh N OUT: a C file of N small functions f_0 .. f_N-1 in one
# compilation unit, and a main (store.symbolize builds it with -g).
awk -v n="$1" 'BEGIN {
  for (i = 0; i < n; i++) printf "int f_%d(int x) { return x * %d + 1; }\n", i, i
  print "int main(void) { return f_0(0); }"
}' > "$2"
