"""acp-fast's JSON writer and reader against orjson, by string class and on two corpora.

    python benches/encode_bench.py                       # every row, every task
    python benches/encode_bench.py --tasks dumps --rounds 31
    python benches/encode_bench.py --build old=/tmp/old.so --build new=python/acp_fast/_native*.so

Rows: synthetic frames (a ``session/update`` agent_message_chunk whose text is of one class) at
200 B and 16 KB: ``ascii``, ``latin`` (2-byte UTF-8: accented text), ``cjk`` (3-byte), ``emoji``
(4-byte), ``escapes`` (quotes, backslashes, newlines, tabs, control characters); then two corpora
built here from a fixed seed, not by the project's traffic generator (``acp_fast.traffic``):
``mixed`` (realistic ACP traffic, about 400 B a frame, about half the frames non-ASCII: message
chunks in several scripts, tool calls and updates with diffs and terminal output, plans, permission
requests, responses with ints) and ``tools`` (tool-heavy, about 16 KB a frame: file reads, diffs,
terminal logs).

Tasks: ``dumps`` (each frame's dict to bytes, against ``orjson.dumps``), ``encode`` (to a line,
against ``orjson.dumps(..., option=OPT_APPEND_NEWLINE)``), ``loads`` (each line to objects,
against ``orjson.loads``), ``materialize`` (``FrameDecoder().feed(buffer)`` + ``to_dict()`` of each
message, against splitting the buffer and ``orjson.loads`` of each line). The objects handed to a
writer are fresh for every pass (made by ``orjson.loads``, untimed): a ``str`` a pass has encoded
may keep a UTF-8 copy, which would flatter the next pass.

Each contender runs once per round, in an order that rotates from round to round (the machine's
speed drifts); the figures are medians over the rounds (``--stat min``: the fastest round, for a
machine too busy for medians), in ns per frame, and the ratio is orjson's figure over the
contender's (above 1: faster than orjson). ``--build NAME=PATH`` times native
builds side by side in the same rounds (as ``benches/ab.py``), each against the same orjson
rounds. Before timing, every contender's output is checked: ``dumps`` and ``encode`` must give
orjson's bytes, ``loads`` and ``materialize`` orjson's objects.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import random
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

try:
    import acp_fast
except ImportError:  # a source checkout without an installed package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
    import acp_fast

import orjson

Frame = Dict[str, Any]

CLASSES = ("ascii", "latin", "cjk", "emoji", "escapes")
SIZES = {"200B": 200, "16KB": 16 * 1024}
CORPORA = ("mixed", "tools")
TASKS = ("dumps", "encode", "loads", "materialize")

# Words of each string class; text is drawn from them with a fixed seed.
WORDS = {
    "ascii": "the quick brown fox jumps over lazy dog while agent reads file and writes patch to disk".split(),
    "latin": "Ça été déjà vu à côté où l'élève préféré reçoit naïve façon über schön Größe año niño".split(),
    "cjk": "这是一个测试 我们正在读取文件 然后写入补丁 日本語のテキスト 한국어 문장입니다 代码审查 完成".split(),
    "emoji": "🚀 ✅ 🔥 😀 🎉 📦 🐛 🧪 🔧 💡 ⚠️ 👍".split(),
    "escapes": ['say "hi"', "C:\\path\\to", "line\n", "\ttab", "\x01ctl", "back\\slash", "\r\n", 'q"uote', "\x1f"],
}


def text(rng: random.Random, cls: str, n_bytes: int) -> str:
    """Text of class ``cls`` about ``n_bytes`` long once encoded as UTF-8 (unescaped)."""
    words = WORDS[cls]
    parts: List[str] = []
    size = 0
    while size < n_bytes:
        w = rng.choice(words)
        parts.append(w)
        size += len(w.encode()) + 1
    return " ".join(parts)


def chunk(session: str, body: str, kind: str = "agent_message_chunk") -> Frame:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session, "update": {"sessionUpdate": kind, "content": {"type": "text", "text": body}}},
    }


def synthetic(cls: str, size: int, n: int, seed: int = 0) -> List[Frame]:
    """``n`` agent_message_chunk frames of about ``size`` bytes (as JSON) whose text is of ``cls``."""
    rng = random.Random(seed)
    envelope = len(orjson.dumps(chunk("sess_0001", "")))
    return [chunk(f"sess_{i % 7:04d}", text(rng, cls, max(8, size - envelope))) for i in range(n)]


# --------------------------------------------------------------------------------------------
# The corpora

PROSE = ("ascii", "ascii", "latin", "cjk", "emoji")
CODE_LINES = [
    "def handle(request):",
    "    if request.id is None:",
    '        raise ValueError("missing id")',
    "    return {'ok': True, 'count': len(items)}",
    "for (let i = 0; i < n; i++) { total += values[i]; }",
    'fn main() { println!("{}", args.len()); }',
    "    # TODO: gérer les caractères accentués",
    "    // 处理错误的情况",
    '    path = "C:\\\\Users\\\\dev\\\\project"',
    "\treturn x  # tabbed",
    "",
]
TERMINAL_LINES = [
    "\x1b[32mPASSED\x1b[0m tests/test_api.py::test_roundtrip",
    "\x1b[31mFAILED\x1b[0m tests/test_json.py::test_escape - AssertionError",
    "Compiling acp-fast v0.1.0 (/work/acp-fast)",
    "warning: unused variable: `x`",
    "   --> src/lib.rs:12:9",
    "npm WARN deprecated package@1.0.0",
    "✓ built in 1.2s",
    "Téléchargement terminé 100%",
    "错误: 找不到文件",
    "",
]


def _code(rng: random.Random, n_lines: int) -> str:
    return "\n".join(rng.choice(CODE_LINES) for _ in range(n_lines))


def _terminal(rng: random.Random, n_lines: int) -> str:
    return "\n".join(rng.choice(TERMINAL_LINES) for _ in range(n_lines))


def _update(session: str, update: Frame) -> Frame:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}}


def _tool_id(rng: random.Random) -> str:
    return f"call_{rng.getrandbits(48):012x}"


def _mixed_frame(rng: random.Random, session: str, next_id: List[int]) -> Frame:
    kind = rng.choices(
        ["message", "thought", "user", "tool_call", "tool_diff", "tool_term", "plan", "permission", "response"],
        weights=[34, 10, 3, 10, 10, 8, 5, 5, 15],
    )[0]
    if kind in ("message", "thought", "user"):
        cls = rng.choice(PROSE)
        name = {"message": "agent_message_chunk", "thought": "agent_thought_chunk", "user": "user_message_chunk"}
        body = text(rng, cls, rng.randint(20, 500))
        return _update(session, {"sessionUpdate": name[kind], "content": {"type": "text", "text": body}})
    if kind == "tool_call":
        path = f"/work/project/src/{rng.choice(['main', 'lib', 'données', 'util'])}.py"
        return _update(
            session,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": _tool_id(rng),
                "title": f"Read {path}",
                "kind": rng.choice(["read", "edit", "execute", "search"]),
                "status": "pending",
                "locations": [{"path": path, "line": rng.randint(1, 900)}],
                "rawInput": {"path": path, "offset": rng.randint(0, 2000), "limit": 200},
            },
        )
    if kind == "tool_diff":
        return _update(
            session,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": _tool_id(rng),
                "status": "completed",
                "content": [
                    {
                        "type": "diff",
                        "path": "/work/project/src/lib.py",
                        "oldText": _code(rng, rng.randint(1, 5)),
                        "newText": _code(rng, rng.randint(1, 6)),
                    }
                ],
            },
        )
    if kind == "tool_term":
        return _update(
            session,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": _tool_id(rng),
                "status": rng.choice(["in_progress", "completed", "failed"]),
                "content": [
                    {"type": "content", "content": {"type": "text", "text": _terminal(rng, rng.randint(1, 6))}}
                ],
                "rawOutput": {"exitCode": rng.choice([0, 0, 1, 2]), "durationMs": rng.randint(3, 90000)},
            },
        )
    if kind == "plan":
        entries = [
            {
                "content": text(rng, rng.choice(PROSE), rng.randint(15, 60)),
                "priority": rng.choice(["high", "medium", "low"]),
                "status": rng.choice(["pending", "in_progress", "completed"]),
            }
            for _ in range(rng.randint(2, 4))
        ]
        return _update(session, {"sessionUpdate": "plan", "entries": entries})
    if kind == "permission":
        next_id[0] += 1
        return {
            "jsonrpc": "2.0",
            "id": next_id[0],
            "method": "session/request_permission",
            "params": {
                "sessionId": session,
                "toolCall": {"toolCallId": _tool_id(rng), "title": "Run `cargo test`", "kind": "execute"},
                "options": [
                    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
                ],
            },
        }
    next_id[0] += 1
    result = rng.choice(
        [
            {
                "stopReason": "end_turn",
                "usage": {"inputTokens": rng.randint(100, 90000), "outputTokens": rng.randint(1, 4000)},
            },
            {"outcome": {"outcome": "selected", "optionId": "allow-once"}},
            {"content": text(rng, rng.choice(PROSE), rng.randint(20, 200)), "line": rng.randint(0, 10**6)},
            {},
        ]
    )
    return {"jsonrpc": "2.0", "id": next_id[0], "result": result}


def _tool_frame(rng: random.Random, session: str) -> Frame:
    kind = rng.choice(["read", "diff", "terminal"])
    call = _tool_id(rng)
    if kind == "read":
        content: List[Frame] = [
            {"type": "content", "content": {"type": "text", "text": _code(rng, rng.randint(200, 700))}}
        ]
    elif kind == "diff":
        content = [
            {
                "type": "diff",
                "path": f"/work/project/src/module_{rng.randint(0, 99)}.py",
                "oldText": _code(rng, rng.randint(100, 350)),
                "newText": _code(rng, rng.randint(100, 350)),
            }
        ]
    else:
        content = [{"type": "terminal", "terminalId": f"term_{rng.randint(0, 9)}"}]
        content.append({"type": "content", "content": {"type": "text", "text": _terminal(rng, rng.randint(250, 800))}})
    return _update(
        session,
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call,
            "status": "completed",
            "content": content,
            "rawOutput": {"exitCode": 0, "bytes": rng.randint(0, 1 << 20), "truncated": rng.random() < 0.1},
        },
    )


def corpus(name: str, n: int, seed: int = 0) -> List[Frame]:
    """``n`` frames of the ``mixed`` or ``tools`` corpus (deterministic for a seed)."""
    rng = random.Random(seed)
    sessions = [f"sess_{rng.getrandbits(64):016x}" for _ in range(4)]
    next_id = [0]
    if name == "mixed":
        return [_mixed_frame(rng, rng.choice(sessions), next_id) for _ in range(n)]
    return [_tool_frame(rng, rng.choice(sessions)) for _ in range(n)]


def rows(frames_per_pass: int, bytes_per_pass: int) -> List[Tuple[str, List[Frame]]]:
    """Every row's frames: enough for ``bytes_per_pass`` of JSON, at least ``frames_per_pass``."""
    out: List[Tuple[str, List[Frame]]] = []
    for size_name, size in SIZES.items():
        n = max(frames_per_pass, bytes_per_pass // size)
        for cls in CLASSES:
            out.append((f"{cls} {size_name}", synthetic(cls, size, n)))
    out.append(("mixed corpus", corpus("mixed", max(frames_per_pass, bytes_per_pass // 400))))
    out.append(("tools corpus", corpus("tools", max(frames_per_pass, bytes_per_pass // 16000))))
    return out


def non_ascii_share(frames: Sequence[Frame]) -> float:
    return sum(not orjson.dumps(f).isascii() for f in frames) / max(1, len(frames))


# --------------------------------------------------------------------------------------------
# Contenders


class Pass:
    """One timed pass of a contender over one row, its input made fresh (untimed) before each."""

    def __init__(self, run: Callable[[Any], Any], fresh: Callable[[], Any]) -> None:
        self.run = run
        self.fresh = fresh

    def time(self) -> float:
        data = self.fresh()
        gc.disable()
        try:
            start = time.perf_counter()
            result = self.run(data)
            elapsed = time.perf_counter() - start
        finally:
            gc.enable()
        del result, data
        return elapsed


def make_pass(task: str, impl: Any, lines: List[bytes]) -> Pass:
    """The pass of ``task`` for ``impl`` (a native module or acp_fast; ``None``: orjson)."""
    buffer = b"\n".join(lines) + b"\n"
    if task in ("dumps", "encode"):
        fresh = lambda: [orjson.loads(line) for line in lines]  # noqa: E731
        if impl is None:
            dumps = orjson.dumps
            if task == "encode":
                newline = orjson.OPT_APPEND_NEWLINE
                return Pass(lambda objs: [dumps(o, option=newline) for o in objs], fresh)
            return Pass(lambda objs: [dumps(o) for o in objs], fresh)
        fn = impl.dumps if task == "dumps" else impl.encode
        return Pass(lambda objs: [fn(o) for o in objs], fresh)
    if task == "loads":
        loads = orjson.loads if impl is None else impl.loads
        return Pass(lambda ls: [loads(line) for line in ls], lambda: lines)
    if impl is None:
        loads = orjson.loads
        return Pass(lambda buf: [loads(line) for line in buf.split(b"\n") if line], lambda: buffer)
    decoder = impl.FrameDecoder
    return Pass(lambda buf: [m.to_dict() for m in decoder().feed(buf)], lambda: buffer)


def check(task: str, impl: Any, lines: List[bytes]) -> Optional[str]:
    """Why ``impl``'s output differs from orjson's on these lines (None: it does not)."""
    buffer = b"\n".join(lines) + b"\n"
    objs = [orjson.loads(line) for line in lines]
    if task == "dumps":
        got, want = [impl.dumps(o) for o in objs], [orjson.dumps(o) for o in objs]
    elif task == "encode":
        got = [impl.encode(o) for o in objs]
        want = [orjson.dumps(o, option=orjson.OPT_APPEND_NEWLINE) for o in objs]
    elif task == "loads":
        got, want = [impl.loads(line) for line in lines], objs
    else:
        got, want = [m.to_dict() for m in impl.FrameDecoder().feed(buffer)], objs
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"frame {i}: {g!r:.200} != {w!r:.200}"
    if len(got) != len(want):
        return f"{len(got)} results for {len(want)} frames"
    return None


def load_build(name: str, path: str) -> ModuleType:
    """The native module in ``path``, imported as ``<name>._native`` (as benches/ab.py)."""
    spec = importlib.util.spec_from_file_location(f"encode_bench_{name}._native", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"encode_bench: cannot load a native module from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(
    task: str, builds: Dict[str, Any], lines: List[bytes], rounds: int, stat: Callable[[List[float]], float]
) -> Tuple[float, Dict[str, float]]:
    """orjson's figure and each build's (seconds per pass: ``stat`` of the rounds), the passes
    interleaved."""
    passes: Dict[str, Pass] = {"orjson": make_pass(task, None, lines)}
    for name, impl in builds.items():
        passes[name] = make_pass(task, impl, lines)
    names = list(passes)
    for p in passes.values():  # warm-up
        p.time()
    times: Dict[str, List[float]] = {n: [] for n in names}
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            times[name].append(passes[name].time())
    medians = {n: stat(t) for n, t in times.items()}
    return medians.pop("orjson"), medians


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--rows", nargs="*", help="only rows whose name contains one of these words")
    parser.add_argument("--rounds", type=int, default=15, help="timed passes of each contender (default 15)")
    parser.add_argument("--kb", type=int, default=1024, help="JSON per pass and row, in KB (default 1024)")
    parser.add_argument(
        "--stat",
        choices=("median", "min"),
        default="median",
        help="figure of a contender over its rounds (default median; min on a machine too busy for medians)",
    )
    parser.add_argument("--min-frames", type=int, default=50, help="frames per pass at least (default 50)")
    parser.add_argument(
        "--build", action="append", default=[], metavar="NAME=PATH", help="a native build to time (repeatable)"
    )
    args = parser.parse_args(argv)
    builds: Dict[str, Any] = {}
    for spec in args.build:
        name, _, path = spec.partition("=")
        builds[name] = load_build(name, path)
    if not builds:
        builds["acp_fast"] = acp_fast
    problems = 0
    header = f"{'task':12} {'row':14} {'B/frame':>8} {'orjson ns':>10}"
    for name in builds:
        header += f" {name + ' ns':>12} {'ratio':>6}"
    print(
        f"backend: {getattr(acp_fast, 'BACKEND', '?')}; builds: {', '.join(builds)}; "
        f"{args.stat} of {args.rounds} rounds"
    )
    print(header)
    all_rows = rows(args.min_frames, args.kb * 1024)
    if args.rows:
        all_rows = [(r, f) for r, f in all_rows if any(w in r for w in args.rows)]
    for row, frames in all_rows:
        lines = [orjson.dumps(f) for f in frames]
        per_frame = sum(map(len, lines)) / len(lines)
        for task in args.tasks:
            for name, impl in builds.items():
                problem = check(task, impl, lines)
                if problem is not None:
                    print(f"{task:12} {row:14} WRONG ({name}): {problem}", flush=True)
                    problems += 1
            base, medians = measure(
                task, builds, lines, args.rounds, statistics.median if args.stat == "median" else min
            )
            n = len(lines)
            line = f"{task:12} {row:14} {per_frame:8.0f} {base / n * 1e9:10.0f}"
            for name in builds:
                line += f" {medians[name] / n * 1e9:12.0f} {base / medians[name]:5.2f}x"
            print(line, flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
