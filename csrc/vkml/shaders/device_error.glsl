// Noting a failed value check in the device error record (device_error.h). Only
// the first failure is kept: later ones find the code set and leave it.
#include "device_error.h"

layout(buffer_reference, scalar, buffer_reference_align = 8) buffer DeviceErrorRecord {
  uint code;
  uint aux;
  int64_t value;
  int64_t bound;
};

// value: the offending value; bound and aux: what the message names beside it
// (a size, a dim).
void report_device_error(uint64_t record, uint code, int64_t value, int64_t bound, uint aux) {
  if (record == 0ul) return;
  DeviceErrorRecord r = DeviceErrorRecord(record);
  if (atomicCompSwap(r.code, 0u, code) == 0u) {
    r.aux = aux;
    r.value = value;
    r.bound = bound;
  }
}
