"""Deterministic, realistic ACP traffic (NDJSON) for benchmarks and tests.

    >>> from acp_fast import traffic
    >>> data = traffic.generate("mixed", 1000, seed=1)       # bytes, one frame per line
    >>> lines = traffic.frames("v2", 200)                     # list of frames, each ending in b"\\n"

The same ``(profile, n_frames, seed)`` always gives the same bytes (``random.Random(seed)``, no
global state, no clock). Frames are built with [`acp_fast.builders`][acp_fast.builders] and are valid against the
official schema of their profile's protocol version. Both directions of one connection are
interleaved, as a proxy between editor and agent sees them.

Profiles (``TARGET_FRAME_BYTES`` holds the average frame size each one aims at):

* ``mixed`` (protocol v1, ~400 B/frame):
  ``initialize`` and ``session/new`` exchanges, then prompt turns of several sessions
  interleaved: ``session/prompt`` requests and their responses, agent message and thought
  chunks (Unicode, quotes, backslashes, newlines), ``tool_call`` with locations and
  ``rawInput``, ``tool_call_update`` progress and results (text, diffs, ``rawOutput``),
  failures, ``plan`` updates from ``todo_write``, permission requests and responses,
  the odd ``session/cancel``.
* ``large`` (protocol v1, ~16 KB/frame, every frame between 2 and 50 KB):
  Big tool results: ``tool_call_update`` with large text content (file reads, fetched pages),
  command output in both ``content`` and ``rawOutput``, and whole-file diffs.
* ``tiny`` (protocol v1, message chunks):
  Token-sized agent message / thought chunks. The ``session/update`` envelope of a text chunk
  alone is 155 bytes, so this profile averages about 165 B/frame against a nominal 150.
* ``v2`` (protocol v2, ~400 B/frame):
  v2 turns: ``state_update``, chunks with ``messageId``, ``tool_call_update`` upserts with
  explicit ``null`` clears, ``tool_call_content_chunk`` (text and v2 diffs),
  ``terminal_update`` / ``terminal_output_chunk`` with base64 data, ``plan_update``,
  v2 permission requests with ``title`` and ``subject``.
"""

from __future__ import annotations

import itertools
import json
import random
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from . import builders as B

__all__ = ["PROFILES", "PROTOCOL_VERSIONS", "TARGET_FRAME_BYTES", "TOOL_CALL_MIXES", "frames", "generate", "tool_calls"]

#: Average frame size (bytes, newline included) each profile aims at.
TARGET_FRAME_BYTES: Dict[str, int] = {"mixed": 400, "large": 16 * 1024, "tiny": 150, "v2": 400}
#: Protocol version of every frame of a profile.
PROTOCOL_VERSIONS: Dict[str, int] = {"mixed": 1, "large": 1, "tiny": 1, "v2": 2}
#: The profile names.
PROFILES: Tuple[str, ...] = tuple(TARGET_FRAME_BYTES)

LARGE_MIN_BYTES = 2048
LARGE_MAX_BYTES = 50 * 1024


def frames(profile: str, n_frames: int, seed: int = 0) -> List[bytes]:
    """``n_frames`` frames of ``profile``, each ``bytes`` ending in ``b"\\n"``."""
    factory = _FACTORIES.get(profile)
    if factory is None:
        raise ValueError(f"profile must be one of {list(PROFILES)}, found {profile!r}")
    if not isinstance(n_frames, int) or isinstance(n_frames, bool) or n_frames < 0:
        raise ValueError(f"n_frames must be a non-negative int, found {n_frames!r}")
    return list(itertools.islice(factory(random.Random(seed)), n_frames))


def generate(profile: str, n_frames: int, seed: int = 0) -> bytes:
    """``n_frames`` frames of ``profile`` as one NDJSON byte string."""
    return b"".join(frames(profile, n_frames, seed))


#: The mixes of [`tool_calls`][acp_fast.traffic.tool_calls].
TOOL_CALL_MIXES: Tuple[str, ...] = ("pending", "finished", "mixed")


