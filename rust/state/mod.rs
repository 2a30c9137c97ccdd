//! The state engine: the current state of every tool call, terminal, plan and permission request
//! of every session, kept from frames without building a tree. Each stored value is the JSON text
//! of that value exactly as received (`Raw`), so the state is exact and an update costs the same
//! however long the session has run: the update object is walked once, the values it sets are
//! copied, nothing else is touched.
//!
//! The rules are docs/API.md's "Tool-call state" and docs/DESIGN.md §7. Mirror, module for module
//! and function for function: `python/acp_fast/_fallback/state/` (`__init__.py` is this file).
//! Modules, in reading order: `records` (what is stored), `rules` (the update table, read from the
//! schema's `x-state` rules), `read` (walking members, -32602 errors, base64), `tool_call`,
//! `terminal`, `plan`, `permission` (one function per update kind, dispatched from `apply` below;
//! `unknown_update`, here, keeps the updates no rule handles), `evict` (the bounds: `max_tool_calls` and the `Limits`), `checkpoint` (`to_json` /
//! `from_json`).
//!
//! Differences on purpose: this core takes a message already parsed by `message.rs` (its bytes
//! and envelope) and leaves framing (`feed`) and Python objects to the binding
//! (`rust/python/state.rs`); the fallback's `ToolCallStore` is the Python class itself, with
//! `feed` and the queries.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use hashbrown::HashMap;

use crate::error::{DecodeError, JsonType};
use crate::message::{Captured, Envelope, Kind, Span};
use crate::scanner::{unescape_into, Str};

pub mod checkpoint;
pub mod document;
mod entity;
mod evict;
pub(crate) mod ordered_map;
mod permission;
mod plan;
mod read;
mod records;
mod request;
mod restore;
mod rules;
mod terminal;
mod tool_call;

pub use checkpoint::{from_json, to_json, CheckpointError, TooDeep, FORMAT};
pub use evict::{Limits, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_TOOL_CALLS};
pub use read::{base64_decode, base64_encode};
pub use records::write_dumps;
pub use records::{
    permission_record, terminal_record, tool_call_record, Action, CancelRequest, Change, Entities, Held, IdKey, Ident,
    OrderedMap, Outcome, Permission, Raw, Session, Slot, Source, Target, Terminal, Text, ToolCall, TC_AFTER_LOCATIONS,
    TERMINAL_FIELDS, TOOL_CALL_FIELDS,
};
pub use rules::{targets, TargetRule};

use read::{from_captured, key_bytes, raw, require_session, str_is, walk, Member};

pub struct Store {
    fixed: Option<u8>,
    negotiated: Option<u8>,
    max_tool_calls: Option<usize>,
    /// The other bounds (`evict.rs`).
    limits: Limits,
    /// Bare content blocks in a tool call's content are wrapped (`tool_call::content_item`).
    wrap_bare_content: bool,
    sessions: OrderedMap<Session>,
    /// Every permission request in request order (`None`: replaced by a later one, or dropped by
    /// the bound; `permission_holes` of them).
    permissions: Vec<Option<Permission>>,
    permission_holes: usize,
    /// Pending requests by id → index in `permissions`.
    pending: HashMap<IdKey, usize>,
    /// The last `MAX_CANCEL_REQUESTS` `$/cancel_request` notifications, oldest first.
    cancel_requests: VecDeque<CancelRequest>,
    tool_call_count: usize,
    evicted: u64,
    /// With a bound (`evict.rs`): each tool call by creation number (`None`: evicted), the
    /// creation number of `order[0]`, the first entry that may be live, and the creation numbers
    /// of finished tool calls, oldest first.
    order: Vec<Option<evict::Tracked>>,
    order_base: usize,
    order_head: usize,
    finished: BinaryHeap<Reverse<usize>>,
    /// Requests whose answer is applied (`request.rs`), by sender and id, oldest first.
    requests: OrderedMap<request::Pending>,
    /// The session and id of the request the last answer applied (a `Change` with `held`).
    held: (Text, Option<Text>),
    /// Sessions dropped by an answered `session/close` or `session/delete`.
    closed_sessions: u64,
    /// With a bound on sessions (`evict.rs`): the number of the frame being applied, the slots of
    /// the least and the most recently active sessions (the ends of the activity order, a list
    /// through `Session::prev` / `next`), and the sessions the bound dropped.
    tick: u64,
    first_active: usize,
    last_active: usize,
    evicted_sessions: u64,
    /// The agent's own targets of the schema's rules (`authStatus`), by their index in
    /// `rules::targets()` (`entity.rs`, `message_entities`).
    agent: Vec<Entities>,
    // Scratch space reused from frame to frame.
    members: Vec<Member>,
    items: Vec<Span>,
    scratch: Vec<u8>,
}

