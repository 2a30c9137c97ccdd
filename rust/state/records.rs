//! What the store holds: tool calls, terminals, permission requests and sessions (DESIGN §7.3 -
//! §7.5, §7.8), and the `Change` a frame yields (§7.9). The ordered map they live in,
//! `OrderedMap`, is in `ordered_map.rs` (moved out of this file; re-exported here); it has no
//! counterpart in the fallback, whose dicts and OrderedDicts play its part.
//!
//! Mirror: `python/acp_fast/_fallback/state/records.py`. Differences on purpose: here a record
//! keeps the JSON text of each value as received (`Raw`), the known fields in fixed slots, and
//! `OrderedMap` plays the part of Python's dict; the fallback keeps the parsed values in one dict
//! per record. The materialized records (`tool_call_record`, `terminal_record`,
//! `permission_record`, `truncated`) are written once, to a `Sink` (`document.rs`): its JSON
//! writer gives `checkpoint::to_json` (each stored value re-written by `write_value` as
//! `dumps(loads(value))` would, but for numbers, which keep their text), the binding's sink the
//! dicts that queries return; the fallback's functions of the same names build dicts.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use hashbrown::HashMap;

use crate::encoder::{descend, write_str, PathItem};
use crate::error::{DecodeError, JsonType};
use crate::message::Span;
use crate::scanner::{parse_i64, Scanner, Str};

use super::document::{Name, Output, Sink, TOOL_CALL};
pub use super::ordered_map::OrderedMap;
use super::read::text_of;

/// The text of a JSON string, unescaped (UTF-8).
pub type Text = Box<[u8]>;
/// The JSON text of a value, as received.
pub type Raw = Box<[u8]>;

// ---------------------------------------------------------------------------------------------
// Tool calls

/// Known tool-call fields, in materialization order (`content` sits between `status` and
/// `locations` and is kept apart as a list of items). `ToolCall::fields` has one slot per name.
pub const TOOL_CALL_FIELDS: [&str; 8] = [
    "title",
    "kind",
    "status",
    "locations",
    "rawInput",
    "rawOutput",
    "name",
    "_meta",
];
pub const TC_TITLE: usize = 0;
pub const TC_KIND: usize = 1;
pub const TC_STATUS: usize = 2;
pub const TC_LOCATIONS: usize = 3;
/// The slots written after `locations`: `rawInput`, `rawOutput`, `name`, `_meta`.
pub const TC_AFTER_LOCATIONS: std::ops::Range<usize> = 4..8;

#[derive(Clone, Default, Debug)]
pub struct ToolCall {
    /// `TOOL_CALL_FIELDS` values; never JSON `null` (null means absent in v1, unset in v2).
    pub fields: [Option<Raw>; 8],
    /// The items of `content` from `content_start` on (`content()`); those before were dropped by
    /// the bound (`evict::trim_content`; emptied), `dropped_items` of them since an update last set
    /// `content`.
    pub content: Vec<Raw>,
    pub content_start: usize,
    pub dropped_items: u64,
    /// With a bound on content bytes: the bytes of the items kept (`held_len` of each).
    pub content_bytes: usize,
    /// Unknown fields in first-set order.
    pub extra: Vec<(Text, Raw)>,
    /// With a bound: the creation number (eviction order, `evict.rs`).
    pub seq: usize,
}

impl ToolCall {
    /// The items of `content` kept.
    pub fn content(&self) -> &[Raw] {
        &self.content[self.content_start..]
    }

    pub fn title(&self) -> Option<&[u8]> {
        self.fields[TC_TITLE].as_deref()
    }

    pub fn kind(&self) -> &[u8] {
        self.fields[TC_KIND].as_deref().unwrap_or(b"\"other\"")
    }

    pub fn status(&self) -> &[u8] {
        self.fields[TC_STATUS].as_deref().unwrap_or(b"\"pending\"")
    }

    pub fn locations(&self) -> &[u8] {
        self.fields[TC_LOCATIONS].as_deref().unwrap_or(b"[]")
    }

