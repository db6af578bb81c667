# `gpuprof export` (pprof read back by the npm package pprof-format, folded
# stacks, speedscope JSON, exact numbers of tests/cli/fixture.sql; errors;
# 20 000-deep stacks), `gpuprof view` (self-contained page, $BROWSER), a
# real OpenCL run (ocl-known under `gpuprof record`) exported (label
# integration) and its view in headless Chromium (label browser: runs in
# the normal build's pass only).  Without node, viewer/node_modules
# (scripts/viewer), Chromium or OpenCL the cases that need them SKIP.
find_program(GPD_PYTHON3 python3)
if(GPD_PYTHON3 AND TARGET gpuprof_cli)
  set(_x_app "")
  if(TARGET ocl-known)
    set(_x_app --app $<TARGET_FILE:ocl-known>)
  endif()
  foreach(case pprof gopprof folded speedscope errors view deep ocl browser)
    add_test(NAME export.${case}
      COMMAND ${GPD_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/export/test_export.py
              --gpuprof $<TARGET_FILE:gpuprof_cli> --viewer ${PROJECT_SOURCE_DIR}/viewer ${_x_app} ${case})
    set_tests_properties(export.${case} PROPERTIES
      LABELS "unit" TIMEOUT 120 SKIP_RETURN_CODE 77
      ENVIRONMENT "POCL_CACHE_DIR=${CMAKE_BINARY_DIR}/pocl-cache")
  endforeach()
  set_tests_properties(export.ocl PROPERTIES LABELS "integration" TIMEOUT 180)
  set_tests_properties(export.browser PROPERTIES LABELS "browser" TIMEOUT 240)
endif()
