//! Tool calls: `tool_call` (v1 create / replace), `tool_call_update` (patch / upsert with the null
//! rule of the version in force) and `tool_call_content_chunk` (append), docs/API.md "Tool-call
//! state" and DESIGN §7.3. A permission request's tool call is applied here too
//! (`check_tool_call` + `commit_tool_call`, from `permission.rs`).
//!
//! Mirror: `python/acp_fast/_fallback/state/tool_call.py`. Differences on purpose: here the
//! update object is walked once (`check_tool_call` classifies its members and checks them, then
//! `commit_tool_call` copies the values that count into the record); the fallback checks orjson's
//! dict and patches the record's dict with it (a new record takes the update dict itself). The
//! content bound (DESIGN §7.8) moves a start offset here (`evict::trim_content`); the fallback
//! deletes the items from the front of its list.

use std::ops::Range;

use crate::error::{DecodeError, JsonType};
use crate::message::{Captured, Span};
use crate::scanner::{unescape_into, Str};

use super::entity::merge_meta;
use super::evict::trim_content;
use super::read::{
    bad_member, find_member, key_bytes, raw, str_is, text_of, Member, F_CONTENT, F_EXTRA, F_ID, F_IGNORE,
};
use super::records::{held_len, Action, Change, Ident, Raw, Target, Text, ToolCall};
use super::Store;

/// How a tool-call object is applied.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum TcOp {
    /// v1 `tool_call`: replace whole.
    Create,
    /// `tool_call_update`: patch / upsert.
    Update,
    /// `tool_call_content_chunk`: append.
    Chunk,
}

impl Store {
    /// v1 `tool_call`: create the record from the update's fields, or replace an existing one
    /// whole (it keeps its place and its creation number). Any version.
    pub(super) fn tool_call(
        &mut self,
        data: &[u8],
        sid: Str,
        update: Span,
        captured: Option<&Captured>,
    ) -> Result<Option<Change>, DecodeError> {
        let tcid = self.check_tool_call(data, update, "params.update", TcOp::Create, captured)?;
        Ok(Some(self.commit_tool_call(data, sid, tcid, TcOp::Create)))
    }

    /// `tool_call_update`: patch an existing record (null leaves a field in v1, unsets it in v2),
    /// or create one from the non-null fields.
    pub(super) fn tool_call_update(
        &mut self,
        data: &[u8],
        sid: Str,
        update: Span,
        captured: Option<&Captured>,
    ) -> Result<Option<Change>, DecodeError> {
        let tcid = self.check_tool_call(data, update, "params.update", TcOp::Update, captured)?;
        Ok(Some(self.commit_tool_call(data, sid, tcid, TcOp::Update)))
    }

    /// `tool_call_content_chunk`: append `update.content` to the record's content (created if
    /// needed). Any version.
    pub(super) fn content_chunk(
        &mut self,
        data: &[u8],
        sid: Str,
        update: Span,
        captured: Option<&Captured>,
    ) -> Result<Option<Change>, DecodeError> {
        let tcid = self.check_tool_call(data, update, "params.update", TcOp::Chunk, captured)?;
        Ok(Some(self.commit_tool_call(data, sid, tcid, TcOp::Chunk)))
    }

    // `check_tool_call` and `commit_tool_call` stay out of line: one copy serves every kind above
    // and permission requests, and `Store::apply` (the path of every frame) stays small.
    /// Walk and check the tool-call object `obj` (members left in `self.members`, each with the
    /// field slot or `F_` code it counts for); returns its `toolCallId` token.
    #[inline(never)]
    pub(super) fn check_tool_call(
        &mut self,
        data: &[u8],
        obj: Span,
        path: &str,
        op: TcOp,
        captured: Option<&Captured>,
    ) -> Result<Str, DecodeError> {
        self.fill_members(data, obj, captured)?;
        let mut id: Option<Span> = None;
        let mut content: Option<usize> = None;
        let mut locations: Option<usize> = None;
        let mut last = [u8::MAX; 8];
        let mut has_extra = false;
        let mut ks = Vec::new();
        for (i, m) in self.members.iter_mut().enumerate() {
            let k = key_bytes(data, m.key, &mut ks);
            m.code = match k {
                b"toolCallId" => {
                    id = Some(m.value);
                    F_ID
                }
                b"content" => {
                    content = Some(i);
                    F_CONTENT
                }
                _ if op == TcOp::Chunk => F_IGNORE,
                b"sessionUpdate" => F_IGNORE,
                b"title" => 0,
                b"kind" => 1,
                b"status" => 2,
                b"locations" => {
                    locations = Some(i);
                    3
                }
                b"rawInput" => 4,
                b"rawOutput" => 5,
                b"name" => 6,
                b"_meta" => 7,
                _ => {
                    has_extra = true;
                    F_EXTRA
                }
            };
            if (m.code as usize) < 8 {
                last[m.code as usize] = i as u8;
            }
        }
        let id = match id.and_then(|s| s.str()) {
            Some(s) => s,
            None => {
                return Err(bad_member(
                    data,
                    "invalid_tool_call_id",
                    (path, "toolCallId"),
                    "a string",
                    id,
                    obj,
                ));
            }
        };
        let content_value = content.map(|i| self.members[i].value);
        if op == TcOp::Chunk {
            if content_value.map(|v| v.ty) != Some(JsonType::Object) {
                return Err(bad_member(
                    data,
                    "invalid_content",
                    (path, "content"),
                    "an object",
                    content_value,
                    obj,
                ));
            }
        } else {
            if let Some(v) = content_value {
                if !matches!(v.ty, JsonType::Array | JsonType::Null) {
                    return Err(bad_member(
                        data,
                        "invalid_content",
                        (path, "content"),
                        "an array or null",
                        Some(v),
                        obj,
                    ));
                }
            }
            if let Some(v) = locations.map(|i| self.members[i].value) {
                if !matches!(v.ty, JsonType::Array | JsonType::Null) {
                    return Err(bad_member(
                        data,
                        "invalid_locations",
                        (path, "locations"),
                        "an array or null",
                        Some(v),
                        obj,
                    ));
                }
            }
        }
        // Only the last of duplicate members counts (as in a parsed object).
        for (i, m) in self.members.iter_mut().enumerate() {
            let c = m.code as usize;
            if (c < 8 && last[c] as usize != i) || (m.code == F_CONTENT && content != Some(i)) || m.code == F_ID {
                m.code = F_IGNORE;
            }
        }
        if has_extra {
            dedupe_extras(data, &mut self.members);
        }
        Ok(id)
    }

    /// Apply the members checked by `check_tool_call` to the record `tcid` of session `sid`.
    #[inline(never)]
    pub(super) fn commit_tool_call(&mut self, data: &[u8], sid: Str, tcid: Str, op: TcOp) -> Change {
        let v2 = self.version() >= 2;
        let max = (self.limits.content_items, self.limits.content_bytes);
        let wrap = self.wrap_bare_content;
        let slot = self.session_slot(data, sid);
        let members = std::mem::take(&mut self.members);
        let items = std::mem::take(&mut self.items);
        let session = self.sessions.at_mut(slot);
        let key: &[u8] = if tcid.escaped {
            self.scratch.clear();
            unescape_into(data, tcid, &mut self.scratch);
            &self.scratch
        } else {
            &data[tcid.start..tcid.end]
        };
        // With a bound, the creation number and status go to `touch` (evict.rs).
        let bounded = self.max_tool_calls.is_some();
        let (action, seq, finished) = match session.tool_calls.get_mut(key) {
            Some(tc) => {
                let action = match op {
                    TcOp::Create => {
                        let mut fresh = ToolCall {
                            seq: tc.seq,
                            ..ToolCall::default()
                        };
                        patch(&mut fresh, data, (&members, &items), (false, false), (max, wrap));
                        *tc = fresh;
                        Action::Replaced
                    }
                    TcOp::Update => {
                        patch(tc, data, (&members, &items), (v2, v2), (max, wrap));
                        Action::Updated
                    }
                    TcOp::Chunk => {
                        append_chunk(tc, data, &members, (max, wrap));
                        Action::Appended
                    }
                };
                (action, tc.seq, bounded && tc.finished())
            }
            None => {
                let mut tc = ToolCall {
                    seq: self.order_base + self.order.len(),
                    ..ToolCall::default()
                };
                match op {
                    TcOp::Chunk => append_chunk(&mut tc, data, &members, (max, wrap)),
                    // Created from the non-null fields: null never sets anything on a new record
                    // (but a v2 `_meta` is a patch of none: its null members are dropped).
                    TcOp::Update => patch(&mut tc, data, (&members, &items), (false, v2), (max, wrap)),
                    TcOp::Create => patch(&mut tc, data, (&members, &items), (false, false), (max, wrap)),
                }
                let (seq, finished) = (tc.seq, bounded && tc.finished());
                session.tool_calls.push(key.into(), tc);
                (Action::Created, seq, finished)
            }
        };
        self.members = members;
        self.items = items;
        if action == Action::Created {
            self.tool_call_count += 1;
        }
        // A chunk changes no status: the bound has nothing to learn from an append.
        if bounded && action != Action::Appended {
            let scratch = std::mem::take(&mut self.scratch);
            let key = if tcid.escaped {
                &scratch[..]
            } else {
                &data[tcid.start..tcid.end]
            };
            self.touch(slot, key, action == Action::Created, seq, finished);
            self.scratch = scratch;
        }
        Change::new(Some(sid), Target::ToolCall, Ident::Text(tcid), action, Some(tcid))
    }
}

