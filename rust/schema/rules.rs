//! The protocol rules the schema cannot express, as checks of their own:
//!
//! - `custom-value-prefix` (error, protocol v2): a tool kind, a tool call status or a permission
//!   option kind that is not one of the listed values is a custom one, and custom values must
//!   begin with `_`. The v2 schema accepts any string there (its open `other` branch).
//! - `tool-call-title` (warning): an agent SHOULD give a title the first time it reports a
//!   `toolCallId` (in a `tool_call` or `tool_call_update` of `session/update`).
//! - `unexpected-response` (error): a response must answer a request that was made (and is
//!   still pending).
//!
//! The first needs only the message; the other two need the conversation so far
//! ([`Conversation`]), which remembers at most [`MAX_PENDING_IDS`] pending request ids and
//! [`MAX_TOOL_CALL_IDS`] tool call ids, forgetting the oldest first (see there for what a
//! forgotten one changes).
//!
//! Mirror: `_fallback/schema/rules.py`.

use std::collections::{HashMap, HashSet, VecDeque};

use super::check::{listed, needs_prefix, Check};
use super::compile::{Compiled, Lit, NodeId};
use super::explain::{describe, lit_text, quote};
use super::tape::{Entry, Tape};
use super::{Found, Problem, Schema, Severity};
use crate::encoder::PathItem;
use crate::error::JsonType;
use crate::scanner::string_text;

/// The extensible enumerations of protocol v2 whose custom values must begin with `_`.
pub const PREFIXED_ENUMS: [&str; 3] = ["ToolKind", "ToolCallStatus", "PermissionOptionKind"];

pub const CUSTOM_VALUE_PREFIX: &str = "custom-value-prefix";
pub const TOOL_CALL_TITLE: &str = "tool-call-title";
pub const UNEXPECTED_RESPONSE: &str = "unexpected-response";

/// The most request ids a [`Conversation`] keeps pending (each with at most one request per
/// sender). A connection has a few requests in flight at a time (a prompt per session, the
/// agent's permission, file and terminal requests); 10,000 unanswered ones is no honest session.
/// Past it the oldest id is forgotten; a response to it is then reported as a warning, not an
/// error (see [`Conversation`]). Measured: under 10 MB at the limit.
pub const MAX_PENDING_IDS: usize = 10_000;

/// The most (sessionId, toolCallId) pairs a [`Conversation`] remembers for `tool-call-title`.
/// A long, busy session makes thousands of tool calls (one every 5 s for a day: 17,280); past
/// 100,000 the oldest is forgotten, and a later report of it without a title is warned about
/// again. Measured with UUID-sized ids: ~30 MB at the limit (the fallback: ~85 MB).
pub const MAX_TOOL_CALL_IDS: usize = 100_000;

/// Mark the nodes of `PREFIXED_ENUMS` (protocol v2).
pub fn mark(c: &mut Compiled, version: u8) {
    if version < 2 {
        return;
    }
    for name in PREFIXED_ENUMS {
        if let Some(&id) = c.defs.get(name) {
            let node = &mut c.nodes[id as usize];
            node.open_prefix = true;
            node.forward = None;
            node.index_flags();
        }
    }
}

