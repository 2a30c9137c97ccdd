//! Checkpoints (DESIGN §7.8): `to_json` writes the whole store as an `acp-fast-state/1` document,
//! byte for byte what `dumps(state())` gives but for numbers, which keep their text as received;
//! `from_json` checks a document and rebuilds the store (its eviction order is the document's
//! order).
//!
//! Mirror: `python/acp_fast/_fallback/state/checkpoint.py`. Differences on purpose: here the
//! document is written straight from the records, each stored value re-written as
//! `dumps(loads(value))` would (`write_value`), and read straight from its bytes (`Reader`: an
//! object's members as a parsed dict has them, the last of duplicates in the first one's place);
//! the fallback builds the `state()` dict and dumps it, and checks the dict that `loads` gives.
//! The checks run in the same order in both, so a bad document gets the same error text; the few
//! messages that quote a value with Python's `repr()` take it from the caller
//! (`CheckpointError::message`).

use std::fmt;

use crate::encoder::{write_str, PathItem};
use crate::error::{DecodeError, JsonType};
use crate::scanner::{check_utf8, parse_i64, parse_u64, Scanner, Skip};

use super::evict::{number_terminals, Limits, Tracked};
use super::read::base64_decode;
use super::records::{
    key, members_at, permission_record, terminal_record, tool_call_record, truncated, write_value, CancelRequest,
    IdKey, Outcome, Permission, Raw, Session, Source, Terminal, Text, ToolCall, TERMINAL_FIELDS, TOOL_CALL_FIELDS,
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
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"format\":");
    write_str(&mut out, FORMAT.as_bytes());
    out.extend_from_slice(b",\"protocolVersion\":");
    write_opt(&mut out, store.fixed.map(u64::from));
    out.extend_from_slice(b",\"negotiatedVersion\":");
    write_opt(&mut out, store.negotiated.map(u64::from));
    out.extend_from_slice(b",\"maxToolCalls\":");
    write_opt(&mut out, store.max_tool_calls.map(|n| n as u64));
    // The bounds inside sessions, each only when it is not the default.
    let defaults = Limits::default().values();
    for ((name, value), default) in Limits::NAMES.iter().zip(store.limits.values()).zip(defaults) {
        if value != default {
            out.push(b',');
            write_str(&mut out, name.as_bytes());
            out.push(b':');
            write_opt(&mut out, value.map(|n| n as u64));
        }
    }
    out.extend_from_slice(b",\"evicted\":");
    write_opt(&mut out, Some(store.evicted));
    out.extend_from_slice(b",\"sessions\":{");
    let mut per_session: Vec<Vec<&Permission>> = (0..store.sessions.len()).map(|_| Vec::new()).collect();
    for p in store.permissions() {
        per_session[p.session].push(p);
    }
    for (slot, (sid, s)) in store.sessions.iter().enumerate() {
        if slot > 0 {
            out.push(b',');
        }
        let at = |steps: &[PathItem]| {
            let mut path = vec![PathItem::Key("sessions".into()), key(sid)];
            path.extend_from_slice(steps);
            path
        };
        write_str(&mut out, sid);
        out.extend_from_slice(b":{\"toolCalls\":");
        write_map(&mut out, s.tool_calls.iter(), tool_call_record)
            .map_err(|(id, inner)| deep(at(&[key(b"toolCalls"), key(id)]), inner))?;
        out.extend_from_slice(b",\"terminals\":");
        write_map(&mut out, s.terminals.iter(), terminal_record)
            .map_err(|(id, inner)| deep(at(&[key(b"terminals"), key(id)]), inner))?;
        out.extend_from_slice(b",\"plans\":");
        write_map(&mut out, s.plans.iter(), |out, _, plan| write_value(out, plan, 4))
            .map_err(|(id, inner)| deep(at(&[key(b"plans"), key(id)]), inner))?;
        out.extend_from_slice(b",\"permissions\":[");
        for (i, p) in per_session[slot].iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            permission_record(&mut out, sid, p)
                .map_err(|inner| deep(at(&[key(b"permissions"), PathItem::Index(i)]), inner))?;
        }
        out.push(b']');
        if !s.updates.is_empty() {
            out.extend_from_slice(b",\"updates\":[");
            for (i, u) in s.updates.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(&mut out, u, 4).map_err(|inner| deep(at(&[key(b"updates"), PathItem::Index(i)]), inner))?;
            }
            out.push(b']');
        }
        truncated(&mut out, s.dropped.counts());
        out.push(b'}');
    }
    out.extend_from_slice(b"},\"permissionOrder\":[");
    for (i, p) in store.permissions().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(&mut out, store.session_id(p.session));
    }
    out.push(b']');
    // Present only when the store has seen a `$/cancel_request` (older checkpoints lack it).
    for (i, c) in store.cancel_requests().enumerate() {
        out.extend_from_slice(if i == 0 { b",\"cancelRequests\":[" } else { b"," });
        out.extend_from_slice(b"{\"requestId\":");
        c.id.write(&mut out);
        out.extend_from_slice(b",\"source\":");
        match c.source.name() {
            Some(name) => write_str(&mut out, name.as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
        if i + 1 == store.cancel_requests.len() {
            out.push(b']');
        }
    }
    out.push(b'}');
    Ok(out)
}

/// A JSON object `{id: record, ...}` of one session's records, in their order; on a record nested
/// too deep, its id and the inner path.
fn write_map<'a, V: 'a>(
    out: &mut Vec<u8>,
    entries: impl Iterator<Item = (&'a [u8], &'a V)>,
    mut record: impl FnMut(&mut Vec<u8>, &[u8], &V) -> Result<(), Vec<PathItem>>,
) -> Result<(), (&'a [u8], Vec<PathItem>)> {
    out.push(b'{');
    for (i, (id, value)) in entries.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, id);
        out.push(b':');
        record(out, id, value).map_err(|inner| (id, inner))?;
    }
    out.push(b'}');
    Ok(())
}

