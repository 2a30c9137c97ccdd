//! The JSON grammar (RFC 8259, strict): validation, skipping, locating values and unescaping.
//!
//! One recursive-descent parser, generic over a [`Sink`] that receives the values. The no-op
//! [`Skip`] sink turns it into a validator that allocates nothing; the binding layer plugs in a
//! sink that builds Python objects, so validation and building are one pass.
//!
//! Mirror: `python/acp_fast/_fallback/scanner.py`. Error kinds, descriptions and positions are
//! fixed in docs/DESIGN.md §2.

use std::mem::MaybeUninit;

use crate::error::{describe_found, DecodeError, JsonType};

/// Deepest nesting of arrays/objects accepted (orjson's limit).
pub const MAX_DEPTH: u32 = 1024;
/// Stack kept free below a container before descending into it, and the size of a new stack
/// segment when there is less (see `stacker::maybe_grow`).
const STACK_RED_ZONE: usize = 64 * 1024;
const STACK_GROW: usize = 1024 * 1024;
/// Longest integer lexeme accepted, in digits (CPython's default int/str conversion limit).
pub const MAX_INT_DIGITS: usize = 4300;

const ESCAPE_HELP: &str = r#"an escape sequence (\" \\ \/ \b \f \n \r \t \uXXXX)"#;

/// A string token: `start..end` is the content between the quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Str {
    pub start: usize,
    pub end: usize,
    /// The content holds at least one backslash escape.
    pub escaped: bool,
}

/// A number token: `start..end` is the lexeme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Number {
    pub start: usize,
    pub end: usize,
    /// No fraction and no exponent.
    pub is_int: bool,
}

/// Receives the values the parser reads. Building cannot fail: the grammar is checked first.
pub trait Sink {
    type Value;
    type Array;
    type Object;
    fn null(&mut self) -> Self::Value;
    fn boolean(&mut self, value: bool) -> Self::Value;
    fn number(&mut self, data: &[u8], number: Number) -> Self::Value;
    fn string(&mut self, data: &[u8], string: Str) -> Self::Value;
    fn array_start(&mut self) -> Self::Array;
    fn array_push(&mut self, array: &mut Self::Array, value: Self::Value);
    fn array_end(&mut self, array: Self::Array) -> Self::Value;
    fn object_start(&mut self) -> Self::Object;
    fn object_insert(&mut self, object: &mut Self::Object, data: &[u8], key: Str, value: Self::Value);
    fn object_end(&mut self, object: Self::Object) -> Self::Value;
}

/// The sink that keeps nothing: parsing with it only validates.
pub struct Skip;

impl Sink for Skip {
    type Value = ();
    type Array = ();
    type Object = ();
    #[inline(always)]
    fn null(&mut self) {}
    #[inline(always)]
    fn boolean(&mut self, _: bool) {}
    #[inline(always)]
    fn number(&mut self, _: &[u8], _: Number) {}
    #[inline(always)]
    fn string(&mut self, _: &[u8], _: Str) {}
    #[inline(always)]
    fn array_start(&mut self) {}
    #[inline(always)]
    fn array_push(&mut self, (): &mut (), (): ()) {}
    #[inline(always)]
    fn array_end(&mut self, (): ()) {}
    #[inline(always)]
    fn object_start(&mut self) {}
    #[inline(always)]
    fn object_insert(&mut self, (): &mut (), _: &[u8], _: Str, (): ()) {}
    #[inline(always)]
    fn object_end(&mut self, (): ()) {}
}

/// Check that the whole input is UTF-8 (the first check of DESIGN §2.1).
pub fn check_utf8(data: &[u8]) -> Result<(), DecodeError> {
    if simdutf8::basic::from_utf8(data).is_ok() {
        return Ok(());
    }
    let at = match simdutf8::compat::from_utf8(data) {
        Err(e) => e.valid_up_to(),
        Ok(_) => 0,
    };
    Err(DecodeError::json(
        "invalid_utf8",
        format!("invalid UTF-8 byte 0x{:02X}", data[at]),
        at,
    ))
}

/// Validate a whole document (UTF-8, BOM, grammar, nothing after the value).
pub fn validate(data: &[u8]) -> Result<(), DecodeError> {
    check_utf8(data)?;
    Scanner::new(data).parse_document(&mut Skip)
}

/// Where a string scan must stop, as a bitmap: bit `i % 64` of word `i / 64` stands for byte `i`.
///
/// A byte is *special* when it is an unescaped `"`, a byte below 0x20, or the backslash of an
/// escape that is not one of the simple two-byte forms (`\uXXXX` and invalid escapes). Simple
/// escapes (`\n`, `\"`, `\\`, …) are validated in bulk while the index is built, so finding the
/// end of a string — even one dense with escapes — is a few word operations. Escape runs are
/// resolved with simdjson's carry trick (odd/even backslash runs). A second bitmap marks every
/// backslash, to tell whether a string needs unescaping. Built in one SIMD pass before parsing.
///
/// The words are left uninitialised until `fill` writes every one of them (zeroing the inline
/// words first cost about 3 % of a state-engine feed).
struct SpecialIndex {
    inline: [MaybeUninit<u64>; INLINE_WORDS * 2],
    heap: Vec<MaybeUninit<u64>>,
    words: usize,
    /// Set by `fill`: every word of `storage()` has been written.
    filled: bool,
}

/// Documents up to 1 KiB keep their index inline (larger ones pay one allocation).
const INLINE_WORDS: usize = 16;
const ODD_BITS: u64 = 0xAAAA_AAAA_AAAA_AAAA;

/// The escape codes that need no further check: `" \ / b f n r t`.
static SIMPLE_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'/' as usize] = true;
    t[b'b' as usize] = true;
    t[b'f' as usize] = true;
    t[b'n' as usize] = true;
    t[b'r' as usize] = true;
    t[b't' as usize] = true;
    t
};

impl SpecialIndex {
    #[cfg(test)]
    fn new(data: &[u8]) -> Self {
        let mut index = Self::empty(data.len());
        index.fill(data);
        index
    }

    /// An index of the right size for `len` bytes, not yet filled. It has a bit for offset `len`
    /// too, always set (a sentinel: the end of input stops every search, so `next` needs no bound
    /// checks). A partial last block is padded with zero bytes, which are control bytes and so
    /// special; a last block that is full gets one more word holding the sentinel alone.
    #[inline(always)]
    fn empty(len: usize) -> Self {
        let words = len / 64 + 1;
        let heap = if words <= INLINE_WORDS {
            Vec::new()
        } else {
            let mut heap = Vec::with_capacity(words * 2);
            heap.resize(words * 2, MaybeUninit::uninit());
            heap
        };
        Self {
            inline: [MaybeUninit::uninit(); INLINE_WORDS * 2],
            heap,
            words,
            filled: false,
        }
    }

    /// The `2 * words` words: special bytes, then backslashes.
    #[inline(always)]
    fn storage(&mut self) -> &mut [MaybeUninit<u64>] {
        if self.words <= INLINE_WORDS {
            &mut self.inline[..self.words * 2]
        } else {
            &mut self.heap
        }
    }

    /// Build the index of `data` in place (so the inline words are never copied).
    #[inline(always)]
    fn fill(&mut self, data: &[u8]) {
        let words = self.words;
        let (special, backslashes) = self.storage().split_at_mut(words);
        // Writes word `w` of both bitmaps for every block `w` (`words` blocks when the last one
        // is partial, `words - 1` when it is full: the sentinel word below is the last).
        let blocks = build_special_index(data, special, backslashes);
        if data.len() % 64 == 0 {
            special[words - 1].write(1);
            backslashes[words - 1].write(0);
        }
        assert_eq!(blocks + usize::from(data.len() % 64 == 0), words);
        self.filled = true;
    }

    #[inline(always)]
    fn all(&self) -> &[u64] {
        let words: &[MaybeUninit<u64>] = match (self.filled, self.words <= INLINE_WORDS) {
            // Not built yet: no words (a search then stops at a bounds check).
            (false, _) => &[],
            (true, true) => &self.inline[..self.words * 2],
            (true, false) => &self.heap,
        };
        // SAFETY: once `filled`, every word has been written (`fill` counts the blocks it wrote),
        // and `MaybeUninit<u64>` has the layout of `u64`.
        unsafe { &*(words as *const [MaybeUninit<u64>] as *const [u64]) }
    }

    /// First special byte at or after `i` (`i <= len`), or `len` (the sentinel).
    #[inline(always)]
    fn next(&self, i: usize, len: usize) -> usize {
        let words = &self.all()[..self.words];
        debug_assert!(i <= len && len / 64 < words.len());
        let mut w = i >> 6;
        let mut bits = words[w] & (u64::MAX << (i & 63));
        while bits == 0 {
            w += 1;
            // The sentinel bit of offset `len` ends the loop within `words`.
            bits = words[w];
        }
        (w << 6) + bits.trailing_zeros() as usize
    }

    /// First special byte or backslash at or after `i` (`i <= len`), or `len` (the sentinel).
    #[inline(always)]
    fn next_or_backslash(&self, i: usize) -> usize {
        let (special, bs) = self.all().split_at(self.words);
        let mut w = i >> 6;
        let mut bits = (special[w] | bs[w]) & (u64::MAX << (i & 63));
        while bits == 0 {
            w += 1;
            // The sentinel bit of offset `len` ends the loop within `special`.
            bits = special[w] | bs[w];
        }
        (w << 6) + bits.trailing_zeros() as usize
    }

    /// Is there a backslash in `start..end` (`start <= end <= len`)?
    #[cfg(test)]
    fn any_backslash(&self, start: usize, end: usize) -> bool {
        let bs = &self.all()[self.words..];
        let (first, last) = (start >> 6, end >> 6);
        if first == last {
            // Most strings lie within one 64-byte block: one mask (`end - start` < 64 here).
            return (bs[first] >> (start & 63)) & ((1u64 << (end - start)) - 1) != 0;
        }
        if bs[first] >> (start & 63) != 0 {
            return true;
        }
        bs[first + 1..last].iter().any(|&w| w != 0) || bs[last] & ((1u64 << (end & 63)) - 1) != 0
    }
}

/// Per-block masks of a 64-byte block: quotes, backslashes, control bytes, simple escape codes
/// (the last only where a backslash could make them matter; 0 in blocks without backslashes).
type Masks = (u64, u64, u64, u64);

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn block_masks_avx2(block: &[u8; 64]) -> Masks {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8, _mm256_movemask_epi8, _mm256_set1_epi8,
    };
    let quote = _mm256_set1_epi8(b'"' as i8);
    let backslash = _mm256_set1_epi8(b'\\' as i8);
    let ctl = _mm256_set1_epi8(0x1f);
    // SAFETY: two 32-byte loads inside the 64-byte block.
    let halves = unsafe {
        [
            _mm256_loadu_si256(block.as_ptr().cast::<__m256i>()),
            _mm256_loadu_si256(block.as_ptr().add(32).cast::<__m256i>()),
        ]
    };
    let (mut q, mut b, mut c) = (0u64, 0u64, 0u64);
    for (k, &v) in halves.iter().enumerate() {
        let shift = k * 32;
        q |= u64::from(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, quote)) as u32) << shift;
        b |= u64::from(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, backslash)) as u32) << shift;
        c |= u64::from(_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(v, ctl), v)) as u32) << shift;
    }
    let simple = if b == 0 { 0 } else { simple_codes_avx2(&halves) };
    (q, b, c, simple)
}

