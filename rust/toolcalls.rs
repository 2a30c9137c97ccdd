//! Tool calls as columns (docs/ANALYTICS.md, `acp_fast.arrow.tool_calls`): a stream replayed
//! through the state engine (`engine::Engine` over a `state::Store` without bounds on tool calls
//! and sessions, as `ToolCallStore(max_tool_calls=None, max_sessions=None)`), the change of every
//! message followed by a tracker (where each tool call was first and last touched, how often, its
//! last permission request and when it was answered), then one row per tool call of the final
//! state: sessions, then tool calls, in the store's order.
//!
//! Parse on many threads, apply on one. `feed` cuts the complete lines it is given into
//! newline-aligned ranges as `FrameColumns` does (`columns::cut_lines`, `split_ranges`; more,
//! smaller ranges: `RANGES_PER_THREAD` per thread), parses them on `threads - 1` threads of their
//! own (a framer per range, lines numbered from 0; the ranges' line counts number them after),
//! while the calling thread applies the frames of each range to the store as soon as it and the
//! ranges before it are parsed (`pipeline`). Parsing a line depends on nothing but its bytes, so
//! the frames are those one framer would give; applying them is sequential, in stream order: the
//! state is order-dependent (a permission response names only the request's JSON-RPC id, not the
//! session; a later update changes what an earlier one set), so the store sees the same sequence
//! of calls whatever the number of threads, and the table is the same. The rows are built on
//! `threads` threads at the end (each takes an equal run of the tool calls, in order: a row
//! depends only on the final state). A file (`feed_file`) is read on the calling thread in pieces
//! (`columns::read_pieces`), each fed as above.
//!
//! Splitting the apply by session was tried (each session's messages applied on a thread of its
//! own, answers routed by request id): the same rows, but no faster on 2 cores and 15–20 % more
//! CPU, with a fallback to the whole stream wherever request ids are shared across sessions,
//! which real traffic does (benches/HISTORY.md).
//!
//! A stream's line is applied as `ToolCallStore.apply` applies what `FrameDecoder` yields for
//! it: a message as one, a batch entry by entry (an entry that is not a message skipped); a
//! recording's line (`line`) as `ToolCallStore.apply` applies its bytes (`Engine::frame`). Lines
//! that do not parse or apply are skipped.
//!
//! Mirror: `_fallback/toolcalls.py`. Differences on purpose: the fallback decodes and applies
//! with its own `FrameDecoder` and `ToolCallStore` on the calling thread (threads checked, not
//! used: decoding there holds the GIL), follows the Python `Change`s, and builds the table with
//! pyarrow from the store's records (`dumps` of each content item); this reads the store's records
//! in place and writes each value as `dumps(loads(value))` would (`state::write_dumps`).

use hashbrown::hash_map::EntryRef;
use hashbrown::HashMap;

use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::columns::{cut_lines, in_ranges, read_pieces, split_ranges, FILE_PIECE_BYTES};
use crate::engine::{Engine, Item};
use crate::framing::{Event, Framer, DEFAULT_MAX_FRAME_BYTES};
use crate::message::{parse_line_utf8, strip_line_ending, Envelope, Frame};
use crate::scanner::{string_text, Scanner};
use crate::state::{write_dumps, Action, Change, IdKey, Ident, Limits, Source, Store, Target, Text};

/// The columns of a row, in order (a recording adds `TIME_COLUMNS`).
pub const COLUMNS: [&str; 14] = [
    "session_id",
    "tool_call_id",
    "kind",
    "title",
    "status",
    "first_line",
    "last_line",
    "updates",
    "content_items",
    "content_bytes",
    "permission_outcome",
    "permission_approved",
    "permission_line",
    "permission_resolved_line",
];

/// The columns of the times of a recording's lines.
pub const TIME_COLUMNS: [&str; 4] = ["first_time", "last_time", "permission_time", "permission_resolved_time"];

/// Where a tool call was touched: its first and last frames (line, time) and how many.
#[derive(Debug, Clone, Copy)]
struct Seen {
    first_line: u64,
    first_time: Option<f64>,
    last_line: u64,
    last_time: Option<f64>,
    updates: u64,
}

