# run-nodaemon.cmake -DAPP=ocl-known -DSHIM=libgpuprof.so -DSOCK=/absent.sock
# Runs APP bare and under LD_PRELOAD=SHIM with no daemon at SOCK: both exit
# 0 with the same stdout; stderr of the preloaded run has exactly one
# "not profiling" line.  APP exiting 77 (no OpenCL device) -> exit 77.
# Each run is bounded (TIMEOUT kills the program) so that a hang cannot
# outlive the test.
execute_process(COMMAND ${APP} TIMEOUT 100 RESULT_VARIABLE rc0 OUTPUT_VARIABLE out0 ERROR_VARIABLE err0)
if(rc0 EQUAL 77)
  message("no OpenCL device: SKIP")
  cmake_language(EXIT 77)
endif()
if(NOT rc0 EQUAL 0)
  message(FATAL_ERROR "bare run failed (${rc0}): ${err0}")
endif()
set(preload "${SHIM}")
if(DEFINED ENV{LD_PRELOAD} AND NOT "$ENV{LD_PRELOAD}" STREQUAL "")
  set(preload "$ENV{LD_PRELOAD}:${SHIM}") # a sanitizer runtime stays first
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${preload} GPUPROF_SOCKET=${SOCK} ${APP}
  TIMEOUT 100 RESULT_VARIABLE rc1 OUTPUT_VARIABLE out1 ERROR_VARIABLE err1)
if(NOT rc1 EQUAL 0)
  message(FATAL_ERROR "preloaded run failed (${rc1}): ${err1}")
endif()
if(NOT out0 STREQUAL out1)
  message(FATAL_ERROR "output differs:\n bare: ${out0}\n shim: ${out1}")
endif()
string(REGEX MATCHALL "not profiling" hits "${err1}")
list(LENGTH hits n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected 1 'not profiling' line, got ${n}:\n${err1}")
endif()
message("ok: ${out1}")
