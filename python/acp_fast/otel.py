"""OpenTelemetry spans and metrics of ACP traffic: the one place for the mapping.

`acp-fast proxy --otlp URL` sends them live to an OTLP/HTTP endpoint (a collector, Jaeger, ...),
`acp-fast export RECORDING... --to otlp+http://HOST:4318` sends those of recordings (their
record times), and `acp_fast.arrow.spans(path)` gives the same spans as an Arrow table without
any OpenTelemetry package. Sending needs the `otel` extra (`pip install 'acp-fast[otel]'`:
`opentelemetry-sdk` and `opentelemetry-exporter-otlp-proto-http`); this module imports them only
when a live exporter is made (`exporter`), so `import acp_fast.otel` works without them.

The mapping follows the OpenTelemetry semantic conventions **v1.40.0** (`SCHEMA_URL`, set on the
tracer and the meter): the GenAI agent spans and metrics, and the JSON-RPC spans.

| span | name | kind | from → to | attributes |
|---|---|---|---|---|
| a prompt turn | `invoke_agent` or `invoke_agent {agent name}` | CLIENT | the editor's `session/prompt` → its answer (v2: → the `state_update` `idle` of the session) | `gen_ai.operation.name`=`invoke_agent`, `gen_ai.provider.name`=`acp`, `gen_ai.conversation.id` (sessionId), `gen_ai.agent.name` / `gen_ai.agent.version` (the `initialize` answer's `agentInfo`), `gen_ai.response.finish_reasons` ([stopReason]), `acp.turn.time_to_first_chunk` (s, to the first `agent_message_chunk` / `agent_thought_chunk`), `jsonrpc.request.id`; ERROR with `error.type` (the code) on an error answer |
| a tool call | `execute_tool {title}` | INTERNAL | created → `completed` / `failed` (ERROR), or the end of its turn | `gen_ai.operation.name`=`execute_tool`, `gen_ai.tool.name` (title), `gen_ai.tool.call.id`, `gen_ai.conversation.id`, `acp.tool.kind`, `acp.tool.status`; parent: its turn |
| a permission wait | `session/request_permission` | SERVER | the agent's request → the editor's answer | the JSON-RPC attributes, `acp.permission.outcome`, `acp.permission.option_id`, `acp.permission.approved`, `acp.tool.call.id`; parent: the turn |
| any other request | its method | CLIENT (from the editor) / SERVER (from the agent) | request → answer | `rpc.system.name`=`jsonrpc`, `rpc.method`, `jsonrpc.protocol.version`=`2.0`, `jsonrpc.request.id`, on an error answer `rpc.response.status_code` and `error.type` (the code) and the message as the status description; parent: the turn of its session, if one is running |

Metrics: `acp.frames` and `acp.bytes` (counters, attribute `acp.side`: `editor` or `agent`),
`gen_ai.client.operation.duration` (histogram, s, each turn: `gen_ai.operation.name`,
`gen_ai.provider.name`, `error.type` on an error) and `acp.tool_call.duration` (histogram, s,
each tool call: `acp.tool.kind`, `acp.tool.status`).

A `traceparent` (and `tracestate`) in `session/prompt`'s `params._meta` (W3C Trace Context) makes
the turn a child of that span, in that trace. `TraceContextInjector`, a proxy middleware
(`acp-fast proxy --otlp-inject`), writes the turn's own `traceparent` into the `_meta` of the
`session/prompt` it forwards to the agent, so that the agent's spans join the turn.

Which lines count: a line's spans follow what each side sent (a request that a middleware dropped
or replaced still opens its span; a duplicate of an open request is ignored); the tool calls and
permission outcomes are those of an `acp_fast.ToolCallStore` fed the frames delivered. Open spans
are bounded (`max_open`, default 10,000): beyond that, the oldest is ended with
`acp.span.ended_by`=`bound`; spans still open at the end end with `end_of_stream`; tool calls
still open when their turn ends end with `end_of_turn`.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import acp_fast

from .recording import DELIVERED, SOURCES, Record, read_chunks

__all__ = [
    "SEMCONV_VERSION",
    "SCHEMA_URL",
    "INSTALL",
    "DEFAULT_MAX_OPEN",
    "SPAN_COLUMNS",
    "Spans",
    "Rows",
    "TraceContextInjector",
    "require_otel",
    "exporter",
    "from_recording",
    "span_rows",
    "Remote",
    "parse_traceparent",
    "format_traceparent",
]

#: The version of the OpenTelemetry semantic conventions the mapping follows.
SEMCONV_VERSION = "1.40.0"
#: Its schema URL (on the tracer and the meter).
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
#: What to install to send spans.
INSTALL = "pip install 'acp-fast[otel]'"
#: The default bound on spans open at once.
DEFAULT_MAX_OPEN = 10_000
#: The columns of `span_rows` (and `acp_fast.arrow.spans`).
SPAN_COLUMNS = (
    "name",
    "kind",
    "trace_id",
    "span_id",
    "parent_span_id",
    "start_ns",
    "end_ns",
    "status",
    "status_message",
    "attributes",
)
#: The longest string attribute value kept (characters); longer ones are cut.
MAX_TEXT = 4096
PROVIDER = "acp"
#: Updates whose first one is the turn's first chunk.
FIRST_CHUNKS = ("agent_message_chunk", "agent_thought_chunk")
#: Updates that change no tool call or permission: not given to the store.
STATELESS = ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk")
PROMPT = "session/prompt"
PERMISSION = "session/request_permission"

_decode: Callable[[bytes], Any] = acp_fast.decode


def require_otel() -> Any:
    """The OpenTelemetry SDK's `opentelemetry.sdk.trace` module, or ImportError naming the extra."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
        import opentelemetry.sdk.trace as sdk_trace
    except ImportError as exc:
        raise ImportError(f"OpenTelemetry export needs the otel extra, which is not installed: {INSTALL}") from exc
    return sdk_trace