/// A tool call's last permission request: its id, where it was asked and answered.
#[derive(Debug, Clone)]
struct Asked {
    id: IdKey,
    line: u64,
    time: Option<f64>,
    resolved_line: Option<u64>,
    resolved_time: Option<f64>,
}

/// What the tracker keeps, by session and tool call.
#[derive(Debug, Default)]
struct Tracker {
    seen: HashMap<Text, HashMap<Text, Seen>>,
    permission: HashMap<Text, HashMap<Text, Asked>>,
    sid: Vec<u8>,
    tcid: Vec<u8>,
}

/// The entry of `(sid, tcid)` in a nested map, created by `new` when absent (no key is copied
/// when it is there), and whether it was.
fn entry<'m, V>(
    map: &'m mut HashMap<Text, HashMap<Text, V>>,
    sid: &[u8],
    tcid: &[u8],
    new: impl FnOnce() -> V,
) -> (&'m mut V, bool) {
    match map.entry_ref(sid).or_default().entry_ref(tcid) {
        EntryRef::Occupied(e) => (e.into_mut(), false),
        EntryRef::Vacant(e) => (e.insert(new()), true),
    }
}

impl Tracker {
    fn new() -> Self {
        Self::default()
    }

    fn touch(&mut self, line: u64, time: Option<f64>) {
        let fresh = || Seen {
            first_line: line,
            first_time: time,
            last_line: line,
            last_time: time,
            updates: 1,
        };
        let (seen, new) = entry(&mut self.seen, &self.sid, &self.tcid, fresh);
        if !new {
            seen.last_line = line;
            seen.last_time = time;
            seen.updates += 1;
        }
    }

    /// Follow the change `c` of the message `data` (line `line`, time `time`), as the Python
    /// `Change` reads: the session and tool call of a permission change are its record's.
    fn change(&mut self, store: &Store, data: &[u8], c: &Change, line: u64, time: Option<f64>) {
        match c.target {
            Target::ToolCall => {
                let (Some(sid), Some(tcid)) = (c.session, c.tool_call_id) else {
                    return;
                };
                let mut scratch = Vec::new();
                self.sid.clear();
                self.sid.extend_from_slice(string_text(data, sid, &mut scratch));
                self.tcid.clear();
                self.tcid.extend_from_slice(string_text(data, tcid, &mut scratch));
                self.touch(line, time);
            }
            Target::Permission => {
                let Ident::Id(span) = c.id else {
                    return;
                };
                let record = c.permission.and_then(|i| store.permission_at(i));
                let mut scratch = Vec::new();
                self.sid.clear();
                self.tcid.clear();
                let id = match record {
                    Some(p) => {
                        let Some(t) = &p.tool_call_id else {
                            return;
                        };
                        self.sid.extend_from_slice(store.session_id(p.session));
                        self.tcid.extend_from_slice(t);
                        p.id.clone()
                    }
                    None => {
                        let (Some(sid), Some(tcid)) = (c.session, c.tool_call_id) else {
                            return;
                        };
                        self.sid.extend_from_slice(string_text(data, sid, &mut scratch));
                        self.tcid.extend_from_slice(string_text(data, tcid, &mut scratch));
                        IdKey::of(data, span)
                    }
                };
                if c.action == Action::Requested {
                    self.touch(line, time);
                    let asked = Asked {
                        id,
                        line,
                        time,
                        resolved_line: None,
                        resolved_time: None,
                    };
                    let (slot, _) = entry(&mut self.permission, &self.sid, &self.tcid, || asked.clone());
                    *slot = asked;
                } else if let Some(p) = self
                    .permission
                    .get_mut(&self.sid[..])
                    .and_then(|calls| calls.get_mut(&self.tcid[..]))
                {
                    if p.id == id {
                        p.resolved_line = Some(line);
                        p.resolved_time = time;
                    }
                }
            }
            _ => {}
        }
    }
}

