//! The tape: a frame read once by the scanner into a flat array of values, so that the checks can
//! visit a value several times (the branches of a union) without reading its bytes again.
//!
//! Each entry is one value in document order; a container's children follow it, and `next` is
//! the index just past its last descendant (for a scalar, its own index + 1). A member of an
//! object carries its key. Nothing is copied out of the frame: strings, numbers and keys are
//! byte ranges of it.
//!
//! Mirror: none. The fallback's checks walk the dicts and lists that orjson builds
//! (`_fallback/schema/check.py`), which play the part of the tape.

use crate::error::{DecodeError, JsonType};
use crate::scanner::{self, parse_f64, string_equals, string_text, Number, Scanner, Sink, Str};

/// One value of the tape (24 bytes).
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub ty: JsonType,
    /// Numbers: no fraction and no exponent. Strings: the content has escapes.
    pub flag: bool,
    /// The member's key has escapes.
    pub key_escaped: bool,
    pub key_start: u32,
    pub key_end: u32,
    /// Strings: the content (quotes excluded); numbers: the lexeme; literals: `true`/`false`.
    pub start: u32,
    pub end: u32,
    /// Index just past this value and its descendants.
    pub next: u32,
}

/// A frame read into entries (reused from frame to frame: `read` clears it).
#[derive(Debug, Default)]
pub struct Tape {
    pub entries: Vec<Entry>,
}

const NO_KEY: u32 = u32::MAX;

impl Entry {
    fn new(ty: JsonType, start: usize, end: usize, next: usize) -> Self {
        Self {
            ty,
            flag: false,
            key_escaped: false,
            key_start: NO_KEY,
            key_end: NO_KEY,
            start: start as u32,
            end: end as u32,
            next: next as u32,
        }
    }

    /// The string token of a string value.
    #[inline(always)]
    pub fn str(&self) -> Str {
        Str {
            start: self.start as usize,
            end: self.end as usize,
            escaped: self.flag,
        }
    }

    /// The key token of an object member.
    #[inline(always)]
    pub fn key(&self) -> Str {
        Str {
            start: self.key_start as usize,
            end: self.key_end as usize,
            escaped: self.key_escaped,
        }
    }
}

struct Writer<'t> {
    entries: &'t mut Vec<Entry>,
}

impl Sink for Writer<'_> {
    type Value = u32;
    type Array = u32;
    type Object = u32;

    #[inline(always)]
    fn null(&mut self) -> u32 {
        self.scalar(Entry::new(JsonType::Null, 0, 0, 0))
    }
    #[inline(always)]
    fn boolean(&mut self, value: bool) -> u32 {
        let mut e = Entry::new(JsonType::Boolean, 0, 0, 0);
        e.flag = value;
        self.scalar(e)
    }
    #[inline(always)]
    fn number(&mut self, _: &[u8], n: Number) -> u32 {
        let mut e = Entry::new(JsonType::Number, n.start, n.end, 0);
        e.flag = n.is_int;
        self.scalar(e)
    }
    #[inline(always)]
    fn string(&mut self, _: &[u8], s: Str) -> u32 {
        let mut e = Entry::new(JsonType::String, s.start, s.end, 0);
        e.flag = s.escaped;
        self.scalar(e)
    }
    #[inline(always)]
    fn array_start(&mut self) -> u32 {
        self.scalar(Entry::new(JsonType::Array, 0, 0, 0))
    }
    #[inline(always)]
    fn array_push(&mut self, _: &mut u32, _: u32) {}
    #[inline(always)]
    fn array_end(&mut self, at: u32) -> u32 {
        self.entries[at as usize].next = self.entries.len() as u32;
        at
    }
    #[inline(always)]
    fn object_start(&mut self) -> u32 {
        self.scalar(Entry::new(JsonType::Object, 0, 0, 0))
    }
    #[inline(always)]
    fn object_insert(&mut self, _: &mut u32, _: &[u8], key: Str, value: u32) {
        let e = &mut self.entries[value as usize];
        e.key_start = key.start as u32;
        e.key_end = key.end as u32;
        e.key_escaped = key.escaped;
    }
    #[inline(always)]
    fn object_end(&mut self, at: u32) -> u32 {
        self.entries[at as usize].next = self.entries.len() as u32;
        at
    }
}

impl Writer<'_> {
    #[inline(always)]
    fn scalar(&mut self, mut e: Entry) -> u32 {
        let at = self.entries.len() as u32;
        e.next = at + 1;
        self.entries.push(e);
        at
    }
}

impl Tape {
    /// Read one JSON document (UTF-8 and grammar checked, as `scanner::validate` does).
    pub fn read(&mut self, data: &[u8]) -> Result<(), DecodeError> {
        self.entries.clear();
        scanner::check_utf8(data)?;
        Scanner::new(data).parse_document(&mut Writer {
            entries: &mut self.entries,
        })?;
        Ok(())
    }

    #[inline(always)]
    pub fn get(&self, at: u32) -> &Entry {
        &self.entries[at as usize]
    }

    /// The children of the container at `at` (members or items), as indices.
    #[inline(always)]
    pub fn children(&self, at: u32) -> Children<'_> {
        Children {
            tape: self,
            at: at + 1,
            end: self.entries[at as usize].next,
        }
    }

    /// The member `key` of the object at `at` (the last one when the key repeats, as a JSON
    /// parser building a dict keeps it).
    #[inline]
    pub fn member(&self, data: &[u8], at: u32, key: &[u8]) -> Option<u32> {
        let mut found = None;
        for child in self.children(at) {
            if key_is(data, self.get(child), key) {
                found = Some(child);
            }
        }
        found
    }

    /// Is the member at `child` the last of its object with its key?
    pub fn is_last_of_key(&self, data: &[u8], child: u32, end: u32) -> bool {
        let e = self.get(child);
        let mut scratch = Vec::new();
        let key = string_text(data, e.key(), &mut scratch).to_vec();
        let mut at = e.next;
        while at < end {
            let other = self.get(at);
            if key_is(data, other, &key) {
                return false;
            }
            at = other.next;
        }
        true
    }

    /// The number of a number entry as `f64`.
    #[inline]
    pub fn number(&self, data: &[u8], at: u32) -> f64 {
        let e = self.get(at);
        parse_f64(&data[e.start as usize..e.end as usize])
    }
}

/// Does the member entry `e` have the key `key`?
#[inline(always)]
pub fn key_is(data: &[u8], e: &Entry, key: &[u8]) -> bool {
    if e.key_escaped {
        return string_equals(data, e.key(), key);
    }
    let (s, t) = (e.key_start as usize, e.key_end as usize);
    t - s == key.len() && bytes_eq(&data[s..t], key)
}

/// Equal slices of equal length (keys are short: a loop beats a call to `memcmp`).
#[inline(always)]
pub fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Indices of the children of a container.
pub struct Children<'t> {
    tape: &'t Tape,
    at: u32,
    end: u32,
}

impl Iterator for Children<'_> {
    type Item = u32;
    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        if self.at >= self.end {
            return None;
        }
        let at = self.at;
        self.at = self.tape.entries[at as usize].next;
        Some(at)
    }
}
