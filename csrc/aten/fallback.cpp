#include "fallback.h"

#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <cstdlib>
#include <mutex>
#include <set>

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

}  // namespace

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  std::string name = schema.name();
  if (!schema.overload_name().empty()) name += "." + schema.overload_name();
  Mode m = mode();
  TORCH_CHECK_NOT_IMPLEMENTED(m != Mode::Error, name,
                              " has no vkml kernel yet (TORCH_VKML_FALLBACK=error forbids "
                              "running it on the CPU)");
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

// Autocast on vkml: ops without a cast policy run as they are.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }
