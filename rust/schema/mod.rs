//! Strict validation against the official ACP schema (issue 17): a frame's problems, each with a
//! JSON path and what was expected, at codec speed.
//!
//! The schema document (`python/acp_fast/schema/v{1,2}/schema*.json`, given as text) is compiled
//! once into a table of checks (`compile.rs`); a frame is read once by the core scanner into a
//! tape (`tape.rs`), with no tree of values built, and checked against it (`check.rs`); only a
//! frame that fails is walked again to say why (`explain.rs`). The protocol rules the schema
//! cannot express are in `rules.rs`.
//!
//! Which definition applies to a message (the same choice as `acp-fast validate`, from the
//! `x-method` of the definitions):
//!
//! - a request or notification of a known method: its envelope (`"jsonrpc": "2.0"`, an `id` of
//!   the schema's `RequestId` for a request and none for a notification, a string `method`) and
//!   `params` against the method's params definition; `params` may be left out only when the
//!   definition accepts `{}`;
//! - a method starting with `_` (an extension): the envelope only; any other method is a problem;
//! - a response with `result`: the result definition of `method` (the request's method, given by
//!   the caller), else the union of every result definition; with `error`: the `Error`
//!   definition. A response has `result` or `error`, not both;
//! - protocol v1 only: a batch, a non-empty array of such messages (v2 has no batches).
//!
//! Mirror: `_fallback/schema/__init__.py`.

mod check;
mod compile;
mod explain;
mod rules;
pub mod stream;
mod tape;

use std::collections::HashMap;

use hashbrown::HashMap as FastMap;

pub use compile::{Compiled, NodeId};
pub use rules::{
    Conversation, CUSTOM_VALUE_PREFIX, MAX_PENDING_IDS, MAX_TOOL_CALL_IDS, TOOL_CALL_TITLE, UNEXPECTED_RESPONSE,
};
pub use stream::{Strict, Verdict};
pub use tape::Tape;

use check::Check;
use compile::{Lit, Node, ANY_TYPE, OBJECT, STRING};
use explain::{describe, quote, Explain};
pub use explain::{Found, PROBLEM_LIMIT};

use crate::encoder::{render_path, PathItem};
use crate::error::{DecodeError, JsonType};
use crate::scanner::string_text;

/// The rule of the problems found by the schema itself.
pub const SCHEMA: &str = "schema";

/// The v2 drafts whose schemas the package holds (`draft=`), newest first, each with the folder
/// of `acp_fast/schema/` its files are in (`make schemas` writes them; v1 has one, `v1`). The
/// fallback's `DRAFTS` is the same list.
pub const DRAFTS: [(&str, &str); 2] = [("latest", "v2"), ("alpha.5", "v2-alpha.5")];

/// The message for a `draft` that is not one of `DRAFTS`, `found` its repr.
pub fn unknown_draft(found: &str) -> String {
    let names: Vec<String> = DRAFTS.iter().map(|(name, _)| format!("'{name}'")).collect();
    format!("expected draft to be {}, found {found}", names.join(" or "))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// The most errors the strict check of a stream (`stream.rs`, so `strict_schema` and `proxy
/// --strict-schema`) collects in one message (one entry of a batch). An honest frame has a few;
/// a frame with hundreds of thousands of bad items would otherwise cost seconds to describe
/// (and a refusal that large to carry). At the next error the check of that message stops: the
/// first `MAX_PROBLEMS` are exactly those a full check lists first, followed by a
/// `PROBLEM_LIMIT` marker, so the work per frame is at most a walk of the frame.
/// `validate_schema` and `SchemaValidator` list every problem.
pub const MAX_PROBLEMS: usize = 100;

/// One problem of a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where, from the message root (`params`, `update`, `content`, `0`).
    pub path: Vec<PathItem>,
    /// What was expected and what was found.
    pub message: String,
    pub severity: Severity,
    /// `schema`, or the protocol rule (`rules.rs`).
    pub rule: &'static str,
}

impl Problem {
    pub fn error(path: Vec<PathItem>, message: String) -> Self {
        Self {
            path,
            message,
            severity: Severity::Error,
            rule: SCHEMA,
        }
    }
}

/// A path as text: `params.update.content[0]`, `params["odd key"]` (empty for the root).
pub fn render(path: &[PathItem]) -> String {
    let text = render_path(path);
    let text = text.strip_prefix('$').unwrap_or(&text);
    text.strip_prefix('.').unwrap_or(text).to_owned()
}

/// What the schema says about one method.
#[derive(Debug, Clone)]
struct Method {
    /// The envelope of a call of the method (`params` included).
    call: NodeId,
    /// Requests: the envelope of a response with `result`.
    response: Option<NodeId>,
}

