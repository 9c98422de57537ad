// The statuses of runs, search-graph nodes and HITL sessions. In memory they are enums; the store
// keeps the same strings as ever (older files, the Python tests and the editors read them):
// to_string / *_from_string convert at the storage boundary (run_store.cpp, session_store.cpp)
// and where a status is shown or written out as JSON.
//
// An unknown string read from the store is an error (std::runtime_error naming the string), not
// a guess: the schema is versioned, so only a hand-edited or damaged row holds one, and a wrong
// guess could resume a finished run or report a failed node as scored.
#pragma once

#include <string>
#include <string_view>

namespace mk::agents {

enum class RunStatus { running, done, stopped, failed, cancelled };
// pending and evaluating are unfinished; correct, incorrect and failed are verdicts.
enum class NodeStatus { pending, evaluating, correct, incorrect, failed };
// running: phase work under way; awaiting: the question is pending.
enum class SessionStatus { running, awaiting, done, stopped, failed };

std::string to_string(RunStatus status);
std::string to_string(NodeStatus status);
std::string to_string(SessionStatus status);

RunStatus run_status_from_string(std::string_view text);
NodeStatus node_status_from_string(std::string_view text);
SessionStatus session_status_from_string(std::string_view text);

}  // namespace mk::agents
