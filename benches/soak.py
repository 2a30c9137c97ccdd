"""Soak test of ``acp-fast proxy``: relay a lot of agent traffic with garbage lines in it, then check
that every byte arrived and the proxy's memory stayed flat.

    python benches/soak.py                         # 1 GB, 1 % garbage lines (make soak)
    python benches/soak.py --mb 25 --no-progress   # what tests/test_soak.py runs
    python benches/soak.py --sessions 1000000 [--proxy-args --bridge 1:2]   # make soak-sessions

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

Sessions mode (``--sessions N``; ``make soak-sessions`` runs 1,000,000 through the plain proxy and
through ``--bridge 1:2``): every copy of a corpus gets fresh session ids. Session ``i`` of a
corpus (in the order the ids first appear, in ``params.sessionId`` and in the ``session/new``
answer's ``result.sessionId``) becomes ``s{copy}-{i}`` in copy ``copy``, so the traffic stays
valid ACP and its sessions are all distinct. The run is sized by sessions, not by ``--mb``
(giving both is a usage error): it ends with the copy in which the N-th session appears, so it
reaches N to N+3 sessions, and the report gives the exact number. ``--block-frames`` defaults to
24 then (``initialize``, two to four ``session/new`` exchanges and a few frames of prompt turns
in each session, session updates included: short sessions, so that a million of them take
minutes). The report adds the sessions and the proxy's RSS at 10 %, 50 % and 90 % of the
traffic, with the sessions relayed by then.

``--proxy-args --bridge EDITOR:AGENT`` (sessions mode only) runs the proxy as a bridge: the agent
speaks the agent's version (the ``v2`` profile of :mod:`acp_fast.traffic` for an agent speaking
v2, ``mixed`` for v1), and the proxy's stdout is no longer the agent's bytes. The check is then
still byte for byte: this process converts each corpus once with its own
:class:`acp_fast.bridge.Bridge` (copy 0's session ids), and every copy must reach the editor as
that conversion with the copy's session ids. That holds because the sessions of a copy are new
to the bridge: what it keeps of older sessions (within its bounds, docs/BRIDGE.md) does not
change how a new session is converted, and a difference is reported like a lost frame. The
frames the bridge documents as not shown to a v1 editor (the v2 acknowledgement of a prompt,
``state_update`` ``running``, the agent's echo of the prompt, ...) are exactly those missing from
the reference conversion. The garbage lines must still all reach stderr, in order. As in the
rest of the soak the agent writes both directions of the generated traffic (the editor's
requests too), so the bridge converts those as frames from the agent: the check compares the
proxy with the library's bridge on the same frames, it is not a protocol check of the output.

Progress goes to stderr; the report (throughput, RSS min / max, counts) to stdout; ``--json FILE``
writes it. Exit status 0 when every check passed, 1 when one failed, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
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


def corpora(count: int, frames: int, seed: int, profile: str = "mixed") -> List[List[bytes]]:
    """``count`` distinct corpora of ``profile`` traffic, ``frames`` frames each."""
    return [traffic.frames(profile, frames, seed=seed + i) for i in range(count)]


#: A session id of :mod:`acp_fast.traffic`, quoted: what sessions mode renames.
SESSION_ID = re.compile(rb'"sess_[0-9a-f]{16}"')


class Sessions:
    """A corpus whose sessions get fresh ids in each copy: ``fill(copy)`` is ``data`` with the
    quoted id ``ids[i]`` replaced by ``"s{copy}-{i}"`` (by default ``ids`` are the generator's
    session ids in the order they first appear)."""

    def __init__(self, data: bytes, ids: Optional[Sequence[bytes]] = None) -> None:
        self.ids = list(dict.fromkeys(SESSION_ID.findall(data))) if ids is None else list(ids)
        index = {sid: i for i, sid in enumerate(self.ids)}
        pattern = re.compile(b"(" + b"|".join(map(re.escape, self.ids)) + b")") if self.ids else None
        parts = pattern.split(data) if pattern else [data]
        self.text, self.slots = parts[0::2], [index[sid] for sid in parts[1::2]]

    def fill(self, copy: int) -> bytes:
        names = [b'"s%d-%d"' % (copy, i) for i in range(len(self.ids))]
        out = [self.text[0]]
        for slot, text in zip(self.slots, self.text[1:]):
            out += (names[slot], text)
        return b"".join(out)


def copies_for(sessions: int, per_corpus: Sequence[int]) -> Tuple[int, int]:
    """(copies, sessions reached): the copies, corpus after corpus, until ``sessions`` are used."""
    if not any(per_corpus):
        raise ValueError("the corpora have no session ids to rename")
    copies = reached = 0
    while reached < sessions:
        reached += per_corpus[copies % len(per_corpus)]
        copies += 1
    return copies, reached


def bridge_versions(proxy_args: Sequence[str]) -> Optional[Tuple[int, int]]:
    """(editor, agent) of a ``--bridge EDITOR:AGENT`` among the proxy's options, else None."""
    found = None
    for i, arg in enumerate(proxy_args):
        if arg == "--bridge" and i + 1 < len(proxy_args):
            found = proxy_args[i + 1]
        elif arg.startswith("--bridge="):
            found = arg.partition("=")[2]
    if found is None:
        return None
    editor, _, agent = found.partition(":")
    return int(editor), int(agent)


