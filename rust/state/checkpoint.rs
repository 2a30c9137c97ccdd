//! Checkpoints (DESIGN §7.8): `to_json` writes the whole store as an `acp-fast-state/1` document,
//! byte for byte what `dumps(state())` gives but for numbers, which keep their text as received;
//! `from_json` checks a document and rebuilds the store (its eviction order is the document's
//! order).
//!
//! Moved to `restore.rs` (and `restore.py` in the fallback): the `Reader` of a document and the
//! readers of a session's records (`restore_tool_calls`, `restore_terminals`, `restore_plans`,
//! `read_permissions`, `restore_updates`, the markers' `read_marker`); `from_json` stays here.
//!
//! Mirror: `python/acp_fast/_fallback/state/checkpoint.py`. Differences on purpose: here the
//! document (`state`) is written once to a `Sink` (`document.rs`): as bytes straight from the
//! records by `JsonWriter` (each stored value re-written as `dumps(loads(value))` would,
//! `write_value`), as the `state()` dict by the binding's sink; and it is read straight from its
//! bytes (`Reader`: an object's members as a parsed dict has them, the last of duplicates in the
//! first one's place). The fallback builds the `state()` dict and dumps it, and checks the dict
//! that `loads` gives.
//! The checks run in the same order in both, so a bad document gets the same error text; the few
//! messages that quote a value with Python's `repr()` take it from the caller
//! (`CheckpointError::message`).

use std::fmt;

use hashbrown::HashMap;

use crate::encoder::{write_str, PathItem};
use crate::error::{DecodeError, JsonType};
use crate::scanner::{check_utf8, Scanner, Skip};

use super::document::{self, JsonWriter, Name, Output, Sink};
use super::evict::Limits;
use super::records::{permission_record, truncated, CancelRequest, Outcome, Permission, Raw, Session, Source, Text};
use super::restore::{
    find, find_opt, lossy, read_entities, read_permissions, restore_entities, restore_files, restore_plans,
    restore_terminals, restore_tool_calls, restore_updates, Reader,
};
use super::Store;

/// The `format` of a checkpoint.
pub const FORMAT: &str = "acp-fast-state/1";

/// Deepest nesting of a checkpoint: the library's one limit (`scanner::MAX_DEPTH`, what a frame may
/// nest) and the levels a checkpoint adds around what a frame held. A record's members sit 5
/// levels deep (state, sessions, session, its map or list, the record), a value in a frame at
/// least 1 (`result`, `error`): a frame at the limit makes a checkpoint 4 levels deeper (content
/// items and plans gain fewer). The values inside are never deeper than a frame could hold them
/// (`MAX_DEPTH` less 4 or 5), so each is read and built with the usual limit.
pub const MAX_DEPTH: u32 = crate::scanner::MAX_DEPTH + 4;

// ---------------------------------------------------------------------------------------------
// Errors

/// Why `from_json` refused a document. `Json` is the error `loads` gives (raised as a
/// DecodeError); the others are the ValueErrors of DESIGN §7.8, each naming the path.
#[derive(Debug)]
pub enum CheckpointError {
    Json(DecodeError),
    /// `expected "{path}" to be {what}, found {found}` (a JSON type name).
    Type {
        path: String,
        what: &'static str,
        found: JsonType,
    },
    /// `expected "{path}.{member}" to be present, found none`.
    Missing {
        path: String,
        member: &'static str,
    },
    /// `expected "state.format" to be 'acp-fast-state/1', found {repr(found)}`.
    Format {
        found: Raw,
    },
    /// `expected "{path}" to be {repr(expected)}, found {found}`: a record's `toolCallId` /
    /// `terminalId` / `sessionId` that is not the key it is filed under.
    Mismatch {
        path: String,
        expected: Text,
        found: JsonType,
    },
    /// `expected "{path}" to be base64 text, found string`.
    Base64 {
        path: String,
    },
    /// `expected "state.permissionOrder" to name {repr(session)} {expected} times (its permission
    /// records), found {found, or "more"}`.
    PermissionOrder {
        session: Text,
        expected: usize,
        found: Option<usize>,
    },
}

