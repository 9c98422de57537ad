Content-Length: 141

{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {"textDocument": {"hover": {"contentFormat": ["markdown"]}}}}}Content-Length: 57

{"jsonrpc": "2.0", "method": "initialized", "params": {}}Content-Length: 1057

{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": "file:///w/block_shape_mistakes.py", "languageId": "python", "version": 1, "text": "\"\"\"Three mistakes the static checks catch before anything runs (open it in the editor, or run\n`maxkernel check examples/block_shape_mistakes.py`).\"\"\"\nimport jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\nfrom jax.experimental.pallas import tpu as pltpu\n\nM, N = 1024, 1024\nBM, BN = 100, 256  # 100 rows: not a multiple of 8 (MK001)\n\n\ndef scale_kernel(x_ref, o_ref):\n    o_ref[...] = x_ref[...] * 2.0\n\n\ndef scale(x):\n    return pl.pallas_call(\n        scale_kernel,\n        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),\n        grid=(pl.cdiv(M, BM), N // BN),\n        in_specs=[pl.BlockSpec((BM, BN), lambda i, j: (i, j))],\n        out_specs=pl.BlockSpec((BM, BN), lambda i: (i, 0)),  # one index for a 2-D grid (MK003)\n        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\",)),  # (MK004)\n    )(x)\n"}}}Content-Length: 175

{"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"textDocument": {"uri": "file:///w/block_shape_mistakes.py"}, "position": {"line": 10, "character": 8}}}Content-Length: 136

{"jsonrpc": "2.0", "id": 3, "method": "textDocument/codeLens", "params": {"textDocument": {"uri": "file:///w/block_shape_mistakes.py"}}}Content-Length: 223

{"jsonrpc": "2.0", "id": 4, "method": "textDocument/inlayHint", "params": {"textDocument": {"uri": "file:///w/block_shape_mistakes.py"}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}}}}Content-Length: 142

{"jsonrpc": "2.0", "id": 5, "method": "textDocument/documentSymbol", "params": {"textDocument": {"uri": "file:///w/block_shape_mistakes.py"}}}Content-Length: 283

{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": "file:///w/block_shape_mistakes.py", "version": 2}, "contentChanges": [{"range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 4}}, "text": "\u00e9\ud83d\ude00\r\n"}]}}Content-Length: 49

{"jsonrpc": "2.0", "id": 6, "method": "shutdown"}Content-Length: 36

{"jsonrpc": "2.0", "method": "exit"}