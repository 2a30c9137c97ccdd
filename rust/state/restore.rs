//! Reading a checkpoint (DESIGN §7.8), moved out of `checkpoint.rs`: the `Reader` that checks the
//! document's values where they are (`from_json` in `checkpoint.rs` walks the document with it),
//! and the readers of one session's records, each checked then added to the store:
//! `restore_tool_calls`, `restore_terminals`, `restore_plans`, `read_permissions` (the records,
//! ordered across sessions by `from_json`) and `restore_updates` (unknown updates and the session's
//! marker). The `_truncated` markers are read by one table-driven reader, `read_marker` (the
//! counts of each marker and the bound each follows: `TOOL_CALL_COUNTS`, `TERMINAL_COUNTS`,
//! `SESSION_COUNTS`).
//!
//! Mirror: `python/acp_fast/_fallback/state/restore.py` (its helpers `_object`, `_find`, ...
//! are this `Reader`'s methods). Differences on purpose: as in `checkpoint.rs`, values are read
//! from the document's bytes here, from the dict `loads` gives there.

use crate::error::JsonType;
use crate::scanner::{parse_i64, parse_u64, Scanner};

use super::checkpoint::CheckpointError;
use super::evict::{number_terminals, Limits, Tracked};
use super::read::base64_decode;
use super::records::{
    held_len, members_at, Entities, Held, IdKey, Outcome, Permission, Raw, Slot, Terminal, Text, ToolCall,
    TERMINAL_FIELDS, TOOL_CALL_FIELDS,
};
use super::rules::TargetRule;
use super::Store;

/// `expected "...outcome" to be {what}`: the outcomes, sorted (`records::OUTCOMES`).
pub(super) const OUTCOME_WHAT: &str = "one of cancelled, error, invalid, pending, selected, unknown";

/// A checked document being read; values are named by their position in it.
pub(super) struct Reader<'a> {
    pub(super) sc: Scanner<'a>,
}

/// An object's members: (key, position of the value).
pub(super) type Members = Vec<(Text, usize)>;

pub(super) fn lossy(text: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(text)
}

/// The member `name` of `obj`, or the error naming `path.name`.
pub(super) fn find(obj: &Members, name: &'static str, path: &str) -> Result<usize, CheckpointError> {
    find_opt(obj, name).ok_or_else(|| CheckpointError::Missing {
        path: path.to_owned(),
        member: name,
    })
}

pub(super) fn find_opt(obj: &Members, name: &str) -> Option<usize> {
    obj.iter().find(|(k, _)| **k == *name.as_bytes()).map(|&(_, at)| at)
}

