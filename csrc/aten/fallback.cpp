#include "fallback.h"

#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <cstdlib>
#include <mutex>
#include <set>

#include "sync_debug.h"

namespace vkml_aten {
namespace {

std::mutex g_mutex;
std::map<std::string, int64_t> g_counts;
std::set<std::string> g_warned;

enum class Mode { Warn, Silent, Error };

Mode mode() {
  // Read on every call so tests and users can switch it at run time.
  const char* v = std::getenv("TORCH_VKML_FALLBACK");
  if (!v) return Mode::Warn;
  std::string s(v);
  if (s == "silent") return Mode::Silent;
  if (s == "error") return Mode::Error;
  return Mode::Warn;
}

// A view cannot come back from the CPU: a copy would silently stop aliasing its base.
void check_not_a_view(const c10::FunctionSchema& schema) {
  for (const auto& ret : schema.returns()) {
    const auto* alias = ret.alias_info();
    TORCH_CHECK_NOT_IMPLEMENTED(!alias || alias->isWrite(), schema.name(),
                                " is a view op with no vkml kernel for sparse tensors");
  }
}

bool is_sparse_layout(const at::Tensor& t) { return t.defined() && t.layout() != at::kStrided; }

// Whether an argument holds a sparse (COO, CSR, CSC) tensor.
template <class Pred>
bool any_tensor(c10::ArrayRef<c10::IValue> args, Pred pred) {
  for (const auto& a : args) {
    if (a.isTensor() && pred(a.toTensor())) return true;
    if (a.isTensorList())
      for (const at::Tensor& t : a.toTensorList().vec())
        if (pred(t)) return true;
  }
  return false;
}
bool any_sparse(c10::ArrayRef<c10::IValue> args) { return any_tensor(args, is_sparse_layout); }
bool any_vkml(c10::ArrayRef<c10::IValue> args) {
  return any_tensor(
      args, [](const at::Tensor& t) { return t.defined() && t.device().is_privateuseone(); });
}

// PyTorch's boxed CPU fallback copies strided tensors only. Sparse tensors cross with
// .to(), which copies their structure and values (PyTorch's device-independent
// conversion); in-place and out= arguments get the CPU's result back with copy_, and
// results that alias them are those arguments.
void sparse_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t n = schema.arguments().size();
  std::vector<c10::IValue> originals(stack->end() - n, stack->end());
  std::optional<c10::Device> device;
  auto to_cpu = [&](const at::Tensor& t) {
    if (!t.defined() || t.device().is_cpu()) return t;
    device = t.device();
    return t.cpu();
  };
  for (size_t i = 0; i < n; ++i) {
    c10::IValue& a = (*stack)[stack->size() - n + i];
    if (a.isTensor()) {
      a = to_cpu(a.toTensor());
    } else if (a.isTensorList()) {
      std::vector<at::Tensor> cpu;
      for (const at::Tensor& t : a.toTensorList().vec()) cpu.push_back(to_cpu(t));
      a = c10::IValue(c10::List<at::Tensor>(cpu));
    }
  }
  std::vector<c10::IValue> cpu_args(stack->end() - n, stack->end());
  op.callBoxed(stack);
  for (size_t i = 0; i < n; ++i) {
    const auto* alias = schema.arguments()[i].alias_info();
    if (alias && alias->isWrite() && originals[i].isTensor()) {
      at::Tensor original = originals[i].toTensor();
      original.copy_(cpu_args[i].toTensor().to(original.device()));  // same-device copy_
    }
  }
  const size_t r = schema.returns().size();
  for (size_t j = 0; j < r; ++j) {
    c10::IValue& out = (*stack)[stack->size() - r + j];
    const auto* alias = schema.returns()[j].alias_info();
    if (alias && alias->isWrite()) {
      for (size_t i = 0; i < n; ++i) {
        const auto* arg_alias = schema.arguments()[i].alias_info();
        if (arg_alias && arg_alias->beforeSets() == alias->beforeSets()) out = originals[i];
      }
    } else if (out.isTensor() && device && out.toTensor().defined()) {
      out = out.toTensor().to(*device);
    } else if (out.isTensorList() && device) {
      std::vector<at::Tensor> back;
      for (const at::Tensor& t : out.toTensorList().vec()) back.push_back(t.to(*device));
      out = c10::IValue(c10::List<at::Tensor>(back));
    }
  }
}

}  // namespace

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  std::string name = schema.name();
  if (!schema.overload_name().empty()) name += "." + schema.overload_name();
  const size_t n = schema.arguments().size();
  const c10::ArrayRef<c10::IValue> args(&*(stack->end() - n), n);
  const bool sparse = any_sparse(args);
  if (sparse) check_not_a_view(schema);
  Mode m = mode();
  TORCH_CHECK_NOT_IMPLEMENTED(m != Mode::Error, name,
                              " has no vkml kernel yet (TORCH_VKML_FALLBACK=error forbids "
                              "running it on the CPU)");
  // Copying its vkml arguments to the CPU waits for the device: under the sync debug
  // mode's "error" the refusal names the op, which a bare read-back could not.
  TORCH_CHECK(sync_debug_mode() != SyncDebugMode::Error || !any_vkml(args),
              "called a synchronizing vkml operation: ", name,
              " has no vkml kernel and runs on the CPU");
  bool warn = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_counts[name]++;
    warn = m == Mode::Warn && g_warned.insert(name).second;
  }
  if (warn) {
    TORCH_WARN(name,
               " has no vkml kernel yet; it runs on the CPU (set TORCH_VKML_FALLBACK="
               "silent to hide this, or error to forbid it)");
  }
  if (sparse) {
    sparse_cpu_fallback(op, stack);
    return;
  }
  at::native::cpu_fallback(op, stack, /*error_on_views=*/true);
}

std::map<std::string, int64_t> fallback_counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_counts;
}

void reset_fallback_counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_counts.clear();
}

}  // namespace vkml_aten

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&vkml_aten::cpu_fallback>());
}

// Sparse COO and compressed (CSR, CSC) tensors: ops without a kernel of their own
// (ops_sparse.cpp, ops_sparse_csr.cpp) take the same counted route.
TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&vkml_aten::cpu_fallback>());
}
TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&vkml_aten::cpu_fallback>());
}

// Autocast on vkml: ops without a cast policy run as they are.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }
