"""``acp-fast export FILES... --to OUT.parquet``: NDJSON streams and proxy recordings as one
Parquet file, a table of frames (one row per line) or of tool calls (one row per tool call).

The rows are those of :func:`acp_fast.arrow.read_frames` / :func:`~acp_fast.arrow.read_tool_calls`
(a ``file`` column first; when some inputs are recordings, ``time`` and ``side`` are null for the
plain streams), written one file at a time with pyarrow (``pip install 'acp-fast[arrow]'``).
FILES may be files, directories (their files, recursively) and glob patterns. A summary goes to
stderr, with a progress bar when stderr is a terminal.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, List, Optional

from .._outputs import PendingOutput, check_output, output_error
from .._terminal import printable
from ._streams import Progress
from ._usage import Parser, fail

COMPRESSIONS = ("zstd", "snappy", "gzip", "lz4", "none")


def main(argv: Optional[List[str]] = None) -> int:
    parser = Parser(
        prog="acp-fast export",
        description=(
            "Write NDJSON streams and `acp-fast proxy` recordings to one Parquet file: the frames "
            "(one row per line) or the tool calls (one row per tool call). Needs pyarrow: "
            "pip install 'acp-fast[arrow]'."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="a stream or recording, a directory, or a glob")
    parser.add_argument("--to", required=True, metavar="OUT.parquet", help="the Parquet file to write")
    parser.add_argument(
        "--table", choices=("frames", "tool_calls"), default="frames", help="what a row is (default frames)"
    )
    parser.add_argument(
        "--compression", choices=COMPRESSIONS, default="zstd", help="Parquet compression (default zstd)"
    )
    parser.add_argument("--force", action="store_true", help="overwrite OUT.parquet if it exists")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--progress", dest="progress", action="store_true", default=None, help="show progress on stderr")
    group.add_argument("--no-progress", dest="progress", action="store_false", help="never show progress")
    args = parser.parse_args(argv)

    from .. import arrow

    try:
        arrow.require_pyarrow()
        import pyarrow.parquet as pq
    except ImportError:
        parser.error(f"needs pyarrow, which is not installed: {arrow.INSTALL}")

    def skipped(path: str, first: str) -> None:
        print(
            f"acp-fast export: note: {printable(path)} is the same file as {printable(first)}; read once",
            file=sys.stderr,
        )

    try:
        files = arrow.expand(args.files, on_duplicate=skipped)
    except OSError as exc:
        parser.error(f"cannot read {printable(str(exc.filename or ''))}: {exc.strerror or exc}")
    problem = check_output(args.to, args.force)
    if problem is not None:
        parser.error(f"{args.to} {problem}")
    same = _input_at(args.to, files)
    if same is not None:
        parser.error(f"{args.to} is the input {printable(same)} (refused: writing it would destroy the input)")
    try:
        sizes = [os.path.getsize(p) for p in files]
        schema = arrow.schema_of(args.table, any(arrow.is_recording_file(p) for p in files))
    except OSError as exc:
        return fail("acp-fast export", f"cannot read {exc.filename}: {exc.strerror or exc}")

    progress = Progress("export", sum(sizes), enabled=Progress.wanted(args.progress))
    start = time.monotonic()
    rows = invalid = 0
    try:
        out = PendingOutput(args.to, args.force)
    except OSError as exc:
        return fail("acp-fast export", output_error(args.to, exc), 1)
    try:
        with pq.ParquetWriter(out.file, schema, compression=args.compression) as writer:
            for path in files:
                table = arrow.file_table(path, args.table, schema, wrap=progress.wrap)
                writer.write_table(table)
                rows += len(table)
                if args.table == "frames":
                    invalid += _invalid(table)
        out.commit()
    except OSError as exc:
        out.discard()
        progress.close()
        if exc.filename is None or exc.filename == out.temp:
            return fail("acp-fast export", output_error(args.to, exc), 1)
        return fail("acp-fast export", f"{exc.filename}: {exc.strerror or exc}", 1)
    except BaseException:
        out.discard()
        raise
    progress.close()
    seconds = time.monotonic() - start
    mib = sum(sizes) / (1 << 20)
    written = os.path.getsize(args.to) / (1 << 20)
    what = f"{rows} frames ({invalid} invalid)" if args.table == "frames" else f"{rows} tool calls"
    noun = "file" if len(files) == 1 else "files"
    print(
        f"acp-fast export: {len(files)} {noun}, {mib:.1f} MiB -> {args.to} ({written:.1f} MiB): "
        f"{what} in {seconds:.2f} s ({mib / max(seconds, 1e-9):.0f} MiB/s)",
        file=sys.stderr,
    )
    return 0


def _input_at(path: str, files: List[str]) -> Optional[str]:
    """The input that is the file at ``path`` (the same device and inode: the same name, a hard
    link, a symbolic link to it), if any."""
    try:
        target = os.stat(path)
    except OSError:
        return None  # nothing there yet (check_output has refused what cannot be written)
    for name in files:
        try:
            if os.path.samestat(os.stat(name), target):
                return name
        except OSError:
            continue
    return None


def _invalid(table: Any) -> int:
    """Rows of kind ``invalid`` in a frames table (counted by pyarrow, not row by row)."""
    import pyarrow.compute as pc

    return int(pc.sum(pc.equal(table.column("kind"), "invalid")).as_py() or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
