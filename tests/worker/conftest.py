"""Fixtures for the worker tests (see worker_harness.py)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from worker_harness import WorkerProcess


@pytest.fixture(scope="session")
def worker():
    w = WorkerProcess()
    hello = w.request("hello", timeout=120)
    assert hello["ok"], hello
    yield w
    w.close()


@pytest.fixture
def fresh_worker():
    w = WorkerProcess()
    yield w
    w.close()
