//! JSON writing rules shared by every serializer: string escaping, number formatting and error
//! paths. Output is byte-identical to `orjson.dumps` for the values both accept (docs/DESIGN.md
//! §4).
//!
//! Mirror: `python/acp_fast/_fallback/encoder.py`, which has `MAX_DEPTH` and `render_path` in this
//! order. Differences on purpose: the byte writers here (`write_str`, `write_units`, `write_i64`,
//! `write_u64`, `write_f64`) are orjson's there, a path is a list of keys and indices there (here
//! `PathItem`), and `descend` is Rust only (the walk there is a loop with a stack of its own). The
//! walk over Python objects lives in the binding layer
//! (`rust/python/convert.rs`); its mirror is the rest of `encoder.py`.

/// Deepest nesting written: the scanner's limit, so that whatever is read can be written (it also
/// stops cycles). A checkpoint allows a few levels more (`state::checkpoint::MAX_DEPTH`).
pub const MAX_DEPTH: usize = crate::scanner::MAX_DEPTH as usize;

/// Run `f`, which writes a container found `depth` levels deep, with enough stack for it: every 8
/// levels, as the scanner's grammar does, a new stack segment is grown when a (small) thread stack
/// runs low, so the recursive writers go `MAX_DEPTH` levels deep on any thread. Levels 0 to 6 (every
/// usual value) never check.
#[inline(always)]
pub fn descend<R>(depth: usize, f: impl FnOnce() -> R) -> R {
    if depth % 8 == 7 {
        stacker::maybe_grow(crate::scanner::STACK_RED_ZONE, crate::scanner::STACK_GROW, f)
    } else {
        f()
    }
}

/// Where the writers put their bytes: a `Vec<u8>`, or (in the binding) the `bytes` object being
/// built, so that `dumps` hands back its buffer without a final copy. The writers reserve room
/// first, then store through `as_mut_ptr` past `len` (up to the capacity reserved) and move `len`
/// with `set_len`, as with a `Vec`.
pub trait Output {
    /// Make room for at least `additional` bytes past `len`.
    fn reserve(&mut self, additional: usize);
    fn len(&self) -> usize;
    fn as_mut_ptr(&mut self) -> *mut u8;
    /// # Safety
    /// `len` is at most the capacity, and the bytes below it were written.
    unsafe fn set_len(&mut self, len: usize);

    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline(always)]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        let len = self.len();
        // SAFETY: room for `bytes` was reserved past `len`.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.as_mut_ptr().add(len), bytes.len());
            self.set_len(len + bytes.len());
        }
    }

    #[inline(always)]
    fn push(&mut self, byte: u8) {
        self.reserve(1);
        let len = self.len();
        // SAFETY: room for one byte was reserved past `len`.
        unsafe {
            *self.as_mut_ptr().add(len) = byte;
            self.set_len(len + 1);
        }
    }
}

impl Output for Vec<u8> {
    #[inline(always)]
    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }

    #[inline(always)]
    fn len(&self) -> usize {
        Vec::len(self)
    }

    #[inline(always)]
    fn as_mut_ptr(&mut self) -> *mut u8 {
        Vec::as_mut_ptr(self)
    }

    #[inline(always)]
    unsafe fn set_len(&mut self, len: usize) {
        Vec::set_len(self, len);
    }

    #[inline(always)]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        Vec::extend_from_slice(self, bytes);
    }

    #[inline(always)]
    fn push(&mut self, byte: u8) {
        Vec::push(self, byte);
    }
}

