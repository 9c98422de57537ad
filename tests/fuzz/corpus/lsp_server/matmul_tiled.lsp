Content-Length: 141

{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {"textDocument": {"hover": {"contentFormat": ["markdown"]}}}}}Content-Length: 57

{"jsonrpc": "2.0", "method": "initialized", "params": {}}Content-Length: 2266

{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": "file:///w/matmul_tiled.py", "languageId": "python", "version": 1, "text": "\"\"\"A tiled bf16 matmul with an f32 VMEM accumulator, in JAXBench form (CONFIG, create_inputs,\nworkload, get_flops, TUNED_PARAMS). Hover the pallas_call to see blocks, VMEM per step and grid.\"\"\"\nimport functools\n\nimport jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\nfrom jax.experimental.pallas import tpu as pltpu\n\nCONFIG = {\"M\": 2048, \"N\": 2048, \"K\": 2048, \"dtype\": \"bfloat16\"}\nTUNED_PARAMS = {\"block_m\": 512, \"block_n\": 512, \"block_k\": 512}\n\n\ndef matmul_kernel(a_ref, b_ref, o_ref, acc_ref):\n    @pl.when(pl.program_id(2) == 0)\n    def _init():\n        acc_ref[...] = jnp.zeros_like(acc_ref)\n\n    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)\n\n    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)\n    def _store():\n        o_ref[...] = acc_ref[...].astype(o_ref.dtype)\n\n\n@functools.partial(jax.jit, static_argnames=(\"interpret\",))\ndef workload(a, b, interpret=False):\n    m, n, k = CONFIG[\"M\"], CONFIG[\"N\"], CONFIG[\"K\"]\n    bm, bn, bk = TUNED_PARAMS[\"block_m\"], TUNED_PARAMS[\"block_n\"], TUNED_PARAMS[\"block_k\"]\n    return pl.pallas_call(\n        matmul_kernel,\n        out_shape=jax.ShapeDtypeStruct((m, n), jnp.bfloat16),\n        grid=(m // bm, n // bn, k // bk),\n        in_specs=[\n            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),\n            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),\n        ],\n        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),\n        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],\n        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\", \"parallel\", \"arbitrary\")),\n        interpret=interpret,\n    )(a, b)\n\n\ndef create_inputs(key=jax.random.PRNGKey(0)):\n    ka, kb = jax.random.split(key)\n    a = jax.random.normal(ka, (CONFIG[\"M\"], CONFIG[\"K\"]), dtype=jnp.bfloat16)\n    b = jax.random.normal(kb, (CONFIG[\"K\"], CONFIG[\"N\"]), dtype=jnp.bfloat16)\n    return a, b\n\n\ndef get_flops():\n    return 2 * CONFIG[\"M\"] * CONFIG[\"N\"] * CONFIG[\"K\"]\n"}}}Content-Length: 167

{"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"textDocument": {"uri": "file:///w/matmul_tiled.py"}, "position": {"line": 10, "character": 8}}}Content-Length: 128

{"jsonrpc": "2.0", "id": 3, "method": "textDocument/codeLens", "params": {"textDocument": {"uri": "file:///w/matmul_tiled.py"}}}Content-Length: 215

{"jsonrpc": "2.0", "id": 4, "method": "textDocument/inlayHint", "params": {"textDocument": {"uri": "file:///w/matmul_tiled.py"}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}}}}Content-Length: 134

{"jsonrpc": "2.0", "id": 5, "method": "textDocument/documentSymbol", "params": {"textDocument": {"uri": "file:///w/matmul_tiled.py"}}}Content-Length: 275

{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": "file:///w/matmul_tiled.py", "version": 2}, "contentChanges": [{"range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 4}}, "text": "\u00e9\ud83d\ude00\r\n"}]}}Content-Length: 49

{"jsonrpc": "2.0", "id": 6, "method": "shutdown"}Content-Length: 36

{"jsonrpc": "2.0", "method": "exit"}