//! The JSON grammar (RFC 8259, strict): validation, skipping, locating values and unescaping.
//!
//! One recursive-descent parser, generic over a [`Sink`] that receives the values. The no-op
//! [`Skip`] sink turns it into a validator that allocates nothing; the binding layer plugs in a
//! sink that builds Python objects, so validation and building are one pass.
//!
//! This file holds the tokens, the [`Sink`] trait and the document (UTF-8 check, [`validate`],
//! `Scanner::parse_document`); the parser is in the sub-modules, in reading order:
//!
//! - `index`: the index of special bytes, built in one SIMD pass before parsing.
//! - `cursor`: the [`Scanner`] (position, depth, whitespace, expected bytes, errors).
//! - `grammar`: values, arrays, objects, literals.
//! - `strings`: strings and escapes, unescaping, the text of a string token.
//! - `numbers`: number lexemes and their conversion.
//!
//! Everything public is re-exported here: `crate::scanner::X` is the one path to use. Error
//! kinds, descriptions and positions are fixed in docs/DESIGN.md §2.
//!
//! Mirror: `python/acp_fast/_fallback/scanner/`, with the same module names where the fallback
//! has the piece. On purpose, the tokens, the sinks and `index` are Rust only: the fallback's
//! scanner returns offsets and only validates (orjson builds the values), and skips string bodies
//! with regular expressions. Its `check_utf8` and `validate` are in its `grammar.py` (its package
//! `__init__` only re-exports, so that the modules can import one another). The fallback alone
//! has `members.py` (members and items of a frame already known to be valid; here they are
//! located while parsing, in `message.rs` and `state.rs`) and `build.py` (values orjson cannot
//! build, `loads`; here the sink of `rust/python/convert.rs` and `loads` in
//! `rust/python/frames.rs`).
//
// Code layout: the library's machine code is laid out in the order of the (mangled) symbol names,
// so module and item paths decide where each function lands and how its hot loops are aligned,
// and that moves the Python-level benchmarks by several percent (benches/RESULTS.md, "Layout of
// the scanner split"). Hence the tokens and `Sink` stay here (the path of `Sink` is part of the
// symbol names of every sink's methods), and the items in this file and the module names (which
// sort `index` first and `numbers`, `strings` after `grammar`) were chosen, by measurement, so that
// the wheel maturin builds keeps `build_special_index_avx2` and `parse_object` aligned as before
// the split. Check a change here with `benches/ab.py` on two `maturin build` wheels.

mod cursor;
mod grammar;
mod index;
mod numbers;
mod strings;

pub use cursor::{Scanner, MAX_DEPTH};
pub(crate) use grammar::{STACK_GROW, STACK_RED_ZONE};
pub use numbers::{parse_f64, parse_i64, parse_u64, MAX_INT_DIGITS};
pub use strings::{string_equals, string_text, unescape_into};

use crate::error::DecodeError;

/// A string token: `start..end` is the content between the quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Str {
    pub start: usize,
    pub end: usize,
    /// The content holds at least one backslash escape.
    pub escaped: bool,
}

/// A number token: `start..end` is the lexeme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Number {
    pub start: usize,
    pub end: usize,
    /// No fraction and no exponent.
    pub is_int: bool,
}

/// Receives the values the parser reads. Building cannot fail: the grammar is checked first.
pub trait Sink {
    type Value;
    type Array;
    type Object;
    fn null(&mut self) -> Self::Value;
    fn boolean(&mut self, value: bool) -> Self::Value;
    fn number(&mut self, data: &[u8], number: Number) -> Self::Value;
    fn string(&mut self, data: &[u8], string: Str) -> Self::Value;
    fn array_start(&mut self) -> Self::Array;
    fn array_push(&mut self, array: &mut Self::Array, value: Self::Value);
    fn array_end(&mut self, array: Self::Array) -> Self::Value;
    fn object_start(&mut self) -> Self::Object;
    fn object_insert(&mut self, object: &mut Self::Object, data: &[u8], key: Str, value: Self::Value);
    fn object_end(&mut self, object: Self::Object) -> Self::Value;
}

/// The sink that keeps nothing: parsing with it only validates.
pub struct Skip;

impl Sink for Skip {
    type Value = ();
    type Array = ();
    type Object = ();
    #[inline(always)]
    fn null(&mut self) {}
    #[inline(always)]
    fn boolean(&mut self, _: bool) {}
    #[inline(always)]
    fn number(&mut self, _: &[u8], _: Number) {}
    #[inline(always)]
    fn string(&mut self, _: &[u8], _: Str) {}
    #[inline(always)]
    fn array_start(&mut self) {}
    #[inline(always)]
    fn array_push(&mut self, (): &mut (), (): ()) {}
    #[inline(always)]
    fn array_end(&mut self, (): ()) {}
    #[inline(always)]
    fn object_start(&mut self) {}
    #[inline(always)]
    fn object_insert(&mut self, (): &mut (), _: &[u8], _: Str, (): ()) {}
    #[inline(always)]
    fn object_end(&mut self, (): ()) {}
}

/// Check that the whole input is UTF-8 (the first check of DESIGN §2.1).
pub fn check_utf8(data: &[u8]) -> Result<(), DecodeError> {
    if simdutf8::basic::from_utf8(data).is_ok() {
        return Ok(());
    }
    let at = match simdutf8::compat::from_utf8(data) {
        Err(e) => e.valid_up_to(),
        Ok(_) => 0,
    };
    Err(DecodeError::json(
        "invalid_utf8",
        format!("invalid UTF-8 byte 0x{:02X}", data[at]),
        at,
    ))
}

/// Validate a whole document (UTF-8, BOM, grammar, nothing after the value).
pub fn validate(data: &[u8]) -> Result<(), DecodeError> {
    check_utf8(data)?;
    Scanner::new(data).parse_document(&mut Skip)
}

impl<'a> Scanner<'a> {
    /// One value surrounded by whitespace and nothing else.
    pub fn parse_document<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, DecodeError> {
        if self.data.starts_with(b"\xEF\xBB\xBF") {
            return Err(DecodeError::json(
                "bom",
                "unexpected UTF-8 byte order mark".to_owned(),
                0,
            ));
        }
        let value = self.parse_value(sink)?;
        self.finish()?;
        Ok(value)
    }
}