/// Bytes that are simple escape codes `" / \\ b f n r t` (0x22 0x2F 0x5C 0x62 0x66 0x6E 0x72
/// 0x74): a byte is one when `lo[low nibble] & hi[high nibble] != 0`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn simple_codes_avx2(halves: &[std::arch::x86_64::__m256i; 2]) -> u64 {
    use std::arch::x86_64::{
        _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_movemask_epi8, _mm256_set1_epi8, _mm256_setr_epi8,
        _mm256_shuffle_epi8, _mm256_srli_epi16,
    };
    #[rustfmt::skip]
    let lo = _mm256_setr_epi8(
        0, 0, 0b1101, 0, 0b1000, 0, 0b0100, 0, 0, 0, 0, 0, 0b0010, 0, 0b0100, 0b0001,
        0, 0, 0b1101, 0, 0b1000, 0, 0b0100, 0, 0, 0, 0, 0, 0b0010, 0, 0b0100, 0b0001,
    );
    #[rustfmt::skip]
    let hi = _mm256_setr_epi8(
        0, 0, 0b0001, 0, 0, 0b0010, 0b0100, 0b1000, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0b0001, 0, 0, 0b0010, 0b0100, 0b1000, 0, 0, 0, 0, 0, 0, 0, 0,
    );
    let nibble = _mm256_set1_epi8(0x0f);
    let zero = _mm256_set1_epi8(0);
    let mut simple = 0u64;
    for (k, &v) in halves.iter().enumerate() {
        let l = _mm256_shuffle_epi8(lo, _mm256_and_si256(v, nibble));
        let h = _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
        let none = _mm256_cmpeq_epi8(_mm256_and_si256(l, h), zero);
        simple |= u64::from(!(_mm256_movemask_epi8(none) as u32)) << (k * 32);
    }
    simple
}

#[inline(always)]
fn block_masks_portable(block: &[u8; 64]) -> Masks {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86_64 baseline; every load reads 16 bytes inside `block`.
    unsafe {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_set1_epi8,
        };
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let ctl = _mm_set1_epi8(0x1f);
        let (mut q, mut b, mut c) = (0u64, 0u64, 0u64);
        for k in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(k * 16).cast::<__m128i>());
            q |= u64::from(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)) as u16) << (k * 16);
            b |= u64::from(_mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash)) as u16) << (k * 16);
            c |= u64::from(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v)) as u16) << (k * 16);
        }
        (q, b, c, simple_codes_scalar(block, b))
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: NEON is part of the aarch64 baseline; every load reads 16 bytes inside `block`.
    unsafe {
        use std::arch::aarch64::{uint8x16_t, vceqq_u8, vcleq_u8, vdupq_n_u8, vld1q_u8};
        let quote = vdupq_n_u8(b'"');
        let backslash = vdupq_n_u8(b'\\');
        let ctl = vdupq_n_u8(0x1f);
        let v: [uint8x16_t; 4] = [
            vld1q_u8(block.as_ptr()),
            vld1q_u8(block.as_ptr().add(16)),
            vld1q_u8(block.as_ptr().add(32)),
            vld1q_u8(block.as_ptr().add(48)),
        ];
        let q = movemask_neon(v.map(|x| vceqq_u8(x, quote)));
        let b = movemask_neon(v.map(|x| vceqq_u8(x, backslash)));
        let c = movemask_neon(v.map(|x| vcleq_u8(x, ctl)));
        (q, b, c, simple_codes_scalar(block, b))
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    block_masks_scalar(block)
}

/// The block masks byte by byte (other platforms; the reference the vector ones are tested
/// against).
#[cfg_attr(
    all(any(target_arch = "x86_64", target_arch = "aarch64"), not(test)),
    allow(dead_code)
)]
fn block_masks_scalar(block: &[u8; 64]) -> Masks {
    let (mut q, mut b, mut c) = (0u64, 0u64, 0u64);
    for (i, &x) in block.iter().enumerate() {
        q |= u64::from(x == b'"') << i;
        b |= u64::from(x == b'\\') << i;
        c |= u64::from(x < 0x20) << i;
    }
    (q, b, c, simple_codes_scalar(block, b))
}

/// The 64 compare results (0xFF / 0x00 per byte) of four NEON vectors as a bitmask, bit i for
/// byte i (NEON has no movemask: keep one weight bit per byte, then add neighbours pairwise).
#[cfg(target_arch = "aarch64")]
#[inline(always)]
unsafe fn movemask_neon(m: [std::arch::aarch64::uint8x16_t; 4]) -> u64 {
    use std::arch::aarch64::{vandq_u8, vgetq_lane_u64, vld1q_u8, vpaddq_u8, vreinterpretq_u64_u8};
    const WEIGHTS: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
    let w = vld1q_u8(WEIGHTS.as_ptr());
    let a = vpaddq_u8(vandq_u8(m[0], w), vandq_u8(m[1], w));
    let b = vpaddq_u8(vandq_u8(m[2], w), vandq_u8(m[3], w));
    let ab = vpaddq_u8(a, b);
    vgetq_lane_u64::<0>(vreinterpretq_u64_u8(vpaddq_u8(ab, ab)))
}

/// Simple-code bits, checked only right after backslashes (where codes can be).
#[inline(always)]
fn simple_codes_scalar(block: &[u8; 64], backslashes: u64) -> u64 {
    let mut candidates = backslashes << 1;
    let mut simple = 0u64;
    while candidates != 0 {
        let at = candidates.trailing_zeros() as usize;
        simple |= u64::from(SIMPLE_ESCAPE[usize::from(block[at])]) << at;
        candidates &= candidates - 1;
    }
    simple
}

/// Fill word `w` of `special` and `backslashes` for every 64-byte block `w` of `data` (the last
/// one possibly partial); returns the number of blocks.
fn build_special_index(data: &[u8], special: &mut [MaybeUninit<u64>], backslashes: &mut [MaybeUninit<u64>]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { build_special_index_avx2(data, special, backslashes) };
        }
    }
    build_index_with(data, special, backslashes, block_masks_portable)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn build_special_index_avx2(
    data: &[u8],
    special: &mut [MaybeUninit<u64>],
    backslashes: &mut [MaybeUninit<u64>],
) -> usize {
    build_index_with(data, special, backslashes, |b| block_masks_avx2(b))
}

#[inline(always)]
fn build_index_with(
    data: &[u8],
    special: &mut [MaybeUninit<u64>],
    backslashes: &mut [MaybeUninit<u64>],
    masks: impl Fn(&[u8; 64]) -> Masks,
) -> usize {
    // Carried from block to block: the first byte of this block is escaped.
    let mut next_is_escaped = 0u64;
    let mut written = 0;
    let mut step = |w: usize, (quotes, bs, ctl, simple): Masks| {
        written += 1;
        backslashes[w].write(bs);
        let (escaped, escape) = if bs == 0 {
            let e = next_is_escaped;
            next_is_escaped = 0;
            (e, 0)
        } else {
            // simdjson's escape scanner: odd-length backslash runs escape the byte after them.
            let potential = bs & !next_is_escaped;
            let maybe_escaped = potential << 1;
            let codes = ((maybe_escaped | ODD_BITS).wrapping_sub(potential)) ^ ODD_BITS;
            let escaped = codes ^ (bs | next_is_escaped);
            let escape = codes & bs;
            next_is_escaped = escape >> 63;
            (escaped, escape)
        };
        // An escape whose code is not simple makes its backslash special.
        let hard = ((escape << 1) & !simple) >> 1;
        let mut word = (quotes & !escaped) | ctl | hard;
        // The code of an escape on bit 63 is the first byte of the next block.
        if escape >> 63 != 0 {
            let code = data.get(w * 64 + 64).copied().unwrap_or(0);
            if !SIMPLE_ESCAPE[usize::from(code)] {
                word |= 1 << 63;
            }
        }
        special[w].write(word);
    };
    let mut blocks = data.chunks_exact(64);
    let mut w = 0;
    for chunk in &mut blocks {
        if let Ok(block) = <&[u8; 64]>::try_from(chunk) {
            step(w, masks(block));
        }
        w += 1;
    }
    let rest = blocks.remainder();
    if let Some(last) = data.len().checked_sub(64).and_then(|at| data.get(at..)) {
        if !rest.is_empty() {
            // The last partial block: the masks of the last 64 bytes, shifted down to the block,
            // are those of the block padded with zeros (control bytes, never a simple code).
            if let Ok(block) = <&[u8; 64]>::try_from(last) {
                let shift = 64 - rest.len();
                let (quotes, bs, ctl, simple) = masks(block);
                let padding = u64::MAX << rest.len();
                step(
                    w,
                    (quotes >> shift, bs >> shift, (ctl >> shift) | padding, simple >> shift),
                );
            }
        }
    } else if !rest.is_empty() {
        // A document shorter than a block, padded with zeros.
        let mut tail = [0u8; 64];
        tail[..rest.len()].copy_from_slice(rest);
        step(w, masks(&tail));
    }
    written
}

/// Cursor over a UTF-8-checked input.
pub struct Scanner<'a> {
    pub data: &'a [u8],
    pub pos: usize,
    pub depth: u32,
    index: SpecialIndex,
}

#[cold]
#[inline(never)]
fn unexpected(data: &[u8], pos: usize, what: &str) -> DecodeError {
    if pos >= data.len() {
        DecodeError::json("eof", format!("expected {what}, found end of input"), data.len())
    } else {
        DecodeError::json(
            "unexpected_character",
            format!("expected {what}, found {}", describe_found(data, pos)),
            pos,
        )
    }
}

#[inline(always)]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

#[inline(always)]
fn hex_value(b: u8) -> Option<u16> {
    match b {
        b'0'..=b'9' => Some(u16::from(b - b'0')),
        b'a'..=b'f' => Some(u16::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u16::from(b - b'A' + 10)),
        _ => None,
    }
}

/// Read 4 hex digits at `at`, or `None` if any is missing/not hex (no error).
#[inline]
fn read_hex4(data: &[u8], at: usize) -> Option<u16> {
    let d = data.get(at..at + 4)?;
    let mut v = 0u16;
    for &b in d {
        v = (v << 4) | hex_value(b)?;
    }
    Some(v)
}

impl<'a> Scanner<'a> {
    #[inline(always)]
    pub fn new(data: &'a [u8]) -> Self {
        let mut scanner = Self::unindexed(data);
        scanner.build_index();
        scanner
    }

    /// A scanner whose index is not built yet: call `build_index` once it is in its final place
    /// (building it before moving the scanner costs a copy of the inline index).
    #[inline(always)]
    pub fn unindexed(data: &'a [u8]) -> Self {
        Self {
            data,
            pos: 0,
            depth: 0,
            index: SpecialIndex::empty(data.len()),
        }
    }

    /// Build the index (see `unindexed`).
    #[inline(always)]
    pub fn build_index(&mut self) {
        self.index.fill(self.data);
    }

    /// One value surrounded by whitespace and nothing else.
    pub fn parse_document<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, DecodeError> {
        if self.data.starts_with(b"\xEF\xBB\xBF") {
            return Err(DecodeError::json(
                "bom",
                "unexpected UTF-8 byte order mark".to_owned(),
                0,
            ));
        }
        let value = self.parse_value(sink)?;
        self.finish()?;
        Ok(value)
    }

    /// After the value: only whitespace may follow.
    pub fn finish(&mut self) -> Result<(), DecodeError> {
        self.skip_ws();
        if self.pos < self.data.len() {
            return Err(unexpected(self.data, self.pos, "end of input"));
        }
        Ok(())
    }

    #[inline(always)]
    pub fn skip_ws(&mut self) {
        // Compact JSON has no whitespace: one compare settles the common case.
        if let Some(&b) = self.data.get(self.pos) {
            if b > b' ' {
                return;
            }
        }
        self.skip_ws_slow();
    }

    #[inline(never)]
    fn skip_ws_slow(&mut self) {
        while let Some(&b) = self.data.get(self.pos) {
            if !is_ws(b) {
                break;
            }
            self.pos += 1;
        }
    }

    /// Next non-whitespace byte (the cursor is left on it).
    #[inline(always)]
    pub fn peek(&mut self) -> Option<u8> {
        if let Some(&b) = self.data.get(self.pos) {
            if b > b' ' {
                return Some(b);
            }
        }
        self.skip_ws_slow();
        self.data.get(self.pos).copied()
    }

