"""The client's ``session/update`` fast path in [`acp_fast.integrations.acp_sdk`][acp_fast.integrations.acp_sdk]: which
connections may take it (``_update_tracker``) and the validators it uses, which give the
SDK's own models (``_validate_update``, ``_update_validators``)."""

from __future__ import annotations

import logging
import threading
import typing
from typing import Annotated, Any, Dict, Optional, Set

from . import require_sdk

require_sdk("acp_fast.integrations.acp_sdk")

import acp._deserialize as _sdk_deserialize  # noqa: E402
import acp.telemetry as _telemetry  # noqa: E402
from acp.client.connection import _SessionUpdateTracker  # noqa: E402
from acp.router import MessageRouter  # noqa: E402
from acp.schema import SessionNotification  # noqa: E402
from pydantic import Field, TypeAdapter  # noqa: E402
from pydantic_core import SchemaValidator  # noqa: E402

from ._sdk_support import warn_once  # noqa: E402

# The integration's one logger (docs/SDK.md names it).
logger = logging.getLogger("acp_fast.integrations.acp_sdk")

_validate_notification = SessionNotification.__pydantic_validator__.validate_python


def _update_validator() -> Any:
    """The validator of the ``update`` field of ``SessionNotification`` alone (a tagged union on
    ``sessionUpdate``), or None if the field is not shaped as expected."""
    field = SessionNotification.model_fields["update"]
    if field.discriminator != "session_update" or field.metadata or field.alias is not None:
        return None
    # Typed Any: a runtime-built Annotated form (pydantic >= 2.14 types TypeAdapter's argument).
    form: Any = Annotated[field.annotation, Field(discriminator="session_update")]
    return TypeAdapter(form).validator.validate_python


_validate_update = _update_validator()


# The SDK's generated models wrap many fields in ``mode="wrap"`` field validators that restore the
# schema's lenient deserialization (``acp._deserialize``): a field that fails validation gets its
# default (``salvage_on_error`` in SDK 0.12, ``use_default_on_error`` in 1.0), list items that fail
# are dropped (``skip_invalid_items``). Each is a Python call, made for every such field present in
# the input. When the value validates, they return exactly what the field's own validator returns;
# they only change anything when it does not. SDK 1.0 also gives every model a ``mode="before"``
# model validator, ``_reject_malformed_known_variant``, which returns its input unchanged except
# for the few classes named in the ``_reserved_tags`` table it reads. So the hot path validates
# ``update`` first with the same schema minus these validators (the same model classes, instances
# built by the same pydantic-core code) and, only if that fails, again with the SDK's own
# validator, which repairs or raises the SDK's error.

_LENIENT_HELPERS = {"salvage_on_error", "use_default_on_error", "skip_invalid_items"}
# What a list schema may hold for ``skip_invalid_items`` to be dropped: no length or other
# constraint, under which validating item by item and the whole list at once could disagree.
_PLAIN_LIST_KEYS = {"type", "items_schema", "metadata", "serialization", "ref"}
_FUNCTION_NODES = {"function-wrap", "function-before", "function-after", "function-plain"}


def _sdk_function(node: Dict[str, Any]) -> Any:
    """The Python function a ``function-*`` core-schema node calls when the SDK defines it (a
    module of ``acp``), else None."""
    function = node.get("function")
    if not isinstance(function, dict):
        return None
    func = getattr(function.get("function"), "__func__", function.get("function"))
    module = getattr(func, "__module__", None) or ""
    return func if module == "acp" or module.startswith("acp.") else None


def _lenient_wrapper(node: Dict[str, Any]) -> bool:
    """True when ``node`` (a ``function-wrap`` core schema) is one of the SDK's generated
    lenient-deserialization validators, and dropping it changes nothing for valid input: its
    function only calls one of the helpers above, the one of ``acp._deserialize``."""
    func = _sdk_function(node)
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    names = set(code.co_names)
    if len(names) != 1 or not names <= _LENIENT_HELPERS:
        return False
    name = next(iter(names))
    helper = getattr(_sdk_deserialize, name, None)
    if helper is None or func.__globals__.get(name) is not helper:
        return False
    if name == "skip_invalid_items":
        inner = node.get("schema")
        while isinstance(inner, dict) and inner.get("type") in ("nullable", "default"):
            inner = inner.get("schema")
        if not isinstance(inner, dict) or inner.get("type") != "list" or not set(inner) <= _PLAIN_LIST_KEYS:
            return False
    return True


