//! Requests whose answer changes the state (DESIGN §7.10): the v1 client methods an agent calls
//! (`terminal/create`, `terminal/output`, `terminal/wait_for_exit`, `terminal/kill`,
//! `terminal/release`, `fs/read_text_file`, `fs/write_text_file`) and the session lifecycle a
//! client asks for (`session/close`, `session/delete`, `session/load`, `session/resume` with a
//! replay cursor). `request` keeps what the answer will need, `answered` applies it when the
//! answer comes, `drop_session` removes a session and all it holds.
//!
//! Pending requests are keyed by sender and id (the agent's ids and the client's are apart),
//! at most `MAX_PENDING_REQUESTS` of them (the oldest forgotten first); they are not part of a
//! checkpoint, nor is the replay mark.
//!
//! Mirror: `python/acp_fast/_fallback/state/request.py`. Differences on purpose: here a file
//! request keeps the start of its record as JSON text, which the answer completes, and a
//! `terminal/create` the terminal it will create; the fallback keeps dicts.

use crate::error::{DecodeError, JsonType};
use crate::message::{Envelope, Kind, Span};
use crate::scanner::{parse_i64, Str};

use super::evict::{trim_output, NIL};
use super::read::{bad, find_member, find_members, key_bytes, raw, require_session, str_is, text_of, walk};
use super::records::{Action, Change, IdKey, Ident, Source, Target, Terminal, Text};
use super::rules::{answer_rules, MessageRule};
use super::tool_call::set_extra;
use super::Store;

/// How many requests a store waits an answer for (the oldest forgotten first).
pub const MAX_PENDING_REQUESTS: usize = 1000;

/// The methods whose answer is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    ReadFile,
    WriteFile,
    Create,
    Output,
    WaitForExit,
    Kill,
    Release,
    Close,
    Delete,
    /// `session/load`, or `session/resume` with `replayFrom`.
    Replay,
    /// Another request whose answer has rules in the schema (`session/new`, `auth/status`, ...).
    Rules,
}

impl Method {
    /// The method named `name`, and whether the agent sends it.
    fn of(name: &[u8]) -> Option<(Self, bool)> {
        Some(match name {
            b"fs/read_text_file" => (Method::ReadFile, true),
            b"fs/write_text_file" => (Method::WriteFile, true),
            b"terminal/create" => (Method::Create, true),
            b"terminal/output" => (Method::Output, true),
            b"terminal/wait_for_exit" => (Method::WaitForExit, true),
            b"terminal/kill" => (Method::Kill, true),
            b"terminal/release" => (Method::Release, true),
            b"session/close" => (Method::Close, false),
            b"session/delete" => (Method::Delete, false),
            b"session/load" | b"session/resume" => (Method::Replay, false),
            _ => return None,
        })
    }
}

/// A request waiting for its answer: what the answer needs of it.
pub(super) struct Pending {
    method: Method,
    session: Text,
    /// The terminal (`terminal/*`) or the path (`fs/*`).
    id: Option<Text>,
    /// A file request: its record up to `bytes` (`{"op":…,"path":…[,"line":…][,"limit":…]`).
    record: Vec<u8>,
    /// `fs/write_text_file`: the UTF-8 bytes of `content` (when a string).
    bytes: Option<u64>,
    /// `terminal/create`: the terminal it creates.
    terminal: Option<Box<Terminal>>,
    /// The schema's rules for the answer (v2; `entity.rs`, `message_entities`).
    rules: &'static [MessageRule],
}

/// The key of a pending request: who sent it (`a`gent, `c`lient), then its id as JSON text.
fn pending_key(by_agent: bool, id: &IdKey) -> Vec<u8> {
    let mut key = vec![if by_agent { b'a' } else { b'c' }];
    id.write(&mut key);
    key
}

impl Store {
    /// A request other than `session/request_permission`: if its method's answer is applied,
    /// check and keep what the answer needs (replacing a pending request with its key); a
    /// `session/load` (or a `session/resume` replaying from the start) first drops the session,
    /// which its replay rebuilds, and marks it replaying.
    #[inline(never)]
    pub(super) fn request(
        &mut self,
        data: &[u8],
        env: &Envelope,
        method: Str,
        source: Source,
    ) -> Result<Option<Change>, DecodeError> {
        let mut scratch = Vec::new();
        let name = key_bytes(data, method, &mut scratch);
        let rules = if self.version() >= 2 && self.limits.entities != Some(0) {
            answer_rules(name)
        } else {
            &[]
        };
        let Some((mut m, by_agent)) = Method::of(name).or((!rules.is_empty()).then_some((Method::Rules, false))) else {
            return Ok(None);
        };
        // A method sent by the other side than its sender: not followed.
        let not_sender = if by_agent { Source::Client } else { Source::Agent };
        if source == not_sender {
            return Ok(None);
        }
        let Some(params) = env.params.filter(|p| p.ty == JsonType::Object) else {
            return Ok(None);
        };
        let files = matches!(m, Method::ReadFile | Method::WriteFile);
        if files && self.limits.files == Some(0) {
            return Ok(None);
        }
        let mut cursor = None;
        if m == Method::Replay && str_is(data, method, b"session/resume") {
            cursor = find_member(data, params, b"replayFrom").filter(|r| r.ty == JsonType::Object);
            if cursor.is_none() {
                if rules.is_empty() {
                    return Ok(None);
                }
                m = Method::Rules;
            }
        }
        // The answer's rules name the session the answer gives, else the request's (if any).
        let sid = match m {
            Method::Rules => env.session_id.and_then(|s| s.str()),
            _ => Some(require_session(data, env, params)?),
        };
        let mut pending = Pending {
            method: m,
            session: sid.map_or_else(Text::default, |s| text_of(data, s)),
            id: None,
            record: Vec::new(),
            bytes: None,
            terminal: None,
            rules,
        };
        match m {
            Method::Output | Method::WaitForExit | Method::Kill | Method::Release => {
                let id = find_member(data, params, b"terminalId");
                let Some(tid) = id.and_then(|t| t.str()) else {
                    return Err(bad(
                        data,
                        "invalid_terminal_id",
                        "params.terminalId",
                        "a string",
                        id,
                        params,
                    ));
                };
                pending.id = Some(text_of(data, tid));
            }
            Method::ReadFile | Method::WriteFile => self.file_request(data, params, &mut pending)?,
            Method::Create => pending.terminal = Some(Box::new(self.created_terminal(data, params)?)),
            Method::Close | Method::Delete | Method::Replay | Method::Rules => {}
        }
        let mut change = None;
        if m == Method::Replay {
            let from_start = cursor.is_none_or(|c| {
                let ty = find_member(data, c, b"type").and_then(|t| t.str());
                ty.is_some_and(|t| str_is(data, t, b"start"))
            });
            if let Some(slot) = self.sessions.slot(&pending.session).filter(|_| from_start) {
                self.drop_session(slot);
            }
            let sid = sid.expect("checked");
            let slot = self.session_slot(data, sid);
            self.sessions.at_mut(slot).replaying = true;
            change = Some(Change::new(
                Some(sid),
                Target::Session,
                Ident::None,
                Action::Replaying,
                None,
            ));
        }
        let id = IdKey::of(data, env.id.expect("a request has an id"));
        let key = pending_key(by_agent, &id);
        if let Some(slot) = self.requests.slot(&key) {
            self.requests.remove_slot(slot);
        }
        self.requests.push(key.into(), pending);
        if self.requests.len() > MAX_PENDING_REQUESTS {
            let oldest = self.requests.first_slot().expect("a pending request");
            self.requests.remove_slot(oldest);
        }
        self.requests.maybe_compact();
        Ok(change)
    }

    /// `fs/*`: `params.path` must be a string; the record's start, and a write's byte count.
    fn file_request(&mut self, data: &[u8], params: Span, pending: &mut Pending) -> Result<(), DecodeError> {
        let [path, line, limit, content] = find_members(data, params, [b"path", b"line", b"limit", b"content"]);
        let Some(p) = path.and_then(|p| p.str()) else {
            return Err(bad(data, "invalid_path", "params.path", "a string", path, params));
        };
        let path = path.expect("a string");
        pending.id = Some(text_of(data, p));
        let r = &mut pending.record;
        r.extend_from_slice(if pending.method == Method::ReadFile {
            b"{\"op\":\"read\",\"path\":"
        } else {
            b"{\"op\":\"write\",\"path\":"
        });
        r.extend_from_slice(&data[path.range()]);
        for (name, v) in [(&b",\"line\":"[..], line), (b",\"limit\":", limit)] {
            if let Some(v) = v.filter(|v| v.ty != JsonType::Null) {
                r.extend_from_slice(name);
                r.extend_from_slice(&data[v.range()]);
            }
        }
        if pending.method == Method::WriteFile {
            pending.bytes = content.and_then(|c| c.str()).map(|c| text_of(data, c).len() as u64);
        }
        Ok(())
    }

