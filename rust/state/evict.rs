//! The bounds (DESIGN §7.8). `Limits` are the bounds inside a session, each applied where its
//! list grows: `trim_front` (unknown updates), `trim_content` (a tool call's content),
//! `trim_output` (a terminal's output, from a UTF-8 character boundary), `trim_permissions` (a
//! session's permission records; `drop_permission`), `touch_terminal` and `trim_terminals` (a
//! session's terminals), and `plan.rs` for plans; each counts what it drops.
//!
//! Terminals: after a frame creates a terminal and its session holds more than
//! `Limits::terminals`, the oldest (first created) terminal of the session that has exited (an
//! `exitStatus` is set) is dropped, else the oldest one; never the one the frame touched. As for
//! tool calls below, each terminal gets a creation number in its session and the exited ones are
//! queued in a min-heap when a frame leaves them exited (an entry whose terminal no longer is
//! exited is dropped when it reaches the top, and queued again when it is); the oldest one is the
//! first entry of the ordered map (`OrderedMap::first_slot`, amortised O(1)). Cost: O(1) per frame
//! while no terminal of the session has exited, O(log n) per terminal that exits and per drop of
//! an exited one (n: its exited terminals, at most the bound). The heap holds at most one entry
//! per terminal retained: a terminal is dropped as the oldest only when no other is queued.
//!
//! Permission records: one list in request order across sessions (`Store::permissions`, holes
//! where records were dropped, closed once they outnumber the records). Each session keeps a
//! min-heap of the indices of its resolved records (`Session::resolved`, pushed when a request is
//! resolved): the bound pops the oldest resolved one, O(log n) per record dropped whatever the
//! number of pending ones; closing the holes renumbers the records and refills the heaps
//! (O(1) amortised).
//!
//! The rest of this file is the `max_tool_calls` bound: after a frame creates a tool call and more than N are retained, the oldest (first
//! created, across sessions) tool call whose status is finished is dropped, else the oldest one;
//! never the one the frame touched.
//!
//! The structure is the same in both backends. Each tool call gets a creation number, `seq`, when
//! it is created. `order` holds (session, id) of each tool call in creation order, `None` once
//! evicted: the entry of `seq` is `order[seq - order_base]`, and `order_head` is the first entry
//! that may still be live (all before it are `None`), so the oldest tool call is found by moving
//! it forward. `finished` is a min-heap of the creation numbers of the tool calls found finished
//! when a frame touched them; an entry whose tool call was evicted, or is no longer finished (it
//! is queued again when it is), is dropped when it reaches the top. The evicted entries before
//! `order_head` are cut off once they are half of `order` (`order_base` moves on); when the
//! entries after it (holes left by tool calls evicted out of creation order) or those of the heap
//! outnumber the tool calls, `compact` renumbers the live tool calls 0, 1, 2, ... (same order).
//! Memory follows the tool calls retained.
//!
//! Cost per frame, amortised: O(1) while no retained tool call is finished (the victim is at
//! `order_head`), whatever the number of unfinished ones; O(log n) for each tool call that
//! finishes and each eviction of a finished one (n: finished tool calls queued, at most the
//! bound). O(1) for any order of finishing would need an integer priority queue over creation
//! numbers (a bitmap hierarchy, say); not done.
//!
//! Mirror: `python/acp_fast/_fallback/state/evict.py`. Differences on purpose: a tool call's
//! content moves a start offset here where the fallback deletes items from the front of its list
//! (`set_content` there, `patch` and `trim_content` here); here a record
//! carries its creation number (`ToolCall::seq`) and its `order` entry the queued flag; the
//! fallback's records are plain dicts, so it keeps both in a dict by (session, id).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::records::{held_len, Outcome, Permission, Session, Terminal, Text, ToolCall};
use super::Store;

/// The default of `max_tool_calls` in `ToolCallStore` (and `acp-fast proxy`'s): the tool calls
/// kept across sessions (DESIGN §7.8). `Store::new` takes the bound it is given.
pub const DEFAULT_MAX_TOOL_CALLS: usize = 1000;

/// The default of `max_sessions` (and `acp-fast proxy`'s): the sessions kept in the store.
pub const DEFAULT_MAX_SESSIONS: usize = 1000;