    /// Is the status "completed", "failed" or "cancelled" (evicted first)?
    pub fn finished(&self) -> bool {
        let Some(raw) = self.fields[TC_STATUS].as_deref() else {
            return false;
        };
        if raw.len() < 2 || raw[0] != b'"' {
            return false;
        }
        let s = Str {
            start: 1,
            end: raw.len() - 1,
            escaped: raw.contains(&b'\\'),
        };
        // Compare the string's value (a status may be written with escapes).
        let mut scratch = Vec::new();
        let text = crate::scanner::string_text(raw, s, &mut scratch);
        matches!(text, b"completed" | b"failed" | b"cancelled")
    }

    /// Bytes held (for the memory report).
    pub fn heap_bytes(&self) -> usize {
        let f: usize = self.fields.iter().flatten().map(|r| r.len()).sum();
        let c: usize = self.content().iter().map(|r| r.len() + 16).sum();
        let e: usize = self.extra.iter().map(|(k, v)| k.len() + v.len() + 32).sum();
        f + c + e
    }
}

// ---------------------------------------------------------------------------------------------
// Terminals

/// Known terminal fields with a slot of their own (`Terminal::field_mut`), in the order
/// `terminal_update` numbers them. Materialized order: `terminalId`, `command`, `cwd`, `output`,
/// `outputMeta`, `exitStatus`, `_meta`, then unknown fields.
pub const TERMINAL_FIELDS: [&str; 4] = ["command", "cwd", "exitStatus", "_meta"];

#[derive(Clone, Default, Debug)]
pub struct Terminal {
    pub command: Option<Raw>,
    pub cwd: Option<Raw>,
    /// The output bytes (decoded from base64) from `output_start` on (`output()`); those before
    /// were dropped by the bound (`evict::trim_output`), `dropped_bytes` of them since the output
    /// was last replaced.
    pub output: Vec<u8>,
    pub output_start: usize,
    pub dropped_bytes: u64,
    /// The `_meta` of the last `output` snapshot.
    pub output_meta: Option<Raw>,
    pub exit_status: Option<Raw>,
    pub meta: Option<Raw>,
    /// Unknown fields in first-set order.
    pub extra: Vec<(Text, Raw)>,
    /// With a bound: the creation number in its session, and whether it is in the session's heap
    /// of exited terminals (`evict.rs`).
    pub seq: u64,
    pub queued: bool,
}

impl Terminal {
    /// The output bytes kept.
    pub fn output(&self) -> &[u8] {
        &self.output[self.output_start..]
    }

    /// Replace the output (a `terminal_update` snapshot, or `null`: none).
    pub fn set_output(&mut self, bytes: Vec<u8>) {
        self.output = bytes;
        self.output_start = 0;
        self.dropped_bytes = 0;
    }

    /// The slot of `TERMINAL_FIELDS[i]`.
    pub fn field_mut(&mut self, i: usize) -> &mut Option<Raw> {
        match i {
            0 => &mut self.command,
            1 => &mut self.cwd,
            2 => &mut self.exit_status,
            _ => &mut self.meta,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Permission requests

/// How a permission request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pending,
    Selected,
    Cancelled,
    Invalid,
    Unknown,
    Error,
}

/// Every outcome, in the order of `state.sessions.*.permissions.*.outcome` errors (sorted).
pub const OUTCOMES: [Outcome; 6] = [
    Outcome::Cancelled,
    Outcome::Error,
    Outcome::Invalid,
    Outcome::Pending,
    Outcome::Selected,
    Outcome::Unknown,
];

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pending => "pending",
            Outcome::Selected => "selected",
            Outcome::Cancelled => "cancelled",
            Outcome::Invalid => "invalid",
            Outcome::Unknown => "unknown",
            Outcome::Error => "error",
        }
    }

    pub fn from_name(s: &[u8]) -> Option<Self> {
        OUTCOMES.into_iter().find(|o| o.as_str().as_bytes() == s)
    }
}

/// A JSON-RPC id as a key (`1` and `"1"` differ).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IdKey {
    Null,
    Int(i64),
    Str(Text),
}

impl IdKey {
    /// The id value whose span is `span` in `data` (a validated id).
    pub fn of(data: &[u8], span: Span) -> Self {
        match span.ty {
            JsonType::String => IdKey::Str(text_of(data, span.str().expect("string"))),
            JsonType::Number => IdKey::Int(parse_i64(&data[span.range()]).unwrap_or(0)),
            _ => IdKey::Null,
        }
    }

