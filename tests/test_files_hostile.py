"""Input and output files of ``acp-fast export``, ``validate``, ``inspect`` and ``proxy --record``
(issue 28, item 5), on both backends:

* ``export`` never writes over one of its inputs (the same name, a hard link, a symbolic link);
* an input that is not a regular file (a FIFO, a device, a socket, a directory, a symbolic link
  to one) is refused with one line naming it and what it is, without blocking; stdin (``-``)
  still reads a pipe;
* a ``**`` pattern does not descend through symbolic links to folders, and a file named twice is
  read once, with a note;
* a recording record with a ``too_large`` or ``t`` no column can hold is a bad record like any
  other (``file:line``), never a traceback, and ``export`` leaves no partial output file;
* ``proxy --record`` puts every record in the file within ``recording.FLUSH_SECONDS`` of the line,
  so a proxy killed with SIGKILL while its agent is idle has lost nothing.

The commands run as processes (``ACP_FAST_BACKEND``) with a timeout, so a hang fails the test.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, List, Optional

import pyarrow.parquet as pq
import pytest

import acp_fast
from acp_fast import _inputs, arrow
from acp_fast.cli import main as cli_main
from acp_fast.recording import FLUSH_SECONDS, RecordWriter

PY = sys.executable
PYTHONPATH = str(Path(acp_fast.__file__).resolve().parent.parent)
FRAME = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}}'


def cli(backend_id: str, *argv: str, stdin: Any = subprocess.DEVNULL, cwd: Optional[Path] = None) -> Any:
    env = {**os.environ, "ACP_FAST_BACKEND": backend_id, "PYTHONPATH": PYTHONPATH}
    return subprocess.run(
        [PY, "-m", "acp_fast.cli", *argv],
        capture_output=True,
        text=True,
        env=env,
        stdin=stdin,
        cwd=cwd,
        timeout=60,  # a command that blocks on its input fails here
    )


def one_line_error(done: Any, command: str, *words: str) -> str:
    err = done.stderr
    assert done.returncode == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"acp-fast {command}: error: "), err  # one wording in every command
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture
def stream(tmp_path: Path) -> Path:
    path = tmp_path / "in.ndjson"
    path.write_bytes(FRAME + b"\n" + FRAME + b"\n")
    return path


# ---------------------------------------------------------------------------------------------
# 1. export never writes over its input


@pytest.mark.parametrize("how", ["same name", "hard link", "symbolic link to the output"])
def test_export_refuses_to_write_over_an_input(backend_id: str, tmp_path: Path, stream: Path, how: str) -> None:
    before = stream.read_bytes()
    if how == "same name":
        source, out = stream, stream
    elif how == "hard link":
        out = tmp_path / "hard.ndjson"
        os.link(stream, out)
        source = stream
    else:
        source = tmp_path / "link.ndjson"
        source.symlink_to(stream)
        out = stream
    done = cli(backend_id, "export", str(source), "--to", str(out), "--force", "--no-progress")
    one_line_error(done, "export", str(out), "is the input", "refused")
    assert stream.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")) == []


# ---------------------------------------------------------------------------------------------
# 2. inputs that are not regular files


def _not_a_file(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"input-{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    return path


KINDS = {
    "fifo": "is a named pipe (FIFO), not a regular file",
    "device": "is a character device, not a regular file",
    "socket": "is a socket, not a regular file",
    "directory": "is a directory",
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("command", ["validate", "inspect"])
def test_validate_and_inspect_refuse_what_is_not_a_file(
    backend_id: str, tmp_path: Path, command: str, kind: str
) -> None:
    path = _not_a_file(tmp_path, kind)
    done = cli(backend_id, command, str(path), "--no-progress")
    assert done.stdout == ""
    one_line_error(done, command, "cannot read", str(path), KINDS[kind])


@pytest.mark.parametrize("where", ["named", "in a folder", "matched by a pattern"])
@pytest.mark.parametrize("kind", ["fifo", "device", "socket"])
def test_export_refuses_what_is_not_a_file(
    backend_id: str, tmp_path: Path, stream: Path, kind: str, where: str
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    path = _not_a_file(folder, kind)
    (folder / "a.ndjson").write_bytes(stream.read_bytes())
    name = {"named": str(path), "in a folder": str(folder), "matched by a pattern": str(folder / "*")}[where]
    out = tmp_path / "out.parquet"
    done = cli(backend_id, "export", str(stream), name, "--to", str(out), "--no-progress")
    one_line_error(done, "export", "cannot read", str(path), KINDS[kind])
    assert not out.exists()


@pytest.mark.parametrize("command", ["validate", "inspect"])
def test_stdin_is_still_read(backend_id: str, stream: Path, command: str) -> None:
    with open(stream, "rb") as f:
        done = cli(backend_id, command, "-", "--no-progress", stdin=f)
    assert done.returncode in (0, 1), done.stderr  # validate: 1 for problems in the stream
    assert "Traceback" not in done.stderr and "cannot read" not in done.stderr
    assert "<stdin>" in done.stdout


def test_open_file_checks_the_file_it_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO put where a regular file was checked: the open does not block, the fstat refuses it."""
    regular = tmp_path / "regular"
    regular.write_bytes(b"")
    fifo = _not_a_file(tmp_path, "fifo")
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda path, *a, **k: real_stat(regular) if path == str(fifo) else real_stat(path))
    with pytest.raises(_inputs.NotRegularFileError) as refused:
        _inputs.open_file(str(fifo))
    assert str(refused.value) == f"{fifo}: is a named pipe (FIFO), not a regular file"


