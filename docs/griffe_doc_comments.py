"""A griffe extension (mkdocs.yml, docs/hooks.py) for what griffe reads of this package:

* the ``#:`` comment lines right above an attribute are its docstring, as Sphinx reads them.
  The package documents its constants that way (``#: The profile names.`` above
  ``PROFILES = ...``); a class's field without them has the comment at the end of its line
  (``kind: str  # "header", "line" or "footer"``) as its docstring;
* a constant of the compiled core read by importing it (``BACKEND``, ``MAX_FRAME_BYTES``, ...)
  has no docstring of its own: griffe takes its type's (``str(object='') -> str``), which would
  hide the docstring of the typed stub ``_native.pyi``. That borrowed docstring is dropped, so the
  stub's is the one shown;
* an attribute set in a method (``self.code = code`` in ``__init__``) shows no value: the
  expression it was assigned from (``code``) says nothing to a reader;
* a compiled class is built by ``__new__`` (its signature and docstring are in the stub): it gets
  an ``__init__`` with the same, so that the reference shows the constructor on the class
  (``merge_init_into_class``) as it does for the classes written in Python."""

from __future__ import annotations

import ast
import inspect
from typing import Any

import griffe


class DocComments(griffe.Extension):
    """Attribute docstrings from ``#:`` comments and the stub; constructors of compiled classes."""

    def on_attribute_instance(self, *, node: Any, attr: griffe.Attribute, agent: Any, **kwargs: Any) -> None:
        if not isinstance(node, ast.AST):
            # Inspected (imported) rather than read: a docstring that is the value's type's own
            # says nothing about the constant.
            value = getattr(node, "obj", None)
            if attr.docstring is not None and value is not None:
                own = inspect.getdoc(type(value))
                if own is not None and attr.docstring.value.strip() == own.strip():
                    attr.docstring = None
            return
        if "instance-attribute" in attr.labels and "class-attribute" not in attr.labels:
            attr.value = None
        if attr.docstring is not None or attr.lineno is None or isinstance(attr.filepath, list):
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
            return
        # A field of a class with its meaning in a comment at the end of its line
        # (``kind: str  # "header", "line" or "footer"``).
        code, _, comment = lines[attr.lineno - 1].partition("  # ")
        comment = comment.strip()
        tool = comment.startswith(("noqa", "type:", "pragma", "pyright:"))
        if attr.parent is not None and attr.parent.is_class and code.strip() and comment and not tool:
            text = comment[0].upper() + comment[1:] + ("" if comment.endswith((".", ")")) else ".")
            attr.docstring = griffe.Docstring(text, lineno=attr.lineno, parent=attr)

    def on_class(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        new = cls.members.get("__new__")
        if new is None or new.is_alias or not new.is_function or "__init__" in cls.members:
            return
        init = griffe.Function(
            "__init__",
            lineno=new.lineno,
            endlineno=new.endlineno,
            parameters=griffe.Parameters(*new.parameters),
            returns=None,
            docstring=new.docstring,
        )
        cls.set_member("__init__", init)
