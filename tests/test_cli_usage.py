"""Usage errors of every ``acp-fast`` command (issue 16, item 8): a bad value of any option exits
with status 2 and ONE line on stderr, ``acp-fast COMMAND: ...``, that names what is wrong, and
no traceback. Numbers out of range, negative, not numbers, NaN or infinite; unknown choices;
missing values; inputs that do not exist or are folders; outputs in a missing folder or on a
folder; unknown options and stray arguments; ``acp-fast proxy`` without ``--`` before the agent.

The table runs in this process through ``acp_fast.cli.main`` (what ``acp-fast`` runs), with the
stage after the argument checks of each command replaced by a failure, so a bad value that got
through fails the test instead of starting a benchmark or an agent. A sample runs as real
processes on both backends. (``tests/test_proxy_files.py`` holds the proxy's output-file rules.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

from acp_fast import cli

# (argv, words the error line must hold). In argv, {dir} is an existing folder, {missing} a path
# that does not exist, {nofolder} a file in a folder that does not exist, {file} a valid stream.
CASES: List[Tuple[str, Tuple[str, ...]]] = [
    # serve and connect (docs/NETWORK.md)
    ("serve --max-connections 0 -- true", ("--max-connections", "or none", "0")),
    ("serve --max-body-bytes 0 -- true", ("--max-body-bytes", "found 0")),
    ("serve --listen nowhere -- true", ("--listen", "expected HOST:PORT", "'nowhere'")),
    ("serve --listen 0.0.0.0:8765 -- true", ("--listen", "0.0.0.0:8765", "--allow-remote")),
    ("serve --idle-timeout -1 -- true", ("--idle-timeout", "'-1'")),
    ("serve --queue 0 -- true", ("--queue", "found 0")),
    ("serve --record {nofolder} -- true", ("--record", "expected a directory or a file name with")),
    ("serve --token x", ("expected the agent command after --",)),
    ("serve true", ("expected the agent command after --", "true")),
    ("connect ftp://host/acp", ("expected an http://, https://, ws:// or wss:// URL", "ftp://host/acp")),
    ("connect http://127.0.0.1:1/acp --record {dir}", ("--record", "is a directory")),
    ("connect http://127.0.0.1:1/acp --max-frame-bytes 0", ("--max-frame-bytes", "found 0")),
    ("connect", ("URL",)),
    # proxy
    ("proxy --max-tool-calls -5 -- true", ("--max-tool-calls", "-5")),
    ("proxy --max-tool-calls x -- true", ("--max-tool-calls", "'x'")),
    ("proxy --max-tool-calls 1.5 -- true", ("--max-tool-calls", "1.5")),
    ("proxy --max-tool-calls -- true", ("--max-tool-calls", "expected one argument")),
    ("proxy --max-terminals 0 -- true", ("--max-terminals", "expected an integer from 1 to 2**63-1 or none", "0")),
    ("proxy --max-terminals -2 -- true", ("--max-terminals", "-2")),
    ("proxy --max-terminals lots -- true", ("--max-terminals", "lots")),
    ("proxy --max-terminals 9223372036854775808 -- true", ("--max-terminals", "9223372036854775808")),
    ("proxy --max-updates -1 -- true", ("--max-updates", "-1")),
    ("inspect {file} --max-updates -1", ("--max-updates", "-1")),
    ("proxy --max-frame-bytes 0 -- true", ("--max-frame-bytes", "found 0")),
    ("proxy --max-frame-bytes -1 -- true", ("--max-frame-bytes", "-1")),
    ("proxy --max-frame-bytes 4294967295 -- true", ("--max-frame-bytes", "4294967295")),
    ("proxy --max-frame-bytes many -- true", ("--max-frame-bytes", "'many'")),
    ("proxy --max-frame-bytes 1e3 -- true", ("--max-frame-bytes", "'1e3'")),
    ("proxy --protocol 3 -- true", ("--protocol", "3")),
    ("proxy --protocol one -- true", ("--protocol", "'one'")),
    ("proxy --agent-invalid explode -- true", ("--agent-invalid", "'explode'")),
    ("proxy --agent-invalid fail=0 -- true", ("--agent-invalid", "'fail=0'")),
    ("proxy --answer-cancelled-permissions -1 -- true", ("--answer-cancelled-permissions", "'-1'")),
    ("proxy --answer-cancelled-permissions soon -- true", ("--answer-cancelled-permissions", "'soon'")),
    ("proxy --agent-invalid drop=2 -- true", ("--agent-invalid", "'drop=2'")),
    # digits of other scripts are no numbers here (int() and float() would read them)
    ("proxy --agent-invalid fail=\u00b2 -- true", ("--agent-invalid", "'fail=\u00b2'")),
    ("proxy --agent-invalid fail=\u0663 -- true", ("--agent-invalid", "'fail=\u0663'")),
    ("proxy --max-tool-calls \u0663 -- true", ("--max-tool-calls", "'\u0663'")),
    ("proxy --coalesce \u0663 -- true", ("--coalesce", "number of milliseconds", "'\u0663'")),
    ("proxy --coalesce 60001 -- true", ("--coalesce", "from 0 to 60000", "'60001'")),
    ("proxy --coalesce soon -- true", ("--coalesce", "'soon'")),
    ("proxy --answer-cancelled-permissions 3601 -- true", ("--answer-cancelled-permissions", "0 to 3600")),
    ("proxy --record {dir} -- true", ("--record", "{dir}", "is a directory")),
    ("proxy --record {nofolder} -- true", ("--record", "{nofolder}", "no folder")),
    ("proxy --state-json {dir} -- true", ("--state-json", "is a directory")),
    ("proxy --state-json {nofolder} -- true", ("--state-json", "no folder")),
    ("proxy --summary-json {dir} -- true", ("--summary-json", "is a directory")),
    ("proxy --summary-json {nofolder} -- true", ("--summary-json", "no folder")),
    ("proxy --record -- true", ("--record", "expected one argument")),
    ("proxy --bogus -- true", ("unrecognized arguments: --bogus",)),
    ("proxy true", ("expected the agent command after --", "-- true")),
    ("proxy --watch cat -v", ("expected the agent command after --", "-- cat -v")),
    ("proxy --", ("expected the agent command after --",)),
    ("proxy", ("expected the agent command after --",)),
    # validate
    ("validate", ("FILE",)),
    ("validate {missing}", ("cannot read", "{missing}", "No such file")),
    ("validate {dir}", ("cannot read", "{dir}", "directory")),
    ("validate {file} {file}", ("unrecognized arguments",)),
    ("validate {file} --protocol 3", ("--protocol", "3")),
    ("validate {file} --protocol x", ("--protocol", "'x'")),
    ("validate {file} --format xml", ("--format", "'xml'")),
    ("validate {file} --input zip", ("--input", "'zip'")),
    ("validate {file} --max-frame-bytes 0", ("--max-frame-bytes", "found 0")),
    ("validate {file} --max-frame-bytes -5", ("--max-frame-bytes", "-5")),
    ("validate {file} --max-frame-bytes x", ("--max-frame-bytes", "'x'")),
    ("validate {file} --max-frame-bytes 99999999999999999999", ("--max-frame-bytes", "99999999999999999999")),
    ("validate {file} --max-problems -1", ("--max-problems", "-1")),
    ("validate {file} --max-problems x", ("--max-problems", "'x'")),
    ("validate {file} --progress --no-progress", ("--no-progress", "--progress")),
    ("validate {file} --bogus", ("unrecognized arguments: --bogus",)),
    # inspect
    ("inspect", ("FILE",)),
    ("inspect {missing}", ("cannot read", "{missing}")),
    ("inspect {dir}", ("cannot read", "{dir}", "directory")),
    ("inspect {file} --protocol 0", ("--protocol", "0")),
    ("inspect {file} --max-errors -1", ("--max-errors", "-1")),
    ("inspect {file} --max-errors x", ("--max-errors", "'x'")),
    ("inspect {file} --max-tool-calls 0", ("--max-tool-calls", "found 0")),
    ("inspect {file} --max-tool-calls -3", ("--max-tool-calls", "-3")),
    ("inspect {file} --max-tool-calls x", ("--max-tool-calls", "'x'")),
    ("inspect {file} --max-frame-bytes 0", ("--max-frame-bytes", "found 0")),
    ("inspect {file} --max-frame-bytes 1.5", ("--max-frame-bytes", "'1.5'")),
    ("inspect {file} --input zip", ("--input", "'zip'")),
    ("inspect {file} --session", ("--session", "expected one argument")),
    ("inspect {file} --bogus", ("unrecognized arguments: --bogus",)),
    # demo-agent
    ("demo-agent --protocol 3", ("--protocol", "3")),
    ("demo-agent --chunks 0", ("--chunks", "found 0")),
    ("demo-agent --chunks -1", ("--chunks", "-1")),
    ("demo-agent --chunks x", ("--chunks", "'x'")),
    ("demo-agent --delay -1", ("--delay", "'-1'")),
    ("demo-agent --delay x", ("--delay", "'x'")),
    ("demo-agent --delay nan", ("--delay", "'nan'")),
    ("demo-agent --delay inf", ("--delay", "'inf'")),
    ("demo-agent extra", ("unrecognized arguments: extra",)),
    # bench
    ("bench --tasks nope", ("--tasks", "'nope'")),
    ("bench --tasks", ("--tasks", "expected at least one argument")),
    ("bench --profiles huge", ("--profiles", "'huge'")),
    ("bench --contenders ujson", ("--contenders", "'ujson'")),
    ("bench --mb -1", ("--mb", "'-1'")),
    ("bench --mb x", ("--mb", "'x'")),
    ("bench --mb nan", ("--mb", "'nan'")),
    ("bench --mb inf", ("--mb", "'inf'")),
    ("bench --frames 0", ("--frames", "'0'")),
    ("bench --frames x", ("--frames", "'x'")),
    ("bench --frames huge=10", ("--frames", "'huge'")),
    ("bench --seed x", ("--seed", "'x'")),
    ("bench --scaling-min 0", ("--scaling-min", "found 0")),
    ("bench --scaling-min x", ("--scaling-min", "'x'")),
    ("bench --scaling-max 5", ("--scaling-min", "--scaling-max")),
    ("bench --memory-frames -1", ("--memory-frames", "-1")),
    ("bench --budget -1", ("--budget", "'-1'")),
    ("bench --budget nan", ("--budget", "'nan'")),
    ("bench --min-runs 0", ("--min-runs", "found 0")),
    ("bench --max-runs 0", ("--max-runs", "found 0")),
    ("bench --min-runs 5 --max-runs 2", ("--min-runs", "--max-runs")),
    ("bench --pass-budget -1", ("--pass-budget", "'-1'")),
    ("bench --pass-budget nan", ("--pass-budget", "'nan'")),
    ("bench --scaling-budget -1", ("--scaling-budget", "'-1'")),
    ("bench --json {nofolder}", ("--json", "{nofolder}", "no folder")),
    ("bench --json {dir}", ("--json", "is a directory")),
    ("bench --plot {nofolder}", ("--plot", "no folder")),
    ("bench --plot {dir}", ("--plot", "is a directory")),
    ("bench --bogus", ("unrecognized arguments: --bogus",)),
    ("bench extra", ("unrecognized arguments: extra",)),
    # export
    ("export", ("FILE", "--to")),
    ("export {file}", ("--to",)),
    ("export {missing} --to {nofolder}", ("cannot read", "{missing}")),
    ("export {file} --to {nofolder}", ("{nofolder}", "no folder")),
    ("export {file} --to {dir}", ("{dir}", "is a directory")),
    ("export {file} --to {file}", ("{file}", "--force")),
    ("export {file} --to {dir}/x.parquet --table rows", ("--table", "'rows'")),
    ("export {file} --to {dir}/x.parquet --compression zip", ("--compression", "'zip'")),
    ("export {file} --to {dir}/x.parquet --progress --no-progress", ("--no-progress", "--progress")),
    ("export {file} --to {dir}/x.parquet --bogus", ("unrecognized arguments: --bogus",)),
    # the others
    ("version extra", ("takes no arguments", "extra")),
    ("nosuchcommand", ("unknown command 'nosuchcommand'", "acp-fast --help")),
]


@pytest.fixture
def places(tmp_path: Path) -> dict:
    folder = tmp_path / "folder"
    folder.mkdir()
    stream = tmp_path / "good.ndjson"
    stream.write_bytes(b'{"jsonrpc":"2.0","method":"x"}\n')
    return {
        "dir": str(folder),
        "missing": str(tmp_path / "missing.ndjson"),
        "nofolder": str(tmp_path / "no-such-folder" / "out.json"),
        "file": str(stream),
    }


@pytest.fixture
def nothing_runs(monkeypatch):
    """Every command's work after its argument checks fails the test instead of running."""
    import acp_fast.arrow as arrow
    import acp_fast.bench.report as bench
    import acp_fast.cli.demo_agent as demo_agent
    import acp_fast.cli.inspect as inspect
    import acp_fast.cli.proxy as proxy
    import acp_fast.cli.validate as validate

    def refuse(*args, **kwargs):
        raise AssertionError("the arguments were accepted")

    monkeypatch.setattr(proxy, "Proxy", refuse)
    monkeypatch.setattr(validate, "Validator", refuse)
    monkeypatch.setattr(inspect, "replay_file", refuse)
    monkeypatch.setattr(demo_agent, "DemoAgent", refuse)
    monkeypatch.setattr(bench, "execute", refuse)
    monkeypatch.setattr(arrow, "file_table", refuse)
    import acp_fast.net.connect as connect
    import acp_fast.net.serve as serve

    monkeypatch.setattr(serve, "run", refuse)
    monkeypatch.setattr(connect, "run", refuse)


