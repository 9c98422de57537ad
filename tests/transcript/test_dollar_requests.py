"""`$/` methods sent as requests (with an id), against the real maxkernel-lsp.

LSP 3.17 ("$ Notifications and Requests"): a request whose method starts with `$/` must be
answered with MethodNotFound; a `$/` notification may be ignored. JSON-RPC: every request is
answered. `$/cancelRequest` sent as a request still cancels its target, then is answered.
Each test takes every first answer, then ends the session and checks that nothing else was
answered (a second answer, or an answer with id null).
"""
from collections import Counter

METHOD_NOT_FOUND = -32601
REQUEST_CANCELLED = -32800


def leftover_answers_until_exit(client, timeout=10):
    """Shuts the server down and returns a Counter of the response ids nobody has taken yet
    (queued, or read until the server's output ends). A test has already taken each first
    answer with wait_response, so any id counted here was answered twice."""
    rid = client.send_request("shutdown")
    client.wait_response(rid, timeout)
    client.notify("exit")
    assert client.proc.wait(timeout) == 0
    try:
        seen = client.wait_closed(timeout)
    except TimeoutError:
        raise AssertionError("the server's output did not end after exit") from None
    return Counter(m.get("id") for m in seen if "method" not in m)


def test_cancel_request_sent_as_a_request_cancels_and_is_answered_once(ready):
    running = ready.send_request("maxkernel/test/sleep", {"ms": 20000})
    cancel = ready.send_request("$/cancelRequest", {"id": running})
    answer = ready.wait_response(cancel, timeout=5)
    assert answer["error"]["code"] == METHOD_NOT_FOUND
    assert "cancellation was applied" in answer["error"]["message"]
    assert ready.wait_response(running, timeout=5)["error"]["code"] == REQUEST_CANCELLED
    extra = leftover_answers_until_exit(ready)
    assert not extra, extra


def test_cancel_request_as_a_request_for_a_queued_request(ready):
    ready.open("file:///q.py", "x = 1\n")
    busy = ready.send_request("maxkernel/test/sleep", {"ms": 1500})
    queued = ready.send_request("textDocument/documentSymbol",
                                {"textDocument": {"uri": "file:///q.py"}})
    cancel = ready.send_request("$/cancelRequest", {"id": queued})
    assert ready.wait_response(cancel, timeout=5)["error"]["code"] == METHOD_NOT_FOUND
    assert ready.wait_response(queued, timeout=5)["error"]["code"] == REQUEST_CANCELLED
    assert ready.wait_response(busy, timeout=5)["result"] == {"slept": True}
    extra = leftover_answers_until_exit(ready)
    assert not extra, extra


def test_cancel_request_as_a_request_without_a_target_is_still_answered(ready):
    bare = ready.send_request("$/cancelRequest")
    empty = ready.send_request("$/cancelRequest", {})
    for rid in (bare, empty):
        error = ready.wait_response(rid, timeout=5)["error"]
        assert error["code"] == METHOD_NOT_FOUND and "nothing was cancelled" in error["message"]
    # Params that are not an object or array are rejected before the method is looked at.
    wrong = ready.send_request("$/cancelRequest", 7)
    assert ready.wait_response(wrong, timeout=5)["error"]["code"] == -32602
    extra = leftover_answers_until_exit(ready)
    assert not extra, extra


def test_unknown_dollar_requests_are_method_not_found_and_notifications_ignored(ready):
    ready.notify("$/somethingPrivate", {"x": 1})
    ready.notify("$/setTrace", {"value": "off"})
    asked = [ready.send_request(m, {"x": 1})
             for m in ("$/somethingPrivate", "$/progress", "$/setTrace", "$/logTrace")]
    for rid in asked:
        assert ready.wait_response(rid, timeout=5)["error"]["code"] == METHOD_NOT_FOUND
    # Still serving after all of them.
    ready.open("file:///d.py", "x = 1\n")
    symbols = ready.request("textDocument/documentSymbol", {"textDocument": {"uri": "file:///d.py"}})
    assert "result" in symbols
    extra = leftover_answers_until_exit(ready)
    assert not extra, extra  # nothing answered twice, nothing answered with id null


def test_dollar_requests_before_initialize_are_answered(client):
    cancel = client.send_request("$/cancelRequest", {"id": 99})
    other = client.send_request("$/somethingPrivate", {})
    assert client.wait_response(cancel, timeout=5)["error"]["code"] == METHOD_NOT_FOUND
    # Before `initialize` every other request is refused as not initialized.
    assert client.wait_response(other, timeout=5)["error"]["code"] == -32002
    init = client.initialize()
    assert "capabilities" in init["result"]
    extra = leftover_answers_until_exit(client)
    assert not extra, extra
