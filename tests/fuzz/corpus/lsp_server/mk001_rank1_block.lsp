Content-Length: 141

{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {"textDocument": {"hover": {"contentFormat": ["markdown"]}}}}}Content-Length: 57

{"jsonrpc": "2.0", "method": "initialized", "params": {}}Content-Length: 907

{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": "file:///w/mk001_rank1_block.py", "languageId": "python", "version": 1, "text": "\"\"\"MK001 (rank-1 rule): a 1-D block of 1000 f32 elements on a 1<<20 vector is not\nthe full length, not a multiple of 1024 and not a power of two >= 128.\"\"\"\nimport jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\n\nN = 1 << 20\nCHUNK = 1000\n\n\ndef _relu_kernel(x_ref, o_ref):\n    o_ref[...] = jnp.maximum(x_ref[...], 0.0)\n\n\ndef relu(x):\n    vec = pl.BlockSpec((CHUNK,), lambda i: (i,))  # expect: MK001\n    return pl.pallas_call(\n        _relu_kernel,\n        out_shape=jax.ShapeDtypeStruct((N,), jnp.float32),\n        grid=(pl.cdiv(N, CHUNK),),\n        in_specs=[vec],\n        out_specs=vec,\n    )(x)\n\n\ndef corpus_entry():\n    return relu, (jax.ShapeDtypeStruct((N,), jnp.float32),)\n"}}}Content-Length: 172

{"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"textDocument": {"uri": "file:///w/mk001_rank1_block.py"}, "position": {"line": 10, "character": 8}}}Content-Length: 133

{"jsonrpc": "2.0", "id": 3, "method": "textDocument/codeLens", "params": {"textDocument": {"uri": "file:///w/mk001_rank1_block.py"}}}Content-Length: 220

{"jsonrpc": "2.0", "id": 4, "method": "textDocument/inlayHint", "params": {"textDocument": {"uri": "file:///w/mk001_rank1_block.py"}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}}}}Content-Length: 139

{"jsonrpc": "2.0", "id": 5, "method": "textDocument/documentSymbol", "params": {"textDocument": {"uri": "file:///w/mk001_rank1_block.py"}}}Content-Length: 280

{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": "file:///w/mk001_rank1_block.py", "version": 2}, "contentChanges": [{"range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 4}}, "text": "\u00e9\ud83d\ude00\r\n"}]}}Content-Length: 49

{"jsonrpc": "2.0", "id": 6, "method": "shutdown"}Content-Length: 36

{"jsonrpc": "2.0", "method": "exit"}