//! Coalescing (DESIGN §8): the agent's `tool_call_update` frames held per (session, tool call)
//! for a while, and one frame with their merged effect forwarded in their place.
//!
//! `Coalescer::push_line` takes whole lines as the agent sent them (in the editor's protocol
//! version) and appends the lines to write now to `out`; `release_due` the held updates whose time
//! has come; `release_all` everything. Time is the caller's (`now`, seconds on any monotonic clock), so a
//! fake clock tests it.
//!
//! What is held: a `session/update` notification whose update is a `tool_call_update` with a
//! string `toolCallId`, that the state engine applied without error (`tracked`), with no
//! duplicate member in its update. Its update's members are merged into the entry of its
//! (session, tool call): a member the entry lacks is added; one it has takes the later value in
//! the first one's place (v1: a `null` leaves it; v2: a `null` unsets, and a `_meta` object patches
//! the held one by top-level key). Where one update cannot say what two said in a row (v2: a
//! member unset then set again, which moves it to the end of the record; a `_meta` object over a
//! `_meta` that is not one; or the protocol version not known yet and the two differ by version)
//! the entry is released and the new update held on its own.
//!
//! What releases: a final status (`completed`, `failed`, `cancelled`) in the merged update
//! (released at once, with it); a `tool_call`, `tool_call_content_chunk` or `state_update`, or any
//! request of the agent naming the session (the session's entries before it); any response, batch, untracked or unreadable line (every entry
//! before it); `ms` after an entry's first update (`release_due`); more than `max_held` entries or
//! `max_held_bytes` bytes held (the oldest, until under); `release_all`. An entry released on its
//! own takes the entries of its session held before it along, first, so that the editor learns of
//! a session's tool calls in the order the agent made them.
//!
//! An entry of one update is released as its line came, byte for byte; a merged one as the last
//! update's line with its `update` object replaced by the merged members, each key and value as
//! received (nothing is re-encoded).
//!
//! Mirror: `python/acp_fast/_fallback/coalesce.py`. Differences on purpose: the members of an
//! object are found here with the core scanner, there with the fallback's helpers; `out` is a
//! byte buffer here, a list of lines there.

use crate::error::JsonType;
use crate::message::{scan_span, Span};
use crate::scanner::{string_text, Scanner, Str};
use crate::state::ordered_map::OrderedMap;

/// The statuses after which a tool call changes no more: an update carrying one is released at
/// once.
pub const FINAL_STATUSES: [&[u8]; 3] = [b"completed", b"failed", b"cancelled"];
/// Default of `max_held`: entries (tool calls) held at once.
pub const DEFAULT_MAX_HELD: usize = 1000;
/// Default of `max_held_bytes`: bytes held at once (each entry: its last line and merged values).
pub const DEFAULT_MAX_HELD_BYTES: usize = 16 << 20;

/// What a line asks of the held entries (`classify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// A tool_call_update: held (its key), its update object at `update`.
    Hold,
    /// Forwarded, nothing released.
    Pass,
    /// Its session's entries released before it.
    ReleaseSession,
    /// Every entry released before it.
    ReleaseAll,
}

/// A member: key text, key literal as received, value type, value as received.
#[derive(Clone)]
pub struct Member {
    key: Box<[u8]>,
    literal: Box<[u8]>,
    ty: JsonType,
    value: Box<[u8]>,
}

/// A line's verdict: what it asks, its session and tool call, its update object's span.
pub struct Class {
    pub what: What,
    pub session: Option<Vec<u8>>,
    pub tool_call: Option<Vec<u8>>,
    pub update: Option<Span>,
}

impl Class {
    fn of(what: What) -> Self {
        Self {
            what,
            session: None,
            tool_call: None,
            update: None,
        }
    }
}

/// The members of the (valid) object `obj` of `data`, in order; None when a key appears twice.
pub fn members(data: &[u8], obj: Span) -> Option<Vec<Member>> {
    let slice = &data[obj.range()];
    let mut out: Vec<Member> = Vec::new();
    let mut sc = Scanner::new(slice);
    sc.enter().ok()?;
    if sc.peek() == Some(b'}') {
        return Some(out);
    }
    let mut scratch = Vec::new();
    loop {
        sc.skip_ws();
        let key: Str = sc.scan_key().ok()?;
        sc.skip_ws();
        let value = scan_span(&mut sc).ok()?;
        let text: Box<[u8]> = string_text(slice, key, &mut scratch).into();
        if out.iter().any(|m| m.key == text) {
            return None;
        }
        out.push(Member {
            key: text,
            literal: slice[key.start - 1..key.end + 1].into(),
            ty: value.ty,
            value: slice[value.range()].into(),
        });
        match sc.peek() {
            Some(b',') => sc.pos += 1,
            _ => return Some(out),
        }
    }
}

