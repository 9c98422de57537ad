"""The judge of `evaluate`: it decides from data its children send back, never running task or
candidate code itself (`judge`, `candidate`, `extra`), with the reference's answer kept across
evaluates (`golden`), running and comparing (`run`), the timing the candidate cannot reach
(`clock`, `timing`), the correctness report (`mismatch`) and the work it counts in an exported
program (`program_work`)."""
