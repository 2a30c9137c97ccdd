//! The verdict: is a value on the tape valid against a node? One walk that stops at the first
//! failure and allocates nothing; `explain.rs` says why, only for the frames that fail.
//!
//! The semantics are JSON Schema 2020-12's, as the reference `jsonschema` package applies them:
//! `integer` is any number with no fraction (`1.0` is one), `const` / `enum` compare numbers by
//! value, keywords about objects, arrays, strings or numbers ignore values of other types, and
//! when a key repeats in an object only its last member counts (as in the dict a JSON parser
//! builds).
//!
//! Mirror: `_fallback/schema/check.py` (`valid`), over dicts and lists.

use super::compile::{
    prop_sig, Compiled, Lit, Node, NodeId, Union, ANY_TYPE, ARRAY, BOOLEAN, F_ARRAY, F_COMPOSITE, F_LITS, F_NUMBER,
    F_OBJECT, F_STRING, INTEGER, NULL, NUMBER, OBJECT, STRING,
};
use super::tape::{bytes_eq, key_is, Entry, Tape};
use crate::error::JsonType;
use crate::scanner::{parse_i64, string_equals, string_text};

/// A walk over one frame's tape.
pub struct Check<'a> {
    pub schema: &'a Compiled,
    pub tape: &'a Tape,
    pub data: &'a [u8],
    /// A value was met that a protocol rule may object to (`rules.rs`): look closer.
    pub rule_hit: bool,
}

/// The type bit of an entry (numbers: `INTEGER` when they have no fraction, else `NUMBER`).
#[inline(always)]
pub fn type_bit(data: &[u8], e: &Entry) -> u8 {
    match e.ty {
        JsonType::Null => NULL,
        JsonType::Boolean => BOOLEAN,
        JsonType::String => STRING,
        JsonType::Array => ARRAY,
        JsonType::Object => OBJECT,
        JsonType::Number => {
            if e.flag || is_integral(data, e) {
                INTEGER
            } else {
                NUMBER
            }
        }
    }
}

#[cold]
fn is_integral(data: &[u8], e: &Entry) -> bool {
    let f = crate::scanner::parse_f64(&data[e.start as usize..e.end as usize]);
    f.is_finite() && f.fract() == 0.0
}

/// Does the entry equal the literal (numbers by value: `1.0` equals `1`)?
pub fn lit_eq(data: &[u8], e: &Entry, lit: &Lit) -> bool {
    match (lit, e.ty) {
        (Lit::Str(s), JsonType::String) => str_eq(data, e, s),
        (Lit::Null, JsonType::Null) => true,
        (Lit::Bool(b), JsonType::Boolean) => *b == e.flag,
        (Lit::Int(i), JsonType::Number) => {
            let lexeme = &data[e.start as usize..e.end as usize];
            match parse_i64(lexeme) {
                Some(v) if e.flag => v == *i,
                _ => same_number(crate::scanner::parse_f64(lexeme), *i as f64),
            }
        }
        (Lit::Float(f), JsonType::Number) => {
            same_number(crate::scanner::parse_f64(&data[e.start as usize..e.end as usize]), *f)
        }
        _ => false,
    }
}

#[inline]
fn same_number(a: f64, b: f64) -> bool {
    a.partial_cmp(&b) == Some(std::cmp::Ordering::Equal)
}

