"""Tool calls: ``tool_call`` (v1 create / replace), ``tool_call_update`` (patch / upsert with the
null rule of the version in force) and ``tool_call_content_chunk`` (append), docs/API.md
"Tool-call state" and DESIGN 7.3. A permission request's tool call is applied here too
(``check_tool_call`` + ``commit_tool_call``, from ``permission.py``).

Mirror of ``rust/state/tool_call.rs``. Differences on purpose: here the update is orjson's dict,
which is fresh per frame, so the record keeps it: a new record takes the update dict itself as its
fields, an update patches the record's dict in place, a chunk is appended to the record's own
``content`` list; one update costs the same however many came before. The checks of
``check_tool_call`` are written out again in ``tool_call_update`` and ``tool_call`` (the hot
path: one call less per frame). Rust walks the update's members once and copies their text. The
record's count of content items dropped by the bound (DESIGN 7.8) is its member ``_truncated`` (an
int; ``records`` writes the marker), a name no update sets; the items are deleted from the front of
the list (Rust moves a start offset instead).
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from .entity import merge_meta
from .evict import set_content, touch, touch_session, trim_content
from .read import P_UPDATE_CONTENT, P_UPDATE_LOCATIONS, P_UPDATE_TCID, Bad, text
from .records import BYTES, Change, Store, held_len
from .request import new_session

__all__ = ["check_tool_call", "commit_tool_call", "content_chunk", "tool_call", "tool_call_update"]


def tool_call(store: Store, sid: str, update: Dict[str, Any]) -> Change:
    """v1 ``tool_call``: create the record from the update's fields, or replace an existing one
    whole (it keeps its place and its creation number). Any version."""
    tcid = text(update.get("toolCallId"))
    if type(tcid) is not str:
        raise Bad("invalid_tool_call_id", P_UPDATE_TCID, "a string")
    c = update.get("content")
    if c is not None and type(c) is not list:
        raise Bad("invalid_content", P_UPDATE_CONTENT, "an array or null")
    c = update.get("locations")
    if c is not None and type(c) is not list:
        raise Bad("invalid_locations", P_UPDATE_LOCATIONS, "an array or null")
    del update["toolCallId"]
    del update["sessionUpdate"]
    if "_truncated" in update:  # a test is cheaper than a call on this path
        del update["_truncated"]  # noqa: RUF051
    if None in update.values():
        update = {k: v for k, v in update.items() if v is not None}
    content = update.get("content")
    if content is not None and store._wrap_bare_content:
        content = update["content"] = [content_item(i) for i in content]
    limit = store._max_content_items
    max_bytes = store._max_content_bytes
    if content is not None and (max_bytes is not None or (limit is not None and len(content) > limit)):
        set_content(update, content, limit, max_bytes)
    calls = store._session(sid).tool_calls
    created = tcid not in calls
    calls[tcid] = update  # a replaced record keeps its place
    if created:
        store._tool_call_count += 1
    if store._max_tool_calls is not None:
        touch(store, sid, tcid, update, created)
    return Change(sid, "tool_call", tcid, "created" if created else "replaced", tcid)


def tool_call_update(store: Store, sid: str, update: Dict[str, Any]) -> Change:
    """``tool_call_update``: patch an existing record (null leaves a field in v1, unsets it in
    v2), or create one from the non-null fields."""
    tcid = text(update.get("toolCallId"))
    if type(tcid) is not str:
        raise Bad("invalid_tool_call_id", P_UPDATE_TCID, "a string")
    content = update.get("content")
    if content is not None and type(content) is not list:
        raise Bad("invalid_content", P_UPDATE_CONTENT, "an array or null")
    c = update.get("locations")
    if c is not None and type(c) is not list:
        raise Bad("invalid_locations", P_UPDATE_LOCATIONS, "an array or null")
    # commit_tool_call's common case inlined: an existing record, no null member, no v2 _meta.
    s = store._sessions.get(sid)
    if s is not None:
        f = s.tool_calls.get(tcid)
        if f is not None and None not in update.values() and not ("_meta" in update and store._v2):
            if store._max_sessions is not None:
                touch_session(store, sid, s)
            if "_truncated" in update:  # a test is cheaper than a call on this path
                del update["_truncated"]  # noqa: RUF051
            if content is not None and store._wrap_bare_content:
                content = update["content"] = [content_item(i) for i in content]
            f.update(update)
            del f["toolCallId"]
            del f["sessionUpdate"]
            if content is not None:
                limit = store._max_content_items
                max_bytes = store._max_content_bytes
                if "_truncated" in f or max_bytes is not None or (limit is not None and len(content) > limit):
                    set_content(f, content, limit, max_bytes)
            if store._max_tool_calls is not None:
                touch(store, sid, tcid, f, False)
            return Change(sid, "tool_call", tcid, "updated", tcid)
    created = commit_tool_call(store, sid, tcid, update)
    return Change(sid, "tool_call", tcid, "created" if created else "updated", tcid)


def content_chunk(store: Store, sid: str, update: Dict[str, Any]) -> Change:
    """``tool_call_content_chunk``: append ``update.content`` to the record's content (created if
    needed). Any version."""
    tcid = text(update.get("toolCallId"))
    if type(tcid) is not str:
        raise Bad("invalid_tool_call_id", P_UPDATE_TCID, "a string")
    item = update.get("content")
    if type(item) is not dict:
        raise Bad("invalid_content", P_UPDATE_CONTENT, "an object")
    if store._wrap_bare_content:
        item = content_item(item)
    s = store._sessions.get(sid)
    if s is None:
        s = new_session(store, sid)
    elif store._max_sessions is not None:
        touch_session(store, sid, s)
    calls = s.tool_calls
    limit = store._max_content_items
    max_bytes = store._max_content_bytes
    f = calls.get(tcid)
    if f is None:
        f = calls[tcid] = {"content": [item]}
        if limit == 0:
            f["content"] = []
            f["_truncated"] = 1
        elif max_bytes is not None:
            f[BYTES] = held_len(item)
        store._tool_call_count += 1
        if store._max_tool_calls is not None:
            touch(store, sid, tcid, f, True)
        return Change(sid, "tool_call", tcid, "created", tcid)
    content = f.get("content")
    if max_bytes is not None:
        f[BYTES] = f.get(BYTES, 0) + held_len(item)
    if content is None:
        content = f["content"] = [item]
    else:
        content.append(item)
    if (limit is not None and len(content) > limit) or (
        max_bytes is not None and f[BYTES] > max_bytes and len(content) > 1
    ):
        trim_content(f, content, limit, max_bytes)
    return Change(sid, "tool_call", tcid, "appended", tcid)


def check_tool_call(obj: Dict[str, Any], path: Tuple[str, ...]) -> str:
    """Check the tool-call object at ``path`` (its id, then content and locations); its id."""
    tcid = text(obj.get("toolCallId"))
    if type(tcid) is not str:
        raise Bad("invalid_tool_call_id", path + ("toolCallId",), "a string")
    c = obj.get("content")
    if c is not None and type(c) is not list:
        raise Bad("invalid_content", path + ("content",), "an array or null")
    c = obj.get("locations")
    if c is not None and type(c) is not list:
        raise Bad("invalid_locations", path + ("locations",), "an array or null")
    return tcid


def commit_tool_call(store: Store, sid: str, tcid: str, update: Dict[str, Any]) -> bool:
    """Apply a checked tool-call update (patch / upsert) with the null rule of the version in force;
    a new record takes the update dict itself as its fields. True if the record was created."""
    s = store._sessions.get(sid)
    if s is None:
        s = new_session(store, sid)
    elif store._max_sessions is not None:
        touch_session(store, sid, s)
    calls = s.tool_calls
    f = calls.get(tcid)
    limit = store._max_content_items
    update.pop("_truncated", None)
    content = update.get("content")
    if type(content) is list and store._wrap_bare_content:
        update["content"] = [content_item(i) for i in content]
    meta = update.get("_meta")
    if store._v2 and type(meta) is dict:
        # v2: a `_meta` object patches the stored one by top-level key (a new record: none).
        old = None if f is None else f.get("_meta")
        update["_meta"] = merge_meta(old if type(old) is dict else None, meta)
    if f is None:
        del update["toolCallId"]
        update.pop("sessionUpdate", None)
        if None in update.values():
            update = {k: v for k, v in update.items() if v is not None}
        content = update.get("content")
        if content is not None:
            set_content(update, content, limit, store._max_content_bytes)
        calls[tcid] = update
        store._tool_call_count += 1
        if store._max_tool_calls is not None:
            touch(store, sid, tcid, update, True)
        return True
    if None not in update.values():
        f.update(update)
        del f["toolCallId"]
        f.pop("sessionUpdate", None)
    elif store._v2:
        for k, v in update.items():
            if v is None:
                if k in f:
                    del f[k]
                if k == "content":
                    f.pop("_truncated", None)
                    f.pop(BYTES, None)
            elif k != "toolCallId" and k != "sessionUpdate":
                f[k] = v
    else:
        for k, v in update.items():
            if v is not None and k != "toolCallId" and k != "sessionUpdate":
                f[k] = v
    content = update.get("content")
    if content is not None:
        set_content(f, content, limit, store._max_content_bytes)
    if store._max_tool_calls is not None:
        touch(store, sid, tcid, f, False)
    return False


#: The content block types of ACP (``ContentBlock``): an item of one of them where a tool call's
#: content item belongs is a bare block.
BLOCK_TYPES = frozenset(("text", "image", "audio", "resource_link", "resource"))


def content_item(item: Any) -> Any:
    """A content item as stored with ``wrap_bare_content``: a bare content block (an object whose
    ``type`` is a ``BLOCK_TYPES`` one, which agents send without the wrapper) as
    ``{"type": "content", "content": block}``, anything else as received."""
    if type(item) is dict and item.get("type") in BLOCK_TYPES:
        return {"type": "content", "content": item}
    return item
