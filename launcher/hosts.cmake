# Node resolution (hostlists, hostfiles, Slurm) and the slurm daemon starter (ssh: LAUNCHER_SSH_SOURCES).
set(LAUNCHER_HOSTS_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/hostlist.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/node_source.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/node_filter.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/node_source_slurm.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/text_file.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/this_host.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/slurm_starter.cc
)

# Starting tlaunchd over ssh: the frontend's starter, and each daemon's for its children in the
# control tree (tree spawn), hence a library of its own that tlaunchd links too.
set(LAUNCHER_SSH_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/child_process.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/starter_support.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/home_directory.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/ssh_starter.cc
)
