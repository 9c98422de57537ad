"""What /proc says about the server under load: its memory and threads, and its workers'."""
import os


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
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children.get(p, [])
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
