//! Checkpoints (DESIGN §7.8): `to_json` writes the whole store and its `Options` as an
//! `acp-fast-state/2` document, byte for byte what `dumps(state())` gives but for numbers and
//! string values, which keep their text as received; `from_json` checks a document (`/2`, or the
//! older `/1`) and rebuilds the store and its options, so that the restored store behaves as the
//! original (its eviction order is the creation order, `toolCallOrder`).
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
    restore_terminals, restore_tool_calls, restore_updates, Members, Reader,
};
use super::Store;

/// The `format` of a checkpoint (`/2`: the options, `toolCallOrder`, strings as received).
pub const FORMAT: &str = "acp-fast-state/2";

/// The format of the checkpoints of version 0.x before `FORMAT`, still read: it lacks what `/2`
/// added, which a restore then takes as the defaults (options), session order (`toolCallOrder`)
/// or what the document holds (strings written in `dumps`' form).
pub const FORMAT_V1: &str = "acp-fast-state/1";

/// The options of a store that are not its bounds and that a checkpoint keeps (DESIGN §7.8), as
/// the binding holds them: the framer's frame limit and the strict schema check's settings. The
/// store's own `wrap_bare_content` is kept from the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// `max_frame_bytes`.
    pub max_frame_bytes: usize,
    /// `strict_schema`: None (off), `Some(None)` (follow the negotiation) or the fixed version.
    pub strict_schema: Option<Option<u8>>,
    /// `unstable` (written only with a strict check).
    pub unstable: bool,
    /// `draft`, as its index in `schema::DRAFTS` (0: the newest; written only with a strict
    /// check).
    pub draft: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            max_frame_bytes: crate::framing::DEFAULT_MAX_FRAME_BYTES,
            strict_schema: None,
            unstable: false,
            draft: 0,
        }
    }
}

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
    /// `expected "state.format" to be 'acp-fast-state/2' or 'acp-fast-state/1', found
    /// {repr(found)}`.
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
    /// `expected "state.{member}" to name {repr(session)} {expected} times (its {what}), found
    /// {found, or "more"}`: `permissionOrder` (permission records) or `toolCallOrder` (tool calls).
    Order {
        member: &'static str,
        what: &'static str,
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
                "expected \"state.format\" to be {} or {}, found {}",
                quoted(FORMAT.as_bytes()),
                quoted(FORMAT_V1.as_bytes()),
                repr(found)
            ),
            Self::Mismatch { path, expected, found } => {
                format!("expected \"{path}\" to be {}, found {}", quoted(expected), found.name())
            }
            Self::Base64 { path } => format!("expected \"{path}\" to be base64 text, found string"),
            Self::Order {
                member,
                what,
                session,
                expected,
                found,
            } => format!(
                "expected \"state.{member}\" to name {} {expected} times (its {what}), found {}",
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

/// The checkpoint document of `store` (its `options`): `dumps(state())`.
pub fn to_json(store: &Store, options: &Options) -> Result<Vec<u8>, TooDeep> {
    let mut w = JsonWriter::with_capacity(256);
    state(&mut w, store, options)?;
    Ok(w.finish())
}

/// The state document (DESIGN §7.8) of `store` and its `options`, written to `s`: `state()` and,
/// through `JsonWriter`, `to_json()`.
pub fn state<S: Sink>(s: &mut S, store: &Store, options: &Options) -> Result<(), S::Error> {
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
    write_options(s, store, options)?;
    s.name(Name::EVICTED)?;
    s.uint(store.evicted)?;
    // Present only when a session was closed (older checkpoints lack it).
    if store.closed_sessions > 0 {
        s.name(Name::CLOSED_SESSIONS)?;
        s.uint(store.closed_sessions)?;
    }
    // Present only when the bound dropped a session.
    if store.evicted_sessions > 0 {
        s.name(Name::EVICTED_SESSIONS)?;
        s.uint(store.evicted_sessions)?;
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
    // With a bound on tool calls, the session of each tool call in creation order across
    // sessions (the order the bound evicts in: `evict.rs`), when it is not the document's order.
    if store.max_tool_calls.is_some() && !creation_is_document_order(store) {
        s.name(Name::TOOL_CALL_ORDER)?;
        s.begin_array()?;
        for entry in store.order[store.order_head..].iter().flatten() {
            s.text(store.session_id(entry.slot))?;
        }
        s.end_array()?;
    }
    // With a bound on sessions, the sessions from the least to the most recently active (the
    // order the bound drops them in: `evict.rs`), when it is not the document's order.
    if store.limits.sessions.is_some() {
        let order = store.activity_order();
        if order.windows(2).any(|w| w[0] > w[1]) {
            s.name(Name::SESSION_ORDER)?;
            s.begin_array()?;
            for slot in order {
                s.text(store.session_id(slot))?;
            }
            s.end_array()?;
        }
    }
    // Present only when the store has seen a `$/cancel_request` (older checkpoints lack it).
    if !store.cancel_requests.is_empty() {
        s.name(Name::CANCEL_REQUESTS)?;
        cancel_request_list(s, store)?;
    }
    s.end_object()
}

/// Are the tool calls created in the document's order: session by session (slots ascend as the
/// sessions do), each session's in its map's order (its creation order)?
fn creation_is_document_order(store: &Store) -> bool {
    let mut slots = store.order[store.order_head..].iter().flatten().map(|e| e.slot);
    let Some(mut last) = slots.next() else {
        return true;
    };
    slots.all(|slot| {
        let ordered = slot >= last;
        last = slot;
        ordered
    })
}

/// The options that are not their default, in document order: `maxFrameBytes`, `strictSchema`
/// (`true`: follow the negotiation, or the fixed version) and with it `unstable` and `draft`,
/// `wrapBareContent`.
fn write_options<S: Sink>(s: &mut S, store: &Store, options: &Options) -> Result<(), S::Error> {
    if options.max_frame_bytes != crate::framing::DEFAULT_MAX_FRAME_BYTES {
        s.name(Name::MAX_FRAME_BYTES)?;
        s.uint(options.max_frame_bytes as u64)?;
    }
    if let Some(strict) = options.strict_schema {
        s.name(Name::STRICT_SCHEMA)?;
        match strict {
            Some(v) => s.uint(u64::from(v))?,
            None => s.boolean(true)?,
        }
        if options.unstable {
            s.name(Name::UNSTABLE)?;
            s.boolean(true)?;
        }
        if options.draft != 0 {
            s.name(Name::DRAFT)?;
            s.text(crate::schema::DRAFTS[options.draft].0.as_bytes())?;
        }
    }
    if store.wrap_bare_content {
        s.name(Name::WRAP_BARE_CONTENT)?;
        s.boolean(true)?;
    }
    Ok(())
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

/// Check the document `data` and rebuild the store it describes, and its options. Checks and
/// messages: DESIGN §7.8 (the checks run in the fallback's order, so both report the same first
/// problem).
pub fn from_json(data: &[u8]) -> Result<(Store, Options), CheckpointError> {
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
    let format_at = find(&state, "format", "state")?;
    let format = format_at;
    let format = r.text(format);
    if format.as_deref() != Some(FORMAT.as_bytes()) && format.as_deref() != Some(FORMAT_V1.as_bytes()) {
        return Err(CheckpointError::Format {
            found: r.raw(format_at)?,
        });
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
    let (options, wrap) = read_options(&mut r, &state)?;
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
    let evicted_sessions = match find_opt(&state, "evictedSessions") {
        None => 0,
        Some(at) => r
            .count(at, 0)
            .ok_or_else(|| r.fail(at, "state.evictedSessions", "a non-negative integer"))?,
    };
    let agent = match find_opt(&state, "agent") {
        None => Vec::new(),
        Some(at) => read_entities(&mut r, at, "state.agent")?,
    };
    let sessions = r.object(find(&state, "sessions", "state")?, "state.sessions")?;
    let mut store = Store::with_limits(fixed, max, limits);
    store.wrap_bare_content = wrap;
    store.negotiated = negotiated;
    store.evicted = evicted;
    store.closed_sessions = closed;
    store.evicted_sessions = evicted_sessions;
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
                    return Err(count_error(&store, PERMISSION_ORDER, slot, counts[slot], None));
                }
                order.push(slot);
            }
            if let Some(slot) = (0..counts.len()).find(|&slot| seen[slot] != counts[slot]) {
                return Err(count_error(
                    &store,
                    PERMISSION_ORDER,
                    slot,
                    counts[slot],
                    Some(seen[slot]),
                ));
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
    if let Some(at) = find_opt(&state, "toolCallOrder") {
        read_tool_call_order(&mut r, &mut store, at)?;
    }
    let mut activity: Vec<usize> = (0..store.sessions.len()).collect();
    if let Some(at) = find_opt(&state, "sessionOrder") {
        activity = read_session_order(&mut r, &store, at)?;
    }
    if store.limits.sessions.is_some() {
        store.order_sessions(&activity);
    }
    if store.max_tool_calls.is_some() {
        store.compact();
    }
    Ok((store, options))
}

/// The options (`write_options`), checked in document order; absent ones are the defaults.
fn read_options(r: &mut Reader<'_>, state: &Members) -> Result<(Options, bool), CheckpointError> {
    let mut options = Options::default();
    if let Some(at) = find_opt(state, "maxFrameBytes") {
        options.max_frame_bytes = r
            .count(at, 1)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n <= crate::framing::MAX_FRAME_BYTES)
            .ok_or_else(|| r.fail(at, "state.maxFrameBytes", MAX_FRAME_BYTES_WHAT))?;
    }
    if let Some(at) = find_opt(state, "strictSchema") {
        options.strict_schema = match (r.ty(at), r.count(at, 1)) {
            (JsonType::Boolean, _) if r.raw(at)?.as_ref() == b"true" => Some(None),
            (_, Some(v @ (1 | 2))) => Some(Some(v as u8)),
            _ => return Err(r.fail(at, "state.strictSchema", "true, 1 or 2")),
        };
    }
    if let Some(at) = find_opt(state, "unstable") {
        options.unstable = r.flag(at, "state.unstable")?;
    }
    if let Some(at) = find_opt(state, "draft") {
        let name = r.text(at);
        options.draft = crate::schema::DRAFTS
            .iter()
            .position(|(d, _)| Some(d.as_bytes()) == name.as_deref())
            .ok_or_else(|| r.fail(at, "state.draft", DRAFT_WHAT))?;
    }
    let wrap = match find_opt(state, "wrapBareContent") {
        Some(at) => r.flag(at, "state.wrapBareContent")?,
        None => false,
    };
    Ok((options, wrap))
}

/// `expected "state.maxFrameBytes" to be {what}`: the range of `max_frame_bytes`.
const MAX_FRAME_BYTES_WHAT: &str = "an integer from 1 to 4294967294";

/// `expected "state.draft" to be {what}`: the names of `schema::DRAFTS`.
const DRAFT_WHAT: &str = "'latest' or 'alpha.5'";

const PERMISSION_ORDER: (&str, &str) = ("permissionOrder", "permission records");
const TOOL_CALL_ORDER: (&str, &str) = ("toolCallOrder", "tool calls");

/// `state.toolCallOrder` (optional; without it, session order): the session of each tool call in
/// creation order across sessions, naming each session as many times as it has tool calls. With
/// a bound on tool calls, it orders `store.order` (filled in session order by
/// `restore_tool_calls`); without one it is checked only.
fn read_tool_call_order(r: &mut Reader<'_>, store: &mut Store, at: usize) -> Result<(), CheckpointError> {
    r.require(at, JsonType::Array, "state.toolCallOrder", "an array")?;
    let counts: Vec<usize> = store.sessions.iter().map(|(_, s)| s.tool_calls.len()).collect();
    let mut seen = vec![0; counts.len()];
    let mut slots = Vec::new();
    for (i, item) in r.items(at)?.into_iter().enumerate() {
        let Some(slot) = r.text(item).and_then(|sid| store.sessions.slot(&sid)) else {
            let path = format!("state.toolCallOrder.{i}");
            return Err(r.fail(item, &path, "the id of a session in state.sessions"));
        };
        seen[slot] += 1;
        if seen[slot] > counts[slot] {
            return Err(count_error(store, TOOL_CALL_ORDER, slot, counts[slot], None));
        }
        slots.push(slot);
    }
    if let Some(slot) = (0..counts.len()).find(|&slot| seen[slot] != counts[slot]) {
        return Err(count_error(
            store,
            TOOL_CALL_ORDER,
            slot,
            counts[slot],
            Some(seen[slot]),
        ));
    }
    if store.max_tool_calls.is_some() {
        // `order` holds each session's tool calls in turn: take them in the document's order.
        let mut per_session: Vec<std::collections::VecDeque<_>> = counts.iter().map(|_| Default::default()).collect();
        for entry in std::mem::take(&mut store.order).into_iter().flatten() {
            per_session[entry.slot].push_back(entry);
        }
        store.order = slots.into_iter().map(|slot| per_session[slot].pop_front()).collect();
    }
    Ok(())
}

/// `state.sessionOrder` (optional; without it, session order): every session of the document
/// once, from the least to the most recently active: their slots. With a bound on sessions it is
/// the order the bound drops them in; without one it is checked only.
fn read_session_order(r: &mut Reader<'_>, store: &Store, at: usize) -> Result<Vec<usize>, CheckpointError> {
    r.require(at, JsonType::Array, "state.sessionOrder", "an array")?;
    let mut seen = vec![false; store.sessions.len()];
    let mut slots = Vec::with_capacity(seen.len());
    for (i, item) in r.items(at)?.into_iter().enumerate() {
        let slot = r.text(item).and_then(|sid| store.sessions.slot(&sid));
        let Some(slot) = slot.filter(|&slot| !seen[slot]) else {
            let path = format!("state.sessionOrder.{i}");
            return Err(r.fail(item, &path, SESSION_ORDER_ITEM));
        };
        seen[slot] = true;
        slots.push(slot);
    }
    if slots.len() != seen.len() {
        return Err(r.fail(at, "state.sessionOrder", SESSION_ORDER_WHAT));
    }
    Ok(slots)
}

/// `expected "state.sessionOrder.{i}" to be {what}` / `expected "state.sessionOrder" to be {what}`.
const SESSION_ORDER_ITEM: &str = "the id of a session in state.sessions not named before";
const SESSION_ORDER_WHAT: &str = "an array naming every session of state.sessions";

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
fn count_error(
    store: &Store,
    (member, what): (&'static str, &'static str),
    slot: usize,
    expected: usize,
    found: Option<usize>,
) -> CheckpointError {
    CheckpointError::Order {
        member,
        what,
        session: store.session_id(slot).into(),
        expected,
        found,
    }
}

#[cfg(test)]
mod tests;