# ---------------------------------------------------------------------------------------------
# W3C Trace Context

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")


@dataclass(frozen=True)
class Remote:
    """A span context read from a `traceparent` (and `tracestate`)."""

    trace_id: int
    span_id: int
    flags: int
    tracestate: str = ""


def parse_traceparent(traceparent: Any, tracestate: Any = None) -> Optional[Remote]:
    """The span context of a W3C `traceparent` header value (`00-<trace id>-<span id>-<flags>`),
    None when it is not one (a version `ff`, an all-zero id, a later version with a bad tail...)."""
    if not isinstance(traceparent, str) or len(traceparent) > 512:
        return None
    m = _TRACEPARENT.match(traceparent.strip())
    if m is None:
        return None
    version, trace_id, span_id, flags, tail = m.groups()
    if version == "ff" or (version == "00" and tail):
        return None
    tid, sid = int(trace_id, 16), int(span_id, 16)
    if not tid or not sid:
        return None
    state = tracestate if isinstance(tracestate, str) and len(tracestate) <= 512 else ""
    return Remote(tid, sid, int(flags, 16), state)


def format_traceparent(trace_id: int, span_id: int, flags: int) -> str:
    """The `traceparent` of a span context."""
    return f"00-{trace_id:032x}-{span_id:016x}-{flags & 0xFF:02x}"


# ---------------------------------------------------------------------------------------------
# Emitters: where the spans go


class Rows:
    """An emitter that keeps the spans as rows (`span_rows`, `acp_fast.arrow.spans`): no
    OpenTelemetry package needed; ids are random (`os.urandom`)."""

    def __init__(self) -> None:
        #: The ended spans, one dict per span, columns `SPAN_COLUMNS` (attributes as a dict).
        self.rows: List[Dict[str, Any]] = []

    def start(self, name: str, kind: str, start_ns: int, parent: Any, attributes: Dict[str, Any]) -> Any:
        """Open a span (`kind`: `CLIENT`, `SERVER` or `INTERNAL`) at `start_ns`, a child of
        `parent` (a `Remote`, another span's handle, or None: a new trace); its handle."""
        if isinstance(parent, Remote):
            trace_id, parent_id = parent.trace_id, parent.span_id
        elif parent is not None:
            trace_id, parent_id = parent["_trace"], parent["_span"]
        else:
            trace_id, parent_id = int.from_bytes(os.urandom(16), "big") or 1, None
        span = int.from_bytes(os.urandom(8), "big") or 1
        return {"name": name, "kind": kind, "_trace": trace_id, "_span": span, "_parent": parent_id,
                "start_ns": start_ns, "attributes": dict(attributes)}  # fmt: skip

    def context(self, handle: Any) -> Remote:
        """The span context of an open span."""
        return Remote(handle["_trace"], handle["_span"], 1)

    def end(
        self, handle: Any, end_ns: int, name: Optional[str], error: Optional[str], attributes: Dict[str, Any]
    ) -> None:
        """End a span at `end_ns` with more `attributes`, renamed `name` (None: as it is), status
        ERROR with the message `error` (None: UNSET): it becomes a row."""
        handle["attributes"].update(attributes)
        self.rows.append(
            {
                "name": name or handle["name"],
                "kind": handle["kind"],
                "trace_id": f"{handle['_trace']:032x}",
                "span_id": f"{handle['_span']:016x}",
                "parent_span_id": None if handle["_parent"] is None else f"{handle['_parent']:016x}",
                "start_ns": handle["start_ns"],
                "end_ns": max(end_ns, handle["start_ns"]),
                "status": "UNSET" if error is None else "ERROR",
                "status_message": error or None,
                "attributes": handle["attributes"],
            }
        )

    def count(self, side: str, size: int) -> None:
        """A line of `side`, `size` bytes long (`acp.frames`, `acp.bytes`): metrics are not kept."""

    def record(self, name: str, value: float, attributes: Dict[str, Any]) -> None:
        """Metrics are not kept."""

    def shutdown(self, timeout: float) -> None:
        """Nothing to send."""


