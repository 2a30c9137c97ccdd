//! Entities: the targets of the schema's `x-state` rules that no other function of this store
//! handles (messages and thoughts by `messageId`, the session's `state`, `usage`, `sessionInfo`,
//! `availableCommands`, `configOptions`, compactions, cursors, subagents, ...), each rule applied
//! as the schema writes it (`rules.rs`, `Rule`), under v2 (v1 publishes no rules):
//!
//! - upsert: the entity (by id when the rule names one) is created from the update's non-null
//!   members, or patched: a member present replaces the stored one, `null` removes it, `_meta`
//!   is patched by top-level key (`merge_meta`); the id member stays as first received;
//! - append: the rule's `value` member is appended to the rule's `field` of the entity (a list;
//!   the entity is created when needed);
//! - replace: the entity becomes the `value` member as received (or the update's members when the
//!   rule names no value);
//!
//! A rule's `value` member must be present and not null (`invalid_value`), its id a string
//! (`invalid_id`).
//! - remove: the entity is dropped (a change only when it existed).
//!
//! An upsert's array for a field that appends extend (`TargetRule::lists`) is held as a list, so
//! an append costs the same however long the list. `sessionUpdate` is not stored. With ids, a
//! target keeps at most `Limits::entities` entities per session (the oldest dropped, counted).
//!
//! Mirror: `python/acp_fast/_fallback/state/entity.py`.

use crate::encoder::write_str;
use crate::error::{DecodeError, JsonType};
use crate::message::{Captured, Span};
use crate::scanner::Str;

use super::read::{array_items, bad_member, key_bytes, raw, text_of, walk, Member};
use super::records::{Action, Change, Entities, Held, Ident, Raw, Slot, Target, Text};
use super::rules::{self, RuleAction};
use super::Store;

impl Store {
    /// An update whose rule is applied as written (`rules::rule(index)`), under v2.
    #[inline(never)]
    pub(super) fn entity_update(
        &mut self,
        data: &[u8],
        sid: Str,
        update: Span,
        captured: Option<&Captured>,
        index: u8,
    ) -> Result<Option<Change>, DecodeError> {
        let rule = rules::rule(index);
        self.fill_members(data, update, captured)?;
        let (mut id, mut value) = (None, None);
        let mut ks = Vec::new();
        for m in &self.members {
            let k = key_bytes(data, m.key, &mut ks);
            if rule.id.as_deref().is_some_and(|n| n.as_bytes() == k) {
                id = Some(m.value);
            }
            if rule.value.as_deref().is_some_and(|n| n.as_bytes() == k) {
                value = Some(m.value);
            }
        }
        let id = match &rule.id {
            None => None,
            Some(name) => match id.and_then(|s| s.str()) {
                Some(s) => Some((name.as_bytes(), s, id.expect("an id"))),
                None => {
                    let path = ("params.update", &**name);
                    return Err(bad_member(data, "invalid_id", path, "a string", id, update));
                }
            },
        };
        if let (Some(name), RuleAction::Append | RuleAction::Replace) = (&rule.value, rule.action) {
            if value.is_none_or(|v| v.ty == JsonType::Null) {
                let path = ("params.update", &**name);
                let what = "a value other than null";
                return Err(bad_member(data, "invalid_value", path, what, value, update));
            }
        }
        let target = &rules::targets()[rule.target as usize];
        let slot = self.session_slot(data, sid);
        let max = self.limits.entities;
        let members = std::mem::take(&mut self.members);
        let session = self.sessions.at_mut(slot);
        let at = rule.target as usize;
        if session.entities.len() <= at {
            session.entities.resize_with(at + 1, Entities::default);
        }
        let entities = &mut session.entities[at];
        let key = id.map(|(_, s, _)| text_of(data, s));
        let lists = &target.lists[..];
        let action = match rule.action {
            RuleAction::Upsert => Some(upsert_entity(entities, key, data, &members, (id, lists))),
            RuleAction::Append => {
                let (field, value) = (rule.field.as_deref().expect("a field"), value.expect("a value"));
                Some(append_entity(entities, key, data, (id, field.as_bytes()), value))
            }
            RuleAction::Replace => {
                let held = match value {
                    Some(v) => Held::Value(raw(data, v)),
                    None => Held::Record(record(data, &members, lists)),
                };
                Some(replace_entity(entities, key, held))
            }
            RuleAction::Remove => remove_entity(entities, key.as_deref()),
        };
        if action == Some(Action::Created) {
            if let Some(max) = max {
                while entities.by_id.len() > max {
                    let oldest = entities.by_id.first_slot().expect("an entity");
                    entities.by_id.remove_slot(oldest);
                    session.dropped.entities += 1;
                }
                entities.by_id.maybe_compact();
            }
        }
        self.members = members;
        let ident = id.map_or(Ident::None, |(_, s, _)| Ident::Text(s));
        Ok(action.map(|a| Change::new(Some(sid), Target::Entity(rule.target), ident, a, None)))
    }
}

