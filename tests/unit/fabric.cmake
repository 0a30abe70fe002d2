# Unit tests of the fabric area (see tests/CMakeLists.txt for tlaunch_add_unit_test).
tlaunch_add_unit_test(NAME fabric_tests
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/fabric_discovery_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/fabric_gid_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/fabric_network_choice_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/fabric_env_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/fabric_nccl_conf_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/fabric_json_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/fabric_partition_test.cc
  LIBS tlaunch_fabric)
tlaunch_add_unit_test(NAME preflight_tests
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/preflight_checks_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/preflight_cross_node_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/preflight_report_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/preflight_verbs_test.cc
  LIBS tlaunch_preflight tlaunch_daemon)
tlaunch_add_unit_test(NAME preflight_pair_tests
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/preflight_pair_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/preflight_pair_fabric_test.cc
  LIBS tlaunch_launcher tlaunch_daemon)
