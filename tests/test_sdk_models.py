"""The conversions of ``acp_fast.integrations.models`` and the validators of the client's
``session/update`` fast path, which must give exactly the SDK's models (and let the SDK repair
what it repairs). Shared helpers: ``sdk_helpers.py``.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any, Dict, List

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

from acp import schema as S  # noqa: E402
from pydantic import ValidationError  # noqa: E402

import acp_fast  # noqa: E402
from acp_fast.integrations import acp_sdk, models  # noqa: E402
from sdk_helpers import (  # noqa: E402
    RecordingClient,
    client_side,
    run,
    scenario,
    until,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# ---------------------------------------------------------------------------------------------
# Conversions (integrations.models)


def test_model_conversions(backend: Any) -> None:
    start = scenario.golden_model("session_update_tool_call_locations_rawinput")
    frame = models.notification_frame("s1", start)
    message = backend.decode(frame)
    assert message.method == "session/update" and message.session_id == "s1" and message.tool_call_id == "call_lr"
    assert models.session_notification(frame).update == start
    assert models.session_notification(message) == S.SessionNotification(session_id="s1", update=start)
    assert models.session_update(scenario.golden("session_update_plan")) == scenario.golden_model("session_update_plan")
    assert models.params_model(message) == S.SessionNotification(session_id="s1", update=start)
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "fs/read_text_file",
        "params": scenario.golden("fs_read_text_file_request"),
    }
    assert models.params_model(request) == scenario.golden_model("fs_read_text_file_request")

    store = backend.ToolCallStore()
    store.apply(frame)
    store.apply(
        models.notification_frame(
            "s1",
            scenario.golden_model("session_update_tool_call_update_content").model_copy(
                update={"tool_call_id": "call_lr"}
            ),
        )
    )
    record = store.get("s1", "call_lr")
    assert models.tool_call_update(record) == S.ToolCallUpdate(
        tool_call_id="call_lr",
        title="Tracking file",
        kind="other",
        status="in_progress",
        content=scenario.golden_model("session_update_tool_call_update_content").content,
        locations=start.locations,
        raw_input=start.raw_input,
    )
    assert models.tool_call_start(record).title == "Tracking file"
    view = models.tool_call_view(record, kind_set=False)
    assert view.kind is None and view.status == "in_progress" and view.locations == tuple(start.locations)
    assert view.content == tuple(scenario.golden_model("session_update_tool_call_update_content").content)
    # v2 content the SDK's models cannot hold stays a wire dict
    v2_diff = {"type": "diff", "changes": [{"operation": "add", "path": "/a", "fileType": "text"}]}
    assert models.content_items([scenario.golden("tool_content_terminal"), v2_diff]) == [
        scenario.golden_model("tool_content_terminal"),
        v2_diff,
    ]
    with pytest.raises(KeyError):
        models.params_model({"jsonrpc": "2.0", "method": "_ext", "params": {}})


def test_the_update_fast_path_validates_exactly_as_the_sdk() -> None:
    """The client's hot path validates ``params.update`` alone with the validator of
    ``SessionNotification.update``: same model, same type, same fields set, on every update of
    seeded traffic and every golden update."""
    from acp_fast import traffic

    assert acp_sdk._validate_update is not None
    updates = [
        acp_fast.decode(frame).params["update"]
        for frame in traffic.frames("mixed", 3000, 11)
        if acp_fast.decode(frame).method == "session/update"
    ]
    updates += [scenario.golden(name) for name in scenario.GOLDEN_CASES if name.startswith("session_update_")]
    for update in updates:
        expected = S.SessionNotification.model_validate({"sessionId": "s", "update": update}).update
        got = acp_sdk._validate_update(update)
        assert type(got) is type(expected) and got == expected
        assert got.model_dump(exclude_unset=True) == expected.model_dump(exclude_unset=True)


def _lenient_modules() -> List[Any]:
    """The SDK modules whose generated field validators call its lenient-deserialization helpers
    (``acp.schema``; in SDK 1.0 also ``acp._schema_base``, for ``_meta``)."""
    import importlib

    modules = [S]
    try:
        modules.append(importlib.import_module("acp._schema_base"))
    except ImportError:  # SDK 0.12: the base model lives in acp.schema
        pass
    return modules


#: The helper that gives an invalid field its default: ``salvage_on_error`` in SDK 0.12,
#: ``use_default_on_error`` in 1.0.
DEFAULT_ON_ERROR = next(name for name in ("use_default_on_error", "salvage_on_error") if hasattr(S, name))


def _wrapper_calls(monkeypatch: Any) -> List[str]:
    """Counts the calls of the SDK's lenient-deserialization helpers (looked up in the globals of
    the modules defining its generated field validators at call time)."""
    calls: List[str] = []
    for module in _lenient_modules():
        for name in (DEFAULT_ON_ERROR, "skip_invalid_items"):
            original = getattr(module, name, None)
            if original is None:
                continue

            def counting(*args: Any, _name: str = name, _original: Any = original) -> Any:
                calls.append(_name)
                return _original(*args)

            monkeypatch.setattr(module, name, counting)
    return calls


def _seeded_and_golden_updates() -> List[Dict[str, Any]]:
    from acp_fast import traffic

    updates = [
        acp_fast.decode(frame).params["update"]
        for frame in traffic.frames("mixed", 3000, 11)
        if acp_fast.decode(frame).method == "session/update"
    ]
    return updates + [scenario.golden(name) for name in scenario.GOLDEN_CASES if name.startswith("session_update_")]


# Updates the SDK's lenient validators repair: an invalid optional field gets its default, invalid
# list items are dropped, an invalid ``_meta`` becomes None.
SALVAGED_UPDATES = [
    {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "x", "kind": "bogus", "status": 5},
    {
        "sessionUpdate": "tool_call",
        "toolCallId": "t2",
        "title": "x",
        "locations": [{"path": "/a", "line": 1}, {"nopath": 1}, {"path": "/b", "line": -3}],
        "content": [{"type": "nope"}, {"type": "content", "content": {"type": "text", "text": "ok"}}],
    },
    {"sessionUpdate": "tool_call_update", "toolCallId": "t2", "status": "done", "_meta": 7},
    {
        "sessionUpdate": "plan",
        "entries": [{"content": "a", "priority": "high", "status": "pending"}, {"content": "b"}],
    },
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "t", "annotations": 3}},
    {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "t", "annotations": {"audience": ["user", 5], "priority": "x"}},
    },
]


def test_the_strict_update_validators_give_the_sdk_models() -> None:
    """The hot path first tries, per ``sessionUpdate`` tag, the schema of that member of
    ``SessionNotification.update`` without the SDK's lenient wrappers: on every update of seeded
    traffic and every golden one it gives the same model, type and fields set as the SDK, without
    calling the wrappers; on updates the SDK repairs it fails (and the hot path falls back to the
    SDK's validator)."""
    import typing

    from acp.interfaces import Client

    strict = acp_sdk._update_validators()
    field = S.SessionNotification.model_fields["update"]
    tags = [member.model_fields["session_update"].annotation.__args__[0] for member in field.annotation.__args__]
    # as many update types as the SDK's Client.session_update takes (13 in SDK 0.12, 16 in 1.0)
    accepted = typing.get_args(typing.get_type_hints(Client.session_update)["update"])
    assert sorted(strict) == sorted(set(tags)) and len(tags) == len(accepted) >= 13
    unusual = [  # accepted as they are by the SDK too: field names, unknown fields, lax numbers
        {"sessionUpdate": "tool_call", "tool_call_id": "t", "title": "x", "raw_input": {"a": [1, 2.5, None]}},
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t",
            "title": "x",
            "extra": 1,
            "locations": [{"path": "/a", "line": 3.0}],
        },
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "x", "_meta": {"a": 1}},
            "messageId": "m",
        },
    ]
    for update in _seeded_and_golden_updates() + unusual:
        expected = S.SessionNotification.model_validate({"sessionId": "s", "update": update}).update
        got = strict[update["sessionUpdate"]](update)
        assert type(got) is type(expected) and got == expected
        assert got.model_dump(exclude_unset=True) == expected.model_dump(exclude_unset=True)
    for update in SALVAGED_UPDATES:
        S.SessionNotification.model_validate({"sessionId": "s", "update": update})  # the SDK accepts it...
        with pytest.raises(ValidationError):
            strict[update["sessionUpdate"]](update)  # ...after repairs the strict validator does not make


