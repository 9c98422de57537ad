Content-Length: 141

{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {"textDocument": {"hover": {"contentFormat": ["markdown"]}}}}}Content-Length: 57

{"jsonrpc": "2.0", "method": "initialized", "params": {}}Content-Length: 2062

{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": "file:///w/tiled_matmul_task.py", "languageId": "python", "version": 1, "text": "\"\"\"A tiled matmul that carries its own task (in-file form: `reference` + `make_inputs`), so\n`maxkernel test` and `maxkernel optimize` can run it directly. The blocks are deliberately small:\nthe search should find larger tiles (fewer grid steps, less HBM re-reading) and keep them correct.\n\"\"\"\nimport jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\nfrom jax.experimental.pallas import tpu as pltpu\n\nM, N, K = 512, 512, 512\nBLOCK_M = 128\nBLOCK_N = 128\nBLOCK_K = 128\nTOLERANCES = {\"rtol\": 2e-2, \"atol\": 2e-2}\n\n\ndef reference(a, b):\n    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(jnp.bfloat16)\n\n\ndef make_inputs(key):\n    ka, kb = jax.random.split(key)\n    a = jax.random.normal(ka, (M, K), jnp.bfloat16)\n    b = jax.random.normal(kb, (K, N), jnp.bfloat16)\n    return a, b\n\n\ndef matmul_kernel(a_ref, b_ref, o_ref, acc_ref):\n    @pl.when(pl.program_id(2) == 0)\n    def _init():\n        acc_ref[...] = jnp.zeros_like(acc_ref)\n\n    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)\n\n    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)\n    def _store():\n        o_ref[...] = acc_ref[...].astype(o_ref.dtype)\n\n\ndef candidate(a, b):\n    return pl.pallas_call(\n        matmul_kernel,\n        out_shape=jax.ShapeDtypeStruct((M, N), jnp.bfloat16),\n        grid=(M // BLOCK_M, N // BLOCK_N, K // BLOCK_K),\n        in_specs=[\n            pl.BlockSpec((BLOCK_M, BLOCK_K), lambda i, j, k: (i, k)),\n            pl.BlockSpec((BLOCK_K, BLOCK_N), lambda i, j, k: (k, j)),\n        ],\n        out_specs=pl.BlockSpec((BLOCK_M, BLOCK_N), lambda i, j, k: (i, j)),\n        scratch_shapes=[pltpu.VMEM((BLOCK_M, BLOCK_N), jnp.float32)],\n        compiler_params=pltpu.CompilerParams(\n            dimension_semantics=(\"parallel\", \"parallel\", \"arbitrary\")),\n    )(a, b)\n"}}}Content-Length: 172

{"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"textDocument": {"uri": "file:///w/tiled_matmul_task.py"}, "position": {"line": 10, "character": 8}}}Content-Length: 133

{"jsonrpc": "2.0", "id": 3, "method": "textDocument/codeLens", "params": {"textDocument": {"uri": "file:///w/tiled_matmul_task.py"}}}Content-Length: 220

{"jsonrpc": "2.0", "id": 4, "method": "textDocument/inlayHint", "params": {"textDocument": {"uri": "file:///w/tiled_matmul_task.py"}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}}}}Content-Length: 139

{"jsonrpc": "2.0", "id": 5, "method": "textDocument/documentSymbol", "params": {"textDocument": {"uri": "file:///w/tiled_matmul_task.py"}}}Content-Length: 280

{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": "file:///w/tiled_matmul_task.py", "version": 2}, "contentChanges": [{"range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 4}}, "text": "\u00e9\ud83d\ude00\r\n"}]}}Content-Length: 49

{"jsonrpc": "2.0", "id": 6, "method": "shutdown"}Content-Length: 36

{"jsonrpc": "2.0", "method": "exit"}