    /// `terminal/create`: the terminal its answer creates (the request's members but
    /// `sessionId`: `command`, `cwd` and `_meta` in their fields, the others extra fields, in
    /// member order; null ones skipped).
    fn created_terminal(&mut self, data: &[u8], params: Span) -> Result<Terminal, DecodeError> {
        walk(data, params, &mut self.members, &mut self.items)?;
        let mut t = Terminal::default();
        let mut ks = Vec::new();
        for m in &self.members {
            if m.value.ty == JsonType::Null {
                continue;
            }
            let value = raw(data, m.value);
            match key_bytes(data, m.key, &mut ks) {
                // Not the terminal's fields.
                b"sessionId" | b"terminalId" | b"output" | b"outputMeta" | b"_truncated" => {}
                b"command" => t.command = Some(value),
                b"cwd" => t.cwd = Some(value),
                b"exitStatus" => t.exit_status = Some(value),
                b"_meta" => t.meta = Some(value),
                _ => set_extra(&mut t.extra, text_of(data, m.key), Some(value)),
            }
        }
        Ok(t)
    }

    /// A response or error response that answers a pending request (None: it answers none):
    /// the answer applied (DESIGN §7.10). The request is forgotten whatever the outcome.
    #[inline(never)]
    pub(super) fn answered(
        &mut self,
        data: &[u8],
        env: &Envelope,
        source: Source,
    ) -> Option<Result<Option<Change>, DecodeError>> {
        let id = IdKey::of(data, env.id?);
        let mut slot = None;
        for by_agent in [true, false] {
            // The client answers the agent's requests, and the other way round.
            let sender = if by_agent { Source::Agent } else { Source::Client };
            if source != sender {
                slot = slot.or_else(|| self.requests.slot(&pending_key(by_agent, &id)));
            }
        }
        let pending = self.requests.remove_slot(slot?).expect("a live slot");
        self.requests.maybe_compact();
        let error = (env.kind == Kind::Error).then_some(()).and(env.error);
        self.held = (pending.session.clone(), pending.id.clone());
        Some(self.apply_answer(data, env, pending, error))
    }