/// Duplicate unknown members, as a parsed object has them: the first one's place, the last one's
/// value (later duplicates are ignored). `_truncated` is no unknown member but the name of a
/// bound's marker (DESIGN §7.8): never stored.
pub(super) fn dedupe_extras(data: &[u8], members: &mut [Member]) {
    let n = members.len();
    for i in 0..n {
        if members[i].code != F_EXTRA {
            continue;
        }
        let k = text_of(data, members[i].key);
        if *k == *b"_truncated" {
            members[i].code = F_IGNORE;
            continue;
        }
        for j in i + 1..n {
            if members[j].code == F_EXTRA && *text_of(data, members[j].key) == *k {
                members[i].value = members[j].value;
                members[j].code = F_IGNORE;
            }
        }
    }
}

/// Set (`Some`) or unset (`None`) an unknown field, keeping first-set order.
pub(super) fn set_extra<V>(extra: &mut Vec<(Text, V)>, key: Text, value: Option<V>) {
    let pos = extra.iter().position(|(k, _)| *k == key);
    match (pos, value) {
        (Some(p), Some(v)) => extra[p].1 = v,
        (None, Some(v)) => extra.push((key, v)),
        (Some(p), None) => {
            extra.remove(p);
        }
        (None, None) => {}
    }
}

/// Apply checked members to a record. `clear_on_null`: v2 `tool_call_update` (null unsets);
/// otherwise null leaves the field as it is. `patch_meta`: v2 `tool_call_update` (a `_meta`
/// object patches the stored one by top-level key, `entity::merge_meta`). `content` set by an update keeps its last `max`
/// items (the bound, DESIGN §7.8), its count of dropped items starting again; `wrap`: bare
/// content blocks are wrapped (`content_item`).
fn patch(
    tc: &mut ToolCall,
    data: &[u8],
    (members, items): (&[Member], &[Span]),
    (clear_on_null, patch_meta): (bool, bool),
    ((max, max_bytes), wrap): ((Option<usize>, Option<usize>), bool),
) {
    for m in members {
        let null = m.value.ty == JsonType::Null;
        match m.code {
            // v2: `_meta` objects patch the stored one by top-level key.
            7 if patch_meta && m.value.ty == JsonType::Object => {
                let old = tc.fields[7].as_deref().filter(|v| v.first() == Some(&b'{'));
                tc.fields[7] = Some(merge_meta(old, data, m.value));
            }
            c if (c as usize) < 8 => {
                if !null {
                    tc.fields[c as usize] = Some(raw(data, m.value));
                } else if clear_on_null {
                    tc.fields[c as usize] = None;
                }
            }
            F_CONTENT => {
                if !null {
                    let r: Range<usize> = m.items.0 as usize..m.items.1 as usize;
                    let skip = max.map_or(0, |max| r.len().saturating_sub(max));
                    tc.content.clear();
                    tc.content.extend(
                        items[r.start + skip..r.end]
                            .iter()
                            .map(|s| content_item(data, *s, wrap)),
                    );
                    tc.content_start = 0;
                    tc.dropped_items = skip as u64;
                    if max_bytes.is_some() {
                        tc.content_bytes = tc.content.iter().map(|item| held_len(item)).sum();
                        trim_content(tc, None, max_bytes);
                    }
                } else if clear_on_null {
                    tc.content.clear();
                    tc.content_start = 0;
                    tc.dropped_items = 0;
                    tc.content_bytes = 0;
                }
            }
            F_EXTRA => {
                if !null {
                    set_extra(&mut tc.extra, text_of(data, m.key), Some(raw(data, m.value)));
                } else if clear_on_null {
                    set_extra(&mut tc.extra, text_of(data, m.key), None);
                }
            }
            _ => {}
        }
    }
}

/// Append a chunk's `content` item (then drop the oldest items beyond the bound, counting them).
fn append_chunk(
    tc: &mut ToolCall,
    data: &[u8],
    members: &[Member],
    ((max, max_bytes), wrap): ((Option<usize>, Option<usize>), bool),
) {
    if let Some(m) = members.iter().find(|m| m.code == F_CONTENT) {
        let item = content_item(data, m.value, wrap);
        if max_bytes.is_some() {
            tc.content_bytes += held_len(&item);
        }
        tc.content.push(item);
        trim_content(tc, max, max_bytes);
    }
}

/// The content block types of ACP (`ContentBlock`): an item of one of them where a tool call's
/// content item belongs is a bare block.
const BLOCK_TYPES: [&[u8]; 5] = [b"text", b"image", b"audio", b"resource_link", b"resource"];

