//! Permission requests and responses (DESIGN §7.5), and the protocol version a response teaches
//! (§7.1): `permission_request` (a `session/request_permission` request: its tool call applied as
//! a `tool_call_update`, the request recorded) and `response` (resolves a pending request, or
//! sets the negotiated version); `cancel_responses`, what a client answers after `session/cancel`;
//! `cancel_request`, a `$/cancel_request` notification (the request it cancels, who sent it).
//!
//! Mirror: `python/acp_fast/_fallback/state/permission.py`. Differences on purpose: here a record
//! is a `Permission` holding its session's slot and the JSON text of `options` / `response`; the
//! fallback keeps `[session id, record dict]`, the dict in materialized key order.

use std::cmp::Reverse;

use crate::error::{DecodeError, JsonType};
use crate::message::{Envelope, Kind, Span};
use crate::scanner::parse_i64;

use super::read::{array_items, bad, find_member, find_members, raw, require_session, str_is, text_of};
use super::records::{Action, CancelRequest, Change, IdKey, Ident, Outcome, Permission, Source, Target};
use super::tool_call::TcOp;
use super::Store;

/// How many `$/cancel_request` notifications a store keeps (the oldest go first).
pub const MAX_CANCEL_REQUESTS: usize = 1000;

// The update functions here stay out of line (`#[inline(never)]`), so that `Store::apply`, the
// path of every frame, stays small.
impl Store {
    /// A `session/request_permission` request: `params.options` must be an array; its tool call
    /// (`params.toolCall`, else the `toolCall` of a `tool_call` subject) is applied as a
    /// `tool_call_update` of the version in force; the request is recorded as pending (replacing a
    /// pending one with its id).
    #[inline(never)]
    pub(super) fn permission_request(&mut self, data: &[u8], env: &Envelope) -> Result<Option<Change>, DecodeError> {
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
        // Checks in DESIGN §7.7 order: the tool call's id (and content / locations), options,
        // then the tool call being an object.
        let mut tcid = None;
        if let Some((Some(t), _, path)) = target {
            if t.ty == JsonType::Object {
                tcid = Some(self.check_tool_call(data, t, path, TcOp::Update, None)?);
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
            if t.is_none_or(|t| t.ty != JsonType::Object) {
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
            self.drop_permission(old);
        }
        self.pending.insert(key.clone(), self.permissions.len());
        self.push_permission(Permission {
            id: key,
            session: slot,
            tool_call_id: tcid.map(|t| text_of(data, t)),
            options: raw(data, options),
            outcome: Outcome::Pending,
            option_id: None,
            approved: false,
            response: None,
        });
        self.trim_permissions(slot);
        let mut change = Change::new(
            Some(sid),
            Target::Permission,
            Ident::Id(id_span),
            Action::Requested,
            tcid,
        );
        change.permission = Some(self.permissions.len() - 1);
        Ok(Some(change))
    }

    /// A response or error response: resolves the pending request with its id (unless the agent
    /// sent it), else a success response whose `result.protocolVersion` is an integer sets the
    /// negotiated version.
    #[inline(never)]
    pub(super) fn response(
        &mut self,
        data: &[u8],
        env: &Envelope,
        source: Source,
    ) -> Result<Option<Change>, DecodeError> {
        let Some(id_span) = env.id else {
            return Ok(None);
        };
        if source != Source::Agent && !self.pending.is_empty() {
            let key = IdKey::of(data, id_span);
            if let Some(index) = self.pending.remove(&key) {
                let p = self.permissions[index].as_mut().expect("pending record");
                resolve(p, data, env);
                let slot = p.session;
                self.sessions.at_mut(slot).resolved.push(Reverse(index));
                self.touch_session(slot);
                let mut change = Change::new(None, Target::Permission, Ident::Id(id_span), Action::Resolved, None);
                change.permission = Some(index);
                return Ok(Some(change));
            }
        }
        if !self.requests.is_empty() {
            if let Some(applied) = self.answered(data, env, source) {
                return applied;
            }
        }
        if env.kind != Kind::Response {
            return Ok(None);
        }
        // `result.protocolVersion`, located by the envelope walk (set only for an object result).
        let Some(pv) = env.protocol_version.filter(|v| v.ty == JsonType::Number && v.is_int) else {
            return Ok(None);
        };
        let text = &data[pv.range()];
        let version = match parse_i64(text) {
            Some(v) if v <= 1 => 1,
            Some(_) => 2,
            None if text.starts_with(b"-") => 1,
            None => 2,
        };
        self.negotiated = Some(version);
        Ok(Some(Change::new(
            None,
            Target::Protocol,
            Ident::Version(version),
            Action::Negotiated,
            None,
        )))
    }
}

impl Store {
    /// For each pending request of session `sid` (request order), the frame a client must answer
    /// with after `session/cancel`.
    pub fn cancel_responses(&self, sid: &[u8]) -> Vec<Vec<u8>> {
        let pending = self
            .permissions()
            .filter(|p| p.outcome == Outcome::Pending && self.session_id(p.session) == sid);
        pending
            .map(|p| {
                let mut frame = b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec();
                p.id.write(&mut frame);
                frame.extend_from_slice(b",\"result\":{\"outcome\":{\"outcome\":\"cancelled\"}}}\n");
                frame
            })
            .collect()
    }

    /// A `$/cancel_request` notification: `params.requestId` (a string, an integer or null) and
    /// its sender are kept (the last `MAX_CANCEL_REQUESTS`); the change names the request, and
    /// its session and tool call when it is a pending permission request.
    #[inline(never)]
    pub(super) fn cancel_request(
        &mut self,
        data: &[u8],
        env: &Envelope,
        source: Source,
    ) -> Result<Option<Change>, DecodeError> {
        let Some(params) = env.params.filter(|p| p.ty == JsonType::Object) else {
            return Ok(None);
        };
        let [id] = find_members(data, params, [b"requestId"]);
        let id = match id {
            Some(v) if v.ty == JsonType::String || v.ty == JsonType::Null => v,
            Some(v) if v.ty == JsonType::Number && parse_i64(&data[v.range()]).is_some() => v,
            other => {
                let what = "a string, an integer or null";
                return Err(bad(data, "invalid_request_id", "params.requestId", what, other, params));
            }
        };
        let key = IdKey::of(data, id);
        let permission = self.pending.get(&key).copied();
        if self.cancel_requests.len() == MAX_CANCEL_REQUESTS {
            self.cancel_requests.pop_front();
        }
        self.cancel_requests.push_back(CancelRequest { id: key, source });
        let mut change = Change::new(None, Target::Request, Ident::Id(id), Action::Cancelled, None);
        change.permission = permission;
        Ok(Some(change))
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
fn offered_kind(options: &[u8], option_id: &[u8]) -> Option<Option<Vec<u8>>> {
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
