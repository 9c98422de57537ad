"""maxkernel/status: the server's own account of its memory, documents and work, read while it
serves (the load bench samples it to tell a leak from caches that fill up to their bounds)."""
import pytest
from lsp_client import LspClient


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def has_heap_figures(memory):
    """The heap figures come from glibc's malloc, or from ASan's or TSan's allocator in a sanitizer
    build; only under another allocator are they null."""
    if memory["heapInUseBytes"] is None:
        assert memory["heapHeldBytes"] is None
        return False
    return True


def big_module(lines):
    return "".join(f"value_{i} = {i} * 3 + {i % 7}  # filler line {i:06d}\n" for i in range(lines))


def test_status_counts_documents_and_reports_memory(ready):
    s = ready.request("maxkernel/status")["result"]
    assert s["openDocuments"] == 0
    assert s["runningJobs"] == {"kernel": 0, "optimization": 0, "stepByStep": 0, "kernelWriting": 0}
    assert s["pendingClientRequests"] == 0
    m = s["memory"]
    # The resident set the server reads for itself is the one the kernel reports for it.
    assert abs(m["residentBytes"] - rss_bytes(ready.proc.pid)) < 4 << 20
    if has_heap_figures(m):
        assert 0 < m["heapInUseBytes"] <= m["heapHeldBytes"]
    assert s["threads"] >= 2  # the main loop and the reader

    ready.open("file:///a.py", "x = 1\n")
    ready.open("file:///b.py", "y = 2\n")
    ready.open("file:///notes.txt", "text\n", language="plaintext")
    assert ready.request("maxkernel/status")["result"]["openDocuments"] == 3
    ready.notify("textDocument/didClose", {"textDocument": {"uri": "file:///b.py"}})
    assert ready.request("maxkernel/status")["result"]["openDocuments"] == 2


def test_heap_in_use_follows_a_large_document_open_and_close(ready):
    memory = ready.request("maxkernel/status")["result"]["memory"]
    if not has_heap_figures(memory):
        pytest.skip("declared: malloc is neither glibc's nor a sanitizer's here: no heap figures")
    before = memory["heapInUseBytes"]
    # Its full parse (tens of MB, on the tree thread) would still be growing between the two
    # figures below: held, the document is its text and the tree of its first, partial parse.
    ready.request("maxkernel/test/holdFullParses", {"hold": True})
    text = big_module(60000)  # about 3 MB of Python: its text and syntax tree live in the heap
    ready.open("file:///big.py", text)
    ready.diagnostics("file:///big.py", timeout=90)  # 3 MB: tens of seconds under TSan at -O0
    opened = ready.request("maxkernel/status")["result"]["memory"]["heapInUseBytes"]
    assert opened - before > len(text)
    ready.notify("textDocument/didClose", {"textDocument": {"uri": "file:///big.py"}})
    closed = ready.request("maxkernel/status")["result"]["memory"]["heapInUseBytes"]
    assert opened - closed > len(text), (before, opened, closed)


def test_sqlite_memory_is_counted_once_a_store_is_open(tmp_path, monkeypatch):
    monkeypatch.setenv("MAXKERNEL_STORE", str(tmp_path / "store.sqlite"))
    client = LspClient()
    try:
        client.initialize()
        assert client.request("maxkernel/status")["result"]["memory"]["sqliteBytes"] == 0
        assert client.request("maxkernel/sessions")["result"]["sessions"] == []  # opens the store
        m = client.request("maxkernel/status")["result"]["memory"]
        assert m["sqliteBytes"] > 0
        assert m["sqlitePeakBytes"] >= m["sqliteBytes"]
    finally:
        client.close()