class _Sdk:
    """An emitter on the OpenTelemetry SDK: a tracer and a meter (their providers are shut down
    by `shutdown`)."""

    def __init__(self, tracer_provider: Any, meter_provider: Any, failed: Optional[threading.Event] = None) -> None:
        from opentelemetry import trace as api
        from opentelemetry.metrics import Observation
        from opentelemetry.trace import SpanKind, Status, StatusCode

        self._api = api
        self._kinds = {"CLIENT": SpanKind.CLIENT, "SERVER": SpanKind.SERVER, "INTERNAL": SpanKind.INTERNAL}
        self._status = (Status, StatusCode)
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        #: Set once a send failed: the endpoint is down, and the last sends get little time.
        self.failed = failed or threading.Event()
        version = acp_fast.__version__
        self.tracer = tracer_provider.get_tracer("acp_fast.otel", version, schema_url=SCHEMA_URL)
        meter = meter_provider.get_meter("acp_fast.otel", version, schema_url=SCHEMA_URL)
        # acp.frames / acp.bytes: totals per side kept here, read by the SDK when it collects
        # (an observable counter: a line costs an addition, not an SDK call)
        self.frames: Dict[str, int] = {}
        self.bytes: Dict[str, int] = {}

        def observe(totals: Dict[str, int]) -> Callable[[Any], Iterable[Any]]:
            def callback(options: Any) -> Iterable[Any]:
                return [Observation(n, {"acp.side": side}) for side, n in list(totals.items())]

            return callback

        meter.create_observable_counter("acp.frames", [observe(self.frames)], "{frame}", "Lines seen, per side")
        meter.create_observable_counter("acp.bytes", [observe(self.bytes)], "By", "Bytes of the lines seen, per side")
        buckets = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
        self.histograms = {
            "gen_ai.client.operation.duration": meter.create_histogram(
                "gen_ai.client.operation.duration", "s", "GenAI operation duration (prompt turns)",
                explicit_bucket_boundaries_advisory=buckets,
            ),
            "acp.tool_call.duration": meter.create_histogram(
                "acp.tool_call.duration", "s", "Tool calls, from creation to their final status",
                explicit_bucket_boundaries_advisory=buckets,
            ),
        }  # fmt: skip

    def start(self, name: str, kind: str, start_ns: int, parent: Any, attributes: Dict[str, Any]) -> Any:
        """As `Rows.start`: an SDK span."""
        api = self._api
        if isinstance(parent, Remote):
            from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

            try:
                state = TraceState.from_header([parent.tracestate]) if parent.tracestate else TraceState()
            except Exception:  # noqa: BLE001 - a malformed tracestate is left out
                state = TraceState()
            remote = SpanContext(parent.trace_id, parent.span_id, True, TraceFlags(parent.flags & 0xFF), state)
            context = api.set_span_in_context(NonRecordingSpan(remote))
        elif parent is not None:
            context = api.set_span_in_context(parent)
        else:
            from opentelemetry.context import Context

            context = Context()  # a new trace, whatever the current context
        return self.tracer.start_span(
            name, context=context, kind=self._kinds[kind], attributes=attributes, start_time=start_ns
        )

    def context(self, handle: Any) -> Remote:
        """As `Rows.context`."""
        ctx = handle.get_span_context()
        state = ctx.trace_state.to_header() if ctx.trace_state else ""
        return Remote(ctx.trace_id, ctx.span_id, int(ctx.trace_flags), state)

    def end(
        self, handle: Any, end_ns: int, name: Optional[str], error: Optional[str], attributes: Dict[str, Any]
    ) -> None:
        """As `Rows.end`: the SDK span ends (and is queued for sending)."""
        if attributes:
            handle.set_attributes(attributes)
        if name:
            handle.update_name(name)
        if error is not None:
            status, code = self._status
            handle.set_status(status(code.ERROR, error))
        handle.end(end_time=max(end_ns, handle.start_time or 0))

    def count(self, side: str, size: int) -> None:
        """A line of `side`, `size` bytes long: added to the totals of `acp.frames` and `acp.bytes`."""
        self.frames[side] = self.frames.get(side, 0) + 1
        self.bytes[side] = self.bytes.get(side, 0) + size

    def record(self, name: str, value: float, attributes: Dict[str, Any]) -> None:
        """Record `value` in the histogram `name`."""
        self.histograms[name].record(value, attributes)

    def shutdown(self, timeout: float) -> None:
        """Send what is queued (at most `timeout` seconds each for spans and metrics; half a
        second when a send already failed), then stop."""

        def millis() -> int:
            return max(int((min(timeout, 0.5) if self.failed.is_set() else timeout) * 1000), 1)

        try:
            self.tracer_provider.force_flush(millis())
            self.meter_provider.force_flush(millis())
        finally:
            self.tracer_provider.shutdown()
            self.meter_provider.shutdown(timeout_millis=millis())