impl CheckpointError {
    /// The error's text. `repr` gives Python's `repr()` of the JSON value whose text it is handed
    /// (the binding passes Python's own; `Display` uses `repr_approx`).
    pub fn message(&self, repr: &mut dyn FnMut(&[u8]) -> String) -> String {
        let mut quoted = |text: &[u8]| {
            let mut json = Vec::with_capacity(text.len() + 2);
            write_str(&mut json, text);
            repr(&json)
        };
        match self {
            Self::Json(e) => e.description.clone(),
            Self::Type { path, what, found } => format!("expected \"{path}\" to be {what}, found {}", found.name()),
            Self::Missing { path, member } => format!("expected \"{path}.{member}\" to be present, found none"),
            Self::Format { found } => format!(
                "expected \"state.format\" to be {}, found {}",
                quoted(FORMAT.as_bytes()),
                repr(found)
            ),
            Self::Mismatch { path, expected, found } => {
                format!("expected \"{path}\" to be {}, found {}", quoted(expected), found.name())
            }
            Self::Base64 { path } => format!("expected \"{path}\" to be base64 text, found string"),
            Self::PermissionOrder {
                session,
                expected,
                found,
            } => format!(
                "expected \"state.permissionOrder\" to name {} {expected} times (its permission records), found {}",
                quoted(session),
                found.map_or_else(|| "more".to_owned(), |n| n.to_string())
            ),
        }
    }
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message(&mut repr_approx))
    }
}

impl std::error::Error for CheckpointError {}