/// The last members `names` of the (valid) object `obj`, in one walk.
fn find(data: &[u8], obj: Span, names: &[&[u8]]) -> Vec<Option<Span>> {
    let mut found = vec![None; names.len()];
    let slice = &data[obj.range()];
    let mut sc = Scanner::new(slice);
    if sc.enter().is_err() || sc.peek() == Some(b'}') {
        return found;
    }
    let mut scratch = Vec::new();
    loop {
        sc.skip_ws();
        let Ok(key) = sc.scan_key() else { return found };
        sc.skip_ws();
        let Ok(value) = scan_span(&mut sc) else { return found };
        let text = string_text(slice, key, &mut scratch);
        if let Some(i) = names.iter().position(|n| *n == text) {
            let mut v = value;
            v.start += obj.start;
            v.end += obj.start;
            found[i] = Some(v);
        }
        match sc.peek() {
            Some(b',') => sc.pos += 1,
            _ => return found,
        }
    }
}

fn string(data: &[u8], span: Option<Span>) -> Option<Vec<u8>> {
    let s = span?.str()?;
    let mut scratch = Vec::new();
    Some(string_text(data, s, &mut scratch).to_vec())
}

/// What the (valid, tracked) line `data` asks, its session and tool call, and for `Hold` the
/// span of its update object.
pub fn classify(data: &[u8]) -> Class {
    let start = data.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
    let Some(start) = start.filter(|&i| data[i] == b'{') else {
        return Class::of(What::ReleaseAll);
    };
    let end = data.iter().rposition(|&b| b == b'}').map_or(data.len(), |i| i + 1);
    let whole = Span::new(JsonType::Object, start, end);
    let [method, params, id] =
        <[Option<Span>; 3]>::try_from(find(data, whole, &[b"method", b"params", b"id"])).unwrap_or([None; 3]);
    let Some(method) = string(data, method) else {
        return Class::of(What::ReleaseAll); // a response
    };
    let params = params.filter(|p| p.ty == JsonType::Object);
    // One walk of `params` for both (it holds the update: the bulk of the line).
    let [sid, update] = params.map_or([None; 2], |p| {
        <[Option<Span>; 2]>::try_from(find(data, p, &[b"sessionId", b"update"])).unwrap_or([None; 2])
    });
    let sid = string(data, sid);
    let mut class = Class::of(What::Pass);
    if method != b"session/update" {
        if id.is_some() {
            class.what = if sid.is_none() {
                What::ReleaseAll
            } else {
                What::ReleaseSession
            };
        }
        class.session = sid;
        return class;
    }
    if sid.is_none() {
        return class;
    }
    class.session = sid;
    let Some(update) = update.filter(|u| u.ty == JsonType::Object) else {
        return class;
    };
    let [kind, tcid] =
        <[Option<Span>; 2]>::try_from(find(data, update, &[b"sessionUpdate", b"toolCallId"])).unwrap_or([None; 2]);
    let kind = string(data, kind);
    match kind.as_deref() {
        Some(b"state_update") => {
            class.what = What::ReleaseSession;
            return class;
        }
        Some(b"tool_call_update" | b"tool_call" | b"tool_call_content_chunk") => {}
        _ => return class,
    }
    let Some(tcid) = string(data, tcid) else {
        return class;
    };
    class.tool_call = Some(tcid);
    if kind.as_deref() != Some(b"tool_call_update") {
        class.what = What::ReleaseSession; // it may create a tool call: those held were first
        return class;
    }
    class.what = What::Hold;
    class.update = Some(update);
    class
}

/// The members of one update with the effect of `held` then `new` under protocol `version`
/// (None: not known), or None when one update cannot say it. `patch_meta`: a v2 `_meta` object
/// over a `_meta` object composes (`merge_object`; inside one, no member does).
pub fn merge_members(held: &[Member], new: Vec<Member>, version: Option<u8>, patch_meta: bool) -> Option<Vec<Member>> {
    let mut out = held.to_vec();
    for m in new {
        let Some(at) = out.iter().position(|o| o.key == m.key) else {
            out.push(m);
            continue;
        };
        let old = &mut out[at];
        if m.ty == JsonType::Null {
            match version {
                Some(1) => continue, // v1: null leaves the field
                None => return None,
                _ => (old.ty, old.value) = (JsonType::Null, m.value),
            }
        } else if old.ty == JsonType::Null {
            if version != Some(1) {
                return None; // v2: unset then set again moves the member to the end
            }
            (old.ty, old.value) = (m.ty, m.value);
        } else if patch_meta && *m.key == *b"_meta" && m.ty == JsonType::Object && version != Some(1) {
            if version.is_none() || old.ty != JsonType::Object {
                return None;
            }
            old.value = merge_object(&old.value, &m.value)?.into();
        } else {
            (old.ty, old.value) = (m.ty, m.value);
        }
    }
    Some(out)
}

