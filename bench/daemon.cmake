# Daemon benchmarks: bench-ingest (records/s per monitor thread), bench-memory
# (bytes per CCT node), bench-top
# (live query latency of a real gpuprofd with 64 fake processes).
if(TARGET gpd_daemon_core)
  add_executable(bench-ingest ${CMAKE_CURRENT_LIST_DIR}/bench-ingest.c)
  target_link_libraries(bench-ingest PRIVATE gpd_daemon_core)
  set_target_properties(bench-ingest PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endif()
if(TARGET gpd_daemon_core AND TARGET gpd_dclient)
  add_executable(bench-memory ${CMAKE_CURRENT_LIST_DIR}/bench-memory.c)
  target_link_libraries(bench-memory PRIVATE gpd_daemon_core gpd_dclient)
  set_target_properties(bench-memory PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endif()
if(TARGET gpuprofd AND TARGET gpd_dclient)
  # cli/arena.c: replies unpacked as the CLI unpacks them
  add_executable(bench-top ${CMAKE_CURRENT_LIST_DIR}/bench-top.c ${PROJECT_SOURCE_DIR}/cli/arena.c)
  target_include_directories(bench-top PRIVATE ${PROJECT_SOURCE_DIR}/cli)
  target_link_libraries(bench-top PRIVATE gpd_dclient)
  set_target_properties(bench-top PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  add_dependencies(bench-top gpuprofd)
endif()
if(TARGET gpd_daemon_core)
  # bench-trace: write rate of one tracing thread and bytes per trace row
  add_executable(bench-trace ${CMAKE_CURRENT_LIST_DIR}/bench-trace.c)
  target_link_libraries(bench-trace PRIVATE gpd_daemon_core gpd_store_fixture)
  set_target_properties(bench-trace PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endif()
# bench-retention: a retention pass at 5 000 and 20 000 contexts, the old
# statements as the baseline (docs/PERFORMANCE.md, "Retention").
if(TARGET gpd_daemon_core)
  add_executable(bench-retention ${CMAKE_CURRENT_LIST_DIR}/bench-retention.c)
  target_link_libraries(bench-retention PRIVATE gpd_daemon_core gpd_store_fixture)
  set_target_properties(bench-retention PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endif()
# bench-snapshot: the store writer's longest hold of the daemon lock at
# ~20 000 and ~100 000 changed contexts, in one hold against in chunks
# (docs/PERFORMANCE.md, "Writer snapshot").
if(TARGET gpd_daemon_core AND TARGET gpd_dclient)
  add_executable(bench-snapshot ${CMAKE_CURRENT_LIST_DIR}/bench-snapshot.c)
  target_link_libraries(bench-snapshot PRIVATE gpd_daemon_core gpd_dclient)
  set_target_properties(bench-snapshot PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endif()