def test_the_strict_update_validators_skip_the_wrappers_and_leave_the_sdk_as_it_was(monkeypatch: Any) -> None:
    import pydantic

    strict = acp_sdk._update_validators()
    calls = _wrapper_calls(monkeypatch)
    update = {
        "sessionUpdate": "tool_call",
        "toolCallId": "t",
        "title": "t",
        "kind": "read",
        "locations": [{"path": "/a", "line": 2}],
        "_meta": {"k": 1},
    }
    strict["tool_call"](update)
    assert calls == []
    acp_sdk._validate_update(update)
    assert DEFAULT_ON_ERROR in calls and "skip_invalid_items" in calls
    # building them marked the SDK's classes incomplete for a moment only
    incomplete = [
        name
        for name, cls in vars(S).items()
        if isinstance(cls, type)
        and issubclass(cls, pydantic.BaseModel)
        and cls.__module__ == S.__name__
        and cls.__dict__.get("__pydantic_complete__") is not True
    ]
    assert incomplete == []


def test_updates_the_sdk_repairs_reach_the_handler_repaired(backend: Any) -> None:
    """Updates the strict validators refuse go through the SDK's lenient ones (repaired), or fail
    as in the SDK: same handler calls, same models, same errors logged, in the same order."""
    frames = [
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}}
        for update in SALVAGED_UPDATES
        + [
            {"sessionUpdate": "no_such_update", "x": 1},  # unknown tag: the SDK's error
            {"sessionUpdate": "tool_call", "title": "no id"},  # required field missing: the SDK's error
            {"sessionUpdate": 5},
            {"content": {"type": "text", "text": "no tag"}},
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "last"}},
        ]
    ]

    async def deliver(fast: bool) -> Any:
        client = RecordingClient()
        async with client_side(client, fast=fast, backend=backend) as (conn, peer):
            peer.send(*frames)
            await until(lambda: len(client.calls) == len(SALVAGED_UPDATES) + 1)
        return client.calls

    logger = logging.getLogger()
    results = {}
    for fast in (False, True):
        records: List[logging.LogRecord] = []
        handler = logging.Handler(logging.ERROR)
        handler.emit = records.append  # type: ignore[method-assign]
        logger.addHandler(handler)
        try:
            calls = run(deliver(fast))
        finally:
            logger.removeHandler(handler)
        results[fast] = (calls, [r.getMessage() for r in records], [type(r.exc_info[1]) for r in records if r.exc_info])
    assert results[True] == results[False]
    calls, messages, errors = results[True]
    assert messages == ["Unhandled error while handling notification method=session/update"] * 4
    assert errors == [ValidationError] * 4
    updates = [kw["update"] for _, kw in calls]
    assert updates[0].kind is None and updates[0].status is None
    assert [(loc.path, loc.line) for loc in updates[1].locations] == [("/a", 1), ("/b", None)]
    assert [item.content.text for item in updates[1].content] == ["ok"]
    assert updates[2].status is None and updates[2].field_meta is None
    assert [e.content for e in updates[3].entries] == ["a"]
    assert updates[-1].content.text == "last"