def tool_calls(n_tool_calls: int, mix: str = "mixed", seed: int = 0, sessions: int = 4) -> List[bytes]:
    """Frames (protocol v1, about 200 B each) creating ``n_tool_calls`` tool calls over ``sessions``
    sessions, for the ``max_tool_calls`` bound (DESIGN §7.8) rather than for parsing:

    * ``pending``: one ``tool_call`` per tool call, status pending (nothing ever finishes);
    * ``finished``: one ``tool_call`` per tool call, status completed;
    * ``mixed``: one ``tool_call`` per tool call, status pending, and after about half of them a
      ``tool_call_update`` that finishes (completed or failed) one of the 256 tool calls created
      last and not yet finished, chosen at random: tool calls finish out of creation order (under
      a bound below 256, some are evicted first and created again by their update).
    """
    if mix not in TOOL_CALL_MIXES:
        raise ValueError(f"mix must be one of {list(TOOL_CALL_MIXES)}, found {mix!r}")
    if not isinstance(n_tool_calls, int) or isinstance(n_tool_calls, bool) or n_tool_calls < 0:
        raise ValueError(f"n_tool_calls must be a non-negative int, found {n_tool_calls!r}")
    rng = random.Random(seed)
    ids = _Ids(rng)
    sids = [ids.session() for _ in range(max(1, sessions))]
    recent: List[Tuple[str, str]] = []
    out: List[bytes] = []
    status = "completed" if mix == "finished" else "pending"
    for _ in range(n_tool_calls):
        sid, tcid = rng.choice(sids), ids.tool_call()
        tool = rng.choice(_V1_TOOLS)
        out.append(B.tool_call(sid, tcid, tool, kind=B.tool_kind(tool, _EXTRA_KINDS), status=status))
        if mix != "mixed":
            continue
        recent.append((sid, tcid))
        if len(recent) > 256:
            del recent[0]
        if rng.random() < 0.5:
            done_sid, done_id = recent.pop(rng.randrange(len(recent)))
            done = "completed" if rng.random() < 0.9 else "failed"
            out.append(B.tool_call_update(done_sid, done_id, status=done))
    return out


# ---------------------------------------------------------------------------------------------
# Text material

_WORDS = (
    "the function returns a value when called with an empty list so we need to check the input "
    "first then update tests and run them again I will read file look at module config parser "
    "error handling because this path is not covered yet let me fix it now should work after "
    "change build passes all green one more thing to verify in code below"
).split()
_SPICE = [
    "naïve",
    "café",
    "façade",
    "über",
    "日本語",
    "中文字符",
    "테스트",
    "Ωμέγα",
    "→",
    "—",
    "…",
    "✓",
    "✗",
    "🚀",
    "🐍",
    "🦀",
    "👍🏽",
    '"quoted"',
    "'single'",
    "C:\\Users\\dev",
    "back\\slash",
    "tab\tseparated",
    '<div class="x">',
    "&amp;",
    "`cargo test`",
    "**bold**",
    '{"key": 1}',
    "50%",
    "\\n",
    "x²",
    "µs",
    "€10",
]
# fmt: off
_CHUNK_PIECES = [" the", " function", " returns", ",", ".", " I", " will", " now", " `", "parse", "()", "`",
                 " ✓", " naïve", " é", "\n", "\n\n", " **", "Done", "**", " —", " \"ok\"", " path\\to", " 🚀",
                 " 日本", "語", " in", " src", "/", "lib", ".rs", ":", " 42", " tests", " pass", "\t", "```",
                 "python\n", " ->", " x", " =", " 1"]
# fmt: on

