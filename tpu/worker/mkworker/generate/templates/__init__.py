"""One module per kernel class (a template). A class split by kernel form has a shared
matcher (`matmul`, `attention`) and an emitter per form (`*_tpu`, `*_gpu`), chosen in
generate.classes; the others write their module (or refuse the GPU form) themselves."""