def exporter(endpoint: str, *, timeout: float = 3.0, warn: Optional[Callable[[str], None]] = None) -> Any:
    """An emitter that sends spans (`BatchSpanProcessor`: in the background, a full queue drops
    spans rather than block) and metrics to the OTLP/HTTP endpoint `endpoint` (its base URL, e.g.
    `http://127.0.0.1:4318`: `/v1/traces` and `/v1/metrics` are added). `timeout`: seconds each
    request may take. `warn(text)` is told once, in one line, when sending fails (the SDK's own
    log lines are silenced). Raises ImportError naming the `otel` extra when it is missing."""
    require_otel()
    import logging

    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExportResult, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL + 1)  # failures: one line of ours
    base = endpoint.rstrip("/")
    warned = threading.Event()

    def failed(what: str) -> None:
        if not warned.is_set():
            warned.set()
            if warn is not None:
                warn(f"--otlp {base}: could not send {what} (is an OTLP/HTTP receiver listening?); "
                 "spans are dropped while it is unreachable, the relay goes on")  # fmt: skip

    class SpanSender(OTLPSpanExporter):
        def export(self, spans: Any) -> Any:
            try:
                result = super().export(spans)
            except Exception:  # noqa: BLE001 - a send that fails must never reach the relay
                result = SpanExportResult.FAILURE
            if result != SpanExportResult.SUCCESS:
                failed(f"{len(spans)} spans")
            return result

    class MetricSender(OTLPMetricExporter):
        def export(self, metrics_data: Any, timeout_millis: Optional[float] = 10_000, **kwargs: Any) -> Any:
            try:
                result = super().export(metrics_data, timeout_millis=timeout_millis, **kwargs)
            except Exception:  # noqa: BLE001 - as above
                result = MetricExportResult.FAILURE
            if result != MetricExportResult.SUCCESS:
                failed("metrics")
            return result

    resource = Resource.create({"service.name": "acp-fast", "service.version": acp_fast.__version__})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(
        BatchSpanProcessor(SpanSender(endpoint=base + "/v1/traces", timeout=timeout), max_queue_size=8192)
    )
    reader = PeriodicExportingMetricReader(
        MetricSender(endpoint=base + "/v1/metrics", timeout=timeout), export_interval_millis=60_000
    )
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    return _Sdk(tracer_provider, meter_provider, warned)


# ---------------------------------------------------------------------------------------------
# The mapping


def _text(value: Any) -> str:
    """An attribute's text: a string (cut at `MAX_TEXT`), any other value as its JSON."""
    text: str
    if isinstance(value, str):
        text = value
    else:
        try:
            text = bytes(acp_fast.dumps(value)).decode()
        except (ValueError, TypeError):
            text = str(value)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT]


def _ns(t: float) -> int:
    return round(t * 1e9)