/// The bounds inside a session (DESIGN §7.8; `None`: no bound). The defaults are `Default`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of output kept per terminal (the last ones, from a UTF-8 character boundary).
    pub terminal_bytes: Option<usize>,
    /// Items of `content` kept per tool call (the last ones).
    pub content_items: Option<usize>,
    /// Plans kept per session (the oldest dropped first).
    pub plans: Option<usize>,
    /// Permission records kept per session (the oldest resolved ones dropped first).
    pub permissions: Option<usize>,
    /// Unknown updates kept per session (the last ones; 0: none are kept).
    pub updates: Option<usize>,
    /// Terminals kept per session (the oldest exited ones dropped first, else the oldest).
    pub terminals: Option<usize>,
    /// Entities kept per target of a session (`entity.rs`; the oldest dropped first; 0: the rules
    /// are not applied).
    pub entities: Option<usize>,
    /// Answered file requests kept per session (the last ones; 0: file requests are not
    /// tracked), `request.rs`.
    pub files: Option<usize>,
    /// Bytes of `content` kept per tool call: the JSON text of its items as a checkpoint writes
    /// them (`content_len`); the oldest items are dropped first, never the newest one.
    pub content_bytes: Option<usize>,
    /// Sessions kept in the store (not a bound inside a session): when a frame creates one beyond
    /// them, the least recently active session is dropped whole (`new_session`).
    pub sessions: Option<usize>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            terminal_bytes: Some(1 << 20),
            content_items: Some(1000),
            plans: Some(100),
            permissions: Some(1000),
            updates: Some(1000),
            terminals: Some(1000),
            entities: Some(1000),
            files: Some(1000),
            content_bytes: Some(1 << 20),
            sessions: Some(DEFAULT_MAX_SESSIONS),
        }
    }
}

impl Limits {
    /// The checkpoint members of the bounds, in document order (DESIGN §7.8).
    pub const NAMES: [&'static str; 10] = [
        "maxTerminalBytes",
        "maxContentItems",
        "maxPlans",
        "maxPermissions",
        "maxUpdates",
        "maxTerminals",
        "maxEntities",
        "maxFiles",
        "maxContentBytes",
        "maxSessions",
    ];

    /// The bounds, in `NAMES` order.
    pub fn values(&self) -> [Option<usize>; 10] {
        [
            self.terminal_bytes,
            self.content_items,
            self.plans,
            self.permissions,
            self.updates,
            self.terminals,
            self.entities,
            self.files,
            self.content_bytes,
            self.sessions,
        ]
    }

    /// Each bound's smallest value (1: a count of records, 0: of items) and slot, in `NAMES` order.
    pub fn slots_mut(&mut self) -> [(u64, &mut Option<usize>); 10] {
        [
            (0, &mut self.terminal_bytes),
            (0, &mut self.content_items),
            (1, &mut self.plans),
            (1, &mut self.permissions),
            (0, &mut self.updates),
            (1, &mut self.terminals),
            (0, &mut self.entities),
            (0, &mut self.files),
            (0, &mut self.content_bytes),
            (1, &mut self.sessions),
        ]
    }

    /// What a bound with smallest value `min` must be (its errors' `{what}`).
    pub fn what(min: u64) -> &'static str {
        if min == 0 {
            "a non-negative integer or null"
        } else {
            "a positive integer or null"
        }
    }
}

/// Drop the oldest items of `items` while it holds more than `max`, counting them in `dropped`.
pub(super) fn trim_front<T>(items: &mut VecDeque<T>, max: Option<usize>, dropped: &mut u64) {
    if let Some(max) = max {
        while items.len() > max {
            items.pop_front();
            *dropped += 1;
        }
    }
}

/// Keep the last `max` content items of a tool call (after a chunk, or content set by an update),
/// and with `max_bytes` (`tc.content_bytes` counting the new items) drop the oldest items while
/// their bytes pass it, never the newest one (an item larger than the bound is kept whole);
/// counting those dropped. They are emptied at once, and the list shifted only once they
/// outnumber the kept ones.
#[inline]
pub(super) fn trim_content(tc: &mut ToolCall, max: Option<usize>, max_bytes: Option<usize>) {
    let kept = tc.content.len() - tc.content_start;
    if max.is_some_and(|max| kept > max) || max_bytes.is_some_and(|max| tc.content_bytes > max && kept > 1) {
        cut_content(tc, max, max_bytes);
    }
}