    /// The id as a value of a document.
    pub fn emit<S: Sink>(&self, s: &mut S) -> Result<(), S::Error> {
        match self {
            IdKey::Null => s.null(),
            IdKey::Int(v) => s.int(*v),
            IdKey::Str(t) => s.text(t),
        }
    }

    /// The id as JSON text.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            IdKey::Null => out.extend_from_slice(b"null"),
            IdKey::Int(v) => crate::encoder::write_i64(out, *v),
            IdKey::Str(s) => crate::encoder::write_str(out, s),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Permission {
    pub id: IdKey,
    /// Slot of the session in `Store::sessions`.
    pub session: usize,
    pub tool_call_id: Option<Text>,
    /// The `options` array as received.
    pub options: Raw,
    pub outcome: Outcome,
    pub option_id: Option<Text>,
    pub approved: bool,
    /// The `result` or `error` value of the response.
    pub response: Option<Raw>,
}

// ---------------------------------------------------------------------------------------------
// Sessions

/// What the bounds dropped from a session (DESIGN §7.8): its `_truncated` marker.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Dropped {
    pub terminals: u64,
    pub plans: u64,
    pub permissions: u64,
    pub updates: u64,
    pub entities: u64,
    pub files: u64,
}

impl Dropped {
    /// The marker's members: (name, count) of the non-zero counts, in materialized order.
    pub fn counts(&self) -> impl Iterator<Item = (Name, u64)> {
        [
            (Name::DROPPED_TERMINALS, self.terminals),
            (Name::DROPPED_PLANS, self.plans),
            (Name::DROPPED_PERMISSIONS, self.permissions),
            (Name::DROPPED_UPDATES, self.updates),
            (Name::DROPPED_ENTITIES, self.entities),
            (Name::DROPPED_FILES, self.files),
        ]
        .into_iter()
        .filter(|&(_, n)| n > 0)
    }
}

/// What one session holds, each in first-seen order. Permission requests are kept by the store
/// (one list in request order across sessions).
#[derive(Default)]
pub struct Session {
    pub tool_calls: OrderedMap<ToolCall>,
    pub terminals: OrderedMap<Terminal>,
    /// Plan records as JSON text.
    pub plans: OrderedMap<Raw>,
    /// Unknown updates (DESIGN §7.3) as received, in arrival order.
    pub updates: VecDeque<Raw>,
    /// Permission records of this session held by the store (for its bound), and min-heaps of
    /// the indices (in the store's list) of its resolved ones and of its pending ones (entries of
    /// records resolved or dropped since are stale): the bound drops the oldest resolved first,
    /// then the oldest pending.
    pub permission_count: usize,
    pub resolved: BinaryHeap<Reverse<usize>>,
    pub waiting: BinaryHeap<Reverse<usize>>,
    /// With a bound on terminals (`evict.rs`): the creation number of the next terminal, and a
    /// min-heap of (creation number, id) of the terminals found exited.
    pub terminal_seq: u64,
    pub exited: BinaryHeap<Reverse<(u64, Text)>>,
    /// The targets of the rules applied as written (`entity.rs`), by their index in
    /// `rules::targets()` (grown as needed).
    pub entities: Vec<Entities>,
    /// The answered file requests (`request.rs`), each a record as JSON text, oldest first.
    pub files: VecDeque<Raw>,
    /// Between a `session/load` (or a replaying `session/resume`) and its answer: what arrives
    /// is the session's history (`request.rs`).
    pub replaying: bool,
    pub dropped: Dropped,
    /// With a bound on sessions (`evict.rs`): the frame that last touched the session
    /// (`Store::tick`), and its neighbours in the store's activity order (slots; `NIL`: none).
    pub active: u64,
    pub prev: usize,
    pub next: usize,
}

/// What a session holds of one target of the rules applied as written (`entity.rs`): its value
/// when its rules name no id, else its entities by id, in first-seen order.
#[derive(Default)]
pub struct Entities {
    pub one: Option<Held>,
    pub by_id: OrderedMap<Held>,
}

impl Entities {
    pub fn is_empty(&self) -> bool {
        self.one.is_none() && self.by_id.is_empty()
    }
}

/// An entity: a record (members in first-set order; the fields appends extend are lists), a
/// value replaced whole as received, or an update's object held whole (a replace by the update
/// itself: its members but `sessionUpdate` are the entity).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Held {
    Record(Vec<(Text, Slot)>),
    Value(Raw),
    Update(Raw),
}

