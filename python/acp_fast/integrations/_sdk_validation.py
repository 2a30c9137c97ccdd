"""The client's ``session/update`` fast path in :mod:`acp_fast.integrations.acp_sdk`: which
connections may take it (:func:`_update_tracker`) and the validators it uses, which give the
SDK's own models (:data:`_validate_update`, :func:`_update_validators`)."""

from __future__ import annotations

import logging
import threading
import typing
from typing import Annotated, Any, Dict, Optional, Set

from . import require_sdk

require_sdk("acp_fast.integrations.acp_sdk")

import acp._deserialize as _sdk_deserialize  # noqa: E402
import acp.schema as _sdk_schema  # noqa: E402
import acp.telemetry as _telemetry  # noqa: E402
from acp.client.connection import _SessionUpdateTracker  # noqa: E402
from acp.router import MessageRouter  # noqa: E402
from acp.schema import SessionNotification  # noqa: E402
from pydantic import Field, TypeAdapter  # noqa: E402
from pydantic_core import SchemaValidator  # noqa: E402

# The integration's one logger (docs/SDK.md names it).
logger = logging.getLogger("acp_fast.integrations.acp_sdk")

_validate_notification = SessionNotification.__pydantic_validator__.validate_python


def _update_validator() -> Any:
    """The validator of the ``update`` field of ``SessionNotification`` alone (a tagged union on
    ``sessionUpdate``), or None if the field is not shaped as expected."""
    field = SessionNotification.model_fields["update"]
    if field.discriminator != "session_update" or field.metadata or field.alias is not None:
        return None
    return TypeAdapter(Annotated[field.annotation, Field(discriminator="session_update")]).validator.validate_python


_validate_update = _update_validator()


# The SDK's generated models wrap many fields in ``mode="wrap"`` field validators that restore the
# schema's lenient deserialization (``acp._deserialize``): ``salvage_on_error`` (a field that fails
# validation gets its default) and ``skip_invalid_items`` (list items that fail are dropped). Each is
# a Python call, made for every such field present in the input. When the value validates, both
# return exactly what the field's own validator returns; they only change anything when it does
# not. So the hot path validates ``update`` first with the same schema minus these wrappers (the
# same model classes, instances built by the same pydantic-core code) and, only if that fails,
# again with the SDK's own validator, which salvages or raises the SDK's error.

_LENIENT_HELPERS = {"salvage_on_error", "skip_invalid_items"}
# What a list schema may hold for ``skip_invalid_items`` to be dropped: no length or other
# constraint, under which validating item by item and the whole list at once could disagree.
_PLAIN_LIST_KEYS = {"type", "items_schema", "metadata", "serialization", "ref"}


def _lenient_wrapper(node: Dict[str, Any]) -> bool:
    """True when ``node`` (a ``function-wrap`` core schema) is one of the SDK's generated
    lenient-deserialization validators, and dropping it changes nothing for valid input."""
    function = node.get("function")
    if not isinstance(function, dict) or function.get("type") != "no-info":
        return False
    func = getattr(function.get("function"), "__func__", None)
    code = getattr(func, "__code__", None)
    if code is None or getattr(func, "__module__", None) != "acp.schema":
        return False
    names = set(code.co_names)
    if len(names) != 1 or not names <= _LENIENT_HELPERS:
        return False
    helper = getattr(_sdk_schema, next(iter(names)), None)
    if helper is not getattr(_sdk_deserialize, next(iter(names)), None):
        return False
    if "skip_invalid_items" in names:
        inner = node.get("schema")
        while isinstance(inner, dict) and inner.get("type") in ("nullable", "default"):
            inner = inner.get("schema")
        if not isinstance(inner, dict) or inner.get("type") != "list" or not set(inner) <= _PLAIN_LIST_KEYS:
            return False
    return True


def _strip_lenient(node: Any, classes: Set[type]) -> Any:
    """A copy of a core schema without the SDK's lenient wrappers (``classes`` collects the model
    classes it builds)."""
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "function-wrap" and _lenient_wrapper(node):
            return _strip_lenient(node["schema"], classes)
        if kind == "model":
            classes.add(node["cls"])
        return {
            key: value if key in ("cls", "function", "metadata", "config") else _strip_lenient(value, classes)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_strip_lenient(value, classes) for value in node]
    return node


def _strict_validator(model: Any) -> Any:
    """``validate_python`` of ``model``'s core schema minus the lenient wrappers.

    pydantic-core reuses the prebuilt validator of a nested model class (``__pydantic_validator__``,
    wrappers included) when the class is marked complete, so the classes are marked incomplete for
    the moment the validator is built, then restored."""
    classes: Set[type] = set()
    schema = _strip_lenient(model.__pydantic_core_schema__, classes)
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
    through the SDK's validator)."""
    global _strict_update_validators
    if _strict_update_validators is not None:
        return _strict_update_validators
    with _strict_update_lock:  # one builder at a time: _strict_validator flips class flags
        built: Optional[Dict[str, Any]] = _strict_update_validators  # by another thread meanwhile
        if built is not None:
            return built
        validators: Dict[str, Any] = {}
        if _validate_update is not None:
            try:
                for member in typing.get_args(SessionNotification.model_fields["update"].annotation):
                    field = member.model_fields.get("session_update")
                    if field is None or field.alias != "sessionUpdate":
                        continue
                    tags = typing.get_args(field.annotation)
                    if len(tags) == 1 and tags[0] not in validators:
                        validators[tags[0]] = _strict_validator(member)
            except Exception:  # an SDK shaped otherwise: no strict validators
                logger.debug("acp-fast: no strict session/update validators", exc_info=True)
                validators = {}
        _strict_update_validators = validators
    return _strict_update_validators


def _update_tracker(handler: Any) -> Any:
    """The SDK client's ``_SessionUpdateTracker`` when ``handler`` is the router that
    ``ClientSideConnection`` builds and it routes ``session/update`` the standard way (model
    ``SessionNotification``, a snake_case ``session_update`` handler, no telemetry spans to open);
    else None, and every frame goes through the SDK's router as usual."""
    # logfire_span: a global of the SDK's telemetry module (imported from logfire there, not re-exported).
    spans = _telemetry.logfire_span  # type: ignore[attr-defined]
    if type(handler) is not MessageRouter or spans is not None or _telemetry.TRACER is not None:
        return None
    route = handler._notifications.get("session/update")
    if route is None or route.func is None or route.warn_unstable:
        return None
    func = route.func
    closure = func.__closure__
    if not closure:
        return None
    cells = dict(zip(func.__code__.co_freevars, (c.cell_contents for c in closure)))
    tracker = cells.get("obj")
    if cells.get("model") is not SessionNotification or cells.get("legacy_api") is not False:
        return None
    if type(tracker) is not _SessionUpdateTracker or cells.get("attr") != "session_update":
        return None
    if tracker._session_update is None or tracker._legacy_session_update:
        return None
    return tracker
