// Where things are at the top level of a Python module: its function definitions, the names it
// binds and the end of its import block. Used to place an inserted kernel beside a function and
// its imports with the others, without touching the user's code.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "source/syntax/byte_span.h"
#include "source/syntax/python_tree.h"

namespace mk::syntax {

// The top-level `def name` (with its decorators), or nullopt.
std::optional<ByteSpan> top_level_function(const PythonTree& tree, std::string_view source,
                                           std::string_view name);

// Names bound at the top level: functions, classes, assignments and imports.
std::set<std::string> top_level_names(const PythonTree& tree, std::string_view source);

// The byte just after the last top-level import statement that precedes any other statement
// (0 when the module starts with something else): where new imports go.
uint32_t end_of_imports(const PythonTree& tree, std::string_view source);

}  // namespace mk::syntax
