//! Newline framing of a byte stream fed in arbitrary pieces.
//!
//! The framer only finds lines: it strips `\r\n`/`\n`, skips blank lines, counts line numbers and
//! enforces the length limit with resynchronisation at the next newline. Each complete line is
//! handed to a callback, borrowed straight from the caller's buffer when it lies there whole, so a
//! large `feed` costs one `memchr` pass and no copies. `feed_exact` reads the same lines exactly
//! as they were (line endings kept, blank lines too, an oversized line reported with its length
//! once it ends), for a relay that forwards them. Here too live the limits, the check of a
//! caller's `max_frame_bytes` and the `frame_too_large` error.
//!
//! Mirror: `_fallback/framing.py` (docs/DESIGN.md §6), names with a leading underscore there
//! where they are not public. It batches where this calls back: its `_feed` cuts a whole feed
//! with one `bytes.split` and returns the lines, which the caller (`Framer.feed`,
//! `FrameDecoder.feed`, `ToolCallStore.feed`) walks in its own loop, where `feed` here calls
//! `emit` line by line; `_feed_exact` splits only when it must. Its public `feed` / `finish` are
//! those of the Python class (here `rust/python/framing.rs`). A partial line's buffer over 8 MiB
//! is dropped once its line is done and mimalloc told to return freed memory (`Framer::reuse`);
//! the fallback's chunks go with their line and CPython returns big blocks itself.

use crate::error::DecodeError;

/// Default `max_frame_bytes`: 64 MiB.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// The largest `max_frame_bytes` (offsets within a frame are stored as `u32`).
pub const MAX_FRAME_BYTES: usize = u32::MAX as usize - 1;

/// A caller's `max_frame_bytes`: an integer from 1 to `MAX_FRAME_BYTES`, else why not.
pub fn check_max_frame_bytes(value: i64) -> Result<usize, String> {
    match usize::try_from(value) {
        Ok(n) if (1..=MAX_FRAME_BYTES).contains(&n) => Ok(n),
        _ => Err(max_frame_bytes_out_of_range(value)),
    }
}

/// Why a `max_frame_bytes` of `found` (an integer, maybe beyond 64 bits) is refused.
pub fn max_frame_bytes_out_of_range(found: impl std::fmt::Display) -> String {
    format!("max_frame_bytes must be between 1 and {MAX_FRAME_BYTES}, found {found}")
}

/// Why a `max_frame_bytes` that is not an integer (a value of type `type_name`) is refused.
pub fn max_frame_bytes_not_an_int(type_name: &str) -> String {
    format!("max_frame_bytes must be an int, found {type_name}")
}

/// The error of a line longer than `max` bytes (docs/DESIGN.md §6): its bytes are skipped up to
/// the next newline.
#[cold]
pub fn too_large(max: usize) -> DecodeError {
    DecodeError::json(
        "frame_too_large",
        format!("expected a frame of at most {max} bytes, found a longer line; skipped to the next newline"),
        max,
    )
}

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

