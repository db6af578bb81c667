# OpenCL back end of the shim: test applications (also used by the lead's
# daemon-based integration tests) and tests that need no daemon.
if(NOT OpenCL_FOUND)
  return()
endif()
set(GPD_SHIM_APPS ${CMAKE_CURRENT_LIST_DIR}/apps)
set(GPD_APP_FLAGS -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls)

foreach(app ocl-known ocl-threads ocl-loop fork-launcher)
  add_executable(${app} ${GPD_SHIM_APPS}/${app}.c)
  target_compile_options(${app} PRIVATE ${GPD_APP_FLAGS})
  target_include_directories(${app} PRIVATE ${OpenCL_INCLUDE_DIRS})
  target_link_libraries(${app} PRIVATE ${OpenCL_LIBRARIES} Threads::Threads)
  set_target_properties(${app} PROPERTIES ENABLE_EXPORTS ON RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endforeach()

# (1) No daemon: same output, exit 0, exactly one "not profiling" line.
add_test(NAME opencl.nodaemon
  COMMAND ${CMAKE_COMMAND} -DAPP=$<TARGET_FILE:ocl-known> -DSHIM=$<TARGET_FILE:gpuprof>
          -DSOCK=${CMAKE_BINARY_DIR}/no-such-daemon.sock -P ${GPD_SHIM_APPS}/run-nodaemon.cmake)
set_tests_properties(opencl.nodaemon PROPERTIES LABELS "unit" TIMEOUT 120 SKIP_RETURN_CODE 77)

# (3) Interception with a local region: exact counts and bytes.
add_executable(test-opencl ${GPD_SHIM_APPS}/test-opencl.c ${GPD_SHIM_APPS}/ocl-known.c)
target_compile_options(test-opencl PRIVATE ${GPD_APP_FLAGS})
target_compile_definitions(test-opencl PRIVATE OCL_KNOWN_NO_MAIN)
target_include_directories(test-opencl PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../shim ${GPD_SHIM_APPS} ${OpenCL_INCLUDE_DIRS})
# gpuprof before libOpenCL: the interposed cl* definitions win.
target_link_libraries(test-opencl PRIVATE gpuprof gpd_common ${OpenCL_LIBRARIES} Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(test-opencl PROPERTIES ENABLE_EXPORTS ON RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_test(NAME opencl.intercept COMMAND test-opencl)
set_tests_properties(opencl.intercept PROPERTIES LABELS "unit" TIMEOUT 120 SKIP_RETURN_CODE 77
  ENVIRONMENT "GPUPROF_SOCKET=${CMAKE_BINARY_DIR}/no-such-daemon.sock")

# Threads and fork under the shim with no daemon: transparent, exit 0.
add_test(NAME opencl.threads-nodaemon COMMAND ocl-threads 4 50)
add_test(NAME opencl.fork-nodaemon COMMAND fork-launcher 4 20)
set_tests_properties(opencl.threads-nodaemon opencl.fork-nodaemon PROPERTIES LABELS "unit" TIMEOUT 120
  SKIP_RETURN_CODE 77
  ENVIRONMENT "GPUPROF_SOCKET=${CMAKE_BINARY_DIR}/no-such-daemon.sock"
  ENVIRONMENT_MODIFICATION "LD_PRELOAD=path_list_append:$<TARGET_FILE:gpuprof>")

# The loader layer (issue 14): calls through a private dlopen handle, a
# normally linked program (no double counting, interposition fallback), a
# user's own OPENCL_LAYERS kept.  The scripts preload the shim themselves
# (through `gpuprof record`) and add the ASan runtime when the shim needs it.
add_executable(ocl-dlopen ${GPD_SHIM_APPS}/ocl-dlopen.c)
target_compile_options(ocl-dlopen PRIVATE ${GPD_APP_FLAGS})
target_include_directories(ocl-dlopen PRIVATE ${OpenCL_INCLUDE_DIRS})
target_link_libraries(ocl-dlopen PRIVATE ${CMAKE_DL_LIBS}) # not libOpenCL: a private handle only
set_target_properties(ocl-dlopen PROPERTIES ENABLE_EXPORTS ON RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_library(ocl-count-layer MODULE ${CMAKE_CURRENT_LIST_DIR}/opencl/ocl-count-layer.c)
target_include_directories(ocl-count-layer PRIVATE ${OpenCL_INCLUDE_DIRS})
set_target_properties(ocl-count-layer PROPERTIES PREFIX "lib"
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/opencl)
foreach(t dlopen linked user-layers)
  add_test(NAME opencl.${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/opencl/${t}.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(opencl.${t} PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77
    ENVIRONMENT "POCL_CACHE_DIR=${CMAKE_BINARY_DIR}/pocl-cache")
endforeach()

# The in-process interception test with the layer turned off: the
# interposed symbols record (the path a loader without layers takes).
add_test(NAME opencl.intercept-nolayer COMMAND test-opencl)
set_tests_properties(opencl.intercept-nolayer PROPERTIES LABELS "unit" TIMEOUT 120 SKIP_RETURN_CODE 77
  ENVIRONMENT "GPUPROF_SOCKET=${CMAKE_BINARY_DIR}/no-such-daemon.sock;GPUPROF_OPENCL_LAYER=0")

# An in-process OpenCL test (a child attached to a local region, drained by
# the parent: tests/apps/drain.h dr_run_child) run twice: through the loader
# layer as NAME and through the interposed symbols as NAME-nolayer.
function(gpd_ocl_region_test name exe src)
  add_executable(${exe} ${src})
  target_compile_options(${exe} PRIVATE ${GPD_APP_FLAGS})
  target_include_directories(${exe} PRIVATE ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../shim ${GPD_SHIM_APPS}
    ${OpenCL_INCLUDE_DIRS})
  target_link_libraries(${exe} PRIVATE gpuprof gpd_common ${OpenCL_LIBRARIES} Threads::Threads)
  set_target_properties(${exe} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  set(env "GPUPROF_SOCKET=${CMAKE_BINARY_DIR}/no-such-daemon.sock")
  add_test(NAME ${name} COMMAND ${exe})
  add_test(NAME ${name}-nolayer COMMAND ${exe})
  set_tests_properties(${name} ${name}-nolayer PROPERTIES LABELS "unit" TIMEOUT 120 SKIP_RETURN_CODE 77)
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}")
  set_tests_properties(${name}-nolayer PROPERTIES ENVIRONMENT "${env};GPUPROF_OPENCL_LAYER=0")
endfunction()

# The pending lists (issue 13: no callback per command): every command one
# ACTIVITY with device times, harvested at clFinish / clWaitForEvents / a
# blocking read / the list's bound / queue release / exit; the
# application's events and callbacks untouched.  Both routes.
gpd_ocl_region_test(opencl.pending test-ocl-pending ${CMAKE_CURRENT_LIST_DIR}/opencl/test-ocl-pending.c)

# Kernel names through the shim's per-kernel name cache: a handle released
# and made again for another kernel gets its own name (both routes).
gpd_ocl_region_test(opencl.kname test-ocl-kname ${CMAKE_CURRENT_LIST_DIR}/opencl/test-ocl-kname.c)
