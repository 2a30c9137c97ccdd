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
//! ([`Conversation`]).
//!
//! Mirror: `_fallback/schema/rules.py`.

use std::collections::{HashMap, HashSet};

use super::check::{listed, needs_prefix, Check};
use super::compile::{Compiled, Lit, NodeId};
use super::explain::{describe, lit_text, quote};
use super::tape::{Entry, Tape};
use super::{Problem, Schema, Severity};
use crate::encoder::PathItem;
use crate::error::JsonType;
use crate::scanner::string_text;

/// The extensible enumerations of protocol v2 whose custom values must begin with `_`.
pub const PREFIXED_ENUMS: [&str; 3] = ["ToolKind", "ToolCallStatus", "PermissionOptionKind"];

pub const CUSTOM_VALUE_PREFIX: &str = "custom-value-prefix";
pub const TOOL_CALL_TITLE: &str = "tool-call-title";
pub const UNEXPECTED_RESPONSE: &str = "unexpected-response";

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
/// that matched.
pub fn custom_values(check: &mut Check<'_>, id: NodeId, at: u32, path: &mut Vec<PathItem>, out: &mut Vec<Problem>) {
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
#[derive(Debug, Default)]
pub struct Conversation {
    /// By id: (sender, method) of each pending request, in the order they were made.
    pending: HashMap<Vec<u8>, Vec<Pending>>,
    tool_calls: HashSet<(Vec<u8>, Vec<u8>)>,
    /// The protocol version of the answer to `initialize` (1 for an answer of 1 or less, else 2),
    /// once there was one: for callers that follow the negotiation.
    pub negotiated: Option<u8>,
}

/// A pending request: who sent it (`None`: not said) and its method.
type Pending = (Option<Box<str>>, Box<str>);

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

fn text(data: &[u8], tape: &Tape, at: Option<u32>) -> Option<Vec<u8>> {
    let e = tape.get(at?);
    (e.ty == JsonType::String).then(|| {
        let mut scratch = Vec::new();
        string_text(data, e.str(), &mut scratch).to_vec()
    })
}

impl Conversation {
    pub fn new() -> Self {
        Self::default()
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
        tape.read(data)?;
        let mut out = Vec::new();
        let root = tape.get(0);
        if root.ty == JsonType::Array && schema.version >= 2 && root.next > 1 {
            let entries: Vec<u32> = tape.children(0).collect();
            for (index, at) in entries.into_iter().enumerate() {
                self.message(schema, data, tape, at, vec![PathItem::Index(index)], sender, &mut out);
            }
        } else if root.ty == JsonType::Object {
            self.message(schema, data, tape, 0, Vec::new(), sender, &mut out);
        } else {
            schema.frame(data, tape, None, &mut out);
        }
        Ok(out)
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
        out: &mut Vec<Problem>,
    ) {
        if tape.get(at).ty != JsonType::Object {
            schema.message(data, tape, at, None, &mut path, out);
            return;
        }
        let method = text(data, tape, tape.member(data, at, b"method"));
        let id = tape.member(data, at, b"id").map(|i| id_key(data, tape.get(i)));
        let mut hint: Option<Box<str>> = None;
        if tape.member(data, at, b"method").is_some() {
            if let (Some(method), Some(id)) = (&method, &id) {
                let method: Box<str> = String::from_utf8_lossy(method).into();
                let from = sender.map(Box::from);
                let list = self.pending.entry(id.clone()).or_default();
                match list.iter_mut().find(|(s, _)| *s == from) {
                    Some(entry) => entry.1 = method,
                    None => list.push((from, method)),
                }
            }
            if method.as_deref() == Some(b"session/update") {
                self.tool_call(data, tape, at, &path, out);
            }
        } else if let Some(id) = &id {
            let list = self.pending.get_mut(id);
            let found = list.and_then(|list| {
                let at = list
                    .iter()
                    .position(|(s, _)| sender.is_none() || s.as_deref() != sender)?;
                Some(list.remove(at).1)
            });
            if self.pending.get(id).is_some_and(Vec::is_empty) {
                self.pending.remove(id);
            }
            match found {
                Some(method) => hint = Some(method),
                None => {
                    let shown = tape
                        .member(data, at, b"id")
                        .map(|i| json_text(data, tape.get(i)))
                        .unwrap_or_default();
                    path.push(PathItem::Key("id".to_owned()));
                    out.push(Problem {
                        path: path.clone(),
                        message: format!(
                            "expected a response to a request that was made, found one for id {shown} (no such request pending)"
                        ),
                        severity: Severity::Error,
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

    fn tool_call(&mut self, data: &[u8], tape: &Tape, at: u32, path: &[PathItem], out: &mut Vec<Problem>) {
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
        if !self.tool_calls.insert((session, id.clone())) {
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