/// What `feed_exact` found: the stream's lines exactly as they were.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A complete line, blank or not, with its line ending (`\n` or `\r\n`; none for a last line
    /// without one, given by `finish_exact`).
    Line { line: u64, data: &'a [u8] },
    /// The line `line` was longer than the limit: `bytes` of it (line ending included) were
    /// dropped. Reported once the line has ended, with its first bytes (at most `HEAD_BYTES`):
    /// enough, in a JSON-RPC frame, to find the `id` to answer.
    TooLarge { line: u64, bytes: u64, head: &'a [u8] },
}

/// The first bytes of an oversized line kept until it is reported (`Piece::TooLarge`): a frame
/// usually begins with its `jsonrpc`, `id` and `method` members.
pub const HEAD_BYTES: usize = 4096;

/// The first `HEAD_BYTES` of `a` followed by `b`.
fn head_of(a: &[u8], b: &[u8]) -> Vec<u8> {
    let from_a = a.len().min(HEAD_BYTES);
    let from_b = b.len().min(HEAD_BYTES - from_a);
    let mut head = Vec::with_capacity(from_a + from_b);
    head.extend_from_slice(&a[..from_a]);
    head.extend_from_slice(&b[..from_b]);
    head
}

/// Where the scan's findings go: `Events` for `feed`, `Pieces` for `feed_exact`.
trait Sink {
    /// The exact reading: line endings and blank lines kept, oversized lines reported once they
    /// have ended.
    const EXACT: bool;
    fn line(&mut self, line: u64, data: &[u8], utf8: bool);
    /// The default reading: the line passed the limit (as soon as known).
    fn too_large(&mut self, line: u64);
    /// The exact reading: the oversized line ended, `bytes` of it dropped, `head` its first ones.
    fn dropped(&mut self, line: u64, bytes: u64, head: &[u8]);
}

/// `feed`'s sink.
struct Events<F>(F);

impl<F: FnMut(Event<'_>)> Sink for Events<F> {
    const EXACT: bool = false;

    #[inline(always)]
    fn line(&mut self, line: u64, data: &[u8], utf8: bool) {
        (self.0)(Event::Frame { line, data, utf8 });
    }

    #[inline(always)]
    fn too_large(&mut self, line: u64) {
        (self.0)(Event::TooLarge { line });
    }

    #[inline(always)]
    fn dropped(&mut self, _line: u64, _bytes: u64, _head: &[u8]) {}
}

/// `feed_exact`'s sink.
struct Pieces<F>(F);

impl<F: FnMut(Piece<'_>)> Sink for Pieces<F> {
    const EXACT: bool = true;

    #[inline(always)]
    fn line(&mut self, line: u64, data: &[u8], _utf8: bool) {
        (self.0)(Piece::Line { line, data });
    }

    #[inline(always)]
    fn too_large(&mut self, _line: u64) {}

    #[inline(always)]
    fn dropped(&mut self, line: u64, bytes: u64, head: &[u8]) {
        (self.0)(Piece::TooLarge { line, bytes, head });
    }
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
    /// Bytes of the oversized line discarded so far (while `skipping`).
    dropped: u64,
    /// The first bytes of the oversized line (while `skipping`, in the exact reading).
    head: Vec<u8>,
    /// A big buffer was released: give freed memory back at the next feed too (`reuse`).
    release: bool,
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

/// The largest buffer of a partial line kept for the next one (`Framer::reuse`).
use crate::KEEP_CAPACITY;

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
            dropped: 0,
            head: Vec::new(),
            release: false,
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

    /// Whether the next byte fed starts a line (no partial line held, none being skipped).
    pub fn at_line_start(&self) -> bool {
        self.partial.is_empty() && !self.skipping
    }

    /// Count `lines` complete lines read by others (the ranges `columns::FrameColumns` parses on
    /// other threads); only at the start of a line.
    pub fn skip_lines(&mut self, lines: u64) {
        debug_assert!(self.at_line_start());
        self.line += lines;
    }

    /// Hand a complete line to `sink`. `S::EXACT`: `data` keeps its line ending (`eol`: it has
    /// a `\n`), else it has none and may still end in `\r`.
    #[inline(always)]
    fn complete<S: Sink>(max: usize, line: u64, data: &[u8], eol: bool, utf8: bool, sink: &mut S) {
        let content = data.len() - usize::from(S::EXACT && eol);
        if content > max {
            if S::EXACT {
                sink.dropped(line, data.len() as u64, &data[..content.min(HEAD_BYTES)]);
            } else {
                sink.too_large(line);
            }
            return;
        }
        if S::EXACT {
            sink.line(line, data, utf8);
            return;
        }
        let data = strip_cr(data);
        if !is_blank(data) {
            sink.line(line, data, utf8);
        }
    }

    /// Feed bytes; `emit` is called for every complete non-blank line, in order.
    pub fn feed<F: FnMut(Event<'_>)>(&mut self, data: &[u8], emit: F) {
        self.scan(data, &mut Events(emit));
    }

    /// Feed bytes; `emit` is called for every complete line exactly as it was, in order. Not to
    /// be mixed with `feed` on one framer.
    pub fn feed_exact<F: FnMut(Piece<'_>)>(&mut self, data: &[u8], emit: F) {
        self.scan(data, &mut Pieces(emit));
    }

    fn scan<S: Sink>(&mut self, mut data: &[u8], sink: &mut S) {
        if self.release {
            self.released();
        }
        let max = self.max_frame_bytes;
        // Bytes of its `\n` that a complete line keeps.
        let ending = usize::from(S::EXACT);
        if self.skipping {
            let nl = memchr::memchr(b'\n', data);
            if S::EXACT && self.head.len() < HEAD_BYTES {
                let more = (HEAD_BYTES - self.head.len()).min(nl.unwrap_or(data.len()));
                self.head.extend_from_slice(&data[..more]);
            }
            let Some(nl) = nl else {
                self.dropped += data.len() as u64;
                return;
            };
            self.skipping = false;
            self.line += 1;
            let head = std::mem::take(&mut self.head);
            sink.dropped(self.line, self.dropped + nl as u64 + 1, &head);
            data = &data[nl + 1..];
        }
        if !self.partial.is_empty() {
            let Some(nl) = memchr::memchr(b'\n', data) else {
                self.buffer_tail(data, sink);
                return;
            };
            self.line += 1;
            if self.partial.len() + nl > max {
                let bytes = (self.partial.len() + nl + 1) as u64;
                let partial = std::mem::take(&mut self.partial);
                if S::EXACT {
                    sink.dropped(self.line, bytes, &head_of(&partial, &data[..nl]));
                } else {
                    sink.too_large(self.line);
                }
                self.reuse(partial);
            } else {
                self.partial.extend_from_slice(&data[..nl + ending]);
                let partial = std::mem::take(&mut self.partial);
                Self::complete(max, self.line, &partial, true, false, sink);
                self.reuse(partial);
            }
            data = &data[nl + 1..];
        }
        // The complete lines go in windows of about `WINDOW` bytes that end at a newline: one
        // UTF-8 check over a window (a newline never splits a UTF-8 sequence, so every line of a
        // valid window is valid), then its lines, while the window is still in the cache. When a
        // window fails the check its lines are left unchecked and the parser reports the error
        // of each bad line with its own position. (The exact reading parses nothing: no check.)
        let mut start = 0;
        while let Some(end) = window_end(data, start) {
            let window = &data[start..end];
            let utf8 = !S::EXACT && crate::scanner::check_utf8(window).is_ok();
            let mut from = start;
            for nl in memchr::memchr_iter(b'\n', window) {
                self.line += 1;
                let nl = start + nl;
                Self::complete(max, self.line, &data[from..nl + ending], true, utf8, sink);
                from = nl + 1;
            }
            // The window's last line ends at `end`.
            self.line += 1;
            Self::complete(max, self.line, &data[from..end + ending], true, utf8, sink);
            start = end + 1;
        }
        self.buffer_tail(&data[start..], sink);
    }

    /// Done with the buffer of a partial line: keep it for the next one, unless it grew past
    /// `KEEP_CAPACITY` (a line of several MB, or the start of an oversized one): then it goes, and
    /// the allocator is asked to give its memory back to the OS now and again at the next feed
    /// (by then the caller has dropped what it built from the line, a copy of it maybe).
    #[inline]
    fn reuse(&mut self, mut buffer: Vec<u8>) {
        if buffer.capacity() > KEEP_CAPACITY {
            self.give_back(buffer);
        } else {
            buffer.clear();
            self.partial = buffer;
        }
    }

    #[cold]
    #[inline(never)]
    fn give_back(&mut self, buffer: Vec<u8>) {
        self.release = true;
        crate::drop_buffer(buffer);
    }

    #[cold]
    #[inline(never)]
    fn released(&mut self) {
        self.release = false;
        crate::release_freed_memory();
    }

    fn buffer_tail<S: Sink>(&mut self, tail: &[u8], sink: &mut S) {
        if self.partial.len() + tail.len() > self.max_frame_bytes {
            self.dropped = (self.partial.len() + tail.len()) as u64;
            if S::EXACT {
                self.head = head_of(&self.partial, tail);
            }
            let partial = std::mem::take(&mut self.partial);
            self.reuse(partial);
            self.skipping = true;
            sink.too_large(self.line + 1);
        } else {
            self.partial.extend_from_slice(tail);
        }
    }

    /// End of input: emit the last line if it has no newline, and reset the partial line.
    pub fn finish<F: FnMut(Event<'_>)>(&mut self, emit: F) {
        self.end(&mut Events(emit));
    }

    /// `finish` for `feed_exact`: the last line as it is, or the oversized line it was.
    pub fn finish_exact<F: FnMut(Piece<'_>)>(&mut self, emit: F) {
        self.end(&mut Pieces(emit));
    }

    fn end<S: Sink>(&mut self, sink: &mut S) {
        if self.skipping {
            self.skipping = false;
            self.line += 1;
            let head = std::mem::take(&mut self.head);
            sink.dropped(self.line, self.dropped, &head);
            return;
        }
        if self.partial.is_empty() {
            return;
        }
        self.line += 1;
        let partial = std::mem::take(&mut self.partial);
        Self::complete(self.max_frame_bytes, self.line, &partial, false, false, sink);
        self.reuse(partial);
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
    /// A partial line's buffer is kept for the next line up to `KEEP_CAPACITY`, and given back
    /// past it: after a line that was too long, or a long good one, whatever the reading.
    #[test]
    fn big_partial_buffers_are_given_back() {
        let piece = vec![b'x'; 1 << 20];
        for (max, exact) in [
            (DEFAULT_MAX_FRAME_BYTES, false),
            (DEFAULT_MAX_FRAME_BYTES, true),
            (12 << 20, false),
        ] {
            let mut f = Framer::new(max);
            let mut lines = 0;
            for _ in 0..20 {
                if exact {
                    f.feed_exact(&piece, |_| lines += 1);
                } else {
                    f.feed(&piece, |_| lines += 1);
                }
            }
            assert!(f.partial.capacity() > KEEP_CAPACITY || max < 20 << 20);
            let mut count = |p: &[u8]| {
                if exact {
                    f.feed_exact(p, |_| lines += 1);
                } else {
                    f.feed(p, |_| lines += 1);
                }
            };
            count(b"\nab");
            count(b"cd\n");
            assert_eq!(lines, 2);
            assert_eq!(f.buffered(), 0);
            assert!(f.partial.capacity() <= KEEP_CAPACITY, "{}", f.partial.capacity());
        }
        let mut f = Framer::default();
        f.feed(&piece, |_| ());
        f.feed(b"\n", |_| ());
        assert!(f.partial.capacity() >= 1 << 20, "a small buffer is kept");
    }

    #[derive(Debug, PartialEq, Eq)]
    enum Exact {
        Line(u64, Vec<u8>),
        TooLarge(u64, u64, Vec<u8>),
    }

    fn run_exact(framer: &mut Framer, pieces: &[&[u8]]) -> Vec<Exact> {
        let mut out = Vec::new();
        let mut push = |p: Piece<'_>| {
            out.push(match p {
                Piece::Line { line, data } => Exact::Line(line, data.to_vec()),
                Piece::TooLarge { line, bytes, head } => Exact::TooLarge(line, bytes, head.to_vec()),
            });
        };
        for p in pieces {
            framer.feed_exact(p, &mut push);
        }
        framer.finish_exact(&mut push);
        out
    }

    /// The exact reading gives back every byte of the stream, line by line, whatever the split.
    #[test]
    fn exact_lines_keep_endings_and_blank_lines() {
        let stream: &[u8] = b"a\r\n\n  \r\nb\nc";
        let expected = vec![
            Exact::Line(1, b"a\r\n".to_vec()),
            Exact::Line(2, b"\n".to_vec()),
            Exact::Line(3, b"  \r\n".to_vec()),
            Exact::Line(4, b"b\n".to_vec()),
            Exact::Line(5, b"c".to_vec()),
        ];
        for cut in 0..=stream.len() {
            let mut f = Framer::default();
            assert_eq!(
                run_exact(&mut f, &[&stream[..cut], &stream[cut..]]),
                expected,
                "cut at {cut}"
            );
            assert_eq!(f.line(), 5);
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(run_exact(&mut Framer::default(), &bytes), expected);
    }

    #[test]
    fn exact_oversized_lines_report_their_length() {
        let stream: &[u8] = b"12345\n1234567890\nab\r\n123456\r\n123456789";
        let expected = vec![
            Exact::Line(1, b"12345\n".to_vec()),
            Exact::TooLarge(2, 11, b"1234567890".to_vec()),
            Exact::Line(3, b"ab\r\n".to_vec()),
            Exact::TooLarge(4, 8, b"123456\r".to_vec()),
            Exact::TooLarge(5, 9, b"123456789".to_vec()),
        ];
        for cut in 0..=stream.len() {
            let mut f = Framer::new(6);
            let got = run_exact(&mut f, &[&stream[..cut], &stream[cut..]]);
            assert_eq!(got, expected, "cut at {cut}");
            assert_eq!(f.buffered(), 0);
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        let mut f = Framer::new(6);
        assert_eq!(run_exact(&mut f, &bytes), expected);
        assert_eq!(f.line(), 5);
    }

    /// An oversized line's head is its first `HEAD_BYTES`, however the stream is split.
    #[test]
    fn exact_oversized_heads_stop_at_head_bytes() {
        let long: Vec<u8> = (0..HEAD_BYTES + 500).map(|i| b'a' + (i % 26) as u8).collect();
        let mut stream = long.clone();
        stream.extend_from_slice(b"\nok\n");
        for cut in [
            0,
            1,
            10,
            HEAD_BYTES - 1,
            HEAD_BYTES,
            HEAD_BYTES + 1,
            long.len(),
            long.len() + 1,
        ] {
            let got = run_exact(&mut Framer::new(100), &[&stream[..cut], &stream[cut..]]);
            let expected = vec![
                Exact::TooLarge(1, long.len() as u64 + 1, long[..HEAD_BYTES].to_vec()),
                Exact::Line(2, b"ok\n".to_vec()),
            ];
            assert_eq!(got, expected, "cut at {cut}");
        }
    }

    #[test]
    fn limits_and_their_error() {
        assert_eq!(check_max_frame_bytes(1), Ok(1));
        assert_eq!(check_max_frame_bytes(MAX_FRAME_BYTES as i64), Ok(MAX_FRAME_BYTES));
        for bad in [0, -1, MAX_FRAME_BYTES as i64 + 1, i64::MIN] {
            assert_eq!(
                check_max_frame_bytes(bad),
                Err(format!("max_frame_bytes must be between 1 and 4294967294, found {bad}"))
            );
        }
        let e = too_large(10);
        assert_eq!(
            (e.code, e.kind, e.position),
            (crate::error::PARSE_ERROR, "frame_too_large", Some(10))
        );
        assert_eq!(
            e.description,
            "expected a frame of at most 10 bytes, found a longer line; skipped to the next newline"
        );
    }
}
