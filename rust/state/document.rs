//! What the store gives out (DESIGN §7.8), written once: every record, every query's answer and
//! the checkpoint document are a stream of events sent to a `Sink`. `JsonWriter` (here) turns the
//! events into JSON bytes (`checkpoint::to_json`); the binding's sink builds the Python objects
//! the queries return (`rust/python/records.rs`), and holds no shape of its own. Shapes: the
//! records in `records.rs`, the checkpoint document in `checkpoint.rs`, the queries' answers
//! (collections of records) here.
//!
//! Mirror: none (Rust only). The fallback builds its records and documents as dicts
//! (`records.py`, `checkpoint.py`, the queries of its `ToolCallStore`) and dumps them; the sink
//! is Rust's way of having one writer for both bytes and Python objects.

use crate::encoder::{write_str, write_u64, PathItem};
use crate::scanner::Scanner;

use super::checkpoint::TooDeep;
use super::read::base64_encode;
use super::records::{permission_record, terminal_record, tool_call_record, write_value, Session};
use super::Store;

// ---------------------------------------------------------------------------------------------
// The sink

/// Where a document is written, event by event, depth first: a container's members between its
/// `begin_*` and `end_*`, each member of an object a name (`name` or `key`) and then its value.
pub trait Sink {
    type Error;
    fn begin_object(&mut self) -> Result<(), Self::Error>;
    fn end_object(&mut self) -> Result<(), Self::Error>;
    fn begin_array(&mut self) -> Result<(), Self::Error>;
    fn end_array(&mut self) -> Result<(), Self::Error>;
    /// A member name of the format.
    fn name(&mut self, name: Name) -> Result<(), Self::Error>;
    /// A member name from the store (an id, an unknown field's name): UTF-8 text.
    fn key(&mut self, text: &[u8]) -> Result<(), Self::Error>;
    fn null(&mut self) -> Result<(), Self::Error>;
    fn boolean(&mut self, value: bool) -> Result<(), Self::Error>;
    fn int(&mut self, value: i64) -> Result<(), Self::Error>;
    fn uint(&mut self, value: u64) -> Result<(), Self::Error>;
    /// A string, from its UTF-8 text.
    fn text(&mut self, text: &[u8]) -> Result<(), Self::Error>;
    /// A stored value: its (valid) JSON text as received.
    fn raw(&mut self, json: &[u8]) -> Result<(), Self::Error>;
    /// Bytes (a terminal's output in the queries; JSON has none: `JsonWriter` writes base64 text).
    fn bytes(&mut self, data: &[u8]) -> Result<(), Self::Error>;
    /// The string whose text is the base64 form of `data` (a terminal's output in a checkpoint).
    fn base64(&mut self, data: &[u8]) -> Result<(), Self::Error>;

    /// `null` for None.
    fn opt_uint(&mut self, value: Option<u64>) -> Result<(), Self::Error> {
        match value {
            Some(v) => self.uint(v),
            None => self.null(),
        }
    }
}

/// A member name of the documents: an index in `NAMES`, so that a sink can keep one object per
/// name and find it without hashing (the binding's interned `str`s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Name(u8);

impl Name {
    #[inline]
    pub fn as_str(self) -> &'static str {
        NAMES[self.0 as usize]
    }

    /// Its place in `NAMES`.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

macro_rules! names {
    ($($id:ident: $text:literal,)*) => {
        /// Every name the documents use (`Sink::name`), once.
        pub const NAMES: &[&str] = &[$($text),*];

        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[repr(u8)]
        enum Slot {
            $($id),*
        }

        impl Name {
            $(pub const $id: Name = Name(Slot::$id as u8);)*
        }
    };
}