/// One row of the table (`COLUMNS`, then `TIME_COLUMNS`).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub session_id: Vec<u8>,
    pub tool_call_id: Vec<u8>,
    pub kind: Option<Vec<u8>>,
    pub title: Option<Vec<u8>>,
    pub status: Option<Vec<u8>>,
    pub first_line: Option<u64>,
    pub last_line: Option<u64>,
    pub updates: Option<u64>,
    pub content_items: u64,
    pub content_bytes: u64,
    pub permission_outcome: Option<&'static str>,
    pub permission_approved: Option<bool>,
    pub permission_line: Option<u64>,
    pub permission_resolved_line: Option<u64>,
    pub first_time: Option<f64>,
    pub last_time: Option<f64>,
    pub permission_time: Option<f64>,
    pub permission_resolved_time: Option<f64>,
}

/// A frame parsed on a range's thread: its line (from the range's start), its bytes, and the
/// frame.
struct Parsed {
    line: u64,
    bytes: Bytes,
    frame: Frame,
}

/// Where a parsed line's bytes are: in the range (the framer gives the lines of complete lines fed
/// at once as slices of them), or a copy (were it ever to give them from a buffer of its own).
enum Bytes {
    At(std::ops::Range<usize>),
    Copy(Box<[u8]>),
}

/// A feed's complete lines are cut into this many ranges per thread: small ranges, so that the
/// calling thread starts applying soon after the first is parsed.
const RANGES_PER_THREAD: usize = 8;

/// Fewer rows than this are built on one thread (a thread costs more than they do).
const ROWS_PER_THREAD: usize = 4096;

/// `parse` of each of the `ranges` of `lines` on `workers` threads of their own (each takes the
/// next range not taken yet), while the calling thread gives each result to `apply` in range
/// order, as soon as it and those before it are ready. A panic in a worker is raised here.
fn pipeline<T: Send>(
    lines: &[u8],
    ranges: &[std::ops::Range<usize>],
    workers: usize,
    parse: impl Fn(&[u8]) -> T + Sync,
    mut apply: impl FnMut(usize, T),
) {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, T)>();
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            let (tx, next, parse) = (tx.clone(), &next, &parse);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(r) = ranges.get(i) else {
                    break;
                };
                if tx.send((i, parse(&lines[r.clone()]))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut ready: Vec<Option<T>> = ranges.iter().map(|_| None).collect();
        let mut at = 0;
        // Ends when every worker is done (or one panicked: the scope raises it).
        for (i, value) in rx {
            ready[i] = Some(value);
            while let Some(value) = ready.get_mut(at).and_then(Option::take) {
                apply(at, value);
                at += 1;
            }
        }
    });
}

/// The pieces a file is read in by `feed_file` on several threads.
const PIECE_BYTES: usize = 16 << 20;

/// A stream replayed into tool-call rows (module docs): `feed` its bytes, or give a recording's
/// lines one by one (`line`); `finish` gives the rows.
pub struct ToolCallColumns {
    engine: Engine,
    framer: Framer,
    threads: usize,
    source: Source,
    tracker: Tracker,
}

impl ToolCallColumns {
    /// `threads` as checked by `columns::check_threads` (1: all on the calling thread); `source`:
    /// who sent a plain stream's frames.
    pub fn new(threads: usize, source: Source) -> Self {
        let limits = Limits {
            sessions: None,
            ..Limits::default()
        };
        Self {
            engine: Engine::new(Store::with_limits(None, None, limits), DEFAULT_MAX_FRAME_BYTES, None),
            framer: Framer::new(DEFAULT_MAX_FRAME_BYTES),
            threads: threads.max(1),
            source,
            tracker: Tracker::new(),
        }
    }

    /// Feed bytes of the stream: every line they complete is applied.
    pub fn feed(&mut self, data: &[u8]) {
        let data = if self.threads > 1 { self.feed_ranges(data) } else { data };
        self.feed_here(data);
    }

