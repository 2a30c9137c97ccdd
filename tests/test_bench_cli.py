"""``acp-fast bench`` end to end on tiny sizes, and its pieces on known data.

No timing assertions: speed belongs to the benchmarks. These tests check that the command runs,
reports every contender and task, checks results, refuses a debug build, draws its chart or
says why not, and that its timing loop, progress bar and scaling stop behave as documented
(the latter with a fake clock).
"""

from __future__ import annotations

import io
import json
import sys

import pytest

import acp_fast
from acp_fast import cli, traffic
from acp_fast.bench import contenders as C
from acp_fast.bench import report, timing
from acp_fast.bench import state as S

TINY = [
    "--long-output",
    "0.05",
    "--mb",
    "0.02",
    "--budget",
    "0",
    "--min-runs",
    "1",
    "--max-runs",
    "2",
    "--scaling-min",
    "50",
    "--scaling-max",
    "200",
    "--memory-frames",
    "500",
]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """One tiny run of everything (all tasks, profiles and contenders), through the CLI."""
    path = tmp_path_factory.mktemp("bench") / "results.json"
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = cli.main(["bench", *TINY, "--detail", "--targets", "--json", str(path)])
    finally:
        sys.stdout, sys.stderr = saved
    return code, out.getvalue(), err.getvalue(), json.loads(path.read_text("utf-8"))


def test_runs_end_to_end(full_run):
    code, out, err, data = full_run
    assert code == 0, err
    assert data["format"] == "acp-fast-bench/1"
    assert isinstance(data["noisy"], list)
    for heading in ("# acp-fast bench", "## Summary", "## Targets", "## Details", "## scaling"):
        assert heading in out
    # long tool output through the proxy, as it is and with --coalesce: each scenario twice, the
    # editor's final state the agent's, fewer bytes with --coalesce
    assert "## Long tool output through the proxy (`--coalesce`)" in out
    rows = data["coalesce"]
    assert [(r["scenario"], r["options"]) for r in rows] == [(s, o) for s in "abc" for o in ("(none)", "--coalesce 50")]
    assert all(r["final_equal"] for r in rows)
    for plain, coalesced in zip(rows[::2], rows[1::2]):
        assert coalesced["editor_bytes"] < plain["editor_bytes"]
    # the machine, the versions and the commit it ran on
    env = data["environment"]
    assert env["cpu"] and env["cpus"] and env["python"] and env["acp_fast"] == acp_fast.__version__
    assert "Machine:" in out and "Python:" in out and "commit:" in out
    assert env["native_build"] == "release"
    assert env["libraries"]["orjson"]


def test_json_has_every_task_and_contender(full_run):
    _, _, _, data = full_run
    tasks = {row["task"] for row in data["results"]} | ({"scaling"} if data["scaling"] else set())
    assert tasks == set(C.TASKS)
    assert {c["profile"] for c in data["corpora"]} == set(traffic.PROFILES)
    for task in C.CORPUS_TASKS:
        for profile in traffic.PROFILES:
            rows = [r for r in data["results"] if r["task"] == task and r["profile"] == profile]
            assert {r["contender"] for r in rows} == set(C.CONTENDERS), (task, profile)
    assert {c["contender"] for c in data["scaling"]["contenders"]} == set(C.CONTENDERS)


def test_every_result_is_timed_and_correct(full_run):
    _, _, _, data = full_run
    for row in data["results"]:
        where = (row["task"], row["profile"], row["contender"], row["name"])
        if row["contender"] == "sdk" and row["profile"] == "v2":
            # the SDK's models are v1: said so, not timed
            assert row["status"] == "skipped" and "v2" in row["skip"], where
            continue
        assert row["status"] == "timed", (where, row["skip"], row["stopped"])
        assert row["correct"] is True, (where, row["problem"])
        assert row["runs"] >= 1 and row["median_s"] > 0 and row["min_s"] <= row["median_s"] <= row["max_s"]
        assert row["frames_per_s"] > 0 and row["mb_per_s"] > 0
        # ratios come from the same run's medians
        base = next(
            r
            for r in data["results"]
            if (r["task"], r["profile"], r["contender"], r["primary"]) == (row["task"], row["profile"], "json", True)
        )
        assert row["vs_json"] == pytest.approx(base["median_s"] / row["median_s"])