/// What the store does with a `params.update.sessionUpdate` kind (DESIGN §7.3), from the update
/// table `rules.rs` reads from the schema: a kind with a function of this store is applied by the
/// function of the same name (`Store::session_update` dispatches); a kind whose rule the store
/// applies as written (`Entity`: messages, usage, the session state...) is applied so under v2;
/// a kind a protocol version defines that the store does not apply (v1's conversation, commands,
/// modes...) is ignored under that version. Any other kind (custom `_` kinds, kinds of the other version, kinds
/// no version defines) is an unknown update, kept when `Limits::updates` allows (`unknown_update`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UpdateKind {
    ToolCall,
    ToolCallUpdate,
    ContentChunk,
    TerminalUpdate,
    TerminalChunk,
    Plan,
    PlanUpdate,
    PlanRemoved,
    /// A rule applied as written under v2 (`entity.rs`; `rule` indexes the table's rules); under
    /// v1 ignored when v1 defines the kind (`v1`), else an unknown update.
    Entity {
        rule: u8,
        v1: bool,
    },
    /// Defined by both versions: always ignored.
    Defined,
    /// Defined by v1 only / v2 only: ignored under that version, else an unknown update.
    DefinedV1,
    DefinedV2,
}

impl UpdateKind {
    /// The kind of `kind` (None: an unknown update whatever the version).
    #[inline]
    fn of(kind: &[u8]) -> Option<Self> {
        rules::kind(kind)
    }
}

impl Store {
    pub fn new(protocol_version: Option<u8>, max_tool_calls: Option<usize>) -> Self {
        Self::with_limits(protocol_version, max_tool_calls, Limits::default())
    }

    /// A store with bounds of its own (`Limits`; `new` takes the defaults).
    pub fn with_limits(protocol_version: Option<u8>, max_tool_calls: Option<usize>, limits: Limits) -> Self {
        Self {
            fixed: protocol_version,
            negotiated: None,
            max_tool_calls,
            limits,
            wrap_bare_content: false,
            sessions: OrderedMap::default(),
            permissions: Vec::new(),
            permission_holes: 0,
            pending: HashMap::default(),
            cancel_requests: VecDeque::new(),
            tool_call_count: 0,
            evicted: 0,
            order: Vec::new(),
            order_base: 0,
            order_head: 0,
            finished: BinaryHeap::new(),
            requests: OrderedMap::default(),
            held: (Text::default(), None),
            closed_sessions: 0,
            tick: 0,
            first_active: evict::NIL,
            last_active: evict::NIL,
            evicted_sessions: 0,
            agent: Vec::new(),
            members: Vec::new(),
            items: Vec::new(),
            scratch: Vec::new(),
        }
    }

    // -- accessors ----------------------------------------------------------------------------

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