/// Write `s` as a JSON string literal.
///
/// On x86_64 the bytes are copied a block at a time with one SIMD check per block: 32 bytes with
/// AVX2 where the CPU has it (checked once per process) and the text is long enough to gain, else
/// 16 with SSE2. Stores may run up to 32 bytes past the text into reserved capacity and are
/// overwritten or cut off by the length; a short tail is checked as two overlapping words, so
/// nothing reads past `s`. Elsewhere clean runs are found 8 bytes at a time (SWAR) and copied in
/// one piece.
#[inline]
pub fn write_str<O: Output + ?Sized>(out: &mut O, s: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        if s.len() >= 64 && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            unsafe { write_str_avx2(out, s) };
            return;
        }
        // SAFETY: SSE2 is part of the x86_64 baseline.
        unsafe { write_str_blocks::<O, false>(out, s) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    write_str_words(out, s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn write_str_avx2<O: Output + ?Sized>(out: &mut O, s: &[u8]) {
    write_str_blocks::<O, true>(out, s)
}

/// `write_str` without SIMD: words of 8 bytes are checked at once; the bytes between escapes are
/// copied as runs.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn write_str_words<O: Output + ?Sized>(out: &mut O, s: &[u8]) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    // Start of the bytes not yet copied.
    let mut run = 0;
    // Escape the bytes of `s[from..to]` that need it, copying the run before each.
    let mut escape_in = |out: &mut O, from: usize, to: usize| {
        for (k, &b) in s[from..to].iter().enumerate() {
            if NEEDS_ESCAPE[usize::from(b)] {
                out.extend_from_slice(&s[run..from + k]);
                write_escape(out, b);
                run = from + k + 1;
            }
        }
    };
    let words = s.len() / 8 * 8;
    for at in (0..words).step_by(8) {
        if swar_special(u64::from_le_bytes(s[at..at + 8].try_into().unwrap_or_default())) {
            escape_in(out, at, at + 8);
        }
    }
    escape_in(out, words, s.len());
    out.extend_from_slice(&s[run..]);
    out.push(b'"');
}

/// Slack past the text that the block writers may store into.
const SLACK: usize = 32;

/// `write_str` on x86_64: blocks of 32 bytes first when `WIDE` (the caller has AVX2), then of 16
/// (SSE2), then the tail.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn write_str_blocks<O: Output + ?Sized, const WIDE: bool>(out: &mut O, s: &[u8]) {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_loadu_si256, _mm256_storeu_si256, _mm_loadu_si128, _mm_storeu_si128,
    };
    let n = s.len();
    // Invariant: capacity >= len + (bytes of `s` left) + SLACK + 1 (block overrun, closing quote).
    out.reserve(n + 2 + SLACK);
    let mut len = out.len();
    let mut dst = out.as_mut_ptr();
    *dst.add(len) = b'"';
    len += 1;
    let src = s.as_ptr();
    let mut i = 0;
    if WIDE {
        while i + 32 <= n {
            let v = _mm256_loadu_si256(src.add(i).cast::<__m256i>());
            _mm256_storeu_si256(dst.add(len).cast::<__m256i>(), v);
            let mask = special_avx2(v);
            if mask == 0 {
                i += 32;
                len += 32;
                continue;
            }
            if mask.count_ones() >= 2 && n - i >= 32 + 32 {
                len = escape_block(out, len, s, i, 32, mask);
                i += 32;
            } else {
                let k = mask.trailing_zeros() as usize;
                len = escape_at(out, len + k, s[i + k], n - (i + k + 1));
                i += k + 1;
            }
            dst = out.as_mut_ptr();
        }
    }
    // Whole blocks of 16.
    while i + 16 <= n {
        let v = _mm_loadu_si128(src.add(i).cast::<__m128i>());
        _mm_storeu_si128(dst.add(len).cast::<__m128i>(), v);
        let mask = special_sse2(v);
        if mask == 0 {
            i += 16;
            len += 16;
            continue;
        }
        if mask.count_ones() >= 2 && n - i >= 16 + 32 {
            len = escape_block(out, len, s, i, 16, mask);
            i += 16;
        } else {
            let k = mask.trailing_zeros() as usize;
            len = escape_at(out, len + k, s[i + k], n - (i + k + 1));
            i += k + 1;
        }
        dst = out.as_mut_ptr();
    }
    // The tail (< 16 bytes): two overlapping words when it is clean, else byte by byte. Words
    // stay in registers (a stack block would stall store-to-load forwarding).
    let rem = n - i;
    let at = dst.add(len);
    let clean = if rem >= 8 {
        let a = std::ptr::read_unaligned(src.add(i).cast::<u64>());
        let b = std::ptr::read_unaligned(src.add(n - 8).cast::<u64>());
        let ok = !swar_special(a) && !swar_special(b);
        if ok {
            std::ptr::write_unaligned(at.cast::<u64>(), a);
            std::ptr::write_unaligned(at.add(rem - 8).cast::<u64>(), b);
        }
        ok
    } else if rem >= 4 {
        let a = std::ptr::read_unaligned(src.add(i).cast::<u32>());
        let b = std::ptr::read_unaligned(src.add(n - 4).cast::<u32>());
        let ok = !swar_special(u64::from(a) | (0x6161_6161 << 32)) && !swar_special(u64::from(b) | (0x6161_6161 << 32));
        if ok {
            std::ptr::write_unaligned(at.cast::<u32>(), a);
            std::ptr::write_unaligned(at.add(rem - 4).cast::<u32>(), b);
        }
        ok
    } else {
        false
    };
    if clean {
        len += rem;
    } else {
        for (k, &b) in s[i..].iter().enumerate() {
            if NEEDS_ESCAPE[usize::from(b)] {
                len = escape_at(out, len, b, rem - k - 1);
                dst = out.as_mut_ptr();
            } else {
                *dst.add(len) = b;
                len += 1;
            }
        }
    }
    *dst.add(len) = b'"';
    out.set_len(len + 1);
}