def test_scaling_and_memory_and_targets(full_run):
    _, out, _, data = full_run
    scaling = data["scaling"]
    assert scaling["sizes"] == [50, 100, 200]
    for entry in scaling["contenders"]:
        assert entry["exponent"] is not None, entry
        assert [p["frames"] for p in entry["points"]][:2] == [50, 100]
    assert set(data["memory"]["bytes_per_tool_call"]) == {"rust", "python", "orjson"}
    targets = {t["target"]: t for t in data["targets"]}
    assert len(targets) == 11
    assert all(t["met"] in ("yes", "no", "partly") for t in targets.values())
    assert "--scaling-max 1000000" in targets["state growth exponent ≤ 1.05, 1k → 1M frames"]["measured"]
    spread = targets["state time per frame within 10 % at 1k, 10k, 100k, 1M frames"]["measured"]
    assert spread.startswith("50 ") and "over fastest" in spread and "--scaling-max 1000000" in spread
    ratios = targets["state accumulation ≥ 4× orjson + dict accumulator, mixed"]["measured"]
    assert "ToolCallStore.feed: " in ratios and "ToolCallStore.feed(changes=False): " in ratios


def test_noise_is_reported_when_medians_drift_from_the_fastest_pass():
    import argparse

    run = report.Run(args=argparse.Namespace(argv=[]), environment={})

    def row(contender, times):
        return report.Row("decode", "mixed", contender, "x", True, 10, 1000, times=times)

    run.rows = [
        row("rust", [1.0, 1.01, 1.02, 1.05]),  # quiet: median 1.015× the fastest
        row("orjson", [1.0, 1.3, 1.4, 2.0]),  # median 1.35×: noisy
        row("json", [1.0, 1.5]),  # too few passes to judge
        row("python", [1.0, 1.2, 1.26, 1.3, 1.3]),  # median 1.26×: noisy, less so
    ]
    noisy = report.noisy_rows(run)
    assert [(r.contender, round(spread, 2)) for r, spread in noisy] == [("orjson", 1.35), ("python", 1.26)]
    lines = report.noise_lines(run)
    assert lines[0] == "## Noise"
    assert lines[2].startswith("2 of 3 results have a median pass more than 25 % slower than their fastest")
    assert "1.35×" in "\n".join(lines) and "--budget" in lines[2]
    run.rows = run.rows[:1]
    assert report.noisy_rows(run) == [] and report.noise_lines(run) == []


def test_progress_without_a_terminal_is_plain_lines(full_run):
    _, _, err, _ = full_run
    assert "\r" not in err
    steps = [line for line in err.splitlines() if line.startswith("[")]
    assert len(steps) == 4 * 5 + 3 + 6  # task x profile cells, memory probes, scaling contenders
    assert steps[-1].startswith("[29/29] 100%")


def test_selection_plot_and_sdk_stop(tmp_path, capsys):
    pytest.importorskip("matplotlib")  # installed with the test extras
    png = tmp_path / "chart.png"
    path = tmp_path / "r.json"
    code = report.main(
        [
            "--tasks",
            "decode,state",
            "scaling",
            "--profiles",
            "tiny",
            "--contenders",
            "rust",
            "orjson",
            "sdk",
            "--frames",
            "tiny=1200",
            "--budget",
            "0",
            "--min-runs",
            "1",
            "--max-runs",
            "1",
            "--pass-budget",
            "0.01",
            "--scaling-min",
            "10",
            "--scaling-max",
            "40",
            "--memory-frames",
            "0",
            "--plot",
            str(png),
            "--json",
            str(path),
        ]
    )
    assert code == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(path.read_text("utf-8"))
    assert {(r["task"], r["contender"]) for r in data["results"] if r["primary"]} == {
        (task, cid) for task in ("decode", "state") for cid in ("rust", "orjson", "sdk")
    }
    assert data["memory"] is None
    # the SDK's accumulator on 1,200 tiny frames is projected past the 0.01 s pass budget: stopped, said so
    sdk = next(r for r in data["results"] if r["task"] == "state" and r["contender"] == "sdk")
    assert sdk["status"] == "stopped" and "projected" in sdk["stopped"] and "--pass-budget" in sdk["stopped"]
    assert "stopped" in capsys.readouterr().out


