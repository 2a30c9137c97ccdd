"""Output files that hold a session's traffic (a recording, a state checkpoint, a summary, a
report): checked before any work starts, created owner-only, never through a symbolic link.

Shared by the faces (``acp_fast.cli``, ``acp_fast.bench``) and the proxy (``acp_fast.proxy``), so
that none of them imports another's private modules.
"""

from __future__ import annotations

import errno
import os
import tempfile
from typing import BinaryIO, Optional

__all__ = ["PendingOutput", "check_output", "check_target", "create_output", "output_error"]


def _describe(path: str, error: OSError) -> str:
    """A short reason for an output file that cannot be created."""
    if error.errno == errno.ELOOP or (error.errno == errno.EEXIST and os.path.islink(path)):
        return "is a symbolic link (refused: it could point anywhere)"
    if error.errno == errno.EEXIST:
        return "already exists (use --force to overwrite it)"
    return error.strerror or str(error)


def check_target(path: str) -> Optional[str]:
    """Why a file cannot be written at ``path`` (None when it can, as far as can be told before
    writing): its folder must exist, and the path must not be a folder."""
    if os.path.isdir(path):
        return "is a directory"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"cannot be created: no folder {folder}"
    return None


def check_output(path: str, force: bool) -> Optional[str]:
    """Why ``path`` cannot be created as a private output file now (None when it can): its folder
    must exist, and nothing may stand at the path but a regular file, and that only with
    ``force``. For reports written at exit, checked at start so that a mistake is a usage error."""
    if os.path.islink(path):
        return "is a symbolic link (refused: it could point anywhere)"
    problem = check_target(path)
    if problem is not None:
        return problem
    if os.path.lexists(path):
        if not force:
            return "already exists (use --force to overwrite it)"
        if not os.path.isfile(path):
            return "exists and is not a regular file"
    return None


def create_output(path: str, force: bool) -> BinaryIO:
    """Open ``path`` for writing a file that holds a session's traffic (a recording, a state
    checkpoint, a summary): created owner-only (0600), never through a symbolic link, and an
    existing file is refused unless ``force`` (then it is truncated and made owner-only). Raises
    OSError with a reason from ``output_error``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_TRUNC if force else os.O_EXCL
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


# What os.link raises on a file system without hard links.
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP), errno.EMLINK}


class PendingOutput:
    """An output file written whole or not at all: ``file`` is a temporary file in the folder of
    ``path`` (created owner-only, never through a symbolic link, named ``.NAME.*.partial``);
    ``commit`` renames it to ``path`` (an existing file there is replaced only with
    ``force``), ``discard`` removes it. A run that fails, or is interrupted, leaves no
    partial file at ``path`` (nor the temporary one, unless killed)."""

    def __init__(self, path: str, force: bool) -> None:
        self.path = path
        self.force = force
        folder, name = os.path.split(os.path.abspath(path))
        fd, self.temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=folder)
        try:
            self.file: BinaryIO = os.fdopen(fd, "wb")
        except BaseException:  # pragma: no cover - fdopen of a fresh descriptor
            os.close(fd)
            os.unlink(self.temp)
            raise

    def commit(self) -> None:
        """Close the file and give it its name. Raises OSError (the temporary file is then
        removed) when ``path`` exists without ``force``, or the rename fails."""
        try:
            self.file.close()
            if self.force:
                os.replace(self.temp, self.path)
            else:
                try:
                    os.link(self.temp, self.path)  # EEXIST when a file appeared at path meanwhile
                except OSError as exc:
                    if exc.errno not in _NO_LINKS or os.path.lexists(self.path):
                        raise
                    os.replace(self.temp, self.path)  # a file system without hard links
                else:
                    os.unlink(self.temp)
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Close and remove the temporary file (nothing is written at ``path``)."""
        try:
            self.file.close()
        except OSError:
            pass
        try:
            os.unlink(self.temp)
        except FileNotFoundError:
            pass


def output_error(path: str, error: OSError) -> str:
    """One line: why the output file ``path`` could not be written."""
    return f"{path}: {_describe(path, error)}"
