//! Direct-mapped caches of short Python strings. Object keys and routing values (method names,
//! update kinds, session ids) recur in every frame; returning a cached `str` costs a hash and a
//! compare instead of an allocation, and cached keys are interned so dict lookups stay fast.
//! Tool-call ids do not go through the cache: each is new with its tool call, so caching them
//! only evicted the strings that do recur, and each eviction released a `str` made long before
//! (a cache miss of its own: perf put half of the cache's time on that release at 1M frames).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

const SLOTS: usize = 1024;
/// Longer strings are not cached.
pub const MAX_LEN: usize = 64;

/// One cached string: its length, first and last 8 bytes and the `str` object, in 32 bytes (a
/// lookup touches half a cache line; the bytes of longer strings live apart, in `Table::bytes`, and
/// are read only when the rest matched).
struct Slot {
    len: u8,
    /// The first and the last 8 bytes (zero-padded below 8): for strings of up to 16 bytes they
    /// are the whole text, so a hit costs two word compares and no `memcmp`.
    head: u64,
    tail: u64,
    obj: Py<PyString>,
}

/// The bytes of a cached string of more than 16 bytes (zero-padded; unused for shorter ones).
type Bytes = [u8; MAX_LEN];

/// A cache's slots and, index for index, the bytes of their strings.
struct Table {
    slots: Vec<Option<Slot>>,
    bytes: Vec<Bytes>,
}

pub struct StrCache {
    /// Taken while a slot table is in use; a re-entrant call (a finalizer run by an allocation)
    /// simply goes without the cache.
    busy: AtomicBool,
    intern: bool,
    slots: UnsafeCell<Option<Table>>,
}

// SAFETY: `slots` is only touched by the holder of `busy`.
unsafe impl Sync for StrCache {}

pub static KEYS: StrCache = StrCache::new(true);
pub static VALUES: StrCache = StrCache::new(false);

/// The first and last 8 bytes of a short string (zero-padded when shorter than 8).
#[inline(always)]
fn head_tail(b: &[u8]) -> (u64, u64) {
    let n = b.len();
    if n >= 8 {
        (
            u64::from_le_bytes(b[..8].try_into().unwrap_or_default()),
            u64::from_le_bytes(b[n - 8..].try_into().unwrap_or_default()),
        )
    } else if n >= 4 {
        // Two overlapping 4-byte loads (no variable-length copy, which compiles to a memcpy call).
        let lo = u64::from(u32::from_le_bytes(b[..4].try_into().unwrap_or_default()));
        let hi = u64::from(u32::from_le_bytes(b[n - 4..].try_into().unwrap_or_default()));
        (lo | (hi << ((n - 4) * 8)), 0)
    } else {
        let mut v = 0u64;
        for (i, &x) in b.iter().enumerate() {
            v |= u64::from(x) << (8 * i);
        }
        (v, 0)
    }
}

/// Do the bytes between the first and the last 8 of `bytes` (more than 16 in all) equal those of
/// the stored string (same length, head and tail words already matched)? Up to 32 bytes that is
/// two word compares (overlapping the head and tail, which are equal anyway); longer strings
/// compare the rest.
#[inline(always)]
fn middle_equal(stored: &Bytes, bytes: &[u8]) -> bool {
    let n = bytes.len();
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
    if n <= 32 {
        return word(stored, 8) == word(bytes, 8) && word(stored, n - 16) == word(bytes, n - 16);
    }
    stored[8..n - 8] == bytes[8..n - 8]
}

