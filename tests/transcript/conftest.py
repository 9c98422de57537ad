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


@pytest.fixture
def server(tmp_path, monkeypatch):
    """An initialized server whose store is a fresh file of this test's."""
    monkeypatch.setenv("MAXKERNEL_STORE", str(tmp_path / "store.sqlite"))
    c = LspClient()
    c.initialize()
    yield c
    c.close()