/// The length of a string in characters (code points), as JSON Schema counts it.
pub fn char_len(data: &[u8], e: &Entry) -> usize {
    let mut scratch = Vec::new();
    let text = string_text(data, e.str(), &mut scratch);
    text.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

impl<'a> Check<'a> {
    pub fn new(schema: &'a Compiled, tape: &'a Tape, data: &'a [u8]) -> Self {
        Self {
            schema,
            tape,
            data,
            rule_hit: false,
        }
    }

    #[inline(always)]
    pub fn node(&self, id: NodeId) -> &'a Node {
        &self.schema.nodes[id as usize]
    }

    /// Is the value at `at` valid against node `id`?
    pub fn valid(&mut self, id: NodeId, at: u32) -> bool {
        let mut n = self.node(id);
        if let Some(target) = n.forward {
            n = self.node(target);
        }
        let f = n.flags;
        if f == 0 && n.types == ANY_TYPE {
            return true;
        }
        let e = *self.tape.get(at);
        // (`never` nodes have no type.)
        if n.types & type_bit(self.data, &e) == 0 {
            return false;
        }
        if f == 0 {
            return true;
        }
        if f & F_LITS != 0 && !n.lits.iter().all(|set| set.iter().any(|l| lit_eq(self.data, &e, l))) {
            return false;
        }
        let ok = match e.ty {
            JsonType::Object => f & F_OBJECT == 0 || self.object(n, at),
            JsonType::Array => f & F_ARRAY == 0 || self.array(n, at),
            JsonType::String => f & F_STRING == 0 || self.string(n, &e),
            JsonType::Number => f & F_NUMBER == 0 || self.bounds(n, at),
            _ => true,
        };
        ok && (f & F_COMPOSITE == 0 || self.composite(n, &e, at))
    }

    fn array(&mut self, n: &Node, at: u32) -> bool {
        if let Some(min) = n.min_items {
            if self.tape.children(at).count() < min {
                return false;
            }
        }
        if let Some(items) = n.items {
            for item in self.tape.children(at) {
                if !self.valid(items, item) {
                    return false;
                }
            }
        }
        true
    }

    fn bounds(&self, n: &Node, at: u32) -> bool {
        let f = self.tape.number(self.data, at);
        !(n.minimum.is_some_and(|m| f < m) || n.maximum.is_some_and(|m| f > m))
    }

    /// `$ref`, `allOf`, `anyOf`, `oneOf`, `not` and the rule of `open_prefix`.
    fn composite(&mut self, n: &'a Node, e: &Entry, at: u32) -> bool {
        if let Some(r) = n.reference {
            if !self.valid(r, at) {
                return false;
            }
        }
        for &a in &n.all_of {
            if !self.valid(a, at) {
                return false;
            }
        }
        if let Some(u) = &n.any_of {
            if !self.any_of(u, e, at) {
                return false;
            }
        }
        if let Some(u) = &n.one_of {
            if self.count_valid(u, e, at, 2) != 1 {
                return false;
            }
        }
        if let Some(x) = n.not {
            if self.valid(x, at) {
                return false;
            }
        }
        if n.open_prefix && e.ty == JsonType::String {
            self.rule_hit |= needs_prefix(self.schema, n, self.data, e);
        }
        true
    }

    fn string(&self, n: &Node, e: &Entry) -> bool {
        if n.min_length.is_some() || n.max_length.is_some() {
            let len = char_len(self.data, e);
            if n.min_length.is_some_and(|m| len < m) || n.max_length.is_some_and(|m| len > m) {
                return false;
            }
        }
        if let Some(p) = n.pattern {
            let mut scratch = Vec::new();
            let text = string_text(self.data, e.str(), &mut scratch);
            let text = std::str::from_utf8(text).unwrap_or_default();
            if !self.schema.patterns[p].1.is_match(text) {
                return false;
            }
        }
        true
    }

    fn object(&mut self, n: &Node, at: u32) -> bool {
        for name in &n.required_other {
            if self.tape.member(self.data, at, name.as_bytes()).is_none() {
                return false;
            }
        }
        if !n.excluded_keys.is_empty() {
            let excluded = |child: u32| {
                let e = self.tape.get(child);
                n.excluded_keys.iter().any(|k| key_is(self.data, e, k.as_bytes()))
            };
            if self.tape.children(at).any(excluded) {
                return false;
            }
        }
        if n.properties.is_empty() && n.additional.is_none() {
            return true;
        }
        let end = self.tape.get(at).next;
        let mut seen = 0u64;
        for child in self.tape.children(at) {
            let e = self.tape.get(child);
            let found = if e.key_escaped {
                n.properties
                    .iter()
                    .position(|(k, _)| key_is(self.data, e, k.as_bytes()))
            } else {
                let key = &self.data[e.key_start as usize..e.key_end as usize];
                let sig = prop_sig(key);
                n.prop_sigs
                    .iter()
                    .zip(&n.properties)
                    .position(|(&s, (k, _))| s == sig && bytes_eq(k.as_bytes(), key))
            };
            let target = match found {
                Some(i) => {
                    seen |= 1u64.checked_shl(i as u32).unwrap_or(0);
                    Some(n.properties[i].1)
                }
                None => n.additional,
            };
            if let Some(target) = target {
                // A member repeated later does not count (unlikely: checked only on failure).
                if !self.valid(target, child) && self.tape.is_last_of_key(self.data, child, end) {
                    return false;
                }
            }
        }
        seen & n.required_mask == n.required_mask
    }

    /// The branches worth trying, in order: with a tag and an object, the branches its tag
    /// value names, then the untagged ones; else every branch.
    pub fn candidates(&self, u: &Union, e: &Entry, at: u32) -> Vec<usize> {
        match (&u.tag, e.ty) {
            (Some(tag), JsonType::Object) => {
                let value = self.tag_value(&tag.key, at);
                let hit = tag
                    .tagged
                    .iter()
                    .filter(|(t, _)| value.is_some_and(|v| str_eq(self.data, &v, t)));
                hit.map(|(_, i)| *i).chain(tag.untagged.iter().copied()).collect()
            }
            _ => (0..u.branches.len()).collect(),
        }
    }

    #[inline(always)]
    fn tag_value(&self, key: &str, at: u32) -> Option<Entry> {
        let m = self.tape.member(self.data, at, key.as_bytes())?;
        let v = *self.tape.get(m);
        (v.ty == JsonType::String).then_some(v)
    }

    fn any_of(&mut self, u: &'a Union, e: &Entry, at: u32) -> bool {
        self.count_valid(u, e, at, 1) == 1
    }

    /// How many branches are valid, counting up to `limit`.
    pub fn count_valid(&mut self, u: &'a Union, e: &Entry, at: u32, limit: usize) -> usize {
        if let Some(lits) = &u.lits {
            let hits = lits.iter().filter(|l| lit_eq(self.data, e, l)).count();
            return hits.min(limit);
        }
        let mut count = 0;
        if let (Some(tag), JsonType::Object) = (&u.tag, e.ty) {
            if let Some(v) = self.tag_value(&tag.key, at) {
                for (t, i) in &tag.tagged {
                    if str_eq(self.data, &v, t) && self.valid(u.branches[*i], at) {
                        count += 1;
                        if count >= limit {
                            return count;
                        }
                    }
                }
            }
            for &i in &tag.untagged {
                if self.valid(u.branches[i], at) {
                    count += 1;
                    if count >= limit {
                        return count;
                    }
                }
            }
            return count;
        }
        for &b in &u.branches {
            if self.valid(b, at) {
                count += 1;
                if count >= limit {
                    return count;
                }
            }
        }
        count
    }
}

