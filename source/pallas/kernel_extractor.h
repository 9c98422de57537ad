// Finds every pallas_call in a parsed Python document and decodes its arguments.
#pragma once

#include <tree_sitter/api.h>

#include <string>
#include <string_view>
#include <vector>

#include "source/pallas/forwarders.h"

#include "source/pallas/kernel_model.h"
#include "source/pallas/model_cache.h"

namespace mk::pallas {

// With a cache, statements whose inputs did not change since the cache's last extraction are
// not analysed again; the result is the same either way. `forwarders` are wrappers of
// pallas_call defined in other files, by the qualified name this file's imports give them
// (wrappers defined in this file are found here).
PallasModel extract_pallas_model(TSNode root, std::string_view source, ModelCache* cache = nullptr,
                                 const ForwarderSet* forwarders = nullptr);

// The top-level defs of a module that forward to pallas_call, named as in the module; `imported`
// are forwarders its own imports name.
std::vector<Forwarder> find_forwarders(TSNode root, std::string_view source,
                                       const ForwarderSet* imported = nullptr);

// Every qualified name the module's imports bind ("pkg.block", "pkg.block.pallas_call").
std::vector<std::string> imported_names(TSNode root, std::string_view source);

}  // namespace mk::pallas
