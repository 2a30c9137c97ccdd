"""Memory goes back after a huge frame (issue 16, item 3): a 300 MB line, too large, fed in
1 MiB pieces, or a 40 MB good one, then small frames; the process's RSS (``/proc/self/statm``)
must come back near where it was before, on both backends and through every reader that holds a
partial line (``FrameDecoder``, the proxy's ``Framer(joined=True)``, ``ToolCallStore``).

Each case runs in a fresh process (``ACP_FAST_BACKEND``), which holds at most about
``max_frame_bytes`` (64 MiB) plus one copy of a good frame at any moment: the whole file takes
a few seconds and well under 1 GB, and is marked ``memory`` (``pytest -m "not memory"`` leaves it
out on a machine short of memory).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.memory

_PROBE = r"""
import sys
import acp_fast
from acp_fast import traffic

reader, size_mb = sys.argv[1], int(sys.argv[2])

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

if reader == "decoder":
    r = acp_fast.FrameDecoder()
    feed = r.feed
elif reader == "framer":
    r = acp_fast.Framer(joined=True)
    feed = r.feed
else:
    r = acp_fast.ToolCallStore(1)
    feed = lambda data: r.feed(data, changes=False)
small = traffic.generate("mixed", 2000, seed=1)
for _ in range(3):
    feed(small)  # allocator pools and caches warmed up
before = rss()
head = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"x":"'
piece = b"x" * (1 << 20)
kinds = []
for data in [head] + [piece] * size_mb + [b'"}}}\n']:
    kinds += [getattr(item, "kind", type(item).__name__) for item in feed(data) or ()]
peak = rss()
for _ in range(5):
    feed(small)
print(before, peak, rss(), acp_fast.BACKEND, ",".join(map(str, kinds)) or "-")
"""


@pytest.mark.parametrize("reader", ["decoder", "framer", "store"])
@pytest.mark.parametrize("size_mb", [300, 40])
def test_rss_comes_back_after_a_huge_frame(backend_id, reader, size_mb):
    env = {**os.environ, "ACP_FAST_BACKEND": backend_id}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, reader, str(size_mb)], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    before, peak, after, backend, kinds = done.stdout.split()
    assert backend == backend_id
    if reader == "decoder":
        # the 300 MB line is one frame_too_large error, the 40 MB one a notification
        assert kinds == ("frame_too_large" if size_mb == 300 else "notification")
    held = (int(after) - int(before)) / 2**20
    assert held < 24, (
        f"{held:.0f} MiB still held after the huge frame (peak {(int(peak) - int(before)) / 2**20:.0f} MiB)"
    )
