#!/usr/bin/env python3
"""MaxKernel's Ray driver: one worker slot of a `ray` host, served by an actor on the cluster.

The C++ host starts one driver per slot, as it starts one worker per slot on the other kinds,
and speaks the worker protocol (docs/worker-protocol.md) to it over stdin/stdout.  The driver
connects to the cluster, places one actor (a CPU for the compile lane, one device resource for
the timing lane; Ray picks the node) and that actor runs the real worker (tpu/worker, shipped
as the job's working_dir) as a subprocess: the same protocol, the same anti-cheat.  Every line
the worker writes for a request comes back as one item of a streaming actor call.

Failures:
- a request in flight when its actor stops answering (its node left the cluster) is answered
  with "host_lost": true and the driver exits; the host retries the request once on another
  slot (docs/hosts.md);
- a worker that crashed is mirrored: this process dies the same way (same signal or exit
  code), so the host reads it exactly as a crash on any other kind;
- no cluster at the address, no device resource of the kind asked for, or no room to place the
  actor: the hello is answered with a clear error within seconds.

Only the standard library and Ray are imported; Ray only once the first hello arrives.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time

PLACEMENT_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 5.0
RAY_PIN = "ray==2.60.0"  # the version scripts/requirements-ray.txt installs


def log(message: str) -> None:
    sys.stderr.write(f"[maxkernel-ray {os.getpid()}] {message}\n")
    sys.stderr.flush()


class SlotError(Exception):
    """A hello that cannot be served: the message is the whole answer."""


# ---------------------------------------------------------------------------
# The actor: runs on a cluster node, owns one worker subprocess.

class WorkerActor:
    """Relays worker-protocol lines to a worker process on the actor's node."""

    def __init__(self, lane: str, nice: int):
        import collections
        import subprocess

        self._lines: dict = {}
        self._active = None  # id of the call in flight: where unparseable lines go
        self._lock = threading.Lock()
        self._stderr_tail = collections.deque(maxlen=200)

        def die_with_parent():
            # The worker must not outlive this actor (a killed driver ends the actor).
            import ctypes

            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

        self._proc = subprocess.Popen(
            [sys.executable, "-u", "maxkernel_worker.py", "--nice", str(nice), "--lane", lane],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            preexec_fn=die_with_parent)  # noqa: PLW1509 (only prctl runs before exec)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self):
        import queue

        for raw in self._proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            try:
                key = json.dumps(json.loads(line).get("id"))
            except (ValueError, AttributeError):
                key = None
            with self._lock:
                target = self._lines.get(key) or self._lines.get(self._active)
            if target is not None:
                target.put(line)
        with self._lock:
            for q in self._lines.values():
                q.put(None)
            self._lines[None] = queue.Queue()  # later calls see the end at once
            self._lines[None].put(None)

    def _read_stderr(self):
        for raw in self._proc.stderr:
            self._stderr_tail.append(raw.decode("utf-8", "replace"))

    def where(self) -> dict:
        import ray

        context = ray.get_runtime_context()
        return {"node_id": context.get_node_id(), "node_ip": ray.util.get_node_ip_address(),
                "pid": os.getpid()}

    def call(self, line: str):
        """Yields the worker's lines for this request up to its response; if the worker dies
        first, one {"exit": code, "stderr": tail} item."""
        import queue

        key = json.dumps(json.loads(line).get("id"))
        q: queue.Queue = queue.Queue()
        with self._lock:
            ended = None in self._lines
            self._lines[key] = q
            self._active = key
        try:
            if not ended:
                self._proc.stdin.write(line.encode("utf-8") + b"\n")
                self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        try:
            while True:
                item = q.get() if not ended else None
                if item is None:
                    code = self._proc.wait()
                    yield {"exit": code, "stderr": "".join(self._stderr_tail)[-8000:]}
                    return
                yield item
                try:
                    message = json.loads(item)
                    if "event" not in message:
                        return
                except ValueError:
                    pass
        finally:
            with self._lock:
                self._lines.pop(key, None)
                if self._active == key:
                    self._active = None

    def send(self, line: str) -> None:
        """A line that needs no answer here (a cancel)."""
        try:
            self._proc.stdin.write(line.encode("utf-8") + b"\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def stop(self) -> None:
        try:
            self._proc.stdin.close()
            self._proc.wait(timeout=5)
        except Exception:  # noqa: BLE001
            self._proc.kill()


# ---------------------------------------------------------------------------
# The driver side.

def gcs_endpoint(address: str):
    """(host, port) to probe before ray.init, or None for addresses Ray resolves itself."""
    if address in ("auto", "local", ""):
        return None
    rest = address.removeprefix("ray://")
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        raise SlotError(f"Ray address '{address}' is not HOST:PORT, ray://HOST:PORT or auto")
    return host.strip("[]"), int(port)


def journal(record: dict) -> None:
    """One line per placed request, for audits of where work ran ($MAXKERNEL_RAY_JOURNAL)."""
    path = os.environ.get("MAXKERNEL_RAY_JOURNAL")
    if not path:
        return
    record = dict(record, t=round(time.time(), 3), driver=os.getpid())
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())
    finally:
        os.close(fd)


