// The ranks' agreement check of vkml_gloo (distributed_agreement.h).
#include "distributed_agreement.h"

#include <ATen/ATen.h>

#include <cstdlib>
#include <sstream>
#include <string>

namespace vkml_aten::distributed {
namespace {

using TensorList = std::vector<at::Tensor>;
constexpr const char* kName = "vkml_gloo";

// Checking that the ranks agree costs one small all_reduce per collective;
// TORCH_VKML_DIST_CHECK=0 skips it (then a mismatch aborts the process inside Gloo).
bool check_agreement() {
  static const bool on = [] {
    const char* v = std::getenv("TORCH_VKML_DIST_CHECK");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

// What all ranks must pass alike to a collective: its name, the dtypes and the shapes.
struct Signature {
  int64_t hash = 0;  // in [1, 2^62]
  std::string text;
};

Signature signature(const char* op, const TensorList& tensors) {
  // FNV-1a over 8-byte words: the same on every rank whatever its standard library.
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ull;
  };
  for (const char* c = op; *c; ++c) mix(uint64_t(*c));
  std::ostringstream text;
  text << op;
  for (const at::Tensor& t : tensors) {
    mix(uint64_t(t.scalar_type()));
    mix(uint64_t(t.dim()));
    for (int64_t s : t.sizes()) mix(uint64_t(s));
    text << " " << t.scalar_type() << t.sizes();
  }
  return {int64_t(h & ((uint64_t(1) << 62) - 1)) + 1, text.str()};
}

// Raises on every rank when the ranks' signatures differ. Gloo, given buffers of different
// sizes, aborts the process from its I/O thread; one all_reduce of two integers first turns
// that into an error. Runs on the issuer thread, before the op's own transfer.
void check_agree(c10d::Backend& inner, const Signature& sig) {
  at::Tensor t = at::empty({2}, at::kLong);
  t.data_ptr<int64_t>()[0] = sig.hash;
  t.data_ptr<int64_t>()[1] = -sig.hash;
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::MAX;
  TensorList list{t};
  inner.allreduce(list, opts)->wait();
  const int64_t highest = t.data_ptr<int64_t>()[0], lowest = -t.data_ptr<int64_t>()[1];
  TORCH_CHECK(highest == sig.hash && lowest == sig.hash, kName,
              ": the ranks called different collectives, or passed tensors of different "
              "shapes or dtypes; this rank called ",
              sig.text);
}

}  // namespace

std::function<void()> agreement(const c10::intrusive_ptr<c10d::Backend>& inner, const char* op,
                                const std::vector<at::Tensor>& tensors) {
  if (!check_agreement()) return {};
  return [inner, sig = signature(op, tensors)] { check_agree(*inner, sig); };
}

}  // namespace vkml_aten::distributed
