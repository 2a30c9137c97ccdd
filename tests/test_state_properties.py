"""Property tests of the state engine (Hypothesis).

``ToolCallModel`` below is a deliberately small, obviously-correct model of docs/API.md's tool-call
update table (plain dicts, one branch per row) plus DESIGN 7.1 version learning, 7.3 record
materialization / validation and 7.8 eviction. ``TerminalModel`` does the same for DESIGN 7.4. The random
streams come from tests/state_strategies.py.

* model vs backend (``backend`` fixture, runs on each backend): after EVERY frame of a random
  v1/v2 stream the store's snapshot equals the model's, and the Change (or error kind) equals the
  model's;
* differential (``both_backends``): the Rust store and the Python store give equal results
  (Change tuples, DecodeErrors with message/position/raw) and equal ``to_json()`` bytes after
  every frame, on tool-call streams (also checked against the model) and on mixed streams with
  terminals, plans, permissions, batches and bad frames;
* ``state()`` / ``from_json`` round trips on random streams.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any, Dict, List, Optional, Set, Tuple

from hypothesis import given, note
from hypothesis import strategies as st

from acp_fast import DecodeError
from state_helpers import canonical_numbers
from state_model import assert_record, frame, results_key
from state_strategies import (
    BYTES,
    CONFIGS,
    MIXED_STREAMS,
    TERMINAL_STREAMS,
    TOOL_CALL_STREAMS,
    answers_a_request,
    envelope,
)

# ------------------------------------------------------------------------------------------
# the model of the tool-call rules (docs/API.md "How each update changes a record")
# ------------------------------------------------------------------------------------------

KNOWN = ("title", "kind", "status", "content", "locations", "rawInput", "rawOutput", "name", "_meta")
FINISHED = ("completed", "failed", "cancelled")
TOOL_CALL_KINDS = ("tool_call", "tool_call_update", "tool_call_content_chunk")


def materialize(tcid: str, fields: Dict[str, Any]) -> Dict[str, Any]:
    """DESIGN 7.3 key order: toolCallId, title?, kind, status, content, locations, rawInput?,
    rawOutput?, name?, _meta?, then other fields in first-set order (= dict order of ``fields``)."""
    out: Dict[str, Any] = {"toolCallId": tcid}
    if "title" in fields:
        out["title"] = fields["title"]
    out["kind"] = fields.get("kind", "other")
    out["status"] = fields.get("status", "pending")
    out["content"] = fields.get("content", [])
    out["locations"] = fields.get("locations", [])
    for key in ("rawInput", "rawOutput", "name", "_meta"):
        if key in fields:
            out[key] = fields[key]
    for key, value in fields.items():
        if key not in KNOWN:
            out[key] = value
    return out


def meta_patched(stored: Any, patch: Dict[str, Any]) -> Dict[str, Any]:
    """A v2 `_meta` patch: by top-level key, null removes a key, a value replaces it."""
    merged = dict(stored) if isinstance(stored, dict) else {}
    for k, v in patch.items():
        if v is None:
            merged.pop(k, None)
        else:
            merged[k] = v
    return merged


class ToolCallModel:
    """Tool-call state as plain dicts. A stored record is ``{field: value}`` without
    ``toolCallId``; JSON null is never stored (it means "absent" or "unset")."""

    def __init__(self, protocol_version: Optional[int] = None, max_tool_calls: Optional[int] = None) -> None:
        self.fixed = protocol_version
        self.negotiated: Optional[int] = None
        self.max_tool_calls = max_tool_calls
        self.sessions: Dict[str, Dict[str, Dict[str, Any]]] = {}  # first-seen order
        self.created: List[Tuple[str, str]] = []  # creation order, across sessions
        self.evicted = 0
        self.messages: Set[Tuple[str, str]] = set()  # v2 messages seen (session, messageId)

    @property
    def version(self) -> int:
        return self.fixed or self.negotiated or 1

    def snapshot(self) -> Dict[str, Dict[str, Dict[str, Any]]]:
        return {
            sid: {tcid: materialize(tcid, fields) for tcid, fields in calls.items()}
            for sid, calls in self.sessions.items()
            if calls
        }

    def apply(self, msg: Dict[str, Any]) -> Any:
        """("change", sid, target, id, action, tool_call_id), ("error", kind) or None."""
        if "method" not in msg:
            result = msg.get("result")
            if "result" in msg and isinstance(result, dict):
                pv = result.get("protocolVersion")
                if type(pv) is int:  # bool excluded
                    self.negotiated = 1 if pv <= 1 else 2
                    return ("change", None, "protocol", self.negotiated, "negotiated", None)
            return None
        if msg["method"] != "session/update" or "id" in msg:
            return None
        params = msg.get("params")
        if not isinstance(params, dict):
            return None
        update = params.get("update")
        if not isinstance(update, dict) or not isinstance(update.get("sessionUpdate"), str):
            return None
        kind = update["sessionUpdate"]
        if kind == "agent_message_chunk" and self.version == 2:
            # v2: the schema's rule appends the chunk's content to the message `messageId`
            sid, mid = params.get("sessionId"), update.get("messageId")
            if not isinstance(sid, str):
                return ("error", "invalid_session_id")
            if not isinstance(mid, str):
                return ("error", "invalid_id")
            self.sessions.setdefault(sid, {})  # the session is seen
            action = "appended" if (sid, mid) in self.messages else "created"
            self.messages.add((sid, mid))
            return ("change", sid, "agentMessage", mid, action, None)
        if kind not in TOOL_CALL_KINDS:
            if not kind.startswith("_"):
                return None  # a kind the version defines without a rule (the streams hold no other)
            # an unknown update: kept in its session's record by default (max_updates, DESIGN 7.3)
            if not isinstance(params.get("sessionId"), str):
                return ("error", "invalid_session_id")
            self.sessions.setdefault(params["sessionId"], {})  # the session is seen
            return ("change", params["sessionId"], "update", kind, "appended", None)
        sid = params.get("sessionId")
        if not isinstance(sid, str):
            return ("error", "invalid_session_id")
        tcid = update.get("toolCallId")
        if not isinstance(tcid, str):
            return ("error", "invalid_tool_call_id")
        if kind == "tool_call_content_chunk":
            if not isinstance(update.get("content"), dict):
                return ("error", "invalid_content")
        else:
            for key, error in (("content", "invalid_content"), ("locations", "invalid_locations")):
                if key in update and update[key] is not None and not isinstance(update[key], list):
                    return ("error", error)
        fields = {k: v for k, v in update.items() if k not in ("sessionUpdate", "toolCallId")}
        calls = self.sessions.get(sid, {})
        exists = tcid in calls

        if kind == "tool_call":
            # v1 tool_call, any version: replaced whole / created by the update's fields (null = absent)
            new = {k: v for k, v in fields.items() if v is not None}
            if exists:
                calls[tcid] = new
                return ("change", sid, "tool_call", tcid, "replaced", tcid)
            return self._create(sid, tcid, new)

        if kind == "tool_call_update":
            meta = fields.get("_meta")
            if not exists:
                # both versions: created from the update's non-null fields (a v2 `_meta` object
                # is a patch of none: its null keys are dropped)
                new = {k: v for k, v in fields.items() if v is not None}
                if self.version == 2 and isinstance(meta, dict):
                    new["_meta"] = meta_patched(None, meta)
                return self._create(sid, tcid, new)
            record = calls[tcid]
            for key, value in fields.items():
                if key == "_meta" and self.version == 2 and isinstance(value, dict):
                    record["_meta"] = meta_patched(record.get("_meta"), value)
                elif value is not None:
                    record[key] = value  # replaces (an existing key keeps its place)
                elif self.version == 2:
                    record.pop(key, None)  # v2: null unsets (defaulted fields back to default)
                # v1: null leaves the field unchanged
            return ("change", sid, "tool_call", tcid, "updated", tcid)

        # v2 tool_call_content_chunk, any version: its one item is appended (nothing else is stored)
        item = update["content"]
        if exists:
            record = calls[tcid]
            record["content"] = list(record.get("content", [])) + [item]
            return ("change", sid, "tool_call", tcid, "appended", tcid)
        return self._create(sid, tcid, {"content": [item]})

    def _create(self, sid: str, tcid: str, fields: Dict[str, Any]) -> Any:
        self.sessions.setdefault(sid, {})[tcid] = fields
        self.created.append((sid, tcid))
        if self.max_tool_calls is not None and len(self.created) > self.max_tool_calls:
            others = [key for key in self.created if key != (sid, tcid)]
            finished = [key for key in others if self.sessions[key[0]][key[1]].get("status") in FINISHED]
            victim = finished[0] if finished else others[0]
            self.created.remove(victim)
            del self.sessions[victim[0]][victim[1]]
            self.evicted += 1
        return ("change", sid, "tool_call", tcid, "created", tcid)


# ------------------------------------------------------------------------------------------
# the model of terminals (DESIGN 7.4)
# ------------------------------------------------------------------------------------------

BASE64_RE = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def base64_bytes(text: Any) -> Optional[bytes]:
    """The bytes of a valid base64 text (RFC 4648, standard alphabet, padded), else None."""
    if not isinstance(text, str) or len(text) % 4 != 0 or not BASE64_RE.fullmatch(text):
        return None
    return base64.b64decode(text)


class TerminalModel:
    def __init__(self) -> None:
        # (sid, tid) -> {"output": bytes, "outputMeta"?: ..., other fields in first-set order}
        self.terminals: Dict[Tuple[str, str], Dict[str, Any]] = {}

    def terminals_of(self, sid: str) -> Dict[str, Dict[str, Any]]:
        return {tid: self.materialize(tid, rec) for (s, tid), rec in self.terminals.items() if s == sid}

    @staticmethod
    def materialize(tid: str, rec: Dict[str, Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {"terminalId": tid}
        for key in ("command", "cwd", "output", "outputMeta", "exitStatus", "_meta"):
            if key in rec:
                out[key] = rec[key]
        for key, value in rec.items():
            if key not in out:
                out[key] = value
        return out

    def apply(self, msg: Dict[str, Any]) -> Any:
        params = msg["params"]
        update = params["update"]
        kind = update["sessionUpdate"]
        sid = params.get("sessionId")
        if not isinstance(sid, str):
            return ("error", "invalid_session_id")
        tid = update.get("terminalId")
        if not isinstance(tid, str):
            return ("error", "invalid_terminal_id")
        key = (sid, tid)
        exists = key in self.terminals
        if kind == "terminal_output_chunk":
            data = base64_bytes(update.get("data"))
            if data is None:
                return ("error", "invalid_base64")
            rec = self.terminals.setdefault(key, {"output": b""})
            rec["output"] = rec["output"] + data
            return ("change", sid, "terminal", tid, "appended" if exists else "created", None)
        snapshot: Optional[bytes] = None
        if "output" in update:
            output = update["output"]
            if output is not None and not isinstance(output, dict):
                return ("error", "invalid_output")
            if output is not None:
                snapshot = base64_bytes(output.get("data"))
                if snapshot is None:
                    return ("error", "invalid_base64")
        if "exitStatus" in update and update["exitStatus"] is not None and not isinstance(update["exitStatus"], dict):
            return ("error", "invalid_exit_status")
        rec = self.terminals.setdefault(key, {"output": b""})
        for name, value in update.items():
            if name in ("sessionUpdate", "terminalId"):
                continue
            if name == "output":
                if value is None:
                    rec["output"] = b""
                    rec.pop("outputMeta", None)
                else:
                    rec["output"] = snapshot
                    if value.get("_meta") is not None:
                        rec["outputMeta"] = value["_meta"]
                    else:
                        rec.pop("outputMeta", None)
            elif value is None:
                rec.pop(name, None)
            elif name == "_meta" and isinstance(value, dict):
                rec["_meta"] = meta_patched(rec.get("_meta"), value)
            else:
                rec[name] = value
        return ("change", sid, "terminal", tid, "updated" if exists else "created", None)


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def applied(backend, store, data: bytes) -> Any:
    """What ``apply`` gave: the comparable result, or the raised DecodeError."""
    try:
        return results_key(backend, store.apply(data))
    except DecodeError as exc:
        return exc


def as_model_result(result: Any) -> Any:
    """Reduce a backend result to the model's vocabulary (errors by kind; state errors are -32602)."""
    if isinstance(result, DecodeError):
        assert result.code == -32602, result
        return ("error", result.kind)
    return result


# ------------------------------------------------------------------------------------------
# model vs backend
# ------------------------------------------------------------------------------------------


@given(config=CONFIGS, stream=TOOL_CALL_STREAMS)
def test_tool_call_streams_follow_the_model(backend, config, stream):
    version, bound = config
    store = backend.ToolCallStore(version, max_tool_calls=bound)
    model = ToolCallModel(version, bound)
    for index, data in enumerate(stream):
        note(f"frame {index}: {data!r}")
        expected = model.apply(json.loads(data))
        got = as_model_result(applied(backend, store, data))
        assert got == expected, (index, data)
        assert_record(store.snapshot(), model.snapshot())
        assert (len(store), store.evicted) == (len(model.created), model.evicted)
        assert (store.protocol_version, store.negotiated_version) == (model.version, model.negotiated)
    for sid in ("s1", "s2", "s\u00e93"):
        assert_record(store.tool_calls(sid), model.snapshot().get(sid, {}))


@given(stream=TERMINAL_STREAMS)
def test_terminal_streams_follow_the_model(backend, stream):
    store = backend.ToolCallStore()
    model = TerminalModel()
    for index, data in enumerate(stream):
        note(f"frame {index}: {data!r}")
        expected = model.apply(json.loads(data))
        got = as_model_result(applied(backend, store, data))
        assert got == expected, (index, data)
        for sid in ("s1", "s2"):
            assert_record(store.terminals(sid), model.terminals_of(sid))
    assert len(store) == 0


@given(chunks=st.lists(BYTES, max_size=8), snapshot_at=st.integers(0, 8), snapshot=BYTES)
def test_terminal_bytes_are_the_decoded_chunks_after_the_last_snapshot(backend, chunks, snapshot_at, snapshot):
    store = backend.ToolCallStore()
    expected = b""
    for i, piece in enumerate(chunks):
        if i == snapshot_at:
            store.apply(
                frame(
                    envelope(
                        "s1",
                        {
                            "sessionUpdate": "terminal_update",
                            "terminalId": "t",
                            "output": {"data": base64.b64encode(snapshot).decode()},
                        },
                    )
                )
            )
            expected = snapshot
        store.apply(
            frame(
                envelope(
                    "s1",
                    {
                        "sessionUpdate": "terminal_output_chunk",
                        "terminalId": "t",
                        "data": base64.b64encode(piece).decode(),
                    },
                )
            )
        )
        expected += piece
    if chunks:
        assert store.terminal("s1", "t")["output"] == expected
        assert store.state()["sessions"]["s1"]["terminals"]["t"]["output"] == base64.b64encode(expected).decode()
    else:
        assert store.terminal("s1", "t") is None


# ------------------------------------------------------------------------------------------
# differential: Rust == Python (== model)
# ------------------------------------------------------------------------------------------


