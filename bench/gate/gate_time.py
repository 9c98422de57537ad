"""How long the source gate takes: the largest Python file of the repository's kernel corpus and a
generated 10,000-line file full of rebindings (tests/worker/gate_sources.py). Best and median of
several runs each, in one process (the gate is pure Python over the syntax tree; no JAX).

    .venv/bin/python bench/gate/gate_time.py [--runs N]
"""

import argparse
import ast
import glob
import os
import random
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "tpu", "worker"), os.path.join(ROOT, "tests", "worker")]

from mkworker.sandbox import gate
from gate_sources import legit_file

CORPUS = ["examples/**/*.py", "tests/corpus/**/*.py", "tests/worker/tasks/**/*.py", "tests/optimize/**/*.py",
          "bench/suites/**/*.py"]


def _time(source: str, name: str, runs: int):
    """(best, median) of the gate, and the best of Python's own parse of the same text for scale
    (the gate parses, then walks the tree twice)."""
    times, parses = [], []
    for _ in range(runs):
        start = time.perf_counter()
        ast.parse(source)
        parses.append(time.perf_counter() - start)
        start = time.perf_counter()
        gate.check_source(source, name)
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), min(parses)


def _is_kernel_or_task(path: str) -> bool:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return any(w in text for w in ("pallas_call", "def reference(", "def workload(", "def computation("))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    paths = sorted({p for pat in CORPUS for p in glob.glob(os.path.join(ROOT, pat), recursive=True)})
    kernels = [p for p in paths if _is_kernel_or_task(p)]
    largest = max(kernels, key=os.path.getsize)
    with open(largest, encoding="utf-8") as f:
        text = f.read()
    rows = [(os.path.relpath(largest, ROOT), text)]
    generated = legit_file(random.Random(10_000), functions=900)
    rows.append(("generated (gate_sources.py, seed 10000)", generated))
    print(f"{'file':56s} {'lines':>7s} {'best ms':>9s} {'median ms':>10s} {'ast.parse ms':>13s}")
    for name, source in rows:
        best, median, parse = _time(source, name, args.runs)
        print(f"{name:56s} {source.count(chr(10)):7d} {best * 1e3:9.1f} {median * 1e3:10.1f} {parse * 1e3:13.1f}")
    print(f"corpus: {len(paths)} Python files, {len(kernels)} of them kernels or tasks")


if __name__ == "__main__":
    main()