/// Python's `repr()` of a JSON value, for `Display`: exact for ASCII strings and the literals;
/// other values are shown as their JSON text, and non-ASCII characters are kept as they are
/// (Python escapes the ones its Unicode database calls unprintable).
pub fn repr_approx(json: &[u8]) -> String {
    match json {
        b"true" => return "True".to_owned(),
        b"false" => return "False".to_owned(),
        b"null" => return "None".to_owned(),
        [b'"', ..] => {}
        _ => return String::from_utf8_lossy(json).into_owned(),
    }
    let mut scratch = Vec::new();
    let mut sc = Scanner::new(json);
    let text = match sc.scan_string() {
        Ok(s) => String::from_utf8_lossy(crate::scanner::string_text(json, s, &mut scratch)).into_owned(),
        Err(_) => return String::from_utf8_lossy(json).into_owned(),
    };
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// A stored value nested deeper than a checkpoint carries (`MAX_DEPTH`; only a value that came in
/// unchecked, never one of a frame): the path of the container that is too deep, outermost step
/// first (the binding raises `dumps`' EncodeError naming `MAX_DEPTH`).
#[derive(Debug)]
pub struct TooDeep {
    pub path: Vec<PathItem>,
}

// ---------------------------------------------------------------------------------------------
// Writing

/// The checkpoint document of `store`: `dumps(state())`.
pub fn to_json(store: &Store) -> Result<Vec<u8>, TooDeep> {
    let mut w = JsonWriter::with_capacity(256);
    state(&mut w, store)?;
    Ok(w.finish())
}

/// The state document (DESIGN §7.8), written to `s`: `state()` and, through `JsonWriter`,
/// `to_json()`.
pub fn state<S: Sink>(s: &mut S, store: &Store) -> Result<(), S::Error> {
    s.begin_object()?;
    s.name(Name::FORMAT)?;
    s.text(FORMAT.as_bytes())?;
    s.name(Name::PROTOCOL_VERSION)?;
    s.opt_uint(store.fixed.map(u64::from))?;
    s.name(Name::NEGOTIATED_VERSION)?;
    s.opt_uint(store.negotiated.map(u64::from))?;
    s.name(Name::MAX_TOOL_CALLS)?;
    s.opt_uint(store.max_tool_calls.map(|n| n as u64))?;
    // The bounds inside sessions, each only when it is not the default.
    let defaults = Limits::default().values();
    for ((name, value), default) in document::LIMITS.into_iter().zip(store.limits.values()).zip(defaults) {
        if value != default {
            s.name(name)?;
            s.opt_uint(value.map(|n| n as u64))?;
        }
    }
    s.name(Name::EVICTED)?;
    s.uint(store.evicted)?;
    // Present only when a session was closed (older checkpoints lack it).
    if store.closed_sessions > 0 {
        s.name(Name::CLOSED_SESSIONS)?;
        s.uint(store.closed_sessions)?;
    }
    // Present only when the agent's own targets hold something (`authStatus`).
    if store.agent.iter().any(|e| !e.is_empty()) {
        s.name(Name::AGENT)?;
        document::entity_map(s, &store.agent)?;
    }
    s.name(Name::SESSIONS)?;
    s.begin_object()?;
    let mut per_session: HashMap<usize, Vec<&Permission>> = HashMap::new();
    for p in store.permissions() {
        per_session.entry(p.session).or_default().push(p);
    }
    for (slot, sid, session) in store.sessions.iter_slots() {
        s.key(sid)?;
        s.begin_object()?;
        s.name(Name::TOOL_CALLS)?;
        document::tool_calls(s, Some(session))?;
        s.name(Name::TERMINALS)?;
        document::terminals(s, Some(session), Output::Base64)?;
        s.name(Name::PLANS)?;
        document::plans(s, Some(session))?;
        s.name(Name::PERMISSIONS)?;
        s.begin_array()?;
        for p in per_session.get(&slot).into_iter().flatten() {
            permission_record(s, sid, p)?;
        }
        s.end_array()?;
        if !session.updates.is_empty() {
            s.name(Name::UPDATES)?;
            document::updates(s, Some(session))?;
        }
        if session.entities.iter().any(|e| !e.is_empty()) {
            s.name(Name::ENTITIES)?;
            document::entities(s, Some(session))?;
        }
        if !session.files.is_empty() {
            s.name(Name::FILES)?;
            document::files(s, Some(session))?;
        }
        truncated(s, session.dropped.counts())?;
        s.end_object()?;
    }
    s.end_object()?;
    // The session of each permission record in request order across sessions.
    s.name(Name::PERMISSION_ORDER)?;
    s.begin_array()?;
    for p in store.permissions() {
        s.text(store.session_id(p.session))?;
    }
    s.end_array()?;
    // Present only when the store has seen a `$/cancel_request` (older checkpoints lack it).
    if !store.cancel_requests.is_empty() {
        s.name(Name::CANCEL_REQUESTS)?;
        cancel_request_list(s, store)?;
    }
    s.end_object()
}

/// `state.cancelRequests`: `[{"requestId": id, "source": "agent" | "client" | null}]`, oldest
/// first (also the answer of `cancel_requests()`).
pub fn cancel_request_list<S: Sink>(s: &mut S, store: &Store) -> Result<(), S::Error> {
    s.begin_array()?;
    for c in store.cancel_requests() {
        s.begin_object()?;
        s.name(Name::REQUEST_ID)?;
        c.id.emit(s)?;
        s.name(Name::SOURCE)?;
        match c.source.name() {
            Some(name) => s.text(name.as_bytes())?,
            None => s.null()?,
        }
        s.end_object()?;
    }
    s.end_array()
}

// ---------------------------------------------------------------------------------------------
// Reading (the reader and the readers of a session's records: `restore.rs`)

impl From<DecodeError> for CheckpointError {
    fn from(e: DecodeError) -> Self {
        Self::Json(e)
    }
}

/// Check the document `data` and rebuild the store it describes. Checks and messages: DESIGN §7.8
/// (the checks run in the fallback's order, so both report the same first problem).
pub fn from_json(data: &[u8]) -> Result<Store, CheckpointError> {
    // `validate`, with a checkpoint's limit.
    check_utf8(data)?;
    let scanner = || {
        let mut sc = Scanner::new(data);
        sc.max_depth = MAX_DEPTH;
        sc
    };
    scanner().parse_document(&mut Skip)?;
    let mut r = Reader { sc: scanner() };
    r.sc.skip_ws();
    let root = r.sc.pos;
    let state = r.object(root, "state")?;
    let format = find(&state, "format", "state")?;
    if r.text(format).as_deref() != Some(FORMAT.as_bytes()) {
        return Err(CheckpointError::Format { found: r.raw(format)? });
    }
    let fixed = r.version(find(&state, "protocolVersion", "state")?, "state.protocolVersion")?;
    let negotiated = r.version(find(&state, "negotiatedVersion", "state")?, "state.negotiatedVersion")?;
    let at = find(&state, "maxToolCalls", "state")?;
    let max = match r.count(at, 1).map(usize::try_from) {
        _ if r.ty(at) == JsonType::Null => None,
        Some(Ok(n)) => Some(n),
        _ => return Err(r.fail(at, "state.maxToolCalls", "a positive integer or null")),
    };
    let mut limits = Limits::default();
    for (name, (min, slot)) in Limits::NAMES.iter().zip(limits.slots_mut()) {
        let Some(at) = find_opt(&state, name) else {
            continue; // the default
        };
        *slot = match r.count(at, min).map(usize::try_from) {
            _ if r.ty(at) == JsonType::Null => None,
            Some(Ok(n)) => Some(n),
            _ => return Err(r.fail(at, &format!("state.{name}"), Limits::what(min))),
        };
    }
    let at = find(&state, "evicted", "state")?;
    let Some(evicted) = r.count(at, 0) else {
        return Err(r.fail(at, "state.evicted", "a non-negative integer"));
    };
    let closed = match find_opt(&state, "closedSessions") {
        None => 0,
        Some(at) => r
            .count(at, 0)
            .ok_or_else(|| r.fail(at, "state.closedSessions", "a non-negative integer"))?,
    };
    let agent = match find_opt(&state, "agent") {
        None => Vec::new(),
        Some(at) => read_entities(&mut r, at, "state.agent")?,
    };
    let sessions = r.object(find(&state, "sessions", "state")?, "state.sessions")?;
    let mut store = Store::with_limits(fixed, max, limits);
    store.negotiated = negotiated;
    store.evicted = evicted;
    store.closed_sessions = closed;
    store.agent = agent;
    let mut records: Vec<Vec<Permission>> = Vec::with_capacity(sessions.len());
    for (sid, at) in sessions {
        let sp = format!("state.sessions.{}", lossy(&sid));
        let session = r.object(at, &sp)?;
        let slot = store.sessions.push(sid.clone(), Session::default());
        restore_tool_calls(&mut r, &mut store, slot, &session, &sp)?;
        restore_terminals(&mut r, &mut store, slot, &session, &sp)?;
        restore_plans(&mut r, &mut store, slot, &session, &sp)?;
        records.push(read_permissions(&mut r, slot, &sid, &session, &sp)?);
        restore_updates(&mut r, &mut store, slot, &session, &sp)?;
        restore_entities(&mut r, &mut store, slot, &session, &sp)?;
        restore_files(&mut r, &mut store, slot, &session, &sp)?;
    }

    // The session of each permission record in request order across sessions (optional:
    // without it, session order), naming each session as many times as it has records.
    let counts: Vec<usize> = records.iter().map(Vec::len).collect();
    let mut order = Vec::new();
    match find_opt(&state, "permissionOrder") {
        None => order.extend(
            counts
                .iter()
                .enumerate()
                .flat_map(|(slot, &n)| std::iter::repeat_n(slot, n)),
        ),
        Some(at) => {
            r.require(at, JsonType::Array, "state.permissionOrder", "an array")?;
            let mut seen = vec![0; counts.len()];
            for (i, item) in r.items(at)?.into_iter().enumerate() {
                let Some(slot) = r.text(item).and_then(|sid| store.sessions.slot(&sid)) else {
                    let path = format!("state.permissionOrder.{i}");
                    return Err(r.fail(item, &path, "the id of a session in state.sessions"));
                };
                seen[slot] += 1;
                if seen[slot] > counts[slot] {
                    return Err(count_error(&store, slot, counts[slot], None));
                }
                order.push(slot);
            }
            if let Some(slot) = (0..counts.len()).find(|&slot| seen[slot] != counts[slot]) {
                return Err(count_error(&store, slot, counts[slot], Some(seen[slot])));
            }
        }
    }
    let mut records: Vec<_> = records.into_iter().map(Vec::into_iter).collect();
    for slot in order {
        let p = records[slot].next().expect("counted");
        if p.outcome == Outcome::Pending {
            if let Some(old) = store.pending.remove(&p.id) {
                store.drop_permission(old);
            }
            store.pending.insert(p.id.clone(), store.permissions.len());
        }
        store.push_permission(p);
    }
    if let Some(at) = find_opt(&state, "cancelRequests") {
        read_cancel_requests(&mut r, &mut store, at)?;
    }
    if store.max_tool_calls.is_some() {
        store.compact();
    }
    Ok(store)
}

/// `state.cancelRequests` (optional): `[{"requestId": id, "source": "agent" | "client" | null}]`.
fn read_cancel_requests(r: &mut Reader<'_>, store: &mut Store, at: usize) -> Result<(), CheckpointError> {
    r.require(at, JsonType::Array, "state.cancelRequests", "an array")?;
    for (i, at) in r.items(at)?.into_iter().enumerate() {
        let rp = format!("state.cancelRequests.{i}");
        let record = r.object(at, &rp)?;
        let at = find(&record, "requestId", &rp)?;
        let id = r.id(at, &format!("{rp}.requestId"))?;
        let at = find(&record, "source", &rp)?;
        let source = match (r.ty(at), r.text(at).as_deref()) {
            (JsonType::Null, _) => Source::Unknown,
            (_, Some(b"agent")) => Source::Agent,
            (_, Some(b"client")) => Source::Client,
            _ => return Err(r.fail(at, &format!("{rp}.source"), "\"agent\", \"client\" or null")),
        };
        if store.cancel_requests.len() == super::permission::MAX_CANCEL_REQUESTS {
            store.cancel_requests.pop_front();
        }
        store.cancel_requests.push_back(CancelRequest { id, source });
    }
    Ok(())
}

#[cold]
fn count_error(store: &Store, slot: usize, expected: usize, found: Option<usize>) -> CheckpointError {
    CheckpointError::PermissionOrder {
        session: store.session_id(slot).into(),
        expected,
        found,
    }
}

#[cfg(test)]
mod tests;