/// Write the block `s[i..i + width]`, whose bytes to escape are the bits of `mask` (two or
/// more), at `len`: the clean stretches between escapes copied 16 bytes at a time (`s` has at
/// least 32 bytes past the block: the caller checks), each escape with one store. All the escapes
/// of a block are written in one visit (text full of quotes, backslashes or newlines has one every
/// few bytes); a block with one escape restarts after it instead. Returns the new length; keeps
/// `write_str_blocks`' invariant (`out` may move).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn escape_block<O: Output + ?Sized>(
    out: &mut O,
    len: usize,
    s: &[u8],
    i: usize,
    width: usize,
    mask: u32,
) -> usize {
    let n = s.len();
    out.set_len(len);
    // Each byte of the block may become 6 (`\\u00XX`); the text after it keeps its room.
    out.reserve(6 * width + (n - i - width) + 2 + SLACK);
    let dst = out.as_mut_ptr();
    let src = s.as_ptr();
    let mut len = len;
    let mut mask = mask;
    // The next byte of the block not yet written.
    let mut pos = 0;
    loop {
        let k = if mask == 0 {
            width
        } else {
            mask.trailing_zeros() as usize
        };
        let count = k - pos;
        let from = src.add(i + pos);
        std::ptr::copy_nonoverlapping(from, dst.add(len), 16);
        if count > 16 {
            std::ptr::copy_nonoverlapping(from.add(16), dst.add(len + 16), 16);
        }
        len += count;
        if mask == 0 {
            return len;
        }
        let (bytes, e) = ESCAPES[usize::from(*src.add(i + k))];
        std::ptr::write_unaligned(dst.add(len).cast::<[u8; 8]>(), bytes);
        len += usize::from(e);
        pos = k + 1;
        mask &= mask - 1;
    }
}

/// Bit per byte of `v` that is `"`, `\\` or a control byte (32 bytes).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn special_avx2(v: std::arch::x86_64::__m256i) -> u32 {
    use std::arch::x86_64::{
        _mm256_cmpeq_epi8, _mm256_min_epu8, _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8,
    };
    let m = _mm256_or_si256(
        _mm256_or_si256(
            _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8)),
            _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8)),
        ),
        _mm256_cmpeq_epi8(_mm256_min_epu8(v, _mm256_set1_epi8(0x1f)), v),
    );
    _mm256_movemask_epi8(m) as u32
}

/// Whether any byte of `x` is `"`, `\\` or below 0x20 (exact for "any"; SWAR).
#[inline(always)]
fn swar_special(x: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below_20 = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
    (zero(x ^ (ONES * b'"' as u64)) | zero(x ^ (ONES * b'\\' as u64)) | below_20) != 0
}

/// Code units of a Python `str` in one of its fixed-width forms (PEP 393): Latin-1 bytes, UCS-2
/// or UCS-4.
pub trait CodeUnit: Copy {
    /// Most UTF-8 bytes one unit can become (escapes aside).
    const MAX_UTF8: usize;
    fn code(self) -> u32;
}

impl CodeUnit for u8 {
    const MAX_UTF8: usize = 2;
    #[inline(always)]
    fn code(self) -> u32 {
        u32::from(self)
    }
}

impl CodeUnit for u16 {
    const MAX_UTF8: usize = 3;
    #[inline(always)]
    fn code(self) -> u32 {
        u32::from(self)
    }
}

impl CodeUnit for u32 {
    const MAX_UTF8: usize = 4;
    #[inline(always)]
    fn code(self) -> u32 {
        self
    }
}