    pub fn max_tool_calls(&self) -> Option<usize> {
        self.max_tool_calls
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Are bare content blocks wrapped (off by default; docs/API.md "The record")?
    pub fn wrap_bare_content(&self) -> bool {
        self.wrap_bare_content
    }

    pub fn set_wrap_bare_content(&mut self, on: bool) {
        self.wrap_bare_content = on;
    }

    pub fn tool_call_count(&self) -> usize {
        self.tool_call_count
    }

    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Sessions dropped by an answered `session/close` or `session/delete`.
    pub fn closed_sessions(&self) -> u64 {
        self.closed_sessions
    }

    /// Sessions dropped by the `max_sessions` bound (`Limits::sessions`).
    pub fn evicted_sessions(&self) -> u64 {
        self.evicted_sessions
    }

    /// The session and id (a terminal id, a path, or none) of the request the last answer
    /// applied: those of a `Change` whose `held` is set.
    pub fn held(&self) -> (&[u8], Option<&[u8]>) {
        (&self.held.0, self.held.1.as_deref())
    }

    /// Is the session's history being replayed (`session/load`, or `session/resume` with a
    /// cursor, not answered yet)?
    pub fn replaying(&self, id: &[u8]) -> bool {
        self.sessions.get(id).is_some_and(|s| s.replaying)
    }

    /// The agent's own targets (`authStatus`), by their index in `targets()`.
    pub fn agent_entities(&self) -> &[Entities] {
        &self.agent
    }

    /// Sessions in first-seen order (a session stays once it has held anything).
    pub fn sessions(&self) -> &OrderedMap<Session> {
        &self.sessions
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

    /// The `$/cancel_request` notifications seen (the last `MAX_CANCEL_REQUESTS`), oldest first.
    pub fn cancel_requests(&self) -> impl Iterator<Item = &CancelRequest> {
        self.cancel_requests.iter()
    }

    /// The record a permission change refers to.
    pub fn permission_at(&self, index: usize) -> Option<&Permission> {
        self.permissions.get(index)?.as_ref()
    }

    /// The slot of the session `sid` (a token of `data`), created if needed.
    fn session_slot(&mut self, data: &[u8], sid: Str) -> usize {
        let key: &[u8] = if sid.escaped {
            self.scratch.clear();
            unescape_into(data, sid, &mut self.scratch);
            &self.scratch
        } else {
            &data[sid.start..sid.end]
        };
        match self.sessions.slot(key) {
            Some(s) => {
                self.touch_session(s);
                s
            }
            None => {
                let key: Text = key.into();
                self.new_session(key)
            }
        }
    }

    /// The slot of the session `key`, created if needed.
    fn session_slot_of(&mut self, key: &[u8]) -> usize {
        match self.sessions.slot(key) {
            Some(s) => {
                self.touch_session(s);
                s
            }
            None => self.new_session(key.into()),
        }
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

    // -- applying frames ----------------------------------------------------------------------

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
        self.tick += 1;
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
                    if self.limits.sessions.is_some() {
                        self.touch_session_id(data, sid);
                    }
                    Ok(Some(Change::new(
                        Some(sid),
                        Target::Session,
                        Ident::None,
                        Action::Cancelled,
                        None,
                    )))
                } else if str_is(data, method, b"$/cancel_request") {
                    self.cancel_request(data, env, source)
                } else {
                    Ok(self.notification(data, env, method))
                }
            }
            Kind::Request => {
                let Some(method) = env.method.and_then(|m| m.str()) else {
                    return Ok(None);
                };
                if str_is(data, method, b"session/request_permission") {
                    self.permission_request(data, env)
                } else {
                    self.request(data, env, method, source)
                }
            }
            Kind::Response | Kind::Error => self.response(data, env, source),
        }
    }

    /// Another notification: the rules the schema gives it, under v2 (`auth/status_update`).
    #[inline(never)]
    fn notification(&mut self, data: &[u8], env: &Envelope, method: Str) -> Option<Change> {
        if self.version() < 2 || self.limits.entities == Some(0) {
            return None;
        }
        let mut scratch = Vec::new();
        let rules = rules::notification_rules(key_bytes(data, method, &mut scratch));
        let params = env.params.filter(|p| p.ty == JsonType::Object && !rules.is_empty())?;
        self.message_entities(data, rules, params, None)
    }

    /// A `session/update` notification: the update table's function for its kind.
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
        let rule = UpdateKind::of(key_bytes(data, kind, &mut kscratch));
        let known = match rule {
            Some(UpdateKind::Defined) => return Ok(None),
            Some(UpdateKind::Entity { rule, v1 }) => {
                if self.version() >= 2 {
                    // With `max_entities=0` the rules are not applied (nothing is checked).
                    if self.limits.entities == Some(0) {
                        return Ok(None);
                    }
                    let sid = require_session(data, env, params)?;
                    return self.entity_update(data, sid, update, captured, rule);
                }
                if v1 || self.limits.updates == Some(0) {
                    return Ok(None);
                }
                return self.unknown_update(data, env, (params, update), kind);
            }
            Some(UpdateKind::DefinedV1 | UpdateKind::DefinedV2) => {
                return self.defined_elsewhere(data, env, (params, update), kind, rule);
            }
            rule => rule,
        };
        let Some(rule) = known else {
            // With `max_updates=0` an unknown update is ignored, checking nothing.
            if self.limits.updates == Some(0) {
                return Ok(None);
            }
            return self.unknown_update(data, env, (params, update), kind);
        };
        let sid = require_session(data, env, params)?;
        // The update table.
        match rule {
            UpdateKind::ToolCall => self.tool_call(data, sid, update, captured),
            UpdateKind::ToolCallUpdate => self.tool_call_update(data, sid, update, captured),
            UpdateKind::ContentChunk => self.content_chunk(data, sid, update, captured),
            UpdateKind::TerminalUpdate => self.terminal_update(data, sid, update, captured),
            UpdateKind::TerminalChunk => self.terminal_chunk(data, sid, update, captured),
            UpdateKind::Plan => self.plan(data, sid, update, captured),
            UpdateKind::PlanUpdate => self.plan_update(data, sid, update, captured),
            UpdateKind::PlanRemoved => self.plan_removed(data, sid, update, captured),
            UpdateKind::Entity { .. } | UpdateKind::Defined | UpdateKind::DefinedV1 | UpdateKind::DefinedV2 => Ok(None),
        }
    }

    /// An update of a kind only one version defines (`rule`): ignored under that version, else
    /// an unknown update.
    #[inline(never)]
    fn defined_elsewhere(
        &mut self,
        data: &[u8],
        env: &Envelope,
        spans: (Span, Span),
        kind: Str,
        rule: Option<UpdateKind>,
    ) -> Result<Option<Change>, DecodeError> {
        let v2 = self.version() >= 2;
        if matches!(rule, Some(UpdateKind::DefinedV1)) != v2 || self.limits.updates == Some(0) {
            return Ok(None);
        }
        self.unknown_update(data, env, spans, kind)
    }

    /// An update of a kind no rule handles and the version in force does not define (`kind`, its
    /// `sessionUpdate` token; `UpdateKind::of`), when the store keeps them (`Limits::updates` is
    /// not 0; else `session_update` ignores it, checking nothing): kept as received at the end of
    /// its session's `updates`, the last `Limits::updates` of them.
    #[inline(never)]
    fn unknown_update(
        &mut self,
        data: &[u8],
        env: &Envelope,
        (params, update): (Span, Span),
        kind: Str,
    ) -> Result<Option<Change>, DecodeError> {
        let sid = require_session(data, env, params)?;
        let slot = self.session_slot(data, sid);
        let max = self.limits.updates;
        let session = self.sessions.at_mut(slot);
        session.updates.push_back(raw(data, update));
        evict::trim_front(&mut session.updates, max, &mut session.dropped.updates);
        Ok(Some(Change::new(
            Some(sid),
            Target::Update,
            Ident::Text(kind),
            Action::Appended,
            None,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{parse_frame, Frame};

    pub(super) fn apply(store: &mut Store, line: &str) -> Result<Option<(Target, Action)>, DecodeError> {
        let data = line.as_bytes();
        match parse_frame(data)? {
            Frame::Single(env) => Ok(store.apply(data, &env, Source::Unknown)?.map(|c| (c.target, c.action))),
            Frame::Batch(_) => panic!("batch"),
        }
    }

    pub(super) fn upd(update: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{update}}}}}"#)
    }

    pub(super) fn record(store: &Store, id: &str) -> ToolCall {
        store
            .session(b"s1")
            .unwrap()
            .tool_calls
            .get(id.as_bytes())
            .unwrap()
            .clone()
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
        assert!(s.sessions().is_empty());
    }

    #[test]
    fn unknown_update_kinds_are_ignored_without_a_session_check() {
        let limits = Limits {
            updates: Some(0),
            ..Limits::default()
        };
        let mut s = Store::with_limits(None, None, limits);
        let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":1,"update":{"sessionUpdate":"agent_message_chunk"}}}"#;
        assert_eq!(apply(&mut s, line).unwrap(), None);
        let line =
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":1,"update":{"sessionUpdate":"_x"}}}"#;
        assert_eq!(apply(&mut s, line).unwrap(), None);
        // kept by default (the last 1000)
        let mut s = Store::new(None, None);
        assert_eq!(apply(&mut s, line).unwrap_err().kind, "invalid_session_id");
        assert_eq!(
            apply(&mut s, &upd(r#"{"sessionUpdate":"_x"}"#)).unwrap(),
            Some((Target::Update, Action::Appended))
        );
        assert_eq!(s.session(b"s1").unwrap().updates.len(), 1);
        // a kind of the other version is unknown, a kind of the version in force ignored
        assert_eq!(
            apply(&mut s, &upd(r#"{"sessionUpdate":"state_update"}"#)).unwrap(),
            Some((Target::Update, Action::Appended))
        );
        assert_eq!(
            apply(&mut s, &upd(r#"{"sessionUpdate":"current_mode_update"}"#)).unwrap(),
            None
        );
        let mut s = Store::new(Some(2), None);
        assert_eq!(
            apply(&mut s, &upd(r#"{"sessionUpdate":"replay_complete"}"#)).unwrap(),
            None
        );
        // v2 applies the state rule of the schema (an entity)
        assert!(matches!(
            apply(&mut s, &upd(r#"{"sessionUpdate":"state_update"}"#)).unwrap(),
            Some((Target::Entity(_), Action::Created))
        ));
        assert_eq!(
            apply(&mut s, &upd(r#"{"sessionUpdate":"current_mode_update"}"#)).unwrap(),
            Some((Target::Update, Action::Appended))
        );
    }

    #[test]
    fn unknown_updates_are_kept_when_asked() {
        let limits = Limits {
            updates: Some(2),
            ..Limits::default()
        };
        let mut s = Store::with_limits(None, None, limits);
        for kind in ["_a", "agent_message_chunk", "state_update", "_\\u0062"] {
            let u = format!(r#"{{"sessionUpdate":"{kind}","n":2.50}}"#);
            let kept = kind != "agent_message_chunk";
            assert_eq!(
                apply(&mut s, &upd(&u)).unwrap(),
                kept.then_some((Target::Update, Action::Appended)),
                "{kind}"
            );
        }
        let session = s.session(b"s1").unwrap();
        let kept: Vec<&[u8]> = session.updates.iter().map(|u| &u[..]).collect();
        assert_eq!(
            kept,
            [
                &br#"{"sessionUpdate":"state_update","n":2.50}"#[..],
                br#"{"sessionUpdate":"_\u0062","n":2.50}"#
            ]
        );
        assert_eq!(session.dropped.updates, 1);
        let line =
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":1,"update":{"sessionUpdate":"_x"}}}"#;
        assert_eq!(apply(&mut s, line).unwrap_err().kind, "invalid_session_id");
    }
}
