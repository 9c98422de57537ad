"""Loaded for every suite under tests/: the skip policy (a skip in CI fails unless declared;
tests/skip_policy.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import skip_policy


def pytest_configure(config):
    skip_policy.register(config)
