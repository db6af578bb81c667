# analyzer/ GPU analysis: cubin structure, nvdisasm CFG/loops, GPU calling
# contexts, PC-sample attribution.  The cubin is built by nvcc here (CI has
# nvcc, no GPU); without nvcc the cubin tests SKIP.
if(NOT CMOCKA_FOUND)
  message(WARNING "cmocka not found: gpuanalysis tests not built")
  return()
endif()
set(GPD_GA_DIR ${CMAKE_CURRENT_LIST_DIR}/gpuanalysis)
set(GPD_GA_CUBIN -)
if(NVCC)
  set(GPD_GA_CUBIN ${CMAKE_BINARY_DIR}/gpuanalysis/pcsamp-known.sm_90.cubin)
  add_custom_command(OUTPUT ${GPD_GA_CUBIN}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/gpuanalysis
    COMMAND ${NVCC} -cubin -arch=sm_90 -O3 -lineinfo -DPCSAMP_STRUCTURE_ONLY
            -o ${GPD_GA_CUBIN} ${GPD_GA_DIR}/pcsamp-known.cu
    DEPENDS ${GPD_GA_DIR}/pcsamp-known.cu
    COMMENT "nvcc: pcsamp-known.cu -> cubin (sm_90, -lineinfo)")
  add_custom_target(gpuanalysis-cubins DEPENDS ${GPD_GA_CUBIN})
endif()
add_executable(test-gpu-analysis ${GPD_GA_DIR}/test-gpu-analysis.c)
target_link_libraries(test-gpu-analysis PRIVATE gpd_gpu_analysis PkgConfig::CMOCKA)
set_target_properties(test-gpu-analysis PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
if(NVCC)
  add_dependencies(test-gpu-analysis gpuanalysis-cubins)
endif()
add_test(NAME gpuanalysis.structure
  COMMAND test-gpu-analysis ${GPD_GA_CUBIN} ${GPD_GA_DIR}/pcsamp-known.cu ${GPD_GA_DIR}/fixtures)
set_tests_properties(gpuanalysis.structure PROPERTIES LABELS "unit" TIMEOUT 120
                     SKIP_RETURN_CODE ${GPD_SKIP_RC})
add_test(NAME gpuanalysis.report
  COMMAND ${GPD_GA_DIR}/test-report-gpu.sh $<TARGET_FILE:gpuprof_cli> ${GPD_GA_DIR}/fixtures)
set_tests_properties(gpuanalysis.report PROPERTIES LABELS "integration" TIMEOUT 120
                     SKIP_RETURN_CODE ${GPD_SKIP_RC})
# The daemon side: records -> daemon/pcsample.c -> the store's pcsample tables.
add_executable(test-pcsample-store ${GPD_GA_DIR}/test-pcsample-store.c)
target_link_libraries(test-pcsample-store PRIVATE gpd_daemon_core PkgConfig::CMOCKA)
set_target_properties(test-pcsample-store PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_test(NAME gpuanalysis.pcsample-store COMMAND test-pcsample-store)
set_tests_properties(gpuanalysis.pcsample-store PROPERTIES LABELS "unit" TIMEOUT 120
                     SKIP_RETURN_CODE ${GPD_SKIP_RC})
# The live side: PCSAMPLE records through a real daemon's rings (the fake
# shim of tests/daemon) -> GINST and GINST:STL_* in `gpuprof tree` / `top`.
if(TARGET gpd_dclient AND TARGET gpuprofd)
  add_executable(pcsamp-live-app ${GPD_GA_DIR}/pcsamp-live-app.c)
  target_link_libraries(pcsamp-live-app PRIVATE gpd_dclient)
  add_test(NAME gpuanalysis.pcsample-live
    COMMAND ${GPD_GA_DIR}/pcsamp-live.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(gpuanalysis.pcsample-live PROPERTIES LABELS "integration" TIMEOUT 180
                       SKIP_RETURN_CODE ${GPD_SKIP_RC})
endif()
