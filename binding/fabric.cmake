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
)