# ---------------------------------------------------------------------------------------------
# 3. patterns over link loops, and files named twice


def _loop(tmp_path: Path) -> Path:
    top = tmp_path / "logs"
    (top / "sub").mkdir(parents=True)
    (top / "a.ndjson").write_bytes(FRAME + b"\n")
    (top / "sub" / "b.ndjson").write_bytes(FRAME + b"\n" + FRAME + b"\n")
    (top / "sub" / "loop").symlink_to("..")  # logs/sub/loop/sub/loop/... is logs again
    (top / "sub" / "again").symlink_to(top)
    return top


def test_expand_does_not_follow_links_in_double_star(tmp_path: Path) -> None:
    top = _loop(tmp_path)
    assert arrow.expand(str(top / "**" / "*.ndjson")) == [str(top / "a.ndjson"), str(top / "sub" / "b.ndjson")]
    assert arrow.expand(str(top / "**")) == [str(top / "a.ndjson"), str(top / "sub" / "b.ndjson")]
    assert arrow.expand(str(top)) == [str(top / "a.ndjson"), str(top / "sub" / "b.ndjson")]
    # a link named in the pattern is followed, once
    assert arrow.expand(str(top / "sub" / "loop" / "*.ndjson")) == [str(top / "sub" / "loop" / "a.ndjson")]


def test_expand_reads_a_file_once(tmp_path: Path) -> None:
    top = _loop(tmp_path)
    a = str(top / "a.ndjson")
    hard = tmp_path / "hard.ndjson"
    os.link(a, hard)
    seen: List[Any] = []
    files = arrow.expand(
        [a, str(top / "sub" / "loop" / "a.ndjson"), str(hard), str(top / "**" / "*.ndjson"), a],
        on_duplicate=lambda skipped, first: seen.append((skipped, first)),
    )
    assert files == [a, str(top / "sub" / "b.ndjson")]
    assert seen == [
        (str(top / "sub" / "loop" / "a.ndjson"), a),
        (str(hard), a),
        (a, a),
        (a, a),
    ]


