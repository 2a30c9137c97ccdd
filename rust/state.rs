//! The state engine: the current state of every tool call, terminal, plan and permission request
//! of every session, kept from frames without building a tree. Each stored value is the JSON text
//! of that value exactly as received (`Raw`), so the state is exact and an update costs the same
//! however long the session has run: the update object is walked once, the values it sets are
//! copied, nothing else is touched.
//!
//! The rules are API.md's "Tool-call state" and docs/DESIGN.md §7. Mirror:
//! `python/acp_fast/_fallback/state.py`.

use std::collections::VecDeque;
use std::ops::Range;

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};

use crate::error::{describe_value, DecodeError, JsonType};
use crate::message::{scan_span, Captured, Envelope, Kind, Span};
use crate::scanner::{parse_i64, unescape_into, Scanner, Str};

/// The text of a JSON string, unescaped (UTF-8).
pub type Text = Box<[u8]>;
/// The JSON text of a value, as received.
pub type Raw = Box<[u8]>;

// ---------------------------------------------------------------------------------------------
// An insertion-ordered map with O(1) removal (a slab of slots indexed by a hash table; removed
// slots are compacted away once they outnumber the live ones).

pub struct OrderedMap<V> {
    slots: Vec<Option<(Text, V)>>,
    table: HashTable<usize>,
    hasher: DefaultHashBuilder,
    live: usize,
}

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            table: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            live: 0,
        }
    }
}

impl<V> OrderedMap<V> {
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        use std::hash::BuildHasher;
        self.hasher.hash_one(key)
    }

    /// The slot of `key`, if present.
    #[inline]
    pub fn slot(&self, key: &[u8]) -> Option<usize> {
        let slots = &self.slots;
        self.table
            .find(self.hash(key), |&i| slots[i].as_ref().is_some_and(|(k, _)| **k == *key))
            .copied()
    }

    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.slot(key).map(|i| &self.slots[i].as_ref().expect("live slot").1)
    }

    pub fn at(&self, slot: usize) -> Option<(&[u8], &V)> {
        self.slots.get(slot)?.as_ref().map(|(k, v)| (&**k, v))
    }

    pub fn at_mut(&mut self, slot: usize) -> &mut V {
        &mut self.slots[slot].as_mut().expect("live slot").1
    }

    /// Append a key that is not present; returns its slot.
    pub fn push(&mut self, key: Text, value: V) -> usize {
        let i = self.slots.len();
        let h = self.hash(&key);
        let slots = &self.slots;
        let hasher = &self.hasher;
        self.table.insert_unique(h, i, |&j| {
            use std::hash::BuildHasher;
            hasher.hash_one(&*slots[j].as_ref().expect("live slot").0)
        });
        self.slots.push(Some((key, value)));
        self.live += 1;
        i
    }

    /// Remove the entry in `slot`. Slots of other entries stay valid until `compact` runs (only
    /// through `maybe_compact`, which callers use when they hold no slots).
    pub fn remove_slot(&mut self, slot: usize) -> Option<V> {
        let (key, value) = self.slots.get_mut(slot)?.take()?;
        let h = self.hash(&key);
        if let Ok(entry) = self.table.find_entry(h, |&i| i == slot) {
            entry.remove();
        }
        self.live -= 1;
        Some(value)
    }

    /// Drop removed slots when they outnumber the live entries. Returns whether slots moved.
    pub fn maybe_compact(&mut self) -> bool {
        let dead = self.slots.len() - self.live;
        if dead < 32 || dead < self.live {
            return false;
        }
        let slots = std::mem::take(&mut self.slots);
        self.table.clear();
        for (key, value) in slots.into_iter().flatten() {
            self.push(key, value);
            self.live -= 1;
        }
        true
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &V)> {
        self.slots.iter().flatten().map(|(k, v)| (&**k, v))
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.slots.iter().flatten().map(|(_, v)| v)
    }
}

// ---------------------------------------------------------------------------------------------
// Records

/// Known tool-call fields, in materialization order (`content` sits between `status` and
/// `locations` and is kept apart as a list of items).
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
const TC_KIND: usize = 1;
const TC_STATUS: usize = 2;
const TC_LOCATIONS: usize = 3;

#[derive(Clone, Default, Debug)]
pub struct ToolCall {
    /// `TOOL_CALL_FIELDS` values; never JSON `null` (null means absent in v1, unset in v2).
    pub fields: [Option<Raw>; 8],
    /// The items of `content`.
    pub content: Vec<Raw>,
    /// Unknown fields in first-set order.
    pub extra: Vec<(Text, Raw)>,
    /// Creation number (eviction order).
    pub seq: u64,
}

impl ToolCall {
    pub fn kind(&self) -> &[u8] {
        self.fields[TC_KIND].as_deref().unwrap_or(b"\"other\"")
    }

    pub fn status(&self) -> &[u8] {
        self.fields[TC_STATUS].as_deref().unwrap_or(b"\"pending\"")
    }

    pub fn locations(&self) -> &[u8] {
        self.fields[TC_LOCATIONS].as_deref().unwrap_or(b"[]")
    }

    fn finished(&self) -> bool {
        let Some(raw) = self.fields[TC_STATUS].as_deref() else {
            return false;
        };
        // Compare the string's value (a status may be written with escapes).
        let mut text = Vec::new();
        if raw.len() >= 2 && raw[0] == b'"' {
            let s = Str {
                start: 1,
                end: raw.len() - 1,
                escaped: raw.contains(&b'\\'),
            };
            text.extend_from_slice(crate::scanner::string_text(raw, s, &mut Vec::new()));
        }
        matches!(&text[..], b"completed" | b"failed" | b"cancelled")
    }

    /// Bytes held (for the memory report).
    pub fn heap_bytes(&self) -> usize {
        let f: usize = self.fields.iter().flatten().map(|r| r.len()).sum();
        let c: usize = self.content.iter().map(|r| r.len() + 16).sum();
        let e: usize = self.extra.iter().map(|(k, v)| k.len() + v.len() + 32).sum();
        f + c + e
    }
}

/// Known terminal fields (stored in this slot order; materialized as `command`, `cwd`, `output`,
/// `outputMeta`, `exitStatus`, `_meta`).
pub const TERMINAL_FIELDS: [&str; 4] = ["command", "cwd", "exitStatus", "_meta"];

