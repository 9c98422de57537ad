"""A command host's command that puts a real worker behind a proxy which, once per marker file,
answers the first `evaluate` request with one overlong line on the protocol stream instead of
forwarding it: MODE `over64` writes 65 MiB and a newline, MODE `endless` writes until it is
killed (no newline ever). Every other request and reply passes through unchanged, and commands
that are not the worker (the bundle install) run as they are.

usage: overlong_proxy.py MODE MARKER_FILE REMOTE_COMMAND
"""
import json
import os
import subprocess
import sys
import threading

CHUNK = b"x" * (1 << 20)


def garbage(out, mode):
    if mode == "over64":
        for _ in range(65):
            out.write(CHUNK)
        out.write(b"\n")
        out.flush()
        return
    while True:  # endless: the reader must give up on it, and the host kill us
        out.write(CHUNK)
        out.flush()


def main():
    mode, marker, command = sys.argv[1:4]
    if "maxkernel_worker.py" not in command:
        os.execvp("sh", ["sh", "-c", command])
    worker = subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    out = sys.stdout.buffer
    lock = threading.Lock()

    def replies():
        for line in worker.stdout:
            with lock:
                out.write(line)
                out.flush()

    threading.Thread(target=replies, daemon=True).start()
    for line in sys.stdin.buffer:
        try:
            op = json.loads(line).get("op")
        except (ValueError, AttributeError):
            op = None
        if op == "evaluate" and not os.path.exists(marker):
            open(marker, "w").close()
            with lock:
                garbage(out, mode)
            continue  # the request is never answered: the line above is all the host gets
        worker.stdin.write(line)
        worker.stdin.flush()
    worker.stdin.close()
    worker.wait()


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        os._exit(1)  # the host closed our stdout (it killed the worker): nothing more to say