/// Write text given as fixed-width code points (a non-ASCII Python `str`) as a JSON string,
/// transcoding to UTF-8 on the way (no intermediate UTF-8 copy). `Err(cp)` is the first lone
/// surrogate, which UTF-8 cannot carry; `out` then holds a partial write the caller discards.
///
/// Non-ASCII units are encoded in a tight loop of their own, each with one store of 2 or 4 bytes
/// (a 3-byte character writes one byte of slack, overwritten next). An ASCII unit is written alone;
/// when the next one is ASCII too, the run goes a block at a time (`ascii_run`). Trying a block
/// at every unit, as before, cost more than it saved in text that changes script every few
/// characters (CJK or emoji between spaces).
pub fn write_units<O: Output + ?Sized, T: CodeUnit>(out: &mut O, units: &[T]) -> Result<(), u32> {
    let n = units.len();
    // Invariant: capacity >= len + MAX_UTF8 * (units left) + SLACK + 1.
    out.reserve(T::MAX_UTF8 * n + 2 + SLACK);
    // SAFETY: every write stays below the capacity reserved by the invariant above; `dst` is
    // refreshed whenever `out` may have moved (after an escape's reserve); reads of `src` stay
    // below `n`.
    unsafe {
        let mut len = out.len();
        let mut dst = out.as_mut_ptr();
        *dst.add(len) = b'"';
        len += 1;
        let src = units.as_ptr();
        let mut i = 0;
        while i < n {
            let mut c = (*src.add(i)).code();
            if c < 0x80 {
                i += 1;
                if NEEDS_ESCAPE[c as usize] {
                    len = escape_at_units::<O, T>(out, len, c as u8, n - i);
                    dst = out.as_mut_ptr();
                    continue;
                }
                *dst.add(len) = c as u8;
                len += 1;
                if i < n && (*src.add(i)).code() < 0x80 {
                    let done = ascii_run(units, i, dst.add(len));
                    i += done;
                    len += done;
                }
                continue;
            }
            // A run of non-ASCII units.
            loop {
                let at = dst.add(len);
                if c < 0x800 {
                    let bytes = (0xC0 | (c >> 6)) | ((0x80 | (c & 0x3F)) << 8);
                    std::ptr::write_unaligned(at.cast::<u16>(), bytes as u16);
                    len += 2;
                } else if c < 0x10000 {
                    if c & 0xF800 == 0xD800 {
                        out.set_len(len);
                        return Err(c);
                    }
                    let bytes = (0xE0 | (c >> 12)) | ((0x80 | ((c >> 6) & 0x3F)) << 8) | ((0x80 | (c & 0x3F)) << 16);
                    std::ptr::write_unaligned(at.cast::<u32>(), bytes);
                    len += 3;
                } else {
                    let bytes = (0xF0 | (c >> 18))
                        | ((0x80 | ((c >> 12) & 0x3F)) << 8)
                        | ((0x80 | ((c >> 6) & 0x3F)) << 16)
                        | ((0x80 | (c & 0x3F)) << 24);
                    std::ptr::write_unaligned(at.cast::<u32>(), bytes);
                    len += 4;
                }
                i += 1;
                if i == n {
                    break;
                }
                c = (*src.add(i)).code();
                if c < 0x80 {
                    break;
                }
            }
        }
        *dst.add(len) = b'"';
        out.set_len(len + 1);
    }
    Ok(())
}

/// `escape_at` for text of code units `T`.
#[inline(always)]
fn escape_at_units<O: Output + ?Sized, T: CodeUnit>(out: &mut O, len: usize, b: u8, left: usize) -> usize {
    match T::MAX_UTF8 {
        2 => escape_at_max::<O, 2>(out, len, b, left),
        3 => escape_at_max::<O, 3>(out, len, b, left),
        _ => escape_at_max::<O, 4>(out, len, b, left),
    }
}

