"""``acp-fast proxy``: bad options are usage errors, and the files that hold a session's traffic
(--record, --state-json, --summary-json) are created owner-only, never through a symbolic link,
never over an existing file unless --force; a report that cannot be written at exit neither
changes the exit status nor skips the other reports. Both backends."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from typing import Dict, List

import pytest

PY = sys.executable
PROXY = [PY, "-m", "acp_fast.cli", "proxy"]
QUIET_AGENT = [PY, "-c", "import sys; sys.exit(3)"]


@pytest.fixture(params=["rust", "python"])
def env(request) -> Dict[str, str]:
    e = dict(os.environ)
    e["ACP_FAST_BACKEND"] = request.param
    return e


def run(env: Dict[str, str], *options: str, agent: List[str] = QUIET_AGENT) -> subprocess.CompletedProcess:
    return subprocess.run([*PROXY, *options, "--", *agent], input=b"", capture_output=True, env=env, timeout=60)


def assert_usage_error(result: subprocess.CompletedProcess, *words: str) -> None:
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("acp-fast proxy: error: "), err
    for word in words:
        assert word in last, (word, last)


BAD_OPTIONS = [
    (["--max-tool-calls", "-5"], "--max-tool-calls"),
    (["--max-tool-calls", "x"], "--max-tool-calls"),
    (["--max-tool-calls", "1.5"], "--max-tool-calls"),
    (["--max-sessions", "0"], "--max-sessions"),
    (["--max-sessions", "x"], "--max-sessions"),
    (["--max-content-bytes", "-1"], "--max-content-bytes"),
    (["--max-frame-bytes", "0"], "--max-frame-bytes"),
    (["--max-frame-bytes", "4294967295"], "--max-frame-bytes"),
    (["--max-frame-bytes", "many"], "--max-frame-bytes"),
    (["--protocol", "3"], "--protocol"),
    (["--protocol", "one"], "--protocol"),
    (["--agent-invalid", "explode"], "--agent-invalid"),
    (["--record"], "--record"),
    (["--state-json"], "--state-json"),
    (["--summary-json"], "--summary-json"),
    (["--no-such-option"], "--no-such-option"),
]


@pytest.mark.parametrize(("options", "named"), BAD_OPTIONS, ids=[" ".join(o) for o, _ in BAD_OPTIONS])
def test_bad_option_values_are_usage_errors(env, options, named):
    assert_usage_error(run(env, *options), named)


@pytest.mark.parametrize("option", ["--record", "--state-json", "--summary-json"])
def test_output_in_a_missing_folder_is_a_usage_error(env, tmp_path, option):
    target = tmp_path / "no-such-folder" / "out.json"
    assert_usage_error(run(env, option, str(target)), option, str(target))
    assert not target.parent.exists()


def test_outputs_are_owner_only(env, tmp_path):
    paths = {name: tmp_path / f"{name}.json" for name in ("record", "state", "summary")}
    old = os.umask(0o022)
    try:
        result = run(
            env,
            "--record", str(paths["record"]),
            "--state-json", str(paths["state"]),
            "--summary-json", str(paths["summary"]),
        )  # fmt: skip
    finally:
        os.umask(old)
    assert result.returncode == 3, result.stderr
    for path in paths.values():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert json.loads(paths["summary"].read_bytes())["status"] == 3


@pytest.mark.parametrize("option", ["--record", "--state-json", "--summary-json"])
def test_existing_file_is_kept_unless_force(env, tmp_path, option):
    target = tmp_path / "out"
    target.write_bytes(b"precious")
    target.chmod(0o644)
    assert_usage_error(run(env, option, str(target)), option, "already exists", "--force")
    assert target.read_bytes() == b"precious"
    result = run(env, "--force", option, str(target))
    assert result.returncode == 3, result.stderr
    assert target.read_bytes() != b"precious"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


@pytest.mark.parametrize("option", ["--record", "--state-json", "--summary-json"])
@pytest.mark.parametrize("force", [False, True], ids=["", "force"])
def test_symbolic_link_is_refused(env, tmp_path, option, force):
    victim = tmp_path / "victim"
    victim.write_bytes(b"do not touch")
    link = tmp_path / "link"
    link.symlink_to(victim)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    for target in (link, dangling):
        options = ["--force"] if force else []
        assert_usage_error(run(env, *options, option, str(target)), option, "symbolic link")
    assert victim.read_bytes() == b"do not touch"
    assert not (tmp_path / "nowhere").exists()


def test_a_failed_report_keeps_the_status_and_the_other_reports(env, tmp_path):
    # The state report is refused at exit (its file appears while the agent runs); the summary
    # and the recording are still written and the proxy exits with the agent's status.
    state = tmp_path / "state.json"
    agent = [PY, "-c", f"import pathlib, sys; pathlib.Path({str(state)!r}).write_bytes(b'x'); sys.exit(5)"]
    summary = tmp_path / "summary.json"
    record = tmp_path / "rec.ndjson"
    result = run(env, "--record", str(record), "--state-json", str(state), "--summary-json", str(summary), agent=agent)
    err = result.stderr.decode()
    assert result.returncode == 5, err
    assert "Traceback" not in err
    assert f"--state-json {state}: already exists" in err
    assert state.read_bytes() == b"x"
    assert json.loads(summary.read_bytes())["status"] == 5
    assert b'"event":"exit","status":5' in record.read_bytes()
