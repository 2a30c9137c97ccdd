//! Newline framing of a byte stream fed in arbitrary pieces.
//!
//! The framer only finds lines: it strips `\r\n`/`\n`, skips blank lines, counts line numbers and
//! enforces the length limit with resynchronisation at the next newline. Each complete line is
//! handed to a callback, borrowed straight from the caller's buffer when it lies there whole, so a
//! large `feed` costs one `memchr` pass and no copies. Mirror: `_fallback/framing.py`
//! (docs/DESIGN.md §6).

/// Default `max_frame_bytes`: 64 MiB.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// What the framer found.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A complete, non-blank line (without its line ending) and its 1-based line number.
    /// `utf8` is true when the framer already found the line to be valid UTF-8 (checked once for
    /// a window of complete lines, which is cheaper than line by line); false means not checked,
    /// not invalid.
    Frame { line: u64, data: &'a [u8], utf8: bool },
    /// The line `line` is longer than the limit; its bytes are being discarded.
    TooLarge { line: u64 },
}

#[derive(Debug, Clone)]
pub struct Framer {
    max_frame_bytes: usize,
    /// Bytes of the current partial line.
    partial: Vec<u8>,
    /// Lines completed so far.
    line: u64,
    /// Discarding the rest of an oversized line.
    skipping: bool,
}

#[inline(always)]
fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\r'))
}

#[inline(always)]
fn strip_cr(line: &[u8]) -> &[u8] {
    match line.split_last() {
        Some((b'\r', rest)) => rest,
        _ => line,
    }
}

/// Bytes of complete lines checked for UTF-8 at once before they are parsed (small enough to
/// stay in the L2 cache between the check and the parse).
const WINDOW: usize = 64 * 1024;

/// Offset of the newline that ends the window of complete lines starting at `start`: the last
/// newline within `WINDOW` bytes, or the first one after when a single line is longer; None when
/// no newline is left.
#[inline]
fn window_end(data: &[u8], start: usize) -> Option<usize> {
    let rest = data.get(start..)?;
    let limit = rest.len().min(WINDOW);
    match memchr::memrchr(b'\n', &rest[..limit]) {
        Some(at) => Some(start + at),
        None => memchr::memchr(b'\n', &rest[limit..]).map(|at| start + limit + at),
    }
}

impl Framer {
    pub fn new(max_frame_bytes: usize) -> Self {
        Self {
            max_frame_bytes: max_frame_bytes.max(1),
            partial: Vec::new(),
            line: 0,
            skipping: false,
        }
    }

    pub fn max_frame_bytes(&self) -> usize {
        self.max_frame_bytes
    }

    /// Lines completed so far (blank ones included).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Bytes held for the current partial line.
    pub fn buffered(&self) -> usize {
        self.partial.len()
    }

    /// Hand a complete line (with `\r` possibly still on it) to `emit`.
    #[inline(always)]
    fn complete<F: FnMut(Event<'_>)>(max: usize, line: u64, data: &[u8], utf8: bool, emit: &mut F) {
        if data.len() > max {
            emit(Event::TooLarge { line });
            return;
        }
        let data = strip_cr(data);
        if !is_blank(data) {
            emit(Event::Frame { line, data, utf8 });
        }
    }

    /// Feed bytes; `emit` is called for every complete line, in order.
    pub fn feed<F: FnMut(Event<'_>)>(&mut self, mut data: &[u8], mut emit: F) {
        let max = self.max_frame_bytes;
        if self.skipping {
            let Some(nl) = memchr::memchr(b'\n', data) else { return };
            self.skipping = false;
            self.line += 1;
            data = &data[nl + 1..];
        }
        if !self.partial.is_empty() {
            let Some(nl) = memchr::memchr(b'\n', data) else {
                self.buffer_tail(data, &mut emit);
                return;
            };
            self.line += 1;
            if self.partial.len() + nl > max {
                self.partial.clear();
                emit(Event::TooLarge { line: self.line });
            } else {
                self.partial.extend_from_slice(&data[..nl]);
                let partial = std::mem::take(&mut self.partial);
                Self::complete(max, self.line, &partial, false, &mut emit);
                self.partial = partial;
                self.partial.clear();
            }
            data = &data[nl + 1..];
        }
        // The complete lines go in windows of about `WINDOW` bytes that end at a newline: one
        // UTF-8 check over a window (a newline never splits a UTF-8 sequence, so every line of a
        // valid window is valid), then its lines, while the window is still in the cache. When a
        // window fails the check its lines are left unchecked and the parser reports the error
        // of each bad line with its own position.
        let mut start = 0;
        while let Some(end) = window_end(data, start) {
            let window = &data[start..end];
            let utf8 = crate::scanner::check_utf8(window).is_ok();
            let mut from = 0;
            for nl in memchr::memchr_iter(b'\n', window) {
                self.line += 1;
                Self::complete(max, self.line, &window[from..nl], utf8, &mut emit);
                from = nl + 1;
            }
            // The window's last line ends at `end`.
            self.line += 1;
            Self::complete(max, self.line, &window[from..], utf8, &mut emit);
            start = end + 1;
        }
        self.buffer_tail(&data[start..], &mut emit);
    }

    fn buffer_tail<F: FnMut(Event<'_>)>(&mut self, tail: &[u8], emit: &mut F) {
        if self.partial.len() + tail.len() > self.max_frame_bytes {
            self.partial = Vec::new();
            self.skipping = true;
            emit(Event::TooLarge { line: self.line + 1 });
        } else {
            self.partial.extend_from_slice(tail);
        }
    }

