"""Lifecycle, error codes and dispatch rules of the real maxkernel-lsp binary."""
from lsp_client import LspClient


def test_requests_before_initialize_are_refused(client):
    resp = client.request("textDocument/hover", {"textDocument": {"uri": "file:///x.py"},
                                                 "position": {"line": 0, "character": 0}})
    assert resp["error"]["code"] == -32002
    assert client.initialize()["result"]["serverInfo"]["name"] == "maxkernel-lsp"


def test_initialize_reports_capabilities(client):
    caps = client.initialize()["result"]["capabilities"]
    assert caps["textDocumentSync"]["change"] == 2  # incremental
    assert caps["positionEncoding"] == "utf-16"
    assert caps["hoverProvider"] and caps["inlayHintProvider"] and caps["documentSymbolProvider"]
    assert "maxkernel.test" in caps["executeCommandProvider"]["commands"]


def test_second_initialize_is_invalid(ready):
    assert ready.request("initialize", {"capabilities": {}})["error"]["code"] == -32600


def test_unknown_method_is_method_not_found(ready):
    assert ready.request("maxkernel/doesNotExist", {})["error"]["code"] == -32601


def test_invalid_params_name_the_json_path(ready):
    ready.open("file:///p.py", "x = 1\n")
    resp = ready.request("textDocument/hover", {"textDocument": {"uri": "file:///p.py"},
                                                "position": {"line": "zero", "character": 0}})
    assert resp["error"]["code"] == -32602
    assert "params.position.line" in resp["error"]["message"]


def test_a_dropped_reply_is_answered_with_internal_error_once(ready):
    rid = ready.send_request("maxkernel/test/forgetToReply", {})
    resp = ready.wait_response(rid)
    assert resp["error"]["code"] == -32603
    # exactly once: the next request's answer is the next response we see with an id
    assert ready.request("shutdown")["result"] is None
    assert not any(m.get("id") == rid for m in ready.queued())


def test_exit_after_shutdown_is_zero(ready):
    assert ready.shutdown_and_exit() == 0


def test_exit_without_shutdown_is_one(ready):
    ready.notify("exit")
    assert ready.proc.wait(10) == 1


def test_requests_after_shutdown_are_invalid(ready):
    ready.request("shutdown")
    assert ready.request("textDocument/documentSymbol",
                         {"textDocument": {"uri": "file:///a.py"}})["error"]["code"] == -32600
    ready.notify("exit")
    assert ready.proc.wait(10) == 0


def test_end_of_input_without_shutdown_exits_one():
    c = LspClient()
    try:
        c.initialize()
        c.proc.stdin.close()
        assert c.proc.wait(10) == 1
    finally:
        c.close()


def test_cancel_request_stops_a_running_request(ready):
    rid = ready.send_request("maxkernel/test/sleep", {"ms": 20000})
    ready.notify("$/cancelRequest", {"id": rid})
    resp = ready.wait_response(rid, timeout=5)
    assert resp["error"]["code"] == -32800


def test_cancel_of_a_queued_request_answers_request_cancelled(ready):
    ready.open("file:///q.py", "x = 1\n")
    busy = ready.send_request("maxkernel/test/sleep", {"ms": 1500})
    queued = ready.send_request("textDocument/documentSymbol", {"textDocument": {"uri": "file:///q.py"}})
    ready.notify("$/cancelRequest", {"id": queued})
    assert ready.wait_response(queued)["error"]["code"] == -32800
    assert ready.wait_response(busy)["result"] == {"slept": True}


def test_edit_queued_behind_a_request_makes_it_content_modified(ready):
    uri = "file:///m.py"
    ready.open(uri, "x = 1\n")
    busy = ready.send_request("maxkernel/test/sleep", {"ms": 800})
    stale = ready.send_request("textDocument/codeLens", {"textDocument": {"uri": uri}})
    ready.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                            "contentChanges": [{"text": "y = 2\n"}]})
    ready.wait_response(busy)
    assert ready.wait_response(stale)["error"]["code"] == -32801


def test_server_to_client_request_gets_the_clients_answer():
    c = LspClient(server_requests={"window/showMessageRequest": lambda p: {"title": p["actions"][1]["title"]}})
    try:
        c.initialize()
        resp = c.request("maxkernel/test/clientRequest", {
            "method": "window/showMessageRequest",
            "params": {"type": 3, "message": "Approve?", "actions": [{"title": "Approve"}, {"title": "Stop"}]}})
        assert resp["result"] == {"result": {"title": "Stop"}}
        assert c.received_server_requests[0]["method"] == "window/showMessageRequest"
    finally:
        c.close()


def test_server_to_client_request_times_out_when_the_client_is_silent():
    c = LspClient(server_requests={"window/showDocument": lambda p: "NO_REPLY"})
    try:
        c.initialize()
        resp = c.request("maxkernel/test/clientRequest", {
            "method": "window/showDocument", "params": {"uri": "file:///plan.md"}, "timeoutMs": 300})
        assert resp["result"]["error"]["code"] == -32803
        assert "in time" in resp["result"]["error"]["message"]
    finally:
        c.close()


def test_execute_command_errors_name_the_problem(ready):
    resp = ready.request("workspace/executeCommand", {
        "command": "maxkernel.graphSearch", "arguments": [{"uri": "file:///a.py", "kernel": 0}]})
    assert resp["error"]["code"] == -32602
    assert "params.arguments[0].uri" in resp["error"]["message"] and "not open" in resp["error"]["message"]
    bad = ready.request("workspace/executeCommand", {"command": "maxkernel.nope"})
    assert bad["error"]["code"] == -32602


def test_exit_with_null_params_still_exits(ready):
    ready.request("shutdown")
    ready.write({"jsonrpc": "2.0", "method": "exit", "params": None})
    assert ready.proc.wait(10) == 0