/// `trim_content` once a bound is passed (out of line: the path of a chunk stays small).
#[cold]
#[inline(never)]
fn cut_content(tc: &mut ToolCall, max: Option<usize>, max_bytes: Option<usize>) {
    let end = tc.content.len();
    let mut start = tc.content_start;
    loop {
        let kept = end - start;
        let over_items = max.is_some_and(|max| kept > max);
        let over_bytes = max_bytes.is_some_and(|max| tc.content_bytes > max && kept > 1);
        if !over_items && !over_bytes {
            break;
        }
        if max_bytes.is_some() {
            tc.content_bytes -= held_len(&tc.content[start]);
        }
        tc.content[start] = Box::default();
        start += 1;
        tc.dropped_items += 1;
    }
    tc.content_start = start;
    if tc.content_start >= tc.content.len() - tc.content_start {
        tc.content.drain(..tc.content_start);
        tc.content_start = 0;
    }
}

/// Keep the last `max` bytes of a terminal's output, from a UTF-8 character boundary (what ACP's
/// `outputByteLimit` asks of a client): the cut moves past at most 3 continuation bytes
/// (`0b10xxxxxx`), so the kept output may be up to 3 bytes shorter. The bytes dropped are counted;
/// the buffer is shifted only once the dropped part outgrows the kept one.
#[inline]
pub(super) fn trim_output(t: &mut Terminal, max: Option<usize>) {
    if let Some(max) = max {
        if t.output.len() - t.output_start > max {
            cut_output(t, max);
        }
    }
}

/// `trim_output` once the bound is passed (out of line: the path of a chunk stays small).
#[cold]
#[inline(never)]
fn cut_output(t: &mut Terminal, max: usize) {
    let kept = &t.output[t.output_start..];
    let mut cut = kept.len() - max;
    let mut skipped = 0;
    while skipped < 3 && cut < kept.len() && kept[cut] & 0xC0 == 0x80 {
        cut += 1;
        skipped += 1;
    }
    t.output_start += cut;
    t.dropped_bytes += cut as u64;
    if t.output_start >= t.output.len() - t.output_start {
        t.output.drain(..t.output_start);
        t.output_start = 0;
    }
}

/// While `session` holds more terminals than `max`: drop its oldest exited one, else its oldest
/// one (never `keep`, the creation number of the terminal just created: it is the newest), counted
/// in `droppedTerminals`.
fn trim_terminals(session: &mut Session, max: Option<usize>, keep: u64) {
    let Some(max) = max else {
        return;
    };
    while session.terminals.len() > max {
        let exited = if session.exited.is_empty() {
            None
        } else {
            oldest_exited(session, keep)
        };
        // The bound is at least 1: with more than one terminal, the oldest is not the new one.
        let Some(slot) = exited.or_else(|| session.terminals.first_slot()) else {
            break;
        };
        session.terminals.remove_slot(slot);
        session.dropped.terminals += 1;
    }
    session.terminals.maybe_compact();
}

/// What [`pop_oldest`] makes of an entry taken off an eviction heap.
enum Seen {
    /// Stale (its record dropped, or no longer queued): forgotten.
    Skip,
    /// The record the frame being applied touches: back on the heap once a victim is found.
    Keep,
    /// The victim.
    Victim,
}

/// Pop `heap` (a min-heap of queued records whose entries go stale lazily) until `judge` names a
/// victim; an entry judged [`Seen::Keep`] goes back on the heap. The tool-call and terminal bounds
/// share it (mirror: `_fallback/state/evict.py`, `pop_oldest`).
fn pop_oldest<E: Ord>(heap: &mut BinaryHeap<Reverse<E>>, mut judge: impl FnMut(&E) -> Seen) -> Option<E> {
    let mut held = None;
    let mut victim = None;
    while let Some(Reverse(entry)) = heap.pop() {
        match judge(&entry) {
            Seen::Skip => {}
            Seen::Keep => held = Some(entry),
            Seen::Victim => {
                victim = Some(entry);
                break;
            }
        }
    }
    if let Some(entry) = held {
        heap.push(Reverse(entry));
    }
    victim
}

/// The slot of the oldest exited terminal of `session` but `keep`, taken off its heap (dropping
/// stale entries: a terminal dropped, or no longer exited).
fn oldest_exited(session: &mut Session, keep: u64) -> Option<usize> {
    let terminals = &mut session.terminals;
    let mut victim = None;
    pop_oldest(&mut session.exited, |(seq, key)| {
        let Some(slot) = terminals.slot(key) else {
            return Seen::Skip; // dropped
        };
        let t = terminals.at_mut(slot);
        if t.seq != *seq {
            Seen::Skip // dropped, and another terminal made with its id since
        } else if t.exit_status.is_none() {
            t.queued = false;
            Seen::Skip
        } else if *seq == keep {
            Seen::Keep
        } else {
            victim = Some(slot);
            Seen::Victim
        }
    });
    victim
}

