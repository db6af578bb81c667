# tests/integration.cmake - end-to-end tests: real shim + real daemon + real
# CLI + PoCL + SQLite.  Each test is tests/integration/<name>.sh BUILD_DIR
# (helpers in lib.sh: deadlines instead of sleeps, every process it started
# killed at exit).  Included from tests/CMakeLists.txt.
set(GPD_IT ${CMAKE_CURRENT_LIST_DIR}/integration)
if(OpenCL_FOUND)
  foreach(prog ocl-steady ocl-mt)
    add_executable(${prog} ${GPD_IT}/${prog}.c)
    target_link_libraries(${prog} PRIVATE OpenCL::OpenCL Threads::Threads)
    target_compile_options(${prog} PRIVATE -O1 -g -fno-omit-frame-pointer -fno-inline)
    set_target_properties(${prog} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/apps)
  endforeach()
endif()
# A program that hands GPU binaries to the shim (as the CUPTI back end does).
add_executable(gpubin-send ${GPD_IT}/gpubin-send.c)
target_include_directories(gpubin-send PRIVATE ${CMAKE_SOURCE_DIR}/shim)
target_link_libraries(gpubin-send PRIVATE gpuprof gpd_common)
set_target_properties(gpubin-send PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/apps)
# A process whose recording back end answers the daemon's Control messages
# (control channel without a GPU: integration.control).
add_executable(ctl-app ${GPD_IT}/ctl-app.c)
target_include_directories(ctl-app PRIVATE ${CMAKE_SOURCE_DIR}/shim)
target_link_libraries(ctl-app PRIVATE ${CMAKE_DL_LIBS})
set_target_properties(ctl-app PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/apps)

# The scripts' own watchdog (GPD_IT_LIMIT) fires before CTest's TIMEOUT, so
# that a hung test still kills what it started.
set(GPD_IT_TESTS gpubin ocl-known clpeak sigkill-app daemon-restart daemon-killed multiproc
    fork-launcher retention python-ctypes live-restart sighup ocl-rect control record-load policy policy-ocl)
foreach(t ${GPD_IT_TESTS})
  add_test(NAME integration.${t} COMMAND bash ${GPD_IT}/${t}.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(integration.${t} PROPERTIES LABELS integration TIMEOUT 240
    SKIP_RETURN_CODE 77
    ENVIRONMENT "POCL_CACHE_DIR=${CMAKE_BINARY_DIR}/pocl-cache;GPD_IT_LIMIT=200")
endforeach()
