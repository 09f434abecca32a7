#include "layers/private_folder.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/posix_files.h"

namespace trt_trace {
namespace layers {

namespace {

constexpr const char* kPrefix = "trt_trace_layers_";

std::mutex g_mutex;
std::string g_folder;  // this process's folder ("" none)
pid_t g_owner = 0;     // the process that made it

// Folders of processes that are gone ("trt_trace_layers_<pid>_..." whose pid does not exist here)
// and untouched for an hour (a process of another pid namespace sharing the directory may be
// alive: its windows rewrite their files every profiled call).
void remove_orphans(const std::string& tmp) noexcept {
  for (const std::string& name : files::names_in(tmp)) {
    if (name.rfind(kPrefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + std::strlen(kPrefix), nullptr, 10);
    if (pid <= 0 || pid == getpid()) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    const std::string path = files::join(tmp, name);
    const double age = files::seconds_since_modified(path);
    if (age < 0 || age < 3600) continue;  // unreadable, or touched within the hour
    files::remove_tree(path);
  }
}

}  // namespace

std::string engine_folder(uint32_t engine_id, std::string* error) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_folder.empty() || g_owner != getpid()) {
    const std::string tmp = files::temp_directory();
    remove_orphans(tmp);
    std::string templ = files::join(tmp, std::string(kPrefix) + std::to_string(getpid()) + "_XXXXXX");
    if (mkdtemp(templ.data()) == nullptr) {
      *error = "cannot make a folder in " + tmp + " (" + std::strerror(errno) + ")";
      return {};
    }
    g_folder = templ;
    g_owner = getpid();
  }
  const std::string folder = files::join(g_folder, std::to_string(engine_id));
  std::string why;
  if (!files::make_folders(folder, &why)) {
    *error = "cannot make " + folder + " (" + why + ")";
    return {};
  }
  return folder;
}

void remove_engine_folder(uint32_t engine_id) noexcept {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_folder.empty() || g_owner != getpid()) return;
  files::remove_tree(files::join(g_folder, std::to_string(engine_id)));
}

void remove_private_folder() noexcept {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_folder.empty()) return;
  if (g_owner == getpid()) files::remove_tree(g_folder);
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