/// Two v2 `_meta` patches as one (`merge_members` of their members, by v2's rules); None when it
/// cannot be said in one.
pub fn merge_object(held: &[u8], new: &[u8]) -> Option<Vec<u8>> {
    let a = members(held, Span::new(JsonType::Object, 0, held.len()))?;
    let b = members(new, Span::new(JsonType::Object, 0, new.len()))?;
    let merged = merge_members(&a, b, Some(2), false)?;
    let mut text = Vec::new();
    write_object(&mut text, &merged);
    Some(text)
}

/// The object of members `ms`, each key and value as received.
pub fn write_object(out: &mut Vec<u8>, ms: &[Member]) {
    out.push(b'{');
    for (i, m) in ms.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&m.literal);
        out.push(b':');
        out.extend_from_slice(&m.value);
    }
    out.push(b'}');
}

/// Whether the merged members carry a final status.
pub fn is_final(ms: &[Member]) -> bool {
    ms.iter()
        .find(|m| *m.key == *b"status" && m.ty == JsonType::String)
        .is_some_and(|m| {
            let s = Span::new(JsonType::String, 0, m.value.len());
            let mut scratch = Vec::new();
            let text = s.str().map(|s| string_text(&m.value, s, &mut scratch).to_vec());
            text.is_some_and(|t| FINAL_STATUSES.contains(&t.as_slice()))
        })
}

/// What is held for one (session, tool call): the last line and its update's span, the merged
/// members, how many updates, since when.
pub struct Entry {
    wire: Vec<u8>,
    update: Span,
    members: Vec<Member>,
    updates: u64,
    since: f64,
    size: usize,
}

impl Entry {
    fn new(wire: &[u8], update: Span, members: Vec<Member>, since: f64) -> Self {
        Self {
            wire: wire.to_vec(),
            update,
            size: entry_size(wire, &members),
            members,
            updates: 1,
            since,
        }
    }

    /// The line to forward: the update as it came, or the last line with the merged update.
    fn line(&self, out: &mut Vec<u8>) {
        if self.updates == 1 {
            out.extend_from_slice(&self.wire);
            return;
        }
        let r = self.update.range();
        out.extend_from_slice(&self.wire[..r.start]);
        write_object(out, &self.members);
        out.extend_from_slice(&self.wire[r.end..]);
    }
}

fn entry_size(wire: &[u8], ms: &[Member]) -> usize {
    wire.len() + ms.iter().map(|m| m.value.len()).sum::<usize>()
}

/// Holds and merges the agent's `tool_call_update` frames (module docs).
pub struct Coalescer {
    /// How long an entry is held at most, in seconds.
    pub window: f64,
    /// The editor's protocol version (1 or 2), None until known.
    pub protocol: Option<u8>,
    pub max_held: usize,
    pub max_held_bytes: usize,
    /// By (session, tool call), oldest first (the key is `session \0 tool call`'s lengths-prefixed
    /// bytes, `key`).
    entries: OrderedMap<Entry>,
    pub held_bytes: usize,
    /// Updates held.
    pub updates_in: u64,
    /// Merged or single lines released.
    pub frames_out: u64,
}

/// The entry key of (session, tool call): the session's length, the session, the tool call.
fn key(sid: &[u8], tcid: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(sid.len() + tcid.len() + 8);
    k.extend_from_slice(&(sid.len() as u64).to_le_bytes());
    k.extend_from_slice(sid);
    k.extend_from_slice(tcid);
    k
}

fn session_of(k: &[u8]) -> &[u8] {
    let n = u64::from_le_bytes(k[..8].try_into().expect("8 bytes")) as usize;
    &k[8..8 + n]
}

impl Coalescer {
    pub fn new(ms: f64, protocol: Option<u8>, max_held: usize, max_held_bytes: usize) -> Self {
        Self {
            window: ms / 1000.0,
            protocol,
            max_held,
            max_held_bytes,
            entries: OrderedMap::default(),
            held_bytes: 0,
            updates_in: 0,
            frames_out: 0,
        }
    }

    /// Entries held.
    pub fn held(&self) -> usize {
        self.entries.len()
    }

    /// When the oldest entry is due, or None when nothing is held.
    pub fn next_due(&mut self) -> Option<f64> {
        self.oldest().map(|(_, since)| since + self.window)
    }