def converted(data: bytes, editor: int, agent: int) -> bytes:
    """What a fresh bridge sends the editor for the agent frames ``data``."""
    from acp_fast.bridge import Bridge

    bridge = Bridge(editor=editor, agent=agent)
    return b"".join(out for line in data.splitlines(keepends=True) for out in bridge.from_agent(line))


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
    data = [path.read_bytes() for path in sorted(Path(args.corpus_dir).iterdir())]
    corpus = [d.splitlines(keepends=True) for d in data]
    fresh = [Sessions(d) for d in data] if args.fresh_sessions else []
    out = sys.stdout.buffer
    for index in range(args.blocks):
        if fresh:
            lines = [mark(index), *fresh[index % len(fresh)].fill(index).splitlines(keepends=True)]
        else:
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
    """VmRSS of ``pid`` every ``interval`` seconds, with the bytes and sessions relayed so far."""

    def __init__(self, pid: int, interval: float, relayed: List[int]) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval, self.relayed = pid, interval, relayed
        self.samples: List[Tuple[int, int]] = []  # (bytes relayed, KiB)
        self.sessions: List[int] = []  # sessions relayed at each sample
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.interval):
            kib = rss_kib(self.pid)
            if kib is None:
                return
            self.samples.append((self.relayed[0], kib))
            self.sessions.append(self.relayed[1])