/// A member of an entity record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    Value(Raw),
    /// A field appends extend: its items.
    Items(Vec<Raw>),
}

// ---------------------------------------------------------------------------------------------
// Changes

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    ToolCall,
    Terminal,
    Plan,
    Permission,
    Session,
    Protocol,
    /// A `$/cancel_request` notification (the request it names).
    Request,
    Update,
    /// A target of the rules applied as written (an index in `rules::targets()`).
    Entity(u8),
    /// An answered file request (`request.rs`).
    File,
}

impl Target {
    pub fn as_str(self) -> &'static str {
        match self {
            Target::ToolCall => "tool_call",
            Target::Terminal => "terminal",
            Target::Plan => "plan",
            Target::Permission => "permission",
            Target::Session => "session",
            Target::Protocol => "protocol",
            Target::Request => "request",
            Target::Update => "update",
            Target::Entity(t) => &super::rules::targets()[t as usize].name,
            Target::File => "file",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Created,
    Replaced,
    Updated,
    Appended,
    Removed,
    Requested,
    Resolved,
    Cancelled,
    Negotiated,
    /// The session was dropped (an answered `session/close` or `session/delete`).
    Closed,
    /// The session's history is replayed (`session/load`, or `session/resume` with a cursor).
    Replaying,
    /// The replay ended (the answer to that request).
    Replayed,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Replaced => "replaced",
            Action::Updated => "updated",
            Action::Appended => "appended",
            Action::Removed => "removed",
            Action::Requested => "requested",
            Action::Resolved => "resolved",
            Action::Cancelled => "cancelled",
            Action::Negotiated => "negotiated",
            Action::Closed => "closed",
            Action::Replaying => "replaying",
            Action::Replayed => "replayed",
        }
    }
}

/// What a change is about. Tokens point into the message bytes that were applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ident {
    None,
    /// A string token (tool call, terminal or plan id).
    Text(Str),
    /// A fixed id (the v1 plan, `"main"`).
    Static(&'static str),
    /// A JSON-RPC id value.
    Id(Span),
    Version(u8),
}

/// What one frame changed (the Python `Change` is built from it by the binding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    pub session: Option<Str>,
    pub target: Target,
    pub id: Ident,
    pub action: Action,
    pub tool_call_id: Option<Str>,
    /// For permission changes: the record (`Store::permission_at`), which holds the session and
    /// tool call that a response does not carry.
    pub permission: Option<usize>,
    /// The session and id are those of the request a response answers (`Store::answered`), not
    /// tokens of the message.
    pub held: bool,
}

impl Change {
    /// A change without a permission record.
    pub(super) fn new(
        session: Option<Str>,
        target: Target,
        id: Ident,
        action: Action,
        tool_call_id: Option<Str>,
    ) -> Self {
        Self {
            session,
            target,
            id,
            action,
            tool_call_id,
            permission: None,
            held: false,
        }
    }
}

/// Who sent a frame (only responses care: the client answers permission requests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Unknown,
    Agent,
    Client,
}

impl Source {
    /// `"agent"`, `"client"`, or None (unknown): as the API and checkpoints name it.
    pub fn name(self) -> Option<&'static str> {
        match self {
            Source::Unknown => None,
            Source::Agent => Some("agent"),
            Source::Client => Some("client"),
        }
    }
}

/// A `$/cancel_request` notification: the id of the request it cancels, and who sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CancelRequest {
    pub id: IdKey,
    pub source: Source,
}

// ---------------------------------------------------------------------------------------------
// Materialized records (DESIGN §7.3 - §7.5, §7.8), written once to a `Sink` (`document.rs`): as
// JSON for `checkpoint::to_json`, as the dicts of the queries by the binding.

/// A tool-call record in materialized key order (DESIGN §7.3).
pub fn tool_call_record<S: Sink>(s: &mut S, id: &[u8], tc: &ToolCall) -> Result<(), S::Error> {
    s.begin_object()?;
    s.name(Name::TOOL_CALL_ID)?;
    s.text(id)?;
    if let Some(title) = tc.title() {
        member(s, TOOL_CALL[TC_TITLE], title)?;
    }
    member(s, TOOL_CALL[TC_KIND], tc.kind())?;
    member(s, TOOL_CALL[TC_STATUS], tc.status())?;
    s.name(Name::CONTENT)?;
    s.begin_array()?;
    for item in tc.content() {
        s.raw(item)?;
    }
    s.end_array()?;
    member(s, TOOL_CALL[TC_LOCATIONS], tc.locations())?;
    for i in TC_AFTER_LOCATIONS {
        if let Some(v) = &tc.fields[i] {
            member(s, TOOL_CALL[i], v)?;
        }
    }
    extra(s, &tc.extra)?;
    truncated(s, [(Name::DROPPED_ITEMS, tc.dropped_items)])?;
    s.end_object()
}

