#include "cli/argument_reader.h"

#include <iostream>
#include <stdexcept>

#include "service/hosts.h"

namespace mk::cli {

bool ArgumentReader::next() {
  if (inline_value_) throw std::invalid_argument(name_ + " takes no value");
  if (next_ >= args_.size()) return false;
  const std::string& a = args_[next_++];
  const size_t eq = a.find('=');
  if (a.starts_with("--") && eq != std::string::npos) {
    name_ = a.substr(0, eq);
    inline_value_ = a.substr(eq + 1);
  } else {
    name_ = a;
  }
  return true;
}

std::string ArgumentReader::value() {
  if (inline_value_) {
    std::string v = std::move(*inline_value_);
    inline_value_.reset();
    return v;
  }
  if (next_ >= args_.size()) throw std::invalid_argument(name_ + " needs a value");
  return args_[next_++];
}

namespace {

// The whole of `text` as an integer of at least `least`, else the usage error.
int integer_at_least(const std::string& name, const std::string& text, int least,
                     const char* wants) {
  size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || n < least)
    throw std::invalid_argument(name + " wants " + wants + ", not '" + text + "'");
  return n;
}

}  // namespace

int ArgumentReader::positive_integer() {
  return integer_at_least(name_, value(), 1, "a positive integer");
}

int ArgumentReader::whole_number() {
  return integer_at_least(name_, value(), 0, "0 or a positive integer");
}

bool ArgumentReader::take(std::string_view option, std::string& into) {
  if (!is(option)) return false;
  into = value();
  return true;
}

double ArgumentReader::number(bool positive) {
  const std::string text = value();
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || (positive && !(v > 0)))
    throw std::invalid_argument(name_ +
                                (positive ? " wants a positive number" : " wants a number") +
                                ", not '" + text + "'");
  return v;
}

std::optional<int> read_arguments(const std::vector<std::string>& args, std::string_view command,
                                  std::string_view usage,
                                  const std::function<bool(ArgumentReader&)>& take,
                                  std::optional<SinglePositional> positional) {
  ArgumentReader reader(args);
  try {
    while (reader.next()) {
      if (reader.is("-h") || reader.is("--help")) {
        std::cout << usage;
        return 0;
      }
      if (positional && !reader.is_option()) {
        if (!positional->slot->empty()) throw std::invalid_argument(positional->second_one);
        *positional->slot = reader.current();
        continue;
      }
      if (take(reader)) continue;
      throw std::invalid_argument(
          (reader.is_option() ? "unknown option " : "unexpected argument ") + reader.current());
    }
    reader.next();  // refuses a trailing "--switch=value"
  } catch (const std::exception& e) {
    std::cerr << "maxkernel " << command << ": " << e.what() << "\n" << usage;
    return 2;
  }
  return std::nullopt;
}

bool take_host_option(ArgumentReader& reader, HostOptions& options, bool* use_cache) {
  if (reader.take("--hosts", options.hosts_file) || reader.take("--python", options.python) ||
      reader.take("--store", options.store_path))
    return true;
  if (reader.is("--host")) {
    std::string error;
    if (!service::add_host_names(reader.value(), options.host_names, error))
      throw std::invalid_argument(error);
  } else if (reader.is("--timeout")) {
    options.timeout_s = reader.positive_number();
  } else if (use_cache && reader.is("--no-cache")) {
    *use_cache = false;
  } else {
    return false;
  }
  return true;
}

}  // namespace mk::cli