def _argv(text: str, places: dict) -> List[str]:
    return [word.format(**places) for word in text.split()]


def assert_one_line_usage_error(code: object, err: str, command: str, words: Tuple[str, ...], places: dict) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    prefix = "acp-fast: " if command not in cli.COMMANDS else f"acp-fast {command}: "
    assert lines[0].startswith(prefix + "error: "), lines[0]  # one wording in every command (issue 32)
    for word in words:
        assert word.format(**places) in lines[0], (word, lines[0])


@pytest.mark.parametrize(("argv", "words"), CASES, ids=[argv for argv, _ in CASES])
def test_bad_values_are_one_line_usage_errors(argv, words, places, nothing_runs, capsys):
    try:
        code: object = cli.main(_argv(argv, places))
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    assert captured.out == ""
    assert_one_line_usage_error(code, captured.err, argv.split()[0], words, places)


def test_every_command_is_in_the_table():
    assert {argv.split()[0] for argv, _ in CASES} >= set(cli.COMMANDS)


# One case per command, as real processes on both backends: nothing but the one line comes out.
SAMPLE = [
    "proxy --max-tool-calls -5 -- true",
    "proxy true",
    "validate {file} --max-frame-bytes x",
    "validate {missing}",
    "inspect {dir}",
    "demo-agent --delay nan",
    "bench --json {nofolder}",
    "version extra",
    "serve --listen nowhere -- true",
    "connect ftp://host/acp",
]


@pytest.mark.parametrize("argv", SAMPLE)
def test_usage_errors_in_a_process(argv, backend_id, places):
    words = dict(CASES)[argv]
    env = {**os.environ, "ACP_FAST_BACKEND": backend_id}
    done = subprocess.run(
        [sys.executable, "-m", "acp_fast.cli", *_argv(argv, places)],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert done.stdout == ""
    assert_one_line_usage_error(done.returncode, done.stderr, argv.split()[0], words, places)
