// What a def's text alone says about whether it may forward to pallas_call: read before any
// parse (the region finder) and before any evaluation (the extractor), so both agree.
#pragma once

#include <string_view>

namespace mk::pallas {

// Whether some `callee(` in the text of a def is followed by what a forwarder passes first: a
// splat, `kernel=`, or an identifier that its header names (one of its parameters). True for
// every def that forwards its argument to `callee`; false ones are never forwarders.
bool passes_own_argument(std::string_view def_text, std::string_view callee);

}  // namespace mk::pallas
