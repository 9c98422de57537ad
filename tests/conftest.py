"""Loaded for every suite under tests/: the skip policy (a skip in CI fails unless declared;
tests/skip_policy.py), and the TPU compiler off by default (MAXKERNEL_TPU_COMPILE=0): with libtpu
installed every lowering would otherwise be compiled for the target, which costs seconds to minutes
per kernel on a 2-core machine. The tests of the compiler itself turn it on for their workers
(tests/worker/test_worker_tpu_compile.py, tests/cli/test_tpu_compile_cli.py)."""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import skip_policy

os.environ.setdefault("MAXKERNEL_TPU_COMPILE", "0")


def pytest_configure(config):
    skip_policy.register(config)
