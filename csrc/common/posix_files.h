// File-system steps done with POSIX calls, not std::filesystem. Why: the CUDA builds of torch's
// libtorch.so export their own copy of std::filesystem's functions, and the dynamic linker binds
// trt_trace's calls to that copy, which on torch 2.11 + CUDA 13 jumped to address 0 (the H200 run's
// segfault in std::filesystem::remove_all, called from the layer window's folder clean-up). A
// library loaded into torch's process must not depend on symbols torch may also define:
// tests/test_library_symbols.py checks that no built library imports std::filesystem.
#pragma once

#include <dirent.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace trt_trace {
namespace files {

// $TMPDIR (also TMP, TEMP, TEMPDIR, as std::filesystem::temp_directory_path reads them), else /tmp.
inline std::string temp_directory() {
  for (const char* name : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return v;
  }
  return "/tmp";
}

inline std::string join(const std::string& folder, const std::string& name) {
  if (folder.empty() || folder.back() == '/') return folder + name;
  return folder + "/" + name;
}

// The names in `folder` ("." and ".." left out); none where it cannot be read.
inline std::vector<std::string> names_in(const std::string& folder) {
  std::vector<std::string> out;
  DIR* dir = opendir(folder.c_str());
  if (dir == nullptr) return out;
  while (const dirent* entry = readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) out.emplace_back(entry->d_name);
  }
  closedir(dir);
  return out;
}

// mkdir -p; false with errno's text in *error where a part cannot be made.
inline bool make_folders(const std::string& path, std::string* error) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    const std::string part = path.substr(0, at);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      *error = std::strerror(errno);
      return false;
    }
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = "not a folder";
    return false;
  }
  return true;
}

// Seconds since `path` was last modified; -1 where it cannot be read.
inline double seconds_since_modified(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return -1;
  return std::difftime(std::time(nullptr), st.st_mtime);
}

// rm -rf, links not followed; errors ignored (what cannot be removed stays).
inline void remove_tree(const std::string& path) noexcept {
  nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int type, struct FTW*) -> int {
        (type == FTW_DP) ? rmdir(p) : unlink(p);
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
}

inline void remove_file(const std::string& path) noexcept { unlink(path.c_str()); }

}  // namespace files
}  // namespace trt_trace
