#pragma once
// DeepSpeed's environment files, read the way the `deepspeed` launcher reads them: the file
// named by DS_ENV_FILE (default ".deepspeed_env") in the home directory, then in the current
// one, the later winning; each KEY=VALUE line is exported to every rank.
#include <map>
#include <string>
#include <vector>

#include "tlaunch/result.h"

namespace tlaunch {

struct EnvFileEntry {
  std::string name;
  std::string value;
  std::string source;  // "FILE:LINE", shown in --dry-run and in messages
};

// The files to read, in order (later entries win). DS_ENV_FILE may be a name looked up in
// $HOME and ".", as deepspeed does, or a path (then only that file). Pure.
std::vector<std::string> deepspeedEnvFileCandidates(const std::map<std::string, std::string>& env);

// One file's lines: KEY=VALUE, optionally "export KEY=VALUE"; blank lines and '#' comments are
// skipped; blanks around KEY and VALUE and one pair of quotes around VALUE are removed (a value
// reaches deepspeed's ranks through `export KEY="VALUE"` in a shell). A malformed line is an
// error naming `shown_path:line`. Pure.
Result<std::vector<EnvFileEntry>> parseEnvFile(const std::string& shown_path, const std::string& text);

// Reads the candidates that exist, in order. A DS_ENV_FILE that names no existing file, or a
// file that cannot be read, is an error (deepspeed would silently ignore it).
Result<std::vector<EnvFileEntry>> readDeepspeedEnvFiles(const std::map<std::string, std::string>& env);

}  // namespace tlaunch
