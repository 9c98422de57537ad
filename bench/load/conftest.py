"""The load bench's tests follow the same skip policy as tests/ (tests/skip_policy.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
import skip_policy


def pytest_configure(config):
    skip_policy.register(config)
