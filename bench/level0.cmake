# Level Zero launch overhead (loop on the tests' fake driver).
if(LEVEL0_FOUND AND TARGET l0-loop)
  add_executable(bench-level0-overhead ${CMAKE_CURRENT_LIST_DIR}/bench-level0-overhead.c)
  set_target_properties(bench-level0-overhead PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  add_dependencies(bench-level0-overhead l0-loop fake-ze gpuprof)
endif()