/// Number the terminals of `session` 0, 1, 2, ... in creation order and queue the exited ones
/// (after a restore, with a bound on terminals).
pub(super) fn number_terminals(session: &mut Session) {
    let mut exited = Vec::new();
    let mut seq = 0;
    for (key, t) in session.terminals.iter_mut() {
        t.seq = seq;
        t.queued = t.exit_status.is_some();
        if t.queued {
            exited.push(Reverse((seq, key.into())));
        }
        seq += 1;
    }
    session.terminal_seq = seq;
    // Ascending creation numbers: `from` heapifies in O(n).
    session.exited = BinaryHeap::from(exited);
}

/// No session (an end of the activity order).
pub(super) const NIL: usize = usize::MAX;

impl Store {
    /// Bound on sessions only: the session in `slot` is touched by the frame being applied: it
    /// becomes the most recently active (moved to the end of the activity order). O(1).
    #[inline]
    pub(super) fn touch_session(&mut self, slot: usize) {
        if self.limits.sessions.is_none() {
            return;
        }
        self.sessions.at_mut(slot).active = self.tick;
        if self.last_active != slot {
            self.unlink_session(slot);
            self.link_session(slot);
        }
    }

    /// `touch_session` of the session whose id is the token `sid` of `data`, if the store holds
    /// it (`session/cancel`).
    pub(super) fn touch_session_id(&mut self, data: &[u8], sid: crate::scanner::Str) {
        let key = super::read::text_of(data, sid);
        if let Some(slot) = self.sessions.slot(&key) {
            self.touch_session(slot);
        }
    }

    /// Take the session in `slot` out of the activity order.
    pub(super) fn unlink_session(&mut self, slot: usize) {
        let s = self.sessions.at_mut(slot);
        let (prev, next) = (s.prev, s.next);
        s.prev = NIL;
        s.next = NIL;
        match prev {
            NIL => self.first_active = next,
            p => self.sessions.at_mut(p).next = next,
        }
        match next {
            NIL => self.last_active = prev,
            n => self.sessions.at_mut(n).prev = prev,
        }
    }

    /// Put the session in `slot` (out of the activity order) at its end: the most recently active.
    pub(super) fn link_session(&mut self, slot: usize) {
        let last = self.last_active;
        let s = self.sessions.at_mut(slot);
        s.prev = last;
        s.next = NIL;
        match last {
            NIL => self.first_active = slot,
            l => self.sessions.at_mut(l).next = slot,
        }
        self.last_active = slot;
    }

    /// After the sessions' slots moved (`moved[old]` the new slot of each; `drop_session`): the
    /// activity order's links follow.
    pub(super) fn relink_sessions(&mut self, moved: &[usize]) {
        let at = |slot: usize| if slot == NIL { NIL } else { moved[slot] };
        self.first_active = at(self.first_active);
        self.last_active = at(self.last_active);
        for (_, s) in self.sessions.iter_mut() {
            s.prev = at(s.prev);
            s.next = at(s.next);
        }
    }

    /// The slots of the sessions from the least to the most recently active.
    pub(super) fn activity_order(&self) -> Vec<usize> {
        let mut order = Vec::with_capacity(self.sessions.len());
        let mut slot = self.first_active;
        while slot != NIL {
            order.push(slot);
            slot = self.sessions.at(slot).expect("session slot").1.next;
        }
        order
    }

    /// Set the activity order (a restore): the sessions in `order` (slots, the least recently
    /// active first).
    pub(super) fn order_sessions(&mut self, order: &[usize]) {
        self.first_active = NIL;
        self.last_active = NIL;
        for &slot in order {
            self.link_session(slot);
        }
    }
}

/// An entry of `order`: where the tool call is, and whether its creation number is in the heap of
/// finished tool calls.
pub(super) struct Tracked {
    pub slot: usize,
    pub key: Text,
    pub queued: bool,
}

impl Store {
    /// Record a permission request of the session in `slot` (its index in the list queued when
    /// resolved: a record read from a checkpoint).
    pub(super) fn push_permission(&mut self, p: Permission) {
        let session = self.sessions.at_mut(p.session);
        session.permission_count += 1;
        if p.outcome == Outcome::Pending {
            session.waiting.push(Reverse(self.permissions.len()));
        } else {
            session.resolved.push(Reverse(self.permissions.len()));
        }
        self.permissions.push(Some(p));
    }

    /// Drop the permission record at `index` (a pending one replaced by a request with its id, or
    /// one the bound drops); its place stays empty until `trim_permissions` closes the holes.
    pub(super) fn drop_permission(&mut self, index: usize) {
        if let Some(p) = self.permissions[index].take() {
            self.sessions.at_mut(p.session).permission_count -= 1;
            self.permission_holes += 1;
        }
    }