@given(config=CONFIGS, stream=TOOL_CALL_STREAMS)
def test_tool_call_streams_native_fallback_and_model_agree(both_backends, config, stream):
    native, fallback = both_backends
    version, bound = config
    rust = native.ToolCallStore(version, max_tool_calls=bound)
    python = fallback.ToolCallStore(version, max_tool_calls=bound)
    model = ToolCallModel(version, bound)
    for index, data in enumerate(stream):
        note(f"frame {index}: {data!r}")
        expected = model.apply(json.loads(data))
        got_rust = applied(native, rust, data)
        got_python = applied(fallback, python, data)
        assert got_rust == got_python, (index, data)
        assert as_model_result(got_python) == expected, (index, data)
        assert_record(rust.snapshot(), python.snapshot())
        assert_record(python.snapshot(), model.snapshot())
        assert rust.to_json() == python.to_json()


@given(config=CONFIGS, stream=MIXED_STREAMS)
def test_mixed_streams_native_equals_fallback(both_backends, config, stream):
    native, fallback = both_backends
    version, bound = config
    rust = native.ToolCallStore(version, max_tool_calls=bound)
    python = fallback.ToolCallStore(version, max_tool_calls=bound)
    for index, data in enumerate(stream):
        note(f"frame {index}: {data!r}")
        assert applied(native, rust, data) == applied(fallback, python, data), (index, data)
        assert rust.to_json() == python.to_json(), (index, data)
    for sid in ("s1", "s2", "s\u00e93"):
        assert_record(rust.pending_permissions(sid), python.pending_permissions(sid))
        assert rust.cancel_responses(sid) == python.cancel_responses(sid)
        assert_record(rust.terminals(sid), python.terminals(sid))