impl Reader<'_> {
    pub(super) fn ty(&mut self, at: usize) -> JsonType {
        self.sc.pos = at;
        self.sc.peek_type().unwrap_or(JsonType::Null)
    }

    /// The value at `at` must be of type `ty`, else `expected "{path}" to be {what}`.
    pub(super) fn require(
        &mut self,
        at: usize,
        ty: JsonType,
        path: &str,
        what: &'static str,
    ) -> Result<(), CheckpointError> {
        match self.ty(at) {
            t if t == ty => Ok(()),
            found => Err(CheckpointError::Type {
                path: path.to_owned(),
                what,
                found,
            }),
        }
    }

    /// The members of the object at `at` (else the error naming `path`).
    pub(super) fn object(&mut self, at: usize, path: &str) -> Result<Members, CheckpointError> {
        self.require(at, JsonType::Object, path, "an object")?;
        Ok(members_at(&mut self.sc)?.0)
    }

    /// The positions of the items of the array at `at`.
    pub(super) fn items(&mut self, at: usize) -> Result<Vec<usize>, CheckpointError> {
        self.sc.pos = at;
        self.sc.enter()?;
        let mut out = Vec::new();
        if self.sc.peek() != Some(b']') {
            loop {
                self.sc.skip_ws();
                out.push(self.sc.pos);
                self.sc.skip_value()?;
                if self.sc.peek() != Some(b',') {
                    break;
                }
                self.sc.pos += 1;
            }
        }
        self.sc.leave();
        Ok(out)
    }

    /// The text of the string at `at` (`None`: not a string).
    pub(super) fn text(&mut self, at: usize) -> Option<Text> {
        if self.ty(at) != JsonType::String {
            return None;
        }
        let s = self.sc.scan_string().ok()?;
        Some(super::read::text_of(self.sc.data, s))
    }

    /// A request id (a string, an integer or null).
    pub(super) fn id(&mut self, at: usize, path: &str) -> Result<IdKey, CheckpointError> {
        match self.ty(at) {
            JsonType::Null => Ok(IdKey::Null),
            JsonType::String => Ok(IdKey::Str(self.text(at).unwrap_or_default())),
            JsonType::Number if self.int(at).is_some() => match parse_i64(&self.raw(at)?) {
                Some(v) => Ok(IdKey::Int(v)),
                None => Err(self.fail(at, path, "a string, an integer or null")),
            },
            _ => Err(self.fail(at, path, "a string, an integer or null")),
        }
    }

    /// The JSON text of the value at `at`.
    pub(super) fn raw(&mut self, at: usize) -> Result<Raw, CheckpointError> {
        self.sc.pos = at;
        self.sc.skip_value()?;
        Ok(self.sc.data[at..self.sc.pos].into())
    }

    /// The integer at `at`: (negative, magnitude when it fits in 64 bits); `None`: not an integer.
    pub(super) fn int(&mut self, at: usize) -> Option<(bool, Option<u64>)> {
        if self.ty(at) != JsonType::Number {
            return None;
        }
        let n = self.sc.scan_number().ok()?;
        let lexeme = &self.sc.data[n.start..n.end];
        let digits = lexeme.strip_prefix(b"-").unwrap_or(lexeme);
        n.is_int
            .then(|| (lexeme[0] == b'-' && digits != b"0", parse_u64(digits)))
    }

    /// The integer at `at` when it is in `min..=i64::MAX` (the range of every count and bound).
    pub(super) fn count(&mut self, at: usize, min: u64) -> Option<u64> {
        match self.int(at) {
            Some((false, Some(n))) if n >= min && i64::try_from(n).is_ok() => Some(n),
            _ => None,
        }
    }

    /// `protocolVersion` / `negotiatedVersion`: 1, 2 or null.
    pub(super) fn version(&mut self, at: usize, path: &str) -> Result<Option<u8>, CheckpointError> {
        match self.int(at) {
            Some((false, Some(v @ (1 | 2)))) => Ok(Some(v as u8)),
            _ if self.ty(at) == JsonType::Null => Ok(None),
            _ => Err(self.fail(at, path, "1, 2 or null")),
        }
    }

    /// `true` or `false` (else the error naming `path`).
    pub(super) fn flag(&mut self, at: usize, path: &str) -> Result<bool, CheckpointError> {
        self.require(at, JsonType::Boolean, path, "a boolean")?;
        Ok(self.raw(at)?.as_ref() == b"true")
    }

    #[cold]
    pub(super) fn fail(&mut self, at: usize, path: &str, what: &'static str) -> CheckpointError {
        CheckpointError::Type {
            path: path.to_owned(),
            what,
            found: self.ty(at),
        }
    }

    /// The record's `member` must be the key it is filed under.
    pub(super) fn record_id(
        &mut self,
        record: &Members,
        key: &[u8],
        member: &'static str,
        path: &str,
    ) -> Result<(), CheckpointError> {
        let at = find(record, member, path)?;
        if self.text(at).as_deref() == Some(key) {
            return Ok(());
        }
        Err(CheckpointError::Mismatch {
            path: format!("{path}.{member}"),
            expected: key.into(),
            found: self.ty(at),
        })
    }

    /// No member of the record is null.
    pub(super) fn no_nulls(&mut self, record: &Members, path: &str) -> Result<(), CheckpointError> {
        for (name, at) in record {
            if self.ty(*at) == JsonType::Null {
                return Err(self.fail(*at, &format!("{path}.{}", lossy(name)), "a value other than null"));
            }
        }
        Ok(())
    }
}

/// `{sp}.toolCalls`: each record checked, then added in document order (eviction order).
pub(super) fn restore_tool_calls(
    r: &mut Reader<'_>,
    store: &mut Store,
    slot: usize,
    session: &Members,
    sp: &str,
) -> Result<(), CheckpointError> {
    let path = format!("{sp}.toolCalls");
    for (tcid, at) in r.object(find(session, "toolCalls", sp)?, &path)? {
        let rp = format!("{path}.{}", lossy(&tcid));
        let record = r.object(at, &rp)?;
        r.record_id(&record, &tcid, "toolCallId", &rp)?;
        for name in ["kind", "status"] {
            find(&record, name, &rp)?;
        }
        for name in ["content", "locations"] {
            let at = find(&record, name, &rp)?;
            r.require(at, JsonType::Array, &format!("{rp}.{name}"), "an array")?;
        }
        r.no_nulls(&record, &rp)?;
        let mut tc = ToolCall::default();
        [tc.dropped_items] = read_marker(r, &record, &rp, &TOOL_CALL_COUNTS, &store.limits)?;
        for (name, at) in record {
            match TOOL_CALL_FIELDS.iter().position(|f| f.as_bytes() == &*name) {
                Some(i) => tc.fields[i] = Some(r.raw(at)?),
                None if &*name == b"toolCallId" || &*name == b"_truncated" => {}
                None if &*name == b"content" => {
                    for item in r.items(at)? {
                        tc.content.push(r.raw(item)?);
                    }
                }
                None => tc.extra.push((name, r.raw(at)?)),
            }
        }
        if store.limits.content_bytes.is_some() {
            tc.content_bytes = tc.content.iter().map(|item| held_len(item)).sum();
        }
        store.tool_call_count += 1;
        if store.max_tool_calls.is_some() {
            // In document order; `compact` below numbers them and queues the finished ones.
            store.order.push(Some(Tracked {
                slot,
                key: tcid.clone(),
                queued: tc.finished(),
            }));
        }
        store.sessions.at_mut(slot).tool_calls.push(tcid, tc);
    }
    Ok(())
}

