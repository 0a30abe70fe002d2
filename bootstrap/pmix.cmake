# Sources of the PMIx server glue (paths relative to bootstrap/).
set(BOOTSTRAP_PMIX_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_dirs.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_env.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_job_geometry.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_job_info.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_server.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_listener_guard.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_peer_guard.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/loopback_peer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_upcalls.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_pubsub.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_unsupported.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_job_control.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_groups.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_spawn.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/pmix_events.cc
)