def _unchanging_model_check(node: Dict[str, Any]) -> bool:
    """True when ``node`` (a ``model`` core schema) starts with the SDK's
    ``_reject_malformed_known_variant`` and its class has no rule in that validator's table (the
    validator then returns its input as it is)."""
    inner, cls = node.get("schema"), node.get("cls")
    if not isinstance(inner, dict) or inner.get("type") != "function-before" or not isinstance(cls, type):
        return False
    check = getattr(getattr(cls, "_reject_malformed_known_variant", None), "__func__", None)
    if check is None or _sdk_function(inner) is not check:
        return False
    rules = getattr(cls, "_reserved_tags", None)
    return isinstance(rules, dict) and cls.__name__ not in rules


def _strip_lenient(node: Any, classes: Set[type], kept: Set[str]) -> Any:
    """A copy of a core schema without the SDK's validators above (``classes`` collects the model
    classes it builds, ``kept`` the other SDK validators it leaves in)."""
    if isinstance(node, dict):
        kind = node.get("type")  # a dict for the field named "type" of a fields mapping
        if kind == "function-wrap" and _lenient_wrapper(node):
            return _strip_lenient(node["schema"], classes, kept)
        if kind == "model":
            classes.add(node["cls"])
            if _unchanging_model_check(node):
                node = dict(node, schema=node["schema"]["schema"])
        elif isinstance(kind, str) and kind in _FUNCTION_NODES:
            func = _sdk_function(node)
            if func is not None:
                kept.add(func.__qualname__)
        return {
            key: value if key in ("cls", "function", "metadata", "config") else _strip_lenient(value, classes, kept)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_strip_lenient(value, classes, kept) for value in node]
    return node


def _strict_validator(model: Any, kept: Set[str]) -> Any:
    """``validate_python`` of ``model``'s core schema minus the validators above.

    pydantic-core reuses the prebuilt validator of a nested model class (``__pydantic_validator__``,
    wrappers included) when the class is marked complete, so the classes are marked incomplete for
    the moment the validator is built, then restored."""
    classes: Set[type] = set()
    schema = _strip_lenient(model.__pydantic_core_schema__, classes, kept)
    saved = [(cls, cls.__dict__["__pydantic_complete__"]) for cls in classes if "__pydantic_complete__" in cls.__dict__]
    try:
        for cls, _ in saved:
            type.__setattr__(cls, "__pydantic_complete__", False)
        return SchemaValidator(schema).validate_python
    finally:
        for cls, value in saved:
            type.__setattr__(cls, "__pydantic_complete__", value)


_strict_update_validators: Optional[Dict[str, Any]] = None
_strict_update_lock = threading.Lock()


def _update_validators() -> Dict[str, Any]:
    """``{sessionUpdate tag: strict validator of that member of SessionNotification.update}``,
    built once (an empty dict if the field is not shaped as expected: every update then goes
    through the SDK's validator, and a warning says so once)."""
    global _strict_update_validators
    if _strict_update_validators is not None:
        return _strict_update_validators
    with _strict_update_lock:  # one builder at a time: _strict_validator flips class flags
        built: Optional[Dict[str, Any]] = _strict_update_validators  # by another thread meanwhile
        if built is not None:
            return built
        validators: Dict[str, Any] = {}
        kept: Set[str] = set()
        problem = None
        if _validate_update is None:
            problem = "SessionNotification.update is not a union tagged by sessionUpdate"
        else:
            try:
                for member in typing.get_args(SessionNotification.model_fields["update"].annotation):
                    field = member.model_fields.get("session_update")
                    if field is None or field.alias != "sessionUpdate":
                        continue
                    tags = typing.get_args(field.annotation)
                    if len(tags) == 1 and tags[0] not in validators:
                        validators[tags[0]] = _strict_validator(member, kept)
            except Exception as exc:  # an SDK shaped otherwise: no strict validators
                logger.debug("acp-fast: no strict session/update validators", exc_info=True)
                validators, problem = {}, f"its update models could not be stripped ({exc!r})"
            if not validators and problem is None:
                problem = "no member of SessionNotification.update has a sessionUpdate tag"
        if problem is not None:
            warn_once(
                "strict-validators",
                f"acp-fast: session/update is validated with the SDK's own (slower) validators: {problem}",
                stacklevel=5,
            )
        elif kept:
            names = sorted(kept)
            warn_once(
                "strict-validators",
                f"acp-fast: the session/update fast path keeps {len(names)} validator(s) of this SDK it does "
                f"not recognize ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''}); updates are "
                "validated with them (slower)",
                stacklevel=5,
            )
        _strict_update_validators = validators
    return _strict_update_validators


