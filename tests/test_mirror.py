"""The fallback mirrors rust/ file for file and function for function (docs/DESIGN.md section 1).

``MAP`` below is the module map: each row pairs Rust sources (a core module, and the parts of the
binding ``rust/python/`` that the fallback file also does) with one fallback file. For each row
the test lists the functions of both sides in order and requires the two lists to be equal, but
for the names ``ALLOWED`` says one side has on purpose (each with its reason). Rows that another
change is rewriting are in ``PENDING`` and not compared.

The rule, for both sides (a name counts once per row, where it first appears):

* Rust: every ``fn`` at the top level of a file or directly in an inherent ``impl`` block (its
  methods, ``#[pymethods]`` included), in file order; a row's Rust list is its sources' lists one
  after the other. Not listed: functions in ``impl Trait for Type`` blocks (they fill in an
  interface, std's or the crate's own ``Sink``: the names are the trait's), declarations in
  ``trait`` blocks, functions nested in a function body or in an ``extern`` block, items marked
  ``#[cfg(test)]`` (the ``mod tests`` blocks) and the ``tests.rs`` files. A source
  ``path::A,B`` takes only the functions of ``impl A`` / ``impl B`` blocks and the free functions
  named ``A`` or ``B`` (a binding file that serves several fallback files).
* Python: the module-level ``def``s and the methods of the module-level classes (not of the
  ``Protocol`` classes, the type checker's interfaces, as Rust's ``trait`` blocks), in file order;
  leading underscores are dropped (``_feed`` is Rust's ``feed``), ``__init__`` and ``__new__``
  are ``new`` (PyO3's ``#[new]``), other dunders stay as they are.

It also checks that every file of rust/ and of ``_fallback/`` is in ``MAP`` (and every Rust
function in a row), that a file without a counterpart is allowed as one-sided with its reason,
and that the table of docs/DESIGN.md section 1 is the one ``python tests/test_mirror.py --map``
prints from ``MAP``.
"""

from __future__ import annotations

import ast
import difflib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FALLBACK = "python/acp_fast/_fallback"
DESIGN = ROOT / "docs" / "DESIGN.md"

# --------------------------------------------------------------------------------------------
# The module map: (Rust sources, fallback file under _fallback/ or None, what it does).
# --------------------------------------------------------------------------------------------

FRAMES = "rust/python/frames.rs"
CONVERT = "rust/python/convert.rs"
MESSAGE_BINDING = "PyMessage,line_bytes,concat_bytes,Source,text,id_value,new_message,frame_object,object_in,source_of,surrogate_error,decode,encode"
SCHEMA_BINDING = "schema_index,schema,frame_bytes,problems,validate_schema,PySchemaValidator,register"
STRICT_BINDING = "strict_arg,strict_of,strict_setting,check_results,sent,schema_error"
WRITER = "type_name,surrogate_failure,surrogate_error,write_str_object,str_utf8,Writer,BytesOut,dumps_bytes"

