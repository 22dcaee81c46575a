#pragma once
// vkml's events behind the device guard's event hooks (torch.Event, and torch_vkml.Event
// built on it). c10::Event holds an opaque pointer that the first record() creates.
//
// An event marks a point in its device's one in-order queue: the timeline value of the
// batch that holds everything recorded before it (submitted at once, so query() turns
// true without a synchronize), plus a device-clock timestamp for timed events.
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace vkml_aten::events {

// Creates *event on first use (timed when flag is BACKEND_DEFAULT, torch's
// enable_timing=True) and marks the point after all work queued so far on stream's device.
void record(void** event, const c10::Stream& stream, c10::DeviceIndex event_device,
            c10::EventFlag flag);
// Makes later work on stream wait for the event: already so on the event's own device
// (one in-order queue); on another device the host waits for it.
void block(void* event, const c10::Stream& stream);
bool query(void* event);
void synchronize(void* event);
// Device time from start to end in milliseconds; both timed, recorded on the same device.
double elapsed_ms(void* start, void* end);
void destroy(void* event) noexcept;

}  // namespace vkml_aten::events
