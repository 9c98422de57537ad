-- A run and its three nodes exactly as the build before typed records wrote them (a greedy
-- search of tests/optimize/kernels/scale_rows.py on a CPU host; rows copied verbatim):
-- typed_records_test opens them through RunStore and reads typed values back.
INSERT INTO runs (id, mode, strategy, file, kernel, target, host, llm, params_json, budget_json, status, stop_reason, task_json, cost_json, score_kind, best_node, created_at, updated_at) VALUES ('r20261202-095317-72ad', 'auto', 'greedy', '/tmp/anl_probe/scale_rows.py', '', 'v5e', 'local', 'none', '{"search":{"beam_size":2,"branches":2,"concurrency":2,"diagnosis":true,"keep_factor":0.5,"max_depth":16,"roofline_stop":0.9,"strategy":"greedy","ucb_exploration":1.4},"state":{"elapsed_s":12.780670858000121,"round":1,"rounds_without_gain":0},"xla":{"roofline_s":9.602344322344321e-07,"score_s":1.3102344322344322e-06,"time_kind":"predicted"}}', '{"evaluations":0,"iterations":1,"patience":3,"seconds":0.0,"target_speedup":0.0,"tokens":0,"usd":0.0}', 'done', 'budget: 1 iterations', '{"form":"infile","path":"/tmp/anl_probe/scale_rows.py"}', '{"cache_hits":0,"evaluations":3,"host_seconds":16.8293825,"tokens_in":0,"tokens_out":0,"usd":0.0}', 'predicted (model, v5e)', 2, 1796205197, 1796205213);
INSERT INTO nodes (run_id, id, parent, depth, strategy, description, plan, code, code_hash, status, error, metrics_json, score_s, speedup, time_kind, cost_json, created_at, finished_at) VALUES ('r20261202-095317-72ad', 0, NULL, 0, 'baseline', 'the kernel as written', '', '"""Test kernel for `maxkernel optimize`: out = x * scale + bias, tiled over rows with a small
block, so block-size moves change the predicted time (grid steps) and stay correct."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 256, 256
BLOCK_ROWS = 8
TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def reference(x, b):
    return x * 3.0 + b


def make_inputs(key):
    kx, kb = jax.random.split(key)
    return (jax.random.normal(kx, (ROWS, COLS), jnp.float32),
            jax.random.normal(kb, (ROWS, COLS), jnp.float32))


def _kernel(x_ref, b_ref, o_ref):
    o_ref[...] = x_ref[...] * 3.0 + b_ref[...]


def candidate(x, b):
    spec = pl.BlockSpec((BLOCK_ROWS, COLS), lambda i: (i, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),
        grid=(ROWS // BLOCK_ROWS,),
        in_specs=[spec, spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x, b)
', 'c580790e353121089909f1de8078df73699f87bda5001c5fbcaea0546f6e3b18', 'correct', '', '{"bottleneck":{"bound":"grid overhead","compute_s":6.653401015228426e-10,"flops":131072.0,"hbm_bytes":786432.0,"memory_s":9.602344322344321e-07,"min_bytes":786432.0,"overhead_s":1.12e-05,"refetched":[],"roofline_fraction":0.07896512502168841,"roofline_s":9.602344322344321e-07,"summary":"grid overhead-bound (8% of the roofline)","vmem_bytes":49152.0,"vmem_limit_bytes":16777216.0},"correct":true,"host":"local","instance":{"kind":"full"},"pallas_calls":[{"compiler_params":"tpu","cost":null,"dimension_semantics":["parallel"],"grid":[32],"input_output_aliases":{},"interpret":false,"kernel":"_kernel","kernel_defined_at":"/tmp/anl_probe/scale_rows.py:23","live":true,"location":{"function":"candidate","line":29},"nesting":[],"num_scalar_prefetch":0,"operands":[{"array_shape":[256,256],"block_bytes":8192,"block_shape":[8,256],"buffer_count":2,"dtype":"float32","index":0,"kernel_block_shape":[8,256],"memory_space":"default","origin":"args[0]","role":"input"},{"array_shape":[256,256],"block_bytes":8192,"block_shape":[8,256],"buffer_count":2,"dtype":"float32","index":1,"kernel_block_shape":[8,256],"memory_space":"default","origin":"args[1]","role":"input"},{"array_shape":[256,256],"block_bytes":8192,"block_shape":[8,256],"buffer_count":2,"dtype":"float32","index":0,"kernel_block_shape":[8,256],"memory_space":"default","origin":"outputs","role":"output"}],"scratch":[],"smem_bytes":0,"traffic":{"assumed_prefetch_zeros":false,"available":true,"evaluated_points":96,"grid_steps":32,"hbm_bytes_read":524288,"hbm_bytes_read_in_bounds":524288,"hbm_bytes_written":262144,"hbm_bytes_written_in_bounds":262144,"operands":[{"block_bytes":8192,"distinct_blocks":32,"evaluated_points":32,"fetches":32,"grid_axes_read":[0],"hbm_bytes":262144,"hbm_bytes_in_bounds":262144,"index":0,"memory_space":"default","method":"numpy","mode":"blocked","origin":"args[0]","role":"input","traffic_estimated":false},{"block_bytes":8192,"distinct_blocks":32,"evaluated_points":32,"fetches":32,"grid_axes_read":[0],"hbm_bytes":262144,"hbm_bytes_in_bounds":262144,"index":1,"memory_space":"default","method":"numpy","mode":"blocked","origin":"args[1]","role":"input","traffic_estimated":false},{"block_bytes":8192,"distinct_blocks":32,"evaluated_points":32,"grid_axes_read":[0],"hbm_bytes":262144,"hbm_bytes_in_bounds":262144,"index":0,"memory_space":"default","method":"numpy","mode":"blocked","origin":"outputs","role":"output","traffic_estimated":false,"writebacks":32}],"traffic_estimated":false},"vmem_bytes_per_step":49152,"vmem_bytes_per_step_unpadded":49152,"vmem_limit_bytes":null}],"predictions":[{"arithmetic_intensity":0.16666666666666666,"assumptions":["HBM traffic from walking the index maps (unchanged block indices are not re-fetched)","DMA overlaps compute; 0.35 us fixed cost per grid step","one TensorCore walks the whole grid","f32 compute at the bf16 MXU peak (default matmul precision)","FLOPs counted in the kernel''s body over its grid (the kernel has no cost_estimate)"],"bound":"grid overhead","compute_s":6.653401015228426e-10,"kernel":"_kernel","label":"predicted (model, v5e)","memory_s":9.602344322344321e-07,"overhead_s":1.12e-05,"predicted_s":1.2160234432234432e-05,"ridge_intensity":240.53724053724054}],"roofline_fraction":0.07896512502168841,"run_mode":{"interpret_kind":"tpu","mode":"interpret","platform":"cpu"},"seeds":[898734293,1135904824,441245870],"speedup_vs_reference":null,"task_work":{"bytes":1310724,"estimated":false,"flops":131072,"matmul_flops":0,"min_bytes":786432,"ops":2,"output_bytes":262144},"time_kind":"interpret","timing":{"candidate":{"input_sets":3,"iqr_s":0.0,"mean_s":0.22572185399985756,"median_s":0.22572185399985756,"min_s":0.22572185399985756,"p10_s":0.22572185399985756,"p90_s":0.22572185399985756,"runs":1,"total_s":0.22572185399985756},"config":{"max_runs":1,"max_seconds":0.0,"min_runs":1,"min_seconds":0.0,"warmup":0},"instance":"full","reference":{"input_sets":3,"iqr_s":0.0,"mean_s":0.000289767000140273,"median_s":0.000289767000140273,"min_s":0.000289767000140273,"p10_s":0.000289767000140273,"p90_s":0.000289767000140273,"runs":1,"total_s":0.000289767000140273},"time_kind":"interpret","timed_outputs":{"checked":1,"ok":true}}}', 1.2160234432234432e-05, 1.0, 'predicted', '{"cache_hit":false,"host_seconds":6.986949671}', 1796205200, 1796205207);
INSERT INTO nodes (run_id, id, parent, depth, strategy, description, plan, code, code_hash, status, error, metrics_json, score_s, speedup, time_kind, cost_json, created_at, finished_at) VALUES ('r20261202-095317-72ad', 1, 0, 1, 'block_sizes', 'BLOCK_ROWS 8 -> 16', 'Rule-based rewrite (block_sizes): BLOCK_ROWS 8 -> 16.

Answers the diagnosis: grid overhead-bound (8% of the roofline) -> BLOCK_ROWS 8 -> 16', '"""Test kernel for `maxkernel optimize`: out = x * scale + bias, tiled over rows with a small
block, so block-size moves change the predicted time (grid steps) and stay correct."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 256, 256
BLOCK_ROWS = 16
TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def reference(x, b):
    return x * 3.0 + b


def make_inputs(key):
    kx, kb = jax.random.split(key)
    return (jax.random.normal(kx, (ROWS, COLS), jnp.float32),
            jax.random.normal(kb, (ROWS, COLS), jnp.float32))


def _kernel(x_ref, b_ref, o_ref):
    o_ref[...] = x_ref[...] * 3.0 + b_ref[...]


def candidate(x, b):
    spec = pl.BlockSpec((BLOCK_ROWS, COLS), lambda i: (i, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),
        grid=(ROWS // BLOCK_ROWS,),
        in_specs=[spec, spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x, b)
', '0ed710083525105db2473c5854075f2e2af3921fb36b5e6309169631cd97dcce', 'correct', '', '{"answers":"grid overhead-bound (8% of the roofline) -> BLOCK_ROWS 8 -> 16","bottleneck":{"bound":"grid overhead","compute_s":6.653401015228426e-10,"flops":131072.0,"hbm_bytes":786432.0,"memory_s":9.602344322344321e-07,"min_bytes":786432.0,"overhead_s":5.6e-06,"refetched":[],"roofline_fraction":0.14637196919613343,"roofline_s":9.602344322344321e-07,"summary":"grid overhead-bound (15% of the roofline)","vmem_bytes":98304.0,"vmem_limit_bytes":16777216.0},"correct":true,"host":"local","instance":{"kind":"full"},"pallas_calls":[{"compiler_params":"tpu","cost":null,"dimension_semantics":["parallel"],"grid":[16],"input_output_aliases":{},"interpret":false,"kernel":"_kernel","kernel_defined_at":"/tmp/anl_probe/scale_rows.py:23","live":true,"location":{"function":"candidate","line":29},"nesting":[],"num_scalar_prefetch":0,"operands":[{"array_shape":[256,256],"block_bytes":16384,"block_shape":[16,256],"buffer_count":2,"dtype":"float32","index":0,"kernel_block_shape":[16,256],"memory_space":"default","origin":"args[0]","role":"input"},{"array_shape":[256,256],"block_bytes":16384,"block_shape":[16,256],"buffer_count":2,"dtype":"float32","index":1,"kernel_block_shape":[16,256],"memory_space":"default","origin":"args[1]","role":"input"},{"array_shape":[256,256],"block_bytes":16384,"block_shape":[16,256],"buffer_count":2,"dtype":"float32","index":0,"kernel_block_shape":[16,256],"memory_space":"default","origin":"outputs","role":"output"}],"scratch":[],"smem_bytes":0,"traffic":{"assumed_prefetch_zeros":false,"available":true,"evaluated_points":48,"grid_steps":16,"hbm_bytes_read":524288,"hbm_bytes_read_in_bounds":524288,"hbm_bytes_written":262144,"hbm_bytes_written_in_bounds":262144,"operands":[{"block_bytes":16384,"distinct_blocks":16,"evaluated_points":16,"fetches":16,"grid_axes_read":[0],"hbm_bytes":262144,"hbm_bytes_in_bounds":262144,"index":0,"memory_space":"default","method":"numpy","mode":"blocked","origin":"args[0]","role":"input","traffic_estimated":false},{"block_bytes":16384,"distinct_blocks":16,"evaluated_points":16,"fetches":16,"grid_axes_read":[0],"hbm_bytes":262144,"hbm_bytes_in_bounds":262144,"index":1,"memory_space":"default","method":"numpy","mode":"blocked","origin":"args[1]","role":"input","traffic_estimated":false},{"block_bytes":16384,"distinct_blocks":16,"evaluated_points":16,"grid_axes_read":[0],"hbm_bytes":262144,"hbm_bytes_in_bounds":262144,"index":0,"memory_space":"default","method":"numpy","mode":"blocked","origin":"outputs","role":"output","traffic_estimated":false,"writebacks":16}],"traffic_estimated":false},"vmem_bytes_per_step":98304,"vmem_bytes_per_step_unpadded":98304,"vmem_limit_bytes":null}],"predictions":[{"arithmetic_intensity":0.16666666666666666,"assumptions":["HBM traffic from walking the index maps (unchanged block indices are not re-fetched)","DMA overlaps compute; 0.35 us fixed cost per grid step","one TensorCore walks the whole grid","f32 compute at the bf16 MXU peak (default matmul precision)","FLOPs counted in the kernel''s body over its grid (the kernel has no cost_estimate)"],"bound":"grid overhead","compute_s":6.653401015228426e-10,"kernel":"_kernel","label":"predicted (model, v5e)","memory_s":9.602344322344321e-07,"overhead_s":5.6e-06,"predicted_s":6.5602344322344315e-06,"ridge_intensity":240.53724053724054}],"roofline_fraction":0.14637196919613343,"run_mode":{"interpret_kind":"tpu","mode":"interpret","platform":"cpu"},"seeds":[372946225,1194008560,1374785680],"speedup_vs_reference":null,"task_work":{"bytes":1310724,"estimated":false,"flops":131072,"matmul_flops":0,"min_bytes":786432,"ops":2,"output_bytes":262144},"time_kind":"interpret","timing":{"candidate":{"input_sets":3,"iqr_s":0.0,"mean_s":0.24778267700003198,"median_s":0.24778267700003198,"min_s":0.24778267700003198,"p10_s":0.24778267700003198,"p90_s":0.24778267700003198,"runs":1,"total_s":0.24778267700003198},"config":{"max_runs":1,"max_seconds":0.0,"min_runs":1,"min_seconds":0.0,"warmup":0},"instance":"full","reference":{"input_sets":3,"iqr_s":0.0,"mean_s":0.00021750699988842825,"median_s":0.00021750699988842825,"min_s":0.00021750699988842825,"p10_s":0.00021750699988842825,"p90_s":0.00021750699988842825,"runs":1,"total_s":0.00021750699988842825},"time_kind":"interpret","timed_outputs":{"checked":1,"ok":true}}}', 6.5602344322344315e-06, 1.8536280308038668, 'predicted', '{"cache_hit":false,"host_seconds":4.085381058,"tokens_in":0,"tokens_out":0,"usd":0.0}', 1796205207, 1796205211);
INSERT INTO nodes (run_id, id, parent, depth, strategy, description, plan, code, code_hash, status, error, metrics_json, score_s, speedup, time_kind, cost_json, created_at, finished_at) VALUES ('r20261202-095317-72ad', 2, 0, 1, 'autotune', 'BLOCK_ROWS 8 -> 32', 'Autotuner move on module constant BLOCK_ROWS.

Answers the diagnosis: grid overhead-bound (8% of the roofline) -> BLOCK_ROWS 8 -> 32', '"""Test kernel for `maxkernel optimize`: out = x * scale + bias, tiled over rows with a small
block, so block-size moves change the predicted time (grid steps) and stay correct."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS, COLS = 256, 256
BLOCK_ROWS = 32
TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def reference(x, b):
    return x * 3.0 + b


def make_inputs(key):
    kx, kb = jax.random.split(key)
    return (jax.random.normal(kx, (ROWS, COLS), jnp.float32),
            jax.random.normal(kb, (ROWS, COLS), jnp.float32))


def _kernel(x_ref, b_ref, o_ref):
    o_ref[...] = x_ref[...] * 3.0 + b_ref[...]


def candidate(x, b):
    spec = pl.BlockSpec((BLOCK_ROWS, COLS), lambda i: (i, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, COLS), jnp.float32),
        grid=(ROWS // BLOCK_ROWS,),
        in_specs=[spec, spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x, b)
', 'a86fe17da2cd34713e347de8dbe0bdf7841c2452a959b8fb29c013970932e618', 'correct', '', '{"answers":"grid overhead-bound (8% of the roofline) -> BLOCK_ROWS 8 -> 32","bottleneck":{"bound":"grid overhead","compute_s":6.653401015228426e-10,"flops":131072.0,"hbm_bytes":786432.0,"memory_s":9.602344322344321e-07,"min_bytes":786432.0,"overhead_s":2.8e-06,"refetched":[],"roofline_fraction":0.25536557614676036,"roofline_s":9.602344322344321e-07,"summary":"grid overhead-bound (26% of the roofline)","vmem_bytes":196608.0,"vmem_limit_bytes":16777216.0},"correct":true,"host":"local","instance":{"kind":"full"},"pallas_calls":[{"compiler_params":"tpu","cost":null,"dimension_semantics":["parallel"],"grid":[8],"input_output_aliases":{},"interpret":false,"kernel":"_kernel","kernel_defined_at":"/tmp/anl_probe/scale_rows.py:23","live":true,"location":{"function":"candidate","line":29},"nesting":[],"num_scalar_prefetch":0,"operands":[{"array_shape":[256,256],"block_bytes":32768,"block_shape":[32,256],"buffer_count":2,"dtype":"float32","index":0,"kernel_block_shape":[32,256],"memory_space":"default","origin":"args[0]","role":"input"},{"array_shape":[256,256],"block_bytes":32768,"block_shape":[32,256],"buffer_count":2,"dtype":"float32","index":1,"kernel_block_shape":[32,256],"memory_space":"default","origin":"args[1]","role":"input"},{"array_shape":[256,256],"block_bytes":32768,"block_shape":[32,256],"buffer_count":2,"dtype":"float32","index":0,"kernel_block_shape":[32,256],"memory_space":"default","origin":"outputs","role":"output"}],"scratch":[],"smem_bytes":0,"traffic":{"assumed_prefetch_zeros":false,"available":true,"evaluated_points":24,"grid_steps":8,"hbm_bytes_read":524288,"hbm_bytes_read_in_bounds":524288,"hbm_bytes_written":262144,"hbm_bytes_written_in_bounds":262144,"operands":[{"block_bytes":32768,"distinct_blocks":8,"evaluated_points":8,"fetches":8,"grid_axes_read":[0],"hbm_bytes":262144,"hbm_bytes_in_bounds":262144,"index":0,"memory_space":"default","method":"numpy","mode":"blocked","origin":"args[0]","role":"input","traffic_estimated":false},{"block_bytes":32768,"distinct_blocks":8,"evaluated_points":8,"fetches":8,"grid_axes_read":[0],"hbm_bytes":262144,"hbm_bytes_in_bounds":262144,"index":1,"memory_space":"default","method":"numpy","mode":"blocked","origin":"args[1]","role":"input","traffic_estimated":false},{"block_bytes":32768,"distinct_blocks":8,"evaluated_points":8,"grid_axes_read":[0],"hbm_bytes":262144,"hbm_bytes_in_bounds":262144,"index":0,"memory_space":"default","method":"numpy","mode":"blocked","origin":"outputs","role":"output","traffic_estimated":false,"writebacks":8}],"traffic_estimated":false},"vmem_bytes_per_step":196608,"vmem_bytes_per_step_unpadded":196608,"vmem_limit_bytes":null}],"predictions":[{"arithmetic_intensity":0.16666666666666666,"assumptions":["HBM traffic from walking the index maps (unchanged block indices are not re-fetched)","DMA overlaps compute; 0.35 us fixed cost per grid step","one TensorCore walks the whole grid","f32 compute at the bf16 MXU peak (default matmul precision)","FLOPs counted in the kernel''s body over its grid (the kernel has no cost_estimate)"],"bound":"grid overhead","compute_s":6.653401015228426e-10,"kernel":"_kernel","label":"predicted (model, v5e)","memory_s":9.602344322344321e-07,"overhead_s":2.8e-06,"predicted_s":3.760234432234432e-06,"ridge_intensity":240.53724053724054}],"roofline_fraction":0.25536557614676036,"run_mode":{"interpret_kind":"tpu","mode":"interpret","platform":"cpu"},"seeds":[1345134483,2109124071,555399599],"speedup_vs_reference":null,"task_work":{"bytes":1310724,"estimated":false,"flops":131072,"matmul_flops":0,"min_bytes":786432,"ops":2,"output_bytes":262144},"time_kind":"interpret","timing":{"candidate":{"input_sets":3,"iqr_s":0.0,"mean_s":0.08249516500018217,"median_s":0.08249516500018217,"min_s":0.08249516500018217,"p10_s":0.08249516500018217,"p90_s":0.08249516500018217,"runs":1,"total_s":0.08249516500018217},"config":{"max_runs":1,"max_seconds":0.0,"min_runs":1,"min_seconds":0.0,"warmup":0},"instance":"full","reference":{"input_sets":3,"iqr_s":0.0,"mean_s":0.0002748490001067694,"median_s":0.0002748490001067694,"min_s":0.0002748490001067694,"p10_s":0.0002748490001067694,"p90_s":0.0002748490001067694,"runs":1,"total_s":0.0002748490001067694},"time_kind":"interpret","timed_outputs":{"checked":1,"ok":true}}}', 3.760234432234432e-06, 3.233903271559719, 'predicted', '{"cache_hit":false,"host_seconds":5.757051771,"tokens_in":0,"tokens_out":0,"usd":0.0}', 1796205207, 1796205213);
