"""What ``--strict`` would cost per frame if it were a Python middleware (docs/PROXY.md, "What is
built on the middleware API").

``acp-fast proxy --strict`` answers the editor's lines that are not JSON-RPC. Without middleware
the relay runs in the core (rust/relay.rs) and hands only such lines back to Python, so
``--strict`` costs nothing per valid frame. Any registered middleware moves every frame to the
Python path (each message decoded and passed to the chain). This relays ``N`` editor frames (a
420-byte ``session/prompt`` each) through ``Proxy(..., strict=True)`` to an agent that discards
them, with no middleware and with one no-op middleware (the least a middleware-built ``--strict``
would pay), interleaved, and prints the CPU time (user + system, from ``wait4``, interpreter
start-up included) of each: load-independent, unlike wall time on a shared machine.

    python benches/proxy_strict_cost.py [N] [ROUNDS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List

MODES = {
    "--strict (the core's relay)": "Proxy(sys.argv[1:], strict=True)",
    "--strict + one no-op middleware": "Proxy(sys.argv[1:], strict=True, middleware=[lambda m, s, c: m])",
}


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    text = b"x" * 300
    frame = b'{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"%s"}]}}\n'
    data = b"".join(frame % (i, text) for i in range(n))
    cpu: Dict[str, List[float]] = {name: [] for name in MODES}
    with tempfile.NamedTemporaryFile() as corpus:
        corpus.write(data)
        corpus.flush()
        for _ in range(rounds):
            for name, proxy in MODES.items():
                code = f"import sys; from acp_fast.proxy import Proxy; sys.exit({proxy}.run())"
                with open(corpus.name, "rb") as stdin, open(os.devnull, "wb") as stdout:
                    cmd = [sys.executable, "-c", code, "sh", "-c", "cat > /dev/null"]
                    p = subprocess.Popen(cmd, stdin=stdin, stdout=stdout)
                    _, status, usage = os.wait4(p.pid, 0)
                if status != 0:
                    raise SystemExit(f"{name}: the proxy exited with wait status {status}")
                cpu[name].append(usage.ru_utime + usage.ru_stime)
    import acp_fast

    print(f"{n:,} editor frames of {len(data) / n:.0f} B, {rounds} rounds, backend {acp_fast.BACKEND}")
    medians = []
    for name, seconds in cpu.items():
        med = statistics.median(seconds)
        medians.append(med)
        print(
            f"  {name}: CPU {med:.3f} s (min {min(seconds):.3f}, max {max(seconds):.3f}), {med / n * 1e6:.2f} us/frame"
        )
    print(f"  difference: {(medians[1] - medians[0]) / n * 1e6:.2f} us/frame")
    return 0


if __name__ == "__main__":
    sys.exit(main())
