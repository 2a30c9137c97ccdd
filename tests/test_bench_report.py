"""The output of ``acp-fast bench`` (issue 20): a short summary that fits 100 columns by default,
the full report behind --detail / --markdown FILE / --json FILE, the project's targets behind
--targets, and a plain verdict on how busy the machine was."""

from __future__ import annotations

import argparse
import io
import json
import sys

import pytest

from acp_fast import cli
from acp_fast.bench import noise, summary
from acp_fast.bench.results import Row, Run

SMALL = [
    "--long-output",
    "0",
    "--tasks",
    "decode",
    "state",
    "scaling",
    "--profiles",
    "mixed",
    "v2",
    "--frames",
    "600",
    "--budget",
    "0",
    "--min-runs",
    "3",
    "--max-runs",
    "3",
    "--scaling-min",
    "100",
    "--scaling-max",
    "400",
    "--memory-frames",
    "500",
]


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = cli.main(["bench", *argv])
    finally:
        sys.stdout, sys.stderr = saved
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bench-report")
    md, js = folder / "report.md", folder / "results.json"
    code, out, err = run_cli([*SMALL, "--markdown", str(md), "--json", str(js)])
    assert code == 0, err
    return out, md.read_text("utf-8"), json.loads(js.read_text("utf-8"))


def test_the_default_output_is_a_short_summary_that_fits_100_columns(outputs):
    out, _, _ = outputs
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= summary.WIDTH == 100
    assert len(lines) < 60
    assert lines[0].startswith("acp-fast bench: acp-fast ")
    assert "Speed against stdlib json" in out and "decode · mixed" in out and "state · v2" in out
    assert "State accumulation vs stream length" in out and "exponent" in out
    assert "Memory per retained tool call (500 mixed frames)" in " ".join(out.split())
    # the SDK's models are v1: said so, with the reason in a note
    assert "skipped (" in out and "the SDK's models are ACP v1" in " ".join(out.split())
    # nothing of the full report, nor the project's own targets
    assert "## " not in out and "| " not in out and "target" not in out.lower().replace("--targets", "")
    assert "More: --detail" in out and "--markdown FILE" in out and "--json FILE" in out


def test_the_summary_says_how_busy_the_machine_was(outputs):
    out, _, data = outputs
    out = " ".join(out.split())  # the summary wraps its sentences at 100 columns
    load = data["machine_load"]
    assert load["verdict"] in noise.VERDICTS
    assert f"Machine {load['verdict']}:" in out
    assert "% of one CPU" in out and "results had a median pass more than 25 % slower" in out
    assert 0 < load["cpu_share"] <= 1.5 and data["cpu_s"] > 0
    assert load["judged"] >= 1 and 0 <= load["noisy"] <= load["judged"]


def test_markdown_file_has_the_full_report_without_targets(outputs):
    _, md, data = outputs
    for heading in ("# acp-fast bench", "## Summary", "## Details", "## scaling"):
        assert heading in md
    assert "## Targets" not in md
    assert "Machine " in md  # the verdict is in the report's header too
    assert len(data["targets"]) == 11  # the JSON keeps every number, the targets too


def test_detail_and_targets_flags(tmp_path):
    argv = ["--tasks", "decode", "--profiles", "tiny", "--frames", "300", "--budget", "0", "--max-runs", "3"]
    argv += ["--long-output", "0"]
    code, out, err = run_cli([*argv, "--contenders", "rust", "json", "--detail", "--targets", "--no-progress"])
    assert code == 0, err
    assert out.startswith("# acp-fast bench") and "## Targets" in out and "## Details" in out
    code, out, err = run_cli([*argv, "--contenders", "rust", "json", "--targets", "--no-progress"])
    assert code == 0, err
    assert "The project's targets" in out and max(map(len, out.splitlines())) <= 100


def _run(times_by_contender, cpu, elapsed, loads):
    run = Run(args=argparse.Namespace(argv=[]), environment={"cpus": 2})
    run.rows = [Row("decode", "mixed", c, "x", True, 10, 1000, times=t) for c, t in times_by_contender.items()]
    run.cpu_seconds, run.elapsed, run.loads = cpu, elapsed, loads
    return run


def test_the_verdict_follows_the_cpu_share_and_the_spread_of_passes():
    steady = [1.0, 1.01, 1.02, 1.03]
    quiet = _run({"rust": steady, "json": steady}, cpu=59.0, elapsed=60.0, loads=[0.9, 1.1])
    assert noise.machine_load(quiet)["verdict"] == "quiet"
    assert noise.load_sentences(quiet)[0].startswith("Machine quiet: the run got 98 % of one CPU; load average 1.0")
    busy = _run({"rust": steady, "json": steady}, cpu=30.0, elapsed=60.0, loads=[4.0, 5.0])
    assert noise.machine_load(busy)["verdict"] == "busy"
    assert "Other programs were taking CPU time" in " ".join(noise.load_sentences(busy))
    spread = _run({"rust": [1.0, 1.5, 1.6], "json": [1.0, 1.4, 1.6]}, cpu=59.0, elapsed=60.0, loads=[])
    assert noise.machine_load(spread)["verdict"] == "busy"  # every result varied
    assert noise.machine_load(spread)["load_average"] is None


