//! The JSON-RPC 2.0 envelope: classify a frame, validate it, and locate the fields that routing
//! needs (`id`, `method`, `params.sessionId`, `params.update.sessionUpdate`,
//! `params.update.toolCallId`) in the same pass that validates the JSON — no tree is built.
//!
//! Wire names (camelCase) live here and nowhere else. Mirror: `_fallback/message.py`; the rules
//! and their order are fixed in docs/DESIGN.md §5.

use crate::error::{describe_value, DecodeError, JsonType};
use crate::framing::MAX_FRAME_BYTES;
use crate::scanner::{self, parse_i64, string_equals, Scanner, Str};

/// What a valid message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Notification,
    Response,
    Error,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Notification => "notification",
            Kind::Response => "response",
            Kind::Error => "error",
        }
    }
}

/// Where a value sits in the frame: 12 bytes, so that the envelope walk moves little data.
/// For strings, `start..end` includes the quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub end: u32,
    pub ty: JsonType,
    /// Numbers: no fraction and no exponent.
    pub is_int: bool,
    /// Strings: the content has escapes.
    pub escaped: bool,
}

impl Span {
    #[inline(always)]
    pub(crate) fn new(ty: JsonType, start: usize, end: usize) -> Self {
        Self {
            start: start as u32,
            end: end as u32,
            ty,
            is_int: false,
            escaped: false,
        }
    }

    #[inline(always)]
    fn of_str(start: usize, s: Str) -> Self {
        Self {
            start: start as u32,
            end: (s.end + 1) as u32,
            ty: JsonType::String,
            is_int: false,
            escaped: s.escaped,
        }
    }

    pub fn range(&self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    /// The string token of a string value.
    pub fn str(&self) -> Option<Str> {
        (self.ty == JsonType::String).then(|| Str {
            start: self.start as usize + 1,
            end: self.end as usize - 1,
            escaped: self.escaped,
        })
    }

    pub(crate) fn shifted(mut self, by: usize) -> Self {
        self.start -= by as u32;
        self.end -= by as u32;
        self
    }
}

/// A validated message: its kind and where its routing fields are. Offsets are relative to the
/// message's own bytes (for a batch entry: to the entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    pub kind: Kind,
    pub id: Option<Span>,
    /// The string fields below are always string spans (`Span::str` is `Some`).
    pub method: Option<Span>,
    pub params: Option<Span>,
    pub result: Option<Span>,
    pub error: Option<Span>,
    pub session_id: Option<Span>,
    /// `params.update` (any type) when `params` is an object.
    pub update: Option<Span>,
    pub update_kind: Option<Span>,
    pub tool_call_id: Option<Span>,
    /// `result.protocolVersion` (any type; the last duplicate) when `result` is an object.
    pub protocol_version: Option<Span>,
}

/// One entry of a batch: its byte range in the frame and what it decoded to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchEntry {
    pub start: usize,
    pub end: usize,
    pub result: Result<Envelope, DecodeError>,
}

/// A decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Single(Envelope),
    Batch(Vec<BatchEntry>),
}

/// Members of an object as first read (last duplicate wins), before validation.
#[derive(Default, Clone, Copy)]
struct Members {
    open: usize,
    jsonrpc: Option<Span>,
    id: Option<Span>,
    method: Option<Span>,
    params: Option<Span>,
    result: Option<Span>,
    error: Option<Span>,
    session_id: Option<Span>,
    update: Option<Span>,
    update_kind: Option<Span>,
    tool_call_id: Option<Span>,
    /// `params.update.status`, read only by `parse_line_status` (`STATUS`).
    status: Option<Span>,
    /// For error objects: `code` and `message`.
    error_code: Option<Span>,
    error_message: Option<Span>,
    /// `result.protocolVersion` when `result` is an object.
    protocol_version: Option<Span>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Top,
    Params,
    Update,
    ErrorObject,
    Result,
}

/// Identify the key of a member, unescaping only when it has escapes.
#[inline(always)]
fn key_is(data: &[u8], key: Str, name: &[u8]) -> bool {
    if key.escaped {
        string_equals(data, key, name)
    } else {
        key.end - key.start == name.len() && &data[key.start..key.end] == name
    }
}

