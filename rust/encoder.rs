//! JSON writing rules shared by every serializer: string escaping, number formatting and error
//! paths. Output is byte-identical to `orjson.dumps` for the values both accept (docs/DESIGN.md
//! §4). The walk over Python objects lives in the binding layer (`python/convert.rs`); its mirror
//! is `_fallback/encoder.py`.

/// Deepest nesting written (orjson's limit; it also stops cycles).
pub const MAX_DEPTH: usize = 254;

/// Write `s` as a JSON string literal.
#[inline]
pub fn write_str(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < s.len() {
        let next = find_escape(s, i);
        if next >= s.len() {
            break;
        }
        out.extend_from_slice(&s[start..next]);
        let b = s[next];
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 0xf) as usize]]);
            }
        }
        i = next + 1;
        start = i;
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

#[inline(always)]
const fn needs_escape(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// Offset of the first byte at or after `i` that must be escaped, or `s.len()`.
#[inline(always)]
fn find_escape(s: &[u8], mut i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86_64 baseline; every load stays within `s`.
    unsafe {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        };
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let ctl = _mm_set1_epi8(0x1f);
        while i + 16 <= s.len() {
            let v = _mm_loadu_si128(s.as_ptr().add(i).cast::<__m128i>());
            let m = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v),
            );
            let mask = _mm_movemask_epi8(m);
            if mask != 0 {
                return i + mask.trailing_zeros() as usize;
            }
            i += 16;
        }
    }
    while i < s.len() {
        if NEEDS_ESCAPE[usize::from(s[i])] {
            return i;
        }
        i += 1;
    }
    s.len()
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
pub fn write_i64(out: &mut Vec<u8>, v: i64) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(v).as_bytes());
}

#[inline]
pub fn write_u64(out: &mut Vec<u8>, v: u64) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(v).as_bytes());
}

/// Write a finite float the way orjson does: shortest round-trip digits, fixed notation for
/// `1e-5 <= |x| < 1e16` (with `.0` when integral), otherwise `d[.ddd]e±X`.
/// The caller rejects non-finite values.
pub fn write_f64(out: &mut Vec<u8>, v: f64) {
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
                out.resize(out.len() + int_digits - sig.len(), b'0');
                out.extend_from_slice(b".0");
            } else {
                out.extend_from_slice(&sig[..int_digits]);
                out.push(b'.');
                out.extend_from_slice(&sig[int_digits..]);
            }
        } else {
            out.extend_from_slice(b"0.");
            out.resize(out.len() + (-exp - 1) as usize, b'0');
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