    fn apply_answer(
        &mut self,
        data: &[u8],
        env: &Envelope,
        pending: Pending,
        error: Option<Span>,
    ) -> Result<Option<Change>, DecodeError> {
        let result = env.result.filter(|_| env.kind == Kind::Response);
        let mut rules_change = None;
        if let Some(r) = result.filter(|r| r.ty == JsonType::Object && !pending.rules.is_empty()) {
            // The answer's session: its `sessionId` (`session/new`, `session/fork`), else the
            // request's.
            if let Some(s) = find_member(data, r, b"sessionId").and_then(|s| s.str()) {
                self.held.0 = text_of(data, s);
            }
            let sid = self.held.0.clone();
            rules_change = self.message_entities(data, pending.rules, r, (!sid.is_empty()).then_some(&sid[..]));
        }
        let terminal = |action| Ok(Some(held_change(Target::Terminal, action)));
        let session = |action| Ok(Some(held_change(Target::Session, action)));
        match pending.method {
            Method::ReadFile | Method::WriteFile => {
                let mut bytes = pending.bytes;
                if pending.method == Method::ReadFile {
                    let content = result.filter(|r| r.ty == JsonType::Object);
                    let content = content
                        .and_then(|r| find_member(data, r, b"content"))
                        .and_then(|c| c.str());
                    bytes = content.map(|c| text_of(data, c).len() as u64);
                }
                let mut record = pending.record;
                record.extend_from_slice(b",\"bytes\":");
                match bytes.filter(|_| error.is_none()) {
                    Some(n) => crate::encoder::write_i64(&mut record, n as i64),
                    None => record.extend_from_slice(b"null"),
                }
                if let Some(e) = error {
                    record.extend_from_slice(b",\"error\":");
                    record.extend_from_slice(&data[e.range()]);
                }
                record.push(b'}');
                let slot = self.session_slot_of(&pending.session);
                let max = self.limits.files;
                let session = self.sessions.at_mut(slot);
                session.files.push_back(record.into_boxed_slice());
                super::evict::trim_front(&mut session.files, max, &mut session.dropped.files);
                Ok(Some(held_change(Target::File, Action::Appended)))
            }
            _ if error.is_some() && !matches!(pending.method, Method::Close | Method::Replay) => Ok(None),
            Method::Create => {
                let result = result.filter(|r| r.ty == JsonType::Object);
                let id = result.and_then(|r| find_member(data, r, b"terminalId"));
                let Some(tid) = id.and_then(|t| t.str()) else {
                    let parent = result.or(env.result).unwrap_or(Span::new(JsonType::Null, 0, 0));
                    return Err(bad(
                        data,
                        "invalid_terminal_id",
                        "result.terminalId",
                        "a string",
                        id,
                        parent,
                    ));
                };
                let tid = text_of(data, tid);
                self.held.1 = Some(tid.clone());
                let created = *pending.terminal.expect("a terminal/create request");
                let (slot, tslot, existed) = self.held_terminal(&tid);
                let t = self.sessions.at_mut(slot).terminals.at_mut(tslot);
                let seq = t.seq;
                *t = created;
                t.seq = seq;
                if self.limits.terminals.is_some() {
                    self.touch_terminal((slot, tslot), || tid, !existed);
                }
                terminal(if existed { Action::Replaced } else { Action::Created })
            }
            Method::Output | Method::WaitForExit | Method::Kill | Method::Release => {
                let result = result.filter(|r| r.ty == JsonType::Object);
                let mut output = None;
                if pending.method == Method::Output {
                    let o = result.and_then(|r| find_member(data, r, b"output"));
                    let Some(text) = o.and_then(|o| o.str()) else {
                        let parent = result.or(env.result).unwrap_or(Span::new(JsonType::Null, 0, 0));
                        return Err(bad(data, "invalid_output", "result.output", "a string", o, parent));
                    };
                    output = Some(text_of(data, text));
                }
                let tid = pending.id.expect("a terminal id");
                let (slot, tslot, existed) = self.held_terminal(&tid);
                let max = self.limits.terminal_bytes;
                let t = self.sessions.at_mut(slot).terminals.at_mut(tslot);
                match pending.method {
                    Method::Output => {
                        t.set_output(output.expect("checked").into_vec());
                        trim_output(t, max);
                        let r = result.expect("checked");
                        let [truncated, exit] = find_members(data, r, [b"truncated", b"exitStatus"]);
                        if let Some(v) = truncated.filter(|v| v.ty != JsonType::Null) {
                            set_extra(&mut t.extra, b"truncated"[..].into(), Some(raw(data, v)));
                        }
                        if let Some(v) = exit.filter(|v| v.ty != JsonType::Null) {
                            t.exit_status = Some(raw(data, v));
                        }
                    }
                    Method::WaitForExit => {
                        if let Some(r) = result {
                            t.exit_status = Some(raw(data, r));
                        }
                    }
                    Method::Kill => set_extra(&mut t.extra, b"killed"[..].into(), Some(b"true"[..].into())),
                    _ => set_extra(&mut t.extra, b"released"[..].into(), Some(b"true"[..].into())),
                }
                let exited = t.exit_status.is_some() && !t.queued;
                if self.limits.terminals.is_some() && (exited || !existed) {
                    self.touch_terminal((slot, tslot), || tid, !existed);
                }
                terminal(if existed { Action::Updated } else { Action::Created })
            }
            Method::Close | Method::Delete => {
                // `-32002` (no such session) answers a close as a success would.
                let closed = match error {
                    None => true,
                    Some(e) => {
                        e.ty == JsonType::Object
                            && find_member(data, e, b"code").is_some_and(|c| {
                                c.ty == JsonType::Number && parse_i64(&data[c.range()]) == Some(-32002)
                            })
                            && pending.method == Method::Close
                    }
                };
                if !closed {
                    return Ok(None);
                }
                if let Some(slot) = self.sessions.slot(&pending.session) {
                    self.drop_session(slot);
                    self.closed_sessions += 1;
                }
                session(Action::Closed)
            }
            Method::Replay => {
                if let Some(slot) = self.sessions.slot(&pending.session) {
                    self.sessions.at_mut(slot).replaying = false;
                    self.touch_session(slot);
                }
                session(Action::Replayed)
            }
            Method::Rules => Ok(rules_change),
        }
    }

