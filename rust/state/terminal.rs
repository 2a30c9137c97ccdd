//! Terminals (v2 agent-owned, applied whatever the version): `terminal_update` (upsert with v2
//! rules) and `terminal_output_chunk` (append bytes), DESIGN §7.4. Keyed by (session, terminalId),
//! a namespace apart from tool calls.
//!
//! Mirror: `python/acp_fast/_fallback/state/terminal.py`. Differences on purpose: here the update's
//! members are walked and classified into the terminal's slots; the fallback reads orjson's dict
//! and keeps the fields (but the output bytes) in a dict.

use crate::error::{DecodeError, JsonType};
use crate::message::{Captured, Span};
use crate::scanner::Str;

use super::entity::merge_meta;
use super::evict::trim_output;
use super::read::{bad, decode_b64, find_member, key_bytes, raw, text_of, F_EXTRA, F_ID, F_IGNORE, F_OUTPUT};
use super::records::{Action, Change, Ident, Raw, Target, Terminal};
use super::tool_call::{dedupe_extras, set_extra};
use super::Store;

// The update functions here stay out of line (`#[inline(never)]`), so that `Store::apply`, the
// path of every frame, stays small.
impl Store {
    /// `terminal_update`: omitted = unchanged, null = unset (`output: null` empties the bytes and
    /// unsets `outputMeta`), a value replaces; `output.data` (base64) replaces all bytes and
    /// `output._meta` becomes `outputMeta`.
    #[inline(never)]
    pub(super) fn terminal_update(
        &mut self,
        data: &[u8],
        sid: Str,
        update: Span,
        captured: Option<&Captured>,
    ) -> Result<Option<Change>, DecodeError> {
        self.fill_members(data, update, captured)?;
        let mut id = None;
        let mut output = None;
        let mut exit = None;
        let mut last = [u8::MAX; 4];
        let mut ks = Vec::new();
        for (i, m) in self.members.iter_mut().enumerate() {
            m.code = match key_bytes(data, m.key, &mut ks) {
                b"terminalId" => {
                    id = Some(m.value);
                    F_ID
                }
                // `outputMeta` is derived from `output._meta`, never a field of its own (nor is
                // `_truncated`: `dedupe_extras`).
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
        let tid = terminal_id(data, id, update)?;
        let mut bytes = Vec::new();
        let mut output_meta: Option<Option<Raw>> = None;
        if let Some((_, v)) = output {
            match v.ty {
                JsonType::Null => output_meta = Some(None),
                JsonType::Object => {
                    match find_member(data, v, b"data") {
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
        let members = std::mem::take(&mut self.members);
        let max = self.limits.terminal_bytes;
        let (slot, tslot, t, existed) = self.terminal_mut(data, sid, tid);
        for (i, m) in members.iter().enumerate() {
            let null = m.value.ty == JsonType::Null;
            match m.code {
                // `_meta` objects patch the stored one by top-level key (v2).
                3 if last[3] as usize == i && m.value.ty == JsonType::Object => {
                    let old = t.field_mut(3).take().filter(|v| v.first() == Some(&b'{'));
                    *t.field_mut(3) = Some(merge_meta(old.as_deref(), data, m.value));
                }
                c if (c as usize) < 4 && last[c as usize] as usize == i => {
                    *t.field_mut(c as usize) = (!null).then(|| raw(data, m.value));
                }
                c if (c as usize) < 4 => {}
                F_OUTPUT if output.is_some_and(|(j, _)| j == i) => {
                    t.set_output(std::mem::take(&mut bytes));
                    trim_output(t, max);
                    t.output_meta = output_meta.take().flatten();
                }
                F_EXTRA => {
                    set_extra(&mut t.extra, text_of(data, m.key), (!null).then(|| raw(data, m.value)));
                }
                _ => {}
            }
        }
        let exited = t.exit_status.is_some() && !t.queued;
        self.members = members;
        if self.limits.terminals.is_some() && (exited || !existed) {
            self.touch_terminal((slot, tslot), || text_of(data, tid), !existed);
        }
        Ok(Some(terminal_change(sid, tid, existed, Action::Updated)))
    }

    /// `terminal_output_chunk`: the base64 `data` decoded and appended (the chunk's other members
    /// are not stored); the output then keeps its last `Limits::terminal_bytes` bytes.
    #[inline(never)]
    pub(super) fn terminal_chunk(
        &mut self,
        data: &[u8],
        sid: Str,
        update: Span,
        captured: Option<&Captured>,
    ) -> Result<Option<Change>, DecodeError> {
        self.fill_members(data, update, captured)?;
        let mut id = None;
        let mut chunk = None;
        let mut ks = Vec::new();
        for m in &self.members {
            match key_bytes(data, m.key, &mut ks) {
                b"terminalId" => id = Some(m.value),
                b"data" => chunk = Some(m.value),
                _ => {}
            }
        }
        let tid = terminal_id(data, id, update)?;
        let mut bytes = Vec::new();
        match chunk {
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
        let max = self.limits.terminal_bytes;
        let (slot, tslot, t, existed) = self.terminal_mut(data, sid, tid);
        t.output.extend_from_slice(&bytes);
        trim_output(t, max);
        if !existed && self.limits.terminals.is_some() {
            self.touch_terminal((slot, tslot), || text_of(data, tid), true);
        }
        Ok(Some(terminal_change(sid, tid, existed, Action::Appended)))
    }

    /// The terminal `tid` of session `sid`, created if needed: the slots of the session and of
    /// the terminal, the terminal, and whether it existed.
    fn terminal_mut(&mut self, data: &[u8], sid: Str, tid: Str) -> (usize, usize, &mut Terminal, bool) {
        let slot = self.session_slot(data, sid);
        let key = text_of(data, tid);
        let terminals = &mut self.sessions.at_mut(slot).terminals;
        match terminals.slot(&key) {
            Some(s) => (slot, s, terminals.at_mut(s), true),
            None => {
                let s = terminals.push(key, Terminal::default());
                (slot, s, terminals.at_mut(s), false)
            }
        }
    }
}

/// `update.terminalId` as a string token, or the error.
fn terminal_id(data: &[u8], id: Option<Span>, update: Span) -> Result<Str, DecodeError> {
    id.and_then(|s| s.str()).ok_or_else(|| {
        bad(
            data,
            "invalid_terminal_id",
            "params.update.terminalId",
            "a string",
            id,
            update,
        )
    })
}

fn terminal_change(sid: Str, tid: Str, existed: bool, action: Action) -> Change {
    let action = if existed { action } else { Action::Created };
    Change::new(Some(sid), Target::Terminal, Ident::Text(tid), action, None)
}
