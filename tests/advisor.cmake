# analyzer/advisor*: the GPA-style advisor (docs/ADVISOR.md).  Synthetic
# SASS with known blame and estimates, the occupancy calculator, bad
# input, the control bits of the stored H100 cubin; `gpuprof advise` on the
# stored H100 profile.  No GPU, no nvdisasm needed.
if(NOT CMOCKA_FOUND)
  message(WARNING "cmocka not found: advisor tests not built")
  return()
endif()
set(GPD_ADV_DIR ${CMAKE_CURRENT_LIST_DIR}/advisor)
add_executable(test-advisor ${GPD_ADV_DIR}/test-advisor.c)
target_link_libraries(test-advisor PRIVATE gpd_gpu_analysis PkgConfig::CMOCKA m)
set_target_properties(test-advisor PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_test(NAME advisor.unit COMMAND test-advisor ${CMAKE_CURRENT_LIST_DIR}/gpuanalysis/fixtures)
set_tests_properties(advisor.unit PROPERTIES LABELS "unit" TIMEOUT 60
                     SKIP_RETURN_CODE ${GPD_SKIP_RC})
add_test(NAME advisor.cli
  COMMAND ${GPD_ADV_DIR}/test-advise-cli.sh $<TARGET_FILE:gpuprof_cli>
          ${CMAKE_CURRENT_LIST_DIR}/gpuanalysis/fixtures)
set_tests_properties(advisor.cli PROPERTIES LABELS "integration" TIMEOUT 180
                     SKIP_RETURN_CODE ${GPD_SKIP_RC})
# tests/advisor/eval-suite.py (the validation suite's scoring, issue 25) on
# the stored H100 profiles, advised again with this gpuprof.
add_test(NAME advisor.suite-eval
  COMMAND ${GPD_ADV_DIR}/test-suite-eval.sh $<TARGET_FILE:gpuprof_cli> ${CMAKE_CURRENT_LIST_DIR})
set_tests_properties(advisor.suite-eval PROPERTIES LABELS "integration" TIMEOUT 180
                     SKIP_RETURN_CODE ${GPD_SKIP_RC})
# The suite's stored H200 run (docs/validation/2026-12-02-advisor-suite.tgz)
# advised again by this gpuprof: every pair's numbers.
add_test(NAME advisor.suite-h200
  COMMAND ${GPD_ADV_DIR}/test-suite-h200.sh $<TARGET_FILE:gpuprof_cli> ${CMAKE_SOURCE_DIR})
set_tests_properties(advisor.suite-h200 PROPERTIES LABELS "integration" TIMEOUT 180
                     SKIP_RETURN_CODE ${GPD_SKIP_RC})
# The validation suite as nvcc builds it for sm_90 (at build time: ptxas's
# -v report) still carries each designed defect (check-suite-build.py).
set(GPD_ADV_PTXAS -)
if(NVCC)
  set(GPD_ADV_PTXAS ${CMAKE_BINARY_DIR}/advisor/advise-suite.ptxas.txt)
  add_custom_command(OUTPUT ${GPD_ADV_PTXAS}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/advisor
    COMMAND python3 ${GPD_ADV_DIR}/check-suite-build.py --build ${NVCC} ${GPD_ADV_DIR}/advise-suite.cu
            ${CMAKE_BINARY_DIR}/advisor/advise-suite.sm_90.cubin ${GPD_ADV_PTXAS}
    DEPENDS ${GPD_ADV_DIR}/advise-suite.cu
    COMMENT "nvcc: advise-suite.cu -> cubin (sm_90, ptxas -v)")
  add_custom_target(advisor-suite-cubin DEPENDS ${GPD_ADV_PTXAS})
  add_dependencies(test-advisor advisor-suite-cubin)
endif()
add_test(NAME advisor.suite-build
  COMMAND sh -c "[ '${GPD_ADV_PTXAS}' = - ] && { echo 'SKIP: no nvcc'; exit ${GPD_SKIP_RC}; }; python3 '${GPD_ADV_DIR}/check-suite-build.py' '${GPD_ADV_PTXAS}' '${GPD_ADV_DIR}/advise-suite.cu' '${GPD_ADV_DIR}/suite-split.txt'")
set_tests_properties(advisor.suite-build PROPERTIES LABELS "unit" TIMEOUT 60
                     SKIP_RETURN_CODE ${GPD_SKIP_RC})