    /// The terminal `tid` of the held session (`self.held`), created if needed: the slots of the
    /// session and of the terminal, and whether it existed.
    fn held_terminal(&mut self, tid: &[u8]) -> (usize, usize, bool) {
        let sid = self.held.0.clone();
        let slot = self.session_slot_of(&sid);
        let terminals = &mut self.sessions.at_mut(slot).terminals;
        match terminals.slot(tid) {
            Some(s) => (slot, s, true),
            None => (slot, terminals.push(tid.into(), Terminal::default()), false),
        }
    }

    /// A new session `key`, touched by the frame being applied: its slot. With a bound on
    /// sessions, while the store holds as many as the bound, the least recently active session is
    /// dropped first (`drop_session`), counted in `evicted_sessions`; never one the frame being
    /// applied touched (the store then holds more for a while). Before the session is created:
    /// slots move when sessions are dropped, and the caller holds none.
    pub(super) fn new_session(&mut self, key: Text) -> usize {
        if let Some(max) = self.limits.sessions {
            while self.sessions.len() >= max {
                let oldest = self.first_active;
                if oldest == NIL || self.sessions.at_mut(oldest).active == self.tick {
                    break;
                }
                self.drop_session(oldest);
                self.evicted_sessions += 1;
            }
        }
        let slot = self.sessions.push(key, super::records::Session::default());
        if self.limits.sessions.is_some() {
            self.sessions.at_mut(slot).active = self.tick;
            self.link_session(slot);
        }
        slot
    }

    /// Drop the session in `slot` and all it holds: its tool calls (and their place in the
    /// `max_tool_calls` bound), terminals, plans, permission records (pending ones too), unknown
    /// updates, entities, file records and pending requests. Slots of other sessions may move.
    pub(super) fn drop_session(&mut self, slot: usize) {
        let Some(sid) = self.sessions.at(slot).map(|(k, _)| Text::from(k)) else {
            return;
        };
        if self.limits.sessions.is_some() {
            self.unlink_session(slot);
        }
        let session = self.sessions.remove_slot(slot).expect("a live slot");
        self.tool_call_count -= session.tool_calls.len();
        if self.max_tool_calls.is_some() {
            for tc in session.tool_calls.values() {
                if let Some(entry) = tc.seq.checked_sub(self.order_base).and_then(|i| self.order.get_mut(i)) {
                    *entry = None;
                }
            }
            self.trim_order();
        }
        if session.permission_count > 0 {
            for (i, p) in self.permissions.iter_mut().enumerate() {
                if p.as_ref().is_some_and(|p| p.session == slot) {
                    let p = p.take().expect("a record");
                    if self.pending.get(&p.id) == Some(&i) {
                        self.pending.remove(&p.id);
                    }
                    self.permission_holes += 1;
                }
            }
            self.close_permission_holes();
        }
        self.requests.retain(|_, p| p.session != sid);
        if let Some(moved) = self.sessions.compact_slots() {
            for p in self.permissions.iter_mut().flatten() {
                p.session = moved[p.session];
            }
            for entry in self.order.iter_mut().flatten() {
                entry.slot = moved[entry.slot];
            }
            if self.limits.sessions.is_some() {
                self.relink_sessions(&moved);
            }
        }
    }
}

/// A change whose session and id are the held ones (`Store::held`).
fn held_change(target: Target, action: Action) -> Change {
    let mut change = Change::new(None, target, Ident::None, action, None);
    change.held = true;
    change
}

