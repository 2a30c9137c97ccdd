//! Values: one recursive-descent parser over the grammar of docs/DESIGN.md §2 (value, array,
//! object, literal), generic over a `Sink`. The document around the value (UTF-8, BOM, nothing
//! after it) is in `mod.rs`.
//!
//! Mirror: `_fallback/scanner/grammar.py`, which differs on purpose: its `parse_value` is
//! iterative (an explicit stack instead of recursion: no stack growth, no `parse_item`,
//! `parse_array`, `parse_object`), only validates (values are built by orjson or `build.py`) and
//! jumps over runs of simple members with regular expressions; its `skip_value` reads input
//! already known to be valid (this one validates). It also holds the fallback's `check_utf8` and
//! `validate`, with `parse_document` (BOM, value, end) inline in `validate`: the fallback's
//! `parse_document` is the build after orjson refused (`build.py`).

use super::cursor::{unexpected, Scanner};
use super::{Sink, Skip};
use crate::error::{DecodeError, JsonType};

/// Stack kept free below a container before descending into it, and the size of a new stack
/// segment when there is less (see `stacker::maybe_grow`; the writers use them too,
/// `encoder::descend`).
pub(crate) const STACK_RED_ZONE: usize = 64 * 1024;
pub(crate) const STACK_GROW: usize = 1024 * 1024;

impl<'a> Scanner<'a> {
    /// Parse any value into `sink`.
    pub fn parse_value<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, DecodeError> {
        match self.peek() {
            Some(b'"') => {
                let s = self.scan_string()?;
                Ok(sink.string(self.data, s))
            }
            // Containers recurse. Every 8 levels, make sure at least 64 KiB of stack is left for
            // the next 8, growing a new segment when a (small) thread stack runs low, so 1024
            // levels never overflow. (Checking every level cost a thread-local lookup each.)
            Some(b'{') if self.depth.is_multiple_of(8) => {
                stacker::maybe_grow(STACK_RED_ZONE, STACK_GROW, || self.parse_object(sink))
            }
            Some(b'[') if self.depth.is_multiple_of(8) => {
                stacker::maybe_grow(STACK_RED_ZONE, STACK_GROW, || self.parse_array(sink))
            }
            Some(b'{') => self.parse_object(sink),
            Some(b'[') => self.parse_array(sink),
            Some(b'-' | b'0'..=b'9') => {
                let n = self.scan_number()?;
                Ok(sink.number(self.data, n))
            }
            Some(b't') => {
                self.literal(b"true", "'true'")?;
                Ok(sink.boolean(true))
            }
            Some(b'f') => {
                self.literal(b"false", "'false'")?;
                Ok(sink.boolean(false))
            }
            Some(b'n') => {
                self.literal(b"null", "'null'")?;
                Ok(sink.null())
            }
            _ => Err(unexpected(self.data, self.pos, "a JSON value")),
        }
    }

    /// `parse_value` for an item of an array or object: strings, the most frequent items, are
    /// scanned in the caller's loop (no call per string).
    #[inline(always)]
    fn parse_item<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, DecodeError> {
        if self.peek() == Some(b'"') {
            let s = self.scan_string()?;
            return Ok(sink.string(self.data, s));
        }
        self.parse_value(sink)
    }

    /// Skip one value, returning its type (validation only).
    #[inline]
    pub fn skip_value(&mut self) -> Result<JsonType, DecodeError> {
        let ty = self.peek_type();
        self.parse_value(&mut Skip)?;
        Ok(ty.unwrap_or(JsonType::Null))
    }

    fn literal(&mut self, word: &[u8], what: &str) -> Result<(), DecodeError> {
        for (i, &b) in word.iter().enumerate() {
            if self.data.get(self.pos + i) != Some(&b) {
                return Err(unexpected(self.data, self.pos + i, what));
            }
        }
        self.pos += word.len();
        Ok(())
    }

