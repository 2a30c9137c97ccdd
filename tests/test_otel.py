"""OpenTelemetry (`acp_fast.otel`, docs/PROXY.md "OpenTelemetry"): `acp-fast proxy --otlp URL`
and `acp-fast export --to otlp+URL` checked against a real OTLP/HTTP receiver (an HTTP server
here that decodes the real protobuf payloads with opentelemetry-proto): span names, parent/child
links, attributes, statuses, a trace joined from the editor's `traceparent`, the one injected
towards the agent, the metrics; the spans table; hostile input; the extra missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from acp_fast import otel, recording

PY = sys.executable
EDITOR_TRACE = "0af7651916cd43dd8448eb211c80319c"
EDITOR_SPAN = "b7ad6b7169203331"
TRACEPARENT = f"00-{EDITOR_TRACE}-{EDITOR_SPAN}-01"


class Receiver:
    """An OTLP/HTTP receiver: POST /v1/traces and /v1/metrics, payloads decoded with opentelemetry-proto."""

    def __init__(self) -> None:
        self.spans: List[Dict[str, Any]] = []
        self.metrics: List[Any] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                assert self.headers.get("Content-Type") == "application/x-protobuf"
                if self.path == "/v1/traces":
                    request = ExportTraceServiceRequest()
                    request.ParseFromString(body)
                    receiver.add_spans(request)
                elif self.path == "/v1/metrics":
                    request = ExportMetricsServiceRequest()
                    request.ParseFromString(body)
                    with receiver.lock:
                        receiver.metrics.append(request)
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add_spans(self, request: Any) -> None:
        with self.lock:
            for rs in request.resource_spans:
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(
                            {
                                "name": s.name,
                                "kind": s.kind,
                                "trace_id": s.trace_id.hex(),
                                "span_id": s.span_id.hex(),
                                "parent": s.parent_span_id.hex() or None,
                                "start": s.start_time_unix_nano,
                                "end": s.end_time_unix_nano,
                                "status": s.status.code,
                                "message": s.status.message,
                                "attributes": {a.key: _value(a.value) for a in s.attributes},
                                "schema_url": ss.schema_url,
                            }
                        )

    def metric(self, name: str) -> List[Tuple[Dict[str, Any], Any]]:
        """(attributes, data point) of every point of the metric `name` in the last export that
        has it (cumulative: the totals)."""
        out: List[Tuple[Dict[str, Any], Any]] = []
        for request in self.metrics[::-1]:
            if out:
                break
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        if m.name != name:
                            continue
                        points = m.sum.data_points if m.HasField("sum") else m.histogram.data_points
                        for p in points:
                            out.append(({a.key: _value(a.value) for a in p.attributes}, p))
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _send(proc: Any, frame: Dict[str, Any]) -> None:
    proc.stdin.write(json.dumps(frame).encode() + b"\n")
    proc.stdin.flush()


def _until(proc: Any, test: Any) -> Dict[str, Any]:
    while True:
        line = proc.stdout.readline()
        assert line, "the proxy's stdout ended"
        frame = json.loads(line)
        if test(frame):
            return frame


def run_session(extra: List[str], backend_id: str, *, allow: bool = True) -> subprocess.CompletedProcess[bytes]:
    """An editor through `acp-fast proxy EXTRA -- acp-fast demo-agent`: initialize, session/new,
    a prompt carrying the editor's traceparent, the permission answered, a prompt for a session
    that does not exist (an error answer)."""
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    cmd = [PY, "-m", "acp_fast.cli", "proxy", *extra, "--", PY, "-m", "acp_fast.cli", "demo-agent"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        _send(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
        _until(proc, lambda f: f.get("id") == 0)
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}})
        sid = _until(proc, lambda f: f.get("id") == 1)["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "fix it"}],
                  "_meta": {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}}  # fmt: skip
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt})
        ask = _until(proc, lambda f: f.get("method") == "session/request_permission")
        option = "allow" if allow else "reject"
        _send(
            proc,
            {"jsonrpc": "2.0", "id": ask["id"], "result": {"outcome": {"outcome": "selected", "optionId": option}}},
        )
        _until(proc, lambda f: f.get("id") == 2)
        _send(
            proc, {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "nope", "prompt": []}}
        )
        _until(proc, lambda f: f.get("id") == 3)
        proc.stdin.close()
        proc.stdin = None  # closed: communicate() only reads
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _by_name(spans: List[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    return {s["name"]: s for s in spans}


def check_session_spans(spans: List[Dict[str, Any]], status_error: Any, kinds: Dict[str, Any]) -> None:
    """The spans of `run_session` (a receiver's, or rows): names, links, attributes, statuses."""
    names = [s["name"] for s in spans]
    turns = [s for s in spans if s["name"].startswith("invoke_agent")]
    assert len(turns) == 2, names
    turn = next(s for s in turns if s["attributes"].get("jsonrpc.request.id") == "2")
    failed = next(s for s in turns if s["attributes"].get("jsonrpc.request.id") == "3")
    # the turn joins the editor's trace, as a child of its span
    assert turn["name"] == "invoke_agent acp-fast-demo-agent"
    assert turn["trace_id"] == EDITOR_TRACE and turn["parent"] == EDITOR_SPAN
    assert turn["kind"] == kinds["CLIENT"]
    a = turn["attributes"]
    assert a["gen_ai.operation.name"] == "invoke_agent" and a["gen_ai.provider.name"] == "acp"
    assert a["gen_ai.agent.name"] == "acp-fast-demo-agent" and isinstance(a["gen_ai.agent.version"], str)
    assert a["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert 0 <= a["acp.turn.time_to_first_chunk"] <= (turn["end"] - turn["start"]) / 1e9
    sid = a["gen_ai.conversation.id"]
    assert turn["status"] != status_error
    # an error answer: ERROR, with the code
    assert failed["status"] == status_error and failed["attributes"]["error.type"]
    assert failed["parent"] is None and failed["trace_id"] != EDITOR_TRACE
    # the tool calls: children of the turn, kind, status, failed = ERROR
    tools = [s for s in spans if s["name"].startswith("execute_tool")]
    assert {s["attributes"]["gen_ai.tool.call.id"] for s in tools} >= {"call_1_read", "call_1_edit"}
    for s in tools:
        assert s["parent"] == turn["span_id"] and s["trace_id"] == EDITOR_TRACE
        assert s["kind"] == kinds["INTERNAL"]
        assert s["name"] == f"execute_tool {s['attributes']['gen_ai.tool.name']}"
        assert s["attributes"]["gen_ai.conversation.id"] == sid
        assert turn["start"] <= s["start"] <= s["end"] <= turn["end"]
    read = next(s for s in tools if s["attributes"]["gen_ai.tool.call.id"] == "call_1_read")
    assert read["attributes"]["acp.tool.kind"] == "read" and read["attributes"]["acp.tool.status"] == "completed"
    edit = next(s for s in tools if s["attributes"]["gen_ai.tool.call.id"] == "call_1_edit")
    assert edit["attributes"]["acp.tool.kind"] == "edit"
    # the permission wait: a child of the turn, the editor's choice
    [perm] = [s for s in spans if s["name"] == "session/request_permission"]
    assert perm["parent"] == turn["span_id"] and perm["kind"] == kinds["SERVER"]
    p = perm["attributes"]
    assert p["acp.permission.outcome"] == "selected" and p["acp.permission.option_id"] in ("allow", "reject")
    assert p["acp.permission.approved"] == (p["acp.permission.option_id"] == "allow")
    assert p["acp.tool.call.id"] == "call_1_edit" and p["rpc.system.name"] == "jsonrpc"
    assert edit["attributes"]["acp.tool.status"] == ("completed" if p["acp.permission.approved"] else "failed")
    assert (edit["status"] == status_error) == (not p["acp.permission.approved"])
    # the other requests: JSON-RPC spans, the editor's as CLIENT, roots of their own traces
    init = _by_name(spans)["initialize"]
    assert init["kind"] == kinds["CLIENT"] and init["parent"] is None
    assert init["attributes"] == {"rpc.system.name": "jsonrpc", "rpc.method": "initialize",
                                  "jsonrpc.protocol.version": "2.0", "jsonrpc.request.id": "0"}  # fmt: skip
    assert _by_name(spans)["session/new"]["attributes"]["jsonrpc.request.id"] == "1"
    assert "acp.span.ended_by" not in turn["attributes"] and "acp.span.ended_by" not in init["attributes"]


SDK_KINDS = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3}  # the protobuf's SpanKind numbers
SDK_ERROR = 2  # STATUS_CODE_ERROR


@pytest.mark.parametrize("allow", [True, False], ids=["allowed", "rejected"])
def test_proxy_otlp_end_to_end(tmp_path: Path, backend_id: str, receiver: Receiver, allow: bool) -> None:
    rec = tmp_path / "r.ndjson"
    run = run_session(["--otlp", receiver.url, "--otlp-inject", "--record", str(rec)], backend_id, allow=allow)
    assert run.returncode == 0, run.stderr
    assert b"--otlp" not in run.stderr  # no warning: every export went through
    spans = receiver.spans
    check_session_spans(spans, SDK_ERROR, SDK_KINDS)
    assert {s["schema_url"] for s in spans} == {otel.SCHEMA_URL}
    turn = next(s for s in spans if s["attributes"].get("jsonrpc.request.id") == "2" and "invoke" in s["name"])
    # --otlp-inject: the agent got the turn's own traceparent; the recording keeps both sides' truth
    records = [r for r in recording.read(rec.read_bytes()) if isinstance(r, recording.Record) and r.is_json]
    prompts = [(r.action, json.loads(r.data)) for r in records if b'"session/prompt"' in r.data and r.side == "editor"]
    original = [f for action, f in prompts if action == "replaced" and f["id"] == 2]
    sent = [f for action, f in prompts if action == "injected" and f["id"] == 2]
    assert original[0]["params"]["_meta"] == {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}
    assert sent[0]["params"]["_meta"] == {
        "traceparent": f"00-{EDITOR_TRACE}-{turn['span_id']}-01",
        "tracestate": "vendor=1",
    }
    # metrics: frames and bytes per side are the recording's lines; one duration per turn and tool call
    for side in ("editor", "agent"):
        lines = [r for r in recording.read(rec.read_bytes()) if isinstance(r, recording.Record) and r.side == side]
        [(attrs, frames)] = [(a, p) for a, p in receiver.metric("acp.frames") if a == {"acp.side": side}]
        assert frames.as_int == len(lines)
        [(_, size)] = [(a, p) for a, p in receiver.metric("acp.bytes") if a == {"acp.side": side}]
        assert size.as_int == sum(len(r.data) for r in lines)
    turns = receiver.metric("gen_ai.client.operation.duration")
    assert sum(p.count for _, p in turns) == 2
    assert {a.get("error.type") is None for a, _ in turns} == {True, False}
    tools = receiver.metric("acp.tool_call.duration")
    assert sum(p.count for _, p in tools) == len([s for s in spans if s["name"].startswith("execute_tool")])


def test_export_to_otlp_and_the_spans_table(tmp_path: Path, backend_id: str, receiver: Receiver) -> None:
    rec = tmp_path / "r.ndjson"
    run = run_session(["--record", str(rec)], backend_id)
    assert run.returncode == 0, run.stderr
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    exported = subprocess.run([PY, "-m", "acp_fast.cli", "export", str(rec), "--to", "otlp+" + receiver.url],
                              capture_output=True, env=env, timeout=60)  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    spans = receiver.spans
    check_session_spans(spans, SDK_ERROR, SDK_KINDS)
    # timed by the recording: every span within the records' times
    times = [r.t for r in recording.read(rec.read_bytes()) if isinstance(r, recording.Record)]
    for s in spans:
        assert min(times) * 1e9 - 1e3 <= s["start"] <= s["end"] <= max(times) * 1e9 + 1e3
    # the spans table: the same mapping, no exporter
    from acp_fast import arrow

    table = arrow.spans(str(rec))
    assert table.column_names == list(otel.SPAN_COLUMNS)
    rows = table.to_pylist()
    assert sorted(r["name"] for r in rows) == sorted(s["name"] for s in spans)
    as_received = [dict(r, parent=r["parent_span_id"], start=r["start_ns"], end=r["end_ns"],
                        attributes=json.loads(r["attributes"])) for r in rows]  # fmt: skip
    check_session_spans(as_received, "ERROR", {k: k for k in SDK_KINDS})
    for r, s in zip(sorted(as_received, key=lambda x: x["name"]), sorted(spans, key=lambda x: x["name"])):
        assert (r["start"], r["end"], r["kind"]) == (
            s["start"],
            s["end"],
            next(k for k, v in SDK_KINDS.items() if v == s["kind"]),
        )


def test_export_to_otlp_refuses_what_is_not_a_recording(tmp_path: Path) -> None:
    plain = tmp_path / "s.ndjson"
    plain.write_bytes(b'{"jsonrpc":"2.0","id":1,"method":"x"}\n')
    run = subprocess.run([PY, "-m", "acp_fast.cli", "export", str(plain), "--to", "otlp+http://127.0.0.1:9"],
                         capture_output=True, timeout=60)  # fmt: skip
    assert run.returncode == 2 and b"not a recording" in run.stderr
    run = subprocess.run([PY, "-m", "acp_fast.cli", "export", str(plain), "--to", "otlp+ftp://x"],
                         capture_output=True, timeout=60)  # fmt: skip
    assert run.returncode == 2 and b"otlp+http://HOST:PORT" in run.stderr


def test_an_unreachable_endpoint_warns_once_and_the_relay_goes_on(tmp_path: Path, backend_id: str) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = run_session(["--otlp", f"http://127.0.0.1:{port}"], backend_id)
    assert run.returncode == 0, run.stderr
    warnings = [line for line in run.stderr.splitlines() if b"--otlp" in line]
    assert len(warnings) == 1 and b"could not send" in warnings[0], run.stderr
    assert b"Traceback" not in run.stderr


# -- the mapping on its own (rows, both backends) ------------------------------------------------


def _rec(*records: Tuple[float, str, Any]) -> bytes:
    lines = [b'{"acp-fast-recording":1,"t":100.0,"argv":["agent"],"version":"0"}']
    for t, side, frame in records:
        data = frame if isinstance(frame, bytes) else json.dumps(frame).encode()
        try:
            json.loads(data)
            lines.append(b'{"t":%.6f,"from":"%s","frame":%s}' % (t, side.encode(), data))
        except ValueError:
            lines.append(b'{"t":%.6f,"from":"%s","text":%s}' % (t, side.encode(), json.dumps(data.decode()).encode()))
    return b"\n".join(lines) + b"\n"


def _update(sid: str, update: Dict[str, Any]) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}}


