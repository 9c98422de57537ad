"""Stands in for tpu/ray/maxkernel_ray_driver.py in the KernelHost tests: the same command line
and worker protocol, no Ray. Each timing driver started is one "node" (numbered in order of
start, through directories made atomically in $FAKE_RAY_STATE):
  FAKE_RAY_JAX_<n>     the JAX version node n's hello reports (default 0.10.0)
  FAKE_RAY_LOSE_FIRST  the first evaluate of the whole test is answered host_lost, as a driver
                       whose node left the cluster does, and that driver exits
  FAKE_RAY_EVAL_S      seconds an evaluate takes (default 0)
"""
import json
import os
import sys
import time

state = os.environ["FAKE_RAY_STATE"]
lane = sys.argv[sys.argv.index("--lane") + 1]


def claim(prefix):
    """The first free number for `prefix`; mkdir makes it atomic across processes."""
    n = 1
    while True:
        try:
            os.mkdir(os.path.join(state, f"{prefix}-{n}"))
            return n
        except FileExistsError:
            n += 1


node = None
for line in sys.stdin:
    request = json.loads(line)
    reply = {"id": request["id"], "ok": True}
    if request["op"] == "hello":
        if node is None:
            node = claim(lane)
        reply.update(platform="cpu", device_kind="cpu", lane=lane,
                     jax=os.environ.get(f"FAKE_RAY_JAX_{node}", "0.10.0"),
                     ray={"devices": 2, "node_ip": f"10.0.0.{node}"})
    elif request["op"] == "evaluate":
        if os.environ.get("FAKE_RAY_LOSE_FIRST") and claim("lost") == 1:
            print(json.dumps({"id": request["id"], "ok": False, "host_lost": True,
                              "error": {"kind": "host_lost", "message": f"host lost: node {node}"}}),
                  flush=True)
            sys.exit(0)
        time.sleep(float(os.environ.get("FAKE_RAY_EVAL_S", "0")))
        reply["node"] = node
    elif request["op"] == "shutdown":
        print(json.dumps(reply), flush=True)
        break
    print(json.dumps(reply), flush=True)