names! {
    // The checkpoint document (`checkpoint::state`), and its bounds inside sessions
    // (`Limits::NAMES`, in order: `LIMITS`).
    FORMAT: "format",
    PROTOCOL_VERSION: "protocolVersion",
    NEGOTIATED_VERSION: "negotiatedVersion",
    MAX_TOOL_CALLS: "maxToolCalls",
    MAX_TERMINAL_BYTES: "maxTerminalBytes",
    MAX_CONTENT_ITEMS: "maxContentItems",
    MAX_PLANS: "maxPlans",
    MAX_PERMISSIONS: "maxPermissions",
    MAX_UPDATES: "maxUpdates",
    MAX_TERMINALS: "maxTerminals",
    MAX_ENTITIES: "maxEntities",
    MAX_FILES: "maxFiles",
    MAX_CONTENT_BYTES: "maxContentBytes",
    MAX_SESSIONS: "maxSessions",
    MAX_FRAME_BYTES: "maxFrameBytes",
    STRICT_SCHEMA: "strictSchema",
    UNSTABLE: "unstable",
    DRAFT: "draft",
    WRAP_BARE_CONTENT: "wrapBareContent",
    EVICTED: "evicted",
    CLOSED_SESSIONS: "closedSessions",
    EVICTED_SESSIONS: "evictedSessions",
    AGENT: "agent",
    SESSIONS: "sessions",
    TOOL_CALLS: "toolCalls",
    TERMINALS: "terminals",
    PLANS: "plans",
    PERMISSIONS: "permissions",
    UPDATES: "updates",
    ENTITIES: "entities",
    FILES: "files",
    PERMISSION_ORDER: "permissionOrder",
    TOOL_CALL_ORDER: "toolCallOrder",
    SESSION_ORDER: "sessionOrder",
    CANCEL_REQUESTS: "cancelRequests",
    REQUEST_ID: "requestId",
    SOURCE: "source",
    // Markers (`records::truncated`).
    TRUNCATED: "_truncated",
    DROPPED_ITEMS: "droppedItems",
    DROPPED_BYTES: "droppedBytes",
    DROPPED_TERMINALS: "droppedTerminals",
    DROPPED_PLANS: "droppedPlans",
    DROPPED_PERMISSIONS: "droppedPermissions",
    DROPPED_UPDATES: "droppedUpdates",
    DROPPED_ENTITIES: "droppedEntities",
    DROPPED_FILES: "droppedFiles",
    // Tool calls (`TOOL_CALL_FIELDS`, in order: `TOOL_CALL`).
    TOOL_CALL_ID: "toolCallId",
    TITLE: "title",
    KIND: "kind",
    STATUS: "status",
    CONTENT: "content",
    LOCATIONS: "locations",
    RAW_INPUT: "rawInput",
    RAW_OUTPUT: "rawOutput",
    NAME: "name",
    META: "_meta",
    // Terminals.
    TERMINAL_ID: "terminalId",
    COMMAND: "command",
    CWD: "cwd",
    OUTPUT: "output",
    OUTPUT_META: "outputMeta",
    EXIT_STATUS: "exitStatus",
    // Permission requests.
    ID: "id",
    SESSION_ID: "sessionId",
    OPTIONS: "options",
    OUTCOME: "outcome",
    OPTION_ID: "optionId",
    APPROVED: "approved",
    RESPONSE: "response",
}

/// `Limits::NAMES` as names.
pub const LIMITS: [Name; 10] = [
    Name::MAX_TERMINAL_BYTES,
    Name::MAX_CONTENT_ITEMS,
    Name::MAX_PLANS,
    Name::MAX_PERMISSIONS,
    Name::MAX_UPDATES,
    Name::MAX_TERMINALS,
    Name::MAX_ENTITIES,
    Name::MAX_FILES,
    Name::MAX_CONTENT_BYTES,
    Name::MAX_SESSIONS,
];

/// `TOOL_CALL_FIELDS` as names.
pub const TOOL_CALL: [Name; 8] = [
    Name::TITLE,
    Name::KIND,
    Name::STATUS,
    Name::LOCATIONS,
    Name::RAW_INPUT,
    Name::RAW_OUTPUT,
    Name::NAME,
    Name::META,
];

