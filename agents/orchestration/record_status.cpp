#include "agents/orchestration/record_status.h"

#include <span>
#include <stdexcept>

namespace mk::agents {

namespace {

// Each enum's stored names, indexed by its values (in declaration order).
constexpr std::string_view kRunStatusNames[] = {"running", "done", "stopped", "failed",
                                                "cancelled"};
constexpr std::string_view kNodeStatusNames[] = {"pending", "evaluating", "correct", "incorrect",
                                                 "failed"};
constexpr std::string_view kSessionStatusNames[] = {"running", "awaiting", "done", "stopped",
                                                    "failed"};

template <typename Enum>
std::string name_of(std::span<const std::string_view> names, Enum value) {
  return std::string(names[static_cast<size_t>(value)]);
}

template <typename Enum>
Enum value_of(std::span<const std::string_view> names, std::string_view text, const char* what) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == text) return static_cast<Enum>(i);
  throw std::runtime_error("unknown " + std::string(what) + " '" + std::string(text) +
                           "' in the store (hand-edited or damaged?)");
}

}  // namespace

std::string to_string(RunStatus status) {
  return name_of(kRunStatusNames, status);
}

std::string to_string(NodeStatus status) {
  return name_of(kNodeStatusNames, status);
}

std::string to_string(SessionStatus status) {
  return name_of(kSessionStatusNames, status);
}

RunStatus run_status_from_string(std::string_view text) {
  return value_of<RunStatus>(kRunStatusNames, text, "run status");
}

NodeStatus node_status_from_string(std::string_view text) {
  return value_of<NodeStatus>(kNodeStatusNames, text, "node status");
}

SessionStatus session_status_from_string(std::string_view text) {
  return value_of<SessionStatus>(kSessionStatusNames, text, "session status");
}

}  // namespace mk::agents