def test_v2_turn_ends_with_idle_and_a_bad_traceparent_starts_a_trace(backend: Any) -> None:
    data = _rec(
        (100.0, "editor", {"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
                           "params": {"sessionId": "s", "prompt": [], "_meta": {"traceparent": "00-" + "0" * 32 + "-" + "1" * 16 + "-01"}}}),
        (100.1, "agent", {"jsonrpc": "2.0", "id": 1, "result": {}}),
        (100.2, "agent", _update("s", {"sessionUpdate": "state_update", "state": "running"})),
        (100.3, "agent", _update("s", {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}})),
        (100.5, "agent", _update("s", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})),
    )  # fmt: skip
    [turn] = otel.span_rows(data, backend=backend)
    a = json.loads(turn["attributes"])
    assert turn["parent_span_id"] is None and turn["trace_id"] != "0" * 32  # an all-zero trace id is no parent
    assert (turn["start_ns"], turn["end_ns"]) == (100_000_000_000, 100_500_000_000)
    assert a["gen_ai.response.finish_reasons"] == ["end_turn"] and a["acp.turn.acknowledged"] is True
    assert a["acp.turn.time_to_first_chunk"] == pytest.approx(0.3)


def test_tool_calls_end_with_their_turn_and_an_rpc_error(backend: Any) -> None:
    data = _rec(
        (100.0, "editor", {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}),
        (100.1, "agent", _update("s", {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Run", "kind": "execute"})),
        (100.2, "agent", _update("s", {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"})),
        (100.3, "agent", {"jsonrpc": "2.0", "id": 7, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/x"}}),
        (100.4, "editor", {"jsonrpc": "2.0", "id": 7, "error": {"code": -32002, "message": "no such file"}}),
        (100.5, "editor", {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}),
        (100.6, "agent", {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "cancelled"}}),
    )  # fmt: skip
    rows = {r["name"]: r for r in otel.span_rows(data, backend=backend)}
    turn, tool, fs = rows["invoke_agent"], rows["execute_tool Run"], rows["fs/read_text_file"]
    assert tool["parent_span_id"] == turn["span_id"] == fs["parent_span_id"]
    t = json.loads(tool["attributes"])
    assert t["acp.span.ended_by"] == "end_of_turn" and t["acp.tool.status"] == "in_progress"
    assert tool["end_ns"] == turn["end_ns"] == 100_600_000_000
    f = json.loads(fs["attributes"])
    assert fs["status"] == "ERROR" and fs["status_message"] == "no such file" and fs["kind"] == "SERVER"
    assert f["rpc.response.status_code"] == "-32002" and f["error.type"] == "-32002"
    assert json.loads(turn["attributes"])["gen_ai.response.finish_reasons"] == ["cancelled"]


def test_hostile_streams_stay_bounded(backend: Any) -> None:
    rows = otel.Rows()
    spans = otel.Spans(rows, max_open=100, backend=backend)
    spans.line("agent", b"\xff\xfe not json", False, 1.0)
    spans.line("agent", b'{"jsonrpc":"2.0","id":', False, 1.0)
    spans.line("editor", b'{"jsonrpc":"2.0","id":{"x":1},"result":{}}', True, 1.0)  # answers nothing
    spans.line("editor", b'[{"jsonrpc":"2.0","id":"batch","method":"session/prompt","params":[]}, 3]', True, 1.0)
    for i in range(2000):  # prompts never answered
        spans.line(
            "editor",
            b'{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s%d"}}' % (i, i),
            True,
            2.0,
        )
        assert len(spans._open) <= 100
    spans.line("editor", b'{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"s"}}', True, 3.0)
    for i in range(100_000):  # 100k tool calls in one turn, none finished
        frame = (
            b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t%d","title":"x"}}}'
            % i
        )
        spans.line("agent", frame, True, 4.0)
        if i % 10_000 == 0:
            assert len(spans._open) <= 100
    assert len(spans._open) <= 100 and len(spans._turns) <= 100 and len(spans.store) <= 100
    assert spans.evicted > 100_000
    bounded = [r for r in rows.rows if r["attributes"].get("acp.span.ended_by") == "bound"]
    assert len(bounded) == spans.evicted
    spans.close(5.0)
    assert not spans._open and len(rows.rows) == 1 + 2000 + 1 + 100_000  # every span ended once
    assert all(r["end_ns"] >= r["start_ns"] for r in rows.rows)


def test_traceparent_parsing() -> None:
    ok = otel.parse_traceparent(TRACEPARENT, "a=1")
    assert ok == otel.Remote(int(EDITOR_TRACE, 16), int(EDITOR_SPAN, 16), 1, "a=1")
    assert otel.format_traceparent(ok.trace_id, ok.span_id, ok.flags) == TRACEPARENT
    for bad in (None, 3, "", "00-xyz", f"ff-{EDITOR_TRACE}-{EDITOR_SPAN}-01", f"00-{EDITOR_TRACE}-{'0' * 16}-01",
                f"00-{EDITOR_TRACE}-{EDITOR_SPAN}-01-extra", f"00-{EDITOR_TRACE.upper()}-{EDITOR_SPAN}-01"):  # fmt: skip
        assert otel.parse_traceparent(bad) is None, bad
    assert otel.parse_traceparent(f"01-{EDITOR_TRACE}-{EDITOR_SPAN}-01-future") is not None  # a later version's tail


# -- without the extra -----------------------------------------------------------------------------

BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError("blocked: " + name)
        return None
sys.meta_path.insert(0, Block())
"""


@pytest.mark.parametrize(
    "args, prog",
    [
        (["proxy", "--otlp", "http://127.0.0.1:9", "--", "true"], "acp-fast proxy: --otlp"),
        (["export", "x.ndjson", "--to", "otlp+http://127.0.0.1:9"], "acp-fast export: --to otlp+"),
    ],
)
def test_without_the_extra_a_clear_message(args: List[str], prog: str) -> None:
    code = (
        BLOCK
        + f"import acp_fast, acp_fast.otel, acp_fast.proxy, acp_fast.arrow\nfrom acp_fast.cli import main\nsys.exit(main({args!r}))"
    )
    run = subprocess.run([PY, "-c", code], capture_output=True, timeout=60)
    assert run.returncode == 2, run.stderr
    [line] = run.stderr.decode().splitlines()
    assert line.startswith(prog) and "pip install 'acp-fast[otel]'" in line


@pytest.mark.parametrize(
    "args, said",
    [
        (["--otlp-inject"], b"--otlp-inject needs --otlp URL"),
        (["--otlp", "ftp://x"], b"expected an http:// or https:// URL"),
        (["--otlp", "localhost:4318"], b"expected an http:// or https:// URL"),
    ],
)
def test_proxy_usage_errors(args: List[str], said: bytes) -> None:
    run = subprocess.run([PY, "-m", "acp_fast.cli", "proxy", *args, "--", "true"], capture_output=True, timeout=60)
    assert run.returncode == 2 and said in run.stderr


def test_span_rows_need_no_opentelemetry(tmp_path: Path) -> None:
    rec = tmp_path / "r.ndjson"
    rec.write_bytes(
        _rec(
            (100.0, "editor", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
            (100.5, "agent", {"jsonrpc": "2.0", "id": 1, "result": {"agentInfo": {"name": "a", "version": "1"}}}),
        )
    )
    code = BLOCK + (
        "import acp_fast.otel as o, json\n"
        f"rows = o.span_rows({str(rec)!r})\n"
        "print(json.dumps([(r['name'], r['start_ns'], r['end_ns']) for r in rows]))\n"
        "try:\n    o.exporter('http://127.0.0.1:9')\nexcept ImportError as e:\n    print(e)\n"
    )
    run = subprocess.run([PY, "-c", code], capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr
    first, second = run.stdout.decode().splitlines()
    assert json.loads(first) == [["initialize", 100_000_000_000, 100_500_000_000]]
    assert "pip install 'acp-fast[otel]'" in second