// ---------------------------------------------------------------------------------------------
// The JSON writer

/// The sink that writes JSON as `dumps` does (compact), each stored value re-written by
/// `records::write_value` (numbers as received). Its error: a stored value nested deeper than a
/// checkpoint carries, with its path from the root (the containers open around it, as the
/// writer tracks them).
pub struct JsonWriter {
    out: Vec<u8>,
    /// Whether the next value (or name) needs a comma before it.
    comma: bool,
    /// The open containers, outermost first: for an object where its current member's name
    /// starts in `out`, for an array how many items it has begun.
    open: Vec<Open>,
}

#[derive(Clone, Copy)]
enum Open {
    Object { key_at: usize },
    Array { items: usize },
}

impl JsonWriter {
    pub fn with_capacity(n: usize) -> Self {
        Self {
            out: Vec::with_capacity(n),
            comma: false,
            open: Vec::with_capacity(8),
        }
    }

    /// The bytes written.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }

    #[inline]
    fn value(&mut self) {
        if self.comma {
            self.out.push(b',');
        }
        self.comma = true;
        if let Some(Open::Array { items }) = self.open.last_mut() {
            *items += 1;
        }
    }

    #[inline]
    fn begin(&mut self, bracket: u8, open: Open) {
        self.value();
        self.out.push(bracket);
        self.open.push(open);
        self.comma = false;
    }

    #[inline]
    fn end(&mut self, bracket: u8) {
        self.out.push(bracket);
        self.open.pop();
        self.comma = true;
    }

    #[inline]
    fn member(&mut self) {
        if self.comma {
            self.out.push(b',');
        }
        self.comma = false;
        let at = self.out.len();
        if let Some(Open::Object { key_at }) = self.open.last_mut() {
            *key_at = at;
        }
    }

    /// The error for a stored value too deep: the path of the open containers, then `inner`
    /// (the path inside the value, innermost step first).
    #[cold]
    fn too_deep(&self, inner: Vec<PathItem>) -> TooDeep {
        let mut path: Vec<PathItem> = self
            .open
            .iter()
            .map(|open| match *open {
                Open::Object { key_at } => {
                    let mut sc = Scanner::new(&self.out[key_at..]);
                    let mut scratch = Vec::new();
                    let text = match sc.scan_string() {
                        Ok(s) => crate::scanner::string_text(&self.out[key_at..], s, &mut scratch),
                        Err(_) => b"",
                    };
                    PathItem::Key(String::from_utf8_lossy(text).into_owned())
                }
                Open::Array { items } => PathItem::Index(items.saturating_sub(1)),
            })
            .collect();
        path.extend(inner.into_iter().rev());
        TooDeep { path }
    }
}

impl Sink for JsonWriter {
    type Error = TooDeep;

    #[inline]
    fn begin_object(&mut self) -> Result<(), TooDeep> {
        self.begin(b'{', Open::Object { key_at: 0 });
        Ok(())
    }

    #[inline]
    fn end_object(&mut self) -> Result<(), TooDeep> {
        self.end(b'}');
        Ok(())
    }

    #[inline]
    fn begin_array(&mut self) -> Result<(), TooDeep> {
        self.begin(b'[', Open::Array { items: 0 });
        Ok(())
    }

    #[inline]
    fn end_array(&mut self) -> Result<(), TooDeep> {
        self.end(b']');
        Ok(())
    }

