"""A transparent tap for tests: ``python tap.py LOGDIR -- CMD...`` runs CMD, copies stdin to its
stdin and its stdout to stdout unchanged, and logs both byte streams to LOGDIR/in.bin (what CMD
received) and LOGDIR/out.bin (what CMD sent). Exits with CMD's status."""

import os
import subprocess
import sys
import threading


def pump(src, dst, log, close_dst):
    with open(log, "wb") as f:
        while True:
            chunk = os.read(src, 1 << 16)
            if not chunk:
                break
            f.write(chunk)
            try:
                os.write(dst, chunk) if len(chunk) else None
            except BrokenPipeError:
                pass
    if close_dst:
        os.close(dst)


def main():
    split = sys.argv.index("--")
    logdir, cmd = sys.argv[1], sys.argv[split + 1 :]
    os.makedirs(logdir, exist_ok=True)
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    to_child = threading.Thread(
        target=pump, args=(0, child.stdin.fileno(), os.path.join(logdir, "in.bin"), True), daemon=True
    )
    from_child = threading.Thread(target=pump, args=(child.stdout.fileno(), 1, os.path.join(logdir, "out.bin"), False))
    to_child.start()
    from_child.start()
    status = child.wait()
    from_child.join()
    sys.exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main()