/// `{sp}.terminals`: each record checked (`output` base64 text), then added.
pub(super) fn restore_terminals(
    r: &mut Reader<'_>,
    store: &mut Store,
    slot: usize,
    session: &Members,
    sp: &str,
) -> Result<(), CheckpointError> {
    let path = format!("{sp}.terminals");
    for (tid, at) in r.object(find(session, "terminals", sp)?, &path)? {
        let rp = format!("{path}.{}", lossy(&tid));
        let record = r.object(at, &rp)?;
        r.record_id(&record, &tid, "terminalId", &rp)?;
        let at = find(&record, "output", &rp)?;
        let output_path = format!("{rp}.output");
        let Some(text) = r.text(at) else {
            return Err(r.fail(at, &output_path, "a string"));
        };
        let mut t = Terminal::default();
        if !base64_decode(&text, &mut t.output) {
            return Err(CheckpointError::Base64 { path: output_path });
        }
        r.no_nulls(&record, &rp)?;
        [t.dropped_bytes] = read_marker(r, &record, &rp, &TERMINAL_COUNTS, &store.limits)?;
        for (name, at) in record {
            match TERMINAL_FIELDS.iter().position(|f| f.as_bytes() == &*name) {
                Some(i) => *t.field_mut(i) = Some(r.raw(at)?),
                None => match &*name {
                    b"terminalId" | b"output" | b"_truncated" => {}
                    b"outputMeta" => t.output_meta = Some(r.raw(at)?),
                    _ => t.extra.push((name, r.raw(at)?)),
                },
            }
        }
        store.sessions.at_mut(slot).terminals.push(tid, t);
    }
    if store.limits.terminals.is_some() {
        number_terminals(store.sessions.at_mut(slot));
    }
    Ok(())
}

/// `{sp}.plans`: each record checked (its `planId` its key), then added.
pub(super) fn restore_plans(
    r: &mut Reader<'_>,
    store: &mut Store,
    slot: usize,
    session: &Members,
    sp: &str,
) -> Result<(), CheckpointError> {
    let path = format!("{sp}.plans");
    for (pid, at) in r.object(find(session, "plans", sp)?, &path)? {
        let rp = format!("{path}.{}", lossy(&pid));
        let record = r.object(at, &rp)?;
        r.record_id(&record, &pid, "planId", &rp)?;
        let plan = r.raw(at)?;
        store.sessions.at_mut(slot).plans.push(pid, plan);
    }
    Ok(())
}

/// `{sp}.updates` (optional: unknown updates, each an object with a string `sessionUpdate`) and
/// `{sp}._truncated` (optional: what the bounds dropped), checked, then added.
pub(super) fn restore_updates(
    r: &mut Reader<'_>,
    store: &mut Store,
    slot: usize,
    session: &Members,
    sp: &str,
) -> Result<(), CheckpointError> {
    if let Some(at) = find_opt(session, "updates") {
        let path = format!("{sp}.updates");
        r.require(at, JsonType::Array, &path, "an array")?;
        for (i, at) in r.items(at)?.into_iter().enumerate() {
            let up = format!("{path}.{i}");
            let update = r.object(at, &up)?;
            let kind = find(&update, "sessionUpdate", &up)?;
            r.require(kind, JsonType::String, &format!("{up}.sessionUpdate"), "a string")?;
            let raw = r.raw(at)?;
            store.sessions.at_mut(slot).updates.push_back(raw);
        }
    }
    let counts = read_marker(r, session, sp, &SESSION_COUNTS, &store.limits)?;
    let d = &mut store.sessions.at_mut(slot).dropped;
    [d.terminals, d.plans, d.permissions, d.updates, d.entities, d.files] = counts;
    Ok(())
}