    /// The oldest entry's key and since when it is held.
    fn oldest(&mut self) -> Option<(Vec<u8>, f64)> {
        let slot = self.entries.first_slot()?;
        self.entries.at(slot).map(|(k, e)| (k.to_vec(), e.since))
    }

    /// One line as the agent sent it (line ending included): held, or appended to `out` after
    /// what it releases. `tracked`: the state engine applied it without error.
    pub fn push_line(&mut self, data: &[u8], now: f64, tracked: bool, out: &mut Vec<u8>) {
        let blank = data.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
        if data.last() != Some(&b'\n') || blank {
            if !blank {
                self.release_all(out);
            }
            out.extend_from_slice(data);
            return;
        }
        let class = if tracked {
            classify(data)
        } else {
            Class::of(What::ReleaseAll)
        };
        match class.what {
            What::Hold => {
                let (Some(sid), Some(tcid), Some(update)) = (&class.session, &class.tool_call, class.update) else {
                    unreachable!("a held line has its keys")
                };
                self.hold(data, &key(sid, tcid), update, now, out);
                return;
            }
            What::ReleaseSession => {
                let sid = class.session.as_deref().unwrap_or_default();
                let keys: Vec<Vec<u8>> = self
                    .entries
                    .iter()
                    .filter(|(k, _)| session_of(k) == sid)
                    .map(|(k, _)| k.to_vec())
                    .collect();
                for k in keys {
                    self.release(&k, out);
                }
            }
            What::ReleaseAll => self.release_all(out),
            What::Pass => {}
        }
        out.extend_from_slice(data);
    }

    fn hold(&mut self, data: &[u8], k: &[u8], update: Span, now: f64, out: &mut Vec<u8>) {
        let Some(ms) = members(data, update) else {
            // A member twice: not held.
            self.release_through(k, out);
            out.extend_from_slice(data);
            return;
        };
        self.updates_in += 1;
        let protocol = self.protocol;
        let merged = self
            .entries
            .get(k)
            .map(|e| merge_members(&e.members, ms.clone(), protocol, true));
        match merged {
            Some(Some(merged)) => {
                let e = self.entries.get_mut(k).expect("held");
                self.held_bytes -= e.size;
                e.wire = data.to_vec();
                e.update = update;
                e.size = entry_size(data, &merged);
                e.members = merged;
                e.updates += 1;
                self.held_bytes += e.size;
            }
            found => {
                if found.is_some() {
                    self.release_through(k, out);
                }
                let entry = Entry::new(data, update, ms, now);
                self.held_bytes += entry.size;
                self.entries.push(k.into(), entry);
            }
        }
        if self.entries.get(k).is_some_and(|e| is_final(&e.members)) {
            self.release_through(k, out);
        }
        self.bound(out);
    }

    /// Release the oldest entries while more than the bounds are held.
    fn bound(&mut self, out: &mut Vec<u8>) {
        while !self.entries.is_empty() && (self.entries.len() > self.max_held || self.held_bytes > self.max_held_bytes)
        {
            let (k, _) = self.oldest().expect("not empty");
            self.release(&k, out);
        }
    }

    fn release(&mut self, k: &[u8], out: &mut Vec<u8>) {
        let Some(slot) = self.entries.slot(k) else { return };
        if let Some(e) = self.entries.remove_slot(slot) {
            self.entries.maybe_compact();
            self.held_bytes -= e.size;
            self.frames_out += 1;
            e.line(out);
        }
    }

    /// Release `k` and, before it, the entries of its session held before it: the editor learns
    /// of a session's tool calls in the order the agent made them.
    fn release_through(&mut self, k: &[u8], out: &mut Vec<u8>) {
        let sid = session_of(k);
        let keys: Vec<Vec<u8>> = self
            .entries
            .iter()
            .map(|(key, _)| key)
            .filter(|key| session_of(key) == sid)
            .map(<[u8]>::to_vec)
            .collect();
        for key in keys {
            self.release(&key, out);
            if key == k {
                return;
            }
        }
    }

    /// Release every entry, oldest first.
    pub fn release_all(&mut self, out: &mut Vec<u8>) {
        while let Some((k, _)) = self.oldest() {
            self.release(&k, out);
        }
    }

    /// Release the entries held `ms` or longer at `now`.
    pub fn release_due(&mut self, now: f64, out: &mut Vec<u8>) {
        while let Some((k, since)) = self.oldest() {
            if since + self.window > now {
                return;
            }
            self.release(&k, out);
        }
    }
}

#[cfg(test)]
mod tests;
