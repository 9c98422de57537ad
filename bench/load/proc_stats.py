"""What /proc says about the server under load: its memory and threads, and its workers'."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
import process_tree  # noqa: E402


def status(pid):
    """VmRSS, VmHWM (KiB) and Threads of process `pid`, or None once it is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM", "Threads"):
                    out[key] = int(value.split()[0])
    except OSError:
        return None
    try:  # the main thread (tid == pid): ns on a CPU, ns waiting on a run queue
        with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
            out["main_run_ns"], out["main_wait_ns"] = (int(x) for x in f.read().split()[:2])
    except (OSError, ValueError):
        pass
    return out


def descendants(pid):
    """Processes below pid (the server's workers) with their VmRSS in KiB."""
    found = process_tree.descendants(pid)
    rss = 0
    for p in found:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss += int(line.split()[1])
        except OSError:
            pass
    return len(found), rss