#[derive(Clone, Default, Debug)]
pub struct Terminal {
    pub fields: [Option<Raw>; 4],
    pub output: Vec<u8>,
    pub output_meta: Option<Raw>,
    pub extra: Vec<(Text, Raw)>,
}

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

    pub fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Outcome::Pending,
            "selected" => Outcome::Selected,
            "cancelled" => Outcome::Cancelled,
            "invalid" => Outcome::Invalid,
            "unknown" => Outcome::Unknown,
            "error" => Outcome::Error,
            _ => return None,
        })
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
    fn of(data: &[u8], span: Span) -> Self {
        match span.ty {
            JsonType::String => IdKey::Str(text_of(data, span.str().expect("string"))),
            JsonType::Number => IdKey::Int(parse_i64(&data[span.range()]).unwrap_or(0)),
            _ => IdKey::Null,
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

#[derive(Default)]
pub struct Session {
    pub tool_calls: OrderedMap<ToolCall>,
    pub terminals: OrderedMap<Terminal>,
    /// Plan records as JSON text.
    pub plans: OrderedMap<Raw>,
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
}

/// Who sent a frame (only responses care: the client answers permission requests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Unknown,
    Agent,
    Client,
}

// ---------------------------------------------------------------------------------------------
// Reading objects

/// One member of an object: its key, its value, and for array values under the key `content`,
/// the range of its items in the item list.
#[derive(Clone, Copy)]
struct Member {
    key: Str,
    value: Span,
    items: (u32, u32),
    code: u8,
}

const F_IGNORE: u8 = 100;
const F_ID: u8 = 101;
const F_CONTENT: u8 = 102;
const F_EXTRA: u8 = 103;
const F_OUTPUT: u8 = 104;
const F_DATA: u8 = 105;

#[inline]
fn text_of(data: &[u8], s: Str) -> Text {
    if s.escaped {
        let mut out = Vec::with_capacity(s.end - s.start);
        unescape_into(data, s, &mut out);
        out.into_boxed_slice()
    } else {
        data[s.start..s.end].into()
    }
}

#[inline]
fn raw(data: &[u8], span: Span) -> Raw {
    data[span.range()].into()
}

/// Does the string token equal `name`?
#[inline(always)]
fn str_is(data: &[u8], s: Str, name: &[u8]) -> bool {
    if s.escaped {
        crate::scanner::string_equals(data, s, name)
    } else {
        &data[s.start..s.end] == name
    }
}

/// The key bytes to classify on (unescaped into `scratch` only when needed).
#[inline(always)]
fn key_bytes<'a>(data: &'a [u8], key: Str, scratch: &'a mut Vec<u8>) -> &'a [u8] {
    crate::scanner::string_text(data, key, scratch)
}

/// Read the members of the (valid) object `obj` of `data`. Items of array values under the key
/// `content` are listed in `items`.
fn walk(data: &[u8], obj: Span, members: &mut Vec<Member>, items: &mut Vec<Span>) -> Result<(), DecodeError> {
    members.clear();
    items.clear();
    let base = obj.start as usize;
    let slice = &data[obj.range()];
    let mut sc = Scanner::new(slice);
    sc.enter()?;
    if sc.peek() == Some(b'}') {
        return Ok(());
    }
    loop {
        sc.skip_ws();
        let mut key = sc.scan_key()?;
        sc.skip_ws();
        let mut range = (0, 0);
        let value = if sc.peek() == Some(b'[') && str_is(slice, key, b"content") {
            let start = sc.pos;
            let first = items.len() as u32;
            sc.enter()?;
            if sc.peek() == Some(b']') {
                sc.pos += 1;
            } else {
                loop {
                    sc.skip_ws();
                    let item = scan_span(&mut sc)?;
                    items.push(item.shifted_up(base));
                    match sc.peek() {
                        Some(b',') => sc.pos += 1,
                        _ => {
                            sc.pos += 1;
                            break;
                        }
                    }
                }
            }
            sc.leave();
            range = (first, items.len() as u32);
            Span::new(JsonType::Array, start, sc.pos)
        } else {
            scan_span(&mut sc)?
        };
        key.start += base;
        key.end += base;
        members.push(Member {
            key,
            value: value.shifted_up(base),
            items: range,
            code: F_IGNORE,
        });
        match sc.peek() {
            Some(b',') => sc.pos += 1,
            _ => return Ok(()),
        }
    }
}

/// `walk`, from the members the envelope walk already captured.
fn from_captured(captured: &Captured, members: &mut Vec<Member>, items: &mut Vec<Span>) {
    members.clear();
    items.clear();
    items.extend_from_slice(&captured.items);
    members.extend(captured.members.iter().map(|&(key, value, items)| Member {
        key,
        value,
        items,
        code: F_IGNORE,
    }));
}

/// The last member `name` of the (valid) object `obj`.
fn find_member(data: &[u8], obj: Span, name: &[u8]) -> Option<Span> {
    let [found] = find_members(data, obj, [name]);
    found
}

/// The last member of each name in `names` of the (valid) object `obj`, in one walk.
fn find_members<const N: usize>(data: &[u8], obj: Span, names: [&[u8]; N]) -> [Option<Span>; N] {
    let mut found = [None; N];
    let slice = &data[obj.range()];
    let mut sc = Scanner::new(slice);
    if sc.enter().is_err() || sc.peek() == Some(b'}') {
        return found;
    }
    loop {
        sc.skip_ws();
        let Ok(key) = sc.scan_key() else { return found };
        sc.skip_ws();
        let Ok(value) = scan_span(&mut sc) else { return found };
        if let Some(i) = names.iter().position(|name| str_is(slice, key, name)) {
            found[i] = Some(value.shifted_up(obj.start as usize));
        }
        match sc.peek() {
            Some(b',') => sc.pos += 1,
            _ => return found,
        }
    }
}

/// The items of the (valid) array `arr`.
fn array_items(data: &[u8], arr: Span) -> Vec<Span> {
    let slice = &data[arr.range()];
    let mut sc = Scanner::new(slice);
    let mut out = Vec::new();
    if sc.enter().is_err() {
        return out;
    }
    if sc.peek() == Some(b']') {
        return out;
    }
    loop {
        sc.skip_ws();
        match scan_span(&mut sc) {
            Ok(item) => out.push(item.shifted_up(arr.start as usize)),
            Err(_) => return out,
        }
        match sc.peek() {
            Some(b',') => sc.pos += 1,
            _ => return out,
        }
    }
}

/// `expected "{path}" to be {what}, found {value}` at the value, or `found none` at `parent`.
#[cold]
#[inline(never)]
fn bad(data: &[u8], kind: &'static str, path: &str, what: &str, value: Option<Span>, parent: Span) -> DecodeError {
    match value {
        Some(v) => {
            let r = v.range();
            DecodeError::params(
                kind,
                format!(
                    "expected \"{path}\" to be {what}, found {}",
                    describe_value(data, v.ty, r.start, r.end)
                ),
                r.start,
            )
        }
        None => DecodeError::params(
            kind,
            format!("expected \"{path}\" to be {what}, found none"),
            parent.start as usize,
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Base64 (RFC 4648, standard alphabet, padded; DESIGN §7.4)

const B64_INVALID: u8 = 0xFF;
static B64_DECODE: [u8; 256] = {
    let mut t = [B64_INVALID; 256];
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut i = 0;
    while i < 64 {
        t[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    t
};

/// Append the bytes of padded standard base64 `text` to `out`; `false` (and `out` unchanged) if
/// `text` is not such base64.
pub fn base64_decode(text: &[u8], out: &mut Vec<u8>) -> bool {
    if text.len() % 4 != 0 {
        return false;
    }
    let pad = text.iter().rev().take(2).take_while(|&&b| b == b'=').count();
    let body = &text[..text.len() - pad];
    if body.iter().any(|&b| B64_DECODE[b as usize] == B64_INVALID) {
        return false;
    }
    let start = out.len();
    out.reserve(body.len() / 4 * 3 + 2);
    let mut chunks = body.chunks_exact(4);
    for c in &mut chunks {
        let n = (u32::from(B64_DECODE[c[0] as usize]) << 18)
            | (u32::from(B64_DECODE[c[1] as usize]) << 12)
            | (u32::from(B64_DECODE[c[2] as usize]) << 6)
            | u32::from(B64_DECODE[c[3] as usize]);
        out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
    }
    let rest = chunks.remainder();
    match rest.len() {
        0 => {}
        2 => {
            let n = (u32::from(B64_DECODE[rest[0] as usize]) << 18) | (u32::from(B64_DECODE[rest[1] as usize]) << 12);
            out.push((n >> 16) as u8);
        }
        3 => {
            let n = (u32::from(B64_DECODE[rest[0] as usize]) << 18)
                | (u32::from(B64_DECODE[rest[1] as usize]) << 12)
                | (u32::from(B64_DECODE[rest[2] as usize]) << 6);
            out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8]);
        }
        _ => {
            out.truncate(start);
            return false;
        }
    }
    true
}

/// Standard padded base64 of `data`.
pub fn base64_encode(data: &[u8], out: &mut Vec<u8>) {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut chunks = data.chunks_exact(3);
    for c in &mut chunks {
        let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
        out.extend_from_slice(&[
            A[(n >> 18) as usize & 63],
            A[(n >> 12) as usize & 63],
            A[(n >> 6) as usize & 63],
            A[n as usize & 63],
        ]);
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.extend_from_slice(&[A[(n >> 18) as usize & 63], A[(n >> 12) as usize & 63], b'=', b'=']);
        }
        [a, b] => {
            let n = (u32::from(a) << 16) | (u32::from(b) << 8);
            out.extend_from_slice(&[
                A[(n >> 18) as usize & 63],
                A[(n >> 12) as usize & 63],
                A[(n >> 6) as usize & 63],
                b'=',
            ]);
        }
        _ => {}
    }
}

/// Decode the base64 string value `span` (a JSON string) or report it.
fn decode_b64(data: &[u8], span: Span, path: &str, parent: Span, out: &mut Vec<u8>) -> Result<(), DecodeError> {
    let ok = match span.str() {
        Some(s) if !s.escaped => base64_decode(&data[s.start..s.end], out),
        Some(s) => base64_decode(&text_of(data, s), out),
        None => false,
    };
    if ok {
        Ok(())
    } else {
        Err(bad(data, "invalid_base64", path, "base64 text", Some(span), parent))
    }
}

// ---------------------------------------------------------------------------------------------
// The store

#[derive(Clone, Copy, PartialEq, Eq)]
enum TcOp {
    /// v1 `tool_call`: replace whole.
    Create,
    /// `tool_call_update`: patch / upsert.
    Update,
    /// v2 `tool_call_content_chunk`: append.
    Chunk,
}

pub struct Store {
    fixed: Option<u8>,
    negotiated: Option<u8>,
    max_tool_calls: Option<usize>,
    pub sessions: OrderedMap<Session>,
    /// Every permission request in request order (`None`: replaced by a later one).
    permissions: Vec<Option<Permission>>,
    /// Pending requests by id → index in `permissions`.
    pending: HashMap<IdKey, usize>,
    /// Creation order of tool calls (kept only with a bound): (seq, session slot, id).
    order: VecDeque<(u64, usize, Text)>,
    tool_call_count: usize,
    evicted: u64,
    next_seq: u64,
    members: Vec<Member>,
    items: Vec<Span>,
    scratch: Vec<u8>,
}

impl Store {
    pub fn new(protocol_version: Option<u8>, max_tool_calls: Option<usize>) -> Self {
        Self {
            fixed: protocol_version,
            negotiated: None,
            max_tool_calls,
            sessions: OrderedMap::default(),
            permissions: Vec::new(),
            pending: HashMap::default(),
            order: VecDeque::new(),
            tool_call_count: 0,
            evicted: 0,
            next_seq: 0,
            members: Vec::new(),
            items: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// The protocol version in force.
    pub fn version(&self) -> u8 {
        self.fixed.or(self.negotiated).unwrap_or(1)
    }

    pub fn fixed_version(&self) -> Option<u8> {
        self.fixed
    }

    pub fn negotiated_version(&self) -> Option<u8> {
        self.negotiated
    }

    pub fn set_negotiated_version(&mut self, v: Option<u8>) {
        self.negotiated = v;
    }

    pub fn max_tool_calls(&self) -> Option<usize> {
        self.max_tool_calls
    }

    pub fn tool_call_count(&self) -> usize {
        self.tool_call_count
    }

    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    pub fn set_evicted(&mut self, n: u64) {
        self.evicted = n;
    }

    pub fn session(&self, id: &[u8]) -> Option<&Session> {
        self.sessions.get(id)
    }

    pub fn session_id(&self, slot: usize) -> &[u8] {
        self.sessions.at(slot).expect("session slot").0
    }

    /// Permission records in request order.
    pub fn permissions(&self) -> impl Iterator<Item = &Permission> {
        self.permissions.iter().flatten()
    }

    /// The latest request with this id (pending or resolved).
    pub fn permission(&self, id: &IdKey) -> Option<&Permission> {
        if let Some(&i) = self.pending.get(id) {
            return self.permissions[i].as_ref();
        }
        self.permissions.iter().rev().flatten().find(|p| p.id == *id)
    }

    fn session_slot(&mut self, data: &[u8], sid: Str) -> usize {
        let key: &[u8] = if sid.escaped {
            self.scratch.clear();
            unescape_into(data, sid, &mut self.scratch);
            &self.scratch
        } else {
            &data[sid.start..sid.end]
        };
        match self.sessions.slot(key) {
            Some(s) => s,
            None => {
                let key: Text = key.into();
                self.sessions.push(key, Session::default())
            }
        }
    }

    /// Apply one validated message (`data` its bytes, `env` its envelope).
    pub fn apply(&mut self, data: &[u8], env: &Envelope, source: Source) -> Result<Option<Change>, DecodeError> {
        self.apply_captured(data, env, None, source)
    }

    /// `apply` with the update members captured by `parse_line_captured` (saves a second walk).
    pub fn apply_captured(
        &mut self,
        data: &[u8],
        env: &Envelope,
        captured: Option<&Captured>,
        source: Source,
    ) -> Result<Option<Change>, DecodeError> {
        match env.kind {
            Kind::Notification => {
                let Some(method) = env.method.and_then(|m| m.str()) else {
                    return Ok(None);
                };
                if str_is(data, method, b"session/update") {
                    self.session_update(data, env, captured)
                } else if str_is(data, method, b"session/cancel") {
                    let Some(params) = env.params.filter(|p| p.ty == JsonType::Object) else {
                        return Ok(None);
                    };
                    let sid = require_session(data, env, params)?;
                    Ok(Some(Change {
                        session: Some(sid),
                        target: Target::Session,
                        id: Ident::None,
                        action: Action::Cancelled,
                        tool_call_id: None,
                        permission: None,
                    }))
                } else {
                    Ok(None)
                }
            }
            Kind::Request => {
                let is_permission = env
                    .method
                    .and_then(|m| m.str())
                    .is_some_and(|m| str_is(data, m, b"session/request_permission"));
                if is_permission {
                    self.permission_request(data, env)
                } else {
                    Ok(None)
                }
            }
            Kind::Response | Kind::Error => Ok(self.response(data, env, source)),
        }
    }

    fn session_update(
        &mut self,
        data: &[u8],
        env: &Envelope,
        captured: Option<&Captured>,
    ) -> Result<Option<Change>, DecodeError> {
        let (Some(params), Some(update)) = (env.params, env.update) else {
            return Ok(None);
        };
        if params.ty != JsonType::Object || update.ty != JsonType::Object {
            return Ok(None);
        }
        let Some(kind) = env.update_kind.and_then(|k| k.str()) else {
            return Ok(None);
        };
        let mut kscratch = Vec::new();
        let kind = key_bytes(data, kind, &mut kscratch);
        enum Op {
            Tc(TcOp),
            TerminalUpdate,
            TerminalChunk,
            Plan,
            PlanUpdate,
            PlanRemoved,
        }
        let op = match kind {
            b"tool_call_update" => Op::Tc(TcOp::Update),
            b"tool_call_content_chunk" => Op::Tc(TcOp::Chunk),
            b"tool_call" => Op::Tc(TcOp::Create),
            b"terminal_update" => Op::TerminalUpdate,
            b"terminal_output_chunk" => Op::TerminalChunk,
            b"plan" => Op::Plan,
            b"plan_update" => Op::PlanUpdate,
            b"plan_removed" => Op::PlanRemoved,
            _ => return Ok(None),
        };
        let sid = require_session(data, env, params)?;
        let change = match op {
            Op::Tc(op) => {
                let tcid = self.prepare_tool_call(data, update, "params.update", op, captured)?;
                self.commit_tool_call(data, sid, tcid, op)
            }
            Op::TerminalUpdate | Op::TerminalChunk => {
                self.terminal(data, sid, update, matches!(op, Op::TerminalChunk), captured)?
            }
            Op::Plan | Op::PlanUpdate | Op::PlanRemoved => match self.plan(data, sid, update, kind, captured)? {
                Some(c) => c,
                None => return Ok(None),
            },
        };
        Ok(Some(change))
    }

    /// The members of `obj` into `self.members` / `self.items`.
    fn fill_members(&mut self, data: &[u8], obj: Span, captured: Option<&Captured>) -> Result<(), DecodeError> {
        match captured {
            Some(c) => {
                from_captured(c, &mut self.members, &mut self.items);
                Ok(())
            }
            None => walk(data, obj, &mut self.members, &mut self.items),
        }
    }

    // -- tool calls ---------------------------------------------------------------------------

    /// Walk and validate the tool-call object `obj` (members left in `self.members`); returns its
    /// `toolCallId` token.
    fn prepare_tool_call(
        &mut self,
        data: &[u8],
        obj: Span,
        path: &str,
        op: TcOp,
        captured: Option<&Captured>,
    ) -> Result<Str, DecodeError> {
        self.fill_members(data, obj, captured)?;
        let mut id: Option<Span> = None;
        let mut content: Option<usize> = None;
        let mut locations: Option<usize> = None;
        let mut last = [u8::MAX; 8];
        let mut has_extra = false;
        let mut ks = Vec::new();
        for (i, m) in self.members.iter_mut().enumerate() {
            let k = key_bytes(data, m.key, &mut ks);
            m.code = match k {
                b"toolCallId" => {
                    id = Some(m.value);
                    F_ID
                }
                b"content" => {
                    content = Some(i);
                    F_CONTENT
                }
                _ if op == TcOp::Chunk => F_IGNORE,
                b"sessionUpdate" => F_IGNORE,
                b"title" => 0,
                b"kind" => 1,
                b"status" => 2,
                b"locations" => {
                    locations = Some(i);
                    3
                }
                b"rawInput" => 4,
                b"rawOutput" => 5,
                b"name" => 6,
                b"_meta" => 7,
                _ => {
                    has_extra = true;
                    F_EXTRA
                }
            };
            if (m.code as usize) < 8 {
                last[m.code as usize] = i as u8;
            }
        }
        let id = match id.and_then(|s| s.str()) {
            Some(s) => s,
            None => {
                return Err(bad(
                    data,
                    "invalid_tool_call_id",
                    &format!("{path}.toolCallId"),
                    "a string",
                    id,
                    obj,
                ));
            }
        };
        let content_value = content.map(|i| self.members[i].value);
        if op == TcOp::Chunk {
            if content_value.map(|v| v.ty) != Some(JsonType::Object) {
                return Err(bad(
                    data,
                    "invalid_content",
                    &format!("{path}.content"),
                    "an object",
                    content_value,
                    obj,
                ));
            }
        } else {
            if let Some(v) = content_value {
                if !matches!(v.ty, JsonType::Array | JsonType::Null) {
                    return Err(bad(
                        data,
                        "invalid_content",
                        &format!("{path}.content"),
                        "an array or null",
                        Some(v),
                        obj,
                    ));
                }
            }
            if let Some(v) = locations.map(|i| self.members[i].value) {
                if !matches!(v.ty, JsonType::Array | JsonType::Null) {
                    return Err(bad(
                        data,
                        "invalid_locations",
                        &format!("{path}.locations"),
                        "an array or null",
                        Some(v),
                        obj,
                    ));
                }
            }
        }
        // Only the last of duplicate members counts (as in a parsed object).
        for (i, m) in self.members.iter_mut().enumerate() {
            let c = m.code as usize;
            if (c < 8 && last[c] as usize != i) || (m.code == F_CONTENT && content != Some(i)) || m.code == F_ID {
                m.code = F_IGNORE;
            }
        }
        if has_extra {
            dedupe_extras(data, &mut self.members);
        }
        Ok(id)
    }

    /// Apply the members prepared by `prepare_tool_call`.
    fn commit_tool_call(&mut self, data: &[u8], sid: Str, tcid: Str, op: TcOp) -> Change {
        let v2 = self.version() >= 2;
        let slot = self.session_slot(data, sid);
        let members = std::mem::take(&mut self.members);
        let items = std::mem::take(&mut self.items);
        let seq = self.next_seq;
        let session = self.sessions.at_mut(slot);
        let key: &[u8] = if tcid.escaped {
            self.scratch.clear();
            unescape_into(data, tcid, &mut self.scratch);
            &self.scratch
        } else {
            &data[tcid.start..tcid.end]
        };
        let existing = session.tool_calls.slot(key);
        let (action, created_key) = match existing {
            Some(s) => {
                let tc = session.tool_calls.at_mut(s);
                match op {
                    TcOp::Create => {
                        let mut fresh = ToolCall {
                            seq: tc.seq,
                            ..ToolCall::default()
                        };
                        patch(&mut fresh, data, &members, &items, false);
                        *tc = fresh;
                        (Action::Replaced, None)
                    }
                    TcOp::Update => {
                        patch(tc, data, &members, &items, v2);
                        (Action::Updated, None)
                    }
                    TcOp::Chunk => {
                        append_chunk(tc, data, &members);
                        (Action::Appended, None)
                    }
                }
            }
            None => {
                let mut tc = ToolCall {
                    seq,
                    ..ToolCall::default()
                };
                match op {
                    TcOp::Chunk => append_chunk(&mut tc, data, &members),
                    // Created from the non-null fields: null never sets anything on a new record.
                    _ => patch(&mut tc, data, &members, &items, false),
                }
                let key: Text = key.into();
                let k2 = self.max_tool_calls.map(|_| key.clone());
                session.tool_calls.push(key, tc);
                (Action::Created, k2.map(|k| (k, seq)))
            }
        };
        self.members = members;
        self.items = items;
        if action == Action::Created {
            self.next_seq += 1;
            self.tool_call_count += 1;
            if let Some((key, seq)) = created_key {
                self.order.push_back((seq, slot, key));
                self.enforce_bound(seq);
            }
        }
        Change {
            session: Some(sid),
            target: Target::ToolCall,
            id: Ident::Text(tcid),
            action,
            tool_call_id: Some(tcid),
            permission: None,
        }
    }

    /// Drop tool calls beyond the bound (DESIGN §7.8); `keep` is the one just touched.
    fn enforce_bound(&mut self, keep: u64) {
        let Some(max) = self.max_tool_calls else {
            return;
        };
        while self.tool_call_count > max {
            // Forget stale entries at the front (records already gone or recreated).
            while let Some((seq, slot, key)) = self.order.front() {
                let live = self
                    .sessions
                    .at(*slot)
                    .and_then(|(_, s)| s.tool_calls.get(key))
                    .is_some_and(|tc| tc.seq == *seq);
                if live {
                    break;
                }
                self.order.pop_front();
            }
            let mut victim = None;
            let mut oldest = None;
            for (i, (seq, slot, key)) in self.order.iter().enumerate() {
                if *seq == keep {
                    continue;
                }
                let Some(tc) = self.sessions.at(*slot).and_then(|(_, s)| s.tool_calls.get(key)) else {
                    continue;
                };
                if tc.seq != *seq {
                    continue;
                }
                if oldest.is_none() {
                    oldest = Some(i);
                }
                if tc.finished() {
                    victim = Some(i);
                    break;
                }
            }
            let Some(i) = victim.or(oldest) else {
                return;
            };
            let (_, slot, key) = self.order.remove(i).expect("victim");
            let session = self.sessions.at_mut(slot);
            if let Some(s) = session.tool_calls.slot(&key) {
                session.tool_calls.remove_slot(s);
                session.tool_calls.maybe_compact();
            }
            self.tool_call_count -= 1;
            self.evicted += 1;
        }
    }

    // -- terminals ----------------------------------------------------------------------------

    fn terminal(
        &mut self,
        data: &[u8],
        sid: Str,
        update: Span,
        chunk: bool,
        captured: Option<&Captured>,
    ) -> Result<Change, DecodeError> {
        self.fill_members(data, update, captured)?;
        let mut id = None;
        let mut output = None;
        let mut exit = None;
        let mut chunk_data = None;
        let mut last = [u8::MAX; 4];
        let mut ks = Vec::new();
        for (i, m) in self.members.iter_mut().enumerate() {
            let k = key_bytes(data, m.key, &mut ks);
            m.code = match k {
                b"terminalId" => {
                    id = Some(m.value);
                    F_ID
                }
                _ if chunk => {
                    if k == b"data" {
                        chunk_data = Some(m.value);
                        F_DATA
                    } else {
                        F_IGNORE
                    }
                }
                // `outputMeta` is derived from `output._meta`, never a field of its own.
                b"sessionUpdate" | b"outputMeta" => F_IGNORE,
                b"output" => {
                    output = Some((i, m.value));
                    F_OUTPUT
                }
                b"command" => 0,
                b"cwd" => 1,
                b"exitStatus" => {
                    exit = Some(m.value);
                    2
                }
                b"_meta" => 3,
                _ => F_EXTRA,
            };
            if (m.code as usize) < 4 {
                last[m.code as usize] = i as u8;
            }
        }
        dedupe_extras(data, &mut self.members);
        let Some(tid) = id.and_then(|s| s.str()) else {
            return Err(bad(
                data,
                "invalid_terminal_id",
                "params.update.terminalId",
                "a string",
                id,
                update,
            ));
        };
        let mut bytes = Vec::new();
        let mut output_meta: Option<Option<Raw>> = None;
        if chunk {
            match chunk_data {
                Some(v) => decode_b64(data, v, "params.update.data", update, &mut bytes)?,
                None => {
                    return Err(bad(
                        data,
                        "invalid_base64",
                        "params.update.data",
                        "base64 text",
                        None,
                        update,
                    ))
                }
            }
        } else {
            if let Some((_, v)) = output {
                match v.ty {
                    JsonType::Null => output_meta = Some(None),
                    JsonType::Object => {
                        let d = find_member(data, v, b"data");
                        match d {
                            Some(d) => decode_b64(data, d, "params.update.output.data", v, &mut bytes)?,
                            None => {
                                return Err(bad(
                                    data,
                                    "invalid_base64",
                                    "params.update.output.data",
                                    "base64 text",
                                    None,
                                    v,
                                ))
                            }
                        }
                        output_meta = Some(
                            find_member(data, v, b"_meta")
                                .filter(|m| m.ty != JsonType::Null)
                                .map(|m| raw(data, m)),
                        );
                    }
                    _ => {
                        return Err(bad(
                            data,
                            "invalid_output",
                            "params.update.output",
                            "an object or null",
                            Some(v),
                            update,
                        ))
                    }
                }
            }
            if let Some(v) = exit {
                if !matches!(v.ty, JsonType::Object | JsonType::Null) {
                    return Err(bad(
                        data,
                        "invalid_exit_status",
                        "params.update.exitStatus",
                        "an object or null",
                        Some(v),
                        update,
                    ));
                }
            }
        }
        let slot = self.session_slot(data, sid);
        let key = text_of(data, tid);
        let session = self.sessions.at_mut(slot);
        let (t, existed) = match session.terminals.slot(&key) {
            Some(s) => (session.terminals.at_mut(s), true),
            None => {
                let s = session.terminals.push(key, Terminal::default());
                (session.terminals.at_mut(s), false)
            }
        };
        let action = if chunk {
            t.output.extend_from_slice(&bytes);
            Action::Appended
        } else {
            let members = &self.members;
            for (i, m) in members.iter().enumerate() {
                let null = m.value.ty == JsonType::Null;
                match m.code {
                    c if (c as usize) < 4 && last[c as usize] as usize == i => {
                        t.fields[c as usize] = (!null).then(|| raw(data, m.value));
                    }
                    c if (c as usize) < 4 => {}
                    F_OUTPUT if output.is_some_and(|(j, _)| j == i) => {
                        t.output = std::mem::take(&mut bytes);
                        t.output_meta = output_meta.take().flatten();
                    }
                    F_EXTRA => {
                        set_extra(&mut t.extra, text_of(data, m.key), (!null).then(|| raw(data, m.value)));
                    }
                    _ => {}
                }
            }
            Action::Updated
        };
        Ok(Change {
            session: Some(sid),
            target: Target::Terminal,
            id: Ident::Text(tid),
            action: if existed { action } else { Action::Created },
            tool_call_id: None,
            permission: None,
        })
    }

    // -- plans --------------------------------------------------------------------------------

    fn plan(
        &mut self,
        data: &[u8],
        sid: Str,
        update: Span,
        kind: &[u8],
        captured: Option<&Captured>,
    ) -> Result<Option<Change>, DecodeError> {
        // A member of the update: from the envelope walk's capture when there is one.
        let member = |name: &[u8]| match captured {
            Some(c) => c
                .members
                .iter()
                .rev()
                .find(|(k, _, _)| str_is(data, *k, name))
                .map(|&(_, v, _)| v),
            None => find_member(data, update, name),
        };
        let (id, id_key, record): (Ident, Text, Option<Raw>) = match kind {
            b"plan" => {
                let entries = member(b"entries");
                let Some(e) = entries.filter(|e| e.ty == JsonType::Array) else {
                    return Err(bad(
                        data,
                        "invalid_plan",
                        "params.update.entries",
                        "an array",
                        entries,
                        update,
                    ));
                };
                let mut rec = b"{\"type\":\"items\",\"planId\":\"main\",\"entries\":".to_vec();
                rec.extend_from_slice(&data[e.range()]);
                if let Some(m) = member(b"_meta").filter(|m| m.ty != JsonType::Null) {
                    rec.extend_from_slice(b",\"_meta\":");
                    rec.extend_from_slice(&data[m.range()]);
                }
                rec.push(b'}');
                (Ident::Static("main"), (*b"main").into(), Some(rec.into_boxed_slice()))
            }
            b"plan_update" => {
                let plan = member(b"plan");
                let Some(p) = plan.filter(|p| p.ty == JsonType::Object) else {
                    return Err(bad(
                        data,
                        "invalid_plan",
                        "params.update.plan",
                        "an object",
                        plan,
                        update,
                    ));
                };
                let pid = find_member(data, p, b"planId");
                let Some(s) = pid.and_then(|s| s.str()) else {
                    return Err(bad(
                        data,
                        "invalid_plan",
                        "params.update.plan.planId",
                        "a string",
                        pid,
                        p,
                    ));
                };
                (Ident::Text(s), text_of(data, s), Some(raw(data, p)))
            }
            _ => {
                let pid = member(b"planId");
                let Some(s) = pid.and_then(|s| s.str()) else {
                    return Err(bad(
                        data,
                        "invalid_plan",
                        "params.update.planId",
                        "a string",
                        pid,
                        update,
                    ));
                };
                (Ident::Text(s), text_of(data, s), None)
            }
        };
        let change = |action| {
            Some(Change {
                session: Some(sid),
                target: Target::Plan,
                id,
                action,
                tool_call_id: None,
                permission: None,
            })
        };
        match record {
            Some(rec) => {
                let slot = self.session_slot(data, sid);
                let plans = &mut self.sessions.at_mut(slot).plans;
                match plans.slot(&id_key) {
                    Some(s) => {
                        *plans.at_mut(s) = rec;
                        Ok(change(Action::Replaced))
                    }
                    None => {
                        plans.push(id_key, rec);
                        Ok(change(Action::Created))
                    }
                }
            }
            None => {
                let mut key = Vec::new();
                let sid_text = crate::scanner::string_text(data, sid, &mut key).to_vec();
                let Some(slot) = self.sessions.slot(&sid_text) else {
                    return Ok(None);
                };
                let plans = &mut self.sessions.at_mut(slot).plans;
                match plans.slot(&id_key) {
                    Some(s) => {
                        plans.remove_slot(s);
                        plans.maybe_compact();
                        Ok(change(Action::Removed))
                    }
                    None => Ok(None),
                }
            }
        }
    }

    // -- permissions --------------------------------------------------------------------------

    fn permission_request(&mut self, data: &[u8], env: &Envelope) -> Result<Option<Change>, DecodeError> {
        let Some(params) = env.params.filter(|p| p.ty == JsonType::Object) else {
            return Ok(None);
        };
        let sid = require_session(data, env, params)?;
        // The tool-call update: `toolCall`, else a `tool_call` subject's `toolCall`.
        let mut target: Option<(Option<Span>, Span, &'static str)> = None;
        let [tool_call, subject, options] = find_members(data, params, [b"toolCall", b"subject", b"options"]);
        match tool_call.filter(|t| t.ty != JsonType::Null) {
            Some(t) => target = Some((Some(t), params, "params.toolCall")),
            None => {
                if let Some(subject) = subject.filter(|s| s.ty == JsonType::Object) {
                    let [ty, tool_call] = find_members(data, subject, [b"type", b"toolCall"]);
                    let is_tool_call = ty.and_then(|t| t.str()).is_some_and(|t| str_is(data, t, b"tool_call"));
                    if is_tool_call {
                        target = Some((tool_call, subject, "params.subject.toolCall"));
                    }
                }
            }
        }
        let mut tcid = None;
        if let Some((Some(t), _, path)) = target {
            if t.ty == JsonType::Object {
                tcid = Some(self.prepare_tool_call(data, t, path, TcOp::Update, None)?);
            }
        }
        let Some(options) = options.filter(|o| o.ty == JsonType::Array) else {
            return Err(bad(
                data,
                "invalid_options",
                "params.options",
                "an array",
                options,
                params,
            ));
        };
        if let Some((t, parent, path)) = target {
            if t.map_or(true, |t| t.ty != JsonType::Object) {
                return Err(bad(data, "invalid_tool_call", path, "an object", t, parent));
            }
        }
        if let Some(tcid) = tcid {
            self.commit_tool_call(data, sid, tcid, TcOp::Update);
        }
        let slot = self.session_slot(data, sid);
        let id_span = env.id.expect("a request has an id");
        let key = IdKey::of(data, id_span);
        if let Some(old) = self.pending.remove(&key) {
            self.permissions[old] = None;
        }
        self.pending.insert(key.clone(), self.permissions.len());
        self.permissions.push(Some(Permission {
            id: key,
            session: slot,
            tool_call_id: tcid.map(|t| text_of(data, t)),
            options: raw(data, options),
            outcome: Outcome::Pending,
            option_id: None,
            approved: false,
            response: None,
        }));
        Ok(Some(Change {
            session: Some(sid),
            target: Target::Permission,
            id: Ident::Id(id_span),
            action: Action::Requested,
            tool_call_id: tcid,
            permission: Some(self.permissions.len() - 1),
        }))
    }

    fn response(&mut self, data: &[u8], env: &Envelope, source: Source) -> Option<Change> {
        let id_span = env.id?;
        if source != Source::Agent && !self.pending.is_empty() {
            let key = IdKey::of(data, id_span);
            if let Some(index) = self.pending.remove(&key) {
                let p = self.permissions[index].as_mut().expect("pending record");
                resolve(p, data, env);
                return Some(Change {
                    session: None,
                    target: Target::Permission,
                    id: Ident::Id(id_span),
                    action: Action::Resolved,
                    tool_call_id: None,
                    permission: Some(index),
                });
            }
        }
        if env.kind != Kind::Response {
            return None;
        }
        // `result.protocolVersion`, located by the envelope walk (set only for an object result).
        let pv = env.protocol_version.filter(|v| v.ty == JsonType::Number && v.is_int)?;
        let text = &data[pv.range()];
        let version = match parse_i64(text) {
            Some(v) if v <= 1 => 1,
            Some(_) => 2,
            None if text.starts_with(b"-") => 1,
            None => 2,
        };
        self.negotiated = Some(version);
        Some(Change {
            session: None,
            target: Target::Protocol,
            id: Ident::Version(version),
            action: Action::Negotiated,
            tool_call_id: None,
            permission: None,
        })
    }

    /// The record a permission change refers to.
    pub fn permission_at(&self, index: usize) -> Option<&Permission> {
        self.permissions.get(index)?.as_ref()
    }

    // -- restoring a checkpoint -----------------------------------------------------------------

    /// The session slot for `id`, created if needed (restore).
    pub fn restore_session(&mut self, id: &[u8]) -> usize {
        match self.sessions.slot(id) {
            Some(s) => s,
            None => self.sessions.push(id.into(), Session::default()),
        }
    }

    /// Add a tool call (restore): `fields` are (name, JSON text) pairs of a record, in order.
    pub fn restore_tool_call(&mut self, session: usize, id: &[u8], fields: Vec<(Text, Raw)>, content: Vec<Raw>) {
        let mut tc = ToolCall {
            seq: self.next_seq,
            content,
            ..ToolCall::default()
        };
        for (name, value) in fields {
            match TOOL_CALL_FIELDS.iter().position(|f| f.as_bytes() == &*name) {
                Some(i) => tc.fields[i] = Some(value),
                None => tc.extra.push((name, value)),
            }
        }
        let key: Text = id.into();
        if self.max_tool_calls.is_some() {
            self.order.push_back((self.next_seq, session, key.clone()));
        }
        self.next_seq += 1;
        self.tool_call_count += 1;
        self.sessions.at_mut(session).tool_calls.push(key, tc);
    }

    pub fn restore_terminal(&mut self, session: usize, id: &[u8], terminal: Terminal) {
        self.sessions.at_mut(session).terminals.push(id.into(), terminal);
    }

    pub fn restore_plan(&mut self, session: usize, id: &[u8], record: Raw) {
        self.sessions.at_mut(session).plans.push(id.into(), record);
    }

    pub fn restore_permission(&mut self, p: Permission) {
        if p.outcome == Outcome::Pending {
            if let Some(old) = self.pending.remove(&p.id) {
                self.permissions[old] = None;
            }
            self.pending.insert(p.id.clone(), self.permissions.len());
        }
        self.permissions.push(Some(p));
    }
}

/// `params.sessionId` as a string token, or the error.
fn require_session(data: &[u8], env: &Envelope, params: Span) -> Result<Str, DecodeError> {
    match env.session_id.and_then(|s| s.str()) {
        Some(s) => Ok(s),
        None => {
            let found = find_member(data, params, b"sessionId");
            Err(bad(
                data,
                "invalid_session_id",
                "params.sessionId",
                "a string",
                found,
                params,
            ))
        }
    }
}

/// Duplicate unknown members, as a parsed object has them: the first one's place, the last one's
/// value (later duplicates are ignored).
fn dedupe_extras(data: &[u8], members: &mut [Member]) {
    let n = members.len();
    for i in 0..n {
        if members[i].code != F_EXTRA {
            continue;
        }
        let k = text_of(data, members[i].key);
        for j in i + 1..n {
            if members[j].code == F_EXTRA && *text_of(data, members[j].key) == *k {
                members[i].value = members[j].value;
                members[j].code = F_IGNORE;
            }
        }
    }
}

/// Set (`Some`) or unset (`None`) an unknown field, keeping first-set order.
fn set_extra(extra: &mut Vec<(Text, Raw)>, key: Text, value: Option<Raw>) {
    let pos = extra.iter().position(|(k, _)| *k == key);
    match (pos, value) {
        (Some(p), Some(v)) => extra[p].1 = v,
        (None, Some(v)) => extra.push((key, v)),
        (Some(p), None) => {
            extra.remove(p);
        }
        (None, None) => {}
    }
}

/// Apply prepared members to a record. `clear_on_null`: v2 `tool_call_update` (null unsets);
/// otherwise null leaves the field as it is.
fn patch(tc: &mut ToolCall, data: &[u8], members: &[Member], items: &[Span], clear_on_null: bool) {
    for m in members {
        let null = m.value.ty == JsonType::Null;
        match m.code {
            c if (c as usize) < 8 => {
                if !null {
                    tc.fields[c as usize] = Some(raw(data, m.value));
                } else if clear_on_null {
                    tc.fields[c as usize] = None;
                }
            }
            F_CONTENT => {
                if !null {
                    let r: Range<usize> = m.items.0 as usize..m.items.1 as usize;
                    tc.content.clear();
                    tc.content.extend(items[r].iter().map(|s| raw(data, *s)));
                } else if clear_on_null {
                    tc.content.clear();
                }
            }
            F_EXTRA => {
                if !null {
                    set_extra(&mut tc.extra, text_of(data, m.key), Some(raw(data, m.value)));
                } else if clear_on_null {
                    set_extra(&mut tc.extra, text_of(data, m.key), None);
                }
            }
            _ => {}
        }
    }
}

fn append_chunk(tc: &mut ToolCall, data: &[u8], members: &[Member]) {
    if let Some(m) = members.iter().find(|m| m.code == F_CONTENT) {
        tc.content.push(raw(data, m.value));
    }
}

/// Set the outcome of a permission request from its response (DESIGN §7.5).
fn resolve(p: &mut Permission, data: &[u8], env: &Envelope) {
    if env.kind == Kind::Error {
        p.outcome = Outcome::Error;
        p.response = env.error.map(|e| raw(data, e));
        return;
    }
    p.response = env.result.map(|r| raw(data, r));
    p.outcome = Outcome::Invalid;
    let Some(result) = env.result.filter(|r| r.ty == JsonType::Object) else {
        return;
    };
    let Some(outcome) = find_member(data, result, b"outcome").filter(|o| o.ty == JsonType::Object) else {
        return;
    };
    let tag = find_member(data, outcome, b"outcome").and_then(|t| t.str());
    let Some(tag) = tag else {
        p.outcome = Outcome::Unknown;
        return;
    };
    if str_is(data, tag, b"cancelled") {
        p.outcome = Outcome::Cancelled;
    } else if str_is(data, tag, b"selected") {
        let Some(chosen) = find_member(data, outcome, b"optionId").and_then(|o| o.str()) else {
            return;
        };
        let chosen = text_of(data, chosen);
        if let Some(kind) = offered_kind(&p.options, &chosen) {
            p.outcome = Outcome::Selected;
            p.approved = matches!(kind.as_deref(), Some(b"allow_once" | b"allow_always"));
            p.option_id = Some(chosen);
        }
    } else {
        p.outcome = Outcome::Unknown;
    }
}

/// The `kind` (text when a string) of the first offered option with this `optionId`, if offered.
#[allow(clippy::option_option)]
pub fn offered_kind(options: &[u8], option_id: &[u8]) -> Option<Option<Vec<u8>>> {
    let whole = Span::new(JsonType::Array, 0, options.len());
    for item in array_items(options, whole) {
        if item.ty != JsonType::Object {
            continue;
        }
        let Some(id) = find_member(options, item, b"optionId").and_then(|s| s.str()) else {
            continue;
        };
        if *text_of(options, id) == *option_id {
            let kind = find_member(options, item, b"kind")
                .and_then(|k| k.str())
                .map(|k| text_of(options, k).into_vec());
            return Some(kind);
        }
    }
    None
}

trait ShiftUp {
    fn shifted_up(self, by: usize) -> Self;
}

impl ShiftUp for Span {
    #[inline(always)]
    fn shifted_up(mut self, by: usize) -> Self {
        self.start += by as u32;
        self.end += by as u32;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{parse_frame, Frame};

    fn apply(store: &mut Store, line: &str) -> Result<Option<(Target, Action)>, DecodeError> {
        let data = line.as_bytes();
        match parse_frame(data)? {
            Frame::Single(env) => Ok(store.apply(data, &env, Source::Unknown)?.map(|c| (c.target, c.action))),
            Frame::Batch(_) => panic!("batch"),
        }
    }

    fn upd(update: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{update}}}}}"#)
    }

    fn record(store: &Store, id: &str) -> ToolCall {
        store
            .session(b"s1")
            .unwrap()
            .tool_calls
            .get(id.as_bytes())
            .unwrap()
            .clone()
    }

    #[test]
    fn api_example_v2_and_v1() {
        for (version, title) in [(2u8, None), (1, Some(&b"\"Read\""[..]))] {
            let mut s = Store::new(Some(version), None);
            let frames = [
                r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":"Read","kind":"read"}"#,
                r#"{"sessionUpdate":"tool_call_content_chunk","toolCallId":"c1","content":{"type":"content","content":{"type":"text","text":"A"}}}"#,
                r#"{"sessionUpdate":"tool_call_content_chunk","toolCallId":"c1","content":{"type":"content","content":{"type":"text","text":"B"}},"_meta":{"x":1}}"#,
                r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","title":null}"#,
            ];
            let mut actions = Vec::new();
            for f in frames {
                actions.push(apply(&mut s, &upd(f)).unwrap().unwrap().1);
            }
            assert_eq!(
                actions,
                [Action::Created, Action::Appended, Action::Appended, Action::Updated]
            );
            let tc = record(&s, "c1");
            assert_eq!(tc.fields[0].as_deref(), title);
            assert_eq!(tc.kind(), b"\"read\"");
            assert_eq!(tc.status(), b"\"in_progress\"");
            assert_eq!(tc.content.len(), 2);
            assert!(tc.fields[7].is_none(), "chunk _meta is not merged");
        }
    }

    #[test]
    fn errors_leave_the_store_unchanged() {
        let mut s = Store::new(None, None);
        let e = apply(&mut s, &upd(r#"{"sessionUpdate":"tool_call_update","title":"x"}"#)).unwrap_err();
        assert_eq!((e.code, e.kind), (-32602, "invalid_tool_call_id"));
        assert_eq!(
            e.description,
            "expected \"params.update.toolCallId\" to be a string, found none"
        );
        let e = apply(
            &mut s,
            &upd(r#"{"sessionUpdate":"tool_call_content_chunk","toolCallId":"c"}"#),
        )
        .unwrap_err();
        assert_eq!(e.kind, "invalid_content");
        let e = apply(
            &mut s,
            &upd(r#"{"sessionUpdate":"terminal_output_chunk","terminalId":"t","data":"abc"}"#),
        )
        .unwrap_err();
        assert_eq!(e.kind, "invalid_base64");
        assert!(s.sessions.is_empty());
    }

    #[test]
    fn content_arrays_replace_and_chunks_append() {
        let mut s = Store::new(Some(2), None);
        apply(&mut s, &upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[ {"a":1} , [2,3],"x" ],"zz":1,"locations":[]}"#)).unwrap();
        assert_eq!(
            record(&s, "c").content,
            vec![
                b"{\"a\":1}".to_vec().into_boxed_slice(),
                b"[2,3]".to_vec().into(),
                b"\"x\"".to_vec().into()
            ]
        );
        apply(
            &mut s,
            &upd(r#"{"sessionUpdate":"tool_call_content_chunk","toolCallId":"c","content":{"b":2}}"#),
        )
        .unwrap();
        assert_eq!(record(&s, "c").content.len(), 4);
        apply(
            &mut s,
            &upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[],"zz":null,"zz":2}"#),
        )
        .unwrap();
        let tc = record(&s, "c");
        assert!(tc.content.is_empty());
        assert_eq!(
            tc.extra,
            vec![(b"zz".to_vec().into_boxed_slice(), b"2".to_vec().into_boxed_slice())]
        );
        apply(
            &mut s,
            &upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","content":null}"#),
        )
        .unwrap();
        assert!(record(&s, "c").content.is_empty());
    }

    #[test]
    fn base64_rules() {
        let mut out = Vec::new();
        for (text, ok) in [
            ("", true),
            ("QQ==", true),
            ("QUI=", true),
            ("QUJD", true),
            ("QQ=", false),
            ("Q===", false),
            ("QQ=A", false),
            ("QU-D", false),
            ("QQ", false),
        ] {
            out.clear();
            assert_eq!(base64_decode(text.as_bytes(), &mut out), ok, "{text}");
        }
        for data in [&b""[..], b"A", b"AB", b"ABC", b"\xff\x00\x10"] {
            let mut enc = Vec::new();
            base64_encode(data, &mut enc);
            let mut dec = Vec::new();
            assert!(base64_decode(&enc, &mut dec));
            assert_eq!(dec, data);
        }
    }

    #[test]
    fn bound_evicts_oldest_finished_first() {
        let mut s = Store::new(Some(2), Some(2));
        apply(&mut s, &upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"a"}"#)).unwrap();
        apply(
            &mut s,
            &upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"b","status":"completed"}"#),
        )
        .unwrap();
        apply(&mut s, &upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c"}"#)).unwrap();
        let ids: Vec<&[u8]> = s.session(b"s1").unwrap().tool_calls.iter().map(|(k, _)| k).collect();
        assert_eq!(ids, [&b"a"[..], b"c"]);
        assert_eq!(s.evicted(), 1);
    }
}
