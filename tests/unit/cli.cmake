# Unit tests of the command line and what it plans (see tests/CMakeLists.txt for tlaunch_add_unit_test).
tlaunch_add_unit_test(NAME cli_unit_tests
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli_options_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli_rank_layout_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli_plan_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli_gpu_list_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli_summary_json_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli_rank_failure_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli_restart_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli_hang_timeout_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli_start_failure_report_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli_same_failure_nodes_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli_lifecycle_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli_deepspeed_env_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli_control_socket_test.cc
  LIBS tlaunch_launcher)
