# tests/ompt.cmake - OpenMP target offload through OMPT (shim/ompt/,
# docs/OMPT.md): omp-known (tests/ompt/omp-known.c, a program of known
# offload structure) built with Debian's clang for the host offload plugin
# (-fopenmp-targets=x86_64-pc-linux-gnu; target regions run on the CPU)
# and run under `gpuprof record`; a tool of the program's own
# (omp-tool.c, OMP_TOOL_LIBRARIES) chained; a stand-in vendor back end
# (omp-vendor.c) that claims kernels and transfers as CUPTI would.  Needs
# an LLVM OpenMP runtime whose libomptarget implements the OMPT target callbacks (17 or later;
# Debian 12: libomp-19-dev clang-19 clang-tools-19, scripts/deps); without
# one the apps are not built and the tests SKIP.
# Included from tests/CMakeLists.txt.
set(GPD_OMPT_T ${CMAKE_CURRENT_LIST_DIR}/ompt)
unset(GPD_OMP_LLVM)
foreach(v 19 18 17)
  if(EXISTS /usr/lib/llvm-${v}/lib/libomptarget.so AND EXISTS /usr/lib/llvm-${v}/bin/clang
     AND EXISTS /usr/lib/llvm-${v}/bin/clang-offload-packager)
    set(GPD_OMP_LLVM /usr/lib/llvm-${v})
    break()
  endif()
endforeach()
set(GPD_OMP_APPS ${CMAKE_BINARY_DIR}/tests/ompt)
if(GPD_OMP_LLVM)
  message(STATUS "OpenMP offload tests: ${GPD_OMP_LLVM}")
  set(_cc ${GPD_OMP_LLVM}/bin/clang)
  # -g: the construct's source line names the kernel; frame pointers and no
  # inlining: the test names the functions that hold the constructs
  set(_flags -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -O1 -g -fno-omit-frame-pointer -fno-inline
      -Wl,-rpath,${GPD_OMP_LLVM}/lib)
  add_custom_command(OUTPUT ${GPD_OMP_APPS}/omp-known
    COMMAND ${CMAKE_COMMAND} -E make_directory ${GPD_OMP_APPS}
    COMMAND ${_cc} ${_flags} ${GPD_OMPT_T}/omp-known.c -o ${GPD_OMP_APPS}/omp-known
    DEPENDS ${GPD_OMPT_T}/omp-known.c VERBATIM)
  add_custom_command(OUTPUT ${GPD_OMP_APPS}/omp-tool.so
    COMMAND ${CMAKE_COMMAND} -E make_directory ${GPD_OMP_APPS}
    COMMAND ${_cc} -shared -fPIC -O1 ${GPD_OMPT_T}/omp-tool.c -o ${GPD_OMP_APPS}/omp-tool.so
    DEPENDS ${GPD_OMPT_T}/omp-tool.c VERBATIM)
  add_custom_command(OUTPUT ${GPD_OMP_APPS}/omp-vendor.so
    COMMAND ${CMAKE_COMMAND} -E make_directory ${GPD_OMP_APPS}
    COMMAND ${_cc} -shared -fPIC -O1 -I${CMAKE_SOURCE_DIR}/common/include ${GPD_OMPT_T}/omp-vendor.c
            -o ${GPD_OMP_APPS}/omp-vendor.so
    DEPENDS ${GPD_OMPT_T}/omp-vendor.c VERBATIM)
  add_custom_command(OUTPUT ${GPD_OMP_APPS}/omp-host
    COMMAND ${CMAKE_COMMAND} -E make_directory ${GPD_OMP_APPS}
    COMMAND ${_cc} -fopenmp -O1 -Wl,-rpath,${GPD_OMP_LLVM}/lib ${GPD_OMPT_T}/omp-host.c -o ${GPD_OMP_APPS}/omp-host
    DEPENDS ${GPD_OMPT_T}/omp-host.c VERBATIM)
  add_custom_target(ompt-apps ALL DEPENDS ${GPD_OMP_APPS}/omp-known ${GPD_OMP_APPS}/omp-tool.so
    ${GPD_OMP_APPS}/omp-vendor.so ${GPD_OMP_APPS}/omp-host)
endif()
foreach(t known chain vendor)
  add_test(NAME ompt.${t} COMMAND bash ${GPD_OMPT_T}/ompt.sh ${CMAKE_BINARY_DIR} ${t} "${GPD_OMP_LLVM}")
  set_tests_properties(ompt.${t} PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77
    ENVIRONMENT "GPD_IT_LIMIT=100")
endforeach()
