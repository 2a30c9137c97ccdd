"""Input files that hold a session's traffic (a stream, a recording): regular files only, opened
without blocking, and named once each.

* ``open_file`` — open a path for reading: a FIFO, a device (``/dev/zero``, a terminal), a
  socket or a directory, or a symbolic link to one, is refused with ``NotRegularFileError``
  before anything is read from it, and the file is checked again once open (``fstat`` of the open
  descriptor, so that a file swapped in between is seen), so that a reader never blocks in
  ``open`` nor reads forever.
* ``expand`` — the files named by paths, directories and glob patterns: a ``**`` never
  descends through a symbolic link to a directory (a link loop gives nothing twice), every file
  found must be a regular file, and a file named twice (the same path, a hard link, a symbolic
  link to it: the same device and inode) is read once, where it first came.

Shared by the faces (``acp_fast.cli``: ``validate``, ``inspect``, ``export``) and
``acp_fast.arrow`` (which ``acp_fast.dask`` and ``acp_fast.ray`` use), so that none of them imports
another's private modules. Output files are in ``acp_fast._outputs``.
"""

from __future__ import annotations

import errno
import fnmatch
import glob
import os
import stat
from typing import BinaryIO, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

__all__ = ["NotRegularFileError", "expand", "open_file"]

#: What a file that is not a regular file is, by its ``st_mode``.
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFileError(OSError):
    """An input that is not a regular file (``strerror`` says what it is; ``filename`` is its path)."""

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def _kind(mode: int) -> str:
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "not a regular file"  # pragma: no cover - no other kind on the systems supported


def check_regular(st: os.stat_result, path: str) -> None:
    """Raise ``NotRegularFileError`` unless ``st`` (of ``path``) is a regular file's."""
    if not stat.S_ISREG(st.st_mode):
        kind = _kind(st.st_mode)
        if kind == "a directory":
            raise NotRegularFileError(None, "is a directory", path)
        raise NotRegularFileError(None, f"is {kind}, not a regular file", path)


def open_file(path: str) -> BinaryIO:
    """``path`` opened for reading in binary, a regular file (through symbolic links). Raises
    ``NotRegularFileError`` for anything else, and OSError when it cannot be opened. The
    open cannot block (``O_NONBLOCK``: a FIFO with no writer, a device), and the open file is the
    one checked (``fstat``)."""
    check_regular(os.stat(path), path)  # refused before any open: a socket cannot even be opened
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        check_regular(os.fstat(fd), path)  # the file opened, whatever stands at the path now
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


# ---------------------------------------------------------------------------------------------
# Names, directories and patterns


def _names(folder: str) -> List[str]:
    try:
        with os.scandir(folder or os.curdir) as it:
            return [entry.name for entry in it]
    except OSError:
        return []


def _real_subfolders(folder: str) -> List[str]:
    """The folders in ``folder``, hidden ones and symbolic links to folders excepted."""
    try:
        with os.scandir(folder or os.curdir) as it:
            return [
                os.path.join(folder, e.name)
                for e in it
                if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
            ]
    except OSError:
        return []


def _select(folder: str, parts: Sequence[str]) -> Iterator[str]:
    """Paths under ``folder`` matching the pattern components ``parts`` (as ``glob.glob``
    with ``recursive=True`` matches them, but ``**`` descends real folders only)."""
    if not parts:
        yield folder
        return
    head, rest = parts[0], parts[1:]
    if head == "**" and not rest:  # everything below: the folder, its entries, its folders' entries
        yield folder
        for name in _names(folder):
            if not name.startswith("."):
                yield os.path.join(folder, name)
        for sub in _real_subfolders(folder):
            yield from _select(sub, parts)
    elif head == "**":
        yield from _select(folder, rest)  # no folder
        for sub in _real_subfolders(folder):  # one or more
            yield from _select(sub, parts)
    elif glob.has_magic(head):
        for name in _names(folder):
            if name.startswith(".") and not head.startswith("."):
                continue  # hidden: as glob, a wildcard does not match a leading dot
            if fnmatch.fnmatchcase(name, head):
                path = os.path.join(folder, name)
                if not rest:
                    yield path
                elif os.path.isdir(path):
                    yield from _select(path, rest)
    else:
        path = os.path.join(folder, head)
        if not rest:
            if os.path.lexists(path):
                yield path
        elif os.path.isdir(path):
            yield from _select(path, rest)


def _glob(pattern: str) -> List[str]:
    """The paths ``pattern`` matches, sorted, each once."""
    anchor = os.sep if pattern.startswith(os.sep) else ""
    parts = [p for p in pattern.split(os.sep) if p]
    return sorted(set(_select(anchor, parts)))


def _walk(folder: str) -> List[str]:
    """The files in ``folder`` and its folders (hidden ones skipped; symbolic links to folders
    not followed), sorted in each folder."""
    found: List[str] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [os.path.join(root, f) for f in sorted(files) if not f.startswith(".")]
    return found


Duplicate = Callable[[str, str], None]


def expand(names: Sequence[str], on_duplicate: Optional[Duplicate] = None) -> List[str]:
    """The files named by ``names``, in order: each a file, a directory (its files,
    recursively, sorted; hidden ones skipped) or a glob pattern (``**`` included; it does not
    descend through symbolic links to directories). Folders a pattern matches are passed over;
    anything else found must be a regular file (``NotRegularFileError``). A file found
    again (the same device and inode: a second name, a hard link, a symbolic link) is skipped,
    ``on_duplicate(skipped path, first path)`` told. FileNotFoundError for a name or pattern
    that gives no file."""
    out: List[str] = []
    seen: Dict[Tuple[int, int], str] = {}
    for name in names:
        if os.path.isdir(name):
            found = _walk(name)
        elif glob.has_magic(name):
            found = [p for p in _glob(name) if not os.path.isdir(p)]
        else:
            found = [name] if os.path.lexists(name) else []
        if not found:
            raise FileNotFoundError(errno.ENOENT, "no such file", name)
        for path in found:
            st = os.stat(path)
            check_regular(st, path)
            key = (st.st_dev, st.st_ino)
            first = seen.get(key)
            if first is not None:
                if on_duplicate is not None:
                    on_duplicate(path, first)
                continue
            seen[key] = path
            out.append(path)
    return out