def test_the_load_average_is_judged_per_cpu():
    # the share of a CPU and the spread of passes say nothing: the load decides
    assert noise.judge(1.0, 0.0, 4.1, 2) == "busy"  # 2.05 per CPU: processes queue for a CPU
    assert noise.judge(1.0, 0.0, 4.1, 8) == "quiet"  # 0.51 per CPU
    assert noise.judge(1.0, 0.0, 4.1, 4) == "somewhat busy"  # 1.03 per CPU
    assert noise.QUIET_LOAD_PER_CPU == 1.0 and noise.BUSY_LOAD_PER_CPU == 1.5
    assert noise.judge(1.0, 0.0, 2.0, 2) == "quiet" and noise.judge(1.0, 0.0, 2.02, 2) == "somewhat busy"
    assert noise.judge(1.0, 0.0, 3.0, 2) == "somewhat busy" and noise.judge(1.0, 0.0, 3.02, 2) == "busy"
    assert noise.judge(1.0, 0.0, 0.9, 1) == "quiet" and noise.judge(1.0, 0.0, 1.6, 1) == "busy"
    # without a load average or a CPU count, the load is not judged
    assert (
        noise.judge(1.0, 0.0, None, 2) == noise.judge(1.0, 0.0, 9.0, None) == noise.judge(1.0, 0.0, 9.0, 0) == "quiet"
    )
    assert noise.load_per_cpu(4.1, 2) == 2.05 and noise.load_per_cpu(4.1, None) is None
    # the other signs as before: the worst of the three wins
    assert noise.judge(0.7, 0.0, 0.5, 2) == "somewhat busy" and noise.judge(0.5, 0.0, 0.5, 2) == "busy"
    assert noise.judge(None, 0.2, 0.5, 2) == "somewhat busy" and noise.judge(None, 0.3, 0.5, 2) == "busy"
    assert noise.judge(0.7, 0.0, 4.1, 2) == "busy"


def test_a_run_at_load_4_on_2_cpus_is_busy():
    steady = [1.0, 1.01, 1.02, 1.03]
    run = _run({"rust": steady, "json": steady}, cpu=59.0, elapsed=60.0, loads=[4.0, 4.2])
    load = noise.machine_load(run)
    assert load["verdict"] == "busy" and load["load_average"]["per_cpu"] == pytest.approx(2.05)
    assert noise.load_sentences(run)[0].startswith(
        "Machine busy: the run got 98 % of one CPU; load average 4.1 on 2 CPUs, 2.05 per CPU (at most 4.2)"
    )
    run.environment["cpus"] = 8
    assert noise.machine_load(run)["verdict"] == "quiet"


def test_the_speed_table_fits_even_when_every_contender_is_stopped():
    run = Run(args=argparse.Namespace(argv=[]), environment={"cpus": 2})
    stopped = "stopped: one pass over 13,333 frames projected at 5.2 s or more, over --pass-budget 1.5 s"
    for task in ("materialize", "passthrough"):
        run.rows.append(Row(task, "large", "rust", "x", True, 10, 1000, times=[1e-5, 1e-5, 1e-5]))
        for cid in ("python", "json", "orjson", "msgspec", "sdk"):
            run.rows.append(Row(task, "large", cid, "x", True, 10, 1000, stopped=stopped))
    text = summary.summary(run)
    assert max(len(line) for line in text.splitlines()) <= summary.WIDTH
    assert "stop (1)" in text and "(6) acp-fast (fallback), passthrough · large: stopped" in text.replace("\n  ", " ")


# -- issue 32: the commit in the summary, --detail at a terminal, every bar of the chart ----------


def test_the_summary_names_the_commit():
    run = Run(args=argparse.Namespace(argv=[]), environment={"cpus": 2, "commit": "e548a29+dirty"})
    assert "commit e548a29+dirty" in " ".join(summary.header(run))
    run = Run(args=argparse.Namespace(argv=[]), environment={"cpus": 2, "commit": None})
    assert "not a source checkout" in " ".join(summary.header(run))


def test_detail_fits_the_terminal():
    from acp_fast.bench.render import fit, table

    headers = ["task · profile", *(f"contender {i} median / min / max" for i in range(8))]
    rows = [[f"decode · p{r}", *(f"{r}.{i}5 µs / {r}.{i}1 µs / {r}.{i}9 µs" for i in range(8))] for r in range(3)]
    markdown = "# report\n\n" + "\n".join(table(headers, rows, [False] + [True] * 8)) + "\n\n" + "word " * 60 + "\n"
    assert max(map(len, markdown.splitlines())) >= 300
    fitted = fit(markdown, 80)
    assert max(map(len, fitted.splitlines())) <= 80
    flat = " ".join(fitted.split())
    for row in rows:  # every cell is still there, with its column's name
        assert f"- {row[0]}:" in flat
        for header, cell in zip(headers[1:], row[1:]):
            assert f"{header} {cell}" in flat
    narrow = "| a | b |\n|---|--:|\n| x | 1 |\n"
    assert fit(narrow, 80) == narrow  # what fits stays Markdown


def test_every_contender_has_a_visible_bar_json_included():
    from acp_fast.bench.plot import speed_bars

    run = Run(args=argparse.Namespace(argv=[]), environment={"cpus": 2})
    for cid, t in (("rust", 1e-6), ("json", 6e-6), ("orjson", 2e-6), ("sdk", 1.3e-5)):
        run.rows.append(Row("decode", "mixed", cid, "x", True, 10, 1000, times=[t, t, t]))
    present, height, base, bars = speed_bars(run)
    assert present == ["rust", "json", "orjson", "sdk"] and height > 0
    ratios = {cid: xs[0] for cid, (ys, xs) in bars.items()}
    assert ratios["json"] == pytest.approx(1.0) and ratios["sdk"] < 1.0
    assert all(x - base > 0 for x in ratios.values())  # json's bar too, and the slower SDK's
