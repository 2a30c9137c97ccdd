//! The index of special bytes, built in one SIMD pass before parsing: with it, a string scan
//! finds its closing quote (or an escape that needs a closer look) in a few word operations.
//!
//! Rust only, on purpose: the fallback (`_fallback/scanner/strings.py`) skips string bodies with
//! a compiled regular expression instead.

use std::mem::MaybeUninit;

use super::strings::SIMPLE_ESCAPE;

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
pub(super) struct SpecialIndex {
    inline: [MaybeUninit<u64>; INLINE_WORDS * 2],
    heap: Vec<MaybeUninit<u64>>,
    words: usize,
    /// Set by `fill`: every word of `storage()` has been written.
    filled: bool,
}

/// Documents up to 1 KiB keep their index inline (larger ones pay one allocation).
const INLINE_WORDS: usize = 16;
const ODD_BITS: u64 = 0xAAAA_AAAA_AAAA_AAAA;

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
    pub(super) fn empty(len: usize) -> Self {
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
    pub(super) fn fill(&mut self, data: &[u8]) {
        let words = self.words;
        let (special, backslashes) = self.storage().split_at_mut(words);
        // Writes word `w` of both bitmaps for every block `w` (`words` blocks when the last one
        // is partial, `words - 1` when it is full: the sentinel word below is the last).
        let blocks = build_special_index(data, special, backslashes);
        if data.len().is_multiple_of(64) {
            special[words - 1].write(1);
            backslashes[words - 1].write(0);
        }
        assert_eq!(blocks + usize::from(data.len().is_multiple_of(64)), words);
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
    pub(super) fn next(&self, i: usize, len: usize) -> usize {
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
    pub(super) fn next_or_backslash(&self, i: usize) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;

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
            let ours = crate::scanner::validate(&doc).is_ok();
            let reference = serde_json::from_slice::<String>(&doc).is_ok();
            assert_eq!(ours, reference, "{:?}", String::from_utf8_lossy(&doc));
        }
    }
}