_CODE = [
    "def parse_frame(line: bytes) -> dict:",
    '    """Parse one NDJSON frame; raise ValueError on bad input."""',
    '    if not line.endswith(b"\\n"):',
    '        raise ValueError(f"frame without newline: {line!r}")',
    "    return json.loads(line)",
    "",
    "class ToolCallStore:",
    "    def __init__(self) -> None:",
    "        self._calls: dict[tuple[str, str], dict] = {}",
    "    # naïve merge — TODO: handle null clears (v2) ✓",
    "        for key, value in update.items():",
    "            if value is None:",
    "                record.pop(key, None)",
    '    print("Résumé: \\"done\\" in", elapsed, "µs")',
    "fn main() -> Result<(), Box<dyn std::error::Error>> {",
    '    let path = std::path::Path::new("C:\\\\Users\\\\dev\\\\project");',
    "    let data = std::fs::read_to_string(path)?;",
    '    println!("{} bytes read → {:?}", data.len(), path);',
    "    for (i, line) in data.lines().enumerate() {",
    "        if line.contains('\\t') { eprintln!(\"tab at {}\", i); }",
    "    }",
    "    Ok(())",
    "}",
    "export async function fetchJson(url: string): Promise<unknown> {",
    "  const res = await fetch(url, { headers: { 'Accept': 'application/json' } });",
    "  if (!res.ok) throw new Error(`HTTP ${res.status}: ${res.statusText}`);",
    "  return res.json(); // 日本語のコメント",
    "}",
    "\tindented_with_tab = {'a': 1, \"b\": [1, 2, 3]}  # mixed quotes",
    "SELECT id, name FROM users WHERE email LIKE '%@example.com' ORDER BY id;",
    '    assert result == {"jsonrpc": "2.0", "id": 1, "result": None}',
    '<div class="card"><p>Hello &amp; welcome — 👋</p></div>',
    "    raise RuntimeError('unreachable: \\\\ backslash')",
    "import os, sys, json  # emoji in comment 🐍",
    "    return sum(x ** 2 for x in values) / len(values)",
    'const RE = /^\\s*(\\w+)\\s*=\\s*"([^"]*)"$/;',
    '    with open(path, encoding="utf-8") as fh:',
    '        lines = [l.rstrip("\\r\\n") for l in fh]',
    "#[derive(Debug, Clone, PartialEq, Eq)]",
    "pub struct Frame<'a> { raw: &'a [u8], kind: Kind }",
]
_CODE_COST = [len(json.dumps(line, ensure_ascii=False).encode()) for line in _CODE]  # incl. "\n" escape (2)

_OUTPUT_LINES = [
    "test tests::parses_request ... ok",
    "test tests::rejects_bom ... ok",
    "test tests::lone_surrogate ... FAILED",
    "\x1b[32m✓\x1b[0m test_builders.py::test_plan_v1 PASSED",
    "\x1b[31m✗\x1b[0m test_traffic.py::test_sizes FAILED — expected 400 ± 25%",
    "warning: unused variable: `line` --> src/framing.rs:42:9",
    "   Compiling acp-fast v0.1.0 (/home/dev/acp-fast)",
    "    Finished `release` profile [optimized] target(s) in 12.84s",
    "src/message.rs:118:        let id = parse_id(&raw[start..end])?;",
    "README.md:7:Fast codec for the Agent Client Protocol — “ACP”.",
    "total 48\tdrwxr-xr-x  5 dev dev 4096 Jan  3 10:00 src",
    "Downloading https://example.com/página?q=naïve&lang=日本",
    '{"level":"info","msg":"listening","port":8080}',
    "Traceback (most recent call last):",
    '  File "/home/dev/project/app.py", line 12, in <module>',
    "KeyError: 'sessionId'",
]
_OUTPUT_COST = [len(json.dumps(line, ensure_ascii=False).encode()) for line in _OUTPUT_LINES]

_DIRS = ["src", "src/core", "tests", "python/acp_fast", "rust", "docs", "benches", "web/app/components"]
# fmt: off
_FILES = ["lib.rs", "framing.rs", "message.py", "__init__.py", "test_state.py", "index.ts", "README.md",
          "config.toml", "parser.rs", "café_menu.py", "日本語.md", "Button.tsx", "main.go"]
_ROOT = "/home/dev/project"
_URLS = ["https://docs.rs/serde_json", "https://agentclientprotocol.com/protocol/tool-calls",
         "https://example.com/search?q=na%C3%AFve+json", "https://peps.python.org/pep-0008/"]
_COMMANDS = ["cargo test --release", "pytest -q tests/", "npm run build", "ls -la src", "git status --short",
             "rg -n \"TODO\" src", "python3 -c \"print('héllo')\"", "make lint"]
# fmt: on

_OPTIONS = [
    B.permission_option("allow_once", "Allow", "allow_once"),
    B.permission_option("allow_always", "Always allow", "allow_always"),
    B.permission_option("reject_once", "Reject", "reject_once"),
]