#[cfg(test)]
mod tests {
    use super::super::tests::{apply, upd};
    use super::*;
    use crate::message::{parse_frame, Frame};

    fn from(store: &mut Store, line: &str, source: Source) -> Result<Option<Change>, DecodeError> {
        let data = line.as_bytes();
        match parse_frame(data)? {
            Frame::Single(env) => store.apply(data, &env, source),
            Frame::Batch(_) => panic!("batch"),
        }
    }

    fn session_update(sid: &str, update: &str) -> String {
        upd(update).replace("\"s1\"", &format!("\"{sid}\""))
    }

    #[test]
    fn closing_sessions_moves_the_others_and_keeps_their_records() {
        let mut s = Store::new(Some(1), Some(1000));
        for i in 0..80 {
            let sid = format!("s{i}");
            let tc = format!(r#"{{"sessionUpdate":"tool_call","toolCallId":"c{i}","title":"t"}}"#);
            apply(&mut s, &session_update(&sid, &tc)).unwrap();
            let perm = format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"session/request_permission","params":{{"sessionId":"{sid}","options":[]}}}}"#
            );
            from(&mut s, &perm, Source::Agent).unwrap();
        }
        // close the first 60: the map of sessions compacts, slots move
        for i in 0..60 {
            let close =
                format!(r#"{{"jsonrpc":"2.0","id":"c{i}","method":"session/close","params":{{"sessionId":"s{i}"}}}}"#);
            assert_eq!(from(&mut s, &close, Source::Client).unwrap(), None);
            let answer = format!(r#"{{"jsonrpc":"2.0","id":"c{i}","result":{{}}}}"#);
            let c = from(&mut s, &answer, Source::Agent).unwrap().unwrap();
            assert_eq!((c.target, c.action, c.held), (Target::Session, Action::Closed, true));
            assert_eq!(s.held(), (format!("s{i}").as_bytes(), None));
        }
        assert_eq!(
            (s.sessions().len(), s.tool_call_count(), s.closed_sessions()),
            (20, 20, 60)
        );
        let ids: Vec<&[u8]> = s.permissions().map(|p| s.session_id(p.session)).collect();
        let expected: Vec<String> = (60..80).map(|i| format!("s{i}")).collect();
        assert_eq!(ids, expected.iter().map(|e| e.as_bytes()).collect::<Vec<_>>());
        // a pending request of a closed session is gone; one of a live session resolves
        let answer = r#"{"jsonrpc":"2.0","id":70,"result":{"outcome":{"outcome":"cancelled"}}}"#;
        let c = from(&mut s, answer, Source::Client).unwrap().unwrap();
        assert_eq!(
            s.session_id(s.permission_at(c.permission.unwrap()).unwrap().session),
            b"s70"
        );
        let answer = r#"{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"cancelled"}}}"#;
        assert_eq!(from(&mut s, answer, Source::Client).unwrap(), None);
        // the checkpoint holds what is left
        let options = super::super::checkpoint::Options::default();
        let doc = super::super::to_json(&s, &options).unwrap();
        let (back, _) = super::super::from_json(&doc).unwrap();
        assert_eq!(super::super::to_json(&back, &options).unwrap(), doc);
        assert_eq!(back.closed_sessions(), 60);
    }

    #[test]
    fn pending_requests_are_bounded_and_keyed_by_sender() {
        let mut s = Store::new(Some(1), None);
        for i in 0..(MAX_PENDING_REQUESTS + 5) {
            let r = format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"terminal/kill","params":{{"sessionId":"s","terminalId":"t"}}}}"#
            );
            from(&mut s, &r, Source::Agent).unwrap();
        }
        assert_eq!(s.requests.len(), MAX_PENDING_REQUESTS);
        let answer = |id: usize| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
        assert_eq!(from(&mut s, &answer(0), Source::Client).unwrap(), None);
        // the agent's request 7 is not answered by the agent
        assert_eq!(from(&mut s, &answer(7), Source::Agent).unwrap(), None);
        let c = from(&mut s, &answer(7), Source::Client).unwrap().unwrap();
        assert_eq!((c.target, c.action), (Target::Terminal, Action::Created));
        assert_eq!(s.held(), (&b"s"[..], Some(&b"t"[..])));
    }
}