def test_export_of_a_link_loop_reads_each_file_once(backend_id: str, tmp_path: Path) -> None:
    top = _loop(tmp_path)
    out = tmp_path / "out.parquet"
    done = cli(backend_id, "export", str(top / "**" / "*.ndjson"), str(top / "a.ndjson"), "--to", str(out))
    assert done.returncode == 0, done.stderr
    files = pq.read_table(out).column("file").to_pylist()
    assert files == [str(top / "a.ndjson")] + [str(top / "sub" / "b.ndjson")] * 2
    notes = [line for line in done.stderr.splitlines() if "note:" in line]
    assert notes == [f"acp-fast export: note: {top / 'a.ndjson'} is the same file as {top / 'a.ndjson'}; read once"]


# ---------------------------------------------------------------------------------------------
# 4. records no column can hold, and no partial output

HEADER = b'{"acp-fast-recording":1,"t":1.0,"argv":["agent"],"version":"test"}'
BAD_RECORDS = [
    b'{"t":2.0,"from":"agent","too_large":1000000000000000000000000000000}',
    b'{"t":2.0,"from":"agent","too_large":9223372036854775808}',
    b'{"t":2.0,"from":"agent","too_large":18446744073709551616}',
    b'{"t":2.0,"from":"agent","too_large":-1}',
    b'{"t":2.0,"from":"agent","too_large":1.5}',
    b'{"t":2.0,"from":"agent","too_large":"12"}',
    b'{"t":1' + b"0" * 400 + b',"from":"agent","frame":{"jsonrpc":"2.0","method":"m"}}',
]
GOOD_TOO_LARGE = b'{"t":3.0,"from":"agent","too_large":9223372036854775807}'
RECORDING = (
    b"\n".join([HEADER, *BAD_RECORDS, GOOD_TOO_LARGE, b'{"t":4.0,"from":"agent","frame":' + FRAME + b"}"]) + b"\n"
)
BAD_LINES = list(range(2, 2 + len(BAD_RECORDS)))


