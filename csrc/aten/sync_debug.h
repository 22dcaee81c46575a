#pragma once
// torch.cuda.set_sync_debug_mode's counterpart: reports each op that makes the host wait
// for the device's results (item(), .cpu(), nonzero(), a blocking copy to the host), so a
// user can find the waits that starve the GPU in a training step. Explicit waits
// (synchronize(), an event's or a stream's synchronize) are not reported, as on CUDA.

namespace vkml_aten {

enum class SyncDebugMode : int { Default = 0, Warn = 1, Error = 2 };

void set_sync_debug_mode(SyncDebugMode mode);
SyncDebugMode sync_debug_mode();

// Called before a read-back that waits for the device: warns, or raises RuntimeError
// instead of waiting, as the mode says.
void on_host_sync();

}  // namespace vkml_aten