/// A terminal record in materialized key order (DESIGN §7.4), `output` as `form` says.
pub fn terminal_record<S: Sink>(s: &mut S, id: &[u8], t: &Terminal, form: Output) -> Result<(), S::Error> {
    s.begin_object()?;
    s.name(Name::TERMINAL_ID)?;
    s.text(id)?;
    for (name, v) in [(Name::COMMAND, &t.command), (Name::CWD, &t.cwd)] {
        if let Some(v) = v {
            member(s, name, v)?;
        }
    }
    s.name(Name::OUTPUT)?;
    match form {
        Output::Bytes => s.bytes(t.output())?,
        Output::Base64 => s.base64(t.output())?,
    }
    for (name, v) in [
        (Name::OUTPUT_META, &t.output_meta),
        (Name::EXIT_STATUS, &t.exit_status),
        (Name::META, &t.meta),
    ] {
        if let Some(v) = v {
            member(s, name, v)?;
        }
    }
    extra(s, &t.extra)?;
    truncated(s, [(Name::DROPPED_BYTES, t.dropped_bytes)])?;
    s.end_object()
}

/// A permission record in materialized key order (DESIGN §7.5); `sid` is its session's id.
pub fn permission_record<S: Sink>(s: &mut S, sid: &[u8], p: &Permission) -> Result<(), S::Error> {
    s.begin_object()?;
    s.name(Name::ID)?;
    p.id.emit(s)?;
    s.name(Name::SESSION_ID)?;
    s.text(sid)?;
    if let Some(t) = &p.tool_call_id {
        s.name(Name::TOOL_CALL_ID)?;
        s.text(t)?;
    }
    member(s, Name::OPTIONS, &p.options)?;
    s.name(Name::OUTCOME)?;
    s.text(p.outcome.as_str().as_bytes())?;
    if let Some(o) = &p.option_id {
        s.name(Name::OPTION_ID)?;
        s.text(o)?;
    }
    s.name(Name::APPROVED)?;
    s.boolean(p.approved)?;
    if let Some(r) = &p.response {
        member(s, Name::RESPONSE, r)?;
    }
    s.end_object()
}

/// `"_truncated":{...}`, the marker of what a bound dropped (DESIGN §7.8): one member per
/// non-zero count, in the order given; nothing when there is none.
pub fn truncated<S: Sink>(s: &mut S, counts: impl IntoIterator<Item = (Name, u64)>) -> Result<(), S::Error> {
    let mut first = true;
    for (name, n) in counts.into_iter().filter(|&(_, n)| n > 0) {
        if first {
            s.name(Name::TRUNCATED)?;
            s.begin_object()?;
            first = false;
        }
        s.name(name)?;
        s.uint(n)?;
    }
    if !first {
        s.end_object()?;
    }
    Ok(())
}

/// A member of a record whose value is stored.
#[inline]
fn member<S: Sink>(s: &mut S, name: Name, value: &[u8]) -> Result<(), S::Error> {
    s.name(name)?;
    s.raw(value)
}

/// A record's unknown fields, in first-set order.
fn extra<S: Sink>(s: &mut S, fields: &[(Text, Raw)]) -> Result<(), S::Error> {
    for (k, v) in fields {
        s.key(k)?;
        s.raw(v)?;
    }
    Ok(())
}

/// The length of the JSON text a checkpoint writes for the stored value `raw` (`write_value`):
/// the size of a content item for `Limits::content_bytes` (the fallback: `dumps` of its value).
pub fn held_len(raw: &[u8]) -> usize {
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        static KEYS: std::cell::RefCell<Keys> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
    }
    if let Some(n) = KEYS.with(|keys| compact_len(raw, &mut keys.borrow_mut())) {
        return n;
    }
    SCRATCH.with(|scratch| {
        let mut out = scratch.borrow_mut();
        out.clear();
        // A stored value is never deeper than a checkpoint carries from its root.
        let n = match write_value(&mut out, raw, 0) {
            Ok(()) => out.len(),
            Err(_) => raw.len(),
        };
        if out.capacity() > 1 << 16 {
            *out = Vec::new();
        }
        n
    })
}

