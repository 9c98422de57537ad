// The registry of host kinds: the built-in ones (one line each, one file each) and any a test or
// an extension adds. Registration order is the order messages list them.
#include <mutex>

#include "tpu/host/host_kind.h"

namespace mk::tpu {

const HostKind& ssh_host_kind();      // ssh_host_kind.cpp
const HostKind& command_host_kind();  // command_host_kind.cpp
const HostKind& ray_host_kind();      // ray_host_kind.cpp

namespace {
struct Registry {
  std::mutex mutex;
  std::vector<const HostKind*> kinds = {&local_host_kind(), &ssh_host_kind(), &command_host_kind(),
                                        &ray_host_kind()};
  std::vector<std::unique_ptr<HostKind>> added;  // owns the kinds added at run time
};

Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

const HostKind* find_host_kind(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const HostKind* kind : r.kinds)
    if (kind->name() == name) return kind;
  return nullptr;
}

std::vector<const HostKind*> host_kinds() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.kinds;
}

bool add_host_kind(std::unique_ptr<HostKind> kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const HostKind* known : r.kinds)
    if (known->name() == kind->name()) return false;
  r.kinds.push_back(kind.get());
  r.added.push_back(std::move(kind));
  return true;
}

}  // namespace mk::tpu
