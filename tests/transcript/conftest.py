import pytest
from lsp_client import LspClient  # tests/lsp_client, on sys.path through tests/conftest.py


@pytest.fixture
def client():
    c = LspClient()
    yield c
    c.close()


@pytest.fixture
def ready(client):
    client.initialize()
    return client
