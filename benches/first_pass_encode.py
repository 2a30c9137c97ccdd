"""Encode cost on freshly built objects (no UTF-8 cached in the strings yet).

`acp-fast bench` encodes the same dicts pass after pass; CPython caches the UTF-8 form of a
non-ASCII str the first time acp-fast (or msgspec) asks for it, so later passes are cheaper than
encoding new objects. This script rebuilds the corpus before every timed pass (untimed) and times
one pass of each encoder: `python benches/first_pass_encode.py [mixed|large] [frames]`.
"""

import statistics
import sys
import time

import orjson

from acp_fast import _native, traffic

profile = sys.argv[1] if len(sys.argv) > 1 else "large"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
lines = [line for line in traffic.generate(profile, n, seed=0).split(b"\n") if line]
times = {"acp_fast.dumps": [], "orjson.dumps": []}
for _ in range(9):
    for name, dumps in (("acp_fast.dumps", _native.dumps), ("orjson.dumps", orjson.dumps)):
        objs = [orjson.loads(line) for line in lines]  # fresh strings, untimed
        start = time.perf_counter()
        for obj in objs:
            dumps(obj)
        times[name].append(time.perf_counter() - start)
base = statistics.median(times["orjson.dumps"])
for name, ts in times.items():
    med = statistics.median(ts)
    print(f"{profile:6} {name:15} {med * 1e9 / len(lines):9.0f} ns/frame  {base / med:5.2f}x orjson")
