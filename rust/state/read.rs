//! Reading the objects of a frame without building a tree, the -32602 errors of DESIGN §7.7, and
//! base64 (§7.4).
//!
//! Mirror: `python/acp_fast/_fallback/state/read.py`. Differences on purpose: here members are
//! located in the frame's bytes (`walk`, `find_member`) and an error is built where a rule breaks
//! (`bad`), the offending value's position at hand; the fallback reads orjson's dicts, raises
//! `Bad` with the member's path, and locates the value in the frame only then (`state_error`).

use crate::error::{describe_value, DecodeError, JsonType};
use crate::message::{scan_span, Captured, Envelope, Span};
use crate::scanner::{unescape_into, Scanner, Str};

use super::records::{Raw, Text};

/// One member of an object: its key, its value, for array values under the key `content` the
/// range of its items in the item list, and what the reader made of it (`code`: a field slot
/// below 100, or one of the `F_` codes).
#[derive(Clone, Copy)]
pub(super) struct Member {
    pub key: Str,
    pub value: Span,
    pub items: (u32, u32),
    pub code: u8,
}

pub(super) const F_IGNORE: u8 = 100;
pub(super) const F_ID: u8 = 101;
pub(super) const F_CONTENT: u8 = 102;
pub(super) const F_EXTRA: u8 = 103;
pub(super) const F_OUTPUT: u8 = 104;

#[inline]
pub(super) fn text_of(data: &[u8], s: Str) -> Text {
    if s.escaped {
        let mut out = Vec::with_capacity(s.end - s.start);
        unescape_into(data, s, &mut out);
        out.into_boxed_slice()
    } else {
        data[s.start..s.end].into()
    }
}

#[inline]
pub(super) fn raw(data: &[u8], span: Span) -> Raw {
    data[span.range()].into()
}

/// Does the string token equal `name`?
#[inline(always)]
pub(super) fn str_is(data: &[u8], s: Str, name: &[u8]) -> bool {
    if s.escaped {
        crate::scanner::string_equals(data, s, name)
    } else {
        &data[s.start..s.end] == name
    }
}

/// The key bytes to classify on (unescaped into `scratch` only when needed).
#[inline(always)]
pub(super) fn key_bytes<'a>(data: &'a [u8], key: Str, scratch: &'a mut Vec<u8>) -> &'a [u8] {
    crate::scanner::string_text(data, key, scratch)
}

/// Read the members of the (valid) object `obj` of `data`. Items of array values under the key
/// `content` are listed in `items`.
pub(super) fn walk(
    data: &[u8],
    obj: Span,
    members: &mut Vec<Member>,
    items: &mut Vec<Span>,
) -> Result<(), DecodeError> {
    members.clear();
    items.clear();
    let base = obj.start as usize;
    let slice = &data[obj.range()];
    let mut sc = Scanner::new(slice);
    sc.enter()?;
    if sc.peek() == Some(b'}') {
        return Ok(());
    }
    loop {
        sc.skip_ws();
        let mut key = sc.scan_key()?;
        sc.skip_ws();
        let mut range = (0, 0);
        let value = if sc.peek() == Some(b'[') && str_is(slice, key, b"content") {
            let start = sc.pos;
            let first = items.len() as u32;
            sc.enter()?;
            if sc.peek() == Some(b']') {
                sc.pos += 1;
            } else {
                loop {
                    sc.skip_ws();
                    let item = scan_span(&mut sc)?;
                    items.push(item.shifted_up(base));
                    match sc.peek() {
                        Some(b',') => sc.pos += 1,
                        _ => {
                            sc.pos += 1;
                            break;
                        }
                    }
                }
            }
            sc.leave();
            range = (first, items.len() as u32);
            Span::new(JsonType::Array, start, sc.pos)
        } else {
            scan_span(&mut sc)?
        };
        key.start += base;
        key.end += base;
        members.push(Member {
            key,
            value: value.shifted_up(base),
            items: range,
            code: F_IGNORE,
        });
        match sc.peek() {
            Some(b',') => sc.pos += 1,
            _ => return Ok(()),
        }
    }
}

