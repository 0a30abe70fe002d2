# Unit tests of the hosts area (see tests/CMakeLists.txt for tlaunch_add_unit_test).
tlaunch_add_unit_test(NAME hosts_unit_tests
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hosts_hostlist_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hosts_node_source_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hosts_hostile_input_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hosts_shell_quote_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hosts_ssh_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hosts_warm_registry_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hosts_slurm_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hosts_slurm_keepers_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/hosts_this_host_test.cc
  LIBS tlaunch_launcher)
