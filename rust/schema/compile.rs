//! The compiler: a JSON Schema document (the official ACP `schema.json`, draft 2020-12) into a
//! table of [`Node`]s, one per (sub)schema, that the checks walk.
//!
//! Only what the ACP schemas use is understood; a keyword outside that set is an error at
//! compile time (never a silent pass): `type`, `const`, `enum`, `minimum`, `maximum`,
//! `minItems`, `minLength`, `maxLength`, `pattern`, `properties`, `required`, `additionalProperties`,
//! `propertyNames` (only as `not` of string constants: the names an object must not have),
//! `unevaluatedProperties: true`, `items`, `allOf`, `anyOf`, `oneOf`, `not`, `$ref` to
//! `#/$defs/...`. Annotations are skipped: `format` (JSON Schema 2020-12 does not assert it, and
//! neither does the reference `jsonschema` package by default), `title`, `description`,
//! `default`, `contentEncoding`, `discriminator`, `examples` and the `x-` extensions.
//!
//! Unions whose branches are objects tagged by one member holding a constant (`"type": "text"`,
//! `"sessionUpdate": "tool_call"`, ...) get a [`Tag`]: the checks go straight to the branch the
//! tag names instead of trying every branch.
//!
//! Mirror: `_fallback/schema/compile.py`, the same nodes as Python objects. Rust only, on
//! purpose: the shortcuts of the verdict (`flags`, `forward`, `prop_sigs`, `required_mask` /
//! `required_other`, `Union::lits`), which the fallback's verdict (jsonschema-rs or jsonschema)
//! has no use for.

use std::collections::HashMap;

use super::tape::{Entry, Tape};
use crate::error::JsonType;
use crate::scanner::{parse_f64, parse_i64, string_text};

pub type NodeId = u32;

/// JSON Schema types, as bits.
pub const NULL: u8 = 1;
pub const BOOLEAN: u8 = 2;
pub const INTEGER: u8 = 4;
pub const NUMBER: u8 = 8;
pub const STRING: u8 = 16;
pub const ARRAY: u8 = 32;
pub const OBJECT: u8 = 64;
pub const ANY_TYPE: u8 = 127;

/// The names of the type bits, in the order messages list them.
pub const TYPE_NAMES: [(u8, &str); 7] = [
    (OBJECT, "object"),
    (ARRAY, "array"),
    (STRING, "string"),
    (INTEGER, "integer"),
    (NUMBER, "number"),
    (BOOLEAN, "boolean"),
    (NULL, "null"),
];

/// `Node::flags`.
pub const F_LITS: u16 = 1;
pub const F_OBJECT: u16 = 2;
pub const F_ARRAY: u16 = 4;
pub const F_STRING: u16 = 8;
pub const F_NUMBER: u16 = 16;
/// `$ref`, `allOf`, `anyOf`, `oneOf`, `not` or the rule of `open_prefix`.
pub const F_COMPOSITE: u16 = 32;

/// A `const` / `enum` value.
#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Box<str>),
}

/// One (sub)schema.
#[derive(Debug, Clone, Default)]
pub struct Node {
    /// The allowed types (`ANY_TYPE` when the schema has no `type`).
    pub types: u8,
    /// The `false` schema: nothing is valid.
    pub never: bool,
    /// No keyword that asserts anything: everything is valid.
    pub trivial: bool,
    /// `const` (one value) and `enum`: each list must hold the value.
    pub lits: Vec<Vec<Lit>>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub min_items: Option<usize>,
    pub min_length: Option<usize>,
    pub max_length: Option<usize>,
    /// Index into `Compiled::patterns`.
    pub pattern: Option<usize>,
    pub properties: Vec<(Box<str>, NodeId)>,
    pub required: Vec<Box<str>>,
    /// `propertyNames: {"not": {"const" | "enum": ...}}`: the member names not allowed.
    pub excluded_keys: Vec<Box<str>>,
    /// The required members that are `properties` (bit i: `properties[i]`, i < 64)...
    pub required_mask: u64,
    /// ... and the others.
    pub required_other: Vec<Box<str>>,
    /// `prop_sig(key)` of each of `properties`: a member whose signature differs is not it.
    pub prop_sigs: Vec<u32>,
    /// Which groups of keywords the node has (`F_*`): the verdict skips the others at once.
    pub flags: u16,
    /// A node that only refers to another (`{"allOf": [{"$ref": ...}]}`): the verdict of that one.
    pub forward: Option<NodeId>,
    /// `additionalProperties` (None: any member is allowed).
    pub additional: Option<NodeId>,
    pub items: Option<NodeId>,
    pub all_of: Vec<NodeId>,
    pub any_of: Option<Union>,
    pub one_of: Option<Union>,
    pub not: Option<NodeId>,
    pub reference: Option<NodeId>,
    /// This node is `$defs[name]`: index into `Compiled::def_names`.
    pub def: Option<usize>,
    /// `x-method`: the method whose params or result this definition is.
    pub method: Option<Box<str>>,
    /// A protocol rule applies to string values this extensible enumeration does not list
    /// (`rules.rs`: they must begin with `_`).
    pub open_prefix: bool,
}