def test_plot_needs_matplotlib(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    assert report.main(["--plot", str(tmp_path / "x.png")]) == 2
    captured = capsys.readouterr()
    assert "needs matplotlib" in captured.err and "pip install" in captured.err
    assert captured.out == ""  # refused before running anything
    assert not (tmp_path / "x.png").exists()


def test_refuses_a_debug_build(monkeypatch, capsys):
    native = pytest.importorskip("acp_fast._native")
    monkeypatch.setattr(native, "build_profile", "debug")
    assert report.main(["--tasks", "decode", "--profiles", "tiny", "--mb", "0.01"]) == 2
    captured = capsys.readouterr()
    assert "refusing to time acp_fast._native" in captured.err and "'debug'" in captured.err
    assert captured.out == ""
    with pytest.raises(C.DebugBuildError):
        C.load_backends()
    # without the Rust backend there is nothing to refuse
    code = report.main(
        [
            "--tasks",
            "decode",
            "--profiles",
            "tiny",
            "--mb",
            "0.01",
            "--contenders",
            "python",
            "json",
            "--budget",
            "0",
            "--min-runs",
            "1",
            "--max-runs",
            "1",
            "--no-progress",
        ]
    )
    assert code == 0
    assert "acp-fast (fallback)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--tasks", "nope"], "'nope' is not one of"),
        (["--profiles", "huge"], "'huge' is not one of"),
        (["--contenders", "ujson"], "'ujson' is not one of"),
        (["--frames", "huge=10"], "unknown profile"),
        (["--frames", "0"], "at least 1 frame"),
    ],
)
def test_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        report.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_ranges(capsys):
    assert report.main(["--scaling-min", "100", "--scaling-max", "10"]) == 2
    assert report.main(["--min-runs", "5", "--max-runs", "2"]) == 2
    assert "--min-runs" in capsys.readouterr().err


def test_corpus_sizes():
    args = report.parser().parse_args(["--mb", "1", "--frames", "77", "--frames", "large=5"])
    assert report.corpus_sizes(args, ["mixed", "large"]) == {"mixed": 77, "large": 5}
    args = report.parser().parse_args(["--mb", "0.4"])
    assert report.corpus_sizes(args, traffic.PROFILES) == {"mixed": 1000, "large": 24, "tiny": 2666, "v2": 1000}


def test_corpus_prefix_is_the_start_of_the_stream():
    corpus = C.build_corpus("v2", 300, seed=4)
    head = corpus.prefix(120)
    assert head.frames == corpus.frames[:120] and head.buffer == corpus.buffer[: len(head.buffer)]
    assert head.lines == corpus.lines[:120] and head.version == 2


def test_checks_catch_wrong_results(backend):
    corpus = C.build_corpus("mixed", 200, seed=2)
    decode = C.contenders("decode", {"rust": backend, "python": backend}, ["rust"])[0]
    result = decode.make(corpus)()
    assert C.check("decode", corpus, result, decode) is None
    result[5] = ("request",) + result[5][1:]
    assert "1 of 200 frames differ; frame 5" in C.check("decode", corpus, result, decode)
    assert "199 results for 200 frames" in C.check("decode", corpus, result[:-1], decode)
    state = C.contenders("state", {"rust": backend, "python": backend}, ["rust"])[0]
    store = state.make(corpus)()
    assert C.check("state", corpus, store, state) is None
    wrong = store.snapshot()
    sid = next(iter(wrong))
    wrong[sid].popitem()
    assert C.check("state", corpus, wrong, state).startswith("state differs")


# ---------------------------------------------------------------------------------------------
# Timing loop, progress bar, scaling (fake clocks: deterministic)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def costing(self, seconds, log=None, name=None):
        def run():
            self.now += seconds
            if log is not None:
                log.append(name)

        return run