/// Copy the run of plain ASCII units (nothing to escape) starting at `i` to `dst`, a block at a
/// time: the number of units copied (0 when fewer than a block are left). May write up to 16
/// bytes at `dst` whatever it returns.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn ascii_run<T: CodeUnit>(units: &[T], i: usize, dst: *mut u8) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi16, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_epi8, _mm_packs_epi32,
        _mm_packus_epi16, _mm_set1_epi16, _mm_set1_epi32, _mm_setzero_si128, _mm_storel_epi64, _mm_storeu_si128,
    };
    let n = units.len();
    let mut j = i;
    match std::mem::size_of::<T>() {
        1 => {
            let src = units.as_ptr().cast::<u8>();
            while j + 16 <= n {
                let v = _mm_loadu_si128(src.add(j).cast::<__m128i>());
                _mm_storeu_si128(dst.add(j - i).cast::<__m128i>(), v);
                // High bit: a Latin-1 byte above 0x7F.
                let stop = special_sse2(v) | _mm_movemask_epi8(v) as u32;
                if stop != 0 {
                    return j - i + stop.trailing_zeros() as usize;
                }
                j += 16;
            }
        }
        2 => {
            let src = units.as_ptr().cast::<u16>();
            while j + 8 <= n {
                let v = _mm_loadu_si128(src.add(j).cast::<__m128i>());
                let high = _mm_and_si128(v, _mm_set1_epi16(0xFF80u16 as i16));
                let ascii = _mm_cmpeq_epi16(high, _mm_setzero_si128());
                let bytes = _mm_packus_epi16(v, v);
                _mm_storel_epi64(dst.add(j - i).cast::<__m128i>(), bytes);
                if let Some(k) = first_stop8(bytes, ascii) {
                    return j - i + k;
                }
                j += 8;
            }
        }
        _ => {
            let src = units.as_ptr().cast::<u32>();
            while j + 8 <= n {
                let v0 = _mm_loadu_si128(src.add(j).cast::<__m128i>());
                let v1 = _mm_loadu_si128(src.add(j + 4).cast::<__m128i>());
                let mask = _mm_set1_epi32(0xFFFF_FF80u32 as i32);
                let a0 = _mm_cmpeq_epi32(_mm_and_si128(v0, mask), _mm_setzero_si128());
                let a1 = _mm_cmpeq_epi32(_mm_and_si128(v1, mask), _mm_setzero_si128());
                let words = _mm_packs_epi32(v0, v1);
                let bytes = _mm_packus_epi16(words, words);
                _mm_storel_epi64(dst.add(j - i).cast::<__m128i>(), bytes);
                if let Some(k) = first_stop8(bytes, _mm_packs_epi32(a0, a1)) {
                    return j - i + k;
                }
                j += 8;
            }
        }
    }
    j - i
}

/// Without SIMD every ASCII unit is written by `write_units`' own loop.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn ascii_run<T: CodeUnit>(_units: &[T], _i: usize, _dst: *mut u8) -> usize {
    0
}

/// Of 8 units packed to the low bytes of `bytes`, with `ascii` holding one 16-bit lane per unit
/// (all ones when it is plain ASCII): the first that ends the run (not ASCII, or to be escaped).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn first_stop8(bytes: std::arch::x86_64::__m128i, ascii: std::arch::x86_64::__m128i) -> Option<usize> {
    use std::arch::x86_64::{_mm_movemask_epi8, _mm_packs_epi16};
    // The 16-bit lane flags packed to bytes: one bit per unit.
    let ascii = _mm_movemask_epi8(_mm_packs_epi16(ascii, ascii)) as u32;
    let stop = (special_sse2(bytes) | !ascii) & 0xFF;
    (stop != 0).then(|| stop.trailing_zeros() as usize)
}

/// Bit per byte of `v` that is `"`, `\\` or a control byte.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn special_sse2(v: std::arch::x86_64::__m128i) -> u32 {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8};
    let m = _mm_or_si128(
        _mm_or_si128(
            _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
            _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
        ),
        _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v),
    );
    _mm_movemask_epi8(m) as u32
}

/// The escape of each byte that needs one (`"`, `\\`, control bytes), padded to 8 bytes, and
/// its length; zero length for the others.
static ESCAPES: [([u8; 8], u8); 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut t = [([0u8; 8], 0u8); 256];
    let mut b = 0;
    while b < 256 {
        if needs_escape(b as u8) {
            t[b] = match b as u8 {
                b'"' => (*b"\\\"\0\0\0\0\0\0", 2),
                b'\\' => (*b"\\\\\0\0\0\0\0\0", 2),
                b'\n' => (*b"\\n\0\0\0\0\0\0", 2),
                b'\r' => (*b"\\r\0\0\0\0\0\0", 2),
                b'\t' => (*b"\\t\0\0\0\0\0\0", 2),
                0x08 => (*b"\\b\0\0\0\0\0\0", 2),
                0x0c => (*b"\\f\0\0\0\0\0\0", 2),
                _ => ([b'\\', b'u', b'0', b'0', HEX[b >> 4], HEX[b & 0xf], 0, 0], 6),
            };
        }
        b += 1;
    }
    t
};

