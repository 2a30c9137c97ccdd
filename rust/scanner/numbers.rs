//! Numbers: scanning a lexeme (with the range limits of docs/DESIGN.md §2) and converting one
//! the grammar accepted.
//!
//! Mirror: `_fallback/scanner/numbers.py`. `parse_f64`, `parse_i64` and `parse_u64` are Rust only
//! (the fallback converts with Python's own `int` and `float`).

use super::cursor::{unexpected, Scanner};
use super::Number;
use crate::error::DecodeError;

/// Longest integer lexeme accepted, in digits (CPython's default int/str conversion limit).
pub const MAX_INT_DIGITS: usize = 4300;

impl<'a> Scanner<'a> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scanner::validate;

    #[test]
    fn long_ints() {
        let ok = "9".repeat(4300);
        validate(ok.as_bytes()).unwrap();
        let bad = "9".repeat(4301);
        assert_eq!(
            validate(bad.as_bytes()).expect_err("should fail").kind,
            "number_out_of_range"
        );
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