/// The member names of the open objects (spans in the text), and where each open container's start
/// (`None`: an array): `compact_len`'s scratch space.
type Keys = (Vec<(usize, usize)>, Vec<Option<usize>>);

/// `held_len` in one pass, without writing: the length of the valid JSON text `raw` without the
/// whitespace between its tokens, which is `write_value`'s text when no object has a member name
/// with an escape or a repeated one (a name without escapes is written as it is); None otherwise,
/// or for an object of more than 16 members (`write_value` decides).
fn compact_len(raw: &[u8], (keys, opens): &mut Keys) -> Option<usize> {
    keys.clear();
    opens.clear();
    let mut expect_key = false;
    let mut n = 0;
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'"' => {
                let start = i;
                let mut j = i + 1;
                let mut escaped = false;
                loop {
                    j += memchr::memchr2(b'"', b'\\', &raw[j..])?;
                    if raw[j] == b'"' {
                        break;
                    }
                    escaped = true;
                    j += 2;
                }
                let end = j + 1;
                if expect_key {
                    let from = (*opens.last()?)?;
                    let key = &raw[start..end];
                    if escaped || keys.len() - from >= 16 || keys[from..].iter().any(|&(s, e)| &raw[s..e] == key) {
                        return None;
                    }
                    keys.push((start, end));
                    expect_key = false;
                }
                n += end - start;
                i = end;
                continue;
            }
            b'{' => {
                opens.push(Some(keys.len()));
                expect_key = true;
            }
            b'[' => opens.push(None),
            b'}' | b']' => {
                if let Some(Some(from)) = opens.pop() {
                    keys.truncate(from);
                }
                expect_key = false;
            }
            b',' => expect_key = matches!(opens.last(), Some(Some(_))),
            _ => {}
        }
        n += 1;
        i += 1;
    }
    Some(n)
}

/// Write the (valid) JSON text `raw`, found at nesting depth `depth` of the document, as
/// `dumps(loads(raw))` writes it (compact, member names in `dumps`' form, the last of duplicate
/// keys in the first one's place) but for numbers and strings, written as received (`2.50`,
/// `1E2`, `-0`, `"\u00e9"`: DESIGN §7.8).
/// Errors: the path inside `raw` (innermost step first) of a container deeper than a checkpoint
/// carries (`checkpoint::MAX_DEPTH`).
pub fn write_value(out: &mut Vec<u8>, raw: &[u8], depth: usize) -> Result<(), Vec<PathItem>> {
    let mut sc = Scanner::new(raw);
    // The depth is checked below, with the path (`members_at` would refuse without one).
    sc.max_depth = u32::MAX;
    write_at::<false>(out, &mut sc, depth)
}

/// Write the (valid) JSON text `raw` of a stored value exactly as `dumps(loads(raw))` writes it:
/// `write_value`'s text but for numbers (an integer in its canonical digits, any other number
/// as the float it parses to) and strings (re-escaped as `dumps` escapes them).
pub fn write_dumps(out: &mut Vec<u8>, raw: &[u8]) {
    let mut sc = Scanner::new(raw);
    sc.max_depth = u32::MAX;
    // A stored value is never deeper than a checkpoint carries from its root.
    if write_at::<true>(out, &mut sc, 0).is_err() {
        out.extend_from_slice(raw);
    }
}