    /// Feed the bytes `start..stop` of `file`, read on the calling thread into one buffer, in
    /// pieces of `FILE_PIECE_BYTES` on one thread (still in the core's cache when parsed) and of
    /// `PIECE_BYTES` on several (each `feed` then has ranges for every thread). Returns the bytes
    /// fed, fewer than `stop - start` only when the file ends before `stop`.
    pub fn feed_file<F: FileExt>(&mut self, file: &F, start: u64, stop: u64) -> io::Result<u64> {
        let piece = if self.threads > 1 {
            PIECE_BYTES
        } else {
            FILE_PIECE_BYTES
        };
        read_pieces(file, start, stop, piece, |data| self.feed(data))
    }

    /// The complete lines of `data` parsed in ranges on `threads - 1` threads while the calling
    /// thread applies them in order (`pipeline`); returns the bytes left for the framer (as
    /// `FrameColumns::feed_ranges`).
    fn feed_ranges<'a>(&mut self, data: &'a [u8]) -> &'a [u8] {
        let cut = cut_lines(self.framer.at_line_start(), data);
        self.feed_here(cut.head);
        let ranges = split_ranges(cut.lines, self.threads * RANGES_PER_THREAD);
        if ranges.len() < 2 {
            self.feed_here(cut.lines);
            return cut.rest;
        }
        let (max, workers, source) = (self.framer.max_frame_bytes(), self.threads - 1, self.source);
        let mut before = self.framer.line();
        let parse = |piece: &[u8]| Self::range(piece, max);
        pipeline(cut.lines, &ranges, workers, parse, |i, (frames, count)| {
            let piece = &cut.lines[ranges[i].clone()];
            for p in frames {
                let bytes = match &p.bytes {
                    Bytes::At(at) => &piece[at.clone()],
                    Bytes::Copy(bytes) => bytes,
                };
                self.apply(before + p.line, None, bytes, p.frame, source);
            }
            before += count;
        });
        self.framer.skip_lines(before - self.framer.line());
        cut.rest
    }

    /// The frames of `data` (complete lines) that parse, numbered from 1, and how many lines it
    /// held.
    fn range(data: &[u8], max_frame_bytes: usize) -> (Vec<Parsed>, u64) {
        let mut framer = Framer::new(max_frame_bytes);
        let mut out = Vec::new();
        let base = data.as_ptr() as usize;
        framer.feed(data, |event| {
            if let Event::Frame {
                line,
                data: bytes,
                utf8,
            } = event
            {
                if let Ok(frame) = parse_line_utf8(bytes, None, utf8) {
                    let start = (bytes.as_ptr() as usize).wrapping_sub(base);
                    let bytes = if start.checked_add(bytes.len()).is_some_and(|end| end <= data.len()) {
                        Bytes::At(start..start + bytes.len())
                    } else {
                        Bytes::Copy(bytes.into())
                    };
                    out.push(Parsed { line, bytes, frame });
                }
            }
        });
        (out, framer.line())
    }

    /// `feed` on the calling thread.
    fn feed_here(&mut self, data: &[u8]) {
        let mut framer = std::mem::replace(&mut self.framer, Framer::new(1));
        framer.feed(data, |event| self.event(event));
        self.framer = framer;
    }

    fn event(&mut self, event: Event<'_>) {
        if let Event::Frame { line, data, utf8 } = event {
            if let Ok(frame) = parse_line_utf8(data, None, utf8) {
                let source = self.source;
                self.apply(line, None, data, frame, source);
            }
        }
    }

    /// A stream's frame (line `line`, time `time`, bytes `data`) applied as `ToolCallStore.apply`
    /// applies what `FrameDecoder` yields: a message, or a batch's messages one by one.
    fn apply(&mut self, line: u64, time: Option<f64>, data: &[u8], frame: Frame, source: Source) {
        match frame {
            Frame::Single(env) => self.message(line, time, data, &env, source),
            Frame::Batch(entries) => {
                for e in entries {
                    if let Ok(env) = e.result {
                        self.message(line, time, &data[e.start..e.end], &env, source);
                    }
                }
            }
        }
    }

    fn message(&mut self, line: u64, time: Option<f64>, data: &[u8], env: &Envelope, source: Source) {
        let tracker = &mut self.tracker;
        let mut out = |store: &Store, item: Item<'_>| -> Result<(), ()> {
            if let Item::Applied { data, change: Some(c) } = item {
                tracker.change(store, data, &c, line, time);
            }
            Ok(())
        };
        let _ = self.engine.message(data, env, source, &mut out);
    }

    /// A recording's line `number` (its bytes, line ending optional), sent at `time` by `source`:
    /// applied as `ToolCallStore.apply` applies bytes.
    pub fn line(&mut self, number: u64, data: &[u8], time: Option<f64>, source: Source) {
        let tracker = &mut self.tracker;
        let mut out = |store: &Store, item: Item<'_>| -> Result<(), ()> {
            if let Item::Applied { data, change: Some(c) } = item {
                tracker.change(store, data, &c, number, time);
            }
            Ok(())
        };
        let _ = self.engine.frame(strip_line_ending(data), source, &mut out);
    }

    /// End of input (a last line without a newline is applied): a row per tool call.
    pub fn finish(&mut self) -> Vec<Row> {
        let mut framer = std::mem::replace(&mut self.framer, Framer::new(1));
        framer.finish(|event| self.event(event));
        self.framer = framer;
        self.rows()
    }

    /// The rows of the store's tool calls, in its order, built on `threads` threads (each takes an
    /// equal run of the calls: a row is independent of the others; writing each content item
    /// again to count its bytes is most of the work).
    fn rows(&self) -> Vec<Row> {
        let store = self.engine.store();
        // The last permission request of each tool call (in request order), by session.
        let mut outcomes: HashMap<&[u8], HashMap<&[u8], &crate::state::Permission>> = HashMap::new();
        for p in store.permissions() {
            if let Some(t) = &p.tool_call_id {
                outcomes.entry(store.session_id(p.session)).or_default().insert(t, p);
            }
        }
        let calls: Vec<_> = store
            .sessions()
            .iter()
            .flat_map(|(sid, session)| session.tool_calls.iter().map(move |(tcid, tc)| (sid, tcid, tc)))
            .collect();
        let parts = self.threads.min(calls.len().div_ceil(ROWS_PER_THREAD)).max(1);
        let ranges: Vec<_> = (0..parts)
            .map(|i| i * calls.len() / parts..(i + 1) * calls.len() / parts)
            .collect();
        let built = in_ranges(&calls, &ranges, |part| {
            let mut scratch = Vec::new();
            let row = |&(sid, tcid, tc): &(&[u8], &[u8], &crate::state::ToolCall)| {
                let s = self.tracker.seen.get(sid).and_then(|m| m.get(tcid));
                let a = self.tracker.permission.get(sid).and_then(|m| m.get(tcid));
                let o = outcomes.get(sid).and_then(|m| m.get(tcid));
                let content = tc.content();
                Row {
                    session_id: sid.to_vec(),
                    tool_call_id: tcid.to_vec(),
                    kind: text(tc.kind()),
                    title: tc.title().and_then(text),
                    status: text(tc.status()),
                    first_line: s.map(|s| s.first_line),
                    last_line: s.map(|s| s.last_line),
                    updates: s.map(|s| s.updates),
                    content_items: content.len() as u64,
                    content_bytes: content
                        .iter()
                        .map(|item| {
                            scratch.clear();
                            write_dumps(&mut scratch, item);
                            scratch.len() as u64
                        })
                        .sum(),
                    permission_outcome: o.map(|p| p.outcome.as_str()),
                    permission_approved: o.map(|p| p.approved),
                    permission_line: a.map(|a| a.line),
                    permission_resolved_line: a.and_then(|a| a.resolved_line),
                    first_time: s.and_then(|s| s.first_time),
                    last_time: s.and_then(|s| s.last_time),
                    permission_time: a.and_then(|a| a.time),
                    permission_resolved_time: a.and_then(|a| a.resolved_time),
                }
            };
            part.iter().map(row).collect::<Vec<_>>()
        });
        built.into_iter().flatten().collect()
    }
}