def _update_tracker(handler: Any) -> Any:
    """The SDK client's ``_SessionUpdateTracker`` when ``handler`` is the router that
    ``ClientSideConnection`` builds and it routes ``session/update`` the standard way (the
    ``SessionNotification`` model, its keyword arguments, a snake_case ``session_update`` handler,
    no telemetry spans to open); else None, and every frame goes through the SDK's router as
    usual. When the router is the SDK client's but the fast path cannot be taken, a warning says
    why, once per reason."""
    if type(handler) is not MessageRouter:
        if type(handler).__module__ == "acp.experimental.v2.client":
            warn_once(
                "tracker:v2",
                "acp-fast: the session/update fast path is for v1 clients; an experimental v2 client's updates "
                "go through the SDK's router (acp-fast still frames, parses and dispatches them)",
            )
        return None  # not a v1 client: nothing to speed up here
    route = handler._notifications.get("session/update")
    if route is None or route.func is None:
        return None
    cells = _route_cells(route.func)
    tracker = cells.get("obj")
    if type(tracker) is not _SessionUpdateTracker:
        return None  # a router built by hand, not ClientSideConnection's
    if tracker._session_update is None:
        return None  # no handler: every update is the SDK's "method not found"
    problem = None
    if route.warn_unstable:
        problem = "its session/update route is marked unstable"
    elif cells.get("attr") != "session_update" or cells.get("func") != tracker.session_update:
        problem = "its session/update route does not call the update tracker's session_update"
    elif cells.get("legacy_api") is not False or tracker._legacy_session_update:
        problem = "the client's session_update handler has the legacy (deprecated) form"
    elif not _routes_session_notification(cells):
        problem = "its session/update route does not validate SessionNotification into keyword arguments"
    # logfire_span: a global of the SDK's telemetry module (imported from logfire there, not re-exported).
    elif getattr(_telemetry, "logfire_span", None) is not None or getattr(_telemetry, "TRACER", None) is not None:
        problem = "the SDK's telemetry spans are on (logfire or opentelemetry is installed)"
    if problem is not None:
        warn_once("tracker:" + problem, f"acp-fast: the client's session/update fast path is off: {problem}")
        return None
    return tracker


def _route_cells(func: Any) -> Dict[str, Any]:
    """The variables a route's wrapper closes over, by name."""
    closure = getattr(func, "__closure__", None) or ()
    names = getattr(getattr(func, "__code__", None), "co_freevars", ())
    cells: Dict[str, Any] = {}
    for name, cell in zip(names, closure):
        try:
            cells[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return cells


def _routes_session_notification(cells: Dict[str, Any]) -> bool:
    """True when the route's wrapper validates ``params`` as ``SessionNotification`` and calls the
    handler with its fields (minus ``field_meta``) and the ``_meta`` entries as keywords: the
    wrapper of SDK 0.12 (``model``), or that of SDK 1.0 (``request_type`` with the type's own
    validator and no ``adapt_params``)."""
    if "model" in cells:
        return cells["model"] is SessionNotification
    if cells.get("request_type") is not SessionNotification or cells.get("adapt_params") is not None:
        return False
    validate = cells.get("validate")
    adapter = getattr(validate, "__self__", None)
    return (
        getattr(validate, "__func__", None) is TypeAdapter.validate_python
        and getattr(adapter, "validator", None) is SessionNotification.__pydantic_validator__
    )
