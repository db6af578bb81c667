# Shim core tests (no daemon needed).  Test programs live in tests/apps/.
set(GPD_SHIM_APPS ${CMAKE_CURRENT_LIST_DIR}/apps)
set(GPD_APP_FLAGS -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls)

add_executable(test-capture ${GPD_SHIM_APPS}/test-capture.c)
target_compile_options(test-capture PRIVATE ${GPD_APP_FLAGS})
target_include_directories(test-capture PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../shim ${GPD_SHIM_APPS})
target_link_libraries(test-capture PRIVATE gpuprof gpd_common Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(test-capture PROPERTIES
  ENABLE_EXPORTS ON # dladdr resolves the test's functions
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_test(NAME shim.capture COMMAND test-capture)
set_tests_properties(shim.capture PROPERTIES LABELS "unit" TIMEOUT 60 SKIP_RETURN_CODE 77
  ENVIRONMENT "GPUPROF_SOCKET=${CMAKE_BINARY_DIR}/no-such-daemon.sock")

# GPUPROF_SHIM_STATS levels: every phase (=1), the outermost only (=outer), none
add_test(NAME shim.stats COMMAND bash ${GPD_SHIM_APPS}/shim-stats.sh $<TARGET_FILE:test-capture>)
set_tests_properties(shim.stats PROPERTIES LABELS "unit" TIMEOUT 60)

add_executable(test-shim-job ${GPD_SHIM_APPS}/test-shim-job.c)
target_include_directories(test-shim-job PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../shim)
target_link_libraries(test-shim-job PRIVATE gpuprof gpd_common)
set_target_properties(test-shim-job PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_test(NAME shim.job COMMAND test-shim-job)
set_tests_properties(shim.job PROPERTIES LABELS "unit" TIMEOUT 30 SKIP_RETURN_CODE 77
  ENVIRONMENT "GPUPROF_SOCKET=${CMAKE_BINARY_DIR}/no-such-daemon.sock")

# Registration + daemon restart hand-back against a fake daemon.
if(OpenCL_FOUND)
  add_executable(test-handback ${GPD_SHIM_APPS}/test-handback.c)
  target_include_directories(test-handback PRIVATE ${GPD_SHIM_APPS})
  target_link_libraries(test-handback PRIVATE gpd_common gpd_proto)
  set_target_properties(test-handback PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  add_test(NAME shim.handback
    COMMAND test-handback ${CMAKE_BINARY_DIR}/shim-handback.sock $<TARGET_FILE:gpuprof> $<TARGET_FILE:ocl-loop>)
  set_tests_properties(shim.handback PROPERTIES LABELS "unit" TIMEOUT 60 SKIP_RETURN_CODE 77)
  # a daemon of another release (HelloReply proto_version 1): refused, not retried
  add_test(NAME shim.oldversion
    COMMAND test-handback ${CMAKE_BINARY_DIR}/shim-oldversion.sock $<TARGET_FILE:gpuprof> $<TARGET_FILE:ocl-loop> oldversion)
  set_tests_properties(shim.oldversion PROPERTIES LABELS "unit" TIMEOUT 150 SKIP_RETURN_CODE 77)
endif()