/// `walk`, from the members the envelope walk already captured.
pub(super) fn from_captured(captured: &Captured, members: &mut Vec<Member>, items: &mut Vec<Span>) {
    members.clear();
    items.clear();
    items.extend_from_slice(&captured.items);
    members.extend(captured.members.iter().map(|&(key, value, items)| Member {
        key,
        value,
        items,
        code: F_IGNORE,
    }));
}

/// The last member `name` of the (valid) object `obj`.
pub(super) fn find_member(data: &[u8], obj: Span, name: &[u8]) -> Option<Span> {
    let [found] = find_members(data, obj, [name]);
    found
}

/// The last member of each name in `names` of the (valid) object `obj`, in one walk.
pub(super) fn find_members<const N: usize>(data: &[u8], obj: Span, names: [&[u8]; N]) -> [Option<Span>; N] {
    let mut found = [None; N];
    let slice = &data[obj.range()];
    let mut sc = Scanner::new(slice);
    if sc.enter().is_err() || sc.peek() == Some(b'}') {
        return found;
    }
    loop {
        sc.skip_ws();
        let Ok(key) = sc.scan_key() else { return found };
        sc.skip_ws();
        let Ok(value) = scan_span(&mut sc) else { return found };
        if let Some(i) = names.iter().position(|name| str_is(slice, key, name)) {
            found[i] = Some(value.shifted_up(obj.start as usize));
        }
        match sc.peek() {
            Some(b',') => sc.pos += 1,
            _ => return found,
        }
    }
}

/// The last member `name` of the update object: from the envelope walk's capture when there is
/// one, else by walking `update`.
pub(super) fn update_member(data: &[u8], update: Span, captured: Option<&Captured>, name: &[u8]) -> Option<Span> {
    match captured {
        Some(c) => c
            .members
            .iter()
            .rev()
            .find(|(k, _, _)| str_is(data, *k, name))
            .map(|&(_, v, _)| v),
        None => find_member(data, update, name),
    }
}

/// The items of the (valid) array `arr`.
pub(super) fn array_items(data: &[u8], arr: Span) -> Vec<Span> {
    let slice = &data[arr.range()];
    let mut sc = Scanner::new(slice);
    let mut out = Vec::new();
    if sc.enter().is_err() {
        return out;
    }
    if sc.peek() == Some(b']') {
        return out;
    }
    loop {
        sc.skip_ws();
        match scan_span(&mut sc) {
            Ok(item) => out.push(item.shifted_up(arr.start as usize)),
            Err(_) => return out,
        }
        match sc.peek() {
            Some(b',') => sc.pos += 1,
            _ => return out,
        }
    }
}

/// `expected "{path}" to be {what}, found {value}` at the value, or `found none` at `parent`.
#[cold]
#[inline(never)]
pub(super) fn bad(
    data: &[u8],
    kind: &'static str,
    path: &str,
    what: &str,
    value: Option<Span>,
    parent: Span,
) -> DecodeError {
    match value {
        Some(v) => {
            let r = v.range();
            DecodeError::params(
                kind,
                format!(
                    "expected \"{path}\" to be {what}, found {}",
                    describe_value(data, v.ty, r.start, r.end)
                ),
                r.start,
            )
        }
        None => DecodeError::params(
            kind,
            format!("expected \"{path}\" to be {what}, found none"),
            parent.start as usize,
        ),
    }
}

/// `bad` for the member `name` of the object at `path` (the path is built on this cold path only).
#[cold]
#[inline(never)]
pub(super) fn bad_member(
    data: &[u8],
    kind: &'static str,
    (path, name): (&str, &str),
    what: &str,
    value: Option<Span>,
    parent: Span,
) -> DecodeError {
    bad(data, kind, &format!("{path}.{name}"), what, value, parent)
}

