// How every maxkernel command reads its arguments, so they all take "--name value" and
// "--name=value", refuse what they do not know the same way and print one shape of usage error:
// "maxkernel COMMAND: why" and the command's usage on stderr, exit status 2.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/host_session.h"

namespace mk::cli {

class ArgumentReader {
 public:
  explicit ArgumentReader(const std::vector<std::string>& args) : args_(args) {}

  // Moves to the next argument; false after the last. Throws when the previous option was
  // given "=value" but took none.
  bool next();
  const std::string& current() const { return name_; }  // "--host" for "--host=a"
  bool is(std::string_view option) const { return name_ == option; }
  bool is_option() const { return name_.size() > 1 && name_[0] == '-'; }

  // The current option's value: what follows '=', else the next argument.
  // Throws std::invalid_argument("--x needs a value") at the end of the arguments.
  std::string value();
  int positive_integer();                // "--x wants a positive integer, not 'v'"
  int whole_number();                    // 0 or more: "--x wants 0 or a positive integer, not 'v'"
  double number(bool positive = false);  // "--x wants a [positive] number, not 'v'"
  double positive_number() { return number(true); }
  // When the current option is `option`: its value into `into`, true. Else false.
  bool take(std::string_view option, std::string& into);

 private:
  const std::vector<std::string>& args_;
  size_t next_ = 0;
  std::string name_;
  std::optional<std::string> inline_value_;
};

// Calls `take` on each argument in turn; `take` returns false for one it does not know, and
// throws std::invalid_argument for a wrong value. -h/--help prints `usage` to stdout.
// Returns nullopt when every argument was taken, else the exit status the command returns:
// 0 after help, 2 after a usage error (printed as above).
// With `positional`, the command takes one argument that is not an option: it is stored there,
// and a second one is the usage error `positional->second_one` ("one FILE at a time").
struct SinglePositional {
  std::string* slot;
  const char* second_one;
};
std::optional<int> read_arguments(const std::vector<std::string>& args, std::string_view command,
                                  std::string_view usage,
                                  const std::function<bool(ArgumentReader&)>& take,
                                  std::optional<SinglePositional> positional = std::nullopt);

// The options of every command that runs kernels: --host (a comma list, or repeated), --hosts,
// --python, --timeout, --store and, when `use_cache` is given, --no-cache. False for any other.
bool take_host_option(ArgumentReader& reader, HostOptions& options, bool* use_cache = nullptr);

}  // namespace mk::cli