/// Write the escape of `b` (a byte that needs one) at `len`, then make room for `left` more
/// bytes of text (each may become up to `MAX` bytes) and the slack; the new length. `out`'s
/// pointer may change: callers reload it.
#[inline(always)]
fn escape_at<O: Output + ?Sized>(out: &mut O, len: usize, b: u8, left: usize) -> usize {
    escape_at_max::<O, 1>(out, len, b, left)
}

#[inline(always)]
fn escape_at_max<O: Output + ?Sized, const MAX: usize>(out: &mut O, len: usize, b: u8, left: usize) -> usize {
    let (bytes, n) = ESCAPES[usize::from(b)];
    // SAFETY: the invariant of the callers leaves at least SLACK (>= 8) bytes of capacity at
    // `len`; the bytes below `len` were written.
    unsafe {
        std::ptr::write_unaligned(out.as_mut_ptr().add(len).cast::<[u8; 8]>(), bytes);
        let len = len + usize::from(n);
        out.set_len(len);
        out.reserve(MAX * left + 2 + SLACK);
    }
    out.len()
}

/// The escape of one byte that needs it (`"`, `\\` or a control byte).
#[inline]
fn write_escape<O: Output + ?Sized>(out: &mut O, b: u8) {
    let (bytes, n) = &ESCAPES[usize::from(b)];
    out.extend_from_slice(&bytes[..usize::from(*n)]);
}

/// `write_str` byte by byte: the reference the fast writers are tested against.
#[cfg(test)]
fn write_str_scalar(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in s.iter().enumerate() {
        if NEEDS_ESCAPE[usize::from(b)] {
            out.extend_from_slice(&s[start..i]);
            write_escape(out, b);
            start = i + 1;
        }
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

#[inline(always)]
const fn needs_escape(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

static NEEDS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = needs_escape(b as u8);
        b += 1;
    }
    t
};

#[inline]
pub fn write_i64<O: Output + ?Sized>(out: &mut O, v: i64) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(v).as_bytes());
}

#[inline]
pub fn write_u64<O: Output + ?Sized>(out: &mut O, v: u64) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(v).as_bytes());
}

