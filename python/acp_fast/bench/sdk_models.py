"""The official ACP Python SDK's path (``json`` + its pydantic models), as the ``sdk`` contender
of ``acp_fast.bench.contenders`` and the SDK accumulator of ``acp_fast.bench.state`` use it.

Its own module so that both can import it without importing each other.
"""

from __future__ import annotations

import functools
import importlib
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Protocol, Tuple

__all__ = ["sdk_path"]


class _Corpus(Protocol):
    """What ``_Sdk.skip_reason`` reads of a corpus (``contenders.Corpus``)."""

    @property
    def profile(self) -> str: ...

    @property
    def version(self) -> int: ...


class _SdkPath:
    """The official ACP Python SDK (``agent-client-protocol``, ``import acp``) as a contender.

    Its connection reads a line, ``json.loads`` it, and validates the params of a request or
    notification with the pydantic model of its method (``MessageRouter``) and the result of a
    response with the model of the request it answers (``request_model``); it writes
    ``model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)`` through
    ``json.dumps(..., separators=(",", ":"))`` (``acp.utils.serialize_params``,
    ``acp.task.sender``). The method -> model table is read from the bundled v1 schema
    (``x-method``), whose definitions the SDK's models are generated from.
    """

    def __init__(self) -> None:
        self.unavailable: Optional[str] = None
        self.params: Dict[str, Any] = {}
        self.results: Dict[str, Any] = {}
        self.version: Optional[int] = None
        try:
            schema = importlib.import_module("acp.schema")
            self.accumulator = importlib.import_module("acp.contrib.session_state").SessionAccumulator
            acp = importlib.import_module("acp")
        except ImportError as exc:
            self.unavailable = f"the ACP Python SDK is not installed (pip install agent-client-protocol): {exc}"
            return
        self.version = getattr(acp, "PROTOCOL_VERSION", 1)
        self.notification = schema.SessionNotification
        path = Path(__file__).resolve().parents[1] / "schema" / "v1" / "schema.json"
        for name, definition in json.loads(path.read_text("utf-8"))["$defs"].items():
            method = definition.get("x-method")
            model = getattr(schema, name, None)
            if method is None or model is None:
                continue
            (self.results if name.endswith("Response") else self.params)[method] = model

    def skip_reason(self, corpus: _Corpus) -> Optional[str]:
        if self.unavailable is not None:
            return self.unavailable
        if corpus.version != self.version:
            return (
                f"the SDK's models are ACP v{self.version}; the {corpus.profile} profile is v{corpus.version} "
                f"(its frames fail the SDK's validation)"
            )
        return None

    def validate(self, message: Dict[str, Any], pending: Dict[Any, str]) -> Any:
        """The SDK's model of a message's params (request, notification) or result (response)."""
        method = message.get("method")
        if method is not None:
            if "id" in message:
                pending[message["id"]] = method
            model = self.params.get(method)
            return model.model_validate(message.get("params")) if model is not None else message.get("params")
        if "result" in message:
            model = self.results.get(pending.pop(message.get("id"), ""))
            return model.model_validate(message["result"]) if model is not None else message["result"]
        return message.get("error")

    @staticmethod
    def dump(model: Any) -> Any:
        if hasattr(model, "model_dump"):
            return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)
        return model

    def write(self, envelope: Dict[str, Any], member: Optional[str], model: Any) -> bytes:
        """One frame as the SDK's sender writes it (ASCII-escaped, compact separators)."""
        message = dict(envelope)
        if member is not None:
            message[member] = self.dump(model)
        return (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")

    def models(self, lines: List[bytes]) -> List[Tuple[Dict[str, Any], Optional[str], Any]]:
        """Every frame as (envelope without params/result, member name, fresh model): the input
        of the SDK's encode."""
        pending: Dict[Any, str] = {}
        out = []
        for line in lines:
            message = json.loads(line)
            member = "params" if "params" in message else "result" if "result" in message else None
            envelope = {k: v for k, v in message.items() if k != member}
            model = self.validate(message, pending) if member is not None else None
            out.append((envelope, member, model))
        return out


@functools.cache
def _sdk() -> _SdkPath:
    return _SdkPath()


def sdk_path() -> _SdkPath:
    """The SDK contender's helpers (raises RuntimeError when the SDK is not installed)."""
    sdk = _sdk()
    if sdk.unavailable is not None:
        raise RuntimeError(sdk.unavailable)
    return sdk