@dataclass
class _Open:
    """A span still open."""

    kind: str  # "turn", "tool", "permission", "rpc"
    handle: Any
    t: float
    session: Optional[str] = None
    method: Optional[str] = None
    turn: Optional[Tuple[Any, ...]] = None  # the key of the turn it runs in
    attributes: Dict[str, Any] = field(default_factory=dict)
    first_chunk: bool = False
    request_id: Any = None


class Spans:
    """The mapping, as a writer with the calls of `acp_fast.recording.RecordWriter` (`line`,
    `too_large`, `exit`, `flush`, `close`): the proxy gives it every line it sees (`--otlp`),
    `from_recording` every record. `emitter`: where the spans go (`exporter(URL)` or `Rows()`).
    `max_open`: the bound on spans open at once (None: none). `backend`: the module that
    decodes the frames (None: `acp_fast`'s). Calls may come from several threads."""

    def __init__(self, emitter: Any, *, max_open: Optional[int] = DEFAULT_MAX_OPEN, backend: Any = None) -> None:
        self.emitter = emitter
        self.max_open = max_open
        self._backend = acp_fast if backend is None else backend
        store_type = self._backend.ToolCallStore
        self.store = store_type(max_tool_calls=max_open)
        self._open: OrderedDict[Tuple[Any, ...], _Open] = OrderedDict()
        self._turns: Dict[str, Tuple[Any, ...]] = {}  # session -> key of its running turn
        self._agent: Dict[str, str] = {}
        self._lock = threading.RLock()
        #: Spans ended because of the bound.
        self.evicted = 0
        self.closed = False

    # -- the writer calls ------------------------------------------------------------------------

    def line(
        self,
        side: str,
        data: bytes,
        is_json: bool,
        t: float,
        *,
        crlf: bool = False,
        eol: bool = True,
        action: Optional[str] = None,
        reason: Optional[str] = None,
        withheld: bool = False,
    ) -> None:
        """One line of `side` (without its line ending), as `RecordWriter.line`."""
        del crlf, eol, reason
        with self._lock:
            if self.closed:
                return
            self.emitter.count(side, len(data))
            if not is_json or withheld or action in ("diverted", "answered", "coalesced"):
                return
            try:
                decoded = self._backend.decode(data)
            except acp_fast.DecodeError:
                return
            messages = decoded if isinstance(decoded, (list, acp_fast.Batch)) else (decoded,)
            delivered = action in DELIVERED
            for message in messages:
                if isinstance(message, acp_fast.DecodeError):
                    continue
                self._message(message, side, t, delivered)

    def too_large(self, side: str, length: int, t: float) -> None:
        """An oversized line: counted."""
        with self._lock:
            if not self.closed:
                self.emitter.count(side, length)

    def exit(self, status: int) -> None:
        """The agent's exit: nothing to map."""

    def flush(self) -> None:
        """Nothing buffered here (the exporter sends in the background)."""

    def close(self, t: Optional[float] = None, timeout: float = 3.0, *, shutdown: bool = True) -> None:
        """End the spans still open (`end_of_stream`, at `t`, default now) and, with `shutdown`,
        shut the emitter down (sending what is queued, `timeout` seconds at most for each signal)."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            end = time.time() if t is None else t
            for key in list(self._open):
                self._end(key, end, ended_by="end_of_stream")
        if shutdown:
            self.emitter.shutdown(timeout)

    # -- the turn, for the injector --------------------------------------------------------------

    def begin_turn(self, message: Any, t: float) -> Optional[Remote]:
        """Open the turn of the editor's `session/prompt` request `message` now (if not open) and
        give its span context (for `TraceContextInjector`)."""
        with self._lock:
            if self.closed or message.kind != "request" or message.method != PROMPT:
                return None
            key = ("editor", _key(message))
            if key not in self._open:
                self._request(message, "editor", t, key)
            entry = self._open.get(key)
            return None if entry is None else self.emitter.context(entry.handle)

    # -- one message -----------------------------------------------------------------------------

    def _message(self, message: Any, side: str, t: float, delivered: bool) -> None:
        kind = message.kind
        if kind == "request":
            key = (side, _key(message))
            if key not in self._open:
                self._request(message, side, t, key)
        elif kind in ("response", "error"):
            self._response(message, side, t, delivered)
            return
        elif kind == "notification":
            self._notification(message, side, t)
            if message.update_kind in STATELESS:
                return  # the bulk of a turn: no tool call or permission in it
        if delivered:
            self._apply(message, side, t)

    def _apply(self, message: Any, side: str, t: float) -> None:
        """The frame into the store; its tool-call and permission changes into spans."""
        try:
            change = self.store.apply(message, source=SOURCES[side])
        except acp_fast.DecodeError:
            return
        if change is not None:
            self._change(change, t)

    def _start(
        self, key: Tuple[Any, ...], entry_kind: str, name: str, kind: str, t: float, parent: Any,
        attributes: Dict[str, Any], **extra: Any,
    ) -> _Open:  # fmt: skip
        handle = self.emitter.start(name, kind, _ns(t), parent, attributes)
        entry = _Open(entry_kind, handle, t, **extra)
        self._open[key] = entry
        if self.max_open is not None and len(self._open) > self.max_open:
            oldest = next(iter(self._open))
            self.evicted += 1
            self._end(oldest, t, ended_by="bound")
        return entry

    def _parent_turn(self, session: Optional[str]) -> Tuple[Optional[Tuple[Any, ...]], Any]:
        key = self._turns.get(session) if session is not None else None
        entry = self._open.get(key) if key is not None else None
        return (key, entry.handle) if entry is not None else (None, None)

    def _request(self, message: Any, side: str, t: float, key: Tuple[Any, ...]) -> None:
        method = message.method
        session = message.session_id if isinstance(message.session_id, str) else None
        request_id = _text(message.id) if message.id is not None else None
        if method == PROMPT and side == "editor":
            params = message.params if isinstance(message.params, dict) else {}
            meta = params.get("_meta")
            parent = (
                parse_traceparent(meta.get("traceparent"), meta.get("tracestate")) if isinstance(meta, dict) else None
            )
            attributes: Dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": PROVIDER}
            if session is not None:
                attributes["gen_ai.conversation.id"] = _text(session)
            name = "invoke_agent"
            if "name" in self._agent:
                attributes["gen_ai.agent.name"] = self._agent["name"]
                name = f"invoke_agent {self._agent['name']}"
            if "version" in self._agent:
                attributes["gen_ai.agent.version"] = self._agent["version"]
            if request_id is not None:
                attributes["jsonrpc.request.id"] = request_id
            if session is not None:
                old = self._turns.get(session)
                if old is not None and old in self._open:  # a new prompt while one runs: the old one ends
                    self._end(old, t, ended_by="next_turn")
            self._start(key, "turn", name, "CLIENT", t, parent, attributes, session=session, method=method,
                        request_id=message.id)  # fmt: skip
            if session is not None:
                self._turns[session] = key
            return
        attributes = {"rpc.system.name": "jsonrpc", "rpc.method": _text(method), "jsonrpc.protocol.version": "2.0"}
        if request_id is not None:
            attributes["jsonrpc.request.id"] = request_id
        if session is not None:
            attributes["gen_ai.conversation.id"] = _text(session)
        turn, parent = self._parent_turn(session)
        entry_kind = "permission" if method == PERMISSION and side == "agent" else "rpc"
        self._start(key, entry_kind, _text(method), "CLIENT" if side == "editor" else "SERVER", t, parent,
                    attributes, session=session, method=method, turn=turn, request_id=message.id)  # fmt: skip

    def _response(self, message: Any, side: str, t: float, delivered: bool) -> None:
        requester = "agent" if side == "editor" else "editor"
        key = (requester, _key(message))
        entry = self._open.get(key)
        if entry is None:
            if delivered:
                self._apply(message, side, t)
            return
        error = None
        attributes: Dict[str, Any] = {}
        if message.kind == "error":
            err = message.error if isinstance(message.error, dict) else {}
            code = err.get("code")
            error = _text(err.get("message", "")) or "error"
            attributes["error.type"] = _text(code)
            if entry.kind != "turn":
                attributes["rpc.response.status_code"] = _text(code)
        # the result is read (made into Python objects) only where it is needed
        wanted = entry.kind == "turn" or (entry.kind == "rpc" and entry.method == "initialize")
        result = message.result if message.kind == "response" and wanted else None
        if entry.kind == "rpc" and entry.method == "initialize" and isinstance(result, dict):
            info = result.get("agentInfo", result.get("info"))  # v1 agentInfo, v2 info
            if isinstance(info, dict):
                for k in ("name", "version"):
                    if isinstance(info.get(k), str):
                        self._agent[k] = _text(info[k])
        if delivered:
            self._apply(message, side, t)  # a permission's outcome, first
        if entry.kind == "turn":
            stop = result.get("stopReason") if isinstance(result, dict) else None
            if error is None and stop is None and isinstance(result, dict):
                entry.attributes["acp.turn.acknowledged"] = True  # v2: it ends with state_update idle
                return
            if stop is not None:
                attributes["gen_ai.response.finish_reasons"] = [_text(stop)]
            self._end(key, t, error=error, attributes=attributes, ended_by="answer")
            return
        if entry.kind == "permission" and delivered:
            record = self.store.permission(entry.request_id)
            if isinstance(record, dict):
                attributes["acp.permission.outcome"] = _text(record.get("outcome"))
                if record.get("optionId") is not None:
                    attributes["acp.permission.option_id"] = _text(record["optionId"])
                attributes["acp.permission.approved"] = bool(record.get("approved"))
                if isinstance(record.get("toolCallId"), str):
                    attributes["acp.tool.call.id"] = _text(record["toolCallId"])
        self._end(key, t, error=error, attributes=attributes, ended_by="answer")

    def _notification(self, message: Any, side: str, t: float) -> None:
        if message.method != "session/update" or side != "agent":
            return
        session = message.session_id  # read without making the params into Python objects
        key = self._turns.get(session) if isinstance(session, str) else None
        entry = self._open.get(key) if key is not None else None
        if entry is None or key is None:
            return
        kind = message.update_kind
        if kind in FIRST_CHUNKS and not entry.first_chunk:
            entry.first_chunk = True
            entry.attributes["acp.turn.time_to_first_chunk"] = max(t - entry.t, 0.0)
        elif kind == "state_update" and entry.attributes.get("acp.turn.acknowledged"):
            params = message.params if isinstance(message.params, dict) else {}
            update = params.get("update")
            if not isinstance(update, dict) or update.get("state") != "idle":
                return
            stop = update.get("stopReason")
            attributes = {"gen_ai.response.finish_reasons": [_text(stop)]} if stop is not None else {}
            self._end(key, t, attributes=attributes, ended_by="idle")

    def _change(self, change: Any, t: float) -> None:
        session, target, ident, action, _tool = tuple(change)
        if target != "tool_call" or action == "appended" or not isinstance(session, str):
            return
        key = ("tool", session, ident)
        record = self.store.get(session, ident)
        if record is None:
            return
        entry = self._open.get(key)
        if entry is None:
            if action not in ("created", "replaced"):
                return
            turn, parent = self._parent_turn(session)
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": _text(ident),
                          "gen_ai.conversation.id": _text(session)}  # fmt: skip
            entry = self._start(key, "tool", "execute_tool", "INTERNAL", t, parent, attributes, session=session,
                                turn=turn)  # fmt: skip
        title = record.get("title")
        if title is not None:
            entry.attributes["gen_ai.tool.name"] = _text(title)
        entry.attributes["acp.tool.kind"] = _text(record.get("kind"))
        status = record.get("status")
        entry.attributes["acp.tool.status"] = _text(status)
        if status in ("completed", "failed"):
            self._end(key, t, error="failed" if status == "failed" else None, ended_by="status")

    def _end(
        self,
        key: Tuple[Any, ...],
        t: float,
        *,
        error: Optional[str] = None,
        attributes: Optional[Dict[str, Any]] = None,
        ended_by: str,
    ) -> None:
        entry = self._open.pop(key, None)
        if entry is None:
            return
        attrs = dict(entry.attributes)
        if attributes:
            attrs.update(attributes)
        name = None
        if entry.kind == "turn":
            for k in ("name", "version"):  # an agent that answered initialize after the prompt came
                if k in self._agent:
                    attrs.setdefault(f"gen_ai.agent.{k}", self._agent[k])
            if "gen_ai.agent.name" in attrs:
                name = f"invoke_agent {attrs['gen_ai.agent.name']}"
            if entry.session is not None and self._turns.get(entry.session) == key:
                del self._turns[entry.session]
            for other in [k for k, e in self._open.items() if e.turn == key]:  # its tool calls, requests
                self._end(other, t, ended_by="end_of_turn")
            if error is not None:
                attrs.setdefault("error.type", "error")
            duration = {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": PROVIDER}
            if "error.type" in attrs:
                duration["error.type"] = attrs["error.type"]
            self.emitter.record("gen_ai.client.operation.duration", max(t - entry.t, 0.0), duration)
        elif entry.kind == "tool":
            if "gen_ai.tool.name" in attrs:
                name = f"execute_tool {attrs['gen_ai.tool.name']}"
            if error is not None:
                attrs["error.type"] = "failed"
            self.emitter.record(
                "acp.tool_call.duration",
                max(t - entry.t, 0.0),
                {
                    "acp.tool.kind": attrs.get("acp.tool.kind", "other"),
                    "acp.tool.status": attrs.get("acp.tool.status", ""),
                },
            )
        if ended_by != "answer" and ended_by != "status" and ended_by != "idle":
            attrs["acp.span.ended_by"] = ended_by
        self.emitter.end(entry.handle, _ns(t), name, error, attrs)


def _key(message: Any) -> Any:
    """A request id as a key (`1` and `"1"` differ)."""
    ident = message.id
    return (type(ident).__name__, ident if isinstance(ident, (str, int)) or ident is None else repr(ident))


# ---------------------------------------------------------------------------------------------
# Injection towards the agent


class TraceContextInjector:
    """A proxy middleware (`acp_fast.proxy.Middleware`; `acp-fast proxy --otlp-inject`): the
    editor's `session/prompt` is forwarded to the agent with the turn's own `traceparent` (and
    `tracestate`) in `params._meta`, so that the agent's spans are children of the turn. The
    editor's frame is recorded as it came (action `replaced`), the frame sent as `injected`."""

    name = "otlp-inject"

    def __init__(self, spans: Spans) -> None:
        self.spans = spans

    def __call__(self, message: Any, sender: str, ctx: Any) -> Any:
        if sender != "editor" or message.kind != "request" or message.method != PROMPT:
            return message
        frame = message.to_dict()
        params = frame.get("params")
        if not isinstance(params, dict):
            return message
        remote = self.spans.begin_turn(message, time.time())
        if remote is None:
            return message
        meta = params.get("_meta")
        meta = dict(meta) if isinstance(meta, dict) else {}
        meta["traceparent"] = format_traceparent(remote.trace_id, remote.span_id, remote.flags)
        if remote.tracestate:
            meta["tracestate"] = remote.tracestate
        else:
            meta.pop("tracestate", None)
        params["_meta"] = meta
        ctx.reason("otlp-inject: traceparent of the turn's span in params._meta")
        return frame


