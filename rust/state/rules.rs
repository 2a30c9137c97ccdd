//! The update table, read from the protocol's own schema: `python/acp_fast/schema/v1/state.json`
//! and `v2/state.json`, which `make schemas` generates from the official schema crate (each
//! `sessionUpdate` kind a version defines, with the `x-state` rules the schema publishes for it).
//! A kind's function in this store comes from its first session rule, by target and action
//! (`HANDLERS`); v1 publishes no rules, so its own kinds are named (`V1_HANDLERS`). A kind of a
//! newer draft is tracked by regenerating when its rule names a target and action the store has
//! a function for; a kind whose target has none is defined (ignored under the versions that
//! define it, DESIGN §7.3).
//!
//! Mirror: `_fallback/state/rules.py`.

use std::sync::OnceLock;

use hashbrown::HashMap;

use super::UpdateKind;
use crate::error::JsonType;
use crate::scanner::string_text;
use crate::schema::Tape;

/// The tables, as generated (compiled in; `make schemas` rewrites them).
static TABLES: [&[u8]; 2] = [
    include_bytes!("../../python/acp_fast/schema/v1/state.json"),
    include_bytes!("../../python/acp_fast/schema/v2/state.json"),
];

/// The function of a rule's (target, action).
const HANDLERS: [(&str, &str, UpdateKind); 6] = [
    ("toolCall", "upsert", UpdateKind::ToolCallUpdate),
    ("toolCall", "append", UpdateKind::ContentChunk),
    ("terminal", "upsert", UpdateKind::TerminalUpdate),
    ("terminal", "append", UpdateKind::TerminalChunk),
    ("plan", "replace", UpdateKind::PlanUpdate),
    ("plan", "remove", UpdateKind::PlanRemoved),
];

/// What a rule does to its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RuleAction {
    Upsert,
    Append,
    Replace,
    Remove,
}

/// A rule applied as written (`entity.rs`): its action, its target (an index in `targets()`), and
/// the members of the update it names: the id, the target's field an append extends, the value
/// (absent: the update itself, but for `sessionUpdate`).
#[derive(Debug)]
pub(crate) struct Rule {
    pub action: RuleAction,
    pub target: u8,
    pub id: Option<Box<str>>,
    pub field: Option<Box<str>>,
    pub value: Option<Box<str>>,
}

/// A target of the rules applied as written: its name (the schema's), the id member of its
/// entities (None: one entity per session), whether a rule replaces it by a value (held whole,
/// not as a record), and the fields appends extend (lists in its records).
#[derive(Debug)]
pub struct TargetRule {
    pub name: Box<str>,
    pub id: Option<Box<str>>,
    pub whole: bool,
    pub lists: Vec<Box<str>>,
}

/// A rule of the answer to a request or of a notification (the tables' `responses` and
/// `notifications`): it replaces its target (an index in `targets()`; `agent`: the store's own,
/// else the session's), or only the target's `field`, by the message's `value` member (None: the
/// result or params object whole). The tables' other actions have no such rule yet.
#[derive(Debug)]
pub(crate) struct MessageRule {
    pub target: u8,
    pub field: Option<Box<str>>,
    pub value: Option<Box<str>>,
    pub agent: bool,
}

/// v1's kinds that the store tracks (v1's schema has no `x-state`).
const V1_HANDLERS: [(&str, UpdateKind); 3] = [
    ("tool_call", UpdateKind::ToolCall),
    ("tool_call_update", UpdateKind::ToolCallUpdate),
    ("plan", UpdateKind::Plan),
];

/// The update table: each kind's function, and the rules and targets applied as written.
struct Table {
    kinds: HashMap<Box<[u8]>, UpdateKind>,
    rules: Vec<Rule>,
    targets: Vec<TargetRule>,
    /// The rules of answers (by the request's method) and of notifications (by method).
    answers: HashMap<Box<[u8]>, Vec<MessageRule>>,
    notifications: HashMap<Box<[u8]>, Vec<MessageRule>>,
}

fn get() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(table)
}

/// The kind of `name` (None: no version defines it).
#[inline]
pub(super) fn kind(name: &[u8]) -> Option<UpdateKind> {
    get().kinds.get(name).copied()
}

/// The rule of an `UpdateKind::Entity`.
#[inline]
pub(crate) fn rule(index: u8) -> &'static Rule {
    &get().rules[index as usize]
}

/// The rules the answer to a request of `method` applies (empty: none).
pub(crate) fn answer_rules(method: &[u8]) -> &'static [MessageRule] {
    get().answers.get(method).map_or(&[], Vec::as_slice)
}

/// The rules a notification of `method` applies (empty: none).
pub(crate) fn notification_rules(method: &[u8]) -> &'static [MessageRule] {
    get().notifications.get(method).map_or(&[], Vec::as_slice)
}

/// The targets of the rules applied as written, in table order (an entity's `target` indexes it).
pub fn targets() -> &'static [TargetRule] {
    &get().targets
}

