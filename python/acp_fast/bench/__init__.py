"""The benchmark suite behind ``acp-fast bench``: corpora, contenders and the report."""

from .report import main

__all__ = ["main"]
