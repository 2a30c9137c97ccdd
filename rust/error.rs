//! Error values of the core: one struct with a JSON-RPC code, a stable kind id, the human
//! description and the byte offset. Line and column are derived from the offset only when an
//! error is reported (never on the happy path). Every constructor here is cold.
//!
//! Mirror: `python/acp_fast/_fallback/error.py`, definition for definition. The descriptions are
//! fixed in docs/DESIGN.md. Differences on purpose: the fallback's error is one plain class (no
//! `ErrorData` box, `Deref` or `Display`), names JSON types by strings (here `JsonType`), and also
//! has `DecodeError.shifted` (here `shifted` in `message.rs`) and the builders of the public
//! exceptions, `to_python` and `encode_error` (here the binding's `rust/python/errors.rs`).

use std::fmt;

/// JSON-RPC "Parse error": the frame is not valid JSON (or not a readable line).
pub const PARSE_ERROR: i32 = -32700;
/// JSON-RPC "Invalid Request": valid JSON, but not a valid JSON-RPC 2.0 message.
pub const INVALID_REQUEST: i32 = -32600;
/// JSON-RPC "Invalid params": a valid message whose params break a state-engine rule.
pub const INVALID_PARAMS: i32 = -32602;

/// Why a frame or document could not be decoded. Boxed, so that `Result<T, DecodeError>` stays
/// as small as `T` on the hot path (a large error type made every scanner call copy it around).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(Box<ErrorData>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorData {
    pub code: i32,
    pub kind: &'static str,
    pub description: String,
    /// Byte offset of the problem within the frame / document, when known.
    pub position: Option<usize>,
}

impl DecodeError {
    #[cold]
    #[inline(never)]
    pub fn new(code: i32, kind: &'static str, description: String, position: Option<usize>) -> Self {
        Self(Box::new(ErrorData {
            code,
            kind,
            description,
            position,
        }))
    }

    #[cold]
    #[inline(never)]
    pub fn json(kind: &'static str, description: String, position: usize) -> Self {
        Self::new(PARSE_ERROR, kind, description, Some(position))
    }

    #[cold]
    #[inline(never)]
    pub fn invalid(kind: &'static str, description: String, position: usize) -> Self {
        Self::new(INVALID_REQUEST, kind, description, Some(position))
    }

    #[cold]
    #[inline(never)]
    pub fn params(kind: &'static str, description: String, position: usize) -> Self {
        Self::new(INVALID_PARAMS, kind, description, Some(position))
    }

    /// The error of a batch entry (positions relative to the entry) at frame offsets: the entry
    /// starts at byte `by` of the frame.
    #[cold]
    #[must_use]
    pub fn shifted(mut self, by: usize) -> Self {
        if let Some(p) = &mut self.0.position {
            *p += by;
        }
        self
    }
}

impl std::ops::Deref for DecodeError {
    type Target = ErrorData;
    fn deref(&self) -> &ErrorData {
        &self.0
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.description)?;
        if let Some(p) = self.position {
            write!(f, " (byte {p})")?;
        }
        Ok(())
    }
}

impl std::error::Error for DecodeError {}

/// 1-based line and byte column of `position` within `data`.
pub fn line_column(data: &[u8], position: usize) -> (usize, usize) {
    let end = position.min(data.len());
    let before = &data[..end];
    let line = 1 + memchr::memchr_iter(b'\n', before).count();
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
    (line, position - line_start + 1)
}

/// How a character found at an unexpected place is shown: `'x'` for printable ASCII,
/// `U+XXXX` otherwise, `end of input` past the end.
#[cold]
pub fn describe_found(data: &[u8], position: usize) -> String {
    match data.get(position) {
        None => "end of input".to_owned(),
        Some(&b) if (0x21..=0x7e).contains(&b) => format!("'{}'", b as char),
        Some(_) => {
            // The input was checked to be UTF-8 before the grammar runs, but stay total anyway.
            let tail = &data[position..data.len().min(position + 4)];
            let ch = match std::str::from_utf8(tail) {
                Ok(s) => s.chars().next(),
                Err(e) => std::str::from_utf8(&tail[..e.valid_up_to()])
                    .ok()
                    .and_then(|s| s.chars().next()),
            };
            match ch {
                Some(c) => format!("U+{:04X}", c as u32),
                None => format!("U+{:04X}", data[position]),
            }
        }
    }
}

/// JSON type names used in descriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonType {
    Object,
    Array,
    String,
    Number,
    Boolean,
    Null,
}

impl JsonType {
    pub fn name(self) -> &'static str {
        match self {
            JsonType::Object => "object",
            JsonType::Array => "array",
            JsonType::String => "string",
            JsonType::Number => "number",
            JsonType::Boolean => "boolean",
            JsonType::Null => "null",
        }
    }
}

/// `{value}` of DESIGN §5: short literal text for strings and numbers, names otherwise.
#[cold]
pub fn describe_value(data: &[u8], ty: JsonType, start: usize, end: usize) -> String {
    let text = &data[start..end];
    match ty {
        JsonType::Object => "object".to_owned(),
        JsonType::Array => "array".to_owned(),
        JsonType::Null => "null".to_owned(),
        JsonType::Boolean => String::from_utf8_lossy(text).into_owned(),
        JsonType::Number | JsonType::String => {
            let name = ty.name();
            if text.len() <= 32 {
                format!("{name} {}", String::from_utf8_lossy(text))
            } else {
                name.to_owned()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_bytes() {
        assert_eq!(line_column(b"abc", 0), (1, 1));
        assert_eq!(line_column(b"abc", 3), (1, 4));
        assert_eq!(line_column(b"a\nbc", 3), (2, 2));
        assert_eq!(line_column(b"a\n", 2), (2, 1));
    }

    #[test]
    fn found_descriptions() {
        assert_eq!(describe_found(b"x", 0), "'x'");
        assert_eq!(describe_found(b"x", 1), "end of input");
        assert_eq!(describe_found(b"\t", 0), "U+0009");
        assert_eq!(describe_found(" ".as_bytes(), 0), "U+0020");
        assert_eq!(describe_found("é".as_bytes(), 0), "U+00E9");
        assert_eq!(describe_found("😀".as_bytes(), 0), "U+1F600");
    }

    #[test]
    fn value_descriptions() {
        let d = br#""1.0""#;
        assert_eq!(describe_value(d, JsonType::String, 0, d.len()), "string \"1.0\"");
        assert_eq!(describe_value(b"12", JsonType::Number, 0, 2), "number 12");
        assert_eq!(describe_value(b"true", JsonType::Boolean, 0, 4), "true");
        let long = format!("\"{}\"", "a".repeat(40));
        assert_eq!(
            describe_value(long.as_bytes(), JsonType::String, 0, long.len()),
            "string"
        );
    }
}