@given(stream=MIXED_STREAMS, cuts=st.lists(st.integers(0, 10_000), max_size=6))
def test_feed_native_equals_fallback(both_backends, stream, cuts):
    data = b"\n".join(stream)
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0] + points, points + [len(data)])]
    results = []
    for backend in both_backends:
        store = backend.ToolCallStore()
        out = []
        for piece in pieces:
            out += [results_key(backend, r) for r in store.feed(piece)]
        out += [results_key(backend, r) for r in store.finish()]
        results.append((out, store.line, store.to_json()))
    assert results[0] == results[1]


# ------------------------------------------------------------------------------------------
# checkpoints
# ------------------------------------------------------------------------------------------


def _queries(store) -> Dict[str, Any]:
    sessions = ("s1", "s2", "s\u00e93")
    out: Dict[str, Any] = {
        "len": len(store),
        "evicted": store.evicted,
        "versions": (store.protocol_version, store.negotiated_version),
        "snapshot": store.snapshot(),
        # the latest request with each id, across sessions (the checkpoint keeps request order)
        "permission": [store.permission(i) for i in (1, 2, "1", "p", None)],
    }
    for sid in sessions:
        out[sid] = (
            store.tool_calls(sid),
            store.terminals(sid),
            store.plans(sid),
            store.permissions(sid),
            store.pending_permissions(sid),
            store.cancel_responses(sid),
        )
    return out


@given(config=CONFIGS, stream=MIXED_STREAMS, more=MIXED_STREAMS)
def test_checkpoint_round_trip(backend, config, stream, more):
    version, bound = config
    # Eviction order after a restore is the creation order across sessions ("toolCallOrder").
    # A checkpoint does not keep the requests waiting for their answer (DESIGN 7.10).
    more = [d for d in more if not answers_a_request(d)]
    store = backend.ToolCallStore(version, max_tool_calls=bound)
    for data in stream:
        applied(backend, store, data)
    checkpoint = store.to_json()
    # dumps(state()) but for numbers and strings, which keep their text as received (DESIGN 7.8)
    assert canonical_numbers(checkpoint) == backend.dumps(store.state())
    restored = backend.ToolCallStore.from_json(checkpoint)
    assert restored.to_json() == checkpoint
    assert_record(restored.state(), store.state())
    assert_record(_queries(restored), _queries(store))
    for index, data in enumerate(more):
        note(f"more {index}: {data!r}")
        assert applied(backend, restored, data) == applied(backend, store, data), (index, data)
    assert restored.to_json() == store.to_json()
    assert_record(_queries(restored), _queries(store))


@given(stream=MIXED_STREAMS)
def test_checkpoint_crosses_backends(both_backends, stream):
    native, fallback = both_backends
    rust, python = native.ToolCallStore(), fallback.ToolCallStore()
    for data in stream:
        applied(native, rust, data)
        applied(fallback, python, data)
    assert rust.to_json() == python.to_json()
    assert fallback.ToolCallStore.from_json(rust.to_json()).to_json() == rust.to_json()
    assert native.ToolCallStore.from_json(python.to_json()).to_json() == python.to_json()