/// A rule's action by its name in the schema.
fn action_of(name: &str) -> Option<RuleAction> {
    Some(match name {
        "upsert" => RuleAction::Upsert,
        "append" => RuleAction::Append,
        "replace" => RuleAction::Replace,
        "remove" => RuleAction::Remove,
        _ => return None,
    })
}

/// Every kind of either table: its function, else its rule applied as written (v2), else which
/// versions define it.
fn table() -> Table {
    let mut defined: HashMap<Box<[u8]>, (u8, Option<UpdateKind>)> = HashMap::new();
    let mut rules: Vec<Rule> = Vec::new();
    let mut targets: Vec<TargetRule> = Vec::new();
    let mut generic: Vec<(Box<[u8]>, u8)> = Vec::new();
    for (index, text) in TABLES.iter().enumerate() {
        for (name, first) in updates(text) {
            let key = name.into_bytes().into_boxed_slice();
            let entry = defined.entry(key.clone()).or_insert((0, None));
            entry.0 |= 1 << index;
            let Some(first) = first else { continue };
            let handler = HANDLERS
                .iter()
                .find(|(t, a, _)| *t == &*first.target && *a == &*first.action);
            if let Some(h) = handler {
                entry.1 = entry.1.or(Some(h.2));
                continue;
            }
            if entry.1.is_some() || generic.iter().any(|(k, _)| *k == key) {
                continue;
            }
            let plain = |p: &Option<Box<str>>| p.as_deref().is_none_or(|p| !p.is_empty() && !p.contains('.'));
            let Some(action) = action_of(&first.action) else {
                continue;
            };
            if !(plain(&first.id) && plain(&first.field) && plain(&first.value)) || rules.len() >= 255 {
                continue;
            }
            if action == RuleAction::Append && first.field.is_none() {
                continue;
            }
            let at = match targets.iter().position(|t| *t.name == *first.target) {
                Some(at) => at,
                None => {
                    targets.push(TargetRule {
                        name: first.target.clone(),
                        id: first.id.clone(),
                        whole: false,
                        lists: Vec::new(),
                    });
                    targets.len() - 1
                }
            };
            let t = &mut targets[at];
            if t.id.is_none() != first.id.is_none() {
                continue; // a target both with and without ids: not applied as written
            }
            t.whole |= action == RuleAction::Replace && first.value.is_some();
            if let (RuleAction::Append, Some(field)) = (action, &first.field) {
                if !t.lists.contains(field) {
                    t.lists.push(field.clone());
                }
            }
            generic.push((key, rules.len() as u8));
            rules.push(Rule {
                action,
                target: at as u8,
                id: first.id,
                field: first.field,
                value: first.value,
            });
        }
    }
    for (key, rule) in generic {
        let entry = defined.get_mut(&key).expect("a kind");
        if entry.1.is_none() {
            entry.1 = Some(UpdateKind::Entity {
                rule,
                v1: entry.0 & 1 != 0,
            });
        }
    }
    for (name, handler) in V1_HANDLERS {
        let entry = defined.entry(name.as_bytes().into()).or_insert((1, None));
        entry.1 = entry.1.or(Some(handler));
    }
    let kinds = defined
        .into_iter()
        .map(|(name, (versions, handler))| {
            let kind = handler.unwrap_or(match versions {
                1 => UpdateKind::DefinedV1,
                2 => UpdateKind::DefinedV2,
                _ => UpdateKind::Defined,
            });
            (name, kind)
        })
        .collect();
    // The rules of messages, after the updates' (their targets' indexes come first).
    let mut answers = HashMap::new();
    let mut notifications = HashMap::new();
    for text in TABLES {
        for (table, into) in [
            (&b"responses"[..], &mut answers),
            (b"notifications", &mut notifications),
        ] {
            for (method, written) in message_rules(text, table) {
                let rules = written
                    .into_iter()
                    .filter_map(|(agent, w)| message_rule(&mut targets, agent, w))
                    .collect::<Vec<_>>();
                if !rules.is_empty() {
                    into.insert(method.into_bytes().into_boxed_slice(), rules);
                }
            }
        }
    }
    Table {
        kinds,
        rules,
        targets,
        answers,
        notifications,
    }
}

/// A rule of a message as the store applies it: a replace whose paths are plain member names,
/// of a target without ids (added to `targets` when new); None for any other.
fn message_rule(targets: &mut Vec<TargetRule>, agent: bool, w: Written) -> Option<MessageRule> {
    let plain = |p: &Option<Box<str>>| p.as_deref().is_none_or(|p| !p.is_empty() && !p.contains('.'));
    if action_of(&w.action) != Some(RuleAction::Replace) || w.id.is_some() || !plain(&w.field) || !plain(&w.value) {
        return None;
    }
    let at = match targets.iter().position(|t| *t.name == *w.target) {
        Some(at) if targets[at].id.is_some() => return None,
        Some(at) => at,
        None if targets.len() < 255 => {
            targets.push(TargetRule {
                name: w.target.clone(),
                id: None,
                whole: w.field.is_none() && w.value.is_some(),
                lists: Vec::new(),
            });
            targets.len() - 1
        }
        None => return None,
    };
    Some(MessageRule {
        target: at as u8,
        field: w.field,
        value: w.value,
        agent,
    })
}

