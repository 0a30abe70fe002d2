# Node resolution (hostlists, hostfiles, Slurm) and the ssh / slurm daemon starters.
set(LAUNCHER_HOSTS_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/hostlist.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/node_source.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/node_filter.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/node_source_slurm.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/text_file.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/shell_quote.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/this_host.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/starter_support.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/ssh_starter.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/slurm_starter.cc
)