/// The entity `key` (the one entity when None) of `entities`.
fn entity_mut<'a>(entities: &'a mut Entities, key: Option<&[u8]>) -> Option<&'a mut Held> {
    match key {
        Some(k) => entities.by_id.get_mut(k),
        None => entities.one.as_mut(),
    }
}

/// Store a new entity.
fn insert_entity(entities: &mut Entities, key: Option<Text>, held: Held) {
    match key {
        Some(k) => {
            entities.by_id.push(k, held);
        }
        None => entities.one = Some(held),
    }
}

/// A new record holding the id member (as received), if any.
fn new_record(data: &[u8], id: Option<(&[u8], Str, Span)>) -> Held {
    Held::Record(id.map_or_else(Vec::new, |(name, _, span)| {
        vec![(name.into(), Slot::Value(raw(data, span)))]
    }))
}

/// upsert: patch the entity, or create it from the non-null members.
fn upsert_entity(
    entities: &mut Entities,
    key: Option<Text>,
    data: &[u8],
    members: &[Member],
    (id, lists): (Option<(&[u8], Str, Span)>, &[Box<str>]),
) -> Action {
    let skip = id.map(|(name, _, _)| name);
    match entity_mut(entities, key.as_deref()) {
        Some(held) => {
            patch_record(as_record(held), data, members, (skip, lists), true);
            Action::Updated
        }
        None => {
            let mut held = new_record(data, id);
            patch_record(as_record(&mut held), data, members, (skip, lists), false);
            insert_entity(entities, key, held);
            Action::Created
        }
    }
}

/// append: `value` at the end of the list `field` of the entity (created when needed).
fn append_entity(
    entities: &mut Entities,
    key: Option<Text>,
    data: &[u8],
    (id, field): (Option<(&[u8], Str, Span)>, &[u8]),
    value: Span,
) -> Action {
    let item = raw(data, value);
    let (held, action) = match entity_mut(entities, key.as_deref()) {
        Some(held) => (held, Action::Appended),
        None => {
            insert_entity(entities, key.clone(), new_record(data, id));
            (entity_mut(entities, key.as_deref()).expect("inserted"), Action::Created)
        }
    };
    let members = as_record(held);
    match members.iter_mut().find(|(k, _)| **k == *field) {
        Some((_, Slot::Items(items))) => items.push(item),
        Some((_, slot)) => {
            // A value that is no list (set by a replace, or restored): an array's items go first.
            let mut items = match slot {
                Slot::Value(v) if v.first() == Some(&b'[') => array_items(v, whole(v))
                    .into_iter()
                    .map(|s| raw(v, s))
                    .collect(),
                _ => Vec::new(),
            };
            items.push(item);
            *slot = Slot::Items(items);
        }
        None => members.push((field.into(), Slot::Items(vec![item]))),
    }
    action
}

/// replace: the entity becomes `held`.
fn replace_entity(entities: &mut Entities, key: Option<Text>, held: Held) -> Action {
    match entity_mut(entities, key.as_deref()) {
        Some(old) => {
            *old = held;
            Action::Replaced
        }
        None => {
            insert_entity(entities, key, held);
            Action::Created
        }
    }
}

/// remove: drop the entity (an action only when it existed).
fn remove_entity(entities: &mut Entities, key: Option<&[u8]>) -> Option<Action> {
    match key {
        Some(k) => {
            let slot = entities.by_id.slot(k)?;
            entities.by_id.remove_slot(slot);
            entities.by_id.maybe_compact();
        }
        None => {
            entities.one.take()?;
        }
    }
    Some(Action::Removed)
}

/// The members of a record (a value held whole becomes the record of its members, if an object).
fn as_record(held: &mut Held) -> &mut Vec<(Text, Slot)> {
    if let Held::Value(v) = held {
        let members = if v.first() == Some(&b'{') {
            let mut ms = Vec::new();
            walk(v, whole(v), &mut ms, &mut Vec::new()).expect("a stored object");
            record(v, &ms, &[])
        } else {
            Vec::new()
        };
        *held = Held::Record(members);
    }
    match held {
        Held::Record(members) => members,
        Held::Value(_) => unreachable!("made a record"),
    }
}