    /// After a request of the session in `slot` was recorded: while the session holds more records
    /// than `Limits::permissions`, drop its oldest resolved one, else its oldest pending one (never
    /// the one just recorded: it is the newest), counted in its `_truncated` marker; then close the
    /// holes once they outnumber the records (the pending ones renumbered, the resolved ones queued
    /// again). Cost: O(log n) per record dropped (the session's heaps, `Session::resolved` and
    /// `Session::waiting`), O(1) amortised for closing the holes.
    pub(super) fn trim_permissions(&mut self, slot: usize) {
        if let Some(max) = self.limits.permissions {
            let session = self.sessions.at_mut(slot);
            while session.permission_count > max {
                let i = match session.resolved.pop() {
                    Some(Reverse(i)) => i,
                    None => {
                        // The oldest pending record (stale entries: resolved or dropped since).
                        let permissions = &self.permissions;
                        let live = |i: &usize| permissions[*i].as_ref().is_some_and(|p| p.outcome == Outcome::Pending);
                        let mut found = None;
                        while let Some(Reverse(i)) = session.waiting.pop() {
                            if live(&i) {
                                found = Some(i);
                                break;
                            }
                        }
                        let Some(i) = found else {
                            break;
                        };
                        i
                    }
                };
                session.dropped.permissions += 1;
                let p = self.permissions[i].take().expect("a record");
                debug_assert!(p.session == slot);
                if p.outcome == Outcome::Pending && self.pending.get(&p.id) == Some(&i) {
                    self.pending.remove(&p.id);
                }
                session.permission_count -= 1;
                self.permission_holes += 1;
            }
        }
        self.close_permission_holes();
    }

    /// Close the holes of the permission list once they outnumber the records: the pending ones
    /// renumbered, the resolved ones queued again.
    pub(super) fn close_permission_holes(&mut self) {
        let live = self.permissions.len() - self.permission_holes;
        if self.permission_holes >= 32 && self.permission_holes > live {
            for p in self.permissions.iter().flatten() {
                let session = self.sessions.at_mut(p.session);
                session.resolved.clear();
                session.waiting.clear();
            }
            self.permissions.retain(Option::is_some);
            self.permission_holes = 0;
            self.pending.clear();
            // In ascending order: each push onto a min-heap costs O(1).
            for (i, p) in self.permissions.iter().flatten().enumerate() {
                if p.outcome == Outcome::Pending {
                    self.pending.insert(p.id.clone(), i);
                    self.sessions.at_mut(p.session).waiting.push(Reverse(i));
                } else {
                    self.sessions.at_mut(p.session).resolved.push(Reverse(i));
                }
            }
        }
    }

    /// Bound on terminals only: after a frame created (`created`) the terminal in `tslot` (its id:
    /// `key()`) of the session in `slot`, or left it exited: number it if new, queue it if exited,
    /// and after a creation, drop terminals beyond the bound (`trim_terminals`). Out of line: a
    /// frame comes here only when it creates a terminal or sets an exit status.
    #[inline(never)]
    pub(super) fn touch_terminal(&mut self, (slot, tslot): (usize, usize), key: impl FnOnce() -> Text, created: bool) {
        let session = self.sessions.at_mut(slot);
        let t = session.terminals.at_mut(tslot);
        if created {
            t.seq = session.terminal_seq;
            session.terminal_seq += 1;
        }
        let seq = t.seq;
        if t.exit_status.is_some() && !t.queued {
            t.queued = true;
            session.exited.push(Reverse((seq, key())));
        }
        if created {
            trim_terminals(session, self.limits.terminals, seq);
        }
    }

    /// Bound only: after a frame created (`created`, numbered `seq`) or changed the tool call `key`
    /// of the session in `slot` (`finished`: its status now): record it if new, queue it if
    /// finished, and after a creation, evict. Out of line: stores without a bound never come here.
    #[inline(never)]
    pub(super) fn touch(&mut self, slot: usize, key: &[u8], created: bool, seq: usize, finished: bool) {
        if created {
            debug_assert_eq!(seq, self.order_base + self.order.len());
            self.order.push(Some(Tracked {
                slot,
                key: key.into(),
                queued: false,
            }));
        }
        let entry = self.order[seq - self.order_base].as_mut().expect("a live entry");
        if finished && !entry.queued {
            entry.queued = true;
            self.finished.push(Reverse(seq));
        }
        if created && self.max_tool_calls.is_some_and(|max| self.tool_call_count > max) {
            self.evict(seq);
        }
    }

