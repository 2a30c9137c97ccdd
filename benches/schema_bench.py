"""Strict schema validation (issue 17): acp-fast against jsonschema-rs and jsonschema.

    python benches/schema_bench.py [--frames N] [--rounds R] [--profiles mixed,v2]

Each contender judges every frame of an ``acp_fast.traffic`` corpus (bytes in, verdict out):

- ``acp-fast (Rust): validate_schema`` — one call per frame, the request's method given for a
  response (the whole message is checked: envelope, params / result, the v2 rule on custom values);
- ``acp-fast (Rust): SchemaValidator.validate`` — the same, the methods of responses found by the
  validator itself, plus the rules that need the conversation;
- ``acp-fast (fallback): validate_schema`` — the pure-Python backend (its engine: jsonschema-rs
  when installed, else jsonschema);
- ``jsonschema-rs`` and ``jsonschema`` — ``orjson.loads`` of the frame, then ``is_valid`` of the
  params or result against the method's definition (a validator per definition, built before
  timing): less work than acp-fast's, which also checks the envelope.

Rounds interleave the contenders; a contender's figure is its median round; GC off while timing.
Slow contenders (jsonschema) run on the first ``--slow-frames`` frames only.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from importlib import resources
from typing import Any, Callable, Dict, List, Optional, Tuple

import orjson

import acp_fast
from acp_fast import _fallback, traffic

Corpus = List[Tuple[bytes, Optional[str]]]


def corpus(profile: str, n: int) -> Corpus:
    """(frame, method of the request a response answers) of a profile."""
    pending: Dict[str, str] = {}
    out: Corpus = []
    for frame in traffic.frames(profile, n, seed=1):
        msg = json.loads(frame)
        hint = None
        if "method" in msg and "id" in msg:
            pending[json.dumps(msg["id"])] = msg["method"]
        elif "id" in msg:
            hint = pending.pop(json.dumps(msg["id"]), None)
        out.append((frame, hint))
    return out


def definitions(version: int) -> Tuple[Dict[str, Any], Dict[str, str], Dict[str, str]]:
    text = (resources.files("acp_fast") / "schema" / f"v{version}" / "schema.json").read_text(encoding="utf-8")
    root = json.loads(text)
    params: Dict[str, str] = {}
    results: Dict[str, str] = {}
    for name, d in root["$defs"].items():
        method = d.get("x-method")
        if method is None:
            continue
        if name.endswith("Response"):
            results[method] = name
        else:
            params[method] = name
    return root, params, results


def by_definition(version: int, data: Corpus, make: Callable[[Dict[str, Any]], Any]) -> Callable[[], int]:
    """The jsonschema-rs / jsonschema contender: parse, then the definition of the part."""
    root, params, results = definitions(version)
    validators: Dict[str, Any] = {}
    work: List[Tuple[Any, str, bytes]] = []
    for frame, hint in data:
        msg = json.loads(frame)
        if "method" in msg:
            name, part = params[msg["method"]], "params"
        elif "result" in msg:
            name, part = results[hint or ""], "result"
        else:
            name, part = "Error", "error"
        if name not in validators:
            validators[name] = make({"$ref": f"#/$defs/{name}", "$defs": root["$defs"]})
        work.append((validators[name].is_valid, part, frame))
    loads = orjson.loads

    def run() -> int:
        bad = 0
        for is_valid, part, frame in work:
            if not is_valid(loads(frame)[part]):
                bad += 1
        return bad

    return run


def per_frame(validate: Callable[..., List[Any]], version: int, data: Corpus) -> Callable[[], int]:
    def run() -> int:
        bad = 0
        for frame, hint in data:
            if validate(frame, protocol_version=version, method=hint):
                bad += 1
        return bad

    return run


def conversation(cls: Any, version: int, data: Corpus) -> Callable[[], int]:
    frames = [frame for frame, _ in data]

    def run() -> int:
        validator = cls(protocol_version=version)
        return sum(1 for frame in frames if validator.validate(frame))

    return run


def contenders(profile: str, n: int, slow: int) -> List[Tuple[str, int, Callable[[], int]]]:
    version = traffic.PROTOCOL_VERSIONS[profile]
    data = corpus(profile, n)
    few = data[:slow]
    out = [
        ("acp-fast (Rust): validate_schema", n, per_frame(acp_fast.validate_schema, version, data)),
        ("acp-fast (Rust): SchemaValidator.validate", n, conversation(acp_fast.SchemaValidator, version, data)),
        ("acp-fast (fallback): validate_schema", slow, per_frame(_fallback.validate_schema, version, few)),
    ]
    try:
        import jsonschema_rs

        out.append(
            (
                "jsonschema-rs: orjson.loads + is_valid",
                n,
                by_definition(version, data, jsonschema_rs.Draft202012Validator),
            )
        )
    except ImportError:
        print("jsonschema-rs is not installed: skipped", file=sys.stderr)
    import jsonschema

    out.append(
        ("jsonschema: orjson.loads + is_valid", slow, by_definition(version, few, jsonschema.Draft202012Validator))
    )
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=20000)
    parser.add_argument("--slow-frames", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--profiles", default="mixed,v2")
    args = parser.parse_args(argv)
    assert acp_fast.BACKEND == "rust", "build the native module first"
    print(f"acp-fast {acp_fast.__version__} ({acp_fast._backend.build_profile}), Python {sys.version.split()[0]}")
    for profile in args.profiles.split(","):
        runs = contenders(profile, args.frames, args.slow_frames)
        times: Dict[str, List[float]] = {name: [] for name, _, _ in runs}
        for name, _, run in runs:
            assert run() == 0, f"{name} found invalid frames in generated traffic"
        gc.disable()
        try:
            for _ in range(args.rounds):
                for name, count, run in runs:
                    t = time.perf_counter()
                    run()
                    times[name].append((time.perf_counter() - t) / count)
        finally:
            gc.enable()
        base = (
            statistics.median(times["jsonschema-rs: orjson.loads + is_valid"])
            if "jsonschema-rs: orjson.loads + is_valid" in times
            else None
        )
        print(f"\n{profile} ({args.frames} frames; slow contenders {args.slow_frames}), median of {args.rounds} rounds")
        print("| contender | per frame | messages/s | vs jsonschema-rs |\n|---|---:|---:|---:|")
        for name, _, _ in runs:
            per = statistics.median(times[name])
            ratio = f"{base / per:.2f}x" if base else "-"
            print(f"| {name} | {per * 1e9:,.0f} ns | {1 / per:,.0f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