def soak(args: argparse.Namespace) -> Dict[str, Any]:
    def say(text: str) -> None:
        if not args.no_progress:
            print(f"soak: {text}", file=sys.stderr, flush=True)

    bridge = bridge_versions(args.proxy_args)
    profile = "v2" if bridge and bridge[1] == 2 else "mixed"
    with tempfile.TemporaryDirectory() as tmp:
        say(f"generating {args.corpora} corpora of {args.block_frames:,} {profile} frames")
        corpus = corpora(args.corpora, args.block_frames, args.seed, profile)
        for i, frames in enumerate(corpus):
            (Path(tmp) / f"{i:03d}.ndjson").write_bytes(b"".join(frames))
        joined = [b"".join(frames) for frames in corpus]
        # What copy `index` of a corpus must look like on the proxy's stdout (after its mark).
        fresh: List[Sessions] = []
        if args.sessions:
            fresh = [Sessions(data) for data in joined]
            if bridge:
                # The bridge's conversion of copy 0, with its session ids renamed per copy.
                names = [[b'"s0-%d"' % i for i in range(len(f.ids))] for f in fresh]
                fresh = [Sessions(converted(f.fill(0), *bridge), n) for f, n in zip(fresh, names)]
            blocks, sessions = copies_for(args.sessions, [len(f.ids) for f in fresh])
        else:
            blocks, sessions = blocks_for(args.mb, sum(map(len, joined)) / len(joined)), 0

        def expected_copy(index: int) -> bytes:
            if index >= blocks:
                return b""
            return mark(index) + (fresh[index % len(fresh)].fill(index) if fresh else joined[index % len(joined)])

        agent_cmd = [sys.executable, os.path.abspath(__file__), "--agent", "--corpus-dir", tmp]
        agent_cmd += ["--blocks", str(blocks), "--seed", str(args.seed), "--garbage-rate", str(args.garbage_rate)]
        if args.sessions:
            agent_cmd.append("--fresh-sessions")
        env = dict(os.environ)
        if args.backend:
            env["ACP_FAST_BACKEND"] = args.backend
        cmd = [sys.executable, "-m", "acp_fast.cli", "proxy", "--quiet", *args.proxy_args, "--", *agent_cmd]
        size = f"{sessions:,} sessions" if args.sessions else f"about {args.mb:g} MB"
        say(f"relaying {blocks:,} copies ({size}) through `{' '.join(['acp-fast proxy', *args.proxy_args])}`")
        proxy = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proxy.stdout is not None and proxy.stderr is not None  # both PIPE
        stderr: List[bytes] = []
        err = proxy.stderr
        reader = threading.Thread(target=lambda: stderr.append(err.read()), daemon=True)
        reader.start()
        relayed = [0, 0]  # bytes, sessions
        per_copy = [len(f.ids) for f in fresh]
        sampler = Sampler(proxy.pid, args.interval, relayed)
        sampler.start()
        problems: List[str] = []
        fd = proxy.stdout.fileno()
        pending = b""  # received bytes not yet compared
        received = 0  # lines
        first: Optional[float] = None
        last_note = time.monotonic()
        index = 0
        expected = expected_copy(0)
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
            at_byte = 0  # compared bytes of `pending`
            while at_byte < len(pending) and not problems:
                if index >= blocks:
                    rest = pending[at_byte:]
                    problems.append(f"stdout: {len(rest)} bytes after the last good frame: {rest[:80]!r}")
                    break
                take = min(len(pending) - at_byte, len(expected) - offset)
                got = pending[at_byte : at_byte + take]
                if got != expected[offset : offset + take]:
                    at = next(i for i in range(take) if got[i] != expected[offset + i])
                    problems.append(
                        f"stdout: copy {index}, byte {offset + at}: expected {expected[offset + at : offset + at + 60]!r}, "
                        f"found {got[at : at + 60]!r}"
                    )
                    break
                offset += take
                at_byte += take
                if offset == len(expected):
                    if per_copy:
                        relayed[1] += per_copy[index % len(per_copy)]
                    index += 1
                    offset = 0
                    expected = expected_copy(index)
            pending = pending[at_byte:] if not problems else b""  # nothing more is compared
            now = time.monotonic()
            if now - last_note >= 2 and first is not None:
                last_note = now
                rss = sampler.samples[-1][1] / 1024 if sampler.samples else float("nan")
                text = f", {relayed[1]:,} sessions" if args.sessions else ""
                say(
                    f"{relayed[0] / 1e6:,.0f} MB relayed{text}, {relayed[0] / 1e6 / (now - first):,.0f} MB/s, "
                    f"proxy RSS {rss:.0f} MiB"
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
            for _, line in garbage(args.seed, i, len(corpus[i % len(corpus)]) + 1, args.garbage_rate)
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
    # The RSS at 10 %, 50 % and 90 % of the bytes: the first sample at or past each point.
    points: Dict[str, Any] = {}
    for percent in (10, 50, 90):
        at = next((i for i, (done, _) in enumerate(sampler.samples) if done >= percent / 100 * relayed[0]), None)
        if at is not None:
            done, kib = sampler.samples[at]
            points[str(percent)] = {"bytes": done, "sessions": sampler.sessions[at], "rss_mib": kib / 1024}
    report: Dict[str, Any] = {
        "backend": args.backend or os.environ.get("ACP_FAST_BACKEND") or "rust",
        "bytes": relayed[0],
        "frames": received,
        "garbage_lines": want.count(b"\n"),
        "copies": blocks,
        "sessions": relayed[1],  # of the copies that arrived whole
        "sessions_planned": sessions,
        "proxy_args": list(args.proxy_args),
        "seconds": seconds,
        "mb_per_s": relayed[0] / 1e6 / seconds if seconds else None,
        "frames_per_s": received / seconds if seconds else None,
        "rss_samples": len(samples),
        "rss_min_mib": min(samples) / 1024 if samples else None,
        "rss_max_mib": max(samples) / 1024 if samples else None,
        "rss_growth_mib": growth,
        "rss_at": points,
        "status": status,
        "rss_kib_by_bytes": sampler.samples,
    }
    if args.sessions:
        report["rss_kib_by_sessions"] = [(n, kib) for n, (_, kib) in zip(sampler.sessions, sampler.samples)]
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
    sessions = ""
    if r["sessions_planned"]:
        whole = "" if r["sessions"] == r["sessions_planned"] else f" of {r['sessions_planned']:,}"
        sessions = f"{r['sessions']:,}{whole} sessions, "
    proxy = " ".join(["acp-fast proxy", *r["proxy_args"]])
    lines = [
        (
            f"{proxy}: relayed {r['bytes'] / 1e6:,.1f} MB ({sessions}{r['frames']:,} frames, {r['copies']:,} copies) with "
            f"{r['garbage_lines']:,} garbage lines in {r['seconds']:.1f} s: {r['mb_per_s'] or 0:,.0f} MB/s, "
            f"{r['frames_per_s'] or 0:,.0f} frames/s ({r['backend']} backend)"
        ),
    ]
    if r["rss_samples"]:
        text = f"proxy RSS: {r['rss_min_mib']:.1f} to {r['rss_max_mib']:.1f} MiB over {r['rss_samples']} samples"
        if r["rss_growth_mib"] is not None:
            text += f"; peak {r['rss_growth_mib']:+.1f} MiB from the first to the second half after warm-up"
        lines.append(text)
    if r["rss_at"]:
        lines.append(
            "proxy RSS at "
            + ", ".join(
                f"{percent} %: {point['rss_mib']:.1f} MiB"
                + (f" ({point['sessions']:,} sessions)" if r["sessions"] else "")
                for percent, point in r["rss_at"].items()
            )
            + f"; peak {r['rss_max_mib']:.1f} MiB"
        )
    lines += [f"FAILED: {p}" for p in r["problems"]] or ["every check passed"]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    from acp_fast.cli._usage import Parser, integer, number

    p = Parser(prog="python benches/soak.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=number(0.001), help="megabytes of traffic to relay (default 1024)")
    p.add_argument("--sessions", type=integer(1), help="relay this many distinct sessions instead (sessions mode)")
    p.add_argument("--garbage-rate", type=number(0), default=0.01, help="garbage lines per good line (default 0.01)")
    p.add_argument("--seed", type=integer(0), default=1)
    p.add_argument("--corpora", type=integer(1), default=4, help="distinct corpora (default 4)")
    p.add_argument("--block-frames", type=integer(1), help="frames per corpus (default 20000; 24 with --sessions)")
    p.add_argument("--backend", choices=("rust", "python"), help="the proxy's backend (default: ACP_FAST_BACKEND)")
    p.add_argument("--interval", type=number(0.001), default=0.25, help="seconds between RSS samples (default 0.25)")
    p.add_argument("--warmup", type=number(0), default=0.25, help="share of the bytes before RSS is judged (0.25)")
    p.add_argument("--rss-slack", type=number(0), default=8, help="MiB the RSS peak may grow after warm-up (8)")
    more = "more options for the proxy, e.g. --bridge 1:2 (last)"
    p.add_argument("--proxy-args", nargs=argparse.REMAINDER, default=[], help=more)
    p.add_argument("--json", metavar="FILE", help="write the report as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    p.add_argument("--agent", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--corpus-dir", help=argparse.SUPPRESS)
    p.add_argument("--blocks", type=integer(1), help=argparse.SUPPRESS)
    p.add_argument("--fresh-sessions", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.agent:
        return agent(args)
    if args.garbage_rate >= 1:
        parser().error("--garbage-rate must be below 1")
    if args.sessions and args.mb is not None:
        parser().error("give --mb or --sessions, not both (sessions mode is sized by sessions)")
    try:
        bridge = bridge_versions(args.proxy_args)
    except ValueError:
        parser().error("--proxy-args --bridge: expected EDITOR:AGENT, e.g. 1:2")
    if bridge and not args.sessions:
        parser().error("--proxy-args --bridge needs --sessions (each copy's sessions must be new to the bridge)")
    if args.mb is None:
        args.mb = 1024
    if args.block_frames is None:
        args.block_frames = 24 if args.sessions else 20_000
    report = soak(args)
    print(render(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
