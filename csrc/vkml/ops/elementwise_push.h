#pragma once
// The push constants of shaders/elementwise.comp (elementwise.cpp and
// elementwise_batch.cpp launch it).
#include <cstdint>

namespace vkml::ops::elementwise_detail {

struct Push {
  uint64_t ptr[4];
  int32_t size[3];
  int32_t ndim;
  int32_t stride[4][3];
  uint32_t numel;
  uint32_t flags;
  uint64_t s[3];
};
static_assert(sizeof(Push) == 128);

}  // namespace vkml::ops::elementwise_detail
