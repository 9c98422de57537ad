Content-Length: 141

{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {"textDocument": {"hover": {"contentFormat": ["markdown"]}}}}}Content-Length: 57

{"jsonrpc": "2.0", "method": "initialized", "params": {}}Content-Length: 997

{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": "file:///w/softmax_rows.py", "languageId": "python", "version": 1, "text": "\"\"\"Row softmax over a (rows, 96) array: the block's last dim equals the array's, so 96 is legal\neven though it is not a multiple of 128.\"\"\"\nimport jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\n\nROWS, COLS = 4096, 96\nBLOCK_ROWS = 256\n\n\ndef softmax_kernel(x_ref, o_ref):\n    x = x_ref[...].astype(jnp.float32)\n    x = x - jnp.max(x, axis=-1, keepdims=True)\n    e = jnp.exp(x)\n    o_ref[...] = (e / jnp.sum(e, axis=-1, keepdims=True)).astype(o_ref.dtype)\n\n\ndef softmax(x):\n    return pl.pallas_call(\n        softmax_kernel,\n        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),\n        grid=(ROWS // BLOCK_ROWS,),\n        in_specs=[pl.BlockSpec((BLOCK_ROWS, COLS), lambda i: (i, 0))],\n        out_specs=pl.BlockSpec((BLOCK_ROWS, COLS), lambda i: (i, 0)),\n    )(x)\n"}}}Content-Length: 167

{"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"textDocument": {"uri": "file:///w/softmax_rows.py"}, "position": {"line": 10, "character": 8}}}Content-Length: 128

{"jsonrpc": "2.0", "id": 3, "method": "textDocument/codeLens", "params": {"textDocument": {"uri": "file:///w/softmax_rows.py"}}}Content-Length: 215

{"jsonrpc": "2.0", "id": 4, "method": "textDocument/inlayHint", "params": {"textDocument": {"uri": "file:///w/softmax_rows.py"}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}}}}Content-Length: 134

{"jsonrpc": "2.0", "id": 5, "method": "textDocument/documentSymbol", "params": {"textDocument": {"uri": "file:///w/softmax_rows.py"}}}Content-Length: 275

{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": "file:///w/softmax_rows.py", "version": 2}, "contentChanges": [{"range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 4}}, "text": "\u00e9\ud83d\ude00\r\n"}]}}Content-Length: 49

{"jsonrpc": "2.0", "id": 6, "method": "shutdown"}Content-Length: 36

{"jsonrpc": "2.0", "method": "exit"}