MAP: list[tuple[list[str], str | None, str]] = [
    (["rust/lib.rs"], "__init__.py", "the crate root / the backend's package"),
    (["rust/python/mod.rs"], None, "the binding's module: GC pause, per-object lock, registration"),
    (["rust/python/args.rs"], None, "the binding's argument types and their messages"),
    (
        ["rust/error.rs", "rust/python/errors.rs"],
        "error.py",
        "error kinds, descriptions, line/column from a byte offset",
    ),
    (["rust/scanner/mod.rs"], "scanner/__init__.py", "the JSON grammar (DESIGN 2): tokens, the sink, the document"),
    (["rust/scanner/cursor.rs"], "scanner/cursor.py", "offsets, whitespace, the first error"),
    (["rust/scanner/grammar.rs"], "scanner/grammar.py", "values: arrays, objects, literals"),
    (["rust/scanner/strings.rs"], "scanner/strings.py", "strings: scanning, escapes, unescaping"),
    (["rust/scanner/numbers.rs"], "scanner/numbers.py", "numbers: the lexeme and its range"),
    (["rust/scanner/index.rs"], None, "the SIMD index of special bytes"),
    ([], "scanner/members.py", "members and items of a value known to be valid"),
    (
        [f"{CONVERT}::PySink,Known,build,build_known,build_span", f"{FRAMES}::loads"],
        "scanner/build.py",
        "building values, `loads`",
    ),
    (["rust/encoder.rs", f"{CONVERT}::{WRITER}", f"{FRAMES}::dumps"], "encoder.py", "JSON writing rules, `dumps`"),
    (
        ["rust/message.rs", f"{FRAMES}::{MESSAGE_BINDING}"],
        "message.py",
        "JSON-RPC envelope: `Message`, `decode`, `encode`",
    ),
    (["rust/framing.rs", "rust/python/framing.rs"], "framing.py", "newline framing (`Framer`), the frame limits"),
    (["rust/decoder.rs", f"{FRAMES}::PyFrameDecoder"], "decoder.py", "`FrameDecoder`: the framer's lines, parsed"),
    (["rust/engine.rs"], "engine.py", "the per-frame loop: parse, strict check, apply, batches"),
    (["rust/columns.rs", "rust/python/arrow.rs"], "columns.py", "columnar frames (`FrameColumns`)"),
    (["rust/toolcalls.rs", "rust/python/toolcalls.rs"], "toolcalls.py", "tool calls as columns (`ToolCallColumns`)"),
    (["rust/relay.rs", "rust/python/relay.rs"], None, "the proxy's native relay (`_Relay`)"),
    (["rust/record.rs"], None, "`--record` lines and `--trace` events of the native relay"),
    (["rust/coalesce.rs", "rust/python/coalesce.rs"], "coalesce.py", "`--coalesce`: tool-call updates held and merged"),
    (
        ["rust/schema/mod.rs", f"rust/python/schema.rs::{SCHEMA_BINDING}"],
        "schema/__init__.py",
        "strict validation (`SchemaValidator`)",
    ),
    (
        ["rust/schema/stream.rs", f"rust/python/schema.rs::{STRICT_BINDING}"],
        "schema/stream.py",
        "strict checking of a stream (`strict_schema`)",
    ),
    (["rust/schema/compile.rs"], "schema/compile.py", "schema.json into a table of nodes"),
    (["rust/schema/check.rs"], "schema/check.py", "the verdict of a value against a node"),
    (["rust/schema/explain.rs"], "schema/explain.py", "the problems: where and why"),
    (["rust/schema/rules.rs"], "schema/rules.py", "the protocol rules the schema cannot express"),
    (["rust/schema/tape.rs"], None, "a parsed message as a tape"),
    (
        ["rust/python/state/methods.rs", "rust/state/mod.rs", "rust/python/state.rs"],
        "state/__init__.py",
        "the state engine (`ToolCallStore`, DESIGN 7)",
    ),
    (["rust/state/records.rs", "rust/python/records.rs"], "state/records.py", "what is stored, `Change`, the records"),
    (["rust/state/ordered_map.rs"], None, "an insertion-ordered map"),
    (["rust/state/document.rs"], None, "the writer the state document and the records go to (`Sink`)"),
    (["rust/state/rules.rs"], "state/rules.py", "the update table, read from the schema's x-state rules"),
    (["rust/state/read.rs"], "state/read.py", "reading a frame's members, -32602 errors, base64"),
    (["rust/state/tool_call.rs"], "state/tool_call.py", "tool calls"),
    (["rust/state/terminal.rs"], "state/terminal.py", "terminals"),
    (["rust/state/plan.rs"], "state/plan.py", "plans"),
    (["rust/state/entity.rs"], "state/entity.py", "entities: the x-state rules applied as written"),
    (["rust/state/permission.rs"], "state/permission.py", "permission requests, cancellation"),
    (["rust/state/request.rs"], "state/request.py", "requests followed through their answers (DESIGN 7.10)"),
    (["rust/state/evict.rs"], "state/evict.py", "the bounds"),
    (["rust/state/checkpoint.rs"], "state/checkpoint.py", "checkpoints: `to_json`, `from_json`"),
    (["rust/state/restore.rs"], "state/restore.py", "reading a checkpoint"),
    (["rust/python/strcache.rs"], None, "caches of short Python strings"),
    (["rust/python/untracked.rs"], None, "`Message` memory outside the cyclic GC"),
]

PENDING = {
    # file: reason. A row with one of these files is not compared (yet).
}

ALL = "*"
ORDER = "order"

ALLOWED: list[tuple[str, str | list[str], str]] = [
    # (file, what, why): ``what`` is the names only that side has (``name``, or ``Owner.name``
    # for one class's or impl's), "*" (the whole file is one-sided) or "order" (the row's common
    # names may come in another order). Keep it short.
    ("rust/lib.rs", ["release_freed_memory", "drop_buffer"], "giving freed memory back to the OS: mimalloc's"),
    ("rust/python/mod.rs", ALL, "the binding's plumbing; the fallback's lock is framing.py's `exclusive`"),
    (
        "rust/engine.rs",
        ["new", "store", "strict", "line", "max_frame_bytes", "keep_frames", "take_kept", "framed"],
        "the Engine's own fields and accessors: the ToolCallStore holds them here, the functions take it",
    ),
    (
        "engine.py",
        ["collect", "entries", "batch_results"],
        "the outcomes are Python objects here (Rust's binding builds them and loops over a decoded Batch)",
    ),
    ("rust/decoder.rs", ["decode", "framer"], "the core decoder's parse and its framer: the Framer is the class here"),
    (
        "rust/python/frames.rs",
        ["PyFrameDecoder.collect", "PyFrameDecoder.collect_in"],
        "building the result list from the core's events; one loop in `feed` here",
    ),
    ("rust/relay.rs", ALL, "the native relay; the fallback's is the proxy's Python loop (proxy/_relay.py)"),
    ("rust/python/relay.rs", ALL, "as rust/relay.rs"),
    (
        "rust/record.rs",
        ALL,
        "mirrored by recording.py `RecordWriter.line` / `too_large` and trace.py `events` / `_event` / `route`",
    ),
    (
        "rust/coalesce.rs",
        ["Class.of", "find", "key", "session_of", "Coalescer.oldest"],
        "the core scanner's walk, and byte keys for (session, tool call): tuples and dict order there",
    ),
    ("rust/python/coalesce.rs", ALL, "the public methods: the fallback's `Coalescer` has them in coalesce.py"),
    (
        "coalesce.py",
        [
            "check_protocol",
            "push",
            "due",
            "flush",
            "deadline",
            "protocol",
            "ms",
            "held_bytes",
            "updates_in",
            "frames_out",
        ],
        "the public methods (rust/python/coalesce.rs there)",
    ),
    ("coalesce.py", "order", "the public methods of the class come first here"),
    (
        "rust/schema/stream.rs",
        ["fixed", "sizes", "message"],
        "the fields are read directly here; the error's message is built in `schema_error`",
    ),
    (
        "rust/schema/mod.rs",
        ["as_str", "error", "render"],
        "problems are problems.py's SchemaProblem here (built by explain.py's `problem` and `render`)",
    ),
    (
        "rust/python/schema.rs",
        ["schema_index", "frame_bytes", "problems", "register"],
        "the compiled schemas by index, the frame's bytes, SchemaProblem objects, the module's registration",
    ),
    (
        "schema/__init__.py",
        ["engine", "engine_name", "ref", "leaf", "envelope", "is_valid", "version", "parse"],
        "the verdict on a message is jsonschema-rs's (or jsonschema's) here, on the envelopes built for it",
    ),
    (
        "schema/__init__.py",
        ["draft_index"],
        "the `draft` argument's check, which is the binding's `Draft` (rust/python/args.rs) in Rust",
    ),
    (
        "rust/state/mod.rs",
        ["of", "with_limits", "version", "fixed_version", "limits", "tool_call_count", "sessions", "session"]
        + ["session_id", "permission_at", "session_slot", "fill_members", "apply_captured", "session_update"]
        + ["defined_elsewhere", "unknown_update", "set_wrap_bare_content", "held", "session_slot_of"],
        "the core Store's accessors and dispatch: here the store is the class, its state its attributes",
    ),
    (
        "rust/python/state.rs",
        ["key_arg", "id_arg", "target_str", "action_str", "change_object", "item_object", "store", "collect"]
        + ["permission_list", "single", "apply_frame", "session", "entity_target"],
        "the binding's helpers: Change and DecodeError objects from the core's outcomes, arguments",
    ),
    (
        "rust/python/state/methods.rs",
        ["locked", "with_engine_detached"],
        "the per-object lock (framing.exclusive here)",
    ),
    (
        "state/__init__.py",
        ["check_source", "key", "limit", "unknown_update", "version", "set_negotiated", "session", "dispatch"]
        + ["draft_index"]
        + ["permission_list", "function", "ignored", "table"],
        (
            "argument checks (rust/python/args.rs) and the store's own helpers (rust: the core Store's"
            " methods; `function`, `ignored`, `table` build the dispatch dicts, Rust's `session_update`)"
        ),
    ),
    ("rust/state/document.rs", ALL, "the shapes are written once here as dicts (records.py, checkpoint.py)"),
    (
        "rust/state/records.rs",
        ["content", "title", "kind", "status", "locations", "heap_bytes", "output", "field_mut", "as_str"]
        + ["from_name", "of", "emit", "write", "counts", "new", "name", "member", "extra", "write_value"]
        + ["write_at", "members_at", "dedupe", "compact_len"],
        "typed record fields, and the records written to a Sink (document.rs); dicts of fields here",
    ),
    (
        "rust/state/records.rs",
        ["write_dumps"],
        "a stored value as `dumps(loads(value))`: the value is parsed already here",
    ),
    (
        "rust/python/records.rs",
        ["value", "text", "id_object", "build", "dict", "list", "put", "enter", "new", "tuple"],
        "PyBuilder, the Sink that builds Python objects; here the records are dicts already (`fresh`)",
    ),
    ("state/records.py", ["new", "kept", "dropped", "fresh"], "Python objects' constructors and copies"),
    (
        "state/records.py",
        ["exact_text"],
        "strings kept as received are `read.Exact` here (orjson's `default`, for `held_len` and checkpoints)",
    ),
    ("state/records.py", ORDER, "Change (the binding's PyChange, after the core's records in Rust) comes first here"),
    ("rust/state/checkpoint.rs", ["message", "repr_approx", "count_error"], "CheckpointError's text: ValueError here"),
    ("state/checkpoint.py", ["order_error"], "CheckpointError::Order's text: a ValueError here"),
    (
        "state/checkpoint.py",
        ["flag"],
        "`flag`: Rust's `Reader::flag`",
    ),
    ("rust/state/restore.rs", ["flag"], "a boolean member: checkpoint.py's `flag` (dict lookups there)"),
    ("state/checkpoint.py", ["load"], "reading the document: orjson and the scanner here"),
    (
        "rust/state/request.rs",
        ["of", "pending_key", "held_change"],
        "Method::of and the pending keys are a dict and tuples here; Changes are built with their session here",
    ),
    (
        "state/request.py",
        ["new", "utf8_len", "new_requests"],
        "Pending's constructor; the UTF-8 length of a str (rust: the unescaped text's length); an OrderedDict",
    ),
    (
        "state/checkpoint.py",
        ["entities", "entity_map"],
        "a session's (or the agent's) entities as a dict (rust: document.rs's `entities`, `entity_map`)",
    ),
    ("rust/python/args.rs", ALL, "PyO3 argument types; the fallback checks each argument where it is taken"),
    ("rust/error.rs", ["name"], "JSON types are strings here (rust: the `JsonType` enum)"),
    (
        "rust/python/errors.rs",
        ["decode_error_type", "batch_type", "decode_error_object", "decode_error", "python", "at", "into_pyerr"],
        "the public exceptions: built by `to_python` / `encode_error` here",
    ),
    ("error.py", ["__repr__", "to_python", "encode_error"], "as above"),
    ("rust/scanner/mod.rs", ["check_utf8", "validate", "parse_document"], "in grammar.py here (see its top)"),
    ("scanner/grammar.py", ["check_utf8", "validate"], "Rust's scanner/mod.rs (see the top of both)"),
    ("rust/scanner/grammar.rs", ["parse_item", "parse_array", "parse_object"], "Rust recurses; one loop here"),
    (
        "rust/scanner/cursor.rs",
        [
            "is_ws",
            "Scanner.new",
            "unindexed",
            "build_index",
            "skip_ws_slow",
            "peek",
            "expect",
            "enter",
            "leave",
            "peek_type",
        ],
        "no cursor object here: functions of (data, pos), regexes skip strings (see the top of cursor.py)",
    ),
    ("scanner/cursor.py", ["_Fail.new"], "the error leaves in an exception here (rust: `Result`)"),
    (
        "rust/scanner/strings.rs",
        ["hex_value", "unescape_into", "unescape_raw", "write_utf8", "string_equals"],
        "orjson unescapes here",
    ),
    ("rust/scanner/numbers.rs", ["number_at", "parse_f64", "parse_i64", "parse_u64"], "Python's int and float"),
    ("rust/scanner/index.rs", ALL, "the SIMD index of special bytes; regular expressions skip string bodies here"),
    ("scanner/members.py", ALL, "Rust locates members while it parses; orjson parses here"),
    ("rust/python/convert.rs", ["PySink.text", "PySink.key", "build_span"], "the sink's string cache (strcache.rs)"),
    (
        "rust/python/convert.rs",
        ["PySink.take_known", "Known.add", "Known.next_start", "build_known"],
        "`to_dict` reuses a Message's routing strings; the fallback's re-parses with orjson",
    ),
    ("scanner/build.py", ["exact", "parse_document", "parse_exact", "to_bytes"], "completing orjson's values"),
    (
        "rust/encoder.rs",
        ["descend", "write_str", "write_str_avx2", "write_str_words", "write_str_blocks", "special_avx2"]
        + ["swar_special", "write_units", "escape_at_units", "ascii_run"]
        + [
            "first_stop8",
            "special_sse2",
            "escape_at",
            "escape_at_max",
            "escape_block",
            "write_escape",
            "needs_escape",
            "write_i64",
            "write_u64",
            "write_f64",
            "zeros",
            "parse_exp",
        ],
        "the byte-level writers: orjson's here",
    ),
    (
        "rust/python/convert.rs",
        ["type_name", "surrogate_error", "str_utf8", "write_other", "write_big_int", "too_deep", "dumps_bytes"]
        + ["BytesOut.new", "BytesOut.grow", "BytesOut.finish"]
        + ["write_list", "write_items", "write_dict", "write_members"],
        "one `write` loop with a stack here (Python's recursion limit; see the top of encoder.py)",
    ),
    ("encoder.py", ["path", "default", "has_non_finite"], "orjson's hooks and checks"),
    (
        "rust/message.rs",
        ["Kind.as_str", "Span.new", "of_str", "range", "str", "shifted", "key_is", "scan_span", "Captured.new", "clear"]
        + ["scan_items", "scan_members", "is_int64", "invalid_value", "validate", "strip_line_ending"],
        "spans and the members' scan: orjson parses here, the scanner locates on the error path",
    ),
    (
        "rust/message.rs",
        ["parse_frame", "parse_line", "parse_line_captured", "parse_line_utf8", "parse_batch"],
        "decode_frame / decode_batch here, on orjson's values; the rename waits for the engine rewrite",
    ),
    (
        "rust/message.rs",
        ["parse_line_status", "parse_line_with"],
        "`params.update.status` read by the envelope walk for the columns; columns.py reads it from the message",
    ),
    (
        "rust/python/frames.rs",
        ["envelope", "raw_bytes", "value", "line_bytes", "concat_bytes", "locate", "text", "id_value", "new_message"]
        + ["frame_object", "object_in", "source_of", "surrogate_error", "PyMessage.raw", "PyMessage.line"],
        "building a Message from spans; here it keeps orjson's dict (`raw`, `line`: slots)",
    ),
    (
        "message.py",
        ["type_name", "explain", "__setattr__", "__delattr__", "Message.new", "__ne__", "refuse", "message_or_none"]
        + ["decode_batch", "decode_frame", "decode_value", "one_frame"],
        "a Python class's own protocol, and the parse on orjson's values (rust: parse_frame, new_message)",
    ),
    (
        "rust/framing.rs",
        ["max_frame_bytes_out_of_range", "max_frame_bytes_not_an_int", "is_blank", "strip_cr", "window_end", "scan"]
        + ["reuse", "give_back", "released", "finish_exact", "head_of"],
        "this Framer cuts a whole feed with bytes.split (see the top of framing.py); an oversized line's head is a slice",
    ),
    (
        "rust/python/framing.rs",
        ["push", "into_event", "collect"],
        "argument conversion and building the result list; the core Framer is the class here",
    ),
    ("framing.py", ["check_bool", "bytes_of", "_Default.new", "_Default.__repr__", "exclusive"], "Python's own"),
    ("framing.py", ["too_large_event"], "an oversized line's event tuple, which the binding builds in `collect`"),
    (
        "rust/columns.rs",
        ["Validity.push", "close", "VarColumn.push", "push_null", "push_str", "push_span", "len", "is_empty"]
        + ["no_message", "push_common", "write_id", "event"],
        "Arrow buffers filled from spans; Python lists here, and a list of events per feed",
    ),
    (
        "rust/columns.rs",
        ["Wanted.of", "select"],
        "the columns built as flags (every column is filled in Python and the table selected in `finish`)",
    ),
    (
        "rust/columns.rs",
        ["read_full_at", "file_ranges", "feed_file_in", "feed_file_here", "file_range"],
        "a file read and parsed range by range on threads; the fallback reads it in order and feeds it",
    ),
    (
        "rust/columns.rs",
        ["make_room", "frame_lines"],
        "the Arrow buffers sized from a sample of rows for the bytes to come; Python lists grow as they come",
    ),
    (
        "rust/columns.rs",
        ["Rows.parse"],
        "`params.update.status` read by the envelope walk only for its column; the fallback decodes whole",
    ),
    (
        "rust/python/arrow.rs",
        ["register", "nulls", "offsets", "utf8", "binary", "column", "record_batch", "__arrow_c_stream__", "__len__"],
        "Arrow record batches; pyarrow builds the Table here",
    ),
    ("columns.py", ["events"], "the framer's events come as a list"),
    ("rust/python/arrow.rs", ["detached_bytes"], "a buffer read in place without the GIL; `bytes_of` here"),
    (
        "rust/python/arrow.rs",
        ["borrowed_file"],
        "a descriptor borrowed as a `File` for the core's reads; `read_pieces` here checks it and uses os.pread",
    ),
    ("rust/toolcalls.rs", ["entry"], "nested maps looked up without copying the keys; dicts keyed by tuples here"),
    (
        "rust/toolcalls.rs",
        ["pipeline", "feed_ranges", "range", "feed_here", "message"],
        "a feed's lines parsed in ranges on threads, then applied; decoded and applied on one thread here",
    ),
    (
        "rust/toolcalls.rs",
        ["rows"],
        "the rows read from the store's records in place; built from `snapshot` in `finish` with `dumps` here",
    ),
    (
        "rust/python/toolcalls.rs",
        ["strings", "ints", "floats", "record_batch"],
        "Arrow arrays; pyarrow builds the Table here",
    ),
    (
        "rust/schema/compile.rs",
        ["text", "key_text", "list", "index_flags", "index_required", "prop_sig", "wrapped"] + ["only_lit"],
        "the tape's text, and the verdict's shortcuts (see the top of compile.py)",
    ),
    ("rust/schema/compile.rs", ["compile"], "compile_schema here: Python's builtin compile"),
    ("schema/compile.py", ["compile_schema", "new"], "compile_schema: see above; the node classes' constructors"),
    ("schema/compile.py", ORDER, "the node classes come first, lit/number/types are free functions here"),
    (
        "rust/schema/check.rs",
        ["is_integral", "same_number", "array", "bounds", "composite", "tag_value", "str_eq"],
        "the verdict of a whole message is jsonschema's here; this walk serves explain.py and rules.py",
    ),
    ("rust/schema/explain.rs", ["entry"], "the problems as entries of the tape"),
    ("schema/explain.py", ["render", "problem", "Explain.new"], "SchemaProblem objects: rust/python/schema.rs"),
    ("rust/schema/rules.rs", ["text", "with_limits"], "the tape's text; the limits are `new`'s arguments here"),
    ("rust/schema/tape.rs", ALL, "no tape: messages are parsed into dicts and lists here"),
    ("rust/state/ordered_map.rs", ALL, "Python's dict keeps the insertion order"),
    (
        "rust/state/rules.rs",
        ["kind"],
        "the lookup of one kind; the fallback's store builds its dispatch dicts from `table` once",
    ),
    (
        "rust/state/read.rs",
        ["text_of", "raw", "str_is", "key_bytes", "walk", "from_captured", "find_member", "find_members"]
        + ["update_member", "array_items", "bad", "bad_member", "require_session", "base64_encode", "decode_b64"],
        "Rust walks the frame's bytes; orjson's dicts here, located on the error path (see the top of read.py)",
    ),
    (
        "state/read.py",
        ["exactly", "recheck", "float", "int", "exact", "number", "plain", "Bad.new", "state_error"]
        + ["text", "string", "scan_string", "new"],
        (
            "numbers and strings that keep their text (`Exact`, `text` its plain str: rust's `text_of`), the Bad"
            " exception; `state_error` (rust: `bad`) is used by the engine rewrite"
        ),
    ),
    (
        "rust/state/tool_call.rs",
        ["dedupe_extras", "set_extra", "patch", "append_chunk"],
        "the record keeps orjson's dict",
    ),
    ("rust/state/terminal.rs", ["terminal_mut", "terminal_id", "terminal_change"], "dict lookups here"),
    (
        "rust/state/entity.rs",
        ["whole"],
        "a parsed dict has one member per key and its lists are lists (see the top of entity.py)",
    ),
    ("rust/state/permission.rs", ["offered_kind"], "a loop over orjson's list, inline in `response` here"),
    (
        "rust/state/evict.rs",
        ["Limits.values", "slots_mut", "what", "cut_content", "cut_output"],
        "the Limits struct (a table here), and the cold halves of the trims (one function here)",
    ),
    (
        "rust/state/evict.rs",
        ["unlink_session", "link_session", "relink_sessions"],
        "the activity order is a linked list through the sessions' slots (an OrderedDict here)",
    ),
    ("state/evict.py", ["set_content"], "rust: tool_call.rs's `patch` (a VecDeque there)"),
    (
        "rust/state/restore.rs",
        ["lossy", "find_opt", "ty", "require", "items", "text", "id", "raw", "int"],
        "Reader's accessors of a document's bytes; dict lookups here",
    ),
    ("state/restore.py", ["name"], "a value's type name for the errors (rust: `ty`)"),
    ("rust/python/strcache.rs", ALL, "caches of Python strings: CPython interns them here"),
    ("rust/python/untracked.rs", ALL, "memory of native objects"),
]


