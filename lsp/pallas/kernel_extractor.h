// Finds every pallas_call in a parsed Python document and decodes its arguments.
#pragma once

#include <tree_sitter/api.h>

#include <string_view>

#include "lsp/pallas/kernel_model.h"

namespace mk::pallas {

PallasModel extract_pallas_model(TSNode root, std::string_view source);

}  // namespace mk::pallas
