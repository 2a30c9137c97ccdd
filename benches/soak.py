"""Soak test of ``acp-fast proxy``: relay a lot of agent traffic with garbage lines in it, then check
that every byte arrived and the proxy's memory stayed flat.

    python benches/soak.py                         # 1 GB, 1 % garbage lines (make soak)
    python benches/soak.py --mb 25 --no-progress   # what tests/test_soak.py runs

The agent is this script (``--agent``): it writes ``--mb`` megabytes of mixed ACP traffic
(:mod:`acp_fast.traffic`, a few distinct corpora of ``--block-frames`` frames, repeated, each copy
led by a ``_soak/block`` notification carrying its number, so that every copy is distinct and in
order), with a garbage line (not JSON, invalid UTF-8, JSON that is not JSON-RPC, a truncated
object, ...) after about ``--garbage-rate`` of its lines. The proxy runs ``--quiet`` between it
and this process (the editor side; the proxy's stdin is empty). The checks:

* the proxy's stdout is exactly the good frames, byte for byte and in order, and nothing else;
* its stderr is exactly the garbage lines, in order (diverted: the proxy's default
  ``--agent-invalid divert``; ``--quiet`` leaves nothing else there);
* the proxy exits 0;
* its resident memory (``VmRSS`` of ``/proc/PID/status``, sampled every ``--interval`` seconds)
  stays flat: after the first ``--warmup`` of the bytes, the peak of the second half of the
  traffic is at most ``--rss-slack`` MiB above the peak of the first half.

Progress goes to stderr; the report (throughput, RSS min / max, counts) to stdout; ``--json FILE``
writes it. Exit status 0 when every check passed, 1 when one failed, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from acp_fast import traffic

#: Lines that are not JSON-RPC, one of which follows a good line with probability ``rate``.
GARBAGE: Tuple[bytes, ...] = (
    b"garbage: an agent's stray print",
    b"\xff\xfe\x00 binary junk \x80\x81",
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":',
    b'{"hello":"world"}',
    b"[1,2,3]",
    b"Traceback (most recent call last):",
    b"null",
    b'"a JSON string"',
)


def mark(index: int) -> bytes:
    """The notification that leads copy ``index`` of a corpus."""
    return b'{"jsonrpc":"2.0","method":"_soak/block","params":{"index":%d}}\n' % index


def corpora(count: int, frames: int, seed: int) -> List[List[bytes]]:
    """``count`` distinct corpora of mixed traffic, ``frames`` frames each."""
    return [traffic.frames("mixed", frames, seed=seed + i) for i in range(count)]


def garbage(seed: int, index: int, lines: int, rate: float) -> List[Tuple[int, bytes]]:
    """(position, garbage line) of copy ``index``: after its line ``position`` (0 is the mark),
    in order; the same for the agent and the checker."""
    rng = random.Random(seed * 1_000_003 + index)
    out = []
    for position in range(lines):
        if rng.random() < rate:
            out.append((position, rng.choice(GARBAGE) + b" %d" % rng.randrange(1000)))
    return out


def blocks_for(mb: float, corpus_bytes: float) -> int:
    """Copies of a corpus (of ``corpus_bytes`` on average) that make at least ``mb`` megabytes."""
    return max(1, math.ceil(mb * 1e6 / corpus_bytes))


# ---------------------------------------------------------------------------------------------
# The agent


def agent(args: argparse.Namespace) -> int:
    """Write the traffic to stdout: ``args.blocks`` copies, garbage lines in between."""
    corpus = [path.read_bytes().splitlines(keepends=True) for path in sorted(Path(args.corpus_dir).iterdir())]
    out = sys.stdout.buffer
    for index in range(args.blocks):
        lines = [mark(index), *corpus[index % len(corpus)]]
        junk = garbage(args.seed, index, len(lines), args.garbage_rate)
        pieces: List[bytes] = []
        start = 0
        for position, line in junk:
            pieces.append(b"".join(lines[start : position + 1]))
            pieces.append(line + b"\n")
            start = position + 1
        pieces.append(b"".join(lines[start:]))
        out.write(b"".join(pieces))
    out.flush()
    return 0


# ---------------------------------------------------------------------------------------------
# The checker


def rss_kib(pid: int) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


class Sampler(threading.Thread):
    """VmRSS of ``pid`` every ``interval`` seconds, with the bytes relayed so far."""

    def __init__(self, pid: int, interval: float, relayed: List[int]) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval, self.relayed = pid, interval, relayed
        self.samples: List[Tuple[int, int]] = []  # (bytes relayed, KiB)
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.interval):
            kib = rss_kib(self.pid)
            if kib is None:
                return
            self.samples.append((self.relayed[0], kib))


def soak(args: argparse.Namespace) -> Dict[str, Any]:
    def say(text: str) -> None:
        if not args.no_progress:
            print(f"soak: {text}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        say(f"generating {args.corpora} corpora of {args.block_frames:,} mixed frames")
        corpus = corpora(args.corpora, args.block_frames, args.seed)
        for i, frames in enumerate(corpus):
            (Path(tmp) / f"{i:03d}.ndjson").write_bytes(b"".join(frames))
        joined = [b"".join(frames) for frames in corpus]
        blocks = blocks_for(args.mb, sum(map(len, joined)) / len(joined))
        agent_cmd = [sys.executable, os.path.abspath(__file__), "--agent", "--corpus-dir", tmp]
        agent_cmd += ["--blocks", str(blocks), "--seed", str(args.seed), "--garbage-rate", str(args.garbage_rate)]
        env = dict(os.environ)
        if args.backend:
            env["ACP_FAST_BACKEND"] = args.backend
        cmd = [sys.executable, "-m", "acp_fast.cli", "proxy", "--quiet", *args.proxy_args, "--", *agent_cmd]
        say(f"relaying {blocks} copies (about {args.mb:g} MB) through `acp-fast proxy`")
        proxy = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proxy.stdout is not None and proxy.stderr is not None  # both PIPE
        stderr: List[bytes] = []
        err = proxy.stderr
        reader = threading.Thread(target=lambda: stderr.append(err.read()), daemon=True)
        reader.start()
        relayed = [0]
        sampler = Sampler(proxy.pid, args.interval, relayed)
        sampler.start()
        problems: List[str] = []
        fd = proxy.stdout.fileno()
        pending = b""  # received bytes not yet compared
        received = 0  # lines
        first: Optional[float] = None
        last_note = time.monotonic()
        index = 0
        expected = mark(0) + joined[0]
        offset = 0  # compared bytes of `expected`
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            if first is None:
                first = time.monotonic()
            relayed[0] += len(chunk)
            received += chunk.count(b"\n")
            pending += chunk
            while pending and not problems:
                if index >= blocks:
                    problems.append(f"stdout: {len(pending)} bytes after the last good frame: {pending[:80]!r}")
                    break
                take = min(len(pending), len(expected) - offset)
                if pending[:take] != expected[offset : offset + take]:
                    at = next(i for i in range(take) if pending[i] != expected[offset + i])
                    problems.append(
                        f"stdout: copy {index}, byte {offset + at}: expected {expected[offset + at : offset + at + 60]!r}, "
                        f"found {pending[at : at + 60]!r}"
                    )
                    break
                offset += take
                pending = pending[take:]
                if offset == len(expected):
                    index += 1
                    offset = 0
                    expected = mark(index) + joined[index % len(joined)] if index < blocks else b""
            now = time.monotonic()
            if now - last_note >= 2 and first is not None:
                last_note = now
                rss = sampler.samples[-1][1] / 1024 if sampler.samples else float("nan")
                say(
                    f"{relayed[0] / 1e6:,.0f} MB relayed, {relayed[0] / 1e6 / (now - first):,.0f} MB/s, proxy RSS {rss:.0f} MiB"
                )
        end = time.monotonic()
        status = proxy.wait()
        sampler.stop.set()
        sampler.join()
        reader.join()
        if not problems and (index, offset) != (blocks, 0):
            problems.append(f"stdout ended in copy {index} of {blocks}, at byte {offset}: frames were lost")
        if status != 0:
            problems.append(f"the proxy exited with status {status}")
        want = b"".join(
            line + b"\n"
            for i in range(blocks)
            for _, line in garbage(args.seed, i, args.block_frames + 1, args.garbage_rate)
        )
        got = b"".join(stderr)
        if got != want:
            same = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
            counts = want.count(b"\n"), got.count(b"\n")
            problems.append(
                f"stderr: expected {counts[0]} garbage lines, found {counts[1]} lines; first difference at byte "
                f"{same}: expected {want[same : same + 60]!r}, found {got[same : same + 60]!r}"
            )
    seconds = end - (first or end)
    # Flat: after the warm-up, the peak of the second half of the bytes is at most `rss_slack` MiB
    # above the peak of the first half (the RSS of a relay moves by several MiB with its buffers;
    # memory that grows with the traffic shows as a higher peak later).
    start = args.warmup * relayed[0]
    middle = (start + relayed[0]) / 2
    first_half = [kib for done, kib in sampler.samples if start <= done < middle]
    second_half = [kib for done, kib in sampler.samples if done >= middle]
    samples = [kib for _, kib in sampler.samples]
    growth = (max(second_half) - max(first_half)) / 1024 if first_half and second_half else None
    report: Dict[str, Any] = {
        "backend": args.backend or os.environ.get("ACP_FAST_BACKEND") or "rust",
        "bytes": relayed[0],
        "frames": received,
        "garbage_lines": want.count(b"\n"),
        "copies": blocks,
        "seconds": seconds,
        "mb_per_s": relayed[0] / 1e6 / seconds if seconds else None,
        "frames_per_s": received / seconds if seconds else None,
        "rss_samples": len(samples),
        "rss_min_mib": min(samples) / 1024 if samples else None,
        "rss_max_mib": max(samples) / 1024 if samples else None,
        "rss_growth_mib": growth,
        "status": status,
        "rss_kib_by_bytes": sampler.samples,
    }
    if growth is None:
        problems.append(f"RSS: {len(samples)} samples, too few to judge (a smaller --interval)")
    elif growth > args.rss_slack:
        problems.append(
            f"RSS not flat: its peak grew by {growth:.1f} MiB from the first to the second half of the "
            f"traffic after warm-up (allowed: {args.rss_slack:g} MiB)"
        )
    report["problems"] = problems
    return report


def render(r: Dict[str, Any]) -> str:
    lines = [
        (
            f"relayed {r['bytes'] / 1e6:,.1f} MB ({r['frames']:,} frames, {r['copies']} copies) with "
            f"{r['garbage_lines']:,} garbage lines in {r['seconds']:.1f} s: {r['mb_per_s'] or 0:,.0f} MB/s, "
            f"{r['frames_per_s'] or 0:,.0f} frames/s ({r['backend']} backend)"
        ),
    ]
    if r["rss_samples"]:
        text = f"proxy RSS: {r['rss_min_mib']:.1f} to {r['rss_max_mib']:.1f} MiB over {r['rss_samples']} samples"
        if r["rss_growth_mib"] is not None:
            text += f"; peak {r['rss_growth_mib']:+.1f} MiB from the first to the second half after warm-up"
        lines.append(text)
    lines += [f"FAILED: {p}" for p in r["problems"]] or ["every check passed"]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    from acp_fast.cli._usage import Parser, integer, number

    p = Parser(prog="python benches/soak.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=number(0.001), default=1024, help="megabytes of traffic to relay (default 1024)")
    p.add_argument("--garbage-rate", type=number(0), default=0.01, help="garbage lines per good line (default 0.01)")
    p.add_argument("--seed", type=integer(0), default=1)
    p.add_argument("--corpora", type=integer(1), default=4, help="distinct corpora (default 4)")
    p.add_argument("--block-frames", type=integer(1), default=20_000, help="frames per corpus (default 20000)")
    p.add_argument("--backend", choices=("rust", "python"), help="the proxy's backend (default: ACP_FAST_BACKEND)")
    p.add_argument("--interval", type=number(0.001), default=0.25, help="seconds between RSS samples (default 0.25)")
    p.add_argument("--warmup", type=number(0), default=0.25, help="share of the bytes before RSS is judged (0.25)")
    p.add_argument("--rss-slack", type=number(0), default=8, help="MiB the RSS peak may grow after warm-up (8)")
    p.add_argument("--proxy-args", nargs=argparse.REMAINDER, default=[], help="more options for the proxy (last)")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    p.add_argument("--agent", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--corpus-dir", help=argparse.SUPPRESS)
    p.add_argument("--blocks", type=integer(1), help=argparse.SUPPRESS)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.agent:
        return agent(args)
    if args.garbage_rate >= 1:
        parser().error("--garbage-rate must be below 1")
    report = soak(args)
    print(render(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
