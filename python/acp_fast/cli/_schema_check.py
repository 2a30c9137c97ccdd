"""The official schema of ``acp-fast validate`` (private): :func:`load_schema` reads the documents
shipped in ``acp_fast/schema/``, and :class:`SchemaChecker` validates against them with
``jsonschema``, finding and reporting the failing branch of a discriminated union.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Dict, List, Optional, Tuple

from ._spec import Issue, Path, describe, render_path


def _schema_text(version: int, name: str) -> str:
    return (resources.files("acp_fast") / "schema" / f"v{version}" / name).read_text(encoding="utf-8")


@cache
def load_schema(version: int, unstable: bool = False) -> Dict[str, Any]:
    """The official schema document shipped in the package (``acp_fast/schema/v{N}/``)."""
    schema: Dict[str, Any] = json.loads(_schema_text(version, "schema.unstable.json" if unstable else "schema.json"))
    return schema


# ---------------------------------------------------------------------------------------------
# Validation against the official schema (jsonschema)


class SchemaUnavailable(RuntimeError):
    """``jsonschema`` is not installed."""


class SchemaChecker:
    """Validates params / results / errors against the definitions of the official schema."""

    def __init__(self, version: int, unstable: bool = False):
        try:
            from jsonschema import Draft202012Validator
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise SchemaUnavailable(
                "--schema needs the jsonschema package: pip install jsonschema (or pip install 'acp-fast[test]')"
            ) from exc
        self._validator_class = Draft202012Validator
        self.version = version
        self.unstable = unstable
        self._root = load_schema(version, unstable)
        self._validators: Dict[str, Any] = {}

    def _validator(self, def_name: str) -> Any:
        validator = self._validators.get(def_name)
        if validator is None:
            validator = self._validator_class({"$ref": f"#/$defs/{def_name}", "$defs": self._root["$defs"]})
            self._validators[def_name] = validator
        return validator

    def has(self, def_name: str) -> bool:
        return def_name in self._root["$defs"]

    def check(self, def_name: str, value: Any, path: Path) -> List[Issue]:
        """Issues of ``value`` (at ``path``) against ``$defs/def_name``: the first error, explained."""
        errors = list(self._validator(def_name).iter_errors(value))
        if not errors:
            return []
        from jsonschema.exceptions import relevance

        return [_explain(max(errors, key=relevance), path, def_name)]


def _is_tag_mismatch(error: Any) -> bool:
    """A union branch that failed because its tag (``const``) or its exclusion (``not``) did not match."""
    return error.validator in ("const", "not") and len(error.relative_path) <= 1


def _explain(error: Any, path: Path, def_name: str) -> Issue:
    """Descend into oneOf / anyOf failures, keeping the branch whose tag matched, and word the error."""
    from jsonschema.exceptions import relevance

    for _ in range(64):
        if error.validator not in ("oneOf", "anyOf") or not error.context:
            break
        branches: Dict[Any, List[Any]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        candidates = [
            subs
            for subs in branches.values()
            if not any(_is_tag_mismatch(s) for s in subs)
            and not all(s.validator == "type" and s.validator_value == "null" for s in subs)
        ]
        if len(candidates) == 1:
            error = max(candidates[0], key=relevance)
            continue
        # every branch wants the same member (a union whose tag is missing): say so
        required = [next((s for s in subs if s.validator == "required"), None) for subs in candidates]
        if candidates and all(r is not None for r in required):
            names = {tuple(r.validator_value) for r in required if r is not None}
            if len(names) == 1:
                error = required[0]
        break
    return _schema_issue(error, path, def_name)


def _schema_issue(error: Any, base: Path, def_name: str) -> Issue:
    path = base + tuple(error.absolute_path)
    where = render_path(path)
    value = error.instance
    keyword = error.validator
    if keyword == "required":
        missing = [name for name in error.validator_value if not (isinstance(value, dict) and name in value)]
        name = missing[0] if missing else "?"
        return Issue(path + (name,), f'expected "{render_path(path + (name,))}" (required by {def_name}), found none')
    if keyword == "type":
        types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return Issue(path, f'expected "{where}" to be {" or ".join(types)}, found {describe(value)}')
    if keyword in ("oneOf", "anyOf"):
        consts = [s.get("const") for s in error.validator_value if isinstance(s, dict) and "const" in s]
        if consts and len(consts) == len(error.validator_value):
            names = ", ".join(f'"{c}"' for c in consts)
            return Issue(path, f'expected "{where}" to be one of {names}, found {describe(value)}')
        tags = _union_tags(error)
        if tags is not None:
            key, known = tags
            tag = value.get(key) if isinstance(value, dict) else None
            return Issue(
                path + (key,),
                f'expected "{render_path(path + (key,))}" to be one of {", ".join(known)}, found '
                + (describe(tag) if isinstance(value, dict) and key in value else "none"),
            )
        return Issue(path, f'expected "{where}" to match {def_name} ({keyword}), found {describe(value)}')
    if keyword in ("const", "enum"):
        allowed = [error.validator_value] if keyword == "const" else list(error.validator_value)
        return Issue(
            path,
            f'expected "{where}" to be one of {", ".join(json.dumps(a) for a in allowed)}, found {describe(value)}',
        )
    if keyword == "minItems":
        noun = "item" if error.validator_value == 1 else "items"
        return Issue(path, f'expected "{where}" to hold at least {error.validator_value} {noun}, found {len(value)}')
    if keyword in ("minimum", "maximum"):
        bound = ">=" if keyword == "minimum" else "<="
        return Issue(path, f'expected "{where}" to be {bound} {error.validator_value}, found {describe(value)}')
    message = error.message
    if len(message) > 160:
        message = message[:157] + "..."
    return Issue(path, f'"{where}": {message} ({keyword} in {def_name})')


def _union_tags(error: Any) -> Optional[Tuple[str, List[str]]]:
    """For a discriminated union whose tag matched no branch: (tag member, the known tags)."""
    key = None
    names: List[str] = []
    for branch in error.validator_value:
        if not isinstance(branch, dict):
            return None
        props = branch.get("properties") or {}
        tagged = [(k, v["const"]) for k, v in props.items() if isinstance(v, dict) and "const" in v]
        if len(tagged) != 1:
            if branch.get("not") is not None:  # the open "other" branch of a v2 union
                continue
            return None
        if key is None:
            key = tagged[0][0]
        elif key != tagged[0][0]:
            return None
        names.append(json.dumps(tagged[0][1]))
    if key is None:
        return None
    return key, names
