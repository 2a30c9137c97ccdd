"""A griffe extension (mkdocs.yml, docs/hooks.py): the ``#:`` comment lines right above an
attribute are its docstring, as Sphinx reads them. The package documents its constants that
way (``#: The profile names.`` above ``PROFILES = ...``)."""

from __future__ import annotations

import ast
from typing import Any

import griffe


class DocComments(griffe.Extension):
    """Give an attribute without a docstring the ``#:`` comment block above it."""

    def on_attribute_instance(self, *, node: Any, attr: griffe.Attribute, agent: Any, **kwargs: Any) -> None:
        if attr.docstring is not None or not isinstance(node, ast.AST) or attr.lineno is None:
            return
        if isinstance(attr.filepath, list):
            return
        try:
            lines = attr.lines_collection[attr.filepath]
        except KeyError:
            return
        text = []
        index = attr.lineno - 2  # the line above, 0-based
        while index >= 0 and lines[index].strip().startswith("#:"):
            text.insert(0, lines[index].strip()[2:].strip())
            index -= 1
        if text:
            attr.docstring = griffe.Docstring("\n".join(text), lineno=index + 2, parent=attr)
