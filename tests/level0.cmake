# tests/level0.cmake - the shim's Level Zero back end (shim/level0/) with
# Debian's real loader and a fake driver built here (tests/level0/).
# Without libze-dev the back end is not built and these tests do not exist
# (as tests/opencl.cmake does without OpenCL).
if(NOT LEVEL0_FOUND)
  return()
endif()
set(GPD_L0 ${CMAKE_CURRENT_LIST_DIR}/level0)

# The fake driver and its two broken variants (loaded with
# ZE_ENABLE_ALT_DRIVERS=<absolute path>).
foreach(v "" noinit nots)
  set(name fake-ze)
  if(v)
    set(name fake-ze-${v})
  endif()
  add_library(${name} MODULE ${GPD_L0}/fake-ze-driver.c)
  target_include_directories(${name} PRIVATE ${LEVEL0_INCLUDE_DIRS})
  target_link_libraries(${name} PRIVATE Threads::Threads)
  set_target_properties(${name} PROPERTIES PREFIX "lib" C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/level0)
endforeach()
target_compile_definitions(fake-ze-noinit PRIVATE FAKE_ZE_FAIL_INIT)
target_compile_definitions(fake-ze-nots PRIVATE FAKE_ZE_NO_TIMESTAMPS)

add_executable(l0-known ${GPD_L0}/l0-known.c)
target_compile_options(l0-known PRIVATE -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls)
target_link_libraries(l0-known PRIVATE PkgConfig::LEVEL0)
set_target_properties(l0-known PROPERTIES ENABLE_EXPORTS ON RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/apps)
add_dependencies(l0-known fake-ze fake-ze-noinit fake-ze-nots)

# A launch loop, one immediate list per thread (level0.threads and
# bench/bench-level0-overhead.c).
add_executable(l0-loop ${GPD_L0}/l0-loop.c)
target_compile_options(l0-loop PRIVATE -O2 -g -fno-omit-frame-pointer)
target_link_libraries(l0-loop PRIVATE PkgConfig::LEVEL0 Threads::Threads)
set_target_properties(l0-loop PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_dependencies(l0-loop fake-ze)

# Device ticks -> gpuprof clock (pure function, exact numbers).
add_executable(test-level0-clock ${GPD_L0}/test-level0-clock.c ${CMAKE_SOURCE_DIR}/shim/level0/level0-translate.c)
target_include_directories(test-level0-clock PRIVATE ${CMAKE_SOURCE_DIR}/shim ${LEVEL0_INCLUDE_DIRS})
target_link_libraries(test-level0-clock PRIVATE gpd_common)
add_test(NAME level0.clock COMMAND test-level0-clock)
set_tests_properties(level0.clock PROPERTIES LABELS "unit" TIMEOUT 30)

foreach(t known noinit nots nodaemon threads)
  add_test(NAME level0.${t} COMMAND bash ${GPD_L0}/${t}.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(level0.${t} PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77
    ENVIRONMENT "GPD_IT_LIMIT=100")
endforeach()
