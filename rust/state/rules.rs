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

/// v1's kinds that the store tracks (v1's schema has no `x-state`).
const V1_HANDLERS: [(&str, UpdateKind); 3] = [
    ("tool_call", UpdateKind::ToolCall),
    ("tool_call_update", UpdateKind::ToolCallUpdate),
    ("plan", UpdateKind::Plan),
];

/// The kind of `name` (None: no version defines it).
#[inline]
pub(super) fn kind(name: &[u8]) -> Option<UpdateKind> {
    static TABLE: OnceLock<HashMap<Box<[u8]>, UpdateKind>> = OnceLock::new();
    TABLE.get_or_init(table).get(name).copied()
}

/// Every kind of either table: its function, else which versions define it.
fn table() -> HashMap<Box<[u8]>, UpdateKind> {
    let mut defined: HashMap<Box<[u8]>, (u8, Option<UpdateKind>)> = HashMap::new();
    for (index, text) in TABLES.iter().enumerate() {
        for (name, rule) in updates(text) {
            let entry = defined.entry(name.into_bytes().into_boxed_slice()).or_insert((0, None));
            entry.0 |= 1 << index;
            if let Some((target, action)) = rule {
                let handler = HANDLERS.iter().find(|(t, a, _)| *t == target && *a == action);
                entry.1 = entry.1.or(handler.map(|h| h.2));
            }
        }
    }
    for (name, handler) in V1_HANDLERS {
        let entry = defined.entry(name.as_bytes().into()).or_insert((1, None));
        entry.1 = entry.1.or(Some(handler));
    }
    defined
        .into_iter()
        .map(|(name, (versions, handler))| {
            let kind = handler.unwrap_or(match versions {
                1 => UpdateKind::DefinedV1,
                2 => UpdateKind::DefinedV2,
                _ => UpdateKind::Defined,
            });
            (name, kind)
        })
        .collect()
}

/// The `updates` of a table: each kind with the (target, action) of its first session rule.
fn updates(text: &[u8]) -> Vec<(String, Option<(String, String)>)> {
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
        let rule = first.and_then(|r| {
            let target = tape.member(text, r, b"target")?;
            let action = tape.member(text, r, b"action")?;
            Some((text_of(target, false), text_of(action, false)))
        });
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
        assert!(matches!(kind(b"agent_message_chunk"), Some(UpdateKind::Defined)));
        assert!(matches!(kind(b"current_mode_update"), Some(UpdateKind::DefinedV1)));
        assert!(matches!(kind(b"state_update"), Some(UpdateKind::DefinedV2)));
        assert!(kind(b"_acme").is_none());
    }
}
