//! The problems: for a value that `check.rs` found invalid, where and why, worded like the
//! codec's own errors (`expected "params.update.status" to be one of "pending", ..., found
//! string "done"`).
//!
//! Every failing keyword is reported, not only the first; a union that matched no branch is
//! explained through the branch meant: the one its tag names (`"sessionUpdate": "tool_call"`),
//! else the only branch of the value's type; a union of constants lists them; otherwise the
//! value is said not to match the definition.
//!
//! Mirror: `_fallback/schema/explain.py`, the same walk and the same words over dicts and lists.

use super::check::{char_len, lit_eq, type_bit, Check};
use super::compile::{Lit, NodeId, Union, INTEGER, NUMBER, TYPE_NAMES};
use super::tape::Entry;
use super::{Problem, Severity};
use crate::encoder::PathItem;
use crate::error::{describe_value, JsonType};
use crate::scanner::string_text;

/// A path as problems quote it: `"params.update"`, or `the message` for the root.
pub fn quote(path: &[PathItem]) -> String {
    if path.is_empty() {
        "the message".to_owned()
    } else {
        format!("\"{}\"", super::render(path))
    }
}

/// `{value}` of a problem: short literal text for strings and numbers, names otherwise.
pub fn describe(data: &[u8], e: &Entry) -> String {
    match e.ty {
        JsonType::Boolean => if e.flag { "true" } else { "false" }.to_owned(),
        JsonType::String => describe_value(data, e.ty, e.start as usize - 1, e.end as usize + 1),
        ty => describe_value(data, ty, e.start as usize, e.end as usize),
    }
}

/// The names of a set of type bits: `string or null`.
pub fn type_names(types: u8) -> String {
    let mut names = Vec::new();
    for (bit, name) in TYPE_NAMES {
        if types & bit != 0 && !(bit == INTEGER && types & NUMBER != 0) {
            names.push(name);
        }
    }
    names.join(" or ")
}

/// A literal as JSON text.
pub fn lit_text(lit: &Lit) -> String {
    match lit {
        Lit::Null => "null".to_owned(),
        Lit::Bool(b) => b.to_string(),
        Lit::Int(i) => i.to_string(),
        Lit::Float(f) => number_text(*f),
        Lit::Str(s) => {
            let mut out = Vec::new();
            crate::encoder::write_str(&mut out, s.as_bytes());
            String::from_utf8_lossy(&out).into_owned()
        }
    }
}

