"""The task model: where the reference, its inputs and tolerances come from (`tasks`, `yaml`),
small instances of a task (`shrink`) and its extra shapes (`extra_shapes`)."""