def _words(rng: random.Random, min_chars: int, max_chars: int) -> str:
    target = rng.randint(min_chars, max_chars)
    parts: List[str] = []
    size = 0
    while size < target:
        word = rng.choice(_SPICE) if rng.random() < 0.12 else rng.choice(_WORDS)
        parts.append(word)
        size += len(word) + 1
    text = " ".join(parts)
    return text[:1].upper() + text[1:] + rng.choice((".", ".", "!", ":", "\n", ".\n\n"))


def _chunk_text(rng: random.Random, max_pieces: int = 4) -> str:
    return "".join(rng.choice(_CHUNK_PIECES) for _ in range(rng.randint(1, max_pieces)))


def _lines(rng: random.Random, n_bytes: int, pool: List[str], cost: List[int]) -> str:
    """Lines from ``pool`` whose JSON string encoding is about ``n_bytes`` long."""
    out: List[str] = []
    total = 2
    count = len(pool)
    randbelow = rng.randrange
    while total < n_bytes:
        i = randbelow(count)
        out.append(pool[i])
        total += cost[i]
    return "\n".join(out)


def _code(rng: random.Random, n_bytes: int) -> str:
    return _lines(rng, n_bytes, _CODE, _CODE_COST)


def _output(rng: random.Random, n_bytes: int) -> str:
    return _lines(rng, n_bytes, _OUTPUT_LINES, _OUTPUT_COST)


def _path(rng: random.Random) -> str:
    return f"{_ROOT}/{rng.choice(_DIRS)}/{rng.choice(_FILES)}"


def _size(rng: random.Random, low: int, high: int) -> int:
    """Log-uniform integer in [low, high]: many small results, a few big ones."""
    return int(low * (high / low) ** rng.random())


