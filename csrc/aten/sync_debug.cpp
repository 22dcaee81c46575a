#include "sync_debug.h"

#include <c10/util/Exception.h>

#include <atomic>

namespace vkml_aten {
namespace {

// Process-wide, as CUDA's is: set in one thread, it applies to ops in every thread.
std::atomic<int> g_mode{int(SyncDebugMode::Default)};

}  // namespace

void set_sync_debug_mode(SyncDebugMode mode) { g_mode.store(int(mode)); }

SyncDebugMode sync_debug_mode() { return SyncDebugMode(g_mode.load()); }

void on_host_sync() {
  switch (sync_debug_mode()) {
    case SyncDebugMode::Default:
      return;
    case SyncDebugMode::Warn:
      TORCH_WARN("called a synchronizing vkml operation");
      return;
    case SyncDebugMode::Error:
      TORCH_CHECK(false, "called a synchronizing vkml operation");
  }
}

}  // namespace vkml_aten