/// `params.sessionId` as a string token, or the error.
pub(super) fn require_session(data: &[u8], env: &Envelope, params: Span) -> Result<Str, DecodeError> {
    match env.session_id.and_then(|s| s.str()) {
        Some(s) => Ok(s),
        None => {
            let found = find_member(data, params, b"sessionId");
            Err(bad(
                data,
                "invalid_session_id",
                "params.sessionId",
                "a string",
                found,
                params,
            ))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Base64 (RFC 4648, standard alphabet, padded; DESIGN §7.4)

const B64_INVALID: u8 = 0xFF;
static B64_DECODE: [u8; 256] = {
    let mut t = [B64_INVALID; 256];
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut i = 0;
    while i < 64 {
        t[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    t
};

/// Append the bytes of padded standard base64 `text` to `out`; `false` (and `out` unchanged) if
/// `text` is not such base64.
pub fn base64_decode(text: &[u8], out: &mut Vec<u8>) -> bool {
    if !text.len().is_multiple_of(4) {
        return false;
    }
    let pad = text.iter().rev().take(2).take_while(|&&b| b == b'=').count();
    let body = &text[..text.len() - pad];
    if body.iter().any(|&b| B64_DECODE[b as usize] == B64_INVALID) {
        return false;
    }
    let start = out.len();
    out.reserve(body.len() / 4 * 3 + 2);
    let mut chunks = body.chunks_exact(4);
    for c in &mut chunks {
        let n = (u32::from(B64_DECODE[c[0] as usize]) << 18)
            | (u32::from(B64_DECODE[c[1] as usize]) << 12)
            | (u32::from(B64_DECODE[c[2] as usize]) << 6)
            | u32::from(B64_DECODE[c[3] as usize]);
        out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
    }
    let rest = chunks.remainder();
    match rest.len() {
        0 => {}
        2 => {
            let n = (u32::from(B64_DECODE[rest[0] as usize]) << 18) | (u32::from(B64_DECODE[rest[1] as usize]) << 12);
            out.push((n >> 16) as u8);
        }
        3 => {
            let n = (u32::from(B64_DECODE[rest[0] as usize]) << 18)
                | (u32::from(B64_DECODE[rest[1] as usize]) << 12)
                | (u32::from(B64_DECODE[rest[2] as usize]) << 6);
            out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8]);
        }
        _ => {
            out.truncate(start);
            return false;
        }
    }
    true
}

/// Standard padded base64 of `data`.
pub fn base64_encode(data: &[u8], out: &mut Vec<u8>) {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut chunks = data.chunks_exact(3);
    for c in &mut chunks {
        let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
        out.extend_from_slice(&[
            A[(n >> 18) as usize & 63],
            A[(n >> 12) as usize & 63],
            A[(n >> 6) as usize & 63],
            A[n as usize & 63],
        ]);
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.extend_from_slice(&[A[(n >> 18) as usize & 63], A[(n >> 12) as usize & 63], b'=', b'=']);
        }
        [a, b] => {
            let n = (u32::from(a) << 16) | (u32::from(b) << 8);
            out.extend_from_slice(&[
                A[(n >> 18) as usize & 63],
                A[(n >> 12) as usize & 63],
                A[(n >> 6) as usize & 63],
                b'=',
            ]);
        }
        _ => {}
    }
}

/// Decode the base64 string value `span` (a JSON string) or report it.
pub(super) fn decode_b64(
    data: &[u8],
    span: Span,
    path: &str,
    parent: Span,
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    let ok = match span.str() {
        Some(s) if !s.escaped => base64_decode(&data[s.start..s.end], out),
        Some(s) => base64_decode(&text_of(data, s), out),
        None => false,
    };
    if ok {
        Ok(())
    } else {
        Err(bad(data, "invalid_base64", path, "base64 text", Some(span), parent))
    }
}

pub(super) trait ShiftUp {
    fn shifted_up(self, by: usize) -> Self;
}

impl ShiftUp for Span {
    #[inline(always)]
    fn shifted_up(mut self, by: usize) -> Self {
        self.start += by as u32;
        self.end += by as u32;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_rules() {
        let mut out = Vec::new();
        for (text, ok) in [
            ("", true),
            ("QQ==", true),
            ("QUI=", true),
            ("QUJD", true),
            ("QQ=", false),
            ("Q===", false),
            ("QQ=A", false),
            ("QU-D", false),
            ("QQ", false),
        ] {
            out.clear();
            assert_eq!(base64_decode(text.as_bytes(), &mut out), ok, "{text}");
        }
        for data in [&b""[..], b"A", b"AB", b"ABC", b"\xff\x00\x10"] {
            let mut enc = Vec::new();
            base64_encode(data, &mut enc);
            let mut dec = Vec::new();
            assert!(base64_decode(&enc, &mut dec));
            assert_eq!(dec, data);
        }
    }
}
