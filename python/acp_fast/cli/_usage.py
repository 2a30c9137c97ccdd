"""Usage errors of the ``acp-fast`` commands (private): one line on stderr, exit status 2, never
a traceback.

* ``Parser`` — an ``argparse.ArgumentParser`` whose errors are the single line
  ``PROG: error: MESSAGE`` (argparse would print its usage block first; ``PROG --help`` has it).
* ``integer`` / ``number`` — ``type=`` converters for a whole number or a number in a
  range; argparse puts the option in front of their message (``argument --chunks: expected an
  integer of at least 1, found 0``).
* `bound` — the ``type=`` of every limit option (``--max-tool-calls``, ``--max-updates``,
  ``--max-problems``, ...), one spelling for all: an integer, or ``none`` for no limit. ``0``
  means what the library's 0 means (keep none, turn off); an option whose 0 used to mean "no
  limit" still takes it as ``none``, with one warning on stderr.

Paths are checked where they are used: inputs when opened (``cannot read FILE: ...``), output
files with ``acp_fast._outputs.check_output`` / ``check_target``
before any work starts.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Callable, List, NoReturn, Optional, Sequence, Tuple

__all__ = ["Parser", "bound", "fail", "integer", "number"]

#: The largest limit (the library's bounds are 64-bit).
LIMIT_MAX = 2**63 - 1


def fail(prog: str, message: str, status: int = 2) -> int:
    """Every command's error, worded one way: ``PROG: error: MESSAGE`` on stderr, one line;
    returns ``status`` (2: usage or input, 1: the work failed) for ``return fail(...)``."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return status


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with one-line usage errors (status 2), worded by `fail`."""

    def error(self, message: str) -> NoReturn:
        self.exit(fail(self.prog, message))


def _expected(noun: str, low: Optional[float], high: Optional[float]) -> str:
    """``expected an integer from 1 to 10``, ``expected 0 or a positive number``, ..."""
    article = "an" if noun[0] in "aeiou" else "a"
    lo, hi = (f"{v:g}" if isinstance(v, float) else str(v) for v in (low, high))
    if low == 0 and high is None:
        return f"expected 0 or a positive {noun}"
    if low is not None and high is not None:
        return f"expected {article} {noun} from {lo} to {hi}"
    if low is not None:
        return f"expected {article} {noun} of at least {lo}"
    return f"expected {article} {noun}" if high is None else f"expected {article} {noun} of at most {hi}"


def integer(low: Optional[int] = None, high: Optional[int] = None) -> Callable[[str], int]:
    """A ``type=`` for a whole number (decimal, ``_`` allowed) from ``low`` to ``high``."""
    expected = _expected("integer", low, high)

    def convert(text: str) -> int:
        try:
            if not text.isascii():  # int() reads other scripts' digits ("٣" is 3): not a number here
                raise ValueError(text)
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{expected}, found {text!r}") from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{expected}, found {value}")
        return value

    return convert


def number(
    low: Optional[float] = None, high: Optional[float] = None, *, finite: bool = True, noun: str = "number"
) -> Callable[[str], float]:
    """A ``type=`` for a number (``1.5``, ``2e3``) from ``low`` to ``high``; never NaN, and not
    infinite unless ``finite`` is False. ``noun``: what the message calls it (``number of
    seconds``)."""
    expected = _expected(noun, low, high)
    if not finite:
        expected += " (or inf)"

    def convert(text: str) -> float:
        try:
            if not text.isascii():  # float() reads other scripts' digits: not a number here
                raise ValueError(text)
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{expected}, found {text!r}") from None
        out = math.isnan(value) or (finite and math.isinf(value))
        if out or (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{expected}, found {text!r}")
        return value

    return convert


def bound(least: int = 0, *, zero_was_none: Optional[str] = None) -> Callable[[str], Optional[int]]:
    """A ``type=`` for a limit: an integer from ``least`` to 2**63-1, or ``none`` (no limit,
    ``None``: the library's spelling). ``zero_was_none``: the option's place in the command line
    (``"acp-fast proxy: --max-tool-calls"``) when ``0`` used to mean "no limit" there: ``0`` is
    then still read as ``none``, and the first use says so on stderr (deprecated)."""
    expected = f"expected an integer from {least} to 2**63-1 or none"
    warned = [False]

    def convert(text: str) -> Optional[int]:
        if text.strip().lower() == "none":
            return None
        try:
            if not text.isascii():
                raise ValueError(text)
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{expected}, found {text!r}") from None
        if value == 0 and zero_was_none is not None:
            if not warned[0]:
                warned[0] = True
                prog, _, option = zero_was_none.rpartition(": ")
                print(
                    f"{prog}: warning: {option} 0 for no limit is deprecated; write {option} none",
                    file=sys.stderr,
                )
            return None
        if not least <= value <= LIMIT_MAX:
            raise argparse.ArgumentTypeError(f"{expected}, found {value}")
        return value

    return convert


def split_command(args: Sequence[str]) -> Tuple[List[str], List[str]]:
    """``(options, command)``: the arguments before the first ``--`` and the agent command after
    it (all options and no command when there is no ``--``)."""
    args = list(args)
    if "--" in args:
        split = args.index("--")
        return args[:split], args[split + 1 :]
    return args, []