/// A quick hash of a short string: its length and its first and last 8 bytes. Collisions only
/// cost a cache miss (the bytes are compared).
#[inline(always)]
fn hash_words(head: u64, tail: u64, n: usize) -> u64 {
    let h = (head ^ tail.rotate_left(29) ^ (n as u64)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^ (h >> 32)
}

/// Create a `str` from valid UTF-8 (the ASCII case copies straight into a compact string).
#[inline]
pub fn new_str<'py>(py: Python<'py>, bytes: &[u8]) -> Bound<'py, PyAny> {
    // SAFETY: `bytes` is valid UTF-8 (checked by the scanner). For ASCII we allocate a compact
    // ASCII string of exactly `len` code points and fill its data buffer.
    unsafe {
        let len = bytes.len() as ffi::Py_ssize_t;
        let ptr = if bytes.is_ascii() {
            let s = ffi::PyUnicode_New(len, 127);
            if !s.is_null() {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), ffi::PyUnicode_DATA(s).cast::<u8>(), bytes.len());
            }
            s
        } else if bytes.len() <= SHORT_UTF8 {
            new_str_utf8(bytes)
        } else {
            // Long text: CPython's decoder (word-at-a-time fast paths) wins there.
            ffi::PyUnicode_FromStringAndSize(bytes.as_ptr().cast(), len)
        };
        Bound::from_owned_ptr_or_err(py, ptr).expect("allocating a str failed")
    }
}

/// Non-ASCII text up to this many bytes goes through `new_str_utf8` (measured: faster than
/// CPython's decoder on short strings, slower on long ones).
const SHORT_UTF8: usize = 256;

/// A non-ASCII `str` from valid UTF-8, in two tight passes: count the code points and find the
/// widest one from the lead bytes, then decode straight into the string's storage (CPython's
/// decoder starts narrow and widens — copying — at the first wider character).
///
/// # Safety
/// `bytes` must be valid UTF-8; the GIL must be held.
unsafe fn new_str_utf8(bytes: &[u8]) -> *mut ffi::PyObject {
    let mut chars = 0usize;
    let mut top = 0u8;
    for &b in bytes {
        chars += usize::from((b as i8) >= -64);
        top = top.max(b);
    }
    // Lead bytes: C2–C3 give U+0080–U+00FF, C4–DF and E0–EF up to U+FFFF, F0–F4 beyond.
    let maxchar: ffi::Py_UCS4 = if top >= 0xF0 {
        0x10FFFF
    } else if top >= 0xC4 {
        0xFFFF
    } else {
        0xFF
    };
    let s = ffi::PyUnicode_New(chars as ffi::Py_ssize_t, maxchar);
    if s.is_null() {
        return s;
    }
    let data = ffi::PyUnicode_DATA(s);
    match maxchar {
        0xFF => decode_into(bytes, data.cast::<u8>()),
        0xFFFF => decode_into(bytes, data.cast::<u16>()),
        _ => decode_into(bytes, data.cast::<u32>()),
    }
    s
}

/// Decode valid UTF-8 into code units of `T` (wide enough for every code point in it).
#[inline(always)]
unsafe fn decode_into<T: Copy + TryFrom<u32>>(bytes: &[u8], out: *mut T) {
    let n = bytes.len();
    let mut i = 0;
    let mut o = 0;
    let put = |o: usize, cp: u32| {
        // SAFETY (caller): `out` has room for every code point, each of which fits in `T`.
        *out.add(o) = T::try_from(cp).unwrap_or_else(|_| std::hint::unreachable_unchecked());
    };
    while i < n {
        // Runs of ASCII, 8 bytes at a time.
        while i + 8 <= n {
            let word = u64::from_le_bytes(bytes.get_unchecked(i..i + 8).try_into().unwrap_or_default());
            if word & 0x8080_8080_8080_8080 != 0 {
                break;
            }
            for k in 0..8 {
                put(o + k, u32::from(*bytes.get_unchecked(i + k)));
            }
            i += 8;
            o += 8;
        }
        if i >= n {
            break;
        }
        let b = u32::from(*bytes.get_unchecked(i));
        if b < 0x80 {
            put(o, b);
            i += 1;
        } else if b < 0xE0 {
            put(o, ((b & 0x1F) << 6) | (u32::from(*bytes.get_unchecked(i + 1)) & 0x3F));
            i += 2;
        } else if b < 0xF0 {
            put(
                o,
                ((b & 0x0F) << 12)
                    | ((u32::from(*bytes.get_unchecked(i + 1)) & 0x3F) << 6)
                    | (u32::from(*bytes.get_unchecked(i + 2)) & 0x3F),
            );
            i += 3;
        } else {
            put(
                o,
                ((b & 0x07) << 18)
                    | ((u32::from(*bytes.get_unchecked(i + 1)) & 0x3F) << 12)
                    | ((u32::from(*bytes.get_unchecked(i + 2)) & 0x3F) << 6)
                    | (u32::from(*bytes.get_unchecked(i + 3)) & 0x3F),
            );
            i += 4;
        }
        o += 1;
    }
}

