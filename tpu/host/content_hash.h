// SHA-256, for content-addressing the worker bundle installed on hosts.
#pragma once

#include <string>
#include <string_view>

namespace mk::tpu {

std::string sha256_hex(std::string_view data);

}  // namespace mk::tpu