/// `TooDeep` from the path down to a record and the path inside it (innermost step first).
#[cold]
fn deep(mut outer: Vec<PathItem>, inner: Vec<PathItem>) -> TooDeep {
    outer.extend(inner.into_iter().rev());
    TooDeep { path: outer }
}

fn write_opt(out: &mut Vec<u8>, v: Option<u64>) {
    match v {
        Some(v) => crate::encoder::write_u64(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

// ---------------------------------------------------------------------------------------------
// Reading

/// `expected "...outcome" to be {what}`: the outcomes, sorted (`records::OUTCOMES`).
const OUTCOME_WHAT: &str = "one of cancelled, error, invalid, pending, selected, unknown";

/// A checked document being read; values are named by their position in it.
struct Reader<'a> {
    sc: Scanner<'a>,
}

/// An object's members: (key, position of the value).
type Members = Vec<(Text, usize)>;

fn lossy(text: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(text)
}

/// The member `name` of `obj`, or the error naming `path.name`.
fn find(obj: &Members, name: &'static str, path: &str) -> Result<usize, CheckpointError> {
    find_opt(obj, name).ok_or_else(|| CheckpointError::Missing {
        path: path.to_owned(),
        member: name,
    })
}

fn find_opt(obj: &Members, name: &str) -> Option<usize> {
    obj.iter().find(|(k, _)| **k == *name.as_bytes()).map(|&(_, at)| at)
}

impl Reader<'_> {
    fn ty(&mut self, at: usize) -> JsonType {
        self.sc.pos = at;
        self.sc.peek_type().unwrap_or(JsonType::Null)
    }

    /// The value at `at` must be of type `ty`, else `expected "{path}" to be {what}`.
    fn require(&mut self, at: usize, ty: JsonType, path: &str, what: &'static str) -> Result<(), CheckpointError> {
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
    fn object(&mut self, at: usize, path: &str) -> Result<Members, CheckpointError> {
        self.require(at, JsonType::Object, path, "an object")?;
        Ok(members_at(&mut self.sc)?.0)
    }

    /// The positions of the items of the array at `at`.
    fn items(&mut self, at: usize) -> Result<Vec<usize>, CheckpointError> {
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
    fn text(&mut self, at: usize) -> Option<Text> {
        if self.ty(at) != JsonType::String {
            return None;
        }
        let s = self.sc.scan_string().ok()?;
        Some(super::read::text_of(self.sc.data, s))
    }

    /// A request id (a string, an integer or null).
    fn id(&mut self, at: usize, path: &str) -> Result<IdKey, CheckpointError> {
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
    fn raw(&mut self, at: usize) -> Result<Raw, CheckpointError> {
        self.sc.pos = at;
        self.sc.skip_value()?;
        Ok(self.sc.data[at..self.sc.pos].into())
    }

    /// The integer at `at`: (negative, magnitude when it fits in 64 bits); `None`: not an integer.
    fn int(&mut self, at: usize) -> Option<(bool, Option<u64>)> {
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
    fn count(&mut self, at: usize, min: u64) -> Option<u64> {
        match self.int(at) {
            Some((false, Some(n))) if n >= min && i64::try_from(n).is_ok() => Some(n),
            _ => None,
        }
    }

    /// `protocolVersion` / `negotiatedVersion`: 1, 2 or null.
    fn version(&mut self, at: usize, path: &str) -> Result<Option<u8>, CheckpointError> {
        match self.int(at) {
            Some((false, Some(v @ (1 | 2)))) => Ok(Some(v as u8)),
            _ if self.ty(at) == JsonType::Null => Ok(None),
            _ => Err(self.fail(at, path, "1, 2 or null")),
        }
    }

    #[cold]
    fn fail(&mut self, at: usize, path: &str, what: &'static str) -> CheckpointError {
        CheckpointError::Type {
            path: path.to_owned(),
            what,
            found: self.ty(at),
        }
    }

    /// The record's `member` must be the key it is filed under.
    fn record_id(
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
    fn no_nulls(&mut self, record: &Members, path: &str) -> Result<(), CheckpointError> {
        for (name, at) in record {
            if self.ty(*at) == JsonType::Null {
                return Err(self.fail(*at, &format!("{path}.{}", lossy(name)), "a value other than null"));
            }
        }
        Ok(())
    }
}

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
    let sessions = r.object(find(&state, "sessions", "state")?, "state.sessions")?;
    let mut store = Store::with_limits(fixed, max, limits);
    store.negotiated = negotiated;
    store.evicted = evicted;
    let mut records: Vec<Vec<Permission>> = Vec::with_capacity(sessions.len());
    for (sid, at) in sessions {
        let sp = format!("state.sessions.{}", lossy(&sid));
        let session = r.object(at, &sp)?;
        let slot = store.sessions.push(sid.clone(), Session::default());
        restore_tool_calls(&mut r, &mut store, slot, &session, &sp)?;
        restore_terminals(&mut r, &mut store, slot, &session, &sp)?;
        let path = format!("{sp}.plans");
        for (pid, at) in r.object(find(&session, "plans", &sp)?, &path)? {
            let rp = format!("{path}.{}", lossy(&pid));
            let record = r.object(at, &rp)?;
            r.record_id(&record, &pid, "planId", &rp)?;
            let plan = r.raw(at)?;
            store.sessions.at_mut(slot).plans.push(pid, plan);
        }
        records.push(read_permissions(&mut r, slot, &sid, &session, &sp)?);
        restore_updates(&mut r, &mut store, slot, &session, &sp)?;
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

/// `{sp}.toolCalls`: each record checked, then added in document order (eviction order).
fn restore_tool_calls(
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
        let off = "absent (state.maxContentItems is null)";
        [tc.dropped_items] = read_marker(r, &record, &rp, &[("droppedItems", off, store.limits.content_items)])?;
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
fn restore_terminals(
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
        let off = "absent (state.maxTerminalBytes is null)";
        [t.dropped_bytes] = read_marker(r, &record, &rp, &[("droppedBytes", off, store.limits.terminal_bytes)])?;
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

/// `{sp}.updates` (optional: unknown updates, each an object with a string `sessionUpdate`) and
/// `{sp}._truncated` (optional: what the bounds dropped), checked, then added.
fn restore_updates(
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
    let limits = store.limits;
    let bounds = [
        (
            "droppedTerminals",
            "absent (state.maxTerminals is null)",
            limits.terminals,
        ),
        ("droppedPlans", "absent (state.maxPlans is null)", limits.plans),
        (
            "droppedPermissions",
            "absent (state.maxPermissions is null)",
            limits.permissions,
        ),
        ("droppedUpdates", "absent (state.maxUpdates is null)", limits.updates),
    ];
    let counts = read_marker(r, session, sp, &bounds)?;
    let d = &mut store.sessions.at_mut(slot).dropped;
    [d.terminals, d.plans, d.permissions, d.updates] = counts;
    Ok(())
}

/// The `_truncated` marker of `record` at `rp`, if any: a count for each of `bounds` (member, what
/// it must be when its bound is off, the bound), each present one a positive integer, at least
/// one, no other member.
fn read_marker<const N: usize>(
    r: &mut Reader<'_>,
    record: &Members,
    rp: &str,
    bounds: &[(&'static str, &'static str, Option<usize>); N],
) -> Result<[u64; N], CheckpointError> {
    let mut counts = [0; N];
    let Some(at) = find_opt(record, "_truncated") else {
        return Ok(counts);
    };
    let path = format!("{rp}._truncated");
    let marker_at = at;
    let marker = r.object(at, &path)?;
    for (name, at) in marker {
        let member = format!("{path}.{}", lossy(&name));
        // Another member, or the count of a bound that is off, must be absent.
        let Some(i) = bounds.iter().position(|(n, _, _)| n.as_bytes() == &*name) else {
            return Err(r.fail(at, &member, "absent"));
        };
        if bounds[i].2.is_none() {
            return Err(r.fail(at, &member, bounds[i].1));
        }
        counts[i] = r
            .count(at, 1)
            .ok_or_else(|| r.fail(at, &member, "a positive integer"))?;
    }
    if counts.iter().all(|&n| n == 0) {
        return Err(match bounds.as_slice() {
            [(name, _, _)] => CheckpointError::Missing { path, member: name },
            _ => r.fail(marker_at, &path, "an object with at least one count"),
        });
    }
    Ok(counts)
}

/// `{sp}.permissions`: the records of session `sid` (in `slot`), checked.
fn read_permissions(
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

#[cfg(test)]
mod tests;