/// The branches of an `anyOf` / `oneOf`.
#[derive(Debug, Clone, Default)]
pub struct Union {
    pub branches: Vec<NodeId>,
    pub tag: Option<Tag>,
    /// Every branch is one constant (`{"type": "string", "const": "read"}`): the constants.
    pub lits: Option<Vec<Lit>>,
}

/// A union of objects told apart by one member holding a string constant.
#[derive(Debug, Clone, Default)]
pub struct Tag {
    pub key: Box<str>,
    /// (tag value, branch index), in branch order.
    pub tagged: Vec<(Box<str>, usize)>,
    /// Branches without a tag of that key (an open "other" branch): always tried.
    pub untagged: Vec<usize>,
}

/// A compiled schema document.
#[derive(Debug, Default)]
pub struct Compiled {
    pub nodes: Vec<Node>,
    pub def_names: Vec<Box<str>>,
    pub defs: HashMap<Box<str>, NodeId>,
    pub patterns: Vec<(Box<str>, regex_lite::Regex)>,
}

const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "format",
    "contentEncoding",
    "contentMediaType",
    "discriminator",
    "deprecated",
    "readOnly",
    "writeOnly",
];

struct Compiler<'a> {
    data: &'a [u8],
    tape: &'a Tape,
    out: Compiled,
    scratch: Vec<u8>,
}

/// Compile the schema document `text` (its `$defs` become named nodes, reachable by `$ref`).
pub fn compile(text: &[u8]) -> Result<Compiled, String> {
    let mut tape = Tape::default();
    tape.read(text).map_err(|e| format!("the schema is not JSON: {e}"))?;
    if tape.get(0).ty != JsonType::Object {
        return Err("the schema is not an object".to_owned());
    }
    let mut c = Compiler {
        data: text,
        tape: &tape,
        out: Compiled::default(),
        scratch: Vec::new(),
    };
    let defs = tape.member(text, 0, b"$defs");
    let mut bodies = Vec::new();
    if let Some(defs) = defs {
        for member in tape.children(defs) {
            let name: Box<str> = c.key_text(tape.get(member)).into();
            let id = c.out.nodes.len() as NodeId;
            c.out.nodes.push(Node::default());
            c.out.def_names.push(name.clone());
            c.out.defs.insert(name, id);
            bodies.push((id, member));
        }
    }
    for (index, (id, at)) in bodies.into_iter().enumerate() {
        let mut node = c.node(at)?;
        node.def = Some(index);
        c.out.nodes[id as usize] = node;
    }
    let mut out = c.out;
    finish(&mut out);
    Ok(out)
}

