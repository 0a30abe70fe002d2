#pragma once
// A scratch directory for one unit test: made private (mkdtemp, 0700) under the temporary
// directory, removed with everything in it when the test ends, pass or fail.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace tlaunch::testing {

// Where a test writes thousands of small files (an extracted sysfs capture holds ~9,400):
// /dev/shm when there is one. On ext4, once the suite has created and removed many files, each
// new inode costs a scan of the recently deleted ones: ~7 s per extracted capture instead of
// ~0.2 s, which made the capture tests a tenth of the whole suite's time.
inline std::filesystem::path manyFilesBase() {
  std::error_code ec;
  if (std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) return "/dev/shm";
  return std::filesystem::temp_directory_path();
}

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "tlaunch-test",
                   const std::filesystem::path& base = std::filesystem::temp_directory_path()) {
    std::string pattern = (base / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace tlaunch::testing
