#pragma once
// Flags of the launchers tlaunch replaces (mpirun, torchrun, srun, DeepSpeed, MPICH's mpiexec)
// that tlaunch spells differently or does not need: what to give instead (pure).
#include <optional>
#include <string>
#include <string_view>

namespace tlaunch {

// token: one argument before the program that is none of tlaunch's options ("--host",
// "-np", "--rdzv_endpoint=x:1"). The message ("whose flag it is\n  -> what instead"), without
// "tlaunch: ", or nullopt when it is no other launcher's flag we know. mpirun's `-np 4` in
// particular: CLI11 read it as `-n p` ("must be a whole number").
std::optional<std::string> foreignLauncherFlag(std::string_view token);

}  // namespace tlaunch