impl StrCache {
    const fn new(intern: bool) -> Self {
        Self {
            busy: AtomicBool::new(false),
            intern,
            slots: UnsafeCell::new(None),
        }
    }

    /// Take the cache for a series of lookups (one atomic operation instead of one per lookup).
    /// `None` when it is in use further up the stack (a finalizer run by an allocation that
    /// re-entered acp-fast): the caller then goes without the cache.
    #[inline]
    pub fn lock(&self) -> Option<CacheGuard<'_>> {
        if self.busy.swap(true, Ordering::Acquire) {
            return None;
        }
        // SAFETY: we hold `busy`, so no one else touches the table until the guard drops.
        let table = unsafe { &mut *self.slots.get() };
        let table = table.get_or_insert_with(|| Table {
            slots: (0..SLOTS).map(|_| None).collect(),
            bytes: vec![[0; MAX_LEN]; SLOTS],
        });
        Some(CacheGuard { cache: self, table })
    }
}

/// Exclusive use of a cache's table; released on drop.
pub struct CacheGuard<'c> {
    cache: &'c StrCache,
    table: &'c mut Table,
}

impl CacheGuard<'_> {
    /// The `str` for `bytes` (valid UTF-8), from the cache when possible. A miss allocates while
    /// the table is held; anything that re-enters during the allocation finds the cache busy and
    /// goes without it.
    #[inline]
    pub fn get<'py>(&mut self, py: Python<'py>, bytes: &[u8]) -> Bound<'py, PyAny> {
        if bytes.len() > MAX_LEN {
            return new_str(py, bytes);
        }
        let (head, tail) = head_tail(bytes);
        let idx = (hash_words(head, tail, bytes.len()) as usize) % SLOTS;
        if let Some(slot) = &self.table.slots[idx] {
            if usize::from(slot.len) == bytes.len()
                && slot.head == head
                && slot.tail == tail
                && (bytes.len() <= 16 || middle_equal(&self.table.bytes[idx], bytes))
            {
                return slot.obj.bind(py).clone().into_any();
            }
        }
        let mut fresh = new_str(py, bytes);
        if self.cache.intern {
            // SAFETY: `fresh` is an exact str we own; interning may replace the pointer.
            fresh = unsafe {
                let mut p = fresh.into_ptr();
                ffi::PyUnicode_InternInPlace(&raw mut p);
                Bound::from_owned_ptr(py, p)
            };
        }
        if let Ok(s) = fresh.cast::<PyString>() {
            if bytes.len() > 16 {
                self.table.bytes[idx][..bytes.len()].copy_from_slice(bytes);
            }
            self.table.slots[idx] = Some(Slot {
                len: bytes.len() as u8,
                head,
                tail,
                obj: s.clone().unbind(),
            });
        }
        fresh
    }
}

impl Drop for CacheGuard<'_> {
    fn drop(&mut self) {
        self.cache.busy.store(false, Ordering::Release);
    }
}

/// The `str` of a validated string token of `data` (unescaped when it has escapes), from `cache`
/// when there is one.
#[inline]
pub fn token_str(py: Python<'_>, data: &[u8], s: crate::scanner::Str, cache: &mut Option<CacheGuard<'_>>) -> Py<PyAny> {
    let mut scratch = Vec::new();
    let bytes = crate::scanner::string_text(data, s, &mut scratch);
    match cache.as_mut() {
        Some(c) => c.get(py, bytes).unbind(),
        None => new_str(py, bytes).unbind(),
    }
}
