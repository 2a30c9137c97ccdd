//! An insertion-ordered map with O(1) removal, what the store's records live in (sessions, and
//! each session's tool calls, terminals and plans): a slab of slots indexed by a hash table;
//! removed slots are compacted away once they outnumber the live ones, and `first_slot` finds
//! the oldest entry in amortised O(1) (a head pointer past the removed prefix).
//!
//! Moved out of `records.rs` (which re-exports it). Rust only: the fallback's dicts (and the
//! OrderedDicts of its terminals and plans, `python/acp_fast/_fallback/state/records.py`) play
//! its part.

use hashbrown::{DefaultHashBuilder, HashTable};

use super::records::Text;

pub struct OrderedMap<V> {
    slots: Vec<Option<(Text, V)>>,
    table: HashTable<usize>,
    hasher: DefaultHashBuilder,
    live: usize,
    /// All slots before it are removed ones (`first_slot` moves it on).
    head: usize,
}

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            table: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            live: 0,
            head: 0,
        }
    }
}

impl<V> OrderedMap<V> {
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        use std::hash::BuildHasher;
        self.hasher.hash_one(key)
    }

    /// The slot of `key`, if present.
    #[inline(always)]
    pub fn slot(&self, key: &[u8]) -> Option<usize> {
        let slots = &self.slots;
        self.table
            .find(self.hash(key), |&i| slots[i].as_ref().is_some_and(|(k, _)| **k == *key))
            .copied()
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.slot(key).map(|i| &self.slots[i].as_ref().expect("live slot").1)
    }

    #[inline(always)]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        self.slot(key).map(|i| self.at_mut(i))
    }

    pub fn at(&self, slot: usize) -> Option<(&[u8], &V)> {
        self.slots.get(slot)?.as_ref().map(|(k, v)| (&**k, v))
    }

    #[inline]
    pub fn at_mut(&mut self, slot: usize) -> &mut V {
        &mut self.slots[slot].as_mut().expect("live slot").1
    }

    /// Append a key that is not present; returns its slot.
    pub fn push(&mut self, key: Text, value: V) -> usize {
        let i = self.slots.len();
        let h = self.hash(&key);
        let slots = &self.slots;
        let hasher = &self.hasher;
        self.table.insert_unique(h, i, |&j| {
            use std::hash::BuildHasher;
            hasher.hash_one(&*slots[j].as_ref().expect("live slot").0)
        });
        self.slots.push(Some((key, value)));
        self.live += 1;
        i
    }

    /// Remove the entry in `slot`. Slots of other entries stay valid until `compact` runs (only
    /// through `maybe_compact`, which callers use when they hold no slots).
    pub fn remove_slot(&mut self, slot: usize) -> Option<V> {
        let (key, value) = self.slots.get_mut(slot)?.take()?;
        let h = self.hash(&key);
        if let Ok(entry) = self.table.find_entry(h, |&i| i == slot) {
            entry.remove();
        }
        self.live -= 1;
        Some(value)
    }

    /// The slot of the first entry (the oldest), if any: amortised O(1) (the removed slots before
    /// it are passed once).
    pub fn first_slot(&mut self) -> Option<usize> {
        while self.slots.get(self.head).is_some_and(Option::is_none) {
            self.head += 1;
        }
        (self.head < self.slots.len()).then_some(self.head)
    }

    /// Drop removed slots when they outnumber the live entries. Returns whether slots moved.
    pub fn maybe_compact(&mut self) -> bool {
        self.compact_slots().is_some()
    }

    /// `maybe_compact`, telling where entries moved: the new slot of each old one (`usize::MAX`
    /// for removed ones), None when nothing moved.
    pub fn compact_slots(&mut self) -> Option<Vec<usize>> {
        let dead = self.slots.len() - self.live;
        if dead < 32 || dead < self.live {
            return None;
        }
        let slots = std::mem::take(&mut self.slots);
        let mut moved = Vec::with_capacity(slots.len());
        self.table.clear();
        self.head = 0;
        for entry in slots {
            match entry {
                Some((key, value)) => {
                    moved.push(self.push(key, value));
                    self.live -= 1;
                }
                None => moved.push(usize::MAX),
            }
        }
        Some(moved)
    }

    /// Keep the entries for which `keep` is true (then compact when due).
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8], &V) -> bool) {
        let gone: Vec<usize> = (0..self.slots.len())
            .filter(|&i| self.slots[i].as_ref().is_some_and(|(k, v)| !keep(k, v)))
            .collect();
        for i in gone {
            self.remove_slot(i);
        }
        self.maybe_compact();
    }

    /// The live entries with their slots, in order.
    pub fn iter_slots(&self) -> impl Iterator<Item = (usize, &[u8], &V)> {
        let live = self.slots.iter().enumerate();
        live.filter_map(|(i, e)| e.as_ref().map(|(k, v)| (i, &**k, v)))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &V)> {
        self.slots.iter().flatten().map(|(k, v)| (&**k, v))
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&[u8], &mut V)> {
        self.slots.iter_mut().flatten().map(|(k, v)| (&**k, v))
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.slots.iter().flatten().map(|(_, v)| v)
    }
}