impl Compiler<'_> {
    fn text(&mut self, e: &Entry) -> String {
        String::from_utf8_lossy(string_text(self.data, e.str(), &mut self.scratch)).into_owned()
    }

    fn key_text(&mut self, e: &Entry) -> String {
        String::from_utf8_lossy(string_text(self.data, e.key(), &mut self.scratch)).into_owned()
    }

    fn add(&mut self, at: u32) -> Result<NodeId, String> {
        let node = self.node(at)?;
        self.out.nodes.push(node);
        Ok(self.out.nodes.len() as NodeId - 1)
    }

    fn list(&mut self, at: u32, keyword: &str) -> Result<Vec<NodeId>, String> {
        if self.tape.get(at).ty != JsonType::Array {
            return Err(format!("{keyword} must be an array"));
        }
        let items: Vec<u32> = self.tape.children(at).collect();
        items.into_iter().map(|item| self.add(item)).collect()
    }

    fn lit(&mut self, at: u32) -> Result<Lit, String> {
        let e = *self.tape.get(at);
        Ok(match e.ty {
            JsonType::Null => Lit::Null,
            JsonType::Boolean => Lit::Bool(e.flag),
            JsonType::String => Lit::Str(self.text(&e).into()),
            JsonType::Number => {
                let lexeme = &self.data[e.start as usize..e.end as usize];
                match parse_i64(lexeme) {
                    Some(i) if e.flag => Lit::Int(i),
                    _ => Lit::Float(parse_f64(lexeme)),
                }
            }
            _ => return Err("const / enum values must be scalars".to_owned()),
        })
    }

    fn number(&self, at: u32, keyword: &str) -> Result<f64, String> {
        let e = self.tape.get(at);
        if e.ty != JsonType::Number {
            return Err(format!("{keyword} must be a number"));
        }
        Ok(parse_f64(&self.data[e.start as usize..e.end as usize]))
    }

    fn node(&mut self, at: u32) -> Result<Node, String> {
        let e = *self.tape.get(at);
        let mut n = Node {
            types: ANY_TYPE,
            ..Node::default()
        };
        match e.ty {
            JsonType::Boolean => {
                n.never = !e.flag;
                return Ok(n);
            }
            JsonType::Object => {}
            _ => return Err("a schema must be an object or a boolean".to_owned()),
        }
        let members: Vec<u32> = self.tape.children(at).collect();
        for member in members {
            let key = self.key_text(self.tape.get(member));
            let v = *self.tape.get(member);
            match key.as_str() {
                "type" => n.types = self.types(member)?,
                "const" => {
                    let lit = self.lit(member)?;
                    n.lits.push(vec![lit]);
                }
                "enum" => {
                    let values: Vec<u32> = self.tape.children(member).collect();
                    let lits = values.into_iter().map(|v| self.lit(v)).collect::<Result<_, _>>()?;
                    n.lits.push(lits);
                }
                "minimum" => n.minimum = Some(self.number(member, "minimum")?),
                "maximum" => n.maximum = Some(self.number(member, "maximum")?),
                "minItems" => n.min_items = Some(self.number(member, "minItems")? as usize),
                "minLength" => n.min_length = Some(self.number(member, "minLength")? as usize),
                "maxLength" => n.max_length = Some(self.number(member, "maxLength")? as usize),
                "propertyNames" => n.excluded_keys = self.excluded_keys(member)?,
                "pattern" => {
                    let text = self.text(&v);
                    let re = regex_lite::Regex::new(&text).map_err(|err| format!("pattern {text:?}: {err}"))?;
                    n.pattern = Some(self.out.patterns.len());
                    self.out.patterns.push((text.into(), re));
                }
                "properties" => {
                    let props: Vec<u32> = self.tape.children(member).collect();
                    for prop in props {
                        let name = self.key_text(self.tape.get(prop));
                        let id = self.add(prop)?;
                        n.properties.push((name.into(), id));
                    }
                }
                "required" => {
                    let names: Vec<u32> = self.tape.children(member).collect();
                    for name in names {
                        let e = *self.tape.get(name);
                        let name = self.text(&e);
                        n.required.push(name.into());
                    }
                }
                "additionalProperties" => {
                    let id = self.add(member)?;
                    if !self.out.nodes[id as usize].is_trivial_shape() {
                        n.additional = Some(id);
                    }
                }
                "unevaluatedProperties" => {
                    if !(v.ty == JsonType::Boolean && v.flag) {
                        return Err("unevaluatedProperties other than true is not supported".to_owned());
                    }
                }
                "items" => n.items = Some(self.add(member)?),
                "allOf" => n.all_of = self.list(member, "allOf")?,
                "anyOf" => {
                    n.any_of = Some(Union {
                        branches: self.list(member, "anyOf")?,
                        ..Union::default()
                    })
                }
                "oneOf" => {
                    n.one_of = Some(Union {
                        branches: self.list(member, "oneOf")?,
                        ..Union::default()
                    })
                }
                "not" => n.not = Some(self.add(member)?),
                "$ref" => {
                    let target = self.text(&v);
                    let name = target
                        .strip_prefix("#/$defs/")
                        .ok_or_else(|| format!("$ref {target:?}: only #/$defs/... is supported"))?;
                    let id = *self
                        .out
                        .defs
                        .get(name)
                        .ok_or_else(|| format!("$ref {target:?}: no such definition"))?;
                    n.reference = Some(id);
                }
                "$defs" => {}
                "x-method" => n.method = Some(self.text(&v).into()),
                k if k.starts_with("x-") || ANNOTATIONS.contains(&k) => {}
                k => return Err(format!("unsupported schema keyword {k:?}")),
            }
        }
        Ok(n)
    }

    /// `propertyNames`, which the ACP schemas only use to exclude names: `{"not": {"const": k}}`
    /// or `{"not": {"enum": [k, ...]}}` (string constants); anything else is an error.
    fn excluded_keys(&mut self, at: u32) -> Result<Vec<Box<str>>, String> {
        let unsupported =
            || "propertyNames other than {\"not\": {\"const\" | \"enum\": names}} is not supported".to_owned();
        let not = self.tape.member(self.data, at, b"not").ok_or_else(unsupported)?;
        if self.tape.children(at).count() != 1 || self.tape.children(not).count() != 1 {
            return Err(unsupported());
        }
        let mut names = Vec::new();
        if let Some(c) = self.tape.member(self.data, not, b"const") {
            names.push(c);
        } else if let Some(e) = self.tape.member(self.data, not, b"enum") {
            names.extend(self.tape.children(e));
        } else {
            return Err(unsupported());
        }
        names
            .into_iter()
            .map(|v| match self.lit(v)? {
                Lit::Str(s) => Ok(s),
                _ => Err(unsupported()),
            })
            .collect()
    }

    fn types(&mut self, at: u32) -> Result<u8, String> {
        let e = *self.tape.get(at);
        let names: Vec<String> = match e.ty {
            JsonType::String => vec![self.text(&e)],
            JsonType::Array => {
                let items: Vec<u32> = self.tape.children(at).collect();
                items
                    .into_iter()
                    .map(|i| {
                        let e = *self.tape.get(i);
                        self.text(&e)
                    })
                    .collect()
            }
            _ => return Err("type must be a string or an array".to_owned()),
        };
        let mut bits = 0;
        for name in names {
            bits |= match name.as_str() {
                // JSON Schema's "number" includes the integers.
                "number" => NUMBER | INTEGER,
                other => TYPE_NAMES
                    .iter()
                    .find(|(_, n)| *n == other)
                    .map(|(b, _)| *b)
                    .ok_or_else(|| format!("unknown type {other:?}"))?,
            };
        }
        Ok(bits)
    }
}