    /// Drop tool calls while more than the bound are retained: the oldest finished one, else the
    /// oldest one; never `keep` (the creation number of the tool call just created). Then cut
    /// off or renumber the evicted entries.
    pub(super) fn evict(&mut self, keep: usize) {
        let Some(max) = self.max_tool_calls else {
            return;
        };
        while self.tool_call_count > max {
            let finished = if self.finished.is_empty() {
                None
            } else {
                self.oldest_finished(keep)
            };
            let Some(seq) = finished.or_else(|| self.oldest(keep)) else {
                return;
            };
            let Tracked { slot, key, .. } = self.order[seq - self.order_base].take().expect("a live entry");
            let session = self.sessions.at_mut(slot);
            if let Some(s) = session.tool_calls.slot(&key) {
                session.tool_calls.remove_slot(s);
                session.tool_calls.maybe_compact();
            }
            self.tool_call_count -= 1;
            self.evicted += 1;
        }
        self.trim_order();
    }

    /// After tool calls left `order` (evicted, or their session dropped): cut off the entries
    /// before `order_head`, or renumber the live ones, when they are due.
    pub(super) fn trim_order(&mut self) {
        self.skip_evicted();
        let head = self.order_head;
        let most = 2 * self.tool_call_count + 64;
        if self.order.len() - head > most || self.finished.len() > most {
            self.compact();
        } else if head >= 64 && 2 * head >= self.order.len() {
            self.order.drain(..head);
            self.order_base += head;
            self.order_head = 0;
        }
    }

    /// The oldest finished tool call but `keep`, taken off the heap (dropping stale entries).
    fn oldest_finished(&mut self, keep: usize) -> Option<usize> {
        let (order, base, sessions) = (&mut self.order, self.order_base, &self.sessions);
        pop_oldest(&mut self.finished, |&seq| {
            let Some(Some(entry)) = seq.checked_sub(base).and_then(|i| order.get_mut(i)) else {
                return Seen::Skip; // evicted
            };
            let tool_calls = &sessions.at(entry.slot).expect("session slot").1.tool_calls;
            if !tool_calls.get(&entry.key).is_some_and(|tc| tc.finished()) {
                entry.queued = false;
                Seen::Skip
            } else if seq == keep {
                Seen::Keep
            } else {
                Seen::Victim
            }
        })
    }

    /// Move `order_head` past the evicted entries at the front.
    fn skip_evicted(&mut self) {
        while self.order.get(self.order_head).is_some_and(Option::is_none) {
            self.order_head += 1;
        }
    }

    /// The oldest tool call but `keep`.
    fn oldest(&mut self, keep: usize) -> Option<usize> {
        self.skip_evicted();
        let seq = self.order_base + self.order_head;
        // `keep` is the newest tool call: with more than one retained, the oldest is another.
        (self.order_head < self.order.len() && seq != keep).then_some(seq)
    }

    /// Renumber the live tool calls 0, 1, 2, ... in creation order and rebuild the heap from their
    /// queued flags (after a restore, this numbers the tool calls and fills the heap).
    pub(super) fn compact(&mut self) {
        let order = std::mem::take(&mut self.order);
        let mut finished = Vec::new();
        for entry in order.into_iter().flatten() {
            let seq = self.order.len();
            let tc = self.sessions.at_mut(entry.slot).tool_calls.get_mut(&entry.key);
            tc.expect("a live entry").seq = seq;
            if entry.queued {
                finished.push(Reverse(seq));
            }
            self.order.push(Some(entry));
        }
        self.order_base = 0;
        self.order_head = 0;
        // `from` heapifies in O(n) (the creation numbers come in ascending order).
        self.finished = BinaryHeap::from(finished);
    }
}

#[cfg(test)]
mod tests {
    use super::super::records::{IdKey, OrderedMap};
    use super::super::tests::{apply, upd};
    use super::*;

    fn ids(s: &Store) -> Vec<&[u8]> {
        s.session(b"s1").unwrap().tool_calls.iter().map(|(k, _)| k).collect()
    }