/// A compiled protocol schema: the definitions, and an envelope node per method.
#[derive(Debug)]
pub struct Schema {
    pub version: u8,
    pub compiled: Compiled,
    methods: FastMap<Box<str>, Method>,
    ext_request: NodeId,
    ext_notification: NodeId,
    ext_response: NodeId,
    any_response: NodeId,
    error_response: NodeId,
}

/// Does the definition accept `{}` (then `params` may be left out)?
fn accepts_empty(c: &Compiled, id: NodeId) -> bool {
    let mut tape = Tape::default();
    if tape.read(b"{}").is_err() {
        return false;
    }
    Check::new(c, &tape, b"{}").valid(id, 0)
}

impl Schema {
    /// Compile the schema document `text` of protocol `version`.
    pub fn new(text: &[u8], version: u8) -> Result<Self, String> {
        let mut c = compile::compile(text)?;
        rules::mark(&mut c, version);
        let mut requests = Vec::new();
        let mut notifications = Vec::new();
        let mut results = HashMap::new();
        for (index, name) in c.def_names.iter().enumerate() {
            let id = index as NodeId;
            let Some(method) = c.nodes[index].method.clone() else {
                continue;
            };
            if name.ends_with("Notification") {
                notifications.push((method, id));
            } else if name.ends_with("Request") {
                requests.push((method, id));
            } else if name.ends_with("Response") {
                results.insert(method, id);
            }
        }
        let jsonrpc = c.push(
            Node {
                types: STRING,
                lits: vec![vec![Lit::Str("2.0".into())]],
                ..Node::default()
            },
            None,
        );
        let id = c.push(
            Node {
                types: ANY_TYPE,
                reference: c.defs.get("RequestId").copied(),
                ..Node::default()
            },
            None,
        );
        let method = c.push(
            Node {
                types: STRING,
                ..Node::default()
            },
            None,
        );
        let never = c.push(
            Node {
                never: true,
                ..Node::default()
            },
            None,
        );
        let envelope = |c: &mut Compiled, label: String, required: &[&str], props: &[(&str, NodeId)]| {
            let node = Node {
                types: OBJECT,
                required: required.iter().map(|&r| r.into()).collect(),
                properties: props.iter().map(|&(k, v)| (k.into(), v)).collect(),
                ..Node::default()
            };
            c.push(node, Some(label))
        };
        let mut methods = FastMap::new();
        for (request, list) in [(true, &requests), (false, &notifications)] {
            for (name, params) in list.iter() {
                let kind = if request { "request" } else { "notification" };
                let mut required = vec!["jsonrpc", "method"];
                if request {
                    required.insert(1, "id");
                }
                if !accepts_empty(&c, *params) {
                    required.push("params");
                }
                let id_node = if request { id } else { never };
                let props = [
                    ("jsonrpc", jsonrpc),
                    ("id", id_node),
                    ("method", method),
                    ("params", *params),
                ];
                let call = envelope(&mut c, format!("the {kind} {name}"), &required, &props);
                let response = match results.get(name) {
                    Some(&result) if request => Some(envelope(
                        &mut c,
                        format!("the response to {name}"),
                        &["jsonrpc", "id", "result"],
                        &[("jsonrpc", jsonrpc), ("id", id), ("result", result), ("error", never)],
                    )),
                    _ => None,
                };
                methods.insert(name.clone(), Method { call, response });
            }
        }
        let ext_request = envelope(
            &mut c,
            "an extension request".to_owned(),
            &["jsonrpc", "id", "method"],
            &[("jsonrpc", jsonrpc), ("id", id), ("method", method)],
        );
        let ext_notification = envelope(
            &mut c,
            "an extension notification".to_owned(),
            &["jsonrpc", "method"],
            &[("jsonrpc", jsonrpc), ("method", method)],
        );
        let ext_response = envelope(
            &mut c,
            "a response".to_owned(),
            &["jsonrpc", "id", "result"],
            &[("jsonrpc", jsonrpc), ("id", id), ("error", never)],
        );
        let mut all_results: Vec<NodeId> = results.values().copied().collect();
        all_results.sort_unstable();
        let union = c.push_union(all_results);
        let any_response = envelope(
            &mut c,
            "a response".to_owned(),
            &["jsonrpc", "id", "result"],
            &[("jsonrpc", jsonrpc), ("id", id), ("result", union), ("error", never)],
        );
        let error_def = c.defs.get("Error").copied().unwrap_or(never);
        let error_response = envelope(
            &mut c,
            "an error response".to_owned(),
            &["jsonrpc", "id", "error"],
            &[
                ("jsonrpc", jsonrpc),
                ("id", id),
                ("error", error_def),
                ("result", never),
            ],
        );
        Ok(Self {
            version,
            compiled: c,
            methods,
            ext_request,
            ext_notification,
            ext_response,
            any_response,
            error_response,
        })
    }