impl Node {
    /// Asserts nothing by its own keywords (it may still refer to other nodes).
    fn is_trivial_shape(&self) -> bool {
        !self.never
            && self.types == ANY_TYPE
            && self.lits.is_empty()
            && self.minimum.is_none()
            && self.maximum.is_none()
            && self.min_items.is_none()
            && self.min_length.is_none()
            && self.max_length.is_none()
            && self.pattern.is_none()
            && self.properties.is_empty()
            && self.required.is_empty()
            && self.excluded_keys.is_empty()
            && self.additional.is_none()
            && self.items.is_none()
            && self.all_of.is_empty()
            && self.any_of.is_none()
            && self.one_of.is_none()
            && self.not.is_none()
            && self.reference.is_none()
    }
}

impl Node {
    /// Compute `flags` (after the node is complete; again when `open_prefix` changes).
    pub fn index_flags(&mut self) {
        let mut f = 0;
        if !self.lits.is_empty() {
            f |= F_LITS;
        }
        if !self.required.is_empty()
            || !self.properties.is_empty()
            || self.additional.is_some()
            || !self.excluded_keys.is_empty()
        {
            f |= F_OBJECT;
        }
        if self.min_items.is_some() || self.items.is_some() {
            f |= F_ARRAY;
        }
        if self.min_length.is_some() || self.max_length.is_some() || self.pattern.is_some() {
            f |= F_STRING;
        }
        if self.minimum.is_some() || self.maximum.is_some() {
            f |= F_NUMBER;
        }
        if self.reference.is_some()
            || !self.all_of.is_empty()
            || self.any_of.is_some()
            || self.one_of.is_some()
            || self.not.is_some()
            || self.open_prefix
        {
            f |= F_COMPOSITE;
        }
        self.flags = f;
        if self.never {
            self.types = 0;
        }
    }

    /// Fill `required_mask`, `required_other` and `prop_sigs` from `required` and `properties`.
    fn index_required(&mut self) {
        self.prop_sigs = self.properties.iter().map(|(k, _)| prop_sig(k.as_bytes())).collect();
        self.required_mask = 0;
        self.required_other.clear();
        for name in &self.required {
            match self.properties.iter().position(|(k, _)| k == name) {
                Some(i) if i < 64 => self.required_mask |= 1 << i,
                _ => self.required_other.push(name.clone()),
            }
        }
    }
}

impl Compiled {
    /// Add a node made by hand (the envelopes of `mod.rs`), labelled `label` in problems.
    pub fn push(&mut self, mut node: Node, label: Option<String>) -> NodeId {
        node.trivial = node.is_trivial_shape();
        node.index_required();
        node.index_flags();
        if let Some(label) = label {
            node.def = Some(self.def_names.len());
            self.def_names.push(label.into());
        }
        self.nodes.push(node);
        self.nodes.len() as NodeId - 1
    }