def request_digest(message: dict) -> str:
    """What a request works on, so the journal can tell two requests for one kernel apart."""
    text = json.dumps({k: v for k, v in message.items() if k != "id"}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Slot:
    def __init__(self, args):
        self.args = args
        self.actor = None
        self.where: dict = {}
        self.devices = 0
        self.cpus = 0

    def open(self) -> dict:
        """Connects, places the actor and returns the worker's hello reply body."""
        args = self.args
        try:
            import ray
        except ImportError:
            raise SlotError(f"the ray host kind needs Ray in {sys.executable} "
                            f"(pip install {RAY_PIN})") from None
        endpoint = gcs_endpoint(args.address)
        if endpoint:
            try:
                socket.create_connection(endpoint, timeout=CONNECT_TIMEOUT_S).close()
            except OSError as e:
                reason = e.strerror or str(e) or type(e).__name__
                raise SlotError(f"no Ray cluster answers at {args.address}: {reason} (start one "
                                f"with `ray start --head`, or check the address)") from None
        failure: list = []

        def connect():
            try:
                ray.init(address=args.address, namespace="maxkernel", log_to_driver=False,
                         logging_level="WARNING",
                         runtime_env={"working_dir": args.bundle, "excludes": ["__pycache__"]})
            except Exception as e:  # noqa: BLE001
                failure.append(e)

        connecting = threading.Thread(target=connect, daemon=True)
        connecting.start()
        connecting.join(args.placement_timeout)
        if connecting.is_alive():
            raise SlotError(f"{args.address} accepted a connection but no Ray cluster answered "
                            f"within {args.placement_timeout:g} s")
        if failure:
            raise SlotError(f"cannot join the Ray cluster at {args.address}: {failure[0]}")

        resources = ray.cluster_resources()
        self.devices = int(resources.get(args.device_resource, 0))
        self.cpus = int(resources.get("CPU", 0))
        if args.lane == "timing" and self.devices == 0:
            offered = ", ".join(sorted(k for k in resources if not k.startswith("node:")))
            raise SlotError(f"the Ray cluster at {args.address} has no '{args.device_resource}' "
                            f"resource (its nodes offer: {offered}); start the nodes with it, "
                            f"or name the resource with deviceResource")
        if args.lane == "timing":
            options = {"num_cpus": 0, "resources": {args.device_resource: 1}}
            wanted = f"one '{args.device_resource}'"
        else:
            options = {"num_cpus": 1, "scheduling_strategy": "SPREAD"}
            wanted = "one CPU"
        actor_class = ray.remote(max_concurrency=4, max_restarts=0)(WorkerActor)
        self.actor = actor_class.options(**options).remote(args.lane, args.nice)
        try:
            self.where = ray.get(self.actor.where.remote(), timeout=args.placement_timeout)
        except ray.exceptions.GetTimeoutError:
            raise SlotError(f"no node of the Ray cluster at {args.address} had {wanted} free "
                            f"for a {args.lane} worker within {args.placement_timeout:g} s "
                            f"(the cluster has {self.devices} '{args.device_resource}' and "
                            f"{self.cpus} CPU; are other searches holding them?)") from None
        except ray.exceptions.RayError as e:
            raise SlotError(f"the {args.lane} actor on the Ray cluster at {args.address} "
                            f"failed to start: {e}") from None
        log(f"{args.lane} actor on node {self.where['node_ip']} ({self.where['node_id'][:8]})")

    def ray_facts(self) -> dict:
        return {"address": self.args.address, "node_id": self.where.get("node_id"),
                "node_ip": self.where.get("node_ip"),
                "device_resource": self.args.device_resource, "devices": self.devices,
                "cpus": self.cpus}

    def forward(self, message: dict, send, lost):
        """Streams the worker's lines for `message` to `send`; True when the response came."""
        import ray

        request_id = message.get("id")
        record = {"lane": self.args.lane, "op": message.get("op"), "id": request_id,
                  "node": self.where.get("node_id"), "node_ip": self.where.get("node_ip"),
                  "digest": request_digest(message)}
        journal(dict(record, event="start"))
        stream = self.actor.call.options(num_returns="streaming").remote(json.dumps(message))
        try:
            for ref in stream:
                item = ray.get(ref)
                if isinstance(item, dict):
                    journal(dict(record, event="worker exit", code=item["exit"]))
                    mirror_exit(item["exit"], item.get("stderr", ""))
                send(item, message)
        except ray.exceptions.RayError as e:
            journal(dict(record, event="host lost"))
            first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            lost(request_id, f"host lost: the Ray node {self.where.get('node_ip')} "
                             f"({str(self.where.get('node_id'))[:8]}) running this "
                             f"{self.args.lane} worker stopped answering "
                             f"({type(e).__name__}: {first_line[:300]})")
            return False
        journal(dict(record, event="done"))
        return True

    def send_line(self, message: dict) -> None:
        if self.actor is not None:
            self.actor.send.remote(json.dumps(message))

    def close(self) -> None:
        if self.actor is None:
            return
        import ray

        try:
            ray.get(self.actor.stop.remote(), timeout=5)
        except Exception as e:  # noqa: BLE001
            log(f"stopping the actor: {type(e).__name__}")


def mirror_exit(code: int, stderr_tail: str):
    """Dies as the worker died, so the host reads a crash here as it does everywhere."""
    if stderr_tail:
        sys.stderr.write(stderr_tail)
        sys.stderr.flush()
    if code is not None and code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        time.sleep(5)
    os._exit(code if code else 1)


def take_over_stdout():
    """The protocol owns a private copy of fd 1; Ray's own prints land on stderr."""
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", required=True)
    parser.add_argument("--lane", choices=("compile", "timing"), required=True)
    parser.add_argument("--nice", type=int, default=0)
    parser.add_argument("--device-resource", default="TPU")
    parser.add_argument("--bundle", required=True, help="the worker directory (tpu/worker)")
    parser.add_argument("--placement-timeout", type=float, default=PLACEMENT_TIMEOUT_S)
    args = parser.parse_args(argv)
    args.bundle = os.path.abspath(args.bundle)

    out = take_over_stdout()
    out_lock = threading.Lock()

    def write(line: str) -> None:
        with out_lock:
            out.write(line.encode("utf-8") + b"\n")
            out.flush()

    def send(item: str, message: dict) -> None:
        if message.get("op") == "hello":
            reply = json.loads(item)
            if "event" not in reply and reply.get("ok"):
                reply["ray"] = slot.ray_facts()
                item = json.dumps(reply)
        write(item)

    def lost(request_id, why: str) -> None:
        write(json.dumps({"id": request_id, "ok": False, "host_lost": True,
                          "error": {"kind": "host_lost", "message": why}}))
        log(why)
        os._exit(0)

    slot = Slot(args)
    opened = False
    ops: list = []
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            write(json.dumps({"id": None, "ok": False,
                              "error": {"kind": "protocol", "message": "not JSON"}}))
            continue
        op = message.get("op")
        if not opened and op != "shutdown":
            try:
                slot.open()
                opened = True
            except SlotError as e:
                write(json.dumps({"id": message.get("id"), "ok": False,
                                  "error": {"kind": "unreachable", "message": str(e)}}))
                log(str(e))
                continue
        if op == "shutdown":
            slot.close()
            write(json.dumps({"id": message.get("id"), "ok": True}))
            break
        if op == "cancel":
            slot.send_line(message)
            continue
        # One op at a time, as the worker runs them, on a thread: cancels keep flowing.
        thread = threading.Thread(target=slot.forward, args=(message, send, lost), daemon=True)
        thread.start()
        ops.append(thread)
    for thread in ops:
        thread.join(timeout=5)
    slot.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