/// Scan a value, returning its span.
#[inline(always)]
pub(crate) fn scan_span(sc: &mut Scanner<'_>) -> Result<Span, DecodeError> {
    let ty = sc.peek_type();
    let start = sc.pos;
    match ty {
        Some(JsonType::String) => {
            let s = sc.scan_string()?;
            Ok(Span::of_str(start, s))
        }
        Some(JsonType::Number) => {
            let n = sc.scan_number()?;
            let mut span = Span::new(JsonType::Number, start, sc.pos);
            span.is_int = n.is_int;
            Ok(span)
        }
        _ => {
            let ty = sc.skip_value()?;
            Ok(Span::new(ty, start, sc.pos))
        }
    }
}

/// Read an object at the cursor, recording the members of interest at `level`.
/// Members of `params.update` as read by the envelope walk (key token, value span), for the state
/// engine, which then need not walk the update object again.
#[derive(Default, Debug)]
pub struct Captured {
    /// (key, value, range of the value's items in `items` for a `content` array).
    pub members: Vec<(Str, Span, (u32, u32))>,
    pub items: Vec<Span>,
}

impl Captured {
    pub fn new() -> Self {
        Self::default()
    }

    fn clear(&mut self) {
        self.members.clear();
        self.items.clear();
    }
}

/// Scan the array at the cursor like `skip_value` would (same errors), listing its items.
fn scan_items(sc: &mut Scanner<'_>, items: &mut Vec<Span>) -> Result<Span, DecodeError> {
    let start = sc.pos;
    sc.enter()?;
    if sc.peek() == Some(b']') {
        sc.pos += 1;
        sc.leave();
        return Ok(Span::new(JsonType::Array, start, sc.pos));
    }
    loop {
        sc.skip_ws();
        items.push(scan_span(sc)?);
        match sc.peek() {
            Some(b',') => sc.pos += 1,
            Some(b']') => {
                sc.pos += 1;
                sc.leave();
                return Ok(Span::new(JsonType::Array, start, sc.pos));
            }
            _ => return Err(sc.expect(b']', "',' or ']'").unwrap_err()),
        }
    }
}

/// `STATUS`: also read `params.update.status` (for `parse_line_status`; the other readers do
/// without the compare).
fn scan_members<const STATUS: bool>(
    sc: &mut Scanner<'_>,
    level: Level,
    m: &mut Members,
    mut cap: Option<&mut Captured>,
) -> Result<(), DecodeError> {
    let data = sc.data;
    sc.enter()?;
    match sc.peek() {
        Some(b'}') => {
            sc.pos += 1;
            sc.leave();
            return Ok(());
        }
        Some(b'"') => {}
        _ => return Err(sc.expect(b'"', "a string key").unwrap_err()),
    }
    loop {
        let key = sc.scan_key()?;
        sc.skip_ws();
        let value_start = sc.pos;
        match level {
            Level::Top if key_is(data, key, b"params") => {
                // A later duplicate "params" replaces everything read from an earlier one.
                m.session_id = None;
                m.update = None;
                m.update_kind = None;
                m.tool_call_id = None;
                if STATUS {
                    m.status = None;
                }
                if sc.peek() == Some(b'{') {
                    if let Some(c) = cap.as_deref_mut() {
                        c.clear();
                    }
                    scan_members::<STATUS>(sc, Level::Params, m, cap.as_deref_mut())?;
                    m.params = Some(Span::new(JsonType::Object, value_start, sc.pos));
                } else {
                    m.params = Some(scan_span(sc)?);
                }
            }
            Level::Top if key_is(data, key, b"error") => {
                m.error_code = None;
                m.error_message = None;
                if sc.peek() == Some(b'{') {
                    scan_members::<STATUS>(sc, Level::ErrorObject, m, None)?;
                    m.error = Some(Span::new(JsonType::Object, value_start, sc.pos));
                } else {
                    m.error = Some(scan_span(sc)?);
                }
            }
            Level::Top if key_is(data, key, b"result") => {
                // Read here (not again by the state engine): `result.protocolVersion`.
                m.protocol_version = None;
                if sc.peek() == Some(b'{') {
                    scan_members::<STATUS>(sc, Level::Result, m, None)?;
                    m.result = Some(Span::new(JsonType::Object, value_start, sc.pos));
                } else {
                    m.result = Some(scan_span(sc)?);
                }
            }
            Level::Result => {
                let span = scan_span(sc)?;
                if key_is(data, key, b"protocolVersion") {
                    m.protocol_version = Some(span);
                }
            }
            Level::Top => {
                let span = scan_span(sc)?;
                if key_is(data, key, b"jsonrpc") {
                    m.jsonrpc = Some(span);
                } else if key_is(data, key, b"id") {
                    m.id = Some(span);
                } else if key_is(data, key, b"method") {
                    m.method = Some(span);
                }
            }
            Level::Params if key_is(data, key, b"update") => {
                m.update_kind = None;
                m.tool_call_id = None;
                if STATUS {
                    m.status = None;
                }
                if let Some(c) = cap.as_deref_mut() {
                    c.clear();
                }
                if sc.peek() == Some(b'{') {
                    scan_members::<STATUS>(sc, Level::Update, m, cap.as_deref_mut())?;
                    m.update = Some(Span::new(JsonType::Object, value_start, sc.pos));
                } else {
                    m.update = Some(scan_span(sc)?);
                }
            }
            Level::Params => {
                let span = scan_span(sc)?;
                if key_is(data, key, b"sessionId") {
                    m.session_id = Some(span);
                }
            }
            Level::Update => {
                let span = match cap.as_deref_mut() {
                    Some(c) => {
                        if sc.peek() == Some(b'[') && key_is(data, key, b"content") {
                            let first = c.items.len() as u32;
                            let span = scan_items(sc, &mut c.items)?;
                            c.members.push((key, span, (first, c.items.len() as u32)));
                            span
                        } else {
                            let span = scan_span(sc)?;
                            c.members.push((key, span, (0, 0)));
                            span
                        }
                    }
                    None => scan_span(sc)?,
                };
                if key_is(data, key, b"sessionUpdate") {
                    m.update_kind = Some(span);
                } else if key_is(data, key, b"toolCallId") {
                    m.tool_call_id = Some(span);
                } else if STATUS && key_is(data, key, b"status") {
                    m.status = Some(span);
                }
            }
            Level::ErrorObject => {
                let span = scan_span(sc)?;
                if key_is(data, key, b"code") {
                    m.error_code = Some(span);
                } else if key_is(data, key, b"message") {
                    m.error_message = Some(span);
                }
            }
        }
        match sc.peek() {
            Some(b',') => {
                sc.pos += 1;
                if sc.peek() != Some(b'"') {
                    return Err(sc.expect(b'"', "a string key").unwrap_err());
                }
            }
            Some(b'}') => {
                sc.pos += 1;
                sc.leave();
                return Ok(());
            }
            _ => return Err(sc.expect(b'}', "',' or '}'").unwrap_err()),
        }
    }
}

