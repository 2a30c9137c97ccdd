"""Entities: the targets of the schema's ``x-state`` rules that no other function of this store
handles (messages and thoughts by ``messageId``, the session's ``state``, ``usage``,
``sessionInfo``, ``availableCommands``, ``configOptions``, compactions, cursors, subagents, ...),
each rule applied as the schema writes it (``rules.py``, ``Rule``), under v2 (v1 publishes no
rules):

- upsert: the entity (by id when the rule names one) is created from the update's non-null
  members, or patched: a member present replaces the stored one, ``null`` removes it, ``_meta``
  is patched by top-level key (``merge_meta``); the id member stays as first received;
- append: the rule's ``value`` member is appended to the rule's ``field`` of the entity (a list;
  the entity is created when needed);
- replace: the entity becomes the ``value`` member as received (or the update's members when the
  rule names no value);
- remove: the entity is dropped (a change only when it existed).

``sessionUpdate`` is not stored. With ids, a target keeps at most ``max_entities`` entities per
session (the oldest dropped, counted).

Mirror of ``rust/state/entity.rs``. Differences on purpose: a record is a dict here (orjson's
dict already has one member per key, its lists are lists: Rust's ``whole`` has nothing to do
here), an update's values are kept as they are (the dict is fresh per frame), and a
replace by the update itself stores the record of its members at once (Rust keeps the update's
text and makes the record when it is written).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, cast

from . import rules
from .read import Bad, U, text
from .records import Change, Entities, Store

if TYPE_CHECKING:
    from collections import OrderedDict

__all__ = ["entity_update", "merge_meta", "message_entities"]

#: An id: (its member's name, its value).
Id = Optional[Tuple[str, Any]]


def entity_update(store: Store, sid: str, update: Dict[str, Any], index: int) -> Optional[Change]:
    """An update whose rule is applied as written (``rules.rule(index)``), under v2."""
    rule = rules.rule(index)
    ident: Id = None
    key: Optional[str] = None
    if rule.id is not None:
        given = update.get(rule.id)
        key = text(given)
        if type(key) is not str:
            raise Bad("invalid_id", (*U, rule.id), "a string")
        ident = (rule.id, given)  # the record keeps the id as received
    if rule.value is not None and rule.action in ("append", "replace") and update.get(rule.value) is None:
        raise Bad("invalid_value", (*U, rule.value), "a value other than null")
    target = rules.targets()[rule.target]
    s = store._session(sid)
    while len(s.entities) <= rule.target:
        s.entities.append(Entities())
    entities = s.entities[rule.target]
    action: Optional[str]
    if rule.action == "upsert":
        action = upsert_entity(entities, key, update, ident)
    elif rule.action == "append":
        assert rule.field is not None and rule.value is not None
        action = append_entity(entities, key, ident, rule.field, update[rule.value])
    elif rule.action == "replace":
        held = update[rule.value] if rule.value is not None else record(update)
        action = replace_entity(entities, key, held)
    else:
        action = remove_entity(entities, key)
    limit = store._max_entities
    if action == "created" and limit is not None:
        by_id = cast("OrderedDict[str, Any]", entities.by_id)
        while len(by_id) > limit:
            by_id.popitem(last=False)
            s.dropped_entities += 1
    return None if action is None else Change(sid, target.name, key, action, None)


def message_entities(
    store: Store, rules_: List[rules.MessageRule], obj: Dict[str, Any], sid: Optional[str]
) -> Optional[Change]:
    """The rules of an answer or a notification (``rules.MessageRule``) applied to ``obj`` (its
    ``result`` or ``params``): each replaces its target of the session ``sid`` (None: no session,
    the session rules are skipped) or of the agent, or that target's ``field``, by the rule's
    ``value`` member (skipped when absent or null) or ``obj`` whole. The change names the first
    target changed."""
    change = None
    for rule in rules_:
        value: Any = obj if rule.value is None else obj.get(rule.value)
        if value is None:
            continue
        if rule.agent:
            held = store._agent
        elif sid is None:
            continue
        else:
            held = store._session(sid).entities
        while len(held) <= rule.target:
            held.append(Entities())
        entities = held[rule.target]
        if rule.field is None:
            action = replace_entity(entities, None, value)
        else:
            action = "updated" if entities.one is not None else "created"
            rec = as_record(entities.one)
            rec[rule.field] = value
            entities.one = rec
        if change is None:
            target = rules.targets()[rule.target].name
            change = Change(None if rule.agent else sid, target, None, action, None)
    return change


def entity_mut(entities: Entities, key: Optional[str]) -> Any:
    """The entity ``key`` (the one entity when None) of ``entities``, or None."""
    if key is not None:
        return entities.by_id.get(key)
    return entities.one


def insert_entity(entities: Entities, key: Optional[str], held: Any) -> None:
    """Store a new entity."""
    if key is not None:
        entities.by_id[key] = held
    else:
        entities.one = held


def new_record(ident: Id) -> Dict[str, Any]:
    """A new record holding the id member (as received), if any."""
    return {} if ident is None else {ident[0]: ident[1]}


def upsert_entity(entities: Entities, key: Optional[str], update: Dict[str, Any], ident: Id) -> str:
    """upsert: patch the entity, or create it from the non-null members."""
    skip = None if ident is None else ident[0]
    held = entity_mut(entities, key)
    if held is not None:
        rec = as_record(held)
        if rec is not held:
            insert_entity(entities, key, rec)
        patch_record(rec, update, skip, True)
        return "updated"
    rec = new_record(ident)
    patch_record(rec, update, skip, False)
    insert_entity(entities, key, rec)
    return "created"


def append_entity(entities: Entities, key: Optional[str], ident: Id, field: str, value: Any) -> str:
    """append: ``value`` at the end of the list ``field`` of the entity (created when needed)."""
    held = entity_mut(entities, key)
    action = "appended"
    if held is None:
        held = new_record(ident)
        action = "created"
    rec = as_record(held)
    if rec is not held or action == "created":
        insert_entity(entities, key, rec)
    items = rec.get(field)
    if type(items) is list:
        items.append(value)
    else:
        # A value that is no list (set by a replace, or restored) gives way to the list.
        rec[field] = [value]
    return action


def replace_entity(entities: Entities, key: Optional[str], held: Any) -> str:
    """replace: the entity becomes ``held``."""
    existed = entity_mut(entities, key) is not None
    insert_entity(entities, key, held)
    return "replaced" if existed else "created"


def remove_entity(entities: Entities, key: Optional[str]) -> Optional[str]:
    """remove: drop the entity (an action only when it existed)."""
    if key is not None:
        if entities.by_id.pop(key, None) is None:
            return None
    elif entities.one is None:
        return None
    else:
        entities.one = None
    return "removed"


def as_record(held: Any) -> Dict[str, Any]:
    """The members of a record (a value held whole becomes the record of its members, if an
    object)."""
    return held if type(held) is dict else {}


def record(update: Dict[str, Any]) -> Dict[str, Any]:
    """A record of the update's members as received, ``null``s included (a replace)."""
    return {k: v for k, v in update.items() if k != "sessionUpdate"}


def patch_record(stored: Dict[str, Any], update: Dict[str, Any], skip: Optional[str], patching: bool) -> None:
    """Apply the update's members to a record: each present member replaces the stored one (in
    its place) or is added last; ``null`` removes it (``patching``) or is skipped (a new record);
    ``_meta`` objects patch the stored ``_meta`` by key. ``skip``: the id member (kept as first
    received)."""
    for k, v in update.items():
        if k == "sessionUpdate" or k == skip:
            continue
        if v is None:
            if patching:
                stored.pop(k, None)
        elif k == "_meta" and type(v) is dict:
            old = stored.get("_meta")
            stored["_meta"] = merge_meta(old if type(old) is dict else None, v)
        else:
            stored[k] = v


def merge_meta(stored: Optional[Dict[str, Any]], patch: Dict[str, Any]) -> Dict[str, Any]:
    """A ``_meta`` patch (v2): the stored object (None: none) patched by ``patch`` by top-level
    key: a key set to ``null`` is removed, any other value replaces the stored one (in its place)
    or is added last."""
    out = {} if stored is None else dict(stored)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out
