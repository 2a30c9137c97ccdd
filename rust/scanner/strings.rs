//! Strings: scanning one (its end found through the index), checking its escapes, unescaping
//! it, and the text of a string token.
//!
//! Mirror: `_fallback/scanner/strings.py`, which differs on purpose: it skips string bodies with
//! a regular expression (no index) and leaves unescaping to orjson (`string_text`), so
//! `unescape_into` (with `unescape_raw`, `write_utf8`) and `string_equals` are Rust only.

use super::cursor::{unexpected, Scanner};
use super::Str;
use crate::error::{describe_found, DecodeError};

const ESCAPE_HELP: &str = r#"an escape sequence (\" \\ \/ \b \f \n \r \t \uXXXX)"#;

/// The escape codes that need no further check: `" \ / b f n r t`.
pub(super) static SIMPLE_ESCAPE: [bool; 256] = {
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

/// The byte a simple escape stands for (`\n` → newline, …), 0 for `u` and anything else.
static SIMPLE_UNESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'/' as usize] = b'/';
    t[b'b' as usize] = 0x08;
    t[b'f' as usize] = 0x0c;
    t[b'n' as usize] = b'\n';
    t[b'r' as usize] = b'\r';
    t[b't' as usize] = b'\t';
    t
};

/// Append the unescaped content of a string token to `out` (the token was validated).
///
/// The text is never longer unescaped than escaped (an escape of 2 bytes gives 1, `\uXXXX` at
/// most 3, a surrogate pair of 12 bytes gives 4), so `out` grows once, by the token's length, and
/// the text is written through a pointer that stays at or behind the read position: runs
/// without a backslash are copied 16 bytes at a time, each block stored whole before its
/// backslash is looked for (the bytes past it are overwritten by what follows).
pub fn unescape_into(data: &[u8], s: Str, out: &mut Vec<u8>) {
    let raw = &data[s.start..s.end];
    out.reserve(raw.len());
    let base = out.len();
    // SAFETY: `out` has room for `raw.len()` more bytes, and `unescape_raw` writes at most that
    // many (see above), each one before it is counted in the length set here.
    unsafe {
        let written = unescape_raw(raw, out.as_mut_ptr().add(base));
        out.set_len(base + written);
    }
}

/// Unescape `raw` (the validated content of a string token) into `dst`, returning the number of
/// bytes written.
///
/// # Safety
/// `dst` must be valid for writes of `raw.len()` bytes.
#[inline]
unsafe fn unescape_raw(raw: &[u8], dst: *mut u8) -> usize {
    let n = raw.len();
    let src = raw.as_ptr();
    let mut i = 0;
    let mut o = 0;
    loop {
        // Copy up to the next backslash (the output position `o` never passes `i`): whole
        // blocks while 16 bytes are left, then byte by byte (skipped when a block found it).
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut found = false;
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{
                __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8, _mm_storeu_si128,
            };
            let backslash = _mm_set1_epi8(b'\\' as i8);
            while i + 16 <= n {
                let v = _mm_loadu_si128(src.add(i).cast::<__m128i>());
                _mm_storeu_si128(dst.add(o).cast::<__m128i>(), v);
                let mask = _mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash));
                if mask != 0 {
                    let k = mask.trailing_zeros() as usize;
                    i += k;
                    o += k;
                    found = true;
                    break;
                }
                i += 16;
                o += 16;
            }
        }
        if !found {
            while i < n && *src.add(i) != b'\\' {
                *dst.add(o) = *src.add(i);
                i += 1;
                o += 1;
            }
        }
        if i >= n {
            return o;
        }
        // A validated escape: a simple one, or `\uXXXX` (a high surrogate followed by its low one).
        // (Text that was not validated stops at an escape cut short, and never writes more than
        // it reads.)
        if i + 1 >= n {
            return o;
        }
        let code = *src.add(i + 1);
        let byte = SIMPLE_UNESCAPE[usize::from(code)];
        if byte != 0 {
            *dst.add(o) = byte;
            i += 2;
            o += 1;
            continue;
        }
        if i + 6 > n {
            return o;
        }
        let unit = u32::from(read_hex4(raw, i + 2).unwrap_or(0xFFFD));
        i += 6;
        let cp = if (0xD800..=0xDBFF).contains(&unit) {
            let low = u32::from(read_hex4(raw, i + 2).unwrap_or(0xDC00));
            i += 6;
            0x10000 + ((unit - 0xD800) << 10) + (low.wrapping_sub(0xDC00) & 0x3FF)
        } else if (0xDC00..=0xDFFF).contains(&unit) {
            0xFFFD
        } else {
            unit
        };
        o += write_utf8(cp, dst.add(o));
    }
}

/// Write the UTF-8 form of `cp` (a scalar value) at `dst`; the number of bytes (1 to 4).
///
/// # Safety
/// `dst` must be valid for writes of that many bytes.
#[inline(always)]
unsafe fn write_utf8(cp: u32, dst: *mut u8) -> usize {
    if cp < 0x80 {
        *dst = cp as u8;
        1
    } else if cp < 0x800 {
        *dst = 0xC0 | (cp >> 6) as u8;
        *dst.add(1) = 0x80 | (cp & 0x3F) as u8;
        2
    } else if cp < 0x10000 {
        *dst = 0xE0 | (cp >> 12) as u8;
        *dst.add(1) = 0x80 | ((cp >> 6) & 0x3F) as u8;
        *dst.add(2) = 0x80 | (cp & 0x3F) as u8;
        3
    } else {
        *dst = 0xF0 | (cp >> 18) as u8;
        *dst.add(1) = 0x80 | ((cp >> 12) & 0x3F) as u8;
        *dst.add(2) = 0x80 | ((cp >> 6) & 0x3F) as u8;
        *dst.add(3) = 0x80 | (cp & 0x3F) as u8;
        4
    }
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

    /// Every escape form at every offset of texts shorter and longer than a 16-byte block, after
    /// text of every UTF-8 width, against serde_json's reading of the same token.
    #[test]
    fn unescape_every_form_at_every_offset() {
        let escapes = [
            r#"\""#,
            r"\\",
            r"\/",
            r"\b",
            r"\f",
            r"\n",
            r"\r",
            r"\t",
            r"\u0000",
            r"\u001f",
            r"\u0041",
            r"\u00e9",
            r"\u07ff",
            r"\u0800",
            r"\u20AC",
            r"\uffff",
            r"\ud83d\ude00",
            r"\uDBFF\uDFFF",
        ];
        let fillers = ["a", "é", "€", "😀"];
        for esc in escapes {
            for filler in fillers {
                for before in 0..40 {
                    for after in [0, 1, 15, 17, 33] {
                        let text = format!("\"{}{esc}{}{esc}\"", filler.repeat(before), "x".repeat(after));
                        let data = text.as_bytes();
                        let s = Scanner::new(data).scan_string().unwrap();
                        let mut out = b"prefix".to_vec();
                        unescape_into(data, s, &mut out);
                        let want: String = serde_json::from_slice(data).unwrap();
                        assert_eq!(&out[..6], b"prefix");
                        assert_eq!(std::str::from_utf8(&out[6..]).unwrap(), want, "{text}");
                    }
                }
            }
        }
    }
}
