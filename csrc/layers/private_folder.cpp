#include "layers/private_folder.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>

namespace trt_trace {
namespace layers {

namespace {

namespace fs = std::filesystem;

constexpr const char* kPrefix = "trt_trace_layers_";

std::mutex g_mutex;
std::string g_folder;  // this process's folder ("" none)
pid_t g_owner = 0;     // the process that made it

// Folders of processes that are gone ("trt_trace_layers_<pid>_..." whose pid does not exist here)
// and untouched for an hour (a process of another pid namespace sharing the directory may be
// alive: its windows rewrite their files every profiled call).
void remove_orphans(const fs::path& tmp) noexcept {
  std::error_code ec;
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + std::strlen(kPrefix), nullptr, 10);
    if (pid <= 0 || pid == getpid()) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    std::error_code ignored;
    const auto touched = fs::last_write_time(it->path(), ignored);
    if (ignored || fs::file_time_type::clock::now() - touched < std::chrono::hours(1)) continue;
    fs::remove_all(it->path(), ignored);
  }
}

}  // namespace

std::string engine_folder(uint32_t engine_id, std::string* error) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_folder.empty() || g_owner != getpid()) {
    std::error_code ec;
    fs::path tmp = fs::temp_directory_path(ec);
    if (ec) {
      *error = "no temporary directory (" + ec.message() + ")";
      return {};
    }
    remove_orphans(tmp);
    std::string templ = (tmp / (std::string(kPrefix) + std::to_string(getpid()) + "_XXXXXX")).string();
    if (mkdtemp(templ.data()) == nullptr) {
      *error = "cannot make a folder in " + tmp.string() + " (" + std::strerror(errno) + ")";
      return {};
    }
    g_folder = templ;
    g_owner = getpid();
  }
  const fs::path folder = fs::path(g_folder) / std::to_string(engine_id);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) {
    *error = "cannot make " + folder.string() + " (" + ec.message() + ")";
    return {};
  }
  return folder.string();
}

void remove_engine_folder(uint32_t engine_id) noexcept {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_folder.empty() || g_owner != getpid()) return;
  std::error_code ec;
  fs::remove_all(fs::path(g_folder) / std::to_string(engine_id), ec);
}

void remove_private_folder() noexcept {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_folder.empty()) return;
  if (g_owner == getpid()) {
    std::error_code ec;
    fs::remove_all(g_folder, ec);
  }
  g_folder.clear();
}

std::string private_folder() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_owner == getpid() ? g_folder : std::string();
}

void forget_private_folder_after_fork() noexcept {
  new (&g_mutex) std::mutex();  // a parent thread may have held it at the fork
  g_folder.clear();             // (its memory is the parent's copy: cleared, not freed twice)
  g_owner = 0;
}

}  // namespace layers
}  // namespace trt_trace
