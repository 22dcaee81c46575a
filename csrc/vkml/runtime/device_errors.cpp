#include "vkml/runtime/device_errors.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "vkml/core/error.h"
#include "vkml/shaders/device_error.h"

namespace vkml {

namespace {

constexpr uint32_t kAssertMessages = 4096;

struct AssertMessages {
  std::mutex mutex;
  std::vector<std::string> text;  // by id; a ring once full
  std::unordered_map<std::string, uint32_t> ids;
  uint32_t next = 0;
};

AssertMessages& assert_messages() {
  static AssertMessages* table = new AssertMessages();  // never destroyed: used at exit
  return *table;
}

std::string assert_message(uint32_t id) {
  AssertMessages& t = assert_messages();
  std::lock_guard<std::mutex> lock(t.mutex);
  return id < t.text.size() ? t.text[id] : "Assertion is failed";
}

struct Record {
  uint32_t code;
  uint32_t aux;
  int64_t value;
  int64_t bound;
};
static_assert(sizeof(Record) == DEVICE_ERROR_RECORD_BYTES);

}  // namespace

[[noreturn]] void raise_check_failure(uint32_t code, int64_t value, int64_t bound, uint32_t aux) {
  const std::string v = std::to_string(value);
  switch (code) {
    case DEVICE_ERROR_TARGET:
      fail(ErrorKind::IndexOutOfRange, "Target " + v + " is out of bounds.");
    case DEVICE_ERROR_ZERO_DIVISION:
      fail(ErrorKind::ValueCheck, "ZeroDivisionError");
    case DEVICE_ERROR_ONE_HOT_NEGATIVE:
      fail(ErrorKind::ValueCheck, "Class values must be non-negative.");
    case DEVICE_ERROR_ONE_HOT_CLASSES:
      fail(ErrorKind::ValueCheck, "Class values must be smaller than num_classes.");
    case DEVICE_ERROR_BAG_FIRST_OFFSET:
      fail(ErrorKind::ValueCheck,
           "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
           "from position 0. However, got " +
               v);
    case DEVICE_ERROR_BAG_LAST_OFFSET:
      fail(ErrorKind::ValueCheck, "offsets[-1] can not be greater than input's length " +
                                      std::to_string(bound) + " but got offsets[-1] of " + v);
    case DEVICE_ERROR_MULTINOMIAL_PROBABILITY:
      fail(ErrorKind::ValueCheck, "probability tensor contains either `inf`, `nan` or element < 0");
    case DEVICE_ERROR_MULTINOMIAL_SUM:
      fail(ErrorKind::ValueCheck, "invalid multinomial distribution (sum of probabilities <= 0)");
    case DEVICE_ERROR_INDEX_IN_SELF:
      fail(ErrorKind::IndexOutOfRange, "index out of range in self");
    case DEVICE_ERROR_INDEX_BOUNDS:
    case DEVICE_ERROR_INDEX_BOUNDS_INDEX_ERROR:
      fail(code == DEVICE_ERROR_INDEX_BOUNDS ? ErrorKind::ValueCheck : ErrorKind::IndexOutOfRange,
           "index " + v + " is out of bounds for dimension " + std::to_string(aux) + " with size " +
               std::to_string(bound));
    case DEVICE_ERROR_MULTI_MARGIN_TARGET:
      fail(ErrorKind::ValueCheck, "target out of range");
    case DEVICE_ERROR_MULTILABEL_MARGIN_TARGET:
      fail(ErrorKind::ValueCheck, "argument #2 'target' is out of range");
    case DEVICE_ERROR_POISSON_RATE:
      fail(ErrorKind::ValueCheck, "invalid Poisson rate, expected rate to be non-negative");
    case DEVICE_ERROR_FAKE_QUANT_ZERO_POINT:
      fail(ErrorKind::ValueCheck, "`zero_point` must be between `quant_min` and `quant_max`.");
    case DEVICE_ERROR_ASSERT:
      fail(ErrorKind::ValueCheck, assert_message(aux));
    case DEVICE_ERROR_INDEX_TAKE:
      fail(ErrorKind::IndexOutOfRange, "out of range: tried to access index " + v +
                                           " on a tensor of " + std::to_string(bound) +
                                           " elements.");
    default:
      fail(ErrorKind::Internal,
           "a vkml kernel reported an unknown error code " + std::to_string(code));
  }
}

uint32_t register_assert_message(const std::string& message) {
  AssertMessages& t = assert_messages();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (auto it = t.ids.find(message); it != t.ids.end()) return it->second;
  const uint32_t id = t.next;
  t.next = (t.next + 1) % kAssertMessages;
  if (id < t.text.size()) {
    t.ids.erase(t.text[id]);
    t.text[id] = message;
  } else {
    t.text.push_back(message);
  }
  t.ids.emplace(message, id);
  return id;
}

DeviceErrors::DeviceErrors(MemoryPool& staging)
    : staging_(staging), record_(staging.allocate(sizeof(Record))) {
  std::memset(record_.host, 0, sizeof(Record));
}

DeviceErrors::~DeviceErrors() {
  try {
    staging_.free(record_.address);
  } catch (...) {
  }
}

void DeviceErrors::raise_pending() {
  // The memory is host-coherent and each batch ends with a barrier that makes
  // shader writes visible to the host; the acquire keeps the fields' reads
  // after the code's.
  auto* code = reinterpret_cast<uint32_t*>(record_.host);
  if (std::atomic_ref<uint32_t>(*code).load(std::memory_order_acquire) == 0) return;
  Record r;
  std::memcpy(&r, record_.host, sizeof(r));
  std::memset(record_.host, 0, sizeof(Record));
  raise_check_failure(r.code, r.value, r.bound, r.aux);
}

}  // namespace vkml