class _Ids:
    """Request ids and tool-call ids of one connection (request ids never repeat)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self._next = itertools.count(1)

    def request(self) -> int:
        return next(self._next)

    def tool_call(self) -> str:
        return f"toolu_{self.rng.getrandbits(96):024x}"

    def message(self) -> str:
        return f"msg_{self.rng.getrandbits(64):016x}"

    def session(self) -> str:
        return f"sess_{self.rng.getrandbits(64):016x}"


def _interleave(rng: random.Random, sessions: List[str], turn: Callable[[str], Iterator[bytes]]) -> Iterator[bytes]:
    """Interleave endless prompt turns of several sessions, one frame at a time."""
    running = {sid: turn(sid) for sid in sessions}
    while True:
        sid = rng.choice(sessions)
        frame = next(running[sid], None)
        if frame is None:
            running[sid] = turn(sid)
            frame = next(running[sid])
        yield frame


# ---------------------------------------------------------------------------------------------
# Profile "mixed" (v1)

_V1_TOOLS = (
    ["read_file"] * 25
    + ["edit_file"] * 18
    + ["grep"] * 12
    + ["terminal"] * 15
    + ["find_path"] * 5
    + ["list_directory"] * 5
    + ["fetch"] * 4
    + ["web_search"] * 3
    + ["thinking"] * 3
    + ["todo_write"] * 8
)
_EXTRA_KINDS = {"todo_write": "think"}


def _mixed(rng: random.Random) -> Iterator[bytes]:
    ids = _Ids(rng)
    init_id = ids.request()
    yield B.request(
        init_id,
        "initialize",
        {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
            "clientInfo": {"name": "zed", "title": "Zed", "version": "0.181.2"},
        },
    )
    yield B.response(
        init_id,
        {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": True, "promptCapabilities": {"image": True, "embeddedContext": True}},
            "authMethods": [],
            "agentInfo": {"name": "acme-agent", "version": "1.4.0"},
        },
    )
    sessions = []
    for _ in range(rng.randint(3, 4)):
        sid = ids.session()
        new_id = ids.request()
        yield B.request(new_id, "session/new", {"cwd": _ROOT, "mcpServers": []})
        yield B.response(new_id, {"sessionId": sid})
        sessions.append(sid)
    yield from _interleave(rng, sessions, lambda sid: _v1_turn(rng, ids, sid))


def _v1_turn(rng: random.Random, ids: _Ids, sid: str) -> Iterator[bytes]:
    prompt_id = ids.request()
    yield B.request(
        prompt_id, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": _words(rng, 20, 240)}]}
    )
    for _ in range(rng.randint(0, 5)):
        yield B.message_chunk(sid, _words(rng, 20, 160), kind="agent_thought_chunk")
    for _ in range(rng.randint(0, 4)):
        for _ in range(rng.randint(0, 2)):
            yield B.message_chunk(sid, _chunk_text(rng, 10))
        yield from _v1_tool(rng, ids, sid)
    for _ in range(rng.randint(1, 8)):
        yield B.message_chunk(sid, _chunk_text(rng, 10))
    stop = "end_turn"
    if rng.random() < 0.05:
        yield B.notification("session/cancel", {"sessionId": sid})
        stop = "cancelled"
    elif rng.random() < 0.02:
        stop = "max_tokens"
    yield B.response(prompt_id, {"stopReason": stop})


def _v1_tool(rng: random.Random, ids: _Ids, sid: str) -> Iterator[bytes]:
    name = rng.choice(_V1_TOOLS)
    kind = B.tool_kind(name, _EXTRA_KINDS)
    tcid = ids.tool_call()
    path = _path(rng)
    line = rng.randint(1, 900)
    needs_permission = False
    result: Dict[str, Any] = {}
    if name == "read_file":
        raw_input: object = {"path": path, "start_line": line, "end_line": line + rng.randint(10, 80)}
        title = f"Read {path[len(_ROOT) + 1 :]}"
        locations = [B.location(path, line)]
        result["content"] = [B.text_content(_code(rng, _size(rng, 300, 7500)))]
    elif name == "edit_file":
        old = _code(rng, _size(rng, 120, 2800))
        new = _code(rng, _size(rng, 120, 2800))
        raw_input = {"path": path, "old_string": old[:80], "new_string": new[:80]}
        title = f"Edit {path[len(_ROOT) + 1 :]}"
        locations = [B.location(path, line)]
        needs_permission = rng.random() < 0.5
        result["content"] = [B.diff_content(path, new, old if rng.random() < 0.85 else None)]
    elif name in ("grep", "find_path"):
        pattern = rng.choice(["TODO", "fn parse", "sessionId", "naïve", "\\bimport\\b"])
        raw_input = {"pattern": pattern, "path": _ROOT}
        title = f"Search for `{pattern}`"
        locations = []
        result["content"] = [B.text_content(_output(rng, _size(rng, 150, 3000)))]
        result["raw_output"] = {"matches": rng.randint(0, 40), "truncated": rng.random() < 0.1}
    elif name == "terminal":
        command = rng.choice(_COMMANDS)
        raw_input = {"command": command, "cwd": _ROOT}
        title = f"Run `{command}`"
        locations = []
        needs_permission = rng.random() < 0.6
        out = _output(rng, _size(rng, 150, 6000))
        result["content"] = [B.text_content(out)]
        result["raw_output"] = {"exitCode": 0, "stdout": out[:120], "stderr": ""}
    elif name == "list_directory":
        raw_input = {"path": f"{_ROOT}/{rng.choice(_DIRS)}"}
        title = f"List {raw_input['path']}"
        locations = [B.location(raw_input["path"])]
        result["content"] = [B.text_content("\n".join(rng.sample(_FILES, rng.randint(2, 8))))]
    elif name in ("fetch", "web_search"):
        url = rng.choice(_URLS)
        raw_input = {"url": url} if name == "fetch" else {"query": _words(rng, 10, 40)}
        title = f"Fetch {url}" if name == "fetch" else "Search the web"
        locations = []
        result["content"] = [B.text_content(_words(rng, 300, 4000))]
    elif name == "thinking":
        raw_input = {"thought": _words(rng, 40, 200)}
        title = "Thinking"
        locations = []
    else:  # todo_write
        statuses = ["pending", "in_progress", "completed", "completed", "cancelled"]
        raw_input = {
            "todos": [
                {"content": _words(rng, 10, 50), "status": rng.choice(statuses), "activeForm": "Working"}
                for _ in range(rng.randint(2, 6))
            ]
        }
        title = "Update todos"
        locations = []

    fields: Dict[str, object] = {"kind": kind, "status": "pending", "raw_input": raw_input}
    if locations:
        fields["locations"] = locations
    yield B.tool_call(sid, tcid, title, **fields)

    if name == "todo_write":
        entries = B.todo_plan_entries(raw_input)
        if entries is not None:
            yield B.plan(sid, entries)

    if needs_permission:
        request_id = ids.request()
        yield B.request_permission(request_id, sid, {"toolCallId": tcid, "title": title, "kind": kind}, _OPTIONS)
        choice = rng.random()
        if choice < 0.1:
            yield B.permission_response(request_id, cancelled=True)
            yield B.tool_call_update(sid, tcid, status="failed")
            return
        option = "reject_once" if choice < 0.2 else rng.choice(("allow_once", "allow_always"))
        yield B.permission_response(request_id, option)
        if option == "reject_once":
            yield B.failed_tool_call_update(sid, tcid, "The user rejected this tool call.")
            return

    yield B.tool_call_update(sid, tcid, status="in_progress")
    if rng.random() < 0.06:
        error = rng.choice(
            ["No such file or directory (os error 2)", "Command exited with code 1", "Timed out after 30s"]
        )
        yield B.failed_tool_call_update(sid, tcid, error, raw_output={"exitCode": 1, "stderr": error})
        return
    yield B.tool_call_update(sid, tcid, status="completed", **result)


# ---------------------------------------------------------------------------------------------
# Profile "large" (v1)


def _large(rng: random.Random) -> Iterator[bytes]:
    ids = _Ids(rng)
    sessions = [ids.session() for _ in range(2)]
    while True:
        sid = rng.choice(sessions)
        tcid = ids.tool_call()
        target = min(LARGE_MAX_BYTES - 512, int(LARGE_MIN_BYTES + 48000 * rng.betavariate(1.2, 2.8)))
        pick = rng.random()
        if pick < 0.45:  # a big file read
            frame = B.tool_call_update(sid, tcid, status="completed", content=[B.text_content("")])
            yield B.tool_call_update(
                sid, tcid, status="completed", content=[B.text_content(_code(rng, target - len(frame)))]
            )
        elif pick < 0.7:  # command output, in content and rawOutput
            raw = {"exitCode": rng.choice((0, 0, 0, 1)), "stdout": "", "stderr": ""}
            frame = B.tool_call_update(sid, tcid, status="completed", content=[B.text_content("")], raw_output=raw)
            room = target - len(frame)
            out = _output(rng, room * 3 // 5)
            raw["stdout"] = _output(rng, room * 2 // 5)
            yield B.tool_call_update(sid, tcid, status="completed", content=[B.text_content(out)], raw_output=raw)
        elif pick < 0.9:  # a whole-file diff
            path = _path(rng)
            frame = B.tool_call(
                sid,
                tcid,
                f"Edit {path}",
                kind="edit",
                status="completed",
                content=[B.diff_content(path, "", "")],
                locations=[B.location(path, 1)],
            )
            room = target - len(frame)
            old = _code(rng, room // 2)
            new = _code(rng, room - room // 2)
            yield B.tool_call(
                sid,
                tcid,
                f"Edit {path}",
                kind="edit",
                status="completed",
                content=[B.diff_content(path, new, old)],
                locations=[B.location(path, 1)],
            )
        else:  # a fetched page
            url = rng.choice(_URLS)
            raw_input = {"url": url, "format": "markdown"}
            frame = B.tool_call_update(sid, tcid, status="completed", raw_input=raw_input, content=[B.text_content("")])
            parts: List[str] = []
            size = len(frame)
            while size < target:
                sentence = _words(rng, 40, 400)
                parts.append(sentence)
                size += len(json.dumps(sentence, ensure_ascii=False).encode()) - 1
            yield B.tool_call_update(
                sid, tcid, status="completed", raw_input=raw_input, content=[B.text_content(" ".join(parts))]
            )


# ---------------------------------------------------------------------------------------------
# Profile "tiny" (v1)


def _tiny(rng: random.Random) -> Iterator[bytes]:
    sessions = [f"s{i}" for i in range(1, 5)]
    chunk = B.message_chunk
    while True:
        sid = rng.choice(sessions)
        pick = rng.random()
        if pick < 0.8:
            yield chunk(sid, _chunk_text(rng, 3))
        elif pick < 0.95:
            yield chunk(sid, _chunk_text(rng, 3), kind="agent_thought_chunk")
        else:
            yield chunk(sid, _chunk_text(rng, 3), kind="user_message_chunk")


# ---------------------------------------------------------------------------------------------
# Profile "v2"

_ANSI_LINES = [
    b"\x1b[1m\x1b[32m   Compiling\x1b[0m acp-fast v0.1.0\r\n",
    b"running 42 tests\r\n",
    b"test framing::resync ... \x1b[32mok\x1b[0m\r\n",
    b"test message::batch ... \x1b[31mFAILED\x1b[0m\r\n",
    "caf\u00e9 \u2713 \u65e5\u672c\u8a9e\r\n".encode(),
    b"\x1b[2K\r[=====>    ] 52%",
    b"\x1b[2K\r[==========] 100%\r\n",
    b"warning: field `raw` is never read\r\n",
    b"\xe2\x9c\x93 all good\n",
    b"\xe6\x97\xa5",  # a UTF-8 sequence cut across chunks
]

_V2_TOOLS = (
    ["read_file"] * 25 + ["edit_file"] * 20 + ["terminal"] * 30 + ["grep"] * 10 + ["fetch"] * 5 + ["todo_write"] * 10
)


def _v2(rng: random.Random) -> Iterator[bytes]:
    ids = _Ids(rng)
    init_id = ids.request()
    yield B.request(
        init_id,
        "initialize",
        {"protocolVersion": 2, "info": {"name": "zed", "title": "Zed", "version": "0.190.0"}, "capabilities": {}},
    )
    yield B.response(
        init_id,
        {
            "protocolVersion": 2,
            "info": {"name": "acme-agent", "version": "2.0.0-alpha.8"},
            "capabilities": {},
            "authMethods": [],
        },
    )
    sessions = []
    for _ in range(rng.randint(2, 3)):
        sid = ids.session()
        new_id = ids.request()
        yield B.request(new_id, "session/new", {"cwd": _ROOT})
        yield B.response(new_id, {"sessionId": sid})
        sessions.append(sid)
    yield from _interleave(rng, sessions, lambda sid: _v2_turn(rng, ids, sid))


def _state(sid: str, state: str, stop_reason: Optional[str] = None) -> bytes:
    update: Dict[str, object] = {"sessionUpdate": "state_update", "state": state}
    if stop_reason is not None:
        update["stopReason"] = stop_reason
    return B.session_update(sid, update)


def _v2_turn(rng: random.Random, ids: _Ids, sid: str) -> Iterator[bytes]:
    prompt_id = ids.request()
    prompt = [{"type": "text", "text": _words(rng, 20, 200)}]
    yield B.request(prompt_id, "session/prompt", {"sessionId": sid, "prompt": prompt})
    # v2: the answer names the user message the prompt became, which the agent echoes
    user = ids.message()
    yield B.response(prompt_id, {"messageId": user})
    yield B.session_update(sid, {"sessionUpdate": "user_message", "messageId": user, "content": prompt})
    yield _state(sid, "running")
    thought = ids.message()
    for _ in range(rng.randint(0, 4)):
        yield B.message_chunk(sid, _words(rng, 20, 160), kind="agent_thought_chunk", message_id=thought)
    message = ids.message()
    for _ in range(rng.randint(0, 4)):
        for _ in range(rng.randint(0, 2)):
            yield B.message_chunk(sid, _chunk_text(rng, 10), message_id=message)
        yield from _v2_tool(rng, ids, sid)
    for _ in range(rng.randint(1, 8)):
        yield B.message_chunk(sid, _chunk_text(rng, 10), message_id=message)
    yield _state(sid, "idle", "cancelled" if rng.random() < 0.05 else "end_turn")


def _v2_diff(path: str, old: str, new: str) -> Dict[str, object]:
    rel = path.lstrip("/")
    minus = "".join(f"-{line}\n" for line in old.split("\n"))
    plus = "".join(f"+{line}\n" for line in new.split("\n"))
    patch = (
        f"diff --git a/{rel} b/{rel}\n--- a/{rel}\n+++ b/{rel}\n"
        f"@@ -1,{old.count(chr(10)) + 1} +1,{new.count(chr(10)) + 1} @@\n{minus}{plus}"
    )
    return {
        "type": "diff",
        "changes": [{"operation": "modify", "path": path, "fileType": "text"}],
        "patch": {"format": "git_patch", "text": patch},
    }


def _v2_tool(rng: random.Random, ids: _Ids, sid: str) -> Iterator[bytes]:
    name = rng.choice(_V2_TOOLS)
    kind = B.tool_kind(name, _EXTRA_KINDS)
    tcid = ids.tool_call()
    path = _path(rng)
    upd = B.tool_call_update
    if name == "terminal":
        command = rng.choice(_COMMANDS)
        title = f"Run `{command}`"
        raw_input: Dict[str, Any] = {"command": command, "cwd": _ROOT}
    elif name == "edit_file":
        title = f"Edit {path[len(_ROOT) + 1 :]}"
        raw_input = {"path": path}
    elif name == "todo_write":
        title = "Update todos"
        statuses = ["pending", "in_progress", "completed", "cancelled"]
        raw_input = {
            "todos": [
                {"content": _words(rng, 10, 50), "status": rng.choice(statuses)} for _ in range(rng.randint(2, 5))
            ]
        }
    else:
        title = f"{name.replace('_', ' ').capitalize()} {path[len(_ROOT) + 1 :]}"
        raw_input = {"path": path}
    yield upd(
        sid,
        tcid,
        protocol_version=2,
        title=title,
        kind=kind,
        status="pending",
        locations=[B.location(path, rng.randint(1, 500))] if name != "terminal" else [],
        raw_input=raw_input,
    )

    if name in ("terminal", "edit_file") and rng.random() < 0.5:
        request_id = ids.request()
        yield B.request_permission(
            request_id,
            sid,
            {"toolCallId": tcid, "title": title, "kind": kind},
            _OPTIONS,
            protocol_version=2,
            title=f"Allow {title}?",
        )
        if rng.random() < 0.1:
            yield B.permission_response(request_id, option_id="reject_once")
            yield upd(sid, tcid, protocol_version=2, status="cancelled", raw_output=None, locations=None)
            return
        yield B.permission_response(request_id, option_id=rng.choice(("allow_once", "allow_always")))

    # in progress; clear a stale output and metadata from an earlier attempt
    yield upd(sid, tcid, protocol_version=2, status="in_progress", raw_output=None, meta=None)

    if name == "terminal":
        tid = f"term_{rng.getrandbits(32):08x}"
        yield upd(sid, tcid, protocol_version=2, content=[B.terminal_content(tid)])
        yield B.terminal_update(sid, tid, command=raw_input["command"], cwd=_ROOT)
        output = b""
        for _ in range(rng.randint(1, 8)):
            data = b"".join(rng.choice(_ANSI_LINES) for _ in range(rng.randint(2, 24)))
            output += data
            yield B.terminal_output_chunk(sid, tid, data)
        code = 0 if rng.random() < 0.85 else 1
        if rng.random() < 0.3:
            yield B.terminal_update(sid, tid, output=output[-600:], exit_status={"exitCode": code, "signal": None})
        else:
            yield B.terminal_update(sid, tid, exit_status={"exitCode": code})
        status = "completed" if code == 0 else "failed"
        yield upd(sid, tcid, protocol_version=2, status=status, raw_output={"exitCode": code})
        return
    if name == "edit_file":
        yield B.tool_call_content_chunk(
            sid, tcid, _v2_diff(path, _code(rng, _size(rng, 100, 2000)), _code(rng, _size(rng, 100, 2000)))
        )
    elif name == "todo_write":
        entries = B.todo_plan_entries(raw_input, protocol_version=2)
        if entries is not None:
            yield B.plan_update(sid, "main", entries)
    else:
        for _ in range(rng.randint(1, 4)):
            yield B.tool_call_content_chunk(sid, tcid, B.text_content(_code(rng, _size(rng, 150, 3200))))
    if rng.random() < 0.07:
        # the agent retries from scratch: content and title cleared, then failed
        yield upd(sid, tcid, protocol_version=2, content=None, title=None)
        yield B.failed_tool_call_update(sid, tcid, "Tool crashed; retry aborted.", protocol_version=2)
        return
    yield upd(sid, tcid, protocol_version=2, status="completed", raw_output={"ok": True})


_FACTORIES: Dict[str, Callable[[random.Random], Iterator[bytes]]] = {
    "mixed": _mixed,
    "large": _large,
    "tiny": _tiny,
    "v2": _v2,
}
