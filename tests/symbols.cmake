# daemon symbolizer (daemon/symbols.c): true inline chains in optimized
# code (C -O2/-O3, C++ templates, nvcc host code) checked against source
# markers and addr2line; safe opening of client-named module paths.
set(_sym_dir ${CMAKE_CURRENT_LIST_DIR}/symbols)
find_program(GPD_PYTHON3_SYM python3)
if(TARGET gpd_daemon_core AND GPD_PYTHON3_SYM)
  add_executable(symres ${_sym_dir}/symres.c)
  target_link_libraries(symres PRIVATE gpd_daemon_core)
  set_target_properties(symres PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/symbols)
  # Test programs: optimized, with debug info, never sanitized (their code
  # shape is what is tested).
  foreach(opt O2 O3)
    add_executable(sym-inline-${opt} ${_sym_dir}/inline.c)
    target_compile_options(sym-inline-${opt} PRIVATE -${opt} -g -fno-sanitize=all)
    target_link_options(sym-inline-${opt} PRIVATE -fno-sanitize=all)
    set_target_properties(sym-inline-${opt} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/symbols)
    add_test(NAME symbols.inline_c_${opt}
      COMMAND ${GPD_PYTHON3_SYM} ${_sym_dir}/check_inline.py --symres $<TARGET_FILE:symres>
              --exe $<TARGET_FILE:sym-inline-${opt}> --src ${_sym_dir}/inline.c c)
  endforeach()
  add_executable(sym-templates ${_sym_dir}/templates.cpp)
  target_compile_options(sym-templates PRIVATE -O2 -g -fno-sanitize=all)
  target_link_options(sym-templates PRIVATE -fno-sanitize=all)
  set_target_properties(sym-templates PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/symbols)
  add_test(NAME symbols.inline_cxx
    COMMAND ${GPD_PYTHON3_SYM} ${_sym_dir}/check_inline.py --symres $<TARGET_FILE:symres>
            --exe $<TARGET_FILE:sym-templates> --src ${_sym_dir}/templates.cpp cxx)
  find_program(GPD_NVCC_SYM nvcc PATHS /usr/local/cuda/bin NO_DEFAULT_PATH)
  add_test(NAME symbols.inline_cuda
    COMMAND ${GPD_PYTHON3_SYM} ${_sym_dir}/check_inline.py --symres $<TARGET_FILE:symres>
            --src ${_sym_dir}/cuda-host.cu --nvcc "${GPD_NVCC_SYM}" --tmp ${CMAKE_CURRENT_BINARY_DIR}/sym-cuda cuda)
  add_test(NAME symbols.safe_open
    COMMAND bash ${_sym_dir}/safe-open.sh $<TARGET_FILE:symres> $<TARGET_FILE:sym-inline-O2>)
  set_tests_properties(symbols.inline_c_O2 symbols.inline_c_O3 symbols.inline_cxx symbols.inline_cuda
    symbols.safe_open PROPERTIES LABELS "unit" TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