/// A bound as problems print it: `0`, `65535`, `0.5`.
pub fn number_text(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

pub struct Explain<'c, 'a> {
    pub check: &'c mut Check<'a>,
    pub out: &'c mut Found,
}

impl Explain<'_, '_> {
    fn push(&mut self, path: &[PathItem], message: String) {
        self.out.push(Problem::error(path.to_vec(), message));
    }

    fn entry(&self, at: u32) -> Entry {
        *self.check.tape.get(at)
    }

    fn describe(&self, at: u32) -> String {
        describe(self.check.data, &self.entry(at))
    }

    /// Report why the value at `at` is not valid against `id` (call only when it is not);
    /// nothing once `out` stopped.
    pub fn node(&mut self, id: NodeId, at: u32, path: &mut Vec<PathItem>, ctx: &str) {
        if self.out.stopped() {
            return;
        }
        let before = self.out.list.len();
        self.keywords(id, at, path, ctx);
        if self.out.list.len() == before {
            let found = self.describe(at);
            self.push(path, format!("expected {} to match {ctx}, found {found}", quote(path)));
        }
    }

    fn keywords(&mut self, id: NodeId, at: u32, path: &mut Vec<PathItem>, ctx: &str) {
        let schema = self.check.schema;
        let n = &schema.nodes[id as usize];
        let ctx = match n.def {
            Some(d) => &schema.def_names[d],
            None => ctx,
        };
        let data = self.check.data;
        let e = self.entry(at);
        if n.never {
            let found = self.describe(at);
            self.push(path, format!("expected no {}, found {found}", quote(path)));
            return;
        }
        if n.types & type_bit(data, &e) == 0 {
            let found = self.describe(at);
            self.push(
                path,
                format!("expected {} to be {}, found {found}", quote(path), type_names(n.types)),
            );
            return;
        }
        for set in &n.lits {
            if !set.iter().any(|l| lit_eq(data, &e, l)) {
                self.one_of_lits(path, set, at);
                return;
            }
        }
        match e.ty {
            JsonType::Object => self.object(id, at, path, ctx),
            JsonType::Array => {
                let count = self.check.tape.children(at).count();
                if let Some(min) = n.min_items.filter(|&m| count < m) {
                    let noun = if min == 1 { "item" } else { "items" };
                    self.push(
                        path,
                        format!("expected {} to hold at least {min} {noun}, found {count}", quote(path)),
                    );
                }
                if let Some(items) = n.items {
                    let children: Vec<u32> = self.check.tape.children(at).collect();
                    for (index, item) in children.into_iter().enumerate() {
                        if self.out.stopped() {
                            return;
                        }
                        if !self.check.valid(items, item) {
                            path.push(PathItem::Index(index));
                            self.node(items, item, path, ctx);
                            path.pop();
                        }
                    }
                }
            }
            JsonType::String => {
                if let Some(min) = n.min_length.filter(|&m| char_len(data, &e) < m) {
                    let found = self.describe(at);
                    let noun = if min == 1 { "character" } else { "characters" };
                    self.push(
                        path,
                        format!("expected {} to hold at least {min} {noun}, found {found}", quote(path)),
                    );
                }
                if let Some(max) = n.max_length.filter(|&m| char_len(data, &e) > m) {
                    let found = self.describe(at);
                    let noun = if max == 1 { "character" } else { "characters" };
                    self.push(
                        path,
                        format!("expected {} to hold at most {max} {noun}, found {found}", quote(path)),
                    );
                }
                if let Some(p) = n.pattern {
                    let (text, re) = &schema.patterns[p];
                    let mut scratch = Vec::new();
                    let value = string_text(data, e.str(), &mut scratch);
                    if !re.is_match(std::str::from_utf8(value).unwrap_or_default()) {
                        let found = self.describe(at);
                        self.push(
                            path,
                            format!("expected {} to match the pattern {text}, found {found}", quote(path)),
                        );
                    }
                }
            }
            JsonType::Number => {
                let f = self.check.tape.number(data, at);
                if let Some(min) = n.minimum.filter(|&m| f < m) {
                    let found = self.describe(at);
                    self.push(
                        path,
                        format!("expected {} to be >= {}, found {found}", quote(path), number_text(min)),
                    );
                }
                if let Some(max) = n.maximum.filter(|&m| f > m) {
                    let found = self.describe(at);
                    self.push(
                        path,
                        format!("expected {} to be <= {}, found {found}", quote(path), number_text(max)),
                    );
                }
            }
            _ => {}
        }
        if self.out.stopped() {
            return;
        }
        if let Some(r) = n.reference {
            if !self.check.valid(r, at) {
                self.node(r, at, path, ctx);
            }
        }
        for &a in &n.all_of {
            if !self.out.stopped() && !self.check.valid(a, at) {
                self.node(a, at, path, ctx);
            }
        }
        if self.out.stopped() {
            return;
        }
        if let Some(u) = &n.any_of {
            if self.check.count_valid(u, &e, at, 1) == 0 {
                self.union(u, at, path, ctx);
            }
        }
        if self.out.stopped() {
            return;
        }
        if let Some(u) = &n.one_of {
            match self.check.count_valid(u, &e, at, 2) {
                0 => self.union(u, at, path, ctx),
                1 => {}
                _ => {
                    let found = self.describe(at);
                    self.push(
                        path,
                        format!(
                            "expected {} to match exactly one alternative of {ctx}, found {found} matching several",
                            quote(path)
                        ),
                    );
                }
            }
        }
        if let Some(x) = n.not.filter(|_| !self.out.stopped()) {
            if self.check.valid(x, at) {
                let found = self.describe(at);
                self.push(
                    path,
                    format!(
                        "expected {} not to match {ctx}'s excluded values, found {found}",
                        quote(path)
                    ),
                );
            }
        }
    }

    fn object(&mut self, id: NodeId, at: u32, path: &mut Vec<PathItem>, ctx: &str) {
        let n = &self.check.schema.nodes[id as usize];
        let data = self.check.data;
        let tape = self.check.tape;
        for name in &n.required {
            if tape.member(data, at, name.as_bytes()).is_none() {
                path.push(PathItem::Key(name.to_string()));
                self.push(
                    path,
                    format!("expected {} (required by {ctx}), found none", quote(path)),
                );
                path.pop();
            }
        }
        let end = tape.get(at).next;
        let children: Vec<u32> = tape.children(at).collect();
        for &child in &children {
            if self.out.stopped() {
                return;
            }
            let e = *tape.get(child);
            if n.excluded_keys
                .iter()
                .any(|k| super::tape::key_is(data, &e, k.as_bytes()))
            {
                let mut scratch = Vec::new();
                let key = String::from_utf8_lossy(string_text(data, e.key(), &mut scratch)).into_owned();
                let found = self.describe(child);
                path.push(PathItem::Key(key));
                self.push(path, format!("expected no {} in {ctx}, found {found}", quote(path)));
                path.pop();
            }
        }
        for child in children {
            if self.out.stopped() {
                return;
            }
            let e = *tape.get(child);
            let target = match n
                .properties
                .iter()
                .find(|(k, _)| super::tape::key_is(data, &e, k.as_bytes()))
            {
                Some((_, prop)) => Some(*prop),
                None => n.additional,
            };
            let Some(target) = target else { continue };
            if self.check.valid(target, child) || !tape.is_last_of_key(data, child, end) {
                continue;
            }
            let mut scratch = Vec::new();
            let key = String::from_utf8_lossy(string_text(data, e.key(), &mut scratch)).into_owned();
            path.push(PathItem::Key(key));
            self.node(target, child, path, ctx);
            path.pop();
        }
    }

    fn one_of_lits(&mut self, path: &[PathItem], lits: &[Lit], at: u32) {
        let found = self.describe(at);
        let names: Vec<String> = lits.iter().map(lit_text).collect();
        let what = if names.len() == 1 {
            names[0].clone()
        } else {
            format!("one of {}", names.join(", "))
        };
        self.push(path, format!("expected {} to be {what}, found {found}", quote(path)));
    }

    /// A union no branch of which matched.
    fn union(&mut self, u: &Union, at: u32, path: &mut Vec<PathItem>, ctx: &str) {
        let schema = self.check.schema;
        let data = self.check.data;
        let e = self.entry(at);
        if let (Some(tag), JsonType::Object) = (&u.tag, e.ty) {
            let candidates = self.check.candidates(u, &e, at);
            if let Some(&first) = candidates.first() {
                self.node(u.branches[first], at, path, ctx);
                return;
            }
            let member = self.check.tape.member(data, at, tag.key.as_bytes());
            let found = match member {
                Some(m) => describe(data, self.check.tape.get(m)),
                None => "none".to_owned(),
            };
            let names: Vec<String> = tag.tagged.iter().map(|(t, _)| lit_text(&Lit::Str(t.clone()))).collect();
            path.push(PathItem::Key(tag.key.to_string()));
            self.push(
                path,
                format!(
                    "expected {} to be one of {}, found {found}",
                    quote(path),
                    names.join(", ")
                ),
            );
            path.pop();
            return;
        }
        // A union of constants: list them.
        let lits: Option<Vec<Lit>> = u.branches.iter().map(|&b| single_lit(schema, b)).collect();
        if let Some(lits) = lits {
            self.one_of_lits(path, &lits, at);
            return;
        }
        // Else the branches of the value's type.
        let bit = type_bit(data, &e);
        let typed: Vec<NodeId> = u
            .branches
            .iter()
            .copied()
            .filter(|&b| types_of(schema, b, 0) & bit != 0)
            .collect();
        match typed.as_slice() {
            [] => {
                let all = u.branches.iter().fold(0, |t, &b| t | types_of(schema, b, 0));
                let found = self.describe(at);
                self.push(
                    path,
                    format!("expected {} to be {}, found {found}", quote(path), type_names(all)),
                );
            }
            [only] => self.node(*only, at, path, ctx),
            several => {
                let lits: Option<Vec<Lit>> = several.iter().map(|&b| single_lit(schema, b)).collect();
                match lits {
                    Some(lits) if e.ty == JsonType::String => self.one_of_lits(path, &lits, at),
                    _ => {
                        let found = self.describe(at);
                        self.push(path, format!("expected {} to match {ctx}, found {found}", quote(path)));
                    }
                }
            }
        }
    }
}

/// The one value a branch allows (`{"const": "read"}`, through `$ref` and `allOf`), if it is one.
fn single_lit(schema: &super::compile::Compiled, id: NodeId) -> Option<Lit> {
    let n = &schema.nodes[id as usize];
    if let [set] = n.lits.as_slice() {
        if let [lit] = set.as_slice() {
            return Some(lit.clone());
        }
    }
    match (n.reference, n.all_of.as_slice()) {
        (Some(r), []) => single_lit(schema, r),
        (None, [a]) => single_lit(schema, *a),
        _ => None,
    }
}

/// The types a node may accept (through `$ref` and `allOf`; unions: any branch's).
pub fn types_of(schema: &super::compile::Compiled, id: NodeId, depth: usize) -> u8 {
    let n = &schema.nodes[id as usize];
    if n.never {
        return 0;
    }
    let mut t = n.types;
    if depth > 16 {
        return t;
    }
    if let Some(r) = n.reference {
        t &= types_of(schema, r, depth + 1);
    }
    for &a in &n.all_of {
        t &= types_of(schema, a, depth + 1);
    }
    for u in [&n.any_of, &n.one_of].into_iter().flatten() {
        t &= u
            .branches
            .iter()
            .fold(0, |acc, &b| acc | types_of(schema, b, depth + 1));
    }
    t
}

/// The rule of the marker that ends the problems of a message whose check stopped at the limit
/// (severity `error`; its message says where and after how many).
pub const PROBLEM_LIMIT: &str = "problem-limit";

/// The problems of one message as they are found, at most `limit` errors (warnings are not
/// counted): the next error is not kept, a `PROBLEM_LIMIT` marker is, and the walks stop
/// (`stopped`).
pub struct Found {
    pub list: Vec<Problem>,
    /// Where the message is in its frame (the marker's path).
    path: Vec<PathItem>,
    errors: usize,
    limit: usize,
    stopped: bool,
}

impl Found {
    /// At most `limit` errors (`usize::MAX`: all) of the message at `path`.
    pub fn new(limit: usize, path: &[PathItem]) -> Self {
        Self {
            list: Vec::new(),
            path: path.to_vec(),
            errors: 0,
            limit,
            stopped: false,
        }
    }

    /// Keep a problem, or stop at the error past the limit.
    pub fn push(&mut self, problem: Problem) {
        if self.stopped {
            return;
        }
        if problem.severity == Severity::Error {
            if self.errors >= self.limit {
                self.stopped = true;
                self.list.push(Problem {
                    path: self.path.clone(),
                    message: format!("stopped checking {} after {} problems", quote(&self.path), self.limit),
                    severity: Severity::Error,
                    rule: PROBLEM_LIMIT,
                });
                return;
            }
            self.errors += 1;
        }
        self.list.push(problem);
    }

    /// The message had more errors than the limit: nothing more is looked for.
    pub fn stopped(&self) -> bool {
        self.stopped
    }
}