/// Report the custom values without `_` in a value valid against `id`, following the branches
/// that matched (nothing once `out` stopped).
pub fn custom_values(check: &mut Check<'_>, id: NodeId, at: u32, path: &mut Vec<PathItem>, out: &mut Found) {
    if out.stopped() {
        return;
    }
    let c = check.schema;
    let n = &c.nodes[id as usize];
    let data = check.data;
    let e = *check.tape.get(at);
    if n.open_prefix && e.ty == JsonType::String && needs_prefix(c, n, data, &e) {
        let names: Vec<String> = listed(c, n).iter().map(lit_text).collect();
        out.push(Problem {
            path: path.clone(),
            message: format!(
                "expected {} to be one of {} or a custom value beginning with \"_\", found {}",
                quote(path),
                names.join(", "),
                describe(data, &e)
            ),
            severity: Severity::Error,
            rule: CUSTOM_VALUE_PREFIX,
        });
        return;
    }
    if let Some(r) = n.reference {
        custom_values(check, r, at, path, out);
    }
    for &a in &n.all_of {
        custom_values(check, a, at, path, out);
    }
    for u in [&n.any_of, &n.one_of].into_iter().flatten() {
        let candidates = check.candidates(u, &e, at);
        if let Some(i) = candidates.into_iter().find(|&i| check.valid(u.branches[i], at)) {
            custom_values(check, u.branches[i], at, path, out);
        }
    }
    match e.ty {
        JsonType::Object => {
            let children: Vec<u32> = check.tape.children(at).collect();
            for child in children {
                if out.stopped() {
                    return;
                }
                let m = *check.tape.get(child);
                let target = match n
                    .properties
                    .iter()
                    .find(|(k, _)| super::tape::key_is(data, &m, k.as_bytes()))
                {
                    Some((_, prop)) => Some(*prop),
                    None => n.additional,
                };
                if let Some(target) = target {
                    let mut scratch = Vec::new();
                    let key = String::from_utf8_lossy(string_text(data, m.key(), &mut scratch)).into_owned();
                    path.push(PathItem::Key(key));
                    custom_values(check, target, child, path, out);
                    path.pop();
                }
            }
        }
        JsonType::Array => {
            if let Some(items) = n.items {
                let children: Vec<u32> = check.tape.children(at).collect();
                for (index, child) in children.into_iter().enumerate() {
                    if out.stopped() {
                        return;
                    }
                    path.push(PathItem::Index(index));
                    custom_values(check, items, child, path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

/// The conversation so far, for the rules that need it: the requests still pending (by sender
/// and id) and the tool calls already reported (by session and id).
///
/// Both are bounded ([`MAX_PENDING_IDS`], [`MAX_TOOL_CALL_IDS`], or [`Conversation::with_limits`]):
/// past a limit the oldest entry (in the order first seen) is forgotten, in O(1) amortised.
/// Forgetting never makes a valid frame an error: once any request was forgotten, a response
/// to an id with no pending request may answer one of them, so `unexpected-response` is then a
/// warning (and the response is checked against any result, its method being unknown). A tool
/// call forgotten and reported again without a title gets the `tool-call-title` warning again.
#[derive(Debug)]
pub struct Conversation {
    /// By id: when it was first seen pending (see `order`) and the (sender, method) of each of its
    /// pending requests, in the order they were made.
    pending: HashMap<Vec<u8>, Requests>,
    /// The pending ids in the order first seen, by their `Requests::seq`; an entry whose id was
    /// answered since (or seen again with another `seq`) is stale, skipped and compacted away.
    order: VecDeque<(u64, Vec<u8>)>,
    /// The `seq` of the next id to become pending.
    seq: u64,
    /// How many pending requests were forgotten to stay within `pending_limit`.
    evicted: u64,
    tool_calls: HashSet<(Vec<u8>, Vec<u8>)>,
    /// The keys of `tool_calls` in the order first seen.
    tool_call_order: VecDeque<(Vec<u8>, Vec<u8>)>,
    pending_limit: usize,
    tool_call_limit: usize,
    /// The protocol version of the answer to `initialize` (1 for an answer of 1 or less, else 2),
    /// once there was one: for callers that follow the negotiation.
    pub negotiated: Option<u8>,
    /// The version an `initialize` request asked for (1 or 2) and its sender, until the answer:
    /// that sender speaks it meanwhile (a client may send `session/new` right behind it).
    pub asked: Option<(u8, Option<Box<str>>)>,
}

/// The pending requests of one id.
#[derive(Debug)]
struct Requests {
    seq: u64,
    list: Vec<Pending>,
}

/// A pending request: who sent it (`None`: not said) and its method.
type Pending = (Option<Box<str>>, Box<str>);

impl Default for Conversation {
    fn default() -> Self {
        Self::new()
    }
}

/// An id as a key: its type and its text (`1` and `"1"` differ).
fn id_key(data: &[u8], e: &Entry) -> Vec<u8> {
    let mut key = vec![e.ty as u8];
    match e.ty {
        JsonType::String => {
            let mut scratch = Vec::new();
            key.extend_from_slice(string_text(data, e.str(), &mut scratch));
        }
        JsonType::Boolean => key.push(u8::from(e.flag)),
        _ => key.extend_from_slice(&data[e.start as usize..e.end as usize]),
    }
    key
}

/// A scalar's JSON text (`"a"`, `5`, `null`); containers by name.
fn json_text(data: &[u8], e: &Entry) -> String {
    match e.ty {
        JsonType::String => String::from_utf8_lossy(&data[e.start as usize - 1..e.end as usize + 1]).into_owned(),
        JsonType::Number => String::from_utf8_lossy(&data[e.start as usize..e.end as usize]).into_owned(),
        JsonType::Null => "null".to_owned(),
        JsonType::Boolean => if e.flag { "true" } else { "false" }.to_owned(),
        ty => ty.name().to_owned(),
    }
}

/// The version an `initialize` request asks for: 2 for a `protocolVersion` of 2 or more, else 1.
fn asked_version(data: &[u8], tape: &Tape, at: u32) -> u8 {
    let version = tape
        .member(data, at, b"params")
        .filter(|&p| tape.get(p).ty == JsonType::Object)
        .and_then(|p| tape.member(data, p, b"protocolVersion"))
        .map(|v| *tape.get(v));
    match version {
        Some(v) if v.ty == JsonType::Number && v.flag => {
            let lexeme = &data[v.start as usize..v.end as usize];
            let low = lexeme.first() == Some(&b'-') || lexeme == b"0" || lexeme == b"1";
            if low {
                1
            } else {
                2
            }
        }
        _ => 1,
    }
}

fn text(data: &[u8], tape: &Tape, at: Option<u32>) -> Option<Vec<u8>> {
    let e = tape.get(at?);
    (e.ty == JsonType::String).then(|| {
        let mut scratch = Vec::new();
        string_text(data, e.str(), &mut scratch).to_vec()
    })
}

impl Conversation {
    /// A conversation with the default limits ([`MAX_PENDING_IDS`], [`MAX_TOOL_CALL_IDS`]).
    pub fn new() -> Self {
        Self::with_limits(MAX_PENDING_IDS, MAX_TOOL_CALL_IDS)
    }

    /// A conversation that keeps at most `pending` request ids pending and remembers at most
    /// `tool_calls` tool call ids (each at least 1).
    pub fn with_limits(pending: usize, tool_calls: usize) -> Self {
        Self {
            pending: HashMap::new(),
            order: VecDeque::new(),
            seq: 0,
            evicted: 0,
            tool_calls: HashSet::new(),
            tool_call_order: VecDeque::new(),
            pending_limit: pending.max(1),
            tool_call_limit: tool_calls.max(1),
            negotiated: None,
            asked: None,
        }
    }

    /// (pending request ids, tool call ids remembered, pending requests forgotten so far).
    pub fn sizes(&self) -> (usize, usize, u64) {
        (self.pending.len(), self.tool_calls.len(), self.evicted)
    }

    /// The lengths of the order queues (pending ids, tool calls), stale entries included.
    #[cfg(test)]
    pub(super) fn queued(&self) -> (usize, usize) {
        (self.order.len(), self.tool_call_order.len())
    }

    /// A request of `method` with id `id` from `from` is pending; forget the oldest id past the
    /// limit.
    fn add_pending(&mut self, id: Vec<u8>, from: Option<Box<str>>, method: Box<str>) {
        use std::collections::hash_map::Entry as Slot;
        match self.pending.entry(id) {
            Slot::Occupied(mut slot) => {
                let list = &mut slot.get_mut().list;
                match list.iter_mut().find(|(s, _)| *s == from) {
                    Some(entry) => entry.1 = method,
                    None => list.push((from, method)),
                }
                return;
            }
            Slot::Vacant(slot) => {
                self.order.push_back((self.seq, slot.key().clone()));
                slot.insert(Requests {
                    seq: self.seq,
                    list: vec![(from, method)],
                });
                self.seq += 1;
            }
        }
        while self.pending.len() > self.pending_limit {
            let Some((seq, id)) = self.order.pop_front() else { break };
            if self.pending.get(&id).is_some_and(|r| r.seq == seq) {
                let gone = self.pending.remove(&id).map_or(0, |r| r.list.len());
                self.evicted += gone as u64;
            }
        }
        // Answered ids leave stale entries in `order`: drop them once they outnumber the live
        // ones (each compaction is paid for by the pushes and answers since the last).
        if self.order.len() > 2 * self.pending.len() + 32 {
            let pending = &self.pending;
            self.order
                .retain(|(seq, id)| pending.get(id).is_some_and(|r| r.seq == *seq));
        }
    }

    /// The method of the earliest pending request with id `id` answered by `sender` (from
    /// another sender, or any when `None`), no longer pending.
    fn answer(&mut self, id: &[u8], sender: Option<&str>) -> Option<Box<str>> {
        let requests = self.pending.get_mut(id)?;
        let at = requests
            .list
            .iter()
            .position(|(s, _)| sender.is_none() || s.as_deref() != sender);
        let found = at.map(|at| requests.list.remove(at).1);
        if requests.list.is_empty() {
            self.pending.remove(id);
        }
        found
    }

    /// Remember that tool call `id` of `session` was reported: false when it already was.
    /// Forget the oldest past the limit.
    fn add_tool_call(&mut self, session: Vec<u8>, id: Vec<u8>) -> bool {
        let key = (session, id);
        if self.tool_calls.contains(&key) {
            return false;
        }
        self.tool_calls.insert(key.clone());
        self.tool_call_order.push_back(key);
        while self.tool_calls.len() > self.tool_call_limit {
            let Some(old) = self.tool_call_order.pop_front() else {
                break;
            };
            self.tool_calls.remove(&old);
        }
        true
    }

    /// The problems of one frame, `sender` being the side it comes from (any name; a response
    /// answers a request from another sender, or from any when `None`).
    pub fn check(
        &mut self,
        schema: &Schema,
        data: &[u8],
        sender: Option<&str>,
        tape: &mut Tape,
    ) -> Result<Vec<Problem>, crate::error::DecodeError> {
        self.check_at_most(schema, data, sender, tape, usize::MAX)
    }

    /// `check`, stopping the check of a message (of each entry of a batch) at its `limit + 1`th
    /// error ([`Found`]: the first `limit` errors, then a `problem-limit` marker).
    pub fn check_at_most(
        &mut self,
        schema: &Schema,
        data: &[u8],
        sender: Option<&str>,
        tape: &mut Tape,
        limit: usize,
    ) -> Result<Vec<Problem>, crate::error::DecodeError> {
        tape.read(data)?;
        let root = tape.get(0);
        if root.ty == JsonType::Array && schema.batches() && root.next > 1 {
            let mut out = Vec::new();
            let entries: Vec<u32> = tape.children(0).collect();
            for (index, at) in entries.into_iter().enumerate() {
                let path = vec![PathItem::Index(index)];
                let mut found = Found::new(limit, &path);
                self.message(schema, data, tape, at, path, sender, &mut found);
                out.append(&mut found.list);
            }
            return Ok(out);
        }
        let mut found = Found::new(limit, &[]);
        if root.ty == JsonType::Object {
            self.message(schema, data, tape, 0, Vec::new(), sender, &mut found);
        } else {
            schema.frame(data, tape, None, &mut found);
        }
        Ok(found.list)
    }

    #[allow(clippy::too_many_arguments)]
    fn message(
        &mut self,
        schema: &Schema,
        data: &[u8],
        tape: &Tape,
        at: u32,
        mut path: Vec<PathItem>,
        sender: Option<&str>,
        out: &mut Found,
    ) {
        if tape.get(at).ty != JsonType::Object {
            schema.message(data, tape, at, None, &mut path, out);
            return;
        }
        let method = text(data, tape, tape.member(data, at, b"method"));
        let id = tape.member(data, at, b"id").map(|i| id_key(data, tape.get(i)));
        let mut hint: Option<Box<str>> = None;
        if tape.member(data, at, b"method").is_some() {
            if let (Some(method), Some(id)) = (&method, id) {
                self.add_pending(id, sender.map(Box::from), String::from_utf8_lossy(method).into());
                if method == b"initialize" {
                    self.asked = Some((asked_version(data, tape, at), sender.map(Box::from)));
                }
            }
            if method.as_deref() == Some(b"session/update") {
                self.tool_call(data, tape, at, &path, out);
            }
        } else if let Some(id) = id.as_ref().filter(|id| {
            // An error reply with "id": null answers a frame whose id could not be read (JSON-RPC
            // 2.0: a parse error, an invalid request): there is no request to pair it with.
            !(id.first() == Some(&(JsonType::Null as u8)) && tape.member(data, at, b"error").is_some())
        }) {
            let found = self.answer(id, sender);
            match found {
                Some(method) => hint = Some(method),
                None => {
                    let shown = tape
                        .member(data, at, b"id")
                        .map(|i| json_text(data, tape.get(i)))
                        .unwrap_or_default();
                    path.push(PathItem::Key("id".to_owned()));
                    let (severity, forgotten) = match self.evicted {
                        0 => (Severity::Error, String::new()),
                        1 => (
                            Severity::Warning,
                            "; 1 older request was forgotten, it may answer it".to_owned(),
                        ),
                        n => (
                            Severity::Warning,
                            format!("; {n} older requests were forgotten, it may answer one of them"),
                        ),
                    };
                    out.push(Problem {
                        path: path.clone(),
                        message: format!(
                            "expected a response to a request that was made, found one for id {shown} (no such request pending{forgotten})"
                        ),
                        severity,
                        rule: UNEXPECTED_RESPONSE,
                    });
                    path.pop();
                }
            }
        }
        if hint.as_deref() == Some("initialize") {
            self.learn_version(data, tape, at);
        }
        schema.message(data, tape, at, hint.as_deref(), &mut path, out);
    }

    /// The version `sender` speaks: the negotiated one, else the one it asked for in an
    /// `initialize` not answered yet, else None (the caller's default).
    pub fn version_of(&self, sender: Option<&str>) -> Option<u8> {
        self.negotiated.or_else(|| match &self.asked {
            Some((version, asker)) if asker.is_none() || asker.as_deref() == sender => Some(*version),
            _ => None,
        })
    }

    fn learn_version(&mut self, data: &[u8], tape: &Tape, at: u32) {
        let Some(result) = tape
            .member(data, at, b"result")
            .filter(|&r| tape.get(r).ty == JsonType::Object)
        else {
            return;
        };
        let Some(v) = tape.member(data, result, b"protocolVersion").map(|v| *tape.get(v)) else {
            return;
        };
        if v.ty == JsonType::Number && v.flag {
            let lexeme = &data[v.start as usize..v.end as usize];
            let low = lexeme.first() == Some(&b'-') || lexeme == b"0" || lexeme == b"1";
            self.negotiated = Some(if low { 1 } else { 2 });
        }
    }

    fn tool_call(&mut self, data: &[u8], tape: &Tape, at: u32, path: &[PathItem], out: &mut Found) {
        let Some(params) = tape
            .member(data, at, b"params")
            .filter(|&p| tape.get(p).ty == JsonType::Object)
        else {
            return;
        };
        let Some(update) = tape
            .member(data, params, b"update")
            .filter(|&u| tape.get(u).ty == JsonType::Object)
        else {
            return;
        };
        let kind = text(data, tape, tape.member(data, update, b"sessionUpdate"));
        if !matches!(kind.as_deref(), Some(b"tool_call" | b"tool_call_update")) {
            return;
        }
        let (Some(session), Some(id)) = (
            text(data, tape, tape.member(data, params, b"sessionId")),
            text(data, tape, tape.member(data, update, b"toolCallId")),
        ) else {
            return;
        };
        if !self.add_tool_call(session, id.clone()) {
            return;
        }
        let titled = tape
            .member(data, update, b"title")
            .is_some_and(|t| tape.get(t).ty == JsonType::String);
        if !titled {
            let mut path = path.to_vec();
            path.extend(["params", "update", "title"].map(|k| PathItem::Key(k.to_owned())));
            out.push(Problem {
                message: format!(
                    "expected {} the first time tool call {} is reported (an agent SHOULD give a title), found none",
                    quote(&path),
                    lit_text(&Lit::Str(String::from_utf8_lossy(&id).into()))
                ),
                path,
                severity: Severity::Warning,
                rule: TOOL_CALL_TITLE,
            });
        }
    }
}
