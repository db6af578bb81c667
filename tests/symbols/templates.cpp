// templates.cpp - a call site inside inlined C++ templates (a static member
// of a class template inlined into a function template inlined into a
// plain function), built at -O2 by tests/symbols.cmake; markers "@name" as
// in inline.c.
#include <cstdio>

__attribute__((noinline)) int sink_tmpl(int x) { __asm__ volatile("" ::: "memory"); return x + 4; }

template <typename T> struct Launcher {
  static T run(T x) {
    return static_cast<T>(sink_tmpl(static_cast<int>(x))) * 2; // @run
  }
};

template <typename T> inline T launch(T x) {
  return Launcher<T>::run(x + 1) + 1; // @launch
}

__attribute__((noinline)) float phase_t(float x) {
  return launch<float>(x) * 3; // @phase_t
}

int main(int argc, char **) {
  std::printf("%g\n", static_cast<double>(phase_t(static_cast<float>(argc))));
  return 0;
}
