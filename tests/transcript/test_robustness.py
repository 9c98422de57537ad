"""Malformed input on the wire: none of it may crash the server or block later messages."""
import json

from lsp_client import LspClient, frame


def hover_request(rid):
    return {"jsonrpc": "2.0", "id": rid, "method": "textDocument/documentSymbol",
            "params": {"textDocument": {"uri": "file:///r.py"}}}


def still_serving(c, rid=900):
    c.write(hover_request(rid))
    resp = c.wait_response(rid)
    assert "result" in resp, resp


def test_header_name_case_and_extra_headers(ready):
    ready.open("file:///r.py", "x = 1\n")
    body = json.dumps(hover_request(77)).encode()
    ready.write_bytes(b"content-length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
                      % len(body) + body)
    assert "result" in ready.wait_response(77)
    ready.write_bytes(b"CONTENT-LENGTH:%d\r\n\r\n" % len(body.replace(b"77", b"78")) + body.replace(b"77", b"78"))
    assert "result" in ready.wait_response(78)


def test_missing_and_non_numeric_length_are_skipped(ready):
    ready.open("file:///r.py", "x = 1\n")
    ready.write_bytes(b"Content-Type: text/plain\r\n\r\n")
    ready.write_bytes(b"Content-Length: twelve\r\n\r\n")
    still_serving(ready)


def test_message_over_the_size_cap_is_rejected_and_serving_continues():
    c = LspClient(extra_args=["--max-message-bytes", "4096"])
    try:
        c.initialize()
        c.open("file:///r.py", "x = 1\n")
        big = {"jsonrpc": "2.0", "method": "textDocument/didOpen",
               "params": {"textDocument": {"uri": "file:///big.py", "languageId": "python", "version": 1,
                                           "text": "#" * 10000}}}
        c.write(big)
        still_serving(c)
        resp = c.request("textDocument/documentSymbol", {"textDocument": {"uri": "file:///big.py"}})
        assert resp["error"]["code"] == -32602  # the oversized didOpen never happened
        c.wait_stderr("exceeds the limit")
    finally:
        c.close()


def test_invalid_json_gets_parse_error(ready):
    ready.write_bytes(frame(b'{"jsonrpc": "2.0", "id": 5, "method": '))
    resp = ready.wait_for(lambda m: m.get("error", {}).get("code") == -32700)
    assert resp["id"] is None
    ready.open("file:///r.py", "x = 1\n")
    still_serving(ready)


def test_invalid_utf8_gets_parse_error(ready):
    ready.write_bytes(frame(b'{"jsonrpc": "2.0", "id": 6, "method": "shutdown", "x": "\xff\xfe"}'))
    assert ready.wait_for(lambda m: m.get("error", {}).get("code") == -32700)["id"] is None
    ready.open("file:///r.py", "x = 1\n")
    still_serving(ready)


def test_wrong_shapes_are_invalid_request(ready):
    ready.write({"jsonrpc": "2.0", "id": 9, "method": 42})
    assert ready.wait_response(9)["error"]["code"] == -32600
    ready.write([1, 2, 3])
    assert ready.wait_for(lambda m: m.get("error", {}).get("code") == -32600 and m["id"] is None)
    ready.write({"jsonrpc": "2.0", "id": 10, "method": "textDocument/hover", "params": "nope"})
    assert ready.wait_response(10)["error"]["code"] == -32602
    ready.open("file:///r.py", "x = 1\n")
    still_serving(ready)


def test_junk_between_messages_is_skipped(ready):
    ready.open("file:///r.py", "x = 1\n")
    body = json.dumps(hover_request(31)).encode()
    ready.write_bytes(b"garbage line\r\nmore garbage" + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert "result" in ready.wait_response(31)


def test_truncated_body_at_end_of_input_exits_cleanly(ready):
    ready.write_bytes(b"Content-Length: 500\r\n\r\n{\"jsonrpc\": \"2.0\"")
    ready.proc.stdin.close()
    assert ready.proc.wait(10) == 1
    ready.wait_stderr("of 500 body bytes")