    /// Consume `byte` after whitespace, or fail with "expected {what}".
    #[inline(always)]
    pub fn expect(&mut self, byte: u8, what: &str) -> Result<(), DecodeError> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(unexpected(self.data, self.pos, what))
        }
    }

    /// Enter an array/object whose bracket is at `self.pos`.
    #[inline(always)]
    pub fn enter(&mut self) -> Result<(), DecodeError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(DecodeError::json(
                "depth_limit",
                format!("nesting deeper than {MAX_DEPTH} levels"),
                self.pos,
            ));
        }
        self.pos += 1;
        Ok(())
    }

    #[inline(always)]
    pub fn leave(&mut self) {
        self.depth -= 1;
    }

    /// The JSON type of the value starting at the next non-whitespace byte, if it can start one.
    #[inline(always)]
    pub fn peek_type(&mut self) -> Option<JsonType> {
        Some(match self.peek()? {
            b'{' => JsonType::Object,
            b'[' => JsonType::Array,
            b'"' => JsonType::String,
            b't' | b'f' => JsonType::Boolean,
            b'n' => JsonType::Null,
            b'-' | b'0'..=b'9' => JsonType::Number,
            _ => return None,
        })
    }

    /// Parse any value into `sink`.
    pub fn parse_value<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, DecodeError> {
        match self.peek() {
            Some(b'"') => {
                let s = self.scan_string()?;
                Ok(sink.string(self.data, s))
            }
            // Containers recurse. Every 8 levels, make sure at least 64 KiB of stack is left for
            // the next 8, growing a new segment when a (small) thread stack runs low, so 1024
            // levels never overflow. (Checking every level cost a thread-local lookup each.)
            Some(b'{') if self.depth % 8 == 0 => {
                stacker::maybe_grow(STACK_RED_ZONE, STACK_GROW, || self.parse_object(sink))
            }
            Some(b'[') if self.depth % 8 == 0 => {
                stacker::maybe_grow(STACK_RED_ZONE, STACK_GROW, || self.parse_array(sink))
            }
            Some(b'{') => self.parse_object(sink),
            Some(b'[') => self.parse_array(sink),
            Some(b'-' | b'0'..=b'9') => {
                let n = self.scan_number()?;
                Ok(sink.number(self.data, n))
            }
            Some(b't') => {
                self.literal(b"true", "'true'")?;
                Ok(sink.boolean(true))
            }
            Some(b'f') => {
                self.literal(b"false", "'false'")?;
                Ok(sink.boolean(false))
            }
            Some(b'n') => {
                self.literal(b"null", "'null'")?;
                Ok(sink.null())
            }
            _ => Err(unexpected(self.data, self.pos, "a JSON value")),
        }
    }

    /// `parse_value` for an item of an array or object: strings, the most frequent items, are
    /// scanned in the caller's loop (no call per string).
    #[inline(always)]
    fn parse_item<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, DecodeError> {
        if self.peek() == Some(b'"') {
            let s = self.scan_string()?;
            return Ok(sink.string(self.data, s));
        }
        self.parse_value(sink)
    }

    /// Skip one value, returning its type (validation only).
    #[inline]
    pub fn skip_value(&mut self) -> Result<JsonType, DecodeError> {
        let ty = self.peek_type();
        self.parse_value(&mut Skip)?;
        Ok(ty.unwrap_or(JsonType::Null))
    }

    fn literal(&mut self, word: &[u8], what: &str) -> Result<(), DecodeError> {
        for (i, &b) in word.iter().enumerate() {
            if self.data.get(self.pos + i) != Some(&b) {
                return Err(unexpected(self.data, self.pos + i, what));
            }
        }
        self.pos += word.len();
        Ok(())
    }

    fn parse_array<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, DecodeError> {
        self.enter()?;
        let mut array = sink.array_start();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.leave();
            return Ok(sink.array_end(array));
        }
        loop {
            let v = self.parse_item(sink)?;
            sink.array_push(&mut array, v);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    self.leave();
                    return Ok(sink.array_end(array));
                }
                _ => return Err(unexpected(self.data, self.pos, "',' or ']'")),
            }
        }
    }

    fn parse_object<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, DecodeError> {
        self.enter()?;
        let mut object = sink.object_start();
        match self.peek() {
            Some(b'}') => {
                self.pos += 1;
                self.leave();
                return Ok(sink.object_end(object));
            }
            Some(b'"') => {}
            _ => return Err(unexpected(self.data, self.pos, "a string key")),
        }
        loop {
            let key = self.scan_string()?;
            self.expect(b':', "':'")?;
            let v = self.parse_item(sink)?;
            sink.object_insert(&mut object, self.data, key, v);
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    if self.peek() != Some(b'"') {
                        return Err(unexpected(self.data, self.pos, "a string key"));
                    }
                }
                Some(b'}') => {
                    self.pos += 1;
                    self.leave();
                    return Ok(sink.object_end(object));
                }
                _ => return Err(unexpected(self.data, self.pos, "',' or '}'")),
            }
        }
    }

    /// Scan the object key at the cursor (after whitespace), then its `:`. Inlined: an
    /// envelope has ~15 keys, and the call cost as much as the key.
    #[inline(always)]
    pub fn scan_key(&mut self) -> Result<Str, DecodeError> {
        let key = self.scan_string()?;
        self.expect(b':', "':'")?;
        Ok(key)
    }

    /// Scan a string whose opening quote is at the cursor. Inlined into its callers: strings are
    /// the most frequent token, and the call itself cost as much as the scan.
    #[inline(always)]
    pub fn scan_string(&mut self) -> Result<Str, DecodeError> {
        let data = self.data;
        let start = self.pos + 1;
        // Most strings have no escape: one search for the closing quote or a backslash tells.
        let mut i = self.index.next_or_backslash(start);
        if data.get(i) == Some(&b'"') {
            self.pos = i + 1;
            return Ok(Str {
                start,
                end: i,
                escaped: false,
            });
        }
        // Past the first backslash (if it is one), only special bytes stop the search.
        if data.get(i) == Some(&b'\\') && SIMPLE_ESCAPE[usize::from(data.get(i + 1).copied().unwrap_or(0))] {
            i = self.index.next(i + 2, data.len());
        }
        loop {
            match data.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    // Here the string has a backslash (the search above stopped at it).
                    return Ok(Str {
                        start,
                        end: i,
                        escaped: true,
                    });
                }
                Some(b'\\') => {
                    let after = Self::check_escape(data, i)?;
                    i = self.index.next(after, data.len());
                }
                None => return Err(unexpected(data, i, "'\"' to close the string")),
                Some(_) => return Err(control_character(data, i)),
            }
        }
    }

    /// Validate the escape whose backslash is at `at`; return the offset after it.
    // Out of line: the index lets simple escapes through in bulk, so only `\u` escapes and bad
    // escapes come here, and keeping its error formatting out of `scan_string` keeps that small.
    #[inline(never)]
    fn check_escape(data: &[u8], at: usize) -> Result<usize, DecodeError> {
        match data.get(at + 1) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(at + 2),
            Some(b'u') => {
                let unit = Self::hex4_checked(data, at + 2)?;
                match unit {
                    0xD800..=0xDBFF => {
                        let next = at + 6;
                        let low = if data.get(next) == Some(&b'\\') && data.get(next + 1) == Some(&b'u') {
                            read_hex4(data, next + 2)
                        } else {
                            None
                        };
                        match low {
                            Some(0xDC00..=0xDFFF) => Ok(next + 6),
                            _ => Err(lone_high_surrogate(data, at, low.is_some())),
                        }
                    }
                    0xDC00..=0xDFFF => Err(DecodeError::json(
                        "lone_surrogate",
                        format!(
                            "unexpected low surrogate escape {}",
                            String::from_utf8_lossy(&data[at..at + 6])
                        ),
                        at,
                    )),
                    _ => Ok(at + 6),
                }
            }
            None => Err(unexpected(data, at + 1, ESCAPE_HELP)),
            Some(_) => Err(DecodeError::json(
                "invalid_escape",
                format!("expected {ESCAPE_HELP}, found {}", describe_found(data, at + 1)),
                at + 1,
            )),
        }
    }

    #[inline]
    fn hex4_checked(data: &[u8], at: usize) -> Result<u16, DecodeError> {
        let mut v = 0u16;
        for i in at..at + 4 {
            match data.get(i) {
                None => return Err(unexpected(data, i, "4 hex digits after \\u")),
                Some(&b) => match hex_value(b) {
                    Some(h) => v = (v << 4) | h,
                    None => {
                        return Err(DecodeError::json(
                            "invalid_unicode_escape",
                            format!("expected 4 hex digits after \\u, found {}", describe_found(data, i)),
                            i,
                        ))
                    }
                },
            }
        }
        Ok(v)
    }

    /// Scan a number at the cursor (its first byte is `-` or a digit).
    #[inline(always)]
    pub fn scan_number(&mut self) -> Result<Number, DecodeError> {
        let n = Self::number_at(self.data, self.pos)?;
        self.pos = n.end;
        Ok(n)
    }

    /// Scan the number starting at `start` (its first byte is `-` or a digit).
    #[inline]
    fn number_at(data: &[u8], start: usize) -> Result<Number, DecodeError> {
        let mut i = start;
        if data.get(i) == Some(&b'-') {
            i += 1;
        }
        let int_start = i;
        match data.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                i += 1;
                while let Some(b'0'..=b'9') = data.get(i) {
                    i += 1;
                }
            }
            _ => return Err(unexpected(data, i, "a digit")),
        }
        let int_digits = i - int_start;
        let mut is_int = true;
        if data.get(i) == Some(&b'.') {
            is_int = false;
            i += 1;
            if !matches!(data.get(i), Some(b'0'..=b'9')) {
                return Err(unexpected(data, i, "a digit"));
            }
            while let Some(b'0'..=b'9') = data.get(i) {
                i += 1;
            }
        }
        let mut has_exp = false;
        if let Some(b'e' | b'E') = data.get(i) {
            is_int = false;
            has_exp = true;
            i += 1;
            if let Some(b'+' | b'-') = data.get(i) {
                i += 1;
            }
            if !matches!(data.get(i), Some(b'0'..=b'9')) {
                return Err(unexpected(data, i, "a digit"));
            }
            while let Some(b'0'..=b'9') = data.get(i) {
                i += 1;
            }
        }
        let out_of_range = if is_int {
            int_digits > MAX_INT_DIGITS
        } else if has_exp || int_digits > 300 {
            // Only these lexemes can overflow a double.
            parse_f64(&data[start..i]).is_infinite()
        } else {
            false
        };
        if out_of_range {
            return Err(DecodeError::json(
                "number_out_of_range",
                "number out of range".to_owned(),
                start,
            ));
        }
        Ok(Number { start, end: i, is_int })
    }
}