/// `{sp}.entities` (optional): `{target: value}` for targets of the update table (`rules.rs`),
/// a target with ids `{id: entity}`; each entity a record (an object; with ids, its id member the
/// key it is filed under) or, for a target a rule replaces by a value, any value.
pub(super) fn restore_entities(
    r: &mut Reader<'_>,
    store: &mut Store,
    slot: usize,
    session: &Members,
    sp: &str,
) -> Result<(), CheckpointError> {
    let Some(at) = find_opt(session, "entities") else {
        return Ok(());
    };
    store.sessions.at_mut(slot).entities = read_entities(r, at, &format!("{sp}.entities"))?;
    Ok(())
}

/// The entities at `at` (`path`): `{target: value}` for targets of the update table, by their
/// index in `rules::targets()` (a session's `entities`, or the agent's own, `state.agent`).
pub(super) fn read_entities(r: &mut Reader<'_>, at: usize, path: &str) -> Result<Vec<Entities>, CheckpointError> {
    let mut out: Vec<Entities> = Vec::new();
    let targets = super::rules::targets();
    for (name, at) in r.object(at, path)? {
        let tp = format!("{path}.{}", lossy(&name));
        let Some(index) = targets.iter().position(|t| t.name.as_bytes() == &*name) else {
            return Err(r.fail(at, &tp, "a target of the update table"));
        };
        let t = &targets[index];
        let mut held = Entities::default();
        match &t.id {
            None => held.one = Some(restore_entity(r, at, t, &tp)?),
            Some(id) => {
                for (key, at) in r.object(at, &tp)? {
                    let ep = format!("{tp}.{}", lossy(&key));
                    let entity = restore_entity(r, at, t, &ep)?;
                    if !t.whole {
                        let record = r.object(at, &ep)?;
                        r.record_id(&record, &key, id, &ep)?;
                    }
                    held.by_id.push(key, entity);
                }
            }
        }
        if out.len() <= index {
            out.resize_with(index + 1, Entities::default);
        }
        out[index] = held;
    }
    Ok(out)
}

/// `{sp}.files` (optional): the answered file requests, each an object whose `op` is `"read"`
/// or `"write"` and whose `path` is a string (`request.rs`).
pub(super) fn restore_files(
    r: &mut Reader<'_>,
    store: &mut Store,
    slot: usize,
    session: &Members,
    sp: &str,
) -> Result<(), CheckpointError> {
    let Some(at) = find_opt(session, "files") else {
        return Ok(());
    };
    let path = format!("{sp}.files");
    r.require(at, JsonType::Array, &path, "an array")?;
    for (i, at) in r.items(at)?.into_iter().enumerate() {
        let fp = format!("{path}.{i}");
        let record = r.object(at, &fp)?;
        let op = find(&record, "op", &fp)?;
        if !matches!(r.text(op).as_deref(), Some(b"read" | b"write")) {
            return Err(r.fail(op, &format!("{fp}.op"), "\"read\" or \"write\""));
        }
        let p = find(&record, "path", &fp)?;
        r.require(p, JsonType::String, &format!("{fp}.path"), "a string")?;
        let raw = r.raw(at)?;
        store.sessions.at_mut(slot).files.push_back(raw);
    }
    Ok(())
}

/// One entity of the target `t` at `ep`.
fn restore_entity(r: &mut Reader<'_>, at: usize, t: &TargetRule, ep: &str) -> Result<Held, CheckpointError> {
    if t.whole {
        return Ok(Held::Value(r.raw(at)?));
    }
    let mut members = Vec::new();
    for (name, at) in r.object(at, ep)? {
        let slot = if r.ty(at) == JsonType::Array && t.lists.iter().any(|l| l.as_bytes() == &*name) {
            let items = r.items(at)?;
            Slot::Items(items.into_iter().map(|i| r.raw(i)).collect::<Result<_, _>>()?)
        } else {
            Slot::Value(r.raw(at)?)
        };
        members.push((name, slot));
    }
    Ok(Held::Record(members))
}