/// `write_value` (`DUMPS` false) or `write_dumps` (true) of the value at the cursor.
fn write_at<const DUMPS: bool>(out: &mut Vec<u8>, sc: &mut Scanner<'_>, depth: usize) -> Result<(), Vec<PathItem>> {
    const VALID: &str = "a stored value is valid JSON";
    const MAX_DEPTH: usize = super::checkpoint::MAX_DEPTH as usize;
    let data = sc.data;
    match sc.peek() {
        Some(b'{') => {
            if depth >= MAX_DEPTH {
                return Err(Vec::new());
            }
            let (members, end) = members_at(sc).expect(VALID);
            out.push(b'{');
            for (i, (k, at)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k);
                out.push(b':');
                sc.pos = *at;
                descend(depth + 1, || write_at::<DUMPS>(out, sc, depth + 1)).map_err(|mut p| {
                    p.push(PathItem::Key(String::from_utf8_lossy(k).into_owned()));
                    p
                })?;
            }
            out.push(b'}');
            sc.pos = end;
        }
        Some(b'[') => {
            if depth >= MAX_DEPTH {
                return Err(Vec::new());
            }
            sc.enter().expect(VALID);
            out.push(b'[');
            if sc.peek() == Some(b']') {
                sc.pos += 1;
            } else {
                for i in 0.. {
                    if i > 0 {
                        out.push(b',');
                    }
                    descend(depth + 1, || write_at::<DUMPS>(out, sc, depth + 1)).map_err(|mut p| {
                        p.push(PathItem::Index(i));
                        p
                    })?;
                    let end = sc.peek() == Some(b']');
                    sc.pos += 1;
                    if end {
                        break;
                    }
                }
            }
            sc.leave();
            out.push(b']');
        }
        Some(b'"') if DUMPS => {
            let s = sc.scan_string().expect(VALID);
            let mut scratch = Vec::new();
            write_str(out, crate::scanner::string_text(data, s, &mut scratch));
        }
        Some(b'"') => {
            // As received: its escapes are the sender's (`\u00e9` stays `\u00e9`).
            let s = sc.scan_string().expect(VALID);
            out.extend_from_slice(&data[s.start - 1..s.end + 1]);
        }
        Some(b'-' | b'0'..=b'9') if DUMPS => {
            let n = sc.scan_number().expect(VALID);
            let lexeme = &data[n.start..n.end];
            if !n.is_int {
                crate::encoder::write_f64(out, crate::scanner::parse_f64(lexeme));
            } else if let Some(v) = parse_i64(lexeme) {
                crate::encoder::write_i64(out, v);
            } else if let Some(v) = crate::scanner::parse_u64(lexeme) {
                crate::encoder::write_u64(out, v);
            } else {
                // Beyond 64 bits: a JSON integer's digits are already canonical.
                out.extend_from_slice(lexeme);
            }
        }
        Some(b'-' | b'0'..=b'9') => {
            let n = sc.scan_number().expect(VALID);
            out.extend_from_slice(&data[n.start..n.end]);
        }
        _ => {
            let start = sc.pos;
            sc.skip_value().expect(VALID);
            out.extend_from_slice(&data[start..sc.pos]);
        }
    }
    sc.skip_ws();
    Ok(())
}

/// The members of the object at the cursor as a parsed dict has them: (key, position of the
/// value), the last of duplicate keys in the first one's place; and the position after the object.
pub(super) fn members_at(sc: &mut Scanner<'_>) -> Result<(Vec<(Text, usize)>, usize), DecodeError> {
    let data = sc.data;
    sc.enter()?;
    let mut members: Vec<(Text, usize)> = Vec::new();
    if sc.peek() == Some(b'}') {
        sc.pos += 1;
    } else {
        loop {
            sc.skip_ws();
            let k = sc.scan_key()?;
            sc.skip_ws();
            members.push((text_of(data, k), sc.pos));
            sc.skip_value()?;
            let end = sc.peek() == Some(b'}');
            sc.pos += 1;
            if end {
                break;
            }
        }
    }
    sc.leave();
    Ok((dedupe(members), sc.pos))
}

/// Keep the first place and the last value of duplicate keys.
fn dedupe(members: Vec<(Text, usize)>) -> Vec<(Text, usize)> {
    let n = members.len();
    let unique = if n <= 16 {
        (1..n).all(|i| members[..i].iter().all(|(k, _)| *k != members[i].0))
    } else {
        let mut seen: HashMap<&[u8], ()> = HashMap::with_capacity(n);
        members.iter().all(|(k, _)| seen.insert(k, ()).is_none())
    };
    if unique {
        return members;
    }
    let mut first: HashMap<Text, usize> = HashMap::with_capacity(n);
    let mut out: Vec<(Text, usize)> = Vec::with_capacity(n);
    for (k, at) in members {
        match first.get(&k) {
            Some(&i) => out[i].1 = at,
            None => {
                first.insert(k.clone(), out.len());
                out.push((k, at));
            }
        }
    }
    out
}