/// A stored value as a row's text: a string's text, null as none, any other value as its JSON
/// as `dumps(loads(value))` writes it (`state::write_dumps`).
fn text(raw: &[u8]) -> Option<Vec<u8>> {
    match raw.first() {
        Some(b'n') => None,
        Some(b'"') => {
            let mut sc = Scanner::new(raw);
            let s = sc.scan_string().ok()?;
            let mut scratch = Vec::new();
            Some(string_text(raw, s, &mut scratch).to_vec())
        }
        _ => {
            let mut out = Vec::new();
            write_dumps(&mut out, raw);
            Some(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_is_not_a_string_is_its_dumps_text() {
        let raw = br#"{"a": [2.50, 1E2, -0, "\u00e9\/", 123456789012345678901234567890], "a": 1, "b": {}}"#;
        assert_eq!(text(raw).unwrap(), "{\"a\":1,\"b\":{}}".as_bytes());
        let raw = br#"[2.50, 1E2, -0, -0.0, "\u00e9\/", 18446744073709551615, 123456789012345678901234567890]"#;
        assert_eq!(
            text(raw).unwrap(),
            "[2.5,100.0,0,-0.0,\"\u{e9}/\",18446744073709551615,123456789012345678901234567890]".as_bytes()
        );
        assert_eq!(text(br#""\u00e9""#).unwrap(), "\u{e9}".as_bytes());
        assert_eq!(text(b"null"), None);
    }

    #[test]
    fn rows_built_on_threads_are_in_order() {
        // More tool calls than `ROWS_PER_THREAD` for each of 3 threads, in 3 sessions, with
        // content to count: the rows of 3 threads are those of one.
        let mut text = String::new();
        let calls = 3 * ROWS_PER_THREAD + 17;
        for i in 0..calls {
            text.push_str(&format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s{}","update":{{"sessionUpdate":"tool_call","toolCallId":"c{i}","status":"pending","content":[{{"type":"content","content":{{"type":"text","text":"{}"}}}}]}}}}}}"#,
                i % 3,
                "x".repeat(i % 11),
            ));
            text.push('\n');
        }
        let rows = |threads| {
            let mut t = ToolCallColumns::new(threads, Source::Unknown);
            t.feed(text.as_bytes());
            t.finish()
        };
        let one = rows(1);
        assert_eq!(one.len(), calls);
        assert_eq!(one[0].tool_call_id, b"c0");
        assert_eq!(one[1].tool_call_id, b"c3");
        assert!(one.iter().any(|r| r.content_bytes > 0));
        assert_eq!(rows(3), one);
    }

    #[test]
    fn threads_do_not_change_the_rows() {
        let call = |s: &str, c: &str, st: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{s}","update":{{"sessionUpdate":"tool_call","toolCallId":"{c}","status":"{st}"}}}}}}"#
            )
        };
        let ask = r#"{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"a","toolCall":{"toolCallId":"c1"},"options":[]}}"#;
        let answer = r#"{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"cancelled"}}}"#;
        let mut text = String::new();
        for i in 0..50 {
            text.push_str(&call(
                if i % 2 == 0 { "a" } else { "b" },
                &format!("c{}", i % 7),
                "pending",
            ));
            text.push('\n');
            if i == 20 {
                text.push_str(ask);
                text.push_str("\nnot json\n\n");
            }
            if i == 40 {
                text.push_str(answer);
                text.push('\n');
            }
        }
        let data = text.as_bytes();
        let one = {
            let mut t = ToolCallColumns::new(1, Source::Unknown);
            t.feed(data);
            t.finish()
        };
        assert_eq!(one.len(), 14);
        let c1 = one
            .iter()
            .find(|r| r.session_id == b"a" && r.tool_call_id == b"c1")
            .unwrap();
        assert_eq!(c1.permission_outcome, Some("cancelled"));
        assert!(c1.permission_line.unwrap() < c1.permission_resolved_line.unwrap());
        for threads in [2, 3, 5] {
            for cut in [0, 1, 100, 777, data.len() / 2, data.len() - 1] {
                let mut t = ToolCallColumns::new(threads, Source::Unknown);
                t.feed(&data[..cut]);
                t.feed(&data[cut..]);
                assert_eq!(t.finish(), one, "threads {threads}, cut at {cut}");
            }
        }
    }
}
