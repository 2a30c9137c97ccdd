"""Plans (DESIGN 7.6): v1 ``plan`` (the plan ``"main"``), v2 ``plan_update`` (the plan
``update.plan`` as received, by its ``planId``) and ``plan_removed``. Any version.

Mirror of ``rust/state/plan.rs``. Differences on purpose: here a plan record is the dict (orjson's,
or built for v1); Rust keeps its JSON text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, cast

from .evict import touch_session
from .read import Bad, U, text
from .records import Change, Store

if TYPE_CHECKING:
    from collections import OrderedDict

__all__ = ["plan", "plan_removed", "plan_update"]


def plan(store: Store, sid: str, update: Dict[str, Any]) -> Change:
    """v1 ``plan``: ``{"type": "items", "planId": "main", "entries": [...]}`` (+ ``_meta`` when not
    null) replaces the plan ``"main"``."""
    entries = update.get("entries")
    if type(entries) is not list:
        raise Bad("invalid_plan", U + ("entries",), "an array")
    record = {"type": "items", "planId": "main", "entries": entries}
    meta = update.get("_meta")
    if meta is not None:
        record["_meta"] = meta
    return _set_plan(store, sid, "main", record)


def plan_update(store: Store, sid: str, update: Dict[str, Any]) -> Change:
    """v2 ``plan_update``: ``update.plan`` (an object with a string ``planId``) replaces that plan."""
    record = update.get("plan")
    if type(record) is not dict:
        raise Bad("invalid_plan", U + ("plan",), "an object")
    pid = text(record.get("planId"))
    if type(pid) is not str:
        raise Bad("invalid_plan", U + ("plan", "planId"), "a string")
    return _set_plan(store, sid, pid, record)


def plan_removed(store: Store, sid: str, update: Dict[str, Any]) -> Optional[Change]:
    """``plan_removed``: the plan ``update.planId`` is removed (a Change only when it existed)."""
    pid = text(update.get("planId"))
    if type(pid) is not str:
        raise Bad("invalid_plan", U + ("planId",), "a string")
    s = store._sessions.get(sid)
    if s is None:
        return None
    if store._max_sessions is not None:
        touch_session(store, sid, s)
    if pid not in s.plans:
        return None
    del s.plans[pid]
    return Change(sid, "plan", pid, "removed", None)


def _set_plan(store: Store, sid: str, pid: str, record: Dict[str, Any]) -> Change:
    """Create or replace the plan ``pid`` of session ``sid``; a new one beyond the bound drops the
    oldest plans of the session (counted; the first keys of its OrderedDict, O(1))."""
    s = store._session(sid)
    plans = s.plans
    if pid in plans:
        plans[pid] = record
        return Change(sid, "plan", pid, "replaced", None)
    plans[pid] = record
    limit = store._max_plans
    # The bound is at least 1: the oldest plan is never the new one.
    while limit is not None and len(plans) > limit:
        cast("OrderedDict[str, Any]", plans).popitem(last=False)
        s.dropped_plans += 1
    return Change(sid, "plan", pid, "created", None)