/// A count of a `_truncated` marker (DESIGN §7.8): its member, what it must be when its bounds
/// are off, and its bounds (indices in `Limits::values()`, `Limits::NAMES` order; on when one is).
type Count = (&'static str, &'static str, &'static [usize]);

/// The counts of each marker, in document order: a tool call's, a terminal's, a session's.
const TOOL_CALL_COUNTS: [Count; 1] = [(
    "droppedItems",
    "absent (state.maxContentItems and state.maxContentBytes are null)",
    &[1, 8],
)];
const TERMINAL_COUNTS: [Count; 1] = [("droppedBytes", "absent (state.maxTerminalBytes is null)", &[0])];
const SESSION_COUNTS: [Count; 6] = [
    ("droppedTerminals", "absent (state.maxTerminals is null)", &[5]),
    ("droppedPlans", "absent (state.maxPlans is null)", &[2]),
    ("droppedPermissions", "absent (state.maxPermissions is null)", &[3]),
    ("droppedUpdates", "absent (state.maxUpdates is null)", &[4]),
    ("droppedEntities", "absent (state.maxEntities is null)", &[6]),
    ("droppedFiles", "absent (state.maxFiles is null)", &[7]),
];

/// The `_truncated` marker of `record` at `rp`, if any: a value for each of `counts` (the table
/// above), each present one a positive integer whose bound in `limits` is on, at least one, no
/// other member.
fn read_marker<const N: usize>(
    r: &mut Reader<'_>,
    record: &Members,
    rp: &str,
    counts: &[Count; N],
    limits: &Limits,
) -> Result<[u64; N], CheckpointError> {
    let mut values = [0; N];
    let Some(at) = find_opt(record, "_truncated") else {
        return Ok(values);
    };
    let path = format!("{rp}._truncated");
    let marker_at = at;
    let marker = r.object(at, &path)?;
    let bounds = limits.values();
    for (name, at) in marker {
        let member = format!("{path}.{}", lossy(&name));
        // Another member, or the count of a bound that is off, must be absent.
        let Some(i) = counts.iter().position(|(n, _, _)| n.as_bytes() == &*name) else {
            return Err(r.fail(at, &member, "absent"));
        };
        let (_, off, on) = counts[i];
        if on.iter().all(|&bound| bounds[bound].is_none()) {
            return Err(r.fail(at, &member, off));
        }
        values[i] = r
            .count(at, 1)
            .ok_or_else(|| r.fail(at, &member, "a positive integer"))?;
    }
    if values.iter().all(|&n| n == 0) {
        return Err(match counts.as_slice() {
            [(name, _, _)] => CheckpointError::Missing { path, member: name },
            _ => r.fail(marker_at, &path, "an object with at least one count"),
        });
    }
    Ok(values)
}

/// `{sp}.permissions`: the records of session `sid` (in `slot`), checked.
pub(super) fn read_permissions(
    r: &mut Reader<'_>,
    slot: usize,
    sid: &[u8],
    session: &Members,
    sp: &str,
) -> Result<Vec<Permission>, CheckpointError> {
    let path = format!("{sp}.permissions");
    let at = find(session, "permissions", sp)?;
    r.require(at, JsonType::Array, &path, "an array")?;
    let mut out = Vec::new();
    for (i, at) in r.items(at)?.into_iter().enumerate() {
        let rp = format!("{path}.{i}");
        let record = r.object(at, &rp)?;
        let at = find(&record, "id", &rp)?;
        let id = r.id(at, &format!("{rp}.id"))?;
        let at = find(&record, "sessionId", &rp)?;
        if r.text(at).as_deref() != Some(sid) {
            return Err(CheckpointError::Mismatch {
                path: format!("{rp}.sessionId"),
                expected: sid.into(),
                found: r.ty(at),
            });
        }
        let options = find(&record, "options", &rp)?;
        r.require(options, JsonType::Array, &format!("{rp}.options"), "an array")?;
        let at = find(&record, "outcome", &rp)?;
        let Some(outcome) = r.text(at).and_then(|t| Outcome::from_name(&t)) else {
            return Err(r.fail(at, &format!("{rp}.outcome"), OUTCOME_WHAT));
        };
        let at = find(&record, "approved", &rp)?;
        let approved = match r.raw(at)?.as_ref() {
            b"true" => true,
            b"false" => false,
            _ => return Err(r.fail(at, &format!("{rp}.approved"), "a boolean")),
        };
        let mut text = |name: &'static str| -> Result<Option<Text>, CheckpointError> {
            let Some(at) = find_opt(&record, name) else {
                return Ok(None);
            };
            match r.text(at) {
                Some(t) => Ok(Some(t)),
                None => Err(r.fail(at, &format!("{rp}.{name}"), "a string")),
            }
        };
        let tool_call_id = text("toolCallId")?;
        let option_id = text("optionId")?;
        let response = match find_opt(&record, "response") {
            Some(at) => Some(r.raw(at)?),
            None => None,
        };
        out.push(Permission {
            id,
            session: slot,
            tool_call_id,
            options: r.raw(options)?,
            outcome,
            option_id,
            approved,
            response,
        });
    }
    Ok(out)
}