fn is_int64(data: &[u8], span: &Span) -> bool {
    span.ty == JsonType::Number && span.is_int && parse_i64(&data[span.range()]).is_some()
}

fn valid_id(data: &[u8], span: &Span) -> bool {
    matches!(span.ty, JsonType::String | JsonType::Null) || is_int64(data, span)
}

#[cold]
fn invalid_value(data: &[u8], kind: &'static str, what: &str, span: &Span) -> DecodeError {
    let r = span.range();
    DecodeError::invalid(
        kind,
        format!(
            "expected {what}, found {}",
            describe_value(data, span.ty, r.start, r.end)
        ),
        r.start,
    )
}

const ID_WHAT: &str = "\"id\" to be a string, an integer or null";

/// Apply the JSON-RPC rules of DESIGN §5 (rows 2–13) to the members of one object.
fn validate(data: &[u8], m: &Members) -> Result<Envelope, DecodeError> {
    let Some(jsonrpc) = m.jsonrpc else {
        return Err(DecodeError::invalid(
            "missing_jsonrpc",
            "expected \"jsonrpc\": \"2.0\", found no \"jsonrpc\" member".to_owned(),
            m.open,
        ));
    };
    // `key_is`: a plain compare unless the string has escapes.
    if !jsonrpc.str().is_some_and(|s| key_is(data, s, b"2.0")) {
        return Err(invalid_value(data, "invalid_jsonrpc", "\"jsonrpc\": \"2.0\"", &jsonrpc));
    }
    let str_of = |span: Option<Span>| span.filter(|s| s.ty == JsonType::String);
    let kind;
    if let Some(method) = m.method {
        if method.ty != JsonType::String {
            return Err(invalid_value(
                data,
                "invalid_method",
                "\"method\" to be a string",
                &method,
            ));
        }
        if let Some(id) = &m.id {
            if !valid_id(data, id) {
                return Err(invalid_value(data, "invalid_id", ID_WHAT, id));
            }
        }
        if let Some(params) = &m.params {
            if !matches!(params.ty, JsonType::Object | JsonType::Array | JsonType::Null) {
                return Err(invalid_value(
                    data,
                    "invalid_params",
                    "\"params\" to be an object, an array or null",
                    params,
                ));
            }
        }
        kind = if m.id.is_some() {
            Kind::Request
        } else {
            Kind::Notification
        };
    } else {
        match (m.result.is_some(), m.error.is_some()) {
            (true, true) => {
                return Err(DecodeError::invalid(
                    "result_and_error",
                    "expected only one of \"result\" and \"error\", found both".to_owned(),
                    m.open,
                ))
            }
            (false, false) => {
                return Err(DecodeError::invalid(
                    "missing_method",
                    "expected a \"method\", \"result\" or \"error\" member, found none".to_owned(),
                    m.open,
                ))
            }
            _ => {}
        }
        let Some(id) = &m.id else {
            return Err(DecodeError::invalid(
                "missing_id",
                "expected an \"id\" member in a response, found none".to_owned(),
                m.open,
            ));
        };
        if !valid_id(data, id) {
            return Err(invalid_value(data, "invalid_id", ID_WHAT, id));
        }
        if let Some(error) = &m.error {
            if error.ty != JsonType::Object {
                return Err(invalid_value(data, "invalid_error", "\"error\" to be an object", error));
            }
            match &m.error_code {
                Some(code) if is_int64(data, code) => {}
                Some(code) => {
                    return Err(invalid_value(
                        data,
                        "invalid_error",
                        "\"error.code\" to be an integer",
                        code,
                    ))
                }
                None => {
                    return Err(DecodeError::invalid(
                        "invalid_error",
                        "expected \"error.code\" to be an integer, found none".to_owned(),
                        error.start as usize,
                    ))
                }
            }
            match &m.error_message {
                Some(msg) if msg.ty == JsonType::String => {}
                Some(msg) => {
                    return Err(invalid_value(
                        data,
                        "invalid_error",
                        "\"error.message\" to be a string",
                        msg,
                    ))
                }
                None => {
                    return Err(DecodeError::invalid(
                        "invalid_error",
                        "expected \"error.message\" to be a string, found none".to_owned(),
                        error.start as usize,
                    ))
                }
            }
            kind = Kind::Error;
        } else {
            kind = Kind::Response;
        }
    }
    let params_object = m.params.is_some_and(|p| p.ty == JsonType::Object);
    Ok(Envelope {
        kind,
        id: if kind == Kind::Notification { None } else { m.id },
        method: str_of(m.method),
        params: m.params,
        result: m.result,
        error: m.error,
        session_id: if params_object { str_of(m.session_id) } else { None },
        update: if params_object { m.update } else { None },
        update_kind: if params_object { str_of(m.update_kind) } else { None },
        tool_call_id: if params_object { str_of(m.tool_call_id) } else { None },
        protocol_version: if m.result.is_some_and(|r| r.ty == JsonType::Object) {
            m.protocol_version
        } else {
            None
        },
    })
}