    /// Does this protocol version have JSON-RPC batches? v1 does (JSON-RPC 2.0's); v2 removed
    /// them (its schema has none).
    pub fn batches(&self) -> bool {
        self.version < 2
    }

    /// Is `method` a method of this protocol?
    pub fn has_method(&self, method: &str) -> bool {
        self.methods.contains_key(method)
    }

    /// The problems of one frame (`method`: for a response, the method of the request it
    /// answers, when known). A frame that is not JSON is an error.
    pub fn validate(&self, data: &[u8], method: Option<&str>, tape: &mut Tape) -> Result<Vec<Problem>, DecodeError> {
        tape.read(data)?;
        let mut out = Found::new(usize::MAX, &[]);
        self.frame(data, tape, method, &mut out);
        Ok(out.list)
    }

    /// The problems of the frame on `tape`.
    pub(crate) fn frame(&self, data: &[u8], tape: &Tape, method: Option<&str>, out: &mut Found) {
        let root = tape.get(0);
        if root.ty == JsonType::Array && self.batches() {
            if root.next == 1 {
                out.push(Problem::error(
                    Vec::new(),
                    "expected the message to hold at least 1 item (a batch), found 0".to_owned(),
                ));
            }
            for (index, at) in tape.children(0).enumerate() {
                self.message(data, tape, at, method, &mut vec![PathItem::Index(index)], out);
            }
            return;
        }
        self.message(data, tape, 0, method, &mut Vec::new(), out);
    }

    /// The problems of the message at `at` (`path`: where it is in the frame).
    pub(crate) fn message(
        &self,
        data: &[u8],
        tape: &Tape,
        at: u32,
        method: Option<&str>,
        path: &mut Vec<PathItem>,
        out: &mut Found,
    ) {
        let e = tape.get(at);
        if e.ty != JsonType::Object {
            let batch = if !self.batches() && e.ty == JsonType::Array && path.is_empty() {
                " (batches exist in protocol v1 only)"
            } else {
                ""
            };
            out.push(Problem::error(
                path.clone(),
                format!(
                    "expected {} to be an object{batch}, found {}",
                    quote(path),
                    describe(data, e)
                ),
            ));
            return;
        }
        let Some(node) = self.select(data, tape, at, method, path, out) else {
            return;
        };
        let mut check = Check::new(&self.compiled, tape, data);
        let valid = check.valid(node, at);
        if !valid {
            Explain {
                check: &mut check,
                out: &mut *out,
            }
            .node(node, at, path, "the message");
        }
        // A failed verdict stopped early: it may not have met the values the rules look at.
        if out.stopped() {
            return;
        }
        if check.rule_hit || (!valid && self.version >= 2) {
            rules::custom_values(&mut check, node, at, path, out);
        }
    }

    /// The envelope node that applies to the message at `at` (None: a problem was reported).
    fn select(
        &self,
        data: &[u8],
        tape: &Tape,
        at: u32,
        hint: Option<&str>,
        path: &mut Vec<PathItem>,
        out: &mut Found,
    ) -> Option<NodeId> {
        if let Some(m) = tape.member(data, at, b"method") {
            let has_id = tape.member(data, at, b"id").is_some();
            let ext = if has_id {
                self.ext_request
            } else {
                self.ext_notification
            };
            let e = tape.get(m);
            if e.ty != JsonType::String {
                return Some(ext);
            }
            let mut scratch = Vec::new();
            let name = std::str::from_utf8(string_text(data, e.str(), &mut scratch)).unwrap_or_default();
            if let Some(known) = self.methods.get(name) {
                return Some(known.call);
            }
            if !name.starts_with('_') {
                path.push(PathItem::Key("method".to_owned()));
                out.push(Problem::error(
                    path.clone(),
                    format!(
                        "expected {} to be a protocol v{} method or an extension method starting with \"_\", found {}",
                        quote(path),
                        self.version,
                        describe(data, e)
                    ),
                ));
                path.pop();
            }
            return Some(ext);
        }
        if tape.member(data, at, b"result").is_some() {
            return Some(match hint {
                Some(h) if h.starts_with('_') => self.ext_response,
                Some(h) => self
                    .methods
                    .get(h)
                    .and_then(|m| m.response)
                    .unwrap_or(self.any_response),
                None => self.any_response,
            });
        }
        if tape.member(data, at, b"error").is_some() {
            return Some(self.error_response);
        }
        out.push(Problem::error(
            path.clone(),
            format!(
                "expected {} to be a request, a notification or a response (\"method\", \"result\" or \"error\"), found none of them",
                quote(path)
            ),
        ));
        None
    }
}

#[cfg(test)]
mod tests;
