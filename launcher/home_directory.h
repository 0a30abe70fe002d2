#pragma once
// The user's home directory, and paths written with "~" in it (the shell leaves "~" as it is
// after "=", "--output-dir=~/logs", and in quotes).
#include <map>
#include <string>

namespace tlaunch {

// $HOME, else the password database's entry of this user; "" if neither says.
std::string homeDirectory(const std::map<std::string, std::string>& env);

// "~" and "~/x" under `home`; any other path, or an empty home, as given. Pure.
std::string underHome(const std::string& path, const std::string& home);

// A path of this host's: "~" and "~/x" under this user's home, "~user/x" under that user's;
// as given when there is no such user.
std::string expandHomeHere(const std::string& path);

}  // namespace tlaunch
