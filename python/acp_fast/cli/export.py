"""``acp-fast export FILES... --to OUT.parquet``: NDJSON streams and proxy recordings as one
Parquet file, a table of frames (one row per line) or of tool calls (one row per tool call).

The rows are those of [`acp_fast.arrow.read_frames`][acp_fast.arrow.read_frames] / [`read_tool_calls`][acp_fast.arrow.read_tool_calls]
(a ``file`` column first; when some inputs are recordings, ``time`` and ``side`` are null for the
plain streams; ``--columns``: exactly the columns named), written one file at a time with pyarrow
(``pip install 'acp-fast[arrow]'``). FILES may be files, directories (their files, recursively) and glob patterns. A summary goes to
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
#: ``--to`` names ending so are traces (``acp_fast.trace``), not Parquet files.
TRACE_SUFFIX = ".jsons"
#: `--to otlp+http://HOST:PORT` (or `otlp+https://`): OpenTelemetry spans sent to that
#: OTLP/HTTP endpoint (`acp_fast.otel`), not a file.
OTLP_PREFIX = "otlp+"


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
    parser.add_argument(
        "--to",
        required=True,
        metavar="OUT.parquet|OUT.jsons|otlp+http://HOST:PORT",
        help="the Parquet file to write, or (a name ending in .jsons) a trace of recordings for the ACP trace "
        "viewer, or (otlp+http://HOST:PORT) the recordings' OpenTelemetry spans sent to that OTLP/HTTP endpoint",
    )
    parser.add_argument(
        "--table", choices=("frames", "tool_calls"), default="frames", help="what a row is (default frames)"
    )
    parser.add_argument(
        "--compression", choices=COMPRESSIONS, default="zstd", help="Parquet compression (default zstd)"
    )
    parser.add_argument(
        "--columns",
        metavar="A,B,...",
        help="the frames table's columns to write, in that order (names of file, the frames columns, time, side; "
        "default: all); the others are not built",
    )
    parser.add_argument("--force", action="store_true", help="overwrite OUT.parquet if it exists")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="threads a file's frames are parsed on, 1 to 1024 (default: every core); the output is the same",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--progress", dest="progress", action="store_true", default=None, help="show progress on stderr")
    group.add_argument("--no-progress", dest="progress", action="store_false", help="never show progress")
    args = parser.parse_args(argv)
    if args.to.startswith(OTLP_PREFIX):
        return _otlp(parser, args)
    to_trace = args.to.endswith(TRACE_SUFFIX)
    if to_trace and args.table != "frames":
        parser.error(f"--table {args.table}: a trace ({TRACE_SUFFIX}) holds the frames")
    if to_trace and args.columns is not None:
        parser.error(f"--columns: a trace ({TRACE_SUFFIX}) holds whole records, not columns")
    if args.table != "frames" and args.columns is not None:
        parser.error(f"--columns: selects columns of the frames table, not of --table {args.table}")

    from .. import arrow

    if not to_trace:
        try:
            arrow.require_pyarrow()
        except ImportError:
            parser.error(f"needs pyarrow, which is not installed: {arrow.INSTALL}")
    try:
        arrow.check_threads(args.threads)
    except ValueError as exc:
        parser.error(f"--threads: {exc}")
    columns = None if args.columns is None else _column_names(args.columns)
    try:
        arrow.check_read_columns(columns)
    except ValueError as exc:
        parser.error(f"--columns: {exc}")

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
    if to_trace:
        return _trace(parser, args, files)
    import pyarrow.parquet as pq

    try:
        sizes = [os.path.getsize(p) for p in files]
        schema = arrow.schema_of(args.table, any(arrow.is_recording_file(p) for p in files), columns)
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
                table = arrow.file_table(path, args.table, schema, wrap=progress.wrap, threads=args.threads)
                writer.write_table(table)
                rows += len(table)
                if "kind" in schema.names:
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
    if args.table != "frames":
        what = f"{rows} tool calls"
    elif "kind" in schema.names:
        what = f"{rows} frames ({invalid} invalid)"
    else:
        what = f"{rows} frames"
    noun = "file" if len(files) == 1 else "files"
    print(
        f"acp-fast export: {len(files)} {noun}, {mib:.1f} MiB -> {args.to} ({written:.1f} MiB): "
        f"{what} in {seconds:.2f} s ({mib / max(seconds, 1e-9):.0f} MiB/s)",
        file=sys.stderr,
    )
    return 0


def _trace(parser: Parser, args: Any, files: List[str]) -> int:
    """``--to OUT.jsons``: the recordings in ``files`` as one trace (docs/CLI.md, "Traces"),
    ``ts`` counting from the first one's start."""
    from ..recording import RecordingError
    from ..trace import from_recording

    status = _recordings(parser, files, "a trace")
    if status is not None:
        return status
    sizes = [os.path.getsize(p) for p in files]
    progress = Progress("export", sum(sizes), enabled=Progress.wanted(args.progress))
    started = time.monotonic()
    totals = {"records": 0, "events": 0, "skipped": 0}
    try:
        out = PendingOutput(args.to, args.force)
    except OSError as exc:
        print(f"acp-fast export: {output_error(args.to, exc)}", file=sys.stderr)
        return 1
    current = files[0]
    try:
        start: Optional[float] = None
        for current in files:
            with open(current, "rb") as f:
                counts = from_recording(progress.wrap(iter(lambda: f.read(1 << 20), b"")), out.file, start)
            start = float(counts["start"])
            for key in totals:
                totals[key] += int(counts[key])
        out.commit()
    except RecordingError as exc:
        out.discard()
        progress.close()
        print(f"acp-fast export: {printable(current)}: {printable(str(exc))}", file=sys.stderr)
        return 1
    except OSError as exc:
        out.discard()
        progress.close()
        if exc.filename is None or exc.filename == out.temp:
            print(f"acp-fast export: {output_error(args.to, exc)}", file=sys.stderr)
        else:
            print(f"acp-fast export: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except BaseException:
        out.discard()
        raise
    progress.close()
    seconds = time.monotonic() - started
    noun = "file" if len(files) == 1 else "files"
    print(
        f"acp-fast export: {len(files)} {noun}, {totals['records']} records -> {args.to}: "
        f"{totals['events']} events ({totals['skipped']} lines with no event: not JSON-RPC, "
        f"oversized or withheld) in {seconds:.2f} s",
        file=sys.stderr,
    )
    return 0


def _recordings(parser: Parser, files: List[str], what: str) -> Optional[int]:
    """Usage error unless every file is a recording; 2 when one cannot be read; None when all are."""
    from ..recording import is_recording
    from ..trace import is_trace

    for path in files:
        try:
            with open(path, "rb") as f:
                head = f.read(64)
        except OSError as exc:
            print(f"acp-fast export: cannot read {printable(path)}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        if is_trace(head):
            parser.error(
                f"{printable(path)} is a trace, not a recording: {what} is made from recordings "
                "(`acp-fast proxy --record`); a trace reads as a table with --to OUT.parquet"
            )
        if not is_recording(head):
            parser.error(
                f"{printable(path)} is not a recording (`acp-fast proxy --record`): {what} needs "
                "the side each line came from"
            )
    return None


def _otlp(parser: Parser, args: Any) -> int:
    """`--to otlp+http://HOST:PORT`: the spans and metrics of the recordings (`acp_fast.otel`,
    timed by their records) sent to that OTLP/HTTP endpoint, one recording after the other."""
    from ..otel import INSTALL, Spans, exporter, from_recording, require_otel
    from ..recording import RecordingError

    url = args.to[len(OTLP_PREFIX) :]
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest.strip("/"):
        parser.error(f"--to {args.to}: expected otlp+http://HOST:PORT or otlp+https://HOST:PORT")
    if args.table != "frames":
        parser.error(f"--table {args.table}: --to otlp+... sends the spans of the recordings")
    if args.columns is not None:
        parser.error("--columns: --to otlp+... sends the spans of the recordings, not columns")
    try:
        require_otel()
    except ImportError:
        print(f"acp-fast export: --to otlp+... needs the OpenTelemetry packages, which are not installed: {INSTALL}",
              file=sys.stderr)  # fmt: skip
        return 2
    from .. import arrow

    try:
        files = arrow.expand(args.files)
    except OSError as exc:
        parser.error(f"cannot read {printable(str(exc.filename or ''))}: {exc.strerror or exc}")
    status = _recordings(parser, files, "OpenTelemetry export")
    if status is not None:
        return status
    warnings: List[str] = []

    def warn(text: str) -> None:
        warnings.append(text)
        print(f"acp-fast export: {printable(text.replace('--otlp', '--to otlp+', 1))}", file=sys.stderr)

    started = time.monotonic()
    records = 0
    emitter = exporter(url, warn=warn)
    path = files[0]
    try:
        for path in files:  # each recording is one connection: its own mapping, one emitter for all
            with open(path, "rb") as f:
                counts = from_recording(iter(lambda: f.read(1 << 20), b""), Spans(emitter), shutdown=False)
            records += counts["records"]
    except RecordingError as exc:
        print(f"acp-fast export: {printable(path)}: {printable(str(exc))}", file=sys.stderr)
        return 1
    finally:
        emitter.shutdown(5.0)
    seconds = time.monotonic() - started
    noun = "file" if len(files) == 1 else "files"
    print(f"acp-fast export: {len(files)} {noun}, {records} records -> {url} in {seconds:.2f} s", file=sys.stderr)
    return 1 if warnings else 0


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


def _column_names(text: str) -> List[str]:
    """``--columns A,B,...`` as names (spaces around each dropped; an empty value names none)."""
    return [name.strip() for name in text.split(",")] if text.strip() else []


def _invalid(table: Any) -> int:
    """Rows of kind ``invalid`` in a frames table (counted by pyarrow, not row by row)."""
    import pyarrow.compute as pc

    return int(pc.sum(pc.equal(table.column("kind"), "invalid")).as_py() or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