    fn parse_array<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, DecodeError> {
        self.enter()?;
        let mut array = sink.array_start();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.leave();
            return Ok(sink.array_end(array));
        }
        loop {
            let v = self.parse_item(sink)?;
            sink.array_push(&mut array, v);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    self.leave();
                    return Ok(sink.array_end(array));
                }
                _ => return Err(unexpected(self.data, self.pos, "',' or ']'")),
            }
        }
    }

    fn parse_object<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, DecodeError> {
        self.enter()?;
        let mut object = sink.object_start();
        match self.peek() {
            Some(b'}') => {
                self.pos += 1;
                self.leave();
                return Ok(sink.object_end(object));
            }
            Some(b'"') => {}
            _ => return Err(unexpected(self.data, self.pos, "a string key")),
        }
        loop {
            let key = self.scan_string()?;
            self.expect(b':', "':'")?;
            let v = self.parse_item(sink)?;
            sink.object_insert(&mut object, self.data, key, v);
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    if self.peek() != Some(b'"') {
                        return Err(unexpected(self.data, self.pos, "a string key"));
                    }
                }
                Some(b'}') => {
                    self.pos += 1;
                    self.leave();
                    return Ok(sink.object_end(object));
                }
                _ => return Err(unexpected(self.data, self.pos, "',' or '}'")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scanner::validate;

    fn err(input: &[u8]) -> DecodeError {
        validate(input).expect_err("should fail")
    }

    #[test]
    fn accepts() {
        for s in [
            "0",
            "-0",
            "1.5e+10",
            "[]",
            "{}",
            r#"{"a":[1,2,{"b":null}]}"#,
            r#""\ud83d\ude00""#,
            "\"\u{7f}é\"",
            " \t\r\n true ",
            r#""\u0000""#,
            r#"{"a":1,"a":2}"#,
            "1e-400",
        ] {
            validate(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e}"));
        }
    }

    #[test]
    fn rejects_with_positions() {
        let cases: &[(&[u8], &str, usize, &str)] = &[
            (b"", "eof", 0, "expected a JSON value, found end of input"),
            (b"  ", "eof", 2, "expected a JSON value, found end of input"),
            (b"[1,]", "unexpected_character", 3, "expected a JSON value, found ']'"),
            (
                b"{\"a\":1,}",
                "unexpected_character",
                7,
                "expected a string key, found '}'",
            ),
            (b"{\"a\" 1}", "unexpected_character", 5, "expected ':', found '1'"),
            (b"01", "unexpected_character", 1, "expected end of input, found '1'"),
            (b"-a", "unexpected_character", 1, "expected a digit, found 'a'"),
            (b"1.", "eof", 2, "expected a digit, found end of input"),
            (b"tx", "unexpected_character", 1, "expected 'true', found 'x'"),
            (b"nul", "eof", 3, "expected 'null', found end of input"),
            (
                b"\"a\tb\"",
                "control_character",
                2,
                "expected an escaped control character in a string, found U+0009",
            ),
            (
                b"\"abc",
                "eof",
                4,
                "expected '\"' to close the string, found end of input",
            ),
            (
                b"\"\\x\"",
                "invalid_escape",
                2,
                r#"expected an escape sequence (\" \\ \/ \b \f \n \r \t \uXXXX), found 'x'"#,
            ),
            (
                b"\"\\u12g4\"",
                "invalid_unicode_escape",
                5,
                "expected 4 hex digits after \\u, found 'g'",
            ),
            (
                b"\"\\u12",
                "eof",
                5,
                "expected 4 hex digits after \\u, found end of input",
            ),
            (
                b"\"\\ud800\"",
                "lone_surrogate",
                1,
                "expected a low surrogate escape after \\ud800, found '\"'",
            ),
            (
                b"\"\\ud800\\u0041\"",
                "lone_surrogate",
                1,
                "expected a low surrogate escape after \\ud800, found \\u0041",
            ),
            (
                b"\"\\ud800",
                "lone_surrogate",
                1,
                "expected a low surrogate escape after \\ud800, found end of input",
            ),
            (
                b"\"\\uDC00\"",
                "lone_surrogate",
                1,
                "unexpected low surrogate escape \\uDC00",
            ),
            (b"1e400", "number_out_of_range", 0, "number out of range"),
            (b"[-1e400]", "number_out_of_range", 1, "number out of range"),
            (b"\xEF\xBB\xBF{}", "bom", 0, "unexpected UTF-8 byte order mark"),
            (b"\"\xff\"", "invalid_utf8", 1, "invalid UTF-8 byte 0xFF"),
            (b"[1 2]", "unexpected_character", 3, "expected ',' or ']', found '2'"),
        ];
        for &(input, kind, pos, desc) in cases {
            let e = err(input);
            assert_eq!(
                (e.kind, e.position, e.description.as_str()),
                (kind, Some(pos), desc),
                "{input:?}"
            );
            assert_eq!(e.code, crate::error::PARSE_ERROR);
        }
    }

    #[test]
    fn depth_limit() {
        // Debug builds use large frames; give the recursion the room a release build never needs.
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(depth_limit_body)
            .unwrap()
            .join()
            .unwrap();
    }

    fn depth_limit_body() {
        let ok = format!("{}{}", "[".repeat(1024), "]".repeat(1024));
        validate(ok.as_bytes()).unwrap();
        let bad = format!("{}{}", "[".repeat(1025), "]".repeat(1025));
        let e = err(bad.as_bytes());
        assert_eq!((e.kind, e.position), ("depth_limit", Some(1024)));
        let objects = format!("{}1{}", "{\"a\":".repeat(1024), "}".repeat(1024));
        validate(objects.as_bytes()).unwrap();
    }
}
