// Finds every pallas_call in a parsed Python document and decodes its arguments.
#pragma once

#include <tree_sitter/api.h>

#include <string_view>

#include "source/pallas/kernel_model.h"
#include "source/pallas/model_cache.h"

namespace mk::pallas {

// With a cache, statements whose inputs did not change since the cache's last extraction are
// not analysed again; the result is the same either way.
PallasModel extract_pallas_model(TSNode root, std::string_view source, ModelCache* cache = nullptr);

}  // namespace mk::pallas