/// A rule as the table writes it: each member's text.
struct Written {
    action: Box<str>,
    target: Box<str>,
    id: Option<Box<str>>,
    field: Option<Box<str>>,
    value: Option<Box<str>>,
}

/// The `responses` or `notifications` of a table: each method with its rules, each rule with
/// its scope (`agent`: true for the agent's, false for the session's).
fn message_rules(text: &[u8], table: &[u8]) -> Vec<(String, Vec<(bool, Written)>)> {
    let mut tape = Tape::default();
    tape.read(text).expect("state.json is JSON");
    let mut scratch = Vec::new();
    let Some(methods) = tape.member(text, 0, table) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for method in tape.children(methods) {
        let name = String::from_utf8_lossy(string_text(text, tape.get(method).key(), &mut scratch)).into_owned();
        let mut rules = Vec::new();
        for (scope, agent) in [(&b"session"[..], false), (b"agent", true)] {
            let Some(list) = tape
                .member(text, method, scope)
                .filter(|&s| tape.get(s).ty == JsonType::Array)
            else {
                continue;
            };
            for r in tape.children(list) {
                if let Some(w) = written(text, &tape, r) {
                    rules.push((agent, w));
                }
            }
        }
        out.push((name, rules));
    }
    out
}

/// The rule at `r` of `tape` (None: without a string `action` and `target`).
fn written(text: &[u8], tape: &Tape, r: u32) -> Option<Written> {
    let mut scratch = Vec::new();
    let mut member = |name: &[u8]| {
        let at = tape
            .member(text, r, name)
            .filter(|&at| tape.get(at).ty == JsonType::String)?;
        Some(String::from_utf8_lossy(string_text(text, tape.get(at).str(), &mut scratch)).into())
    };
    Some(Written {
        action: member(b"action")?,
        target: member(b"target")?,
        id: member(b"id"),
        field: member(b"field"),
        value: member(b"value"),
    })
}

/// The `updates` of a table: each kind with its first session rule.
fn updates(text: &[u8]) -> Vec<(String, Option<Written>)> {
    let mut tape = Tape::default();
    tape.read(text).expect("state.json is JSON");
    let mut scratch = Vec::new();
    let mut text_of = |at: u32, key: bool| {
        let e = tape.get(at);
        let s = if key { e.key() } else { e.str() };
        String::from_utf8_lossy(string_text(text, s, &mut scratch)).into_owned()
    };
    let Some(updates) = tape.member(text, 0, b"updates") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for kind in tape.children(updates) {
        let name = text_of(kind, true);
        let first = tape
            .member(text, kind, b"session")
            .filter(|&s| tape.get(s).ty == JsonType::Array)
            .and_then(|s| tape.children(s).next());
        let rule = first.and_then(|r| written(text, &tape, r));
        out.push((name, rule));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_maps_the_schema_rules_to_the_store_functions() {
        assert!(matches!(kind(b"tool_call_update"), Some(UpdateKind::ToolCallUpdate)));
        assert!(matches!(
            kind(b"tool_call_content_chunk"),
            Some(UpdateKind::ContentChunk)
        ));
        assert!(matches!(
            kind(b"terminal_output_chunk"),
            Some(UpdateKind::TerminalChunk)
        ));
        assert!(matches!(kind(b"plan_update"), Some(UpdateKind::PlanUpdate)));
        assert!(matches!(kind(b"plan_removed"), Some(UpdateKind::PlanRemoved)));
        assert!(matches!(kind(b"tool_call"), Some(UpdateKind::ToolCall)));
        assert!(matches!(kind(b"current_mode_update"), Some(UpdateKind::DefinedV1)));
        let Some(UpdateKind::Entity { rule: r, v1: true }) = kind(b"agent_message_chunk") else {
            panic!("agent_message_chunk is applied as written");
        };
        let r = rule(r);
        assert_eq!(r.action, RuleAction::Append);
        assert_eq!(
            (r.id.as_deref(), r.field.as_deref()),
            (Some("messageId"), Some("content"))
        );
        let t = &targets()[r.target as usize];
        assert_eq!(
            (&*t.name, t.id.as_deref(), t.whole),
            ("agentMessage", Some("messageId"), false)
        );
        assert_eq!(t.lists, ["content".into()]);
        let Some(UpdateKind::Entity { rule: r, v1: false }) = kind(b"state_update") else {
            panic!("state_update is applied as written");
        };
        assert_eq!((rule(r).action, rule(r).value.as_deref()), (RuleAction::Replace, None));
        assert!(matches!(kind(b"replay_complete"), Some(UpdateKind::DefinedV2)));
        assert!(matches!(kind(b"notice"), Some(UpdateKind::Defined)));
        assert!(matches!(kind(b"current_mode_update"), Some(UpdateKind::DefinedV1)));
        assert!(kind(b"_acme").is_none());
    }
}
