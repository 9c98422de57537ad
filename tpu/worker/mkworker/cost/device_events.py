"""Which events of a jax.profiler trace (Chrome/Perfetto JSON) are the device's own op
executions, on a TPU and on a GPU: what the device time (judge.clock) and the profile summary
(cost.profile) add up.

A device is a process named `/device:...`. Its rows (threads) are either ops or summaries:

- TPU: the "XLA Ops" row holds the ops; "XLA Modules", "Steps" and the framework rows
  summarise them.
- GPU (CUPTI): each CUDA stream is a row "Stream #N(...)" holding the kernels and copies, each
  carrying the XLA op and module it ran for (`hlo_op`, `hlo_module`). A trace may also hold rows
  derived from those ("XLA Ops", "XLA Modules", "Framework Ops", ...): the same time again, so
  when a device has stream rows only the stream rows are counted.
"""

from __future__ import annotations

# Rows that summarise other rows (a module's whole run, a step, a framework op): never summed.
SUMMARY_ROWS = ("xla modules", "steps", "framework", "tensorflow", "source code", "xla traceme",
                "host offload", "launch stats")
STREAM_ROW = "stream"  # a GPU trace's rows of kernels, one per CUDA stream


class DeviceRows:
    """The rows of a trace's device processes whose op events count (`counts`)."""

    def __init__(self, events):
        self.procs, self.threads = {}, {}
        for e in events:
            if e.get("ph") != "M":
                continue
            name = str((e.get("args") or {}).get("name", ""))
            if e.get("name") == "process_name":
                self.procs[e.get("pid")] = name
            elif e.get("name") == "thread_name":
                self.threads[(e.get("pid"), e.get("tid"))] = name.lower()
        # Devices whose kernels sit on stream rows (a GPU): only those rows count there.
        self.stream_devices = set()
        for e in events:
            if e.get("ph") == "X" and self.is_device(e.get("pid")) and \
                    self.row_name(e).startswith(STREAM_ROW):
                args = e.get("args") or {}
                if "hlo_op" in args or "hlo_module" in args:
                    self.stream_devices.add(e.get("pid"))

    def is_device(self, pid) -> bool:
        return "/device:" in self.procs.get(pid, "")

    def row_name(self, e) -> str:
        return self.threads.get((e.get("pid"), e.get("tid")), "")

    def counts(self, e) -> bool:
        """An event on a device row that holds ops: not a summary row, and on a device with
        stream rows, a stream row."""
        if not self.is_device(e.get("pid")):
            return False
        row = self.row_name(e)
        if any(s in row for s in SUMMARY_ROWS):
            return False
        return e.get("pid") not in self.stream_devices or row.startswith(STREAM_ROW)

    def device_kind(self) -> str | None:
        """"gpu", "tpu" or None, from the device process names."""
        for name in self.procs.values():
            if "/device:GPU" in name:
                return "gpu"
            if "/device:TPU" in name:
                return "tpu"
        return None
