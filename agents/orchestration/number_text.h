// How the diagnosis and the texts built on it write fractions and ratios, one way everywhere.
#pragma once

#include <string>

namespace mk::agents {

// "41%" (decimals 0) or "41.3%" (decimals 1) of a fraction.
std::string percent_text(double fraction, int decimals = 0);
// "2.5x", "12x", "1.33x": a ratio to three significant digits.
std::string times_text(double ratio);

}  // namespace mk::agents
