Content-Length: 141

{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {"textDocument": {"hover": {"contentFormat": ["markdown"]}}}}}Content-Length: 57

{"jsonrpc": "2.0", "method": "initialized", "params": {}}Content-Length: 1255

{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": "file:///w/mk001_matmul_block_tiling.py", "languageId": "python", "version": 1, "text": "\"\"\"MK001: a 100-row tile on a (1024, 1024) f32 array: 100 is neither a multiple\nof 8 nor the full dim.  The same BlockSpec object is used for input and output.\"\"\"\nimport jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\nfrom jax.experimental.pallas import tpu as pltpu\n\nM, N = 1024, 1024\nBM, BN = 100, 128\n\n\ndef _bias_relu_kernel(x_ref, b_ref, o_ref):\n    o_ref[...] = jnp.maximum(x_ref[...] + b_ref[...], 0.0)\n\n\ndef bias_relu(x, b):\n    tile = pl.BlockSpec((BM, BN), lambda i, j: (i, j))  # expect: MK001\n    return pl.pallas_call(\n        _bias_relu_kernel,\n        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),\n        grid=(pl.cdiv(M, BM), N // BN),\n        in_specs=[tile, pl.BlockSpec((1, BN), lambda i, j: (0, j))],\n        out_specs=tile,\n        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\", \"parallel\")),\n    )(x, b)\n\n\ndef corpus_entry():\n    return bias_relu, (\n        jax.ShapeDtypeStruct((M, N), jnp.float32),\n        jax.ShapeDtypeStruct((1, N), jnp.float32),\n    )\n"}}}Content-Length: 180

{"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"textDocument": {"uri": "file:///w/mk001_matmul_block_tiling.py"}, "position": {"line": 10, "character": 8}}}Content-Length: 141

{"jsonrpc": "2.0", "id": 3, "method": "textDocument/codeLens", "params": {"textDocument": {"uri": "file:///w/mk001_matmul_block_tiling.py"}}}Content-Length: 228

{"jsonrpc": "2.0", "id": 4, "method": "textDocument/inlayHint", "params": {"textDocument": {"uri": "file:///w/mk001_matmul_block_tiling.py"}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}}}}Content-Length: 147

{"jsonrpc": "2.0", "id": 5, "method": "textDocument/documentSymbol", "params": {"textDocument": {"uri": "file:///w/mk001_matmul_block_tiling.py"}}}Content-Length: 288

{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": "file:///w/mk001_matmul_block_tiling.py", "version": 2}, "contentChanges": [{"range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 4}}, "text": "\u00e9\ud83d\ude00\r\n"}]}}Content-Length: 49

{"jsonrpc": "2.0", "id": 6, "method": "shutdown"}Content-Length: 36

{"jsonrpc": "2.0", "method": "exit"}