#[cold]
#[inline(never)]
fn control_character(data: &[u8], at: usize) -> DecodeError {
    DecodeError::json(
        "control_character",
        format!(
            "expected an escaped control character in a string, found {}",
            describe_found(data, at)
        ),
        at,
    )
}

#[cold]
#[inline(never)]
fn lone_high_surrogate(data: &[u8], at: usize, next_is_escape: bool) -> DecodeError {
    let written = String::from_utf8_lossy(&data[at..at + 6]);
    let next = at + 6;
    let found = if next_is_escape {
        String::from_utf8_lossy(&data[next..next + 6]).into_owned()
    } else {
        describe_found(data, next)
    };
    DecodeError::json(
        "lone_surrogate",
        format!("expected a low surrogate escape after {written}, found {found}"),
        at,
    )
}

/// Parse a number lexeme that the grammar accepted.
#[inline]
pub fn parse_f64(lexeme: &[u8]) -> f64 {
    // The lexeme is ASCII digits/sign/point/exponent, so this is valid UTF-8 and valid Rust syntax.
    std::str::from_utf8(lexeme)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(f64::NAN)
}

/// Parse an integer lexeme that fits in `i64`, or `None`.
#[inline]
pub fn parse_i64(lexeme: &[u8]) -> Option<i64> {
    let (neg, digits) = match lexeme.first() {
        Some(b'-') => (true, &lexeme[1..]),
        _ => (false, lexeme),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(d - b'0');
    }
    if neg {
        if v <= 1u64 << 63 {
            Some((v as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Parse an integer lexeme that fits in `u64` (non-negative), or `None`.
#[inline]
pub fn parse_u64(lexeme: &[u8]) -> Option<u64> {
    if lexeme.is_empty() || lexeme.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &d in lexeme {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(v)
}

/// Append the unescaped content of a string token to `out` (the token was validated).
pub fn unescape_into(data: &[u8], s: Str, out: &mut Vec<u8>) {
    let raw = &data[s.start..s.end];
    out.reserve(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let Some(off) = find_backslash(&raw[i..]) else {
            out.extend_from_slice(&raw[i..]);
            break;
        };
        out.extend_from_slice(&raw[i..i + off]);
        i += off;
        let c = raw[i + 1];
        i += 2;
        let byte = match c {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            _ => {
                // 'u': validated by the scanner, surrogates come in pairs.
                let unit = u32::from(read_hex4(raw, i).unwrap_or(0xFFFD));
                i += 4;
                let cp = if (0xD800..=0xDBFF).contains(&unit) {
                    let low = u32::from(read_hex4(raw, i + 2).unwrap_or(0xDC00));
                    i += 6;
                    0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    unit
                };
                let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                continue;
            }
        };
        out.push(byte);
    }
}

/// Offset of the first backslash. Escapes in code and diffs come every few dozen bytes, where a
/// `memchr` call costs more in setup than it saves; 16 bytes at a time inline is faster.
#[inline(always)]
fn find_backslash(s: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86_64 baseline; every load reads 16 bytes inside `s`.
    unsafe {
        use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let mut i = 0;
        while i + 16 <= s.len() {
            let v = _mm_loadu_si128(s.as_ptr().add(i).cast::<__m128i>());
            let mask = _mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash));
            if mask != 0 {
                return Some(i + mask.trailing_zeros() as usize);
            }
            i += 16;
        }
        s[i..].iter().position(|&b| b == b'\\').map(|p| p + i)
    }
    #[cfg(not(target_arch = "x86_64"))]
    memchr::memchr(b'\\', s)
}

/// The text of a string token: borrowed when it has no escapes, else unescaped into `scratch`.
#[inline]
pub fn string_text<'d>(data: &'d [u8], s: Str, scratch: &'d mut Vec<u8>) -> &'d [u8] {
    if s.escaped {
        scratch.clear();
        unescape_into(data, s, scratch);
        scratch
    } else {
        &data[s.start..s.end]
    }
}

/// Does the string token equal `expected` (after unescaping)?
#[inline]
pub fn string_equals(data: &[u8], s: Str, expected: &[u8]) -> bool {
    if s.escaped {
        let mut buf = Vec::with_capacity(s.end - s.start);
        unescape_into(data, s, &mut buf);
        buf == expected
    } else {
        &data[s.start..s.end] == expected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(input: &[u8]) -> DecodeError {
        validate(input).expect_err("should fail")
    }

    #[test]
    fn accepts() {
        for s in [
            "0",
            "-0",
            "1.5e+10",
            "[]",
            "{}",
            r#"{"a":[1,2,{"b":null}]}"#,
            r#""\ud83d\ude00""#,
            "\"\u{7f}é\"",
            " \t\r\n true ",
            r#""\u0000""#,
            r#"{"a":1,"a":2}"#,
            "1e-400",
        ] {
            validate(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e}"));
        }
    }

    #[test]
    fn rejects_with_positions() {
        let cases: &[(&[u8], &str, usize, &str)] = &[
            (b"", "eof", 0, "expected a JSON value, found end of input"),
            (b"  ", "eof", 2, "expected a JSON value, found end of input"),
            (b"[1,]", "unexpected_character", 3, "expected a JSON value, found ']'"),
            (
                b"{\"a\":1,}",
                "unexpected_character",
                7,
                "expected a string key, found '}'",
            ),
            (b"{\"a\" 1}", "unexpected_character", 5, "expected ':', found '1'"),
            (b"01", "unexpected_character", 1, "expected end of input, found '1'"),
            (b"-a", "unexpected_character", 1, "expected a digit, found 'a'"),
            (b"1.", "eof", 2, "expected a digit, found end of input"),
            (b"tx", "unexpected_character", 1, "expected 'true', found 'x'"),
            (b"nul", "eof", 3, "expected 'null', found end of input"),
            (
                b"\"a\tb\"",
                "control_character",
                2,
                "expected an escaped control character in a string, found U+0009",
            ),
            (
                b"\"abc",
                "eof",
                4,
                "expected '\"' to close the string, found end of input",
            ),
            (
                b"\"\\x\"",
                "invalid_escape",
                2,
                r#"expected an escape sequence (\" \\ \/ \b \f \n \r \t \uXXXX), found 'x'"#,
            ),
            (
                b"\"\\u12g4\"",
                "invalid_unicode_escape",
                5,
                "expected 4 hex digits after \\u, found 'g'",
            ),
            (
                b"\"\\u12",
                "eof",
                5,
                "expected 4 hex digits after \\u, found end of input",
            ),
            (
                b"\"\\ud800\"",
                "lone_surrogate",
                1,
                "expected a low surrogate escape after \\ud800, found '\"'",
            ),
            (
                b"\"\\ud800\\u0041\"",
                "lone_surrogate",
                1,
                "expected a low surrogate escape after \\ud800, found \\u0041",
            ),
            (
                b"\"\\ud800",
                "lone_surrogate",
                1,
                "expected a low surrogate escape after \\ud800, found end of input",
            ),
            (
                b"\"\\uDC00\"",
                "lone_surrogate",
                1,
                "unexpected low surrogate escape \\uDC00",
            ),
            (b"1e400", "number_out_of_range", 0, "number out of range"),
            (b"[-1e400]", "number_out_of_range", 1, "number out of range"),
            (b"\xEF\xBB\xBF{}", "bom", 0, "unexpected UTF-8 byte order mark"),
            (b"\"\xff\"", "invalid_utf8", 1, "invalid UTF-8 byte 0xFF"),
            (b"[1 2]", "unexpected_character", 3, "expected ',' or ']', found '2'"),
        ];
        for &(input, kind, pos, desc) in cases {
            let e = err(input);
            assert_eq!(
                (e.kind, e.position, e.description.as_str()),
                (kind, Some(pos), desc),
                "{input:?}"
            );
            assert_eq!(e.code, crate::error::PARSE_ERROR);
        }
    }

    #[test]
    fn depth_limit() {
        // Debug builds use large frames; give the recursion the room a release build never needs.
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(depth_limit_body)
            .unwrap()
            .join()
            .unwrap();
    }

    fn depth_limit_body() {
        let ok = format!("{}{}", "[".repeat(1024), "]".repeat(1024));
        validate(ok.as_bytes()).unwrap();
        let bad = format!("{}{}", "[".repeat(1025), "]".repeat(1025));
        let e = err(bad.as_bytes());
        assert_eq!((e.kind, e.position), ("depth_limit", Some(1024)));
        let objects = format!("{}1{}", "{\"a\":".repeat(1024), "}".repeat(1024));
        validate(objects.as_bytes()).unwrap();
    }

    #[test]
    fn long_ints() {
        let ok = "9".repeat(4300);
        validate(ok.as_bytes()).unwrap();
        let bad = "9".repeat(4301);
        assert_eq!(err(bad.as_bytes()).kind, "number_out_of_range");
    }

    #[test]
    fn unescape() {
        let data = br#""a\n\u00e9\ud83d\ude00\/""#;
        let mut sc = Scanner::new(data);
        let s = sc.scan_string().unwrap();
        assert!(s.escaped);
        let mut out = Vec::new();
        unescape_into(data, s, &mut out);
        assert_eq!(std::str::from_utf8(&out).unwrap(), "a\né😀/");
    }

    #[test]
    fn special_index_finds_every_special_byte() {
        let mut text = vec![b'a'; 200];
        // A `\u` escape across the block boundary, a control byte, quotes; the simple escape
        // `\n` and the escaped quote `\"` are not special.
        for &(at, b) in &[
            (3usize, b'"'),
            (63, b'\\'),
            (64, b'u'),
            (65, 0x01),
            (100, b'\\'),
            (101, b'n'),
        ] {
            text[at] = b;
        }
        for &(at, b) in &[(110usize, b'\\'), (111, b'"'), (130, b'"'), (198, b'\\'), (199, b'\\')] {
            text[at] = b;
        }
        let index = SpecialIndex::new(&text);
        let mut found = Vec::new();
        let mut i = 0;
        while i < text.len() {
            i = index.next(i, text.len());
            if i < text.len() {
                found.push(i);
                i += 1;
            }
        }
        assert_eq!(found, vec![3, 63, 65, 130]);
        assert!(index.any_backslash(60, 70));
        assert!(!index.any_backslash(0, 63));
        assert!(index.any_backslash(199, 200));
        let big = vec![b'x'; 10_000];
        assert_eq!(SpecialIndex::new(&big).next(0, big.len()), big.len());
        // A backslash at the very end is special (its escape has no code).
        let end = b"abc\\";
        assert_eq!(SpecialIndex::new(end).next(0, end.len()), 3);
    }

    /// The vector masks of this platform (SSE2 / AVX2 on x86_64, NEON on aarch64) against a
    /// byte-by-byte reference, on blocks dense in quotes, backslashes, control and high bytes.
    #[test]
    fn block_masks_match_the_reference() {
        let reference = block_masks_scalar;
        let alphabet = [
            b'"', b'\\', 0, 0x1f, 0x20, b'n', b'u', b'a', 0x7f, 0x80, 0xff, b'/', b't',
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..if cfg!(miri) { 300 } else { 20_000 } {
            let mut block = [0u8; 64];
            for x in block.iter_mut() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *x = if round % 2 == 0 {
                    alphabet[(state % alphabet.len() as u64) as usize]
                } else {
                    (state >> 24) as u8
                };
            }
            // Simple-code bits only matter right after a backslash (the AVX2 masks mark them
            // everywhere in a block that has one).
            let relevant = |(q, b, c, simple): Masks| (q, b, c, simple & (b << 1));
            assert_eq!(
                relevant(block_masks_portable(&block)),
                relevant(reference(&block)),
                "{block:?}"
            );
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2 (checked just above).
                let avx2 = unsafe { block_masks_avx2(&block) };
                assert_eq!(relevant(avx2), relevant(reference(&block)), "{block:?}");
            }
        }
    }

    /// The bulk escape logic of the index against serde_json's verdict, on random strings dense
    /// in backslashes, quotes and escape codes, placed across 64-byte block boundaries.
    #[test]
    fn escape_dense_strings_agree_with_serde_json() {
        let alphabet: &[&[u8]] = &[
            b"a",
            b"\\",
            b"\\",
            b"\"",
            b"n",
            b"u",
            b"0",
            b"d",
            b"8",
            b"x",
            b"/",
            b"\x01",
            "é".as_bytes(),
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..if cfg!(miri) { 400 } else { 20_000 } {
            let pad = (next() % 70) as usize;
            let mut doc = vec![b' '; pad];
            doc.push(b'"');
            for _ in 0..(next() % 90) {
                doc.extend_from_slice(alphabet[(next() % alphabet.len() as u64) as usize]);
            }
            doc.push(b'"');
            let ours = validate(&doc).is_ok();
            let reference = serde_json::from_slice::<String>(&doc).is_ok();
            assert_eq!(ours, reference, "{:?}", String::from_utf8_lossy(&doc));
        }
    }

    #[test]
    fn ints() {
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"-9223372036854775809"), None);
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
    }
}