impl Envelope {
    fn shifted(mut self, by: usize) -> Self {
        for span in [
            &mut self.id,
            &mut self.method,
            &mut self.params,
            &mut self.result,
            &mut self.error,
            &mut self.session_id,
            &mut self.update,
            &mut self.update_kind,
            &mut self.tool_call_id,
            &mut self.protocol_version,
        ] {
            *span = span.map(|s| s.shifted(by));
        }
        self
    }
}

/// Strip one trailing `\n`, then one trailing `\r`.
pub fn strip_line_ending(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Decode one frame (without its line ending): JSON first, then the JSON-RPC rules.
pub fn parse_frame(data: &[u8]) -> Result<Frame, DecodeError> {
    if let Some(at) = memchr::memchr(b'\n', data) {
        return Err(DecodeError::json(
            "embedded_newline",
            "expected one frame per line, found a newline".to_owned(),
            at,
        ));
    }
    parse_line(data)
}

/// `parse_frame` for a line the framer cut, which holds no `\n` by construction (not checked
/// again: `data` must hold no `\n`).
pub fn parse_line(data: &[u8]) -> Result<Frame, DecodeError> {
    parse_line_captured(data, None)
}

/// `parse_line` that also lists the members of `params.update` of a single message in `cap`
/// (left empty for batches and for messages without an update object).
pub fn parse_line_captured(data: &[u8], cap: Option<&mut Captured>) -> Result<Frame, DecodeError> {
    parse_line_utf8(data, cap, false)
}

/// `parse_line_captured` for a line whose UTF-8 may already be known valid (`utf8`), as the
/// framer reports it; false checks it here.
pub fn parse_line_utf8(data: &[u8], cap: Option<&mut Captured>, utf8: bool) -> Result<Frame, DecodeError> {
    parse_line_with::<false>(data, cap, utf8, &mut None)
}

/// `parse_line_utf8` (without a capture) that also gives `params.update.status` (any type; the
/// last duplicate) of a single message whose `params` and `params.update` are objects, read by
/// the same walk (the `status` column, `columns.rs`).
pub fn parse_line_status(data: &[u8], utf8: bool) -> (Result<Frame, DecodeError>, Option<Span>) {
    let mut status = None;
    let frame = parse_line_with::<true>(data, None, utf8, &mut status);
    (frame, status)
}

/// `parse_line_utf8`, and with `STATUS` the status of `parse_line_status` in `status`.
#[inline(always)]
fn parse_line_with<const STATUS: bool>(
    data: &[u8],
    mut cap: Option<&mut Captured>,
    utf8: bool,
    status: &mut Option<Span>,
) -> Result<Frame, DecodeError> {
    if let Some(c) = cap.as_deref_mut() {
        c.clear();
    }
    if data.len() > MAX_FRAME_BYTES {
        return Err(DecodeError::json(
            "frame_too_large",
            format!("expected a frame of at most {MAX_FRAME_BYTES} bytes, found a longer line"),
            MAX_FRAME_BYTES,
        ));
    }
    // No newline check: the framer cut `data` at newlines, and `parse_frame` checks first.
    if !utf8 {
        scanner::check_utf8(data)?;
    }
    let mut sc = Scanner::unindexed(data);
    sc.build_index();
    if data.starts_with(b"\xEF\xBB\xBF") {
        return Err(sc.parse_document(&mut scanner::Skip).unwrap_err());
    }
    match sc.peek() {
        Some(b'{') => {
            let mut m = Members {
                open: sc.pos,
                ..Members::default()
            };
            scan_members::<STATUS>(&mut sc, Level::Top, &mut m, cap)?;
            sc.finish()?;
            let env = validate(data, &m)?;
            // (`update` is only set when `params` is an object.)
            if STATUS && env.update.is_some_and(|u| u.ty == JsonType::Object) {
                *status = m.status;
            }
            Ok(Frame::Single(env))
        }
        Some(b'[') => parse_batch(&mut sc),
        _ => {
            let span = scan_span(&mut sc)?;
            sc.finish()?;
            Err(DecodeError::invalid(
                "not_an_object",
                format!(
                    "expected a JSON-RPC message object or a batch array, found {}",
                    span.ty.name()
                ),
                span.start as usize,
            ))
        }
    }
}

fn parse_batch(sc: &mut Scanner<'_>) -> Result<Frame, DecodeError> {
    let data = sc.data;
    let open = sc.pos;
    sc.enter()?;
    // Read the whole array first: a JSON error anywhere makes the frame a parse error.
    let mut raw_entries: Vec<(usize, usize, Result<Members, JsonType>)> = Vec::new();
    if sc.peek() == Some(b']') {
        sc.pos += 1;
        sc.leave();
        sc.finish()?;
        return Err(DecodeError::invalid(
            "empty_batch",
            "expected at least one message in the batch, found an empty array".to_owned(),
            open,
        ));
    }
    loop {
        sc.skip_ws();
        let start = sc.pos;
        if sc.peek() == Some(b'{') {
            let mut m = Members {
                open: start,
                ..Members::default()
            };
            scan_members::<false>(sc, Level::Top, &mut m, None)?;
            raw_entries.push((start, sc.pos, Ok(m)));
        } else {
            let ty = sc.skip_value()?;
            raw_entries.push((start, sc.pos, Err(ty)));
        }
        match sc.peek() {
            Some(b',') => sc.pos += 1,
            Some(b']') => {
                sc.pos += 1;
                sc.leave();
                break;
            }
            _ => return Err(sc.expect(b']', "',' or ']'").unwrap_err()),
        }
    }
    sc.finish()?;
    let entries = raw_entries
        .into_iter()
        .map(|(start, end, m)| {
            let result = match m {
                Ok(m) => validate(data, &m).map(|env| env.shifted(start)),
                Err(ty) => Err(DecodeError::invalid(
                    "not_an_object",
                    format!("expected a JSON-RPC message object, found {}", ty.name()),
                    start,
                )),
            };
            BatchEntry { start, end, result }
        })
        .collect();
    Ok(Frame::Batch(entries))
}

#[cfg(test)]
mod tests;
