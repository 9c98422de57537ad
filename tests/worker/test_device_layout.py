"""generate.device_layout's rule for the layout XLA gives an array on a TPU, against the
compiler's own choice: the entry layout of a program compiled for v5e by libtpu (needs libtpu,
skips with the reason where it is absent)."""
import importlib.util
import os
import re
import subprocess
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tpu", "worker"))
from mkworker.generate import device_layout as L

SHAPES = [(2, 1024, 1024, 64), (2, 256, 256, 32), (2, 256, 256, 96), (2, 256, 256, 128),
          (2, 256, 256, 192), (2, 256, 200, 64), (8, 64, 64, 3), (4, 512, 64), (1024, 512),
          (100, 130), (16, 8, 8, 256)]


def test_the_rule_on_shapes_whose_layout_is_known():
    assert L.major_to_minor((2, 1024, 1024, 64)) == (0, 1, 3, 2)  # W in the lanes, C in the sublanes
    assert L.major_to_minor((2, 256, 256, 128)) == (0, 1, 2, 3)
    assert L.major_to_minor((8, 64, 64, 3)) == (0, 3, 1, 2)
    assert L.is_row_major((1024, 512)) and not L.is_row_major((4, 512, 64))
    assert L.major_to_minor((7,)) == (0,)


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                    reason="declared: libtpu is not installed (pip install -r scripts/requirements.txt)")
def test_the_rule_matches_the_layouts_libtpu_chooses(tmp_path):
    script = textwrap.dedent(f"""\
        import jax, jax.numpy as jnp
        from jax.experimental import topologies
        jax.config.update("jax_platforms", "cpu")
        dev = topologies.get_topology_desc(topology_name="v5e:1x1", platform="tpu",
            chip_config_name="default", chips_per_host_bounds=(1, 1, 1), num_slices=1).devices[0]
        sh = jax.sharding.SingleDeviceSharding(dev)
        for shape in {SHAPES!r}:
            for dt in (jnp.float32, jnp.bfloat16):
                c = jax.jit(lambda x: x * 2).lower(jax.ShapeDtypeStruct(shape, dt, sharding=sh)).compile()
                print(shape, c.as_text().split("entry_computation_layout={{(")[1].split(":")[0])
        """)
    env = dict(os.environ, TPU_MIN_LOG_LEVEL="3", TPU_LOG_DIR=str(tmp_path), ALLOW_MULTIPLE_LIBTPU_LOAD="1")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                         env=env, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = 0
    for line in out.stdout.splitlines():
        m = re.match(r"(\(.*\)) \w+\[.*\]\{([\d,]+)", line)
        assert m, line
        shape = tuple(int(d) for d in m.group(1).strip("()").split(",") if d.strip())
        minor_to_major = tuple(int(d) for d in m.group(2).split(","))
        assert L.major_to_minor(shape) == tuple(reversed(minor_to_major)), line
        seen += 1
    assert seen == 2 * len(SHAPES)
