# tests/python.cmake - Python frames in call paths (shim/pyframes.c,
# docs/PYTHON.md).  python.walk: the frame walker on synthetic and garbage
# memory (no interpreter).  python.frames-*: a script with known functions
# and lines calls OpenCL through ctypes (PoCL); exact counts under each
# Python call path (tests/python/pyq.py).  3.11 is Debian's python3; 3.12
# and 3.13 (the unknown layout) run where a python3.12 / python3.13 is
# installed (PATH or pyenv), else SKIP.
set(GPD_PYT ${CMAKE_CURRENT_LIST_DIR}/python)
add_executable(test-pywalk ${GPD_PYT}/test-pywalk.c)
target_link_libraries(test-pywalk PRIVATE gpuprof)
set_target_properties(test-pywalk PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_test(NAME python.walk COMMAND test-pywalk)
set_tests_properties(python.walk PROPERTIES LABELS unit TIMEOUT 120)

foreach(t "frames-311;/usr/bin/python3;record" "live-311;/usr/bin/python3;live"
          "frames-312;3.12;record" "unknown-313;3.13;unknown")
  list(GET t 0 name)
  list(GET t 1 py)
  list(GET t 2 mode)
  add_test(NAME python.${name} COMMAND bash ${GPD_PYT}/python-frames.sh ${CMAKE_BINARY_DIR} ${py} ${mode})
  set_tests_properties(python.${name} PROPERTIES LABELS integration TIMEOUT 240 SKIP_RETURN_CODE 77
    ENVIRONMENT "POCL_CACHE_DIR=${CMAKE_BINARY_DIR}/pocl-cache;GPD_IT_LIMIT=200")
endforeach()
# python.cpusamp-311: Python frames in CPU samples of a CPU-only script
# (tests/python/cpu-sample.sh; no PoCL): the sampler's handler-safe walk
add_test(NAME python.cpusamp-311 COMMAND bash ${GPD_PYT}/cpu-sample.sh ${CMAKE_BINARY_DIR} /usr/bin/python3)
set_tests_properties(python.cpusamp-311 PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77
  ENVIRONMENT "GPD_IT_LIMIT=100")
# python.handoff-*: work a Python thread hands to a native worker thread
# keeps its caller's Python frames (tests/python/handoff.sh; PoCL)
if(OpenCL_FOUND)
add_library(gpd-handoff SHARED ${GPD_PYT}/handoff-lib.c)
target_include_directories(gpd-handoff PRIVATE ${OpenCL_INCLUDE_DIRS})
target_link_libraries(gpd-handoff PRIVATE ${OpenCL_LIBRARIES} Threads::Threads)
set_target_properties(gpd-handoff PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
# python.bwdfwd-*: backward under forward through a stand-in libtorch_cpu.so
# (tests/python/faketorch.cpp, one build per variant, each named
# libtorch_cpu.so in its own folder; tests/python/bwdfwd.sh; PoCL)
foreach(v "linked;" "intrusive;FT_INTRUSIVE" "nonode;FT_NO_CURRENT_NODE" "tidmoved;FT_TID_MOVED" "handle;FT_HANDLE")
  list(GET v 0 name)
  list(GET v 1 def)
  add_library(faketorch-${name} SHARED ${GPD_PYT}/faketorch.cpp ${GPD_PYT}/handoff-lib.c)
  if(def)
    target_compile_definitions(faketorch-${name} PRIVATE ${def})
  endif()
  target_include_directories(faketorch-${name} PRIVATE ${OpenCL_INCLUDE_DIRS})
  target_link_libraries(faketorch-${name} PRIVATE ${OpenCL_LIBRARIES} Threads::Threads)
  set_target_properties(faketorch-${name} PROPERTIES OUTPUT_NAME torch_cpu
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib/faketorch-${name})
endforeach()
# the tests: NAME (python.handoff-*, python.bwdfwd-*), script, Python, mode
foreach(t "handoff-carried;handoff;/usr/bin/python3;carried" "handoff-absent;handoff;/usr/bin/python3;absent"
          "handoff-carried-312;handoff;3.12;carried"
          "bwdfwd-linked;bwdfwd;/usr/bin/python3;linked" "bwdfwd-nonode;bwdfwd;/usr/bin/python3;nonode"
          "bwdfwd-tidmoved;bwdfwd;/usr/bin/python3;tidmoved" "bwdfwd-intrusive;bwdfwd;/usr/bin/python3;intrusive"
          "bwdfwd-handle;bwdfwd;/usr/bin/python3;handle" "bwdfwd-linked-312;bwdfwd;3.12;linked")
  list(GET t 0 name)
  list(GET t 1 sh)
  list(GET t 2 py)
  list(GET t 3 mode)
  add_test(NAME python.${name} COMMAND bash ${GPD_PYT}/${sh}.sh ${CMAKE_BINARY_DIR} ${py} ${mode})
  set_tests_properties(python.${name} PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77
    ENVIRONMENT "POCL_CACHE_DIR=${CMAKE_BINARY_DIR}/pocl-cache;GPD_IT_LIMIT=100")
endforeach()
endif()
# python.view: the Python and operator views (cli/fold.c) on hand-made trees, exact
if(TARGET gpd_cli)
  add_executable(test-fold ${GPD_PYT}/test-fold.c)
  target_link_libraries(test-fold PRIVATE gpd_cli)
  set_target_properties(test-fold PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  add_test(NAME python.view COMMAND test-fold)
  set_tests_properties(python.view PROPERTIES LABELS unit TIMEOUT 60)
endif()