    #[inline]
    fn name(&mut self, name: Name) -> Result<(), TooDeep> {
        // The format's names need no escapes (`tests::names`).
        self.member();
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_str().as_bytes());
        self.out.extend_from_slice(b"\":");
        Ok(())
    }

    #[inline]
    fn key(&mut self, text: &[u8]) -> Result<(), TooDeep> {
        self.member();
        write_str(&mut self.out, text);
        self.out.push(b':');
        Ok(())
    }

    #[inline]
    fn null(&mut self) -> Result<(), TooDeep> {
        self.value();
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    #[inline]
    fn boolean(&mut self, value: bool) -> Result<(), TooDeep> {
        self.value();
        self.out
            .extend_from_slice(if value { b"true" as &[u8] } else { b"false" });
        Ok(())
    }

    #[inline]
    fn int(&mut self, value: i64) -> Result<(), TooDeep> {
        self.value();
        crate::encoder::write_i64(&mut self.out, value);
        Ok(())
    }

    #[inline]
    fn uint(&mut self, value: u64) -> Result<(), TooDeep> {
        self.value();
        write_u64(&mut self.out, value);
        Ok(())
    }

    #[inline]
    fn text(&mut self, text: &[u8]) -> Result<(), TooDeep> {
        self.value();
        write_str(&mut self.out, text);
        Ok(())
    }

    #[inline]
    fn raw(&mut self, json: &[u8]) -> Result<(), TooDeep> {
        self.value();
        let depth = self.open.len();
        match write_value(&mut self.out, json, depth) {
            Ok(()) => Ok(()),
            Err(inner) => Err(self.too_deep(inner)),
        }
    }

    fn bytes(&mut self, data: &[u8]) -> Result<(), TooDeep> {
        self.base64(data)
    }

    fn base64(&mut self, data: &[u8]) -> Result<(), TooDeep> {
        self.value();
        self.out.push(b'"');
        base64_encode(data, &mut self.out);
        self.out.push(b'"');
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The answers of the queries (DESIGN §7.8); a single record is written by `records.rs`.

/// How a terminal's output is given: bytes (the queries) or base64 text (`state()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Bytes,
    Base64,
}

/// `{toolCallId: record}` of a session (none: `{}`), in first-seen order.
pub fn tool_calls<S: Sink>(s: &mut S, session: Option<&Session>) -> Result<(), S::Error> {
    s.begin_object()?;
    for (id, tc) in session.into_iter().flat_map(|ss| ss.tool_calls.iter()) {
        s.key(id)?;
        tool_call_record(s, id, tc)?;
    }
    s.end_object()
}

/// `{sessionId: {toolCallId: record}}` of the sessions that hold tool calls.
pub fn snapshot<S: Sink>(s: &mut S, store: &Store) -> Result<(), S::Error> {
    s.begin_object()?;
    for (sid, session) in store.sessions.iter() {
        if !session.tool_calls.is_empty() {
            s.key(sid)?;
            tool_calls(s, Some(session))?;
        }
    }
    s.end_object()
}

/// `{terminalId: record}` of a session, in first-seen order.
pub fn terminals<S: Sink>(s: &mut S, session: Option<&Session>, output: Output) -> Result<(), S::Error> {
    s.begin_object()?;
    for (id, t) in session.into_iter().flat_map(|ss| ss.terminals.iter()) {
        s.key(id)?;
        terminal_record(s, id, t, output)?;
    }
    s.end_object()
}

/// `{planId: record}` of a session, in first-seen order.
pub fn plans<S: Sink>(s: &mut S, session: Option<&Session>) -> Result<(), S::Error> {
    s.begin_object()?;
    for (id, plan) in session.into_iter().flat_map(|ss| ss.plans.iter()) {
        s.key(id)?;
        s.raw(plan)?;
    }
    s.end_object()
}

/// The unknown updates of a session, in arrival order.
pub fn updates<S: Sink>(s: &mut S, session: Option<&Session>) -> Result<(), S::Error> {
    s.begin_array()?;
    for update in session.into_iter().flat_map(|ss| ss.updates.iter()) {
        s.raw(update)?;
    }
    s.end_array()
}

/// The answered file requests of a session (`request.rs`), oldest first.
pub fn files<S: Sink>(s: &mut S, session: Option<&Session>) -> Result<(), S::Error> {
    s.begin_array()?;
    for record in session.into_iter().flat_map(|ss| ss.files.iter()) {
        s.raw(record)?;
    }
    s.end_array()
}

/// The entities of a session (`entity.rs`): `{target: value}` for each target it holds, in table
/// order, where a target with ids holds `{id: entity}`.
pub fn entities<S: Sink>(s: &mut S, session: Option<&Session>) -> Result<(), S::Error> {
    entity_map(s, session.map_or(&[][..], |ss| &ss.entities[..]))
}

/// `{target: value}` for each target `held` holds (a session's entities, or the agent's own:
/// `Store::agent_entities`), in table order.
pub fn entity_map<S: Sink>(s: &mut S, held: &[super::records::Entities]) -> Result<(), S::Error> {
    s.begin_object()?;
    for (t, e) in super::rules::targets().iter().zip(held) {
        if e.is_empty() {
            continue;
        }
        s.key(t.name.as_bytes())?;
        if let Some(one) = &e.one {
            entity(s, one)?;
        } else {
            s.begin_object()?;
            for (id, held) in e.by_id.iter() {
                s.key(id)?;
                entity(s, held)?;
            }
            s.end_object()?;
        }
    }
    s.end_object()
}

/// One entity: a record as an object (lists as arrays), or its value.
pub fn entity<S: Sink>(s: &mut S, held: &super::records::Held) -> Result<(), S::Error> {
    use super::records::{Held, Slot};
    let record;
    let held = match held {
        Held::Update(v) => {
            record = Held::Record(super::entity::record(v));
            &record
        }
        held => held,
    };
    match held {
        Held::Value(v) => s.raw(v),
        Held::Update(_) => unreachable!("written as its record"),
        Held::Record(members) => {
            s.begin_object()?;
            for (name, slot) in members {
                s.key(name)?;
                match slot {
                    Slot::Value(v) => s.raw(v)?,
                    Slot::Items(items) => {
                        s.begin_array()?;
                        for item in items {
                            s.raw(item)?;
                        }
                        s.end_array()?;
                    }
                }
            }
            s.end_object()
        }
    }
}

/// The permission records of the session `sid` (all, or only the pending ones), in request order.
pub fn permissions<S: Sink>(s: &mut S, store: &Store, sid: &[u8], pending: bool) -> Result<(), S::Error> {
    s.begin_array()?;
    for p in store.permissions() {
        if (!pending || p.outcome == super::Outcome::Pending) && store.session_id(p.session) == sid {
            permission_record(s, sid, p)?;
        }
    }
    s.end_array()
}

#[cfg(test)]
mod tests {
    use super::super::evict::Limits;
    use super::super::records::TOOL_CALL_FIELDS;
    use super::*;

    /// A sink that records the names it is given.
    struct Names(Vec<Name>);

    impl Sink for Names {
        type Error = ();
        fn begin_object(&mut self) -> Result<(), ()> {
            Ok(())
        }
        fn end_object(&mut self) -> Result<(), ()> {
            Ok(())
        }
        fn begin_array(&mut self) -> Result<(), ()> {
            Ok(())
        }
        fn end_array(&mut self) -> Result<(), ()> {
            Ok(())
        }
        fn name(&mut self, name: Name) -> Result<(), ()> {
            self.0.push(name);
            Ok(())
        }
        fn key(&mut self, _: &[u8]) -> Result<(), ()> {
            Ok(())
        }
        fn null(&mut self) -> Result<(), ()> {
            Ok(())
        }
        fn boolean(&mut self, _: bool) -> Result<(), ()> {
            Ok(())
        }
        fn int(&mut self, _: i64) -> Result<(), ()> {
            Ok(())
        }
        fn uint(&mut self, _: u64) -> Result<(), ()> {
            Ok(())
        }
        fn text(&mut self, _: &[u8]) -> Result<(), ()> {
            Ok(())
        }
        fn raw(&mut self, _: &[u8]) -> Result<(), ()> {
            Ok(())
        }
        fn bytes(&mut self, _: &[u8]) -> Result<(), ()> {
            Ok(())
        }
        fn base64(&mut self, _: &[u8]) -> Result<(), ()> {
            Ok(())
        }
    }

    #[test]
    fn names() {
        assert_eq!(LIMITS.map(Name::as_str), Limits::NAMES);
        assert_eq!(TOOL_CALL.map(Name::as_str), TOOL_CALL_FIELDS);
        for (i, name) in NAMES.iter().enumerate() {
            // Written without escapes by `JsonWriter::name`; each once.
            assert!(name.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_'), "{name}");
            assert!(!NAMES[..i].contains(name), "{name} twice");
        }
        // A checkpoint that has every member: every name passes through `state`.
        let doc = br#"{"format":"acp-fast-state/2","protocolVersion":null,"negotiatedVersion":2,
            "maxToolCalls":5,"maxTerminalBytes":1,"maxContentItems":1,"maxPlans":1,
            "maxPermissions":1,"maxUpdates":1,"maxTerminals":1,"maxEntities":1,"maxFiles":1,
            "maxContentBytes":1,"maxSessions":2,"maxFrameBytes":9,"strictSchema":2,"unstable":true,"draft":"alpha.5","wrapBareContent":true,"evicted":0,
            "closedSessions":1,"evictedSessions":1,"agent":{"authStatus":{"state":"x"}},"sessions":{"s":{"toolCalls":{"c":{"toolCallId":"c","title":"t","kind":"read",
            "status":"pending","content":[1],"locations":[],"rawInput":1,"rawOutput":2,"name":"n",
            "_meta":{},"x":1,"_truncated":{"droppedItems":1}}},
            "terminals":{"t":{"terminalId":"t","command":"c","cwd":"/","output":"","outputMeta":{},
            "exitStatus":{},"_meta":{},"y":1,"_truncated":{"droppedBytes":1}}},
            "plans":{"main":{"planId":"main"}},
            "permissions":[{"id":1,"sessionId":"s","toolCallId":"c","options":[],"outcome":"selected",
            "optionId":"o","approved":true,"response":{}}],
            "updates":[{"sessionUpdate":"u"}],"entities":{"usage":{"used":1}},
            "files":[{"op":"read","path":"/a","bytes":1}],
            "_truncated":{"droppedTerminals":1,"droppedPlans":1,"droppedPermissions":1,"droppedUpdates":1,
            "droppedEntities":1,"droppedFiles":1}},
            "s2":{"toolCalls":{"d":{"toolCallId":"d","kind":"other","status":"pending","content":[],"locations":[]}},
            "terminals":{},"plans":{},"permissions":[]}},
            "permissionOrder":["s"],"toolCallOrder":["s2","s"],"sessionOrder":["s2","s"],
            "cancelRequests":[{"requestId":1,"source":null}]}"#;
        let store = super::super::from_json(doc).expect("a valid checkpoint");
        let mut sink = Names(Vec::new());
        let (store, options) = store;
        super::super::checkpoint::state(&mut sink, &store, &options).unwrap();
        let mut used = sink.0;
        used.sort_unstable();
        used.dedup();
        assert_eq!(used.len(), NAMES.len());
    }

    #[test]
    fn too_deep_names_the_path_from_the_root() {
        let mut w = JsonWriter::with_capacity(0);
        w.begin_object().unwrap();
        w.name(Name::SESSIONS).unwrap();
        w.begin_object().unwrap();
        w.key(b"s\"1").unwrap();
        w.begin_array().unwrap();
        w.raw(b"1").unwrap();
        let deep = format!("{}{}", "[".repeat(1030), "]".repeat(1030));
        let err = w.raw(deep.as_bytes()).unwrap_err();
        assert_eq!(
            &err.path[..3],
            &[
                PathItem::Key("sessions".into()),
                PathItem::Key("s\"1".into()),
                PathItem::Index(1)
            ]
        );
        assert_eq!(err.path.len(), super::super::checkpoint::MAX_DEPTH as usize);
    }
}