    /// End of input: emit the last line if it has no newline, and reset the partial line.
    pub fn finish<F: FnMut(Event<'_>)>(&mut self, mut emit: F) {
        if self.skipping {
            self.skipping = false;
            self.line += 1;
            return;
        }
        if self.partial.is_empty() {
            return;
        }
        self.line += 1;
        let partial = std::mem::take(&mut self.partial);
        Self::complete(self.max_frame_bytes, self.line, &partial, false, &mut emit);
    }
}

impl Default for Framer {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Eq)]
    enum Owned {
        Frame(u64, Vec<u8>),
        TooLarge(u64),
    }

    fn run(framer: &mut Framer, pieces: &[&[u8]], finish: bool) -> Vec<Owned> {
        let mut out = Vec::new();
        let mut push = |e: Event<'_>| {
            out.push(match e {
                Event::Frame { line, data, .. } => Owned::Frame(line, data.to_vec()),
                Event::TooLarge { line } => Owned::TooLarge(line),
            });
        };
        for p in pieces {
            framer.feed(p, &mut push);
        }
        if finish {
            framer.finish(&mut push);
        }
        out
    }

    #[test]
    fn lines_blank_crlf_and_finish() {
        let mut f = Framer::default();
        let out = run(&mut f, &[b"a\r\n\n  \r\nb\nc"], true);
        assert_eq!(
            out,
            vec![
                Owned::Frame(1, b"a".to_vec()),
                Owned::Frame(4, b"b".to_vec()),
                Owned::Frame(5, b"c".to_vec())
            ]
        );
        assert_eq!(f.line(), 5);
    }

    #[test]
    fn every_split_gives_the_same_lines() {
        let stream: &[u8] = b"{\"a\":1}\r\n\nxyz\n{\"b\":2}\n tail";
        let whole = run(&mut Framer::default(), &[stream], true);
        for cut in 0..=stream.len() {
            let got = run(&mut Framer::default(), &[&stream[..cut], &stream[cut..]], true);
            assert_eq!(got, whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(run(&mut Framer::default(), &bytes, true), whole);
    }

    /// A line flagged `utf8` is valid UTF-8, whatever the split; an invalid byte anywhere in a
    /// feed leaves its lines unflagged (the parser then checks each one).
    #[test]
    fn utf8_flag_is_only_set_on_valid_lines() {
        let flags = |pieces: &[&[u8]]| {
            let mut f = Framer::default();
            let mut out = Vec::new();
            for p in pieces {
                f.feed(p, |e| {
                    if let Event::Frame { data, utf8, .. } = e {
                        out.push((data.to_vec(), utf8));
                    }
                });
            }
            f.finish(|e| {
                if let Event::Frame { data, utf8, .. } = e {
                    out.push((data.to_vec(), utf8));
                }
            });
            out
        };
        let valid: &[u8] = "{\"a\":\"é\"}\n{\"b\":\"→\"}\n{\"c\":1}".as_bytes();
        let got = flags(&[valid]);
        assert_eq!(got.iter().map(|(_, u)| *u).collect::<Vec<_>>(), [true, true, false]);
        let invalid: &[u8] = b"{\"a\":1}\n{\"b\":\"\xff\"}\n";
        assert!(flags(&[invalid]).iter().all(|(_, u)| !u));
        for cut in 0..=valid.len() {
            for (data, utf8) in flags(&[&valid[..cut], &valid[cut..]]) {
                assert!(!utf8 || std::str::from_utf8(&data).is_ok());
            }
        }
        // Several windows: lines of every length around the window size (one longer than a
        // window), a bad line in the middle; every line comes out once, in order, and the flag
        // is false exactly for the lines of the window holding the bad one.
        let mut stream = Vec::new();
        let mut lines = Vec::new();
        let sizes = [
            10usize,
            WINDOW - 3,
            1,
            WINDOW + 100,
            7,
            3 * WINDOW / 2,
            5,
            900,
            WINDOW / 3,
        ];
        for (i, len) in sizes.iter().copied().cycle().take(40).enumerate() {
            let mut line = vec![b'a' + (i % 26) as u8; len];
            if i == 17 {
                line[len / 2] = 0xff;
            }
            stream.extend_from_slice(&line);
            stream.push(b'\n');
            lines.push(line);
        }
        let got = flags(&[&stream]);
        assert_eq!(got.iter().map(|(d, _)| d.clone()).collect::<Vec<_>>(), lines);
        assert!(!got[17].1);
        let checked = got.iter().filter(|(_, u)| *u).count();
        assert!(checked > 30, "{checked} of 40 lines flagged valid");
        for (data, utf8) in &got {
            assert!(!utf8 || std::str::from_utf8(data).is_ok());
        }
    }

    #[test]
    fn oversized_lines_resync() {
        let stream: &[u8] = b"12345\n1234567890\nab\n123456789";
        let expected = vec![
            Owned::Frame(1, b"12345".to_vec()),
            Owned::TooLarge(2),
            Owned::Frame(3, b"ab".to_vec()),
            Owned::TooLarge(4),
        ];
        assert_eq!(run(&mut Framer::new(6), &[stream], true), expected);
        for cut in 0..=stream.len() {
            let mut f = Framer::new(6);
            assert_eq!(
                run(&mut f, &[&stream[..cut], &stream[cut..]], true),
                expected,
                "cut at {cut}"
            );
            assert!(f.buffered() <= 6);
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(run(&mut Framer::new(6), &bytes, true), expected);
    }
}