    #[test]
    fn output_keeps_its_tail_from_a_character_boundary() {
        let mut t = Terminal::default();
        let mut total = 0;
        // "é" is C3 A9: a cut inside it moves past the A9
        for (chunk, kept, dropped) in [
            (&b"ab"[..], &b"ab"[..], 0),
            (b"\xc3\xa9", b"b\xc3\xa9", 1),
            (b"\xe2\x82\xac", b"\xe2\x82\xac", 4),
            // not UTF-8: at most 3 continuation bytes are passed
            (b"\x80\x80\x80\x80\x80", b"", 12),
            (b"\x80\x80\x80\x80\x80x", b"x", 17),
        ] {
            t.output.extend_from_slice(chunk);
            total += chunk.len();
            trim_output(&mut t, Some(3));
            assert_eq!((t.output(), t.dropped_bytes), (kept, dropped));
            assert_eq!(t.output.len() - t.output_start + dropped as usize, total);
        }
        trim_output(&mut t, None);
        assert_eq!(t.output(), b"x");
        t.set_output(b"xyz".to_vec());
        trim_output(&mut t, Some(0));
        assert_eq!((t.output(), t.dropped_bytes), (&b""[..], 3));
    }

    #[test]
    fn permission_records_are_bounded_per_session() {
        let limits = Limits {
            permissions: Some(2),
            ..Limits::default()
        };
        let mut s = Store::with_limits(None, None, limits);
        let request = |id: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"session/request_permission","params":{{"sessionId":"s1","options":[]}}}}"#
            )
        };
        let resolve = |id: usize| format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":1,"message":"x"}}}}"#);
        for id in 1000..1003 {
            apply(&mut s, &request(id)).unwrap();
        }
        // the oldest pending record goes when no resolved one is left
        let ids: Vec<_> = s.permissions().map(|p| p.id.clone()).collect();
        assert_eq!(ids, [IdKey::Int(1001), IdKey::Int(1002)]);
        assert_eq!(s.session(b"s1").unwrap().dropped.permissions, 1);
        assert!(!s.pending.contains_key(&IdKey::Int(1000)));
        for id in 1000..1003 {
            apply(&mut s, &resolve(id)).unwrap();
        }
        for id in 0..100 {
            apply(&mut s, &request(id)).unwrap();
            apply(&mut s, &resolve(id)).unwrap();
        }
        apply(&mut s, &request(500)).unwrap();
        let ids: Vec<_> = s.permissions().map(|p| p.id.clone()).collect();
        assert_eq!(ids, [IdKey::Int(99), IdKey::Int(500)]);
        assert_eq!(s.session(b"s1").unwrap().dropped.permissions, 102);
        assert!(s.permissions.len() <= 2 * 2 + 32);
        assert_eq!(s.pending.get(&IdKey::Int(500)).copied(), Some(s.permissions.len() - 1));
    }

    #[test]
    fn terminals_are_bounded_per_session() {
        let limits = Limits {
            terminals: Some(3),
            ..Limits::default()
        };
        let mut s = Store::with_limits(None, None, limits);
        let chunk = |t: usize| {
            upd(&format!(
                r#"{{"sessionUpdate":"terminal_output_chunk","terminalId":"t{t}","data":""}}"#
            ))
        };
        let exit = |t: usize| {
            upd(&format!(
                r#"{{"sessionUpdate":"terminal_update","terminalId":"t{t}","exitStatus":{{"exitCode":0}}}}"#
            ))
        };
        for t in 0..10_000 {
            apply(&mut s, &chunk(t)).unwrap();
            if t % 3 == 1 {
                apply(&mut s, &exit(t - 1)).unwrap();
            }
            let session = s.session(b"s1").unwrap();
            assert!(session.terminals.len() <= 3 && session.exited.len() <= 3);
        }
        let session = s.session(b"s1").unwrap();
        let kept: Vec<&[u8]> = session.terminals.iter().map(|(k, _)| k).collect();
        assert_eq!(kept, [&b"t9997"[..], b"t9998", b"t9999"]);
        assert_eq!(session.dropped.terminals, 9997);
    }

    #[test]
    fn the_least_recently_active_session_goes() {
        let limits = Limits {
            sessions: Some(3),
            ..Limits::default()
        };
        let mut s = Store::with_limits(None, None, limits);
        let touch = |s: &mut Store, sid: &str| {
            let line = upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c"}"#)
                .replace("\"s1\"", &format!("\"{sid}\""));
            apply(s, &line).unwrap();
        };
        // many sessions, each touched again after the next one: the slots move as sessions go
        for i in 0..200 {
            touch(&mut s, &format!("s{i}"));
            if i > 0 {
                touch(&mut s, &format!("s{}", i - 1));
            }
            assert!(s.sessions().len() <= 3);
        }
        let kept: Vec<&[u8]> = s.sessions().iter().map(|(k, _)| k).collect();
        assert_eq!(kept, [&b"s197"[..], b"s198", b"s199"]);
        let order: Vec<&[u8]> = s.activity_order().into_iter().map(|slot| s.session_id(slot)).collect();
        assert_eq!(order, [&b"s197"[..], b"s199", b"s198"]);
        assert_eq!((s.evicted_sessions(), s.tool_call_count()), (197, 3));
    }

    #[test]
    fn held_len_is_the_length_of_the_checkpoint_text() {
        for raw in [
            &br#"{"type":"content","content":{"type":"text","text":"a \" b"}}"#[..],
            br#" { "a" : [ 1 , 2.50 , { } , [ ] ] , "b" : "\u00e9" } "#,
            br#"{"a":1,"b":{"a":2,"a":3},"a":4}"#,
            br#"{"\u0061":1,"b":[true,false,null]}"#,
            br#"[{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16}]"#,
            br#""x""#,
        ] {
            let mut out = Vec::new();
            super::super::records::write_value(&mut out, raw, 0).unwrap();
            assert_eq!(held_len(raw), out.len(), "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn content_bytes_keep_the_newest_items() {
        let limits = Limits {
            content_bytes: Some(20),
            ..Limits::default()
        };
        let mut s = Store::with_limits(None, None, limits);
        // 9 bytes each as a checkpoint writes them (`{"t":"a"}`), whatever the frame's spaces
        for text in ["a", "b", "c"] {
            let u = format!(
                r#"{{"sessionUpdate":"tool_call_content_chunk","toolCallId":"c","content":{{ "t" : "{text}" }}}}"#
            );
            apply(&mut s, &upd(&u)).unwrap();
        }
        let tc = s.session(b"s1").unwrap().tool_calls.get(b"c").unwrap();
        assert_eq!((tc.content().len(), tc.dropped_items, tc.content_bytes), (2, 1, 18));
        let big = format!(
            r#"{{"sessionUpdate":"tool_call_content_chunk","toolCallId":"c","content":{{"t":"{}"}}}}"#,
            "x".repeat(100)
        );
        apply(&mut s, &upd(&big)).unwrap();
        let tc = s.session(b"s1").unwrap().tool_calls.get(b"c").unwrap();
        assert_eq!((tc.content().len(), tc.dropped_items, tc.content_bytes), (1, 3, 108));
    }

    #[test]
    fn first_slot_passes_removed_slots_once() {
        let mut m = OrderedMap::default();
        for i in 0..10u8 {
            m.push(Box::new([i]), i);
        }
        for i in 0..9 {
            let first = m.first_slot().unwrap();
            assert_eq!(first, i);
            m.remove_slot(first);
        }
        assert_eq!(m.first_slot(), Some(9));
        assert_eq!(m.iter().map(|(_, v)| *v).collect::<Vec<_>>(), [9]);
    }

    #[test]
    fn bound_evicts_oldest_finished_first() {
        let mut s = Store::new(Some(2), Some(2));
        apply(&mut s, &upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"a"}"#)).unwrap();
        apply(
            &mut s,
            &upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"b","status":"completed"}"#),
        )
        .unwrap();
        apply(&mut s, &upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"c"}"#)).unwrap();
        assert_eq!(ids(&s), [&b"a"[..], b"c"]);
        assert_eq!(s.evicted(), 1);
    }

    #[test]
    fn a_status_that_changes_back_is_not_finished() {
        let mut s = Store::new(Some(2), Some(2));
        for u in [
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"a"}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"b","status":"failed"}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"b","status":"in_progress"}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"c"}"#,
        ] {
            apply(&mut s, &upd(u)).unwrap();
        }
        assert_eq!(ids(&s), [&b"b"[..], b"c"]);
        assert!(s.finished.is_empty());
    }

    #[test]
    fn stale_entries_stay_bounded() {
        // An old unfinished tool call at the front while finished ones churn behind it.
        let mut s = Store::new(Some(2), Some(3));
        apply(
            &mut s,
            &upd(r#"{"sessionUpdate":"tool_call_update","toolCallId":"old"}"#),
        )
        .unwrap();
        for i in 0..10_000 {
            let u = format!(r#"{{"sessionUpdate":"tool_call_update","toolCallId":"c{i}","status":"completed"}}"#);
            apply(&mut s, &upd(&u)).unwrap();
        }
        assert_eq!(s.tool_call_count(), 3);
        assert!(s.order.len() - s.order_head <= 2 * 3 + 64 && s.finished.len() <= 2 * 3 + 64);
        assert_eq!(ids(&s), [&b"old"[..], b"c9998", b"c9999"]);
    }
}