/// A content item as stored: as received, or with `wrap` a bare content block (an object whose
/// `type` is a `BLOCK_TYPES` one, which agents send without the wrapper) as
/// `{"type":"content","content":block}`.
fn content_item(data: &[u8], item: Span, wrap: bool) -> Raw {
    if wrap && item.ty == JsonType::Object {
        let ty = find_member(data, item, b"type").and_then(|t| t.str());
        if ty.is_some_and(|t| BLOCK_TYPES.iter().any(|b| str_is(data, t, b))) {
            let block = &data[item.range()];
            let mut out = Vec::with_capacity(block.len() + 30);
            out.extend_from_slice(br#"{"type":"content","content":"#);
            out.extend_from_slice(block);
            out.push(b'}');
            return out.into_boxed_slice();
        }
    }
    raw(data, item)
}

#[cfg(test)]
mod tests {
    use super::super::records::{TC_TITLE, TOOL_CALL_FIELDS};
    use super::super::tests::{apply, record, upd};
    use super::*;

    #[test]
    fn api_example_v2_and_v1() {
        for (version, title) in [(2u8, None), (1, Some(&b"\"Read\""[..]))] {
            let mut s = Store::new(Some(version), None);
            let frames = [
                r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":"Read","kind":"read"}"#,
                r#"{"sessionUpdate":"tool_call_content_chunk","toolCallId":"c1","content":{"type":"content","content":{"type":"text","text":"A"}}}"#,
                r#"{"sessionUpdate":"tool_call_content_chunk","toolCallId":"c1","content":{"type":"content","content":{"type":"text","text":"B"}},"_meta":{"x":1}}"#,
                r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","title":null}"#,
            ];
            let mut actions = Vec::new();
            for f in frames {
                actions.push(apply(&mut s, &upd(f)).unwrap().unwrap().1);
            }
            assert_eq!(
                actions,
                [Action::Created, Action::Appended, Action::Appended, Action::Updated]
            );
            let tc = record(&s, "c1");
            assert_eq!(tc.fields[TC_TITLE].as_deref(), title);
            assert_eq!(tc.kind(), b"\"read\"");
            assert_eq!(tc.status(), b"\"in_progress\"");
            assert_eq!(tc.content.len(), 2);
            let meta = TOOL_CALL_FIELDS.iter().position(|&f| f == "_meta").unwrap();
            assert!(tc.fields[meta].is_none(), "chunk _meta is not merged");
        }
    }

    #[test]
    fn content_keeps_its_last_items() {
        let limits = super::super::Limits {
            content_items: Some(2),
            ..Default::default()
        };
        let mut s = Store::with_limits(Some(2), None, limits);
        for i in 0..1000 {
            let u = format!(r#"{{"sessionUpdate":"tool_call_content_chunk","toolCallId":"c","content":{{"i":{i}}}}}"#);
            apply(&mut s, &upd(&u)).unwrap();
        }
        let tc = record(&s, "c");
        let kept: Vec<&[u8]> = tc.content().iter().map(|r| &r[..]).collect();
        assert_eq!(kept, [&br#"{"i":998}"#[..], br#"{"i":999}"#]);
        assert_eq!(tc.dropped_items, 998);
        assert!(tc.content.len() <= 4 && tc.content[..tc.content_start].iter().all(|r| r.is_empty()));
        let u = r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[1,2,3,4,5]}"#;
        apply(&mut s, &upd(u)).unwrap();
        let tc = record(&s, "c");
        assert_eq!(
            (tc.content(), tc.dropped_items),
            (&[b"4".to_vec().into(), b"5".to_vec().into()][..], 3)
        );
    }

    #[test]
    fn content_arrays_replace_and_chunks_append() {
        let mut s = Store::new(Some(2), None);
        apply(&mut s, &upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[ {"a":1} , [2,3],"x" ],"zz":1,"locations":[]}"#)).unwrap();
        assert_eq!(
            record(&s, "c").content,
            vec![
                b"{\"a\":1}".to_vec().into_boxed_slice(),
                b"[2,3]".to_vec().into(),
                b"\"x\"".to_vec().into()
            ]
        );
        apply(
            &mut s,
            &upd(r#"{"sessionUpdate":"tool_call_content_chunk","toolCallId":"c","content":{"b":2}}"#),
        )
        .unwrap();
        assert_eq!(record(&s, "c").content.len(), 4);
        apply(
            &mut s,
            &upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[],"zz":null,"zz":2}"#),
        )
        .unwrap();
        let tc = record(&s, "c");
        assert!(tc.content.is_empty());
        assert_eq!(
            tc.extra,
            vec![(b"zz".to_vec().into_boxed_slice(), b"2".to_vec().into_boxed_slice())]
        );
        apply(
            &mut s,
            &upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c","content":null}"#),
        )
        .unwrap();
        assert!(record(&s, "c").content.is_empty());
    }
}
