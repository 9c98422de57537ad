import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from lsp_client import LspClient  # noqa: E402


@pytest.fixture
def client():
    c = LspClient()
    yield c
    c.close()


@pytest.fixture
def ready(client):
    client.initialize()
    return client