/// A record of `members` as received, `null`s included (a replace).
fn record(data: &[u8], members: &[Member], lists: &[Box<str>]) -> Vec<(Text, Slot)> {
    let members = dedupe(data, members, &[b"sessionUpdate"]);
    members.into_iter().map(|(k, v)| {
        let slot = slot_of(data, &k, v, lists);
        (k, slot)
    }).collect()
}

/// Apply `members` to a record: each present member replaces the stored one (in its place) or is
/// added last; `null` removes it (`patching`) or is skipped (a new record); `_meta` objects patch
/// the stored `_meta` by key. `skip`: the id member (kept as first received).
fn patch_record(
    stored: &mut Vec<(Text, Slot)>,
    data: &[u8],
    members: &[Member],
    (skip, lists): (Option<&[u8]>, &[Box<str>]),
    patching: bool,
) {
    let skip = [&b"sessionUpdate"[..], skip.unwrap_or(b"sessionUpdate")];
    for (k, v) in dedupe(data, members, &skip) {
        let pos = stored.iter().position(|(n, _)| *n == k);
        if v.ty == JsonType::Null {
            if let (Some(p), true) = (pos, patching) {
                stored.remove(p);
            }
            continue;
        }
        let slot = if v.ty == JsonType::Object && &*k == b"_meta" {
            let old = match pos.map(|p| &stored[p].1) {
                Some(Slot::Value(old)) if old.first() == Some(&b'{') => Some(&**old),
                _ => None,
            };
            Slot::Value(merge_meta(old, data, v))
        } else {
            slot_of(data, &k, v, lists)
        };
        match pos {
            Some(p) => stored[p].1 = slot,
            None => stored.push((k, slot)),
        }
    }
}

/// The members as a parsed object has them (the last of duplicates, in the first one's place),
/// but those named in `skip`.
fn dedupe(data: &[u8], members: &[Member], skip: &[&[u8]]) -> Vec<(Text, Span)> {
    let mut out: Vec<(Text, Span)> = Vec::with_capacity(members.len());
    for m in members {
        let k = text_of(data, m.key);
        if skip.contains(&&*k) {
            continue;
        }
        match out.iter_mut().find(|(n, _)| *n == k) {
            Some(entry) => entry.1 = m.value,
            None => out.push((k, m.value)),
        }
    }
    out
}

/// A member's value as stored: the items of an array of a `lists` field, else the value.
fn slot_of(data: &[u8], key: &[u8], value: Span, lists: &[Box<str>]) -> Slot {
    if value.ty == JsonType::Array && lists.iter().any(|l| l.as_bytes() == key) {
        Slot::Items(array_items(data, value).into_iter().map(|s| raw(data, s)).collect())
    } else {
        Slot::Value(raw(data, value))
    }
}

/// The span of a whole stored value.
fn whole(v: &[u8]) -> Span {
    let ty = if v.first() == Some(&b'{') { JsonType::Object } else { JsonType::Array };
    Span::new(ty, 0, v.len())
}

/// A `_meta` patch (v2): the stored object (None: none) patched by the object `patch` by
/// top-level key: a key set to `null` is removed, any other value replaces the stored one (in its
/// place) or is added last. Written compactly, each value as received.
pub(super) fn merge_meta(stored: Option<&[u8]>, data: &[u8], patch: Span) -> Raw {
    let mut out: Vec<(Text, &[u8])> = Vec::new();
    let mut ms = Vec::new();
    let mut items = Vec::new();
    if let Some(v) = stored {
        walk(v, whole(v), &mut ms, &mut items).expect("a stored object");
        for m in &ms {
            set(&mut out, text_of(v, m.key), Some(&v[m.value.range()]));
        }
    }
    let mut ps = Vec::new();
    walk(data, patch, &mut ps, &mut items).expect("a valid object");
    for (k, v) in dedupe(data, &ps, &[]) {
        let value = (v.ty != JsonType::Null).then(|| &data[v.range()]);
        set(&mut out, k, value);
    }
    let mut text = Vec::with_capacity(patch.range().len() + stored.map_or(0, <[u8]>::len));
    text.push(b'{');
    for (i, (k, v)) in out.iter().enumerate() {
        if i > 0 {
            text.push(b',');
        }
        write_str(&mut text, k);
        text.push(b':');
        text.extend_from_slice(v);
    }
    text.push(b'}');
    text.into_boxed_slice()
}

/// Set (in place, else last) or remove a member.
fn set<'a>(out: &mut Vec<(Text, &'a [u8])>, key: Text, value: Option<&'a [u8]>) {
    let pos = out.iter().position(|(k, _)| *k == key);
    match (pos, value) {
        (Some(p), Some(v)) => out[p].1 = v,
        (None, Some(v)) => out.push((key, v)),
        (Some(p), None) => {
            out.remove(p);
        }
        (None, None) => {}
    }
}
