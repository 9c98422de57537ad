// One model from the two halves of a large file's first parse (pallas::KernelRegionFinder::
// halves): each half's tree holds the sites of its part of the file and whatever they reach, so
// the statements both hold (imports, shared wrappers) are analysed twice, alike.
#pragma once

#include <tree_sitter/api.h>

#include "source/pallas/kernel_model.h"

namespace mk::pallas {

// The kernels of both, in the order of the top-level statements they were read from, each
// statement's once; `first_root` and `second_root` are the trees the models were extracted from.
PallasModel merge_half_models(PallasModel first, TSNode first_root, PallasModel second,
                              TSNode second_root);

}  // namespace mk::pallas
