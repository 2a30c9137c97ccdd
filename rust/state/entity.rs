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
//! an append costs the same however long the list. `sessionUpdate` is not stored (a replace by the
//! update itself keeps the update's text whole, `Held::Update`, and leaves `sessionUpdate` out
//! when it is written). With ids, a target keeps at most `Limits::entities` entities per session
//! (the oldest dropped, counted). Keys are compared in the frame's bytes; a key's text is copied
//! only when a member or an entity is added.
//!
//! Mirror: `python/acp_fast/_fallback/state/entity.py`.

use crate::encoder::write_str;
use crate::error::{DecodeError, JsonType};
use crate::message::{Captured, Span};
use crate::scanner::Str;

use super::read::{array_items, bad_member, key_bytes, raw, text_of, walk, Member};
use super::records::{Action, Change, Entities, Held, Ident, Raw, Slot, Target, Text};
use super::rules::{self, RuleAction};
use super::tool_call::set_extra;
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
                Some(s) => Some(Id {
                    name: name.as_bytes(),
                    token: s,
                    span: id.expect("an id"),
                }),
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
        let items = std::mem::take(&mut self.items);
        let session = self.sessions.at_mut(slot);
        let at = rule.target as usize;
        if session.entities.len() <= at {
            session.entities.resize_with(at + 1, Entities::default);
        }
        let entities = &mut session.entities[at];
        let mut kscratch = Vec::new();
        let key = id.map(|id| key_bytes(data, id.token, &mut kscratch));
        let lists = &target.lists[..];
        let action = match rule.action {
            RuleAction::Upsert => Some(upsert_entity(entities, key, data, (&members, &items), (id, lists))),
            RuleAction::Append => {
                let (field, value) = (rule.field.as_deref().expect("a field"), value.expect("a value"));
                Some(append_entity(entities, key, data, (id, field.as_bytes()), value))
            }
            RuleAction::Replace => {
                let held = match value {
                    Some(v) => Held::Value(raw(data, v)),
                    None => Held::Update(raw(data, update)),
                };
                Some(replace_entity(entities, key, held))
            }
            RuleAction::Remove => remove_entity(entities, key),
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
        self.items = items;
        let ident = id.map_or(Ident::None, |id| Ident::Text(id.token));
        Ok(action.map(|a| Change::new(Some(sid), Target::Entity(rule.target), ident, a, None)))
    }
}

impl Store {
    /// The rules of an answer or a notification (`rules::MessageRule`) applied to `obj` (its
    /// `result` or `params`, an object): each replaces its target of the session `sid` (None: no
    /// session, the session rules are skipped) or of the agent, or that target's `field`, by the
    /// rule's `value` member (skipped when absent or null) or `obj` whole. The change names the
    /// first target changed (a session's: its session is `sid`, `self.held`).
    #[inline(never)]
    pub(super) fn message_entities(
        &mut self,
        data: &[u8],
        rules: &[rules::MessageRule],
        obj: Span,
        sid: Option<&[u8]>,
    ) -> Option<Change> {
        let mut change = None;
        for rule in rules {
            let value = match &rule.value {
                None => obj,
                Some(name) => match super::read::find_member(data, obj, name.as_bytes()) {
                    Some(v) if v.ty != JsonType::Null => v,
                    _ => continue,
                },
            };
            let entities = if rule.agent {
                &mut self.agent
            } else {
                let Some(sid) = sid else { continue };
                let slot = self.session_slot_of(sid);
                &mut self.sessions.at_mut(slot).entities
            };
            let at = rule.target as usize;
            if entities.len() <= at {
                entities.resize_with(at + 1, Entities::default);
            }
            let entities = &mut entities[at];
            let action = match &rule.field {
                None => replace_entity(entities, None, Held::Value(raw(data, value))),
                Some(field) => {
                    let existed = entities.one.is_some();
                    let held = entities.one.get_or_insert_with(|| Held::Record(Vec::new()));
                    let members = as_record(held);
                    let slot = Slot::Value(raw(data, value));
                    match members.iter_mut().find(|(k, _)| **k == *field.as_bytes()) {
                        Some((_, old)) => *old = slot,
                        None => members.push((field.as_bytes().into(), slot)),
                    }
                    if existed {
                        Action::Updated
                    } else {
                        Action::Created
                    }
                }
            };
            if change.is_none() {
                let mut c = Change::new(None, Target::Entity(rule.target), Ident::None, action, None);
                c.held = !rule.agent;
                change = Some(c);
            }
        }
        change
    }
}

