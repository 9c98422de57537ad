"""The processes below a pid, read from /proc: what tests and benches kill or measure when a
process tree must go at once (a node of a cluster, an sshd and its sessions, a server's workers).
Processes that started sessions of their own are still found: only parent links count."""
import os


def descendants(root):
    """PIDs of every live descendant of `root`."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out
