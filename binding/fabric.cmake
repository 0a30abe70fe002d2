# Sources of the fabric discovery / network choice / env / preflight area.
list(APPEND BINDING_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/ipv4_net.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl_if_list.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/roce_gid.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/fabric_discovery.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/fabric_json.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/network_choice.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/fabric_env.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl_conf.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/preflight_checks.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/preflight_host_facts.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/preflight_cross_node.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/preflight_report.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/preflight_runner.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/verbs_api_ibv.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/verbs_probe.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/verbs_completion.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/verbs_selftest.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/rdma_endpoint.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/rdma_pair_protocol.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/rdma_pair_agent.cc
)
