# Unit tests of the common area (gpd_common).  Included from
# tests/CMakeLists.txt; sources are found relative to this file.
if(NOT CMOCKA_FOUND)
  message(WARNING "cmocka not found: common unit tests not built")
  return()
endif()

set(GPD_COMMON_TEST_DIR ${CMAKE_CURRENT_LIST_DIR}/common)

function(gpd_common_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(test-${name} ${GPD_COMMON_TEST_DIR}/test-${name}.c)
  target_link_libraries(test-${name} PRIVATE gpd_common PkgConfig::CMOCKA)
  set_target_properties(test-${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  add_test(NAME common.${name} COMMAND test-${name})
  set_tests_properties(common.${name} PROPERTIES LABELS "unit" TIMEOUT ${T_TIMEOUT}
                       SKIP_RETURN_CODE ${GPD_SKIP_RC})
endfunction()

gpd_common_test(ring TIMEOUT 300)
gpd_common_test(region)
gpd_common_test(record)
gpd_common_test(intern)
gpd_common_test(hash)
target_link_libraries(test-hash PRIVATE PkgConfig::XXHASH)
gpd_common_test(frame)
gpd_common_test(common-metric)
gpd_common_test(common-log)
gpd_common_test(duty)

# ThreadSanitizer copy of the concurrent ring test: the library sources are
# compiled again into the executable with per-target flags, so the normal
# build stays uninstrumented.  Registered only when the toolchain links a
# -fsanitize=thread program.
include(CheckCSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=thread")
set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=thread")
check_c_source_compiles("int main(void) { return 0; }" GPD_HAVE_TSAN)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(GPD_HAVE_TSAN AND GPD_COMMON_SOURCES AND NOT GPD_ASAN AND NOT GPD_TSAN)
  add_executable(test-ring-tsan ${GPD_COMMON_TEST_DIR}/test-ring.c ${GPD_COMMON_SOURCES})
  target_include_directories(test-ring-tsan PRIVATE ${GPD_COMMON_TEST_DIR}/../../common/include)
  target_compile_definitions(test-ring-tsan PRIVATE RING_TEST_N=1000000u)
  # -O0: GCC 12 at -O1 turns the 64-B slot copies into vector moves that
  # TSan does not see, and then misses a dropped release/acquire pair
  # (checked by hand: with head stored relaxed, -O0 reports, -O1 does not).
  target_compile_options(test-ring-tsan PRIVATE -fsanitize=thread -O0 -g)
  target_link_options(test-ring-tsan PRIVATE -fsanitize=thread)
  target_link_libraries(test-ring-tsan PRIVATE PkgConfig::XXHASH Threads::Threads PkgConfig::CMOCKA m)
  set_target_properties(test-ring-tsan PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  # TSan of GCC 12 cannot run with the 28+ ASLR bits of newer kernels:
  # setarch -R turns ASLR off for the test process only.
  find_program(GPD_SETARCH setarch)
  if(GPD_SETARCH)
    add_test(NAME common.ring-tsan COMMAND ${GPD_SETARCH} ${CMAKE_SYSTEM_PROCESSOR} -R $<TARGET_FILE:test-ring-tsan>)
  else()
    add_test(NAME common.ring-tsan COMMAND test-ring-tsan)
  endif()
  set_tests_properties(common.ring-tsan PROPERTIES LABELS "tsan" TIMEOUT 300
                       ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1 second_deadlock_stack=1"
                       SKIP_RETURN_CODE ${GPD_SKIP_RC})
endif()