@pytest.fixture
def on_backend(backend: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """acp_fast.arrow running on ``backend``."""
    monkeypatch.setattr(arrow, "_FrameColumns", backend.FrameColumns)
    monkeypatch.setattr(arrow, "_FrameDecoder", backend.FrameDecoder)
    monkeypatch.setattr(arrow, "_ToolCallStore", backend.ToolCallStore)
    return backend


def test_frames_of_records_out_of_range(on_backend: Any) -> None:
    rows = arrow.frames(RECORDING).to_pylist()
    assert [(r["line"], r["kind"], r["error"]) for r in rows[: len(BAD_RECORDS)]] == [
        (n, "invalid", "invalid_record") for n in BAD_LINES
    ]
    big, good = rows[len(BAD_RECORDS) :]
    assert (big["line"], big["error"], big["bytes"], big["time"]) == (9, "frame_too_large", 2**63 - 1, 3.0)
    assert (good["line"], good["kind"], good["raw"], good["time"]) == (10, "notification", FRAME, 4.0)
    assert len(arrow.tool_calls(RECORDING)) == 0


def test_commands_report_records_out_of_range(backend_id: str, tmp_path: Path) -> None:
    rec = tmp_path / "session.rec"
    rec.write_bytes(RECORDING)
    done = cli(backend_id, "validate", str(rec))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    reported = [line for line in done.stdout.splitlines() if "[recording]" in line]
    assert [line.split(":")[1] for line in reported] == [str(n) for n in BAD_LINES]
    assert "too_large" in reported[0] and "2**63-1" in reported[0] and '"t"' in reported[-1]
    done = cli(backend_id, "inspect", str(rec))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert all(f"{rec}:{n}:1: [recording]" in done.stdout for n in BAD_LINES), done.stdout
    out = tmp_path / "out.parquet"
    done = cli(backend_id, "export", str(rec), "--to", str(out), "--no-progress")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert f"{len(BAD_RECORDS) + 2} frames ({len(BAD_RECORDS) + 1} invalid)" in done.stderr
    assert pq.read_table(out).column("line").to_pylist() == [*BAD_LINES, 9, 10]


def test_a_failed_export_leaves_no_file(on_backend: Any, tmp_path: Path, stream: Path, monkeypatch: Any) -> None:
    """The output is written under a temporary name and renamed at the end: a failure after the
    first file leaves neither a partial output nor the temporary file, and an existing output
    (``--force``) as it was."""
    real = arrow.file_table
    calls: List[str] = []

    def fail_second(path: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(5, "Input/output error", path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(arrow, "file_table", fail_second)
    other = tmp_path / "other.ndjson"
    other.write_bytes(FRAME + b"\n")
    out = tmp_path / "out.parquet"
    assert cli_main(["export", str(stream), str(other), "--to", str(out), "--no-progress"]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.ndjson", "other.ndjson"]
    out.write_bytes(b"kept")
    calls.clear()
    assert cli_main(["export", str(stream), str(other), "--to", str(out), "--force", "--no-progress"]) == 1
    assert out.read_bytes() == b"kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.ndjson", "other.ndjson", "out.parquet"]

    def interrupted(path: str, *args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(arrow, "file_table", interrupted)
    # Ctrl-C: status 130 without a traceback (the dispatcher, issue 32), the output left as it was
    assert cli_main(["export", str(stream), "--to", str(out), "--force", "--no-progress"]) == 130
    assert out.read_bytes() == b"kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.ndjson", "other.ndjson", "out.parquet"]
    monkeypatch.setattr(arrow, "file_table", real)
    assert cli_main(["export", str(stream), "--to", str(out), "--force", "--no-progress"]) == 0
    assert pq.read_table(out).column("line").to_pylist() == [1, 2]
    assert (os.stat(out).st_mode & 0o777) == 0o600


# ---------------------------------------------------------------------------------------------
# 5. recordings reach the file on a short schedule

AGENT = (
    "import sys\n"
    "out = sys.stdout.buffer\n"
    "for i in range(int(sys.argv[1])):\n"
    f"    out.write({FRAME!r} + b'\\n')\n"
    "    out.flush()\n"
    "sys.stdin.buffer.read()  # idle until the proxy goes away\n"
)


def _records(path: Path) -> int:
    return path.read_bytes().count(b"\n") - 1 if path.exists() else 0  # less the header


def test_a_killed_proxy_has_recorded_every_line(backend_id: str, tmp_path: Path) -> None:
    n = 1000
    rec = tmp_path / "session.rec"
    env = {**os.environ, "ACP_FAST_BACKEND": backend_id, "PYTHONPATH": PYTHONPATH}
    proxy = subprocess.Popen(
        [PY, "-m", "acp_fast.cli", "proxy", "--record", str(rec), "--", PY, "-c", AGENT, str(n)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert proxy.stdout is not None
        for _ in range(n):  # every frame relayed: the agent is idle from here
            assert proxy.stdout.readline().rstrip(b"\n") == FRAME
        deadline = time.monotonic() + FLUSH_SECONDS + 20  # the schedule, and a wide margin
        while _records(rec) < n and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        proxy.send_signal(signal.SIGKILL)  # no exit handler runs: only what was written is there
        proxy.wait(timeout=60)
        for pipe in (proxy.stdin, proxy.stdout, proxy.stderr):
            if pipe is not None:
                pipe.close()
    data = rec.read_bytes()
    assert data.endswith(b"\n")
    lines = data.splitlines()
    assert len(lines) == 1 + n
    assert all(line.endswith(b'"from":"agent","frame":' + FRAME + b"}") for line in lines[1:])


def test_writer_flushes_on_its_schedule(tmp_path: Path) -> None:
    path = tmp_path / "w.rec"
    with open(path, "wb") as f:
        writer = RecordWriter(f, ["agent"], "test", flush_every=FLUSH_SECONDS)
        for i in range(3):
            writer.line("agent", FRAME, True, float(i))
        deadline = time.monotonic() + FLUSH_SECONDS + 20
        while _records(path) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _records(path) == 3  # on disk while the file is still open
        writer.exit(0)
        writer.close()
        assert _records(path) == 4
