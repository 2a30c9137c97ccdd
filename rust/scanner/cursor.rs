//! The cursor: a [`Scanner`] over a UTF-8-checked input (position, nesting depth, the index of
//! special bytes), whitespace, expected bytes, and the error for an unexpected byte.
//!
//! Mirror: `_fallback/scanner/cursor.py`. The fallback has no cursor object, on purpose: its
//! functions take `(data, pos)` and return the next offset, and the first error leaves in a
//! `_Fail` exception where Rust returns `Result`. `peek`, `expect`, `enter`/`leave` and
//! `peek_type` are Rust only (the fallback's grammar loop does their work inline).

use super::index::SpecialIndex;
use crate::error::{describe_found, DecodeError, JsonType};

/// Deepest nesting of arrays/objects accepted (orjson's limit): the one nesting limit of the
/// library, for what it reads (frames, `loads`) and what it writes (`dumps`, `encode`, a
/// checkpoint's values; `encoder::MAX_DEPTH` is this one).
pub const MAX_DEPTH: u32 = 1024;

/// Cursor over a UTF-8-checked input.
pub struct Scanner<'a> {
    pub data: &'a [u8],
    pub pos: usize,
    pub depth: u32,
    /// Deepest nesting accepted: `MAX_DEPTH`, more for a document that wraps values in levels of
    /// its own (a checkpoint, `state::checkpoint::MAX_DEPTH`).
    pub max_depth: u32,
    pub(super) index: SpecialIndex,
}

#[cold]
#[inline(never)]
pub(super) fn unexpected(data: &[u8], pos: usize, what: &str) -> DecodeError {
    if pos >= data.len() {
        DecodeError::json("eof", format!("expected {what}, found end of input"), data.len())
    } else {
        DecodeError::json(
            "unexpected_character",
            format!("expected {what}, found {}", describe_found(data, pos)),
            pos,
        )
    }
}

#[inline(always)]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl<'a> Scanner<'a> {
    #[inline(always)]
    pub fn new(data: &'a [u8]) -> Self {
        let mut scanner = Self::unindexed(data);
        scanner.build_index();
        scanner
    }

    /// A scanner whose index is not built yet: call `build_index` once it is in its final place
    /// (building it before moving the scanner costs a copy of the inline index).
    #[inline(always)]
    pub fn unindexed(data: &'a [u8]) -> Self {
        Self {
            data,
            pos: 0,
            depth: 0,
            max_depth: MAX_DEPTH,
            index: SpecialIndex::empty(data.len()),
        }
    }

    /// Build the index (see `unindexed`).
    #[inline(always)]
    pub fn build_index(&mut self) {
        self.index.fill(self.data);
    }

    /// After the value: only whitespace may follow.
    pub fn finish(&mut self) -> Result<(), DecodeError> {
        self.skip_ws();
        if self.pos < self.data.len() {
            return Err(unexpected(self.data, self.pos, "end of input"));
        }
        Ok(())
    }

    #[inline(always)]
    pub fn skip_ws(&mut self) {
        // Compact JSON has no whitespace: one compare settles the common case.
        if let Some(&b) = self.data.get(self.pos) {
            if b > b' ' {
                return;
            }
        }
        self.skip_ws_slow();
    }

    #[inline(never)]
    fn skip_ws_slow(&mut self) {
        while let Some(&b) = self.data.get(self.pos) {
            if !is_ws(b) {
                break;
            }
            self.pos += 1;
        }
    }

    /// Next non-whitespace byte (the cursor is left on it).
    #[inline(always)]
    pub fn peek(&mut self) -> Option<u8> {
        if let Some(&b) = self.data.get(self.pos) {
            if b > b' ' {
                return Some(b);
            }
        }
        self.skip_ws_slow();
        self.data.get(self.pos).copied()
    }

    /// Consume `byte` after whitespace, or fail with "expected {what}".
    #[inline(always)]
    pub fn expect(&mut self, byte: u8, what: &str) -> Result<(), DecodeError> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(unexpected(self.data, self.pos, what))
        }
    }

    /// Enter an array/object whose bracket is at `self.pos`.
    #[inline(always)]
    pub fn enter(&mut self) -> Result<(), DecodeError> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(DecodeError::json(
                "depth_limit",
                format!("nesting deeper than {} levels", self.max_depth),
                self.pos,
            ));
        }
        self.pos += 1;
        Ok(())
    }

    #[inline(always)]
    pub fn leave(&mut self) {
        self.depth -= 1;
    }

    /// The JSON type of the value starting at the next non-whitespace byte, if it can start one.
    #[inline(always)]
    pub fn peek_type(&mut self) -> Option<JsonType> {
        Some(match self.peek()? {
            b'{' => JsonType::Object,
            b'[' => JsonType::Array,
            b'"' => JsonType::String,
            b't' | b'f' => JsonType::Boolean,
            b'n' => JsonType::Null,
            b'-' | b'0'..=b'9' => JsonType::Number,
            _ => return None,
        })
    }
}
