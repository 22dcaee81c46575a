#include "vkml/runtime/deferred.h"

namespace vkml {

DeferredWork*& deferred_slot() {
  thread_local DeferredWork* work = nullptr;
  return work;
}

void set_deferred(DeferredWork* work) { deferred_slot() = work; }

}  // namespace vkml
