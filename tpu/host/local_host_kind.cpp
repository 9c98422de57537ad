// `local`: workers are this machine's python on the bundle where it lies. They share the editor's
// cores, so they run niced by default.
#include "tpu/host/host_kind.h"

namespace mk::tpu {

namespace {
class LocalHostKind : public HostKind {
 public:
  std::string_view name() const override { return "local"; }
  bool workers_run_here() const override { return true; }
};
}  // namespace

const HostKind& local_host_kind() {
  static const LocalHostKind kind;
  return kind;
}

}  // namespace mk::tpu
