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
frame with orjson (timed: the editor's CPU to parse), applies it to a ``ToolCallStore`` and
compares the final state with the agent's. Each tool call's final update carries the agent's send
time (``_meta.sentAt``, CLOCK_MONOTONIC), so the latency the proxy adds to a final state is
measured. The proxy's CPU and peak RSS come from its rusage. Every scenario runs as the proxy is,
and with each ``--with`` option list given (e.g. ``--with='--coalesce 50'``).

Prints a Markdown table (stdout) and progress (stderr); ``--json FILE`` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
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
    print(json.dumps({"sent_bytes": sent, "sent_frames": frames}), file=sys.stderr, flush=True)
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
    parse = 0.0
    latencies: List[float] = []
    buffer = b""
    fd = p.stdout.fileno()
    while True:
        chunk = os.read(fd, 1 << 20)
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
    return {
        "scenario": scenario,
        "options": " ".join(options) or "(none)",
        "protocol": version,
        "agent_bytes": agent_report.get("sent_bytes"),
        "agent_frames": agent_report.get("sent_frames"),
        "editor_bytes": received,
        "editor_frames": frames,
        "editor_parse_s": round(parse, 3),
        "proxy_cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "proxy_peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "final_latency_ms": round(max(latencies) * 1000, 2) if latencies else None,
        "final_statuses": sorted({tc.get("status") for tc in final.values()}),
        "wall_s": round(wall, 2),
        "exit": status,
    }


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
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    ns = p.parse_args(argv)
    if ns.agent:
        return run_agent(ns.agent, ns.size)
    sizes = {"a": ns.lines, "b": ns.updates, "c": ns.chunks}
    rows = []
    for scenario in ns.scenarios:
        for options in [""] + ns.variants:
            print(f"scenario {scenario} {options or '(as is)'} ...", file=sys.stderr, flush=True)
            rows.append(run_editor(scenario, sizes[scenario], shlex.split(options)))
    cols = [
        "scenario",
        "options",
        "agent_bytes",
        "editor_bytes",
        "agent_frames",
        "editor_frames",
        "editor_parse_s",
        "proxy_cpu_s",
        "proxy_peak_rss_mib",
        "final_latency_ms",
        "final_statuses",
    ]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
