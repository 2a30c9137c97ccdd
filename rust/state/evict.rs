//! The bounds (DESIGN §7.8). `Limits` are the bounds inside a session (`trim_front` keeps the
//! newest items of a list, counting what it drops); the rest of this file is the `max_tool_calls`
//! bound: after a frame creates a tool call and more than N are retained, the oldest (first
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
//! Mirror: `python/acp_fast/_fallback/state/evict.py`. Differences on purpose: here a record
//! carries its creation number (`ToolCall::seq`) and its `order` entry the queued flag; the
//! fallback's records are plain dicts, so it keeps both in a dict by (session, id).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::records::Text;
use super::Store;

/// The bounds inside a session (DESIGN §7.8; `None`: no bound). The defaults are `Default`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Unknown updates kept per session (0, the default: none are kept).
    pub updates: Option<usize>,
}

impl Default for Limits {
    fn default() -> Self {
        Self { updates: Some(0) }
    }
}

impl Limits {
    /// The checkpoint members of the bounds, in document order (DESIGN §7.8).
    pub const NAMES: [&'static str; 1] = ["maxUpdates"];

    /// The bounds, in `NAMES` order.
    pub fn values(&self) -> [Option<usize>; 1] {
        [self.updates]
    }

    /// Each bound's smallest value (1: a count of records, 0: of items) and slot, in `NAMES` order.
    pub fn slots_mut(&mut self) -> [(u64, &mut Option<usize>); 1] {
        [(0, &mut self.updates)]
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

/// An entry of `order`: where the tool call is, and whether its creation number is in the heap of
/// finished tool calls.
pub(super) struct Tracked {
    pub slot: usize,
    pub key: Text,
    pub queued: bool,
}

impl Store {
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

    /// The live entry of `seq`, if it is one.
    fn entry(&self, seq: usize) -> Option<&Tracked> {
        self.order.get(seq.checked_sub(self.order_base)?)?.as_ref()
    }

    /// The oldest finished tool call but `keep`, taken off the heap (dropping stale entries).
    fn oldest_finished(&mut self, keep: usize) -> Option<usize> {
        let mut held = None;
        let mut victim = None;
        while let Some(Reverse(seq)) = self.finished.pop() {
            let Some(entry) = self.entry(seq) else {
                continue; // evicted
            };
            let tool_calls = &self.sessions.at(entry.slot).expect("session slot").1.tool_calls;
            if !tool_calls.get(&entry.key).is_some_and(|tc| tc.finished()) {
                self.order[seq - self.order_base].as_mut().expect("a live entry").queued = false;
            } else if seq == keep {
                held = Some(seq);
            } else {
                victim = Some(seq);
                break;
            }
        }
        if let Some(seq) = held {
            self.finished.push(Reverse(seq));
        }
        victim
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
    use super::super::tests::{apply, upd};
    use super::*;

    fn ids(s: &Store) -> Vec<&[u8]> {
        s.session(b"s1").unwrap().tool_calls.iter().map(|(k, _)| k).collect()
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
