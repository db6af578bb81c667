# shim capture: call paths, module table, intern, signals, longjmp.
# Programs in tests/capture/ link libgpuprof.so and drain a region created
# in the test (tests/apps/drain.h): no daemon.
set(GPD_CAP_DIR ${CMAKE_CURRENT_LIST_DIR}/capture)
set(GPD_CAP_FLAGS -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls)
set(GPD_CAP_LIBDIR ${CMAKE_BINARY_DIR}/tests/capture-libs)

# Two libraries from one source, same code and layout, only the name differs.
foreach(n A B)
  add_library(capmod${n} SHARED ${GPD_CAP_DIR}/capmod.c)
  target_compile_options(capmod${n} PRIVATE ${GPD_CAP_FLAGS})
  target_compile_definitions(capmod${n} PRIVATE CAPMOD_NAME="cap${n}")
  target_link_libraries(capmod${n} PRIVATE gpuprof)
  set_target_properties(capmod${n} PROPERTIES OUTPUT_NAME cap${n} LIBRARY_OUTPUT_DIRECTORY ${GPD_CAP_LIBDIR})
endforeach()
add_library(capvendor SHARED ${GPD_CAP_DIR}/capvendor.c)
target_compile_options(capvendor PRIVATE ${GPD_CAP_FLAGS})
target_link_libraries(capvendor PRIVATE gpuprof)
set_target_properties(capvendor PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${GPD_CAP_LIBDIR})

function(gpd_capture_test name)
  add_executable(test-${name} ${GPD_CAP_DIR}/test-${name}.c)
  target_compile_options(test-${name} PRIVATE ${GPD_CAP_FLAGS})
  target_include_directories(test-${name} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../shim ${CMAKE_CURRENT_LIST_DIR}/apps)
  target_link_libraries(test-${name} PRIVATE gpuprof gpd_common Threads::Threads ${CMAKE_DL_LIBS})
  set_target_properties(test-${name} PROPERTIES
    ENABLE_EXPORTS ON # dladdr resolves the test's functions
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endfunction()

gpd_capture_test(modgen)
add_dependencies(test-modgen capmodA capmodB)
add_test(NAME capture.modgen COMMAND test-modgen ${GPD_CAP_LIBDIR})

gpd_capture_test(cut)
add_dependencies(test-cut capvendor)
add_test(NAME capture.cut COMMAND test-cut ${GPD_CAP_LIBDIR})

gpd_capture_test(reentry)
add_test(NAME capture.reentry COMMAND test-reentry)

set_tests_properties(capture.modgen capture.cut capture.reentry PROPERTIES LABELS "unit" TIMEOUT 60
  SKIP_RETURN_CODE 77 ENVIRONMENT "GPUPROF_SOCKET=${CMAKE_BINARY_DIR}/no-such-daemon.sock")

# A longjmp out of an OpenCL wrapper (real PoCL).  gpuprof before
# libOpenCL: the interposed cl* definitions win.
if(OpenCL_FOUND)
  gpd_capture_test(ocl-longjmp)
  target_include_directories(test-ocl-longjmp PRIVATE ${OpenCL_INCLUDE_DIRS})
  target_link_libraries(test-ocl-longjmp PRIVATE ${OpenCL_LIBRARIES})
  add_test(NAME capture.ocl-longjmp COMMAND test-ocl-longjmp)
  set_tests_properties(capture.ocl-longjmp PROPERTIES LABELS "unit" TIMEOUT 120 SKIP_RETURN_CODE 77
    ENVIRONMENT "GPUPROF_SOCKET=${CMAKE_BINARY_DIR}/no-such-daemon.sock")
endif()