    /// Add a union of `branches` (tagged when they are).
    pub fn push_union(&mut self, branches: Vec<NodeId>) -> NodeId {
        let tag = union_tag(self, &branches);
        let lits = branches.iter().map(|&b| self.nodes[b as usize].only_lit()).collect();
        let node = Node {
            types: ANY_TYPE,
            any_of: Some(Union { branches, tag, lits }),
            ..Node::default()
        };
        self.push(node, None)
    }
}

/// A key's length, first and last bytes in one word (`Check::object` compares these first).
#[inline(always)]
pub fn prop_sig(key: &[u8]) -> u32 {
    match key {
        [] => 0,
        [first, .., last] => (key.len() as u32) << 16 | u32::from(*first) << 8 | u32::from(*last),
        [only] => 1 << 16 | u32::from(*only) << 8 | u32::from(*only),
    }
}

impl Node {
    /// Only a reference to one other node (nothing else asserted, not a union).
    fn wrapped(&self) -> Option<NodeId> {
        let mut bare = self.clone();
        let target = match (bare.reference.take(), bare.all_of.as_slice()) {
            (Some(r), []) => r,
            (None, [a]) => *a,
            _ => return None,
        };
        bare.all_of.clear();
        (bare.is_trivial_shape() && !bare.open_prefix).then_some(target)
    }

    /// The single constant of a branch that allows nothing else, if it is one.
    fn only_lit(&self) -> Option<Lit> {
        let [set] = self.lits.as_slice() else { return None };
        let [lit] = set.as_slice() else { return None };
        let mut bare = self.clone();
        bare.lits.clear();
        let fits = match lit {
            Lit::Str(_) => bare.types & STRING != 0,
            Lit::Int(_) => bare.types & INTEGER != 0,
            _ => false,
        };
        bare.types = ANY_TYPE;
        (fits && bare.is_trivial_shape() && !bare.open_prefix).then(|| lit.clone())
    }
}

/// After all nodes exist: which are trivial, which only forward, and the unions' tags and
/// constants.
fn finish(c: &mut Compiled) {
    for node in &mut c.nodes {
        node.trivial = node.is_trivial_shape();
        node.index_required();
        node.index_flags();
    }
    for i in 0..c.nodes.len() {
        let mut target = c.nodes[i].wrapped();
        for _ in 0..16 {
            match target.and_then(|t| c.nodes[t as usize].wrapped()) {
                Some(next) => target = Some(next),
                None => break,
            }
        }
        c.nodes[i].forward = target;
    }
    for i in 0..c.nodes.len() {
        for one in [false, true] {
            let branches = match if one { &c.nodes[i].one_of } else { &c.nodes[i].any_of } {
                Some(u) => u.branches.clone(),
                None => continue,
            };
            let tag = union_tag(c, &branches);
            let lits = branches.iter().map(|&b| c.nodes[b as usize].only_lit()).collect();
            let node = &mut c.nodes[i];
            if let Some(u) = if one { &mut node.one_of } else { &mut node.any_of } {
                u.tag = tag;
                u.lits = lits;
            }
        }
    }
}

fn union_tag(c: &Compiled, branches: &[NodeId]) -> Option<Tag> {
    let mut tag = Tag::default();
    let mut key: Option<Box<str>> = None;
    for (index, &branch) in branches.iter().enumerate() {
        match tag_of(c, branch, 0) {
            Some((k, v)) => {
                match &key {
                    None => key = Some(k),
                    Some(known) if *known == k => {}
                    Some(_) => return None,
                }
                tag.tagged.push((v, index));
            }
            None => tag.untagged.push(index),
        }
    }
    tag.key = key?;
    (tag.tagged.len() >= 2).then_some(tag)
}

/// `(key, value)` when every object valid against `id` holds the string `value` in its required
/// member `key` (found in the node itself, or through `$ref` / `allOf`).
pub fn tag_of(c: &Compiled, id: NodeId, depth: usize) -> Option<(Box<str>, Box<str>)> {
    let n = &c.nodes[id as usize];
    if depth > 8 || n.types & OBJECT == 0 {
        return None;
    }
    for (key, prop) in &n.properties {
        if !n.required.contains(key) {
            continue;
        }
        if let [values] = c.nodes[*prop as usize].lits.as_slice() {
            if let [Lit::Str(v)] = values.as_slice() {
                return Some((key.clone(), v.clone()));
            }
        }
    }
    if let Some(r) = n.reference {
        if let Some(t) = tag_of(c, r, depth + 1) {
            return Some(t);
        }
    }
    n.all_of.iter().find_map(|&a| tag_of(c, a, depth + 1))
}
