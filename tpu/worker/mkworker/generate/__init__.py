"""The kernel generator behind the `generate` op: what a template gets and returns (`common`),
the reference's equations re-stated as code (`expr`, `rows`, `index`), the pieces the fused and
GPU forms share (`fused`, `gpu_form`), degenerate-reference warnings (`degenerate`) and the kernel
classes in order with the one place the kernel form picks an emitter (`classes`)."""
