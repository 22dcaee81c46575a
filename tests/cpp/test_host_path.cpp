// The per-op host path of a steady-state loop allocates nothing on the heap
// (issue #4's engine requirement): dispatching a small kernel reuses the
// pipeline slot, the push constants, the stream's recording storage, its ring
// of in-flight batches and their release lists. Counted on the calling thread
// only, by replacing the global operator new in this test binary; allocations
// made by the validation layer (which the tests run with) are not ours and are
// told apart by the stack they come from.
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "vkml/ops/copy.h"
#include "vkml_test.h"

namespace {

thread_local bool t_counting = false;
thread_local long t_news = 0;

bool from_validation_layer() {
  void* frames[12];
  const int n = backtrace(frames, 12);
  for (int i = 1; i < n; ++i) {
    Dl_info info;
    if (dladdr(frames[i], &info) && info.dli_fname && std::strstr(info.dli_fname, "VkLayer"))
      return true;
  }
  return false;
}

void count() {
  if (!t_counting) return;
  t_counting = false;  // backtrace() and dladdr() may allocate
  if (!from_validation_layer()) ++t_news;
  t_counting = true;
}

}  // namespace

void* operator new(std::size_t n) {
  count();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  count();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace vkml::test {
namespace {

using HostPath = VkmlTest;

TEST_F(HostPath, SteadyStateDispatchesAllocateNothing) {
  Buffer a(dev(), std::vector<float>(256, 0.0f));
  // Warm-up: pipelines, recording storage, a few submissions and their recycling.
  for (int i = 0; i < 2000; ++i) plus_one(dev(), a, a);
  dev().stream().synchronize();
  for (int i = 0; i < 2000; ++i) plus_one(dev(), a, a);
  void* warm[1];
  backtrace(warm, 1);  // its first call loads libgcc
  t_news = 0;
  t_counting = true;
  for (int i = 0; i < 1000; ++i) plus_one(dev(), a, a);
  t_counting = false;
  EXPECT_EQ(t_news, 0) << "heap allocations in 1000 dispatches";
  dev().stream().synchronize();
  EXPECT_EQ(a.read<float>(1)[0], 5000.0f);
}

// Out-of-place ops: each result takes a chunk from the caching allocator and the
// previous one goes back, splitting and merging chunks and their free-list and
// live-map entries.
TEST_F(HostPath, SteadyStateAllocationsAndFreesAllocateNothing) {
  auto step = [&](uint64_t x) {
    Allocation y = dev().memory().allocate(1024);
    plus_one(dev(), y.address, x);
    dev().memory().free(x);
    return y.address;
  };
  Allocation first = dev().memory().allocate(1024);
  std::vector<float> zeros(256, 0.0f);
  ops::upload(dev(), first.address, zeros.data(), 1024);
  uint64_t x = first.address;
  Allocation other = dev().memory().allocate(3000);  // a neighbour to split around
  for (int i = 0; i < 3000; ++i) x = step(x);
  dev().stream().synchronize();
  for (int i = 0; i < 2000; ++i) x = step(x);
  void* warm[1];
  backtrace(warm, 1);
  t_news = 0;
  t_counting = true;
  for (int i = 0; i < 1000; ++i) x = step(x);
  t_counting = false;
  EXPECT_EQ(t_news, 0) << "heap allocations in 1000 allocate/dispatch/free steps";
  float got = 0;
  ops::download(dev(), &got, x, 4);
  EXPECT_EQ(got, 6000.0f);
  dev().memory().free(x);
  dev().memory().free(other.address);
}

}  // namespace
}  // namespace vkml::test