def test_measure_interleaves_and_gives_fast_contenders_more_passes():
    clock = FakeClock()
    log: list = []
    runs = [clock.costing(0.5, log, "slow"), clock.costing(0.01, log, "fast"), clock.costing(0.1, log, "mid")]
    fractions: list = []
    times = timing.measure(runs, budget=0.25, min_runs=3, max_runs=20, on_round=fractions.append, clock=clock)
    assert [len(t) for t in times] == [3, 20, 3]  # slow: min_runs; fast: max_runs; mid: 3 x 0.1 >= 0.25
    assert times[0] == pytest.approx([0.5] * 3) and times[1] == pytest.approx([0.01] * 20)
    # the first three rounds run everyone, in an order that rotates
    assert log[:9] == ["slow", "fast", "mid", "fast", "mid", "slow", "mid", "slow", "fast"]
    assert fractions[-1] == 1.0 and fractions == sorted(fractions)


def test_measure_budget_sets_the_number_of_passes():
    clock = FakeClock()
    times = timing.measure([clock.costing(0.02)], budget=0.1, min_runs=1, max_runs=100, clock=clock)
    assert len(times[0]) == 5


def test_measure_prepares_every_pass_untimed():
    clock = FakeClock()
    run = clock.costing(0.01)
    prepared = []

    def prepare():
        clock.now += 1.0  # expensive, and outside the timing
        prepared.append(clock.now)

    run.prepare = prepare
    times = timing.measure([run], budget=0.045, min_runs=2, max_runs=10, clock=clock)
    assert len(prepared) == len(times[0]) == 5
    assert times[0] == pytest.approx([0.01] * 5)


def test_encode_gets_fresh_objects_every_pass():
    corpus = C.build_corpus("mixed", 50, seed=1)
    for contender in C.contenders("encode", C.load_backends()):
        if contender.skip is not None:
            continue
        run = contender.make(corpus)
        seen = []
        for _ in range(2):
            C.prepare(run)
            seen.append(run())
        assert seen[0] == seen[1]  # same bytes from different objects
        assert C.check("encode", corpus, seen[1], contender) is None, contender.key


def test_progress_bar_on_a_terminal_redraws_one_line():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    progress = timing.Progress(4, stream=stream)
    progress.update(1.5, "decode · mixed", force=True)
    progress.step("decode · mixed")
    progress.note("a message that stays")
    progress.step("decode · large")
    progress.close()
    text = stream.getvalue()
    assert text.count("\r") >= 4
    assert "[" in text and "#" in text and " 50%" in text and "decode · mixed" in text
    assert text.count("\n") == 1  # only the note ends a line; the bar is redrawn in place
    assert text.endswith("\r")


def test_progress_elsewhere_prints_one_line_per_step():
    stream = io.StringIO()
    progress = timing.Progress(3, stream=stream)
    progress.update(0.5, "ignored")
    progress.step("first", "3 contenders")
    progress.step("second")
    progress.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in stream.getvalue()
    assert lines[0].startswith("[1/3]  33%") and lines[0].endswith("first: 3 contenders")
    assert lines[1].startswith("[2/3]  67%")
    quiet = io.StringIO()
    silent = timing.Progress(3, stream=quiet, enabled=False)
    silent.step("x")
    silent.note("y")
    assert quiet.getvalue() == ""


def test_scaling_stops_a_contender_projected_past_the_budget():
    sizes = [1_000, 2_000, 5_000, 10_000, 20_000]

    def maker(cost_per_frame, power):
        def make(n):
            return clock.costing(cost_per_frame * n**power)

        return make

    clock = FakeClock()
    linear = S.run_scaling("rust", "linear", maker(1e-6, 1), sizes, budget=1.0, clock=clock)
    assert [n for n, _ in linear.points] == sizes and linear.stopped is None
    assert linear.exponent == pytest.approx(1.0)
    # Short passes repeat until they add up to 0.2 s (at most 100): 1 ms, 2 ms, 5 ms, 10 ms, 20 ms.
    assert linear.runs == [100, 100, 40, 20, 10]
    quadratic = S.run_scaling("sdk", "quadratic", maker(1e-7, 2), sizes, budget=5.0, clock=clock)
    # 1k: 0.1 s, 2k: 0.4 s; 5k projected 2.5 s (runs: 2.5 s); 10k projected 10 s > 5 s: stopped
    assert [n for n, _ in quadratic.points] == [1_000, 2_000, 5_000]
    assert quadratic.exponent == pytest.approx(2.0)
    # one pass once a pass takes over 2 s, and a second before a stop rests on it (issue 20)
    assert quadratic.runs == [3, 3, 2]
    assert quadratic.stopped.startswith("stopped before 10,000 frames: one pass projected at 10.0 s")
    assert "budget of 5 s" in quadratic.stopped