/// (`rules.rs`) The constants an extensible enumeration lists.
pub fn listed(c: &Compiled, n: &Node) -> Vec<Lit> {
    let mut out = Vec::new();
    for u in [&n.any_of, &n.one_of].into_iter().flatten() {
        for &b in &u.branches {
            if let [set] = c.nodes[b as usize].lits.as_slice() {
                out.extend(set.iter().cloned());
            }
        }
    }
    out
}

/// (`rules.rs`) Is the string `e` a custom value (not listed) that does not begin with `_`?
pub fn needs_prefix(c: &Compiled, n: &Node, data: &[u8], e: &Entry) -> bool {
    if data.get(e.start as usize) == Some(&b'_') && !e.flag {
        return false;
    }
    let mut scratch = Vec::new();
    if string_text(data, e.str(), &mut scratch).first() == Some(&b'_') {
        return false;
    }
    !listed(c, n)
        .iter()
        .any(|l| matches!(l, Lit::Str(s) if str_eq(data, e, s)))
}

/// Does the string entry equal `s`?
#[inline(always)]
pub fn str_eq(data: &[u8], e: &Entry, s: &str) -> bool {
    if e.flag {
        string_equals(data, e.str(), s.as_bytes())
    } else {
        super::tape::bytes_eq(&data[e.start as usize..e.end as usize], s.as_bytes())
    }
}