# ---------------------------------------------------------------------------------------------
# Recordings


def from_recording(chunks: Iterable[bytes], spans: Spans, *, shutdown: bool = True) -> Dict[str, int]:
    """Give every record of a recording (its bytes, in pieces) to `spans` at its record time,
    then close it at the last record's time (`shutdown`: its emitter too). Returns the counts of `records` read and `spans`
    still open at the end. Raises `acp_fast.recording.RecordingError` on a malformed recording."""
    records = 0
    last: Optional[float] = None
    for item in read_chunks(chunks):
        if not isinstance(item, Record):
            if item.get("event") == "exit" and isinstance(item.get("t"), (int, float)):
                last = float(item["t"])
            continue
        records += 1
        last = item.t
        if item.too_large is not None:
            spans.too_large(item.side, item.too_large, item.t)
        elif item.withheld is not None:
            spans.line(item.side, b"", False, item.t, action=item.action, withheld=True)
        else:
            spans.line(item.side, item.data, item.is_json, item.t, action=item.action)
    still = len(spans._open)
    spans.close(last, shutdown=shutdown)
    return {"records": records, "open_at_end": still}


def _chunks_of(data: Union[bytes, str, os.PathLike[str]]) -> Iterator[bytes]:
    if isinstance(data, (bytes, bytearray, memoryview)):
        yield bytes(data)
        return
    with open(os.fspath(data), "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                return
            yield chunk


def span_rows(
    data: Union[bytes, str, os.PathLike[str]], *, max_open: Optional[int] = DEFAULT_MAX_OPEN, backend: Any = None
) -> List[Dict[str, Any]]:
    """The spans of a recording (its bytes or a path) as rows, in the order they ended: the
    columns of `SPAN_COLUMNS` (`attributes` as JSON text), ids as lowercase hex, times in unix
    nanoseconds, `status` `UNSET` or `ERROR`. The same mapping as `--otlp`, without any
    OpenTelemetry package."""
    rows = Rows()
    from_recording(_chunks_of(data), Spans(rows, max_open=max_open, backend=backend))
    for row in rows.rows:
        row["attributes"] = json.dumps(row["attributes"], ensure_ascii=False, sort_keys=True)
    return rows.rows
