# Unit tests of the control plane, daemon pieces and frontend planning.
tlaunch_add_unit_test(NAME core_tests
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_frame_codec_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_hostile_frames_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_bounded_cbor_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_auth_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_frame_cipher_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_broadcast_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_line_splitter_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_output_record_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_output_flow_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_env_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_tree_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_inventory_cache_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_node_launch_json_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_pmix_spawns_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_tree_children_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_phase_timing_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_stale_files_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_job_dirs_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_containment_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_stack_merge_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_stack_target_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_rank_status_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_spawn_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_program_lookup_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_stranger_eviction_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_inventory_codec_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_session_lifecycle_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_message_router_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_diagnostics_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_rank_supervisor_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_daemon_session_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_fence_collector_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_pmix_directory_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/core_pmix_collectives_test.cc
  LIBS tlaunch_launcher tlaunch_daemon)
