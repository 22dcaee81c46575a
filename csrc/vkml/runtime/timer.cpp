#include "vkml/runtime/timer.h"

#include <string>

#include "vkml/core/error.h"
#include "vkml/runtime/device.h"

namespace vkml {

namespace {
constexpr uint32_t kSlotsPerPool = 256;
}

Timer::Timer(Device& device) : device_(device) {
  uint32_t n = 0;
  vk::vkGetPhysicalDeviceQueueFamilyProperties(device.physical(), &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vk::vkGetPhysicalDeviceQueueFamilyProperties(device.physical(), &n, families.data());
  valid_bits_ = device.queue_family() < n ? families[device.queue_family()].timestampValidBits : 0;
  if (device.info().timestamp_period_ns > 0) period_ns_ = device.info().timestamp_period_ns;
}

Timer::~Timer() = default;  // the query pools destroy themselves

VkOwned<VkQueryPool> Timer::create_pool(uint32_t count) {
  VkQueryPoolCreateInfo ci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  ci.queryCount = count;
  VkOwned<VkQueryPool> pool(device_.handle());
  VKML_CHECK_VK(vk::vkCreateQueryPool(device_.handle(), &ci, nullptr, pool.put()));
  return pool;
}

void Timer::grow() {
  VkOwned<VkQueryPool> pool = create_pool(kSlotsPerPool);
  uint32_t base = uint32_t(pools_.size()) * kSlotsPerPool;
  pools_.push_back(std::move(pool));
  recorded_at_.resize(recorded_at_.size() + kSlotsPerPool, 0);
  recorded_on_.resize(recorded_at_.size(), nullptr);
  // Hand out low slots first.
  for (uint32_t i = kSlotsPerPool; i-- > 0;) free_.push_back(base + i);
}

uint32_t Timer::acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!supported())
    fail(ErrorKind::InvalidArgument,
         device_.info().name + " has no timestamps on its compute queue; use wall-clock timing");
  if (free_.empty()) grow();
  uint32_t slot = free_.back();
  free_.pop_back();
  recorded_at_[slot] = 0;
  return slot;
}

void Timer::release(uint32_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot < recorded_at_.size()) free_.push_back(slot);
}

void Timer::check(uint32_t slot) const {
  VKML_CHECK_ARG(slot < recorded_at_.size(), "invalid timer slot " + std::to_string(slot));
}

uint64_t Timer::record(uint32_t slot) { return record(slot, device_.stream()); }

uint64_t Timer::record(uint32_t slot, Stream& stream) {
  VkQueryPool pool;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    check(slot);
    pool = pools_[slot / kSlotsPerPool].get();
  }
  uint64_t value = stream.write_timestamp(pool, slot % kSlotsPerPool);
  // Submitted at once, so query() turns true as soon as the GPU passes the event
  // rather than when a later batch happens to fill up.
  stream.flush();
  std::lock_guard<std::mutex> lock(mutex_);
  recorded_at_[slot] = value;
  recorded_on_[slot] = &stream;
  return value;
}

bool Timer::ready(uint32_t slot) {
  uint64_t value;
  Stream* stream;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    check(slot);
    value = recorded_at_[slot];
    stream = recorded_on_[slot];
  }
  VKML_CHECK_ARG(value != 0, "the event has not been recorded");
  return stream->completed_value() >= value;
}

uint64_t Timer::ticks(uint32_t slot) {
  uint64_t value;
  Stream* stream;
  VkQueryPool pool;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    check(slot);
    value = recorded_at_[slot];
    stream = recorded_on_[slot];
    pool = pools_[slot / kSlotsPerPool].get();
  }
  VKML_CHECK_ARG(value != 0, "the event has not been recorded");
  stream->wait(value);
  uint64_t t = 0;
  VKML_CHECK_VK(vk::vkGetQueryPoolResults(device_.handle(), pool, slot % kSlotsPerPool, 1,
                                          sizeof(t), &t, sizeof(t),
                                          VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  return t;
}

double Timer::elapsed_ns(uint32_t start, uint32_t end) {
  uint64_t t0 = ticks(start), t1 = ticks(end);
  uint64_t mask = tick_mask();
  uint64_t d = (t1 - t0) & mask;
  // A start recorded after the end reads as a huge wrapped value; report it negative.
  if (d > mask / 2) return -double((t0 - t1) & mask) * period_ns_;
  return double(d) * period_ns_;
}

bool Timer::calibrate(Calibration* out) {
  if (!supported() || !device_.info().calibrated_timestamps || !vk::vkGetCalibratedTimestampsEXT)
    return false;
  VkCalibratedTimestampInfoEXT infos[2] = {{VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT},
                                           {VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT}};
  infos[0].timeDomain = VK_TIME_DOMAIN_DEVICE_EXT;
  infos[1].timeDomain = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
  uint64_t stamps[2] = {0, 0}, deviation = 0;
  if (vk::vkGetCalibratedTimestampsEXT(device_.handle(), 2, infos, stamps, &deviation) !=
      VK_SUCCESS)
    return false;
  out->ticks = stamps[0];
  out->monotonic_ns = stamps[1];
  out->deviation_ns = deviation;
  return true;
}

}  // namespace vkml
