"""Benchmark of ``acp-fast proxy`` through real pipes: ``python -m acp_fast.bench.proxy``.

Three measurements, each against the same pipeline without the proxy, in the same run:

* **throughput**: the agent is ``cat CORPUS`` (repeated), the proxy relays it with state
  tracking on (its defaults), and this process reads the proxy's stdout in 1 MiB reads. Time runs
  from the first byte received to end of file (process start-up excluded). Median of
  ``--repeat`` runs; MB/s and frames/s.
* **latency**: a pacer agent writes one ~400 B frame every 100 µs (10,000 frames/s), each with
  its send time (CLOCK_MONOTONIC, shared by all processes) inside; this process stamps each
  frame on arrival. Added latency = the proxied percentile minus the direct percentile.
* **the proxy's two loops and a no-op middleware**: each throughput and latency run also goes
  through the proxy's Python loop (``ACP_FAST_PROXY_RELAY=python``: the relay before the core's
  loop, rust/relay.rs), and the mixed profile through a no-op Python middleware (its cost per
  frame is the difference with the proxy as it runs).
* **a whole session, beside the ACP conductor**: an editor (this process) sends `initialize`,
  `session/new` and a `session/prompt` that the agent answers after `--updates` streamed
  `session/update`s (about 400 B each); time runs from the prompt sent to its answer received.
  Contenders on the same agent and pipes: the direct pipe, `acp-fast proxy`, with `--record`,
  with `--trace`, and the official conductor (`agent-client-protocol-conductor agent AGENT`,
  with and without `--trace`; `--conductor PATH`, else found on PATH or in `.interop/bin`,
  installed by `make interop`; not measured when it is not installed, and the report says so).
* **memory**: peak RSS of the proxy (its ``--summary-json``) relaying about 1 GB of the
  large-output corpus, beside the peak for one pass of it: flat memory means the two are close.

Prints a Markdown table (stdout) and progress (stderr); ``--json FILE`` writes the figures.
Refuses to run on a debug build of the native module.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import acp_fast

from .. import traffic

PROXY = [sys.executable, "-m", "acp_fast.cli", "proxy"]
#: The proxy with one Python middleware that gives every message back (what the middleware API
#: costs per frame: the same relay, each message decoded and passed through a Python call).
#: The proxy's environment with its Python loop instead of the core's relay (to compare).
PYTHON_LOOP = dict(os.environ, ACP_FAST_PROXY_RELAY="python")
NOOP_MIDDLEWARE = [
    sys.executable,
    "-c",
    (
        "import sys; from acp_fast.proxy import Proxy; "
        "sys.exit(Proxy(sys.argv[2:], middleware=[lambda message, sender, ctx: message]).run())"
    ),
]


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _read_all(cmd: List[str], env: Optional[Dict[str, str]] = None) -> Dict[str, float]:
    """Run ``cmd``, read its stdout to the end; bytes, frames and seconds from the first byte."""
    p = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, bufsize=0
    )
    assert p.stdout is not None and p.stderr is not None  # both are PIPE
    fd = p.stdout.fileno()
    try:
        import fcntl

        fcntl.fcntl(fd, 1031, 1 << 20)  # F_SETPIPE_SZ
    except OSError:
        pass
    total = frames = 0
    first: Optional[float] = None
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        if first is None:
            first = time.perf_counter()
        total += len(chunk)
        frames += chunk.count(b"\n")
    end = time.perf_counter()
    err = p.stderr.read()
    if p.wait() != 0:
        raise RuntimeError(f"{cmd[:4]}... exited with {p.returncode}: {err.decode(errors='replace')[-500:]}")
    return {"bytes": total, "frames": frames, "seconds": end - (first or end)}


def throughput(
    corpus: Path, copies: int, repeat: int, proxy_args: Sequence[str] = (), noop: bool = False
) -> Dict[str, Any]:
    """Direct and proxied runs, interleaved: the proxy as it runs (the core's relay on the native
    backend), the proxy with its Python loop (``python_loop``: what it was before the core's
    relay, ``ACP_FAST_PROXY_RELAY=python``), and with ``noop`` through a no-op Python middleware."""
    agent = ["cat"] + [str(corpus)] * copies
    direct, proxied, python_loop, with_noop = [], [], [], []
    for i in range(repeat):
        direct.append(_read_all(agent))
        proxied.append(_read_all([*PROXY, *proxy_args, "--", *agent]))
        python_loop.append(_read_all([*PROXY, *proxy_args, "--", *agent], env=PYTHON_LOOP))
        if noop:
            with_noop.append(_read_all([*NOOP_MIDDLEWARE, "--", *agent]))
        _progress(f"  run {i + 1}/{repeat}: {proxied[-1]['bytes'] / proxied[-1]['seconds'] / 1e6:.0f} MB/s")
    runs = direct + proxied + python_loop + with_noop
    assert all(r["bytes"] == direct[0]["bytes"] for r in runs), "the proxy changed the byte count"

    def summary(runs: List[Dict[str, float]]) -> Dict[str, float]:
        secs = [r["seconds"] for r in runs]
        med = statistics.median(secs)
        return {
            "seconds_median": med,
            "seconds_min": min(secs),
            "seconds_max": max(secs),
            "mb_per_s": runs[0]["bytes"] / med / 1e6,
            "frames_per_s": runs[0]["frames"] / med,
        }

    result = {
        "bytes": direct[0]["bytes"],
        "frames": direct[0]["frames"],
        "direct": summary(direct),
        "proxy": summary(proxied),
        "ratio": summary(direct)["seconds_median"] / summary(proxied)["seconds_median"],
        "python_loop": summary(python_loop),
        "python_loop_ratio": summary(direct)["seconds_median"] / summary(python_loop)["seconds_median"],
    }
    if with_noop:
        result["noop_middleware"] = summary(with_noop)
        frames = direct[0]["frames"]
        extra = summary(with_noop)["seconds_median"] - summary(proxied)["seconds_median"]
        result["noop_middleware_us_per_frame"] = extra / frames * 1e6 if frames else 0.0
    return result


PACER = textwrap.dedent(
    """
    import os, sys, time
    rate, seconds, size = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    head = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"lat","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"'
    tail = b'"}}}}\\n'
    n = int(rate * seconds)
    step = int(1e9 / rate)
    now = time.monotonic_ns
    start = now() + 50_000_000
    for i in range(n):
        due = start + i * step
        while now() < due:
            os.sched_yield()
        stamp = b"%d " % now()
        os.write(1, head + stamp + b"x" * max(0, size - len(head) - len(stamp) - len(tail)) + tail)
    """
)


def _latencies(cmd: List[str], env: Optional[Dict[str, str]] = None) -> List[float]:
    p = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0, env=env
    )
    assert p.stdout is not None and p.stderr is not None  # both are PIPE
    fd = p.stdout.fileno()
    now = time.monotonic_ns
    out: List[float] = []
    framer = acp_fast.Framer()
    marker = b'"text":"'
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        t = now()
        # Well-formed traffic within the limit: (line, bytes) events only (no cast in this loop).
        events: List[Any] = framer.feed(chunk)
        for _, line in events:
            i = line.find(marker) + len(marker)
            sent = int(line[i : line.index(b" ", i)])
            out.append((t - sent) / 1000.0)
    if p.wait() != 0:
        raise RuntimeError(p.stderr.read().decode(errors="replace"))
    return out


def _percentile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency(rate: float, seconds: float, size: int = 400) -> Dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PACER)
    pacer = [sys.executable, f.name, str(rate), str(seconds), str(size)]
    try:
        _progress(f"  direct: {rate:.0f} frames/s for {seconds:.0f} s")
        direct = _latencies(pacer)
        _progress(f"  through the proxy: {rate:.0f} frames/s for {seconds:.0f} s")
        proxied = _latencies([*PROXY, "--", *pacer])
        _progress(f"  through the proxy's Python loop: {rate:.0f} frames/s for {seconds:.0f} s")
        python_loop = _latencies([*PROXY, "--", *pacer], env=PYTHON_LOOP)
    finally:
        os.unlink(f.name)
    stats: Dict[str, Any] = {}
    for name, values in (("direct", direct), ("proxy", proxied), ("python_loop", python_loop)):
        stats[name] = {
            "frames": len(values),
            "median_us": statistics.median(values),
            "p99_us": _percentile(values, 0.99),
            "max_us": max(values),
        }
    stats["added_median_us"] = stats["proxy"]["median_us"] - stats["direct"]["median_us"]
    stats["added_p99_us"] = stats["proxy"]["p99_us"] - stats["direct"]["p99_us"]
    stats["python_loop_added_median_us"] = stats["python_loop"]["median_us"] - stats["direct"]["median_us"]
    stats["rate"] = rate
    return stats


def memory(corpus: Path, copies: int) -> Dict[str, Any]:
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, n in (("one_pass", 1), ("full", copies)):
            summary = Path(tmp) / f"{label}.json"
            run = _read_all([*PROXY, "--summary-json", str(summary), "--", "cat", *[str(corpus)] * n])
            info = json.loads(summary.read_text())
            result[label] = {"bytes": run["bytes"], "peak_rss_mib": info["peak_rss_kib"] / 1024}
            _progress(f"  {run['bytes'] / 1e9:.2f} GB relayed: peak RSS {info['peak_rss_kib'] / 1024:.1f} MiB")
    return result


SESSION_AGENT = textwrap.dedent(
    """
    import os, sys
    updates, size = int(sys.argv[1]), int(sys.argv[2])
    head = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"'
    tail = b'"}}}}\\n'
    chunk = head + b"x" * max(1, size - len(head) - len(tail)) + tail
    answers = {
        "initialize": b'{"protocolVersion":1,"agentCapabilities":{"loadSession":false},"authMethods":[]}',
        "session/new": b'{"sessionId":"sess_1"}',
    }
    def write(data):
        view = memoryview(data)
        while view:
            view = view[os.write(1, view):]
    for line in sys.stdin.buffer:
        if b'"method":"session/prompt"' in line:
            rid = line[line.index(b'"id":') + 5 : line.index(b',', line.index(b'"id":'))]
            batch = chunk * 256
            for _ in range(updates // 256):
                write(batch)
            write(chunk * (updates % 256))
            write(b'{"jsonrpc":"2.0","id":' + rid + b',"result":{"stopReason":"end_turn"}}\\n')
            continue
        for method, result in answers.items():
            if b'"method":"' + method.encode() + b'"' in line:
                rid = line[line.index(b'"id":') + 5 : line.index(b',', line.index(b'"id":'))]
                write(b'{"jsonrpc":"2.0","id":' + rid + b',"result":' + result + b'}\\n')
    """
)

#: What the editor sends: the prompt's answer ends the timed part.
SESSION_EDITOR = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}\n',
    b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}\n',
    b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"go"}]}}\n',
)


def _session(cmd: List[str], updates: int) -> Dict[str, float]:
    """One session through ``cmd``: bytes and frames the editor received after its prompt, and
    the seconds from the prompt sent to its answer received."""
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None  # all are PIPE
    fd, err = p.stdout.fileno(), p.stderr

    def frames_until(n: int) -> Tuple[int, int]:
        got = nbytes = 0
        while got < n:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise RuntimeError(f"{cmd[0]} ended after {got} of {n} frames: {err.read()[-500:]!r}")
            nbytes += len(chunk)
            got += chunk.count(b"\n")
        return got, nbytes

    try:
        for request in SESSION_EDITOR[:2]:
            p.stdin.write(request)
            frames_until(1)
        start = time.perf_counter()
        p.stdin.write(SESSION_EDITOR[2])
        got, nbytes = frames_until(updates + 1)
        seconds = time.perf_counter() - start
    finally:
        p.stdin.close()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return {"bytes": nbytes, "frames": got, "seconds": seconds}


def find_conductor(given: Optional[str]) -> Optional[str]:
    """The conductor's binary: ``given``, else on PATH, else in ``.interop/bin``."""
    import shutil

    if given:
        return given
    name = "agent-client-protocol-conductor"
    found = shutil.which(name)
    if found:
        return found
    local = Path.cwd() / ".interop" / "bin" / name
    return str(local) if os.access(local, os.X_OK) else None


def session(updates: int, repeat: int, conductor: Optional[str]) -> Dict[str, Any]:
    """The whole-session contenders, interleaved, each the median of ``repeat`` runs."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "agent.py"
        script.write_text(SESSION_AGENT)
        agent = [sys.executable, str(script), str(updates), "400"]
        outputs = Path(tmp)
        contenders: Dict[str, Callable[[int], List[str]]] = {
            "direct": lambda i: agent,
            "acp-fast proxy": lambda i: [*PROXY, "--", *agent],
            "acp-fast proxy --record": lambda i: [*PROXY, "--record", str(outputs / f"r{i}.rec"), "--", *agent],
            "acp-fast proxy --trace": lambda i: [*PROXY, "--trace", str(outputs / f"t{i}.jsons"), "--", *agent],
        }
        if conductor is not None:
            line = " ".join(agent)
            contenders["conductor"] = lambda i: [conductor, "agent", line]
            contenders["conductor --trace"] = lambda i: [
                conductor,
                "--trace",
                str(outputs / f"c{i}.jsons"),
                "agent",
                line,
            ]
        runs: Dict[str, List[Dict[str, float]]] = {name: [] for name in contenders}
        for i in range(repeat):
            for name, cmd in contenders.items():
                runs[name].append(_session(cmd(i), updates))
            _progress(f"  run {i + 1}/{repeat}: " + ", ".join(
                f"{name} {runs[name][-1]['bytes'] / runs[name][-1]['seconds'] / 1e6:.0f} MB/s" for name in contenders
            ))  # fmt: skip
    result: Dict[str, Any] = {"updates": updates, "conductor_path": conductor}
    direct = statistics.median(r["seconds"] for r in runs["direct"])
    for name, rs in runs.items():
        med = statistics.median(r["seconds"] for r in rs)
        result[name] = {"seconds_median": med, "bytes": rs[0]["bytes"], "mb_per_s": rs[0]["bytes"] / med / 1e6,
                        "of_direct": direct / med}  # fmt: skip
    return result


def _check_release() -> Optional[str]:
    try:
        from .. import _native
    except ImportError as e:
        return f"the native module is not built ({e})"
    if _native.build_profile != "release":
        return f"the native module is a {_native.build_profile} build; benchmarks time release builds only (pip install -e .)"
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m acp_fast.bench.proxy", description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=int, default=400, help="megabytes relayed per throughput run (default 400)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--latency-seconds", type=float, default=3.0)
    p.add_argument("--rate", type=float, default=10000.0, help="frames per second in the latency run")
    p.add_argument("--memory-gb", type=float, default=1.0, help="gigabytes relayed in the memory run")
    p.add_argument("--updates", type=int, default=60_000, help="updates streamed in the session run (default 60,000)")
    p.add_argument("--conductor", metavar="PATH", help="the ACP conductor's binary (default: PATH, then .interop/bin)")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    args = p.parse_args(argv)
    problem = _check_release()
    if problem:
        print(f"acp-fast bench proxy: {problem}", file=sys.stderr)
        return 2
    results: Dict[str, Any] = {"python": sys.version.split()[0], "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        corpora = {}
        corpus_mb = min(64, args.mb)  # corpora of up to 64 MB, relayed as many times as needed
        sizes = (
            ("mixed", max(100, int(corpus_mb * 1e6 / traffic.TARGET_FRAME_BYTES["mixed"]))),
            ("large", max(10, int(corpus_mb * 1e6 / traffic.TARGET_FRAME_BYTES["large"]))),
        )
        for profile, n in sizes:
            path = Path(tmp) / f"{profile}.ndjson"
            path.write_bytes(traffic.generate(profile, n, seed=1))
            corpora[profile] = path
        for profile, path in corpora.items():
            size = path.stat().st_size
            copies = max(1, round(args.mb * 1e6 / size))
            _progress(f"throughput, {profile} profile: {copies} x {size / 1e6:.0f} MB")
            results[f"throughput_{profile}"] = throughput(path, copies, args.repeat, noop=profile == "mixed")
        _progress("latency")
        results["latency"] = latency(args.rate, args.latency_seconds)
        conductor = find_conductor(args.conductor)
        _progress(f"a session of {args.updates:,} updates" + ("" if conductor else " (the conductor is not installed)"))
        results["session"] = session(args.updates, args.repeat, conductor)
        size = corpora["large"].stat().st_size
        _progress("memory")
        results["memory"] = memory(corpora["large"], max(1, round(args.memory_gb * 1e9 / size)))
    print(report(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


def report(r: Dict[str, Any]) -> str:
    lines = [
        "| measurement | direct pipe | through `acp-fast proxy` | target |",
        "|---|---|---|---|",
    ]
    for profile, target in (("large", "≥ 500 MB/s"), ("mixed", "≥ 500,000 frames/s")):
        t = r[f"throughput_{profile}"]
        d, q = t["direct"], t["proxy"]
        lines.append(
            f"| relay, {profile} ({t['bytes'] / 1e6:.0f} MB, {t['frames']} frames) | {d['mb_per_s']:.0f} MB/s, "
            f"{d['frames_per_s']:,.0f} frames/s | **{q['mb_per_s']:.0f} MB/s, {q['frames_per_s']:,.0f} frames/s** "
            f"(min–max {t['bytes'] / q['seconds_max'] / 1e6:.0f}–{t['bytes'] / q['seconds_min'] / 1e6:.0f} MB/s): "
            f"**{t['ratio']:.0%} of the direct pipe** (Python loop: {t['python_loop']['mb_per_s']:.0f} MB/s, "
            f"{t['python_loop_ratio']:.0%}) | {target} |"
        )
    t = r["throughput_mixed"]
    if "noop_middleware" in t:
        n = t["noop_middleware"]
        lines.append(
            f"| relay, mixed, with a no-op Python middleware | | **{n['frames_per_s']:,.0f} frames/s: "
            f"{t['noop_middleware_us_per_frame']:.2f} µs per frame more** | small |"
        )
    lat = r["latency"]
    lines.append(
        f"| latency at {lat['rate']:,.0f} frames/s: median / p99 | {lat['direct']['median_us']:.0f} / {lat['direct']['p99_us']:.0f} µs | "
        f"{lat['proxy']['median_us']:.0f} / {lat['proxy']['p99_us']:.0f} µs: **added {lat['added_median_us']:.0f} / "
        f"{lat['added_p99_us']:.0f} µs** (Python loop: added {lat['python_loop_added_median_us']:.0f} µs median) "
        "| added ≤ 50 / ≤ 500 µs |"
    )
    s = r["session"]
    for name in ("direct", "acp-fast proxy", "acp-fast proxy --record", "acp-fast proxy --trace", "conductor",
                 "conductor --trace"):  # fmt: skip
        if name in s:
            c = s[name]
            lines.append(
                f"| session, {s['updates']:,} updates: {name} | | **{c['mb_per_s']:.0f} MB/s, "
                f"{c['of_direct']:.0%} of the direct pipe** | ≥ 60 % with `--record` / `--trace` |"
            )
    if s.get("conductor_path") is None:
        lines.append("| session: the ACP conductor | | not measured: not installed (`make interop`) | |")
    m = r["memory"]
    lines.append(
        f"| peak RSS of the proxy | {m['one_pass']['bytes'] / 1e9:.2f} GB relayed: {m['one_pass']['peak_rss_mib']:.0f} MiB | "
        f"**{m['full']['bytes'] / 1e9:.2f} GB relayed: {m['full']['peak_rss_mib']:.0f} MiB** | flat |"
    )
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