def test_projection():
    assert S.project([(1_000, 0.1)], 3_000) == pytest.approx(0.3)  # one point: linear
    assert S.project([(1_000, 0.1), (2_000, 0.4)], 4_000) == pytest.approx(1.6)  # quadratic
    assert S.project([(1_000, 0.1), (2_000, 0.15)], 4_000) == pytest.approx(0.3)  # never below linear


def test_scaling_sizes():
    assert S.scaling_sizes(1_000, 100_000) == [1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000]
    assert S.scaling_sizes(1_000, 1_000_000)[-3:] == [200_000, 500_000, 1_000_000]
    assert S.scaling_sizes(50, 200) == [50, 100, 200]
    assert S.scaling_sizes(300, 300) == [300]
    assert S.scaling_sizes(3_000, 7_000) == [3_000, 5_000, 7_000]
    with pytest.raises(ValueError):
        S.scaling_sizes(10, 5)


def test_table_is_aligned_markdown():
    lines = report.table(["name", "value"], [["a", "1.5"], ["longer name", "22"]], [False, True])
    assert lines == [
        "| name        | value |",
        "|-------------|------:|",
        "| a           |   1.5 |",
        "| longer name |    22 |",
    ]


def test_runs_without_the_optional_contenders(monkeypatch, tmp_path, capsys):
    # a fresh install without msgspec and the ACP SDK: those rows say why, the rest runs
    for name in ("acp", "acp.schema", "acp.contrib", "acp.contrib.session_state"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(C, "msgspec", None)
    C._sdk.cache_clear()
    try:
        path = tmp_path / "r.json"
        code = report.main(
            [
                "--tasks",
                "decode",
                "state",
                "scaling",
                "--profiles",
                "tiny",
                "--mb",
                "0.01",
                "--budget",
                "0",
                "--min-runs",
                "1",
                "--max-runs",
                "1",
                "--scaling-min",
                "20",
                "--scaling-max",
                "50",
                "--memory-frames",
                "0",
                "--no-progress",
                "--json",
                str(path),
            ]
        )
    finally:
        C._sdk.cache_clear()
    assert code == 0
    data = json.loads(path.read_text("utf-8"))
    for row in data["results"]:
        if row["contender"] in ("sdk", "msgspec"):
            assert row["status"] == "skipped" and "not installed" in row["skip"], row
        else:
            assert row["status"] == "timed" and row["correct"], row
    scaling = {c["contender"]: c for c in data["scaling"]["contenders"]}
    assert "not installed" in scaling["sdk"]["skip"] and "not installed" in scaling["msgspec"]["skip"]
    assert scaling["rust"]["exponent"] is not None
    assert "skipped (" in capsys.readouterr().out


def test_ab_script_compares_two_builds(tmp_path):
    # benches/ab.py (a developer tool): two copies of the installed native module, every task,
    # a tiny corpus; each row reports both builds and a ratio near 1 (same code).
    import importlib.util
    import pathlib
    import shutil
    import subprocess
    import sys

    origin = importlib.util.find_spec("acp_fast._native").origin
    old, new = tmp_path / "old.so", tmp_path / "new.so"
    shutil.copy(origin, old)
    shutil.copy(origin, new)
    script = pathlib.Path(__file__).resolve().parent.parent / "benches" / "ab.py"
    tasks = ["decode", "to_dict", "loads", "dumps", "state", "state-quiet", "passthrough"]
    out = subprocess.run(
        [
            sys.executable,
            str(script),
            str(old),
            str(new),
            "--tasks",
            *tasks,
            "--profiles",
            "mixed",
            "v2",
            "--frames",
            "200",
            "--rounds",
            "3",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    rows = [line.split() for line in out[1:]]
    assert [(r[0], r[1]) for r in rows] == [(p, t) for p in ("mixed", "v2") for t in tasks]
    for row in rows:
        old_ns, new_ns, ratio = float(row[2]), float(row[3]), float(row[4].rstrip("×"))
        assert old_ns > 0 and new_ns > 0
        assert ratio == pytest.approx(old_ns / new_ns, abs=0.01)
