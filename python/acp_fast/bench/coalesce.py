"""Long tool output through the proxy (issue 27): ``python -m acp_fast.bench.coalesce``.

Agents stream long tool output by re-sending the whole cumulative content in every
``tool_call_update`` (v1 has no append), so the bytes grow with the square of the output. This
benchmark replays traffic of that shape through real pipes and reports what each side sent and
received:

* **a** — one ``execute`` tool call whose output grows by one line per update (``--lines``,
  35,000 by default: the agent-shell thread's command) and then completes;
* **b** — eight tool calls updated round-robin, with agent message chunks and a permission
  request between them;
* **c** — a v2 agent streaming ``terminal_output_chunk``s for a terminal shown in a tool call,
  to a v1 editor through ``--bridge 1:2``.

The agent is this module (``--agent a|b|c``) writing the frames as it generates them (never the
whole traffic in memory). The editor is this process: it reads the proxy's stdout, parses every
frame with orjson and, when the official ACP Python SDK is installed, as the SDK's client does
(stdlib json, then its ``SessionNotification`` model), each timed (the editor's CPU to parse),
applies it to a ``ToolCallStore`` and compares the final state with the state the agent's frames
give when they all arrive as sent (``final_equal``). Each tool call's final update carries the agent's send
time (``_meta.sentAt``, CLOCK_MONOTONIC), so the latency the proxy adds to a final state is
measured. The proxy's CPU comes from its rusage less its agent's own (which the agent reports), its peak RSS from
``/proc/PID/status`` (``VmHWM``, sampled while it runs). Every scenario runs as the proxy is,
and with each ``--with`` option list given (e.g. ``--with='--coalesce 50'``).

Prints a Markdown table (stdout) and progress (stderr); ``--json FILE`` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import orjson

import acp_fast

PROXY = [sys.executable, "-m", "acp_fast.cli", "proxy"]
SESSION = "sess_1"
#: Output lines of scenario a: 8 bytes each with the newline, as in the thread (280 KB / 35k).
_LINES = [f"ok  {i:04d}" for i in range(10000)]


def _update(sid: str, update: Dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})


def _text(text: str) -> List[Dict[str, Any]]:
    return [{"type": "content", "content": {"type": "text", "text": text}}]


def scenario_a(lines: int) -> Iterator[bytes]:
    """One execute tool call, its cumulative output one line longer per update, then completed."""
    yield _update(
        SESSION,
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "run",
            "title": "Run the build",
            "kind": "execute",
            "status": "in_progress",
        },
    )
    out: List[str] = []
    for i in range(lines):
        out.append(_LINES[i % len(_LINES)])
        done = i == lines - 1
        update: Dict[str, Any] = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "run",
            "content": _text("\n".join(out)),
        }
        if done:
            update["status"] = "completed"
            update["_meta"] = {"sentAt": time.monotonic()}
        yield _update(SESSION, update)


def scenario_b(updates: int, tools: int = 8) -> Iterator[bytes]:
    """``tools`` tool calls updated round-robin (cumulative output), a message chunk after each
    round, a permission request half way; each completes at the end."""
    outs: List[List[str]] = [[] for _ in range(tools)]
    for t in range(tools):
        yield _update(
            SESSION,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": f"t{t}",
                "title": f"Task {t}",
                "kind": "execute",
                "status": "in_progress",
            },
        )
    rounds = max(1, updates // tools)
    for r in range(rounds):
        for t in range(tools):
            outs[t].append(_LINES[(r * tools + t) % len(_LINES)])
            update: Dict[str, Any] = {
                "sessionUpdate": "tool_call_update",
                "toolCallId": f"t{t}",
                "content": _text("\n".join(outs[t])),
            }
            if r == rounds - 1:
                update["status"] = "completed"
                update["_meta"] = {"sentAt": time.monotonic()}
            yield _update(SESSION, update)
        yield _update(
            SESSION, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"round {r} "}}
        )
        if r == rounds // 2:
            params = {
                "sessionId": SESSION,
                "toolCall": {"toolCallId": "t0"},
                "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}],
            }
            yield orjson.dumps(
                {"jsonrpc": "2.0", "id": "perm-1", "method": "session/request_permission", "params": params}
            )


def scenario_c(chunks: int, size: int = 1024) -> Iterator[bytes]:
    """A v2 agent's terminal, shown in a tool call, streaming ``chunks`` output chunks of ``size``
    bytes (base64), then exiting; the tool call completes."""
    import base64

    yield _update(
        SESSION,
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "run",
            "title": "Run the tests",
            "kind": "execute",
            "status": "in_progress",
            "content": [{"type": "terminal", "terminalId": "term"}],
        },
    )
    yield _update(SESSION, {"sessionUpdate": "terminal_update", "terminalId": "term", "command": "make test"})
    line = (("x" * (size - 1)) + "\n").encode()
    data = base64.b64encode(line).decode()
    for _ in range(chunks):
        yield _update(SESSION, {"sessionUpdate": "terminal_output_chunk", "terminalId": "term", "data": data})
    yield _update(SESSION, {"sessionUpdate": "terminal_update", "terminalId": "term", "exitStatus": {"exitCode": 0}})
    yield _update(
        SESSION,
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "run",
            "status": "completed",
            "_meta": {"sentAt": time.monotonic()},
        },
    )


SCENARIOS: Dict[str, Callable[[int], Iterator[bytes]]] = {"a": scenario_a, "b": scenario_b, "c": scenario_c}


def run_agent(scenario: str, size: int) -> int:
    """The agent side: answer ``initialize`` (the bridge's handshake) with the scenario's protocol
    version, then write the scenario's frames to stdout; report bytes and frames on stderr."""
    version = 2 if scenario == "c" else 1
    out = sys.stdout.buffer
    sent = frames = 0
    line = sys.stdin.buffer.readline()
    if line:
        try:
            rid = orjson.loads(line).get("id", 0)
        except orjson.JSONDecodeError:
            rid = 0
        out.write(orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": version}}) + b"\n")
    for frame in SCENARIOS[scenario](size):
        out.write(frame + b"\n")
        sent += len(frame) + 1
        frames += 1
    out.flush()
    cpu = os.times()
    report = {"sent_bytes": sent, "sent_frames": frames, "cpu_s": cpu.user + cpu.system}
    print(json.dumps(report), file=sys.stderr, flush=True)
    return 0


def run_editor(scenario: str, size: int, options: Sequence[str]) -> Dict[str, Any]:
    """Run the proxy around the agent, read and parse what reaches the editor; the figures."""
    version = 2 if scenario == "c" else 1
    agent = [sys.executable, "-m", "acp_fast.bench.coalesce", "--agent", scenario, "--size", str(size)]
    bridge = ["--bridge", "1:2"] if scenario == "c" else []
    cmd = [*PROXY, *bridge, *options, "--", *agent]
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    p.stdin.write(orjson.dumps(hello) + b"\n")
    store = acp_fast.ToolCallStore(1)
    received = frames = 0
    parse = sdk_parse = 0.0
    sdk = _sdk_model()
    latencies: List[float] = []
    buffer = b""
    fd = p.stdout.fileno()
    peak = 0  # the proxy's peak RSS (VmHWM, kB), sampled every 20 ms and at the end
    sampled = 0.0
    while True:
        chunk = os.read(fd, 1 << 20)
        if time.monotonic() - sampled > 0.02 or not chunk:
            peak = max(peak, _peak_rss_kib(p.pid))
            sampled = time.monotonic()
        if not chunk:
            break
        received += len(chunk)
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if not line:
                continue
            frames += 1
            t0 = time.process_time()
            value = orjson.loads(line)
            parse += time.process_time() - t0
            if sdk is not None:
                t0 = time.process_time()
                sdk_value = json.loads(line)  # as the SDK's client reads a line, then its models
                if sdk_value.get("method") == "session/update":
                    sdk.model_validate(sdk_value["params"])
                sdk_parse += time.process_time() - t0
            sent_at = (((value.get("params") or {}).get("update") or {}).get("_meta") or {}).get("sentAt")
            if isinstance(sent_at, float) and (value["params"]["update"].get("status") == "completed"):
                latencies.append(time.monotonic() - sent_at)
            store.apply(line, source="agent")
            if value.get("method") == "session/request_permission":
                outcome = {"outcome": "selected", "optionId": "ok"}
                answer = {"jsonrpc": "2.0", "id": value["id"], "result": {"outcome": outcome}}
                try:
                    p.stdin.write(orjson.dumps(answer) + b"\n")
                except BrokenPipeError:
                    pass
    try:
        p.stdin.close()
    except BrokenPipeError:
        pass
    _, status, usage = os.wait4(p.pid, 0)
    agent_report = {}
    for said in p.stderr.read().decode(errors="replace").splitlines():
        if said.startswith("{") and "sent_bytes" in said:
            agent_report = json.loads(said)
    wall = time.monotonic() - start
    final = store.snapshot().get(SESSION, {})
    expected = reference(scenario, size)
    return {
        "scenario": scenario,
        "options": " ".join(options) or "(none)",
        "protocol": version,
        "agent_bytes": agent_report.get("sent_bytes"),
        "agent_frames": agent_report.get("sent_frames"),
        "editor_bytes": received,
        "editor_frames": frames,
        "editor_parse_s": round(parse, 3),
        "editor_sdk_parse_s": None if sdk is None else round(sdk_parse, 3),
        # wait4 counts the proxy's waited-for children: the agent's own CPU is taken off.
        "proxy_cpu_s": round(usage.ru_utime + usage.ru_stime - agent_report.get("cpu_s", 0.0), 3),
        "proxy_peak_rss_mib": round(peak / 1024, 1) if peak else None,
        "final_latency_ms": round(max(latencies) * 1000, 2) if latencies else None,
        "final_statuses": sorted({tc.get("status") for tc in final.values()}),
        "final_equal": _comparable(store.snapshot()) == _comparable(expected.snapshot()),
        "wall_s": round(wall, 2),
        "exit": status,
    }


def _peak_rss_kib(pid: int) -> int:
    """The peak resident set of process ``pid`` so far (``VmHWM``, kB; reset at exec, unlike
    ``ru_maxrss``, which keeps the forking process's), 0 where /proc does not tell."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _sdk_model() -> Any:
    """The official ACP Python SDK's model of a session update notification, when it is
    installed (``pip install 'acp-fast[sdk]'``), else None."""
    try:
        from acp.schema import SessionNotification
    except ImportError:
        return None
    return SessionNotification


def reference(scenario: str, size: int) -> Any:
    """The editor's state when every frame the agent sent reaches it as it was sent (for the v2
    agent of scenario c, through a bridge that holds nothing): what the coalesced run must end
    with."""
    store = acp_fast.ToolCallStore(1)
    frames: Iterator[bytes] = (f + b"\n" for f in SCENARIOS[scenario](size))
    if scenario == "c":
        from ..bridge import Bridge

        bridge = Bridge(editor=1, agent=2)
        bridge.from_editor(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n')
        bridge.from_agent(b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}\n')
        frames = (out for f in frames for out in bridge.from_agent(f))
    for frame in frames:
        store.apply(frame, source="agent")
    return store


def _comparable(snapshot: Dict[str, Any]) -> Dict[str, Any]:
    """A state snapshot without the send times (``_meta.sentAt``), which differ from run to run."""
    out: Dict[str, Any] = {}
    for sid, calls in snapshot.items():
        out[sid] = {}
        for tcid, record in calls.items():
            meta = record.get("_meta")
            if isinstance(meta, dict) and "sentAt" in meta:
                record = {**record, "_meta": {k: v for k, v in meta.items() if k != "sentAt"}}
            out[sid][tcid] = record
    return out


#: The sizes ``acp-fast bench --detail`` runs the scenarios at (seconds, not minutes).
DETAIL_SIZES = {"a": 3000, "b": 2000, "c": 500}

#: The columns of the Markdown table.
COLUMNS = [
    "scenario",
    "options",
    "agent_bytes",
    "editor_bytes",
    "agent_frames",
    "editor_frames",
    "editor_parse_s",
    "editor_sdk_parse_s",
    "proxy_cpu_s",
    "proxy_peak_rss_mib",
    "final_latency_ms",
    "final_equal",
]


#: The columns that are timings: a row of repeated runs has their medians.
TIMINGS = ("editor_parse_s", "editor_sdk_parse_s", "proxy_cpu_s", "proxy_peak_rss_mib", "final_latency_ms", "wall_s")


def run_all(
    scenarios: str,
    sizes: Dict[str, int],
    variants: Sequence[str],
    progress: Optional[Callable[[str], None]] = None,
    repeat: int = 1,
) -> List[Dict[str, Any]]:
    """Every scenario as the proxy is and with each variant's options: one row each, the runs
    repeated ``repeat`` times in turn (the timings: medians; the final state: equal in all)."""
    runs: Dict[Any, List[Dict[str, Any]]] = {}
    for i in range(repeat):
        for scenario in scenarios:
            for options in [""] + list(variants):
                if progress is not None:
                    progress(
                        f"scenario {scenario} {options or '(as is)'}"
                        + (f", run {i + 1}/{repeat}" if repeat > 1 else "")
                    )
                runs.setdefault((scenario, options), []).append(
                    run_editor(scenario, sizes[scenario], shlex.split(options))
                )
    rows = []
    for done in runs.values():
        row = dict(done[-1])
        for key in TIMINGS:
            values = [r[key] for r in done if r[key] is not None]
            row[key] = round(statistics.median(values), 3) if values else None
        row["final_equal"] = all(r["final_equal"] for r in done)
        row["runs"] = len(done)
        rows.append(row)
    return rows


def markdown(rows: Sequence[Dict[str, Any]]) -> List[str]:
    """The rows as a Markdown table."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows]
    return lines


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m acp_fast.bench.coalesce", description=__doc__.split("\n\n")[0])
    p.add_argument("--agent", choices=sorted(SCENARIOS), help=argparse.SUPPRESS)
    p.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--scenarios", default="abc", help="which scenarios (default abc)")
    p.add_argument("--lines", type=int, default=35000, help="scenario a: output lines (default 35000)")
    p.add_argument("--updates", type=int, default=4000, help="scenario b: tool-call updates (default 4000)")
    p.add_argument("--chunks", type=int, default=2000, help="scenario c: terminal output chunks (default 2000)")
    p.add_argument(
        "--with",
        dest="variants",
        action="append",
        default=[],
        metavar="OPTIONS",
        help="also run with these proxy options (repeatable), e.g. --with='--coalesce 50'",
    )
    p.add_argument("--repeat", type=int, default=1, help="runs of each row, in turn; timings are medians (default 1)")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    ns = p.parse_args(argv)
    if ns.agent:
        return run_agent(ns.agent, ns.size)
    sizes = {"a": ns.lines, "b": ns.updates, "c": ns.chunks}
    if ns.repeat < 1:
        p.error("--repeat must be at least 1")
    rows = run_all(
        ns.scenarios, sizes, ns.variants, lambda text: print(f"{text} ...", file=sys.stderr, flush=True), ns.repeat
    )
    print("\n".join(markdown(rows)))
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