/// The id member of an update: its name, its string token, its value.
#[derive(Clone, Copy)]
struct Id<'a> {
    name: &'a [u8],
    token: Str,
    span: Span,
}

/// What `null` does to a record's member.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Nulls {
    /// An upsert of a stored entity: removes it.
    Remove,
    /// A new entity: sets nothing.
    Skip,
    /// A record as received: kept.
    Keep,
}

/// The entity `key` (the one entity when None) of `entities`.
fn entity_mut<'a>(entities: &'a mut Entities, key: Option<&[u8]>) -> Option<&'a mut Held> {
    match key {
        Some(k) => entities.by_id.get_mut(k),
        None => entities.one.as_mut(),
    }
}

/// Store a new entity.
fn insert_entity(entities: &mut Entities, key: Option<&[u8]>, held: Held) {
    match key {
        Some(k) => {
            entities.by_id.push(k.into(), held);
        }
        None => entities.one = Some(held),
    }
}

/// A new record holding the id member (as received), if any.
fn new_record(data: &[u8], id: Option<Id<'_>>) -> Held {
    Held::Record(id.map_or_else(Vec::new, |id| vec![(id.name.into(), Slot::Value(raw(data, id.span)))]))
}

/// upsert: patch the entity, or create it from the non-null members.
fn upsert_entity(
    entities: &mut Entities,
    key: Option<&[u8]>,
    data: &[u8],
    members: (&[Member], &[Span]),
    (id, lists): (Option<Id<'_>>, &[Box<str>]),
) -> Action {
    let skip = id.map(|id| id.name);
    match entity_mut(entities, key) {
        Some(held) => {
            patch_record(as_record(held), data, members, (skip, lists), Nulls::Remove);
            Action::Updated
        }
        None => {
            let mut held = new_record(data, id);
            patch_record(as_record(&mut held), data, members, (skip, lists), Nulls::Skip);
            insert_entity(entities, key, held);
            Action::Created
        }
    }
}

/// append: `value` at the end of the list `field` of the entity (created when needed).
fn append_entity(
    entities: &mut Entities,
    key: Option<&[u8]>,
    data: &[u8],
    (id, field): (Option<Id<'_>>, &[u8]),
    value: Span,
) -> Action {
    let item = raw(data, value);
    let (held, action) = match entity_mut(entities, key) {
        Some(held) => (held, Action::Appended),
        None => {
            insert_entity(entities, key, new_record(data, id));
            (entity_mut(entities, key).expect("inserted"), Action::Created)
        }
    };
    let members = as_record(held);
    match members.iter_mut().find(|(k, _)| **k == *field) {
        Some((_, Slot::Items(items))) => items.push(item),
        Some((_, slot)) => {
            // A value that is no list (set by a replace, or restored): an array's items go first.
            let mut items = match slot {
                Slot::Value(v) if v.first() == Some(&b'[') => {
                    array_items(v, whole(v)).into_iter().map(|s| raw(v, s)).collect()
                }
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
fn replace_entity(entities: &mut Entities, key: Option<&[u8]>, held: Held) -> Action {
    match entity_mut(entities, key) {
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

/// The members of a record (a value held whole becomes the record of its members, if an
/// object; an update held whole, the record of its members but `sessionUpdate`).
fn as_record(held: &mut Held) -> &mut Vec<(Text, Slot)> {
    if let Held::Value(v) | Held::Update(v) = held {
        *held = Held::Record(if v.first() == Some(&b'{') {
            record(v)
        } else {
            Vec::new()
        });
    }
    match held {
        Held::Record(members) => members,
        _ => unreachable!("made a record"),
    }
}

/// The record of the (valid) object `v` as received, `null`s included, but `sessionUpdate`.
pub(super) fn record(v: &[u8]) -> Vec<(Text, Slot)> {
    let (mut ms, mut items) = (Vec::new(), Vec::new());
    walk(v, whole(v), &mut ms, &mut items).expect("a stored object");
    let mut out = Vec::new();
    patch_record(&mut out, v, (&ms, &items), (None, &[]), Nulls::Keep);
    out
}

/// Apply `members` (and the `items` of their `content` arrays, as `walk` lists them) to a
/// record: each present member replaces the stored one (in its place) or is added last; `null`
/// does what `nulls` says; `_meta` objects patch the stored `_meta` by key. Duplicate members
/// count as in a parsed object (the last value, in the first one's place). `skip`: the id member
/// (kept as first received); `sessionUpdate` is never stored.
fn patch_record(
    stored: &mut Vec<(Text, Slot)>,
    data: &[u8],
    (members, items): (&[Member], &[Span]),
    (skip, lists): (Option<&[u8]>, &[Box<str>]),
    nulls: Nulls,
) {
    let (mut ks, mut other) = (Vec::new(), Vec::new());
    for (i, first) in members.iter().enumerate() {
        let k = key_bytes(data, first.key, &mut ks);
        if k == b"sessionUpdate" || skip == Some(k) {
            continue;
        }
        if members[..i].iter().any(|n| key_bytes(data, n.key, &mut other) == k) {
            continue;
        }
        let m = members[i + 1..]
            .iter()
            .rev()
            .find(|n| key_bytes(data, n.key, &mut other) == k)
            .unwrap_or(first);
        let pos = stored.iter().position(|(n, _)| **n == *k);
        let v = m.value;
        if v.ty == JsonType::Null && nulls != Nulls::Keep {
            if let (Some(p), Nulls::Remove) = (pos, nulls) {
                stored.remove(p);
            }
            continue;
        }
        let slot = if v.ty == JsonType::Object && k == b"_meta" && nulls != Nulls::Keep {
            let old = match pos.map(|p| &stored[p].1) {
                Some(Slot::Value(old)) if old.first() == Some(&b'{') => Some(&**old),
                _ => None,
            };
            Slot::Value(merge_meta(old, data, v))
        } else if v.ty == JsonType::Array && lists.iter().any(|l| l.as_bytes() == k) {
            // `walk` lists the items of `content` arrays; other lists are read here.
            let spans = if k == b"content" {
                items[m.items.0 as usize..m.items.1 as usize].to_vec()
            } else {
                array_items(data, v)
            };
            Slot::Items(spans.into_iter().map(|s| raw(data, s)).collect())
        } else {
            Slot::Value(raw(data, v))
        };
        match pos {
            Some(p) => stored[p].1 = slot,
            None => stored.push((k.into(), slot)),
        }
    }
}

/// The span of a whole stored value.
fn whole(v: &[u8]) -> Span {
    let ty = if v.first() == Some(&b'{') {
        JsonType::Object
    } else {
        JsonType::Array
    };
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
            set_extra(&mut out, text_of(v, m.key), Some(&v[m.value.range()]));
        }
    }
    let mut ps = Vec::new();
    walk(data, patch, &mut ps, &mut items).expect("a valid object");
    // As a parsed object has it: the last of duplicates, in the first one's place.
    let mut patch_members: Vec<(Text, Span)> = Vec::new();
    for m in &ps {
        let k = text_of(data, m.key);
        match patch_members.iter_mut().find(|(n, _)| *n == k) {
            Some(entry) => entry.1 = m.value,
            None => patch_members.push((k, m.value)),
        }
    }
    for (k, v) in patch_members {
        let value = (v.ty != JsonType::Null).then(|| &data[v.range()]);
        set_extra(&mut out, k, value);
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