# --------------------------------------------------------------------------------------------
# Listing the functions
# --------------------------------------------------------------------------------------------

_RUST_FN = re.compile(r"^\s*(?:pub(?:\((?:crate|super)\))?\s+)?(?:const\s+)?(?:unsafe\s+)?fn\s+(?:r#)?(\w+)")
_RUST_IMPL = re.compile(r"^\s*(?:unsafe\s+)?impl\b(?:\s*<[^{]*?>)?\s+(?P<head>[^{]*)")
_RUST_TRAIT = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?(?:unsafe\s+)?trait\s")
_RUST_EXTERN = re.compile(r'^\s*(?:unsafe\s+)?extern\s+"C"\s*\{')
_RUST_MOD = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+\w+\s*\{")
# Comments, strings and char literals, blanked before braces are counted (a lifetime 'a is no
# char literal: the pattern wants the closing quote).
_RUST_NOISE = re.compile(r'//.*|/\*.*?\*/|b?"(?:\\.|[^"\\])*"|b?\'(?:\\.|[^\'\\])\'')


def rust_functions(path: Path) -> list[tuple[str | None, str]]:
    """``(owner, name)`` of the functions the rule lists, in file order; owner: the type of the
    ``impl`` block, None for a free function."""
    return rust_functions_in(path.read_text(encoding="utf-8"))


def rust_functions_in(text: str) -> list[tuple[str | None, str]]:
    found: list[tuple[str | None, str]] = []
    stack: list[tuple[str, str | None]] = []  # the open blocks: (kind, owner)
    pending: tuple[str, str | None] | None = None  # what the next "{" opens
    cfg_test = False
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    for line in text.splitlines():
        code = _RUST_NOISE.sub('""', line)
        stripped = code.strip()
        if pending is None:
            if stripped.startswith("#[cfg(test)]"):
                cfg_test = True
                continue
            kinds = [kind for kind, _ in stack]
            fn = _RUST_FN.match(code)
            impl = _RUST_IMPL.match(code)
            if cfg_test and not stack and stripped.startswith("mod tests"):
                break  # the test module ends the file (its raw strings may hold any brace)
            if cfg_test and stripped and not stripped.startswith("#"):
                pending, cfg_test = ("skip", None), False
            elif fn:
                if all(kind == "impl" for kind in kinds) and len(kinds) <= 1:
                    found.append((stack[-1][1] if stack else None, fn.group(1)))
                pending = ("fn", None)
            elif impl:
                head = impl.group("head")
                trait_impl = re.search(r"\sfor\s", f" {head} ")
                owner = re.sub(r"<.*", "", head.split(" for ")[-1]).strip().split("::")[-1].split()[0]
                pending = ("trait", None) if trait_impl else ("impl", owner)
            elif _RUST_TRAIT.match(code) or _RUST_EXTERN.match(code):
                pending = ("trait", None)
            elif _RUST_MOD.match(code):
                pending = ("mod", None)
        for char in code:
            if char == "{":
                stack.append(pending or ("block", None))
                pending = None
            elif char == "}":
                stack.pop()
            elif char == ";":
                pending = None  # an item without a body (`fn f();`, `mod m;`), or `[u8; 4]`: harmless
    return found


def python_functions(path: Path) -> list[tuple[str | None, str]]:
    """``(class, name)`` of the functions the rule lists, in file order, names normalised."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str | None, str]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((None, normalised(node.name)))
        elif isinstance(node, ast.ClassDef) and not is_protocol(node):
            methods = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            found += [(node.name, normalised(m.name)) for m in methods]
    return found


def is_protocol(node: ast.ClassDef) -> bool:
    """A ``typing.Protocol``: an interface declared for the type checker, like a Rust ``trait``
    block (not listed)."""
    return any(isinstance(b, ast.Name) and b.id == "Protocol" for b in node.bases)


def normalised(name: str) -> str:
    if name in ("__init__", "__new__"):
        return "new"
    if name.startswith("__") and name.endswith("__"):
        return name
    return name.lstrip("_")


def once(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def source(spec: str) -> tuple[str, set[str] | None]:
    path, _, selectors = spec.partition("::")
    return path, set(selectors.split(",")) if selectors else None


def selected(spec: str) -> list[tuple[str | None, str]]:
    path, selectors = source(spec)
    functions = rust_functions(ROOT / path)
    if selectors is None:
        return functions
    return [(owner, name) for owner, name in functions if (owner if owner else name) in selectors]


def row_files(row: tuple[list[str], str | None, str]) -> list[str]:
    rust, fallback, _ = row
    return [source(spec)[0] for spec in rust] + ([fallback] if fallback else [])


def allowed(file: str) -> tuple[set[str], bool, bool]:
    """The names ``file`` may have alone, whether the whole file is one-sided, and whether its
    row's common names may come in another order."""
    names: set[str] = set()
    whole = unordered = False
    for where, what, _ in ALLOWED:
        if where == file:
            if what == ALL:
                whole = True
            elif what == ORDER:
                unordered = True
            else:
                names.update(what)
    return names, whole, unordered


def kept(functions: list[tuple[str | None, str]], names: set[str]) -> list[str]:
    """The names of ``functions`` but the allowed ones (``name``, or ``Owner.name`` for one
    class's or impl's)."""
    return [name for owner, name in functions if name not in names and f"{owner}.{name}" not in names]


def compared(row: tuple[list[str], str | None, str]) -> tuple[list[str], list[str]]:
    """The row's two lists, allowed names left out: (Rust, fallback). When the row may differ in
    order, both lists come sorted."""
    rust_specs, fallback, _ = row
    rust: list[str] = []
    unordered = False
    for spec in rust_specs:
        names, whole, any_order = allowed(source(spec)[0])
        unordered |= any_order
        if not whole:
            rust += kept(selected(spec), names)
    python: list[str] = []
    if fallback:
        names, whole, any_order = allowed(fallback)
        unordered |= any_order
        if not whole:
            python = kept(python_functions(ROOT / FALLBACK / fallback), names)
    if unordered:
        return sorted(set(rust)), sorted(set(python))
    return once(rust), once(python)


def row_id(row: tuple[list[str], str | None, str]) -> str:
    return row[1] or source(row[0][0])[0]


def rust_files() -> Iterator[str]:
    for path in sorted((ROOT / "rust").rglob("*.rs")):
        if path.name != "tests.rs":
            yield path.relative_to(ROOT).as_posix()


def fallback_files() -> Iterator[str]:
    for path in sorted((ROOT / FALLBACK).rglob("*.py")):
        yield path.relative_to(ROOT / FALLBACK).as_posix()


# --------------------------------------------------------------------------------------------
# The map in DESIGN section 1
# --------------------------------------------------------------------------------------------


def map_table() -> list[str]:
    lines = ["| Rust | fallback (`_fallback/`) | what it does |", "|---|---|---|"]
    for rust_specs, fallback, what in MAP:
        cells = []
        for spec in rust_specs:
            path, selectors = source(spec)
            names = spec.partition("::")[2].split(",")
            cells.append(f"`{path}`" + (f" ({', '.join(f'`{name}`' for name in names)})" if selectors else ""))
        rust = ", ".join(cells) or "—"
        lines.append(f"| {rust} | {f'`{fallback}`' if fallback else '— (Rust only)'} | {what} |")
    return lines


def design_table() -> list[str]:
    text = DESIGN.read_text(encoding="utf-8")
    section = text.split("\n## 1.", 1)[1].split("\n## 2.", 1)[0]
    return [line for line in section.splitlines() if line.startswith("|")]


# --------------------------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------------------------

COMPARED = [row for row in MAP if not any(f in PENDING for f in row_files(row))]


@pytest.mark.parametrize("row", COMPARED, ids=row_id)
def test_functions_in_step(row: tuple[list[str], str | None, str]) -> None:
    rust, python = compared(row)
    if rust != python:
        diff = "\n".join(difflib.unified_diff(rust, python, "rust", "fallback", lineterm="", n=2))
        pytest.fail(f"{row_id(row)}: the functions differ (fix, or allow with a reason in ALLOWED):\n{diff}")


def test_every_file_is_in_the_map() -> None:
    in_map = [f for row in MAP for f in row_files(row)]
    rust = set(rust_files())
    fallback = set(fallback_files())
    assert sorted(rust - set(in_map)) == [], "rust/ files missing from MAP"
    assert sorted(fallback - set(in_map)) == [], "_fallback/ files missing from MAP"
    assert sorted(set(in_map) - rust - fallback) == [], "MAP names files that do not exist"
    assert sorted(f for f in fallback if in_map.count(f) > 1) == [], "a fallback file in two rows"


def test_every_rust_function_is_in_a_row() -> None:
    claimed: dict[str, set[tuple[str | None, str]]] = {}
    for rust_specs, _, _ in MAP:
        for spec in rust_specs:
            claimed.setdefault(source(spec)[0], set()).update(selected(spec))
    unclaimed = {
        path: [name for owner, name in rust_functions(ROOT / path) if (owner, name) not in functions]
        for path, functions in claimed.items()
    }
    assert {path: names for path, names in unclaimed.items() if names} == {}


def test_one_sided_files_are_allowed() -> None:
    for row in MAP:
        rust_specs, fallback, _ = row
        if any(f in PENDING for f in row_files(row)):
            continue
        if not rust_specs:
            assert allowed(str(fallback))[1], f"_fallback/{fallback} has no Rust counterpart: allow it with a reason"
        if not fallback:
            for spec in rust_specs:
                path = source(spec)[0]
                assert allowed(path)[1], f"{path} has no fallback counterpart: allow it with a reason"


def test_allowed_entries_are_used() -> None:
    files = {f for row in MAP for f in row_files(row)}
    for where, what, reason in ALLOWED:
        assert where in files, where
        assert reason.strip(), f"{where}: an allowed difference needs its reason"
        if what in (ALL, ORDER):
            continue
        if where.startswith("rust/"):
            functions = rust_functions(ROOT / where)
        else:
            functions = python_functions(ROOT / FALLBACK / where)
        present = {name for _, name in functions} | {f"{owner}.{name}" for owner, name in functions}
        assert sorted(set(what) - present) == [], f"{where}: allowed names that no longer exist"


def test_design_map_is_generated() -> None:
    assert design_table() == map_table(), "docs/DESIGN.md section 1: paste `python tests/test_mirror.py --map`"


RUST_SAMPLE = """
pub(crate) fn free(a: [u8; 4]) -> u8 {
    fn nested() {}
    let s = "fn not_this() {";
    a[0]
}
trait Shape { fn declared(&self); }
impl<'a> Thing<'a> {
    #[new]
    pub fn new() -> Self { Self {} }
    fn method(&self) where Self: Sized {
        let c = '{';
    }
}
impl Default for Thing<'_> {
    fn default() -> Self { Self::new() }
}
extern "C" {
    fn mi_collect(force: bool);
}
#[cfg(test)]
fn helper() {}
/* fn commented() {} */
pub const fn after() {}
#[cfg(test)]
mod tests {
    fn in_tests() {}
}
"""


def test_rule_reads_rust() -> None:
    """The Rust reader on the shapes it must handle."""
    assert rust_functions_in(RUST_SAMPLE) == [(None, "free"), ("Thing", "new"), ("Thing", "method"), (None, "after")]


if __name__ == "__main__":
    if sys.argv[1:] == ["--map"]:
        print("\n".join(map_table()))
    else:
        sys.exit("usage: python tests/test_mirror.py --map")
