// The private folder where the runtime writes its profile files while trt_trace times an engine's
// layers: $TMPDIR/trt_trace_layers_<pid>_XXXXXX (mode 0700), one sub-folder per engine id (two
// engines may share a name, and the runtime names its files after the engine). Made at the first
// layer window of the process, not before (a process that profiles nothing makes none), removed
// with everything in it when the layer switch goes off (the session's end). Only the process that
// made it removes it: a forked child forgets its parent's and makes its own if it profiles.
// A process killed before it could remove its folder leaves it; the next folder made on the
// machine removes those whose process is gone.
#pragma once

#include <cstdint>
#include <string>

namespace trt_trace {
namespace layers {

// The folder for `engine_id`'s files, made (with the process's folder) if need be; "" and `error`
// set when it cannot be made.
std::string engine_folder(uint32_t engine_id, std::string* error);
// Removes an engine's folder and what is in it (its window ended).
void remove_engine_folder(uint32_t engine_id) noexcept;
// Removes the process's folder and everything in it; a later window makes a new one.
void remove_private_folder() noexcept;
// The process's folder now ("" when none).
std::string private_folder();
// In a forked child: the folder is the parent's, never to be written or removed here.
void forget_private_folder_after_fork() noexcept;

}  // namespace layers
}  // namespace trt_trace