/// Write a finite float the way orjson does: shortest round-trip digits, fixed notation for
/// `1e-5 <= |x| < 1e16` (with `.0` when integral), otherwise `d[.ddd]e±X`.
/// The caller rejects non-finite values.
pub fn write_f64<O: Output + ?Sized>(out: &mut O, v: f64) {
    if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0.0" } else { b"0.0" });
        return;
    }
    let mut buf = ryu::Buffer::new();
    let text = buf.format_finite(v).as_bytes();
    // Decompose ryu's output into sign, significant digits and the scientific exponent.
    let (neg, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let (mantissa, exp_part) = match text.iter().position(|&b| b == b'e' || b == b'E') {
        Some(p) => (&text[..p], parse_exp(&text[p + 1..])),
        None => (text, 0),
    };
    let mut digits = [0u8; 32];
    let mut n = 0;
    let mut point = None;
    for &b in mantissa {
        if b == b'.' {
            point = Some(n);
        } else {
            digits[n] = b;
            n += 1;
        }
    }
    let int_len = point.unwrap_or(n) as i32;
    // Drop leading zeros (e.g. "0.0001") and trailing zeros.
    let mut first = 0;
    while first < n - 1 && digits[first] == b'0' {
        first += 1;
    }
    let mut last = n;
    while last > first + 1 && digits[last - 1] == b'0' {
        last -= 1;
    }
    let sig = &digits[first..last];
    // value = 0.d1d2... * 10^(int_len - first) => scientific exponent:
    let exp = exp_part + int_len - first as i32 - 1;
    if neg {
        out.push(b'-');
    }
    if (-5..16).contains(&exp) {
        if exp >= 0 {
            let int_digits = (exp + 1) as usize;
            if sig.len() <= int_digits {
                out.extend_from_slice(sig);
                zeros(out, int_digits - sig.len());
                out.extend_from_slice(b".0");
            } else {
                out.extend_from_slice(&sig[..int_digits]);
                out.push(b'.');
                out.extend_from_slice(&sig[int_digits..]);
            }
        } else {
            out.extend_from_slice(b"0.");
            zeros(out, (-exp - 1) as usize);
            out.extend_from_slice(sig);
        }
    } else {
        out.push(sig[0]);
        if sig.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&sig[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        write_i64(out, i64::from(exp.abs()));
    }
}

/// `n` zero digits.
fn zeros<O: Output + ?Sized>(out: &mut O, n: usize) {
    for _ in 0..n {
        out.push(b'0');
    }
}

fn parse_exp(text: &[u8]) -> i32 {
    let (neg, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    let v = digits.iter().fold(0i32, |acc, &d| acc * 10 + i32::from(d - b'0'));
    if neg {
        -v
    } else {
        v
    }
}

/// One step of an error path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathItem {
    Key(String),
    Index(usize),
}

/// Render an error path: `$`, `.key`, `["odd key"]`, `[3]`.
pub fn render_path(items: &[PathItem]) -> String {
    let mut out = String::from("$");
    for item in items {
        match item {
            PathItem::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
            PathItem::Key(k) => {
                let mut chars = k.chars();
                let ident = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
                if ident {
                    out.push('.');
                    out.push_str(k);
                } else {
                    let mut buf = Vec::new();
                    write_str(&mut buf, k.as_bytes());
                    out.push('[');
                    out.push_str(&String::from_utf8_lossy(&buf));
                    out.push(']');
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn floats_like_orjson() {
        let cases = [
            (1e-5, "0.00001"),
            (1.5e-5, "0.000015"),
            (1e-6, "1e-6"),
            (1e-7, "1e-7"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e15, "1000000000000000.0"),
            (9999e12, "9999000000000000.0"),
            (123456789.0, "123456789.0"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1e300, "1e+300"),
            (5e-324, "5e-324"),
            (1.0, "1.0"),
            (100.0, "100.0"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (1.23e-18, "1.23e-18"),
            (2.0 / 3.0, "0.6666666666666666"),
            (1234567.125, "1234567.125"),
            (-2.5, "-2.5"),
            (12345678901234567.0, "1.2345678901234568e+16"),
        ];
        for (v, s) in cases {
            assert_eq!(f(v), s, "{v:e}");
        }
    }

    /// Transcoding from code units (each width) gives the same bytes as writing the UTF-8 text:
    /// every length up to 40 with one odd character (escapes, Latin-1, BMP, astral) anywhere.
    #[test]
    fn code_units_match_utf8() {
        let odd = [
            '"',
            '\\',
            '\n',
            '\u{1}',
            'é',
            '\u{ff}',
            '→',
            '\u{ffff}',
            '😀',
            '\u{10ffff}',
            'z',
        ];
        // Fewer lengths under Miri (`make miri`), still past a 16-byte block.
        for n in 0..if cfg!(miri) { 20usize } else { 40 } {
            for at in 0..n.max(1) {
                for &c in &odd {
                    let mut text: Vec<char> = (0..n).map(|k| (b'a' + (k % 26) as u8) as char).collect();
                    if n > 0 {
                        text[at] = c;
                    }
                    let utf8: String = text.iter().collect();
                    let mut want = Vec::new();
                    write_str(&mut want, utf8.as_bytes());
                    let max = text.iter().map(|&c| c as u32).max().unwrap_or(0);
                    let mut got = Vec::new();
                    write_units(&mut got, &text.iter().map(|&c| c as u32).collect::<Vec<u32>>()).unwrap();
                    assert_eq!(got, want, "ucs4 n={n} at={at} {c:?}");
                    if max < 0x10000 {
                        let mut got = Vec::new();
                        write_units(&mut got, &text.iter().map(|&c| c as u16).collect::<Vec<u16>>()).unwrap();
                        assert_eq!(got, want, "ucs2 n={n} at={at} {c:?}");
                    }
                    if max < 0x100 {
                        let mut got = Vec::new();
                        write_units(&mut got, &text.iter().map(|&c| c as u8).collect::<Vec<u8>>()).unwrap();
                        assert_eq!(got, want, "latin1 n={n} at={at} {c:?}");
                    }
                }
            }
        }
        let mut out = Vec::new();
        assert_eq!(write_units(&mut out, &[0x61u16, 0xD800, 0x62]), Err(0xD800));
        assert_eq!(
            write_units(
                &mut out,
                &[0x61u32; 20].iter().copied().chain([0xDFFFu32]).collect::<Vec<_>>()
            ),
            Err(0xDFFF)
        );
    }

    /// Text that changes between ASCII, escapes and 2-, 3- and 4-byte characters every few units
    /// (the runs `write_units` switches between), in each width, against the UTF-8 writer.
    #[test]
    fn mixed_runs_match_utf8() {
        let pool = [
            'a',
            'b',
            ' ',
            '"',
            '\\',
            '\n',
            '\u{1f}',
            'é',
            '\u{ff}',
            'ā',
            '→',
            '中',
            '\u{ffff}',
            '😀',
            '\u{10ffff}',
        ];
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        for _ in 0..if cfg!(miri) { 50 } else { 3000 } {
            let n = next(90);
            // Runs of one kind of character, 1 to 20 long, so that block paths are taken too.
            let mut text = Vec::new();
            while text.len() < n {
                let c = pool[next(pool.len())];
                let long = next(3) == 0;
                let run = 1 + next(if long { 20 } else { 3 });
                text.extend(std::iter::repeat_n(c, run));
            }
            let utf8: String = text.iter().collect();
            let mut want = Vec::new();
            write_str_scalar(&mut want, utf8.as_bytes());
            let mut got = Vec::new();
            write_str(&mut got, utf8.as_bytes());
            assert_eq!(got, want, "utf8 {utf8:?}");
            let max = text.iter().map(|&c| c as u32).max().unwrap_or(0);
            let mut got = b"x".to_vec();
            write_units(&mut got, &text.iter().map(|&c| c as u32).collect::<Vec<u32>>()).unwrap();
            assert_eq!(got[1..], want[..], "ucs4 {utf8:?}");
            if max < 0x10000 {
                let mut got = Vec::new();
                write_units(&mut got, &text.iter().map(|&c| c as u16).collect::<Vec<u16>>()).unwrap();
                assert_eq!(got, want, "ucs2 {utf8:?}");
            }
            if max < 0x100 {
                let mut got = Vec::new();
                write_units(&mut got, &text.iter().map(|&c| c as u8).collect::<Vec<u8>>()).unwrap();
                assert_eq!(got, want, "latin1 {utf8:?}");
            }
        }
    }

    /// The block/word writer against the byte-by-byte one: every length up to 80, a special
    /// byte (each kind) at every position, one or two of them, after a non-empty prefix.
    #[test]
    fn fast_strings_match_scalar() {
        let specials = [b'"', b'\\', 0u8, 0x1f, b'\n', 0x08, b'a', 0x7f, 0x20, 0xc3];
        // Fewer lengths under Miri (`make miri`), still past a 16-byte block.
        for n in 0..if cfg!(miri) { 20usize } else { 140 } {
            for at in 0..n.max(1) {
                for &sp in &specials {
                    for &second in &[None, Some(n.saturating_sub(1)), Some(at / 2)] {
                        let mut s: Vec<u8> = (0..n).map(|k| b'A' + (k % 26) as u8).collect();
                        if n > 0 {
                            s[at] = sp;
                            if let Some(j) = second {
                                s[j] = b'\\';
                            }
                        }
                        let mut fast = b"prefix".to_vec();
                        write_str(&mut fast, &s);
                        let mut slow = b"prefix".to_vec();
                        write_str_scalar(&mut slow, &s);
                        assert_eq!(fast, slow, "n={n} at={at} byte={sp:#x} second={second:?}");
                        let mut words = b"prefix".to_vec();
                        write_str_words(&mut words, &s);
                        assert_eq!(words, slow, "words: n={n} at={at} byte={sp:#x} second={second:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn strings() {
        let mut out = Vec::new();
        write_str(&mut out, "a\u{0}\u{1f}\u{7f}\u{2028}\"\\/é\n\t\u{8}\u{c}".as_bytes());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\u0000\\u001f\u{7f}\u{2028}\\\"\\\\/é\\n\\t\\b\\f\""
        );
        let long = "x".repeat(40) + "\"";
        let mut out = Vec::new();
        write_str(&mut out, long.as_bytes());
        assert_eq!(out.len(), 44);
    }

    #[test]
    fn paths() {
        let p = [
            PathItem::Key("params".into()),
            PathItem::Index(3),
            PathItem::Key("a b".into()),
        ];
        assert_eq!(render_path(&p), "$.params[3][\"a b\"]");
        assert_eq!(render_path(&[]), "$");
    }
}
