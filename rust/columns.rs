//! Columnar frames (docs/ANALYTICS.md, "The tables"): one row per line of a stream, built straight
//! into Arrow's memory layout (offsets, values and validity bitmaps) from the framer's lines and
//! the envelope's spans, with no object per frame. The binding (`rust/python/arrow.rs`) hands the
//! buffers to Arrow without a copy.
//!
//! A row: `line`, `kind` (`request`, `notification`, `response`, `error`, `batch` for a batch
//! array, `invalid`), `method`, `id` (the id's JSON text as `dumps` writes it), `session_id`,
//! `update_kind`, `tool_call_id`, `status` (`params.update.status` when a string), `bytes` (the
//! line's length without its line ending), `error` (the `DecodeError` kind of an invalid line)
//! and `raw` (the line's bytes). Absent fields are null. Rows are cut into batches of at most
//! about `BATCH_BYTES` of `raw`, so that 32-bit offsets always suffice.
//!
//! Only some columns (`FrameColumns::select`, `Wanted`): the others are not filled at all (no copy
//! of the lines without `raw`); every line is still parsed and checked in full, and the batches
//! are cut at the same rows (their `raw_bytes` is counted whether `raw` is built or not).
//!
//! The columns are sized once for the bytes to come (`FrameColumns::reserve`, a file's size, or
//! the bytes of one `feed`), from a sample of the first rows (`Rows::make_room`), rather than
//! grown by doubling as the rows come.
//!
//! On several threads (`FrameColumns::new(.., threads)`), `feed` cuts the complete lines it is
//! given into `threads` newline-aligned byte ranges of about equal size (`split_ranges`), builds
//! each range's rows on its own thread (a framer and rows of its own, numbered from 0), then adds
//! to each range's line numbers the lines of the ranges before it (its framer's count, blank and
//! oversized lines included) and appends its batches in order: the rows are those of one thread,
//! in the same order, cut into more batches. A partial line left from the previous `feed` is
//! completed first on the calling thread, and the bytes after the last newline go to the framer.
//!
//! Files (`FrameColumns::feed_file`): a file's bytes are read here, not handed in. On several
//! threads the file is cut as `split_ranges` cuts bytes, into `RANGES_PER_THREAD` ranges a thread
//! (each of two pieces at least), reading only around each cut; the threads take the ranges in
//! turn (a thread slowed by other work on its core holds the others up less), each reading its
//! range in pieces of `FILE_PIECE_BYTES` into a buffer of its own and parsing each piece while it
//! is still in its core's cache; the ranges' rows are appended in order, as `feed`'s are.
//! The first range goes to this framer on the calling thread (it completes a partial line held
//! from before), and the bytes after the last newline too. A file that ends early (it shrank
//! while read) gives the rows of the bytes fed up to the first range cut short; the others are
//! dropped, for the caller to read again from there.
//!
//! Mirror: `_fallback/columns.py`. Differences on purpose: the fallback fills Python lists from
//! `decode` and builds the table with pyarrow; this fills the buffers from `parse_line` spans. The
//! fallback cuts the same ranges but parses them one after the other, on the calling thread, and
//! reads a file in order on the calling thread, feeding its pieces as they come.

use std::io;
use std::os::unix::fs::FileExt;

use crate::error::DecodeError;
use crate::framing::{Event, Framer};
use crate::message::{parse_frame, parse_line_status, parse_line_utf8, strip_line_ending, Frame, Span};
use crate::scanner::{parse_i64, unescape_into, Str};

/// The columns of a row, in order.
pub const COLUMNS: [&str; 11] = [
    "line",
    "kind",
    "method",
    "id",
    "session_id",
    "update_kind",
    "tool_call_id",
    "status",
    "bytes",
    "error",
    "raw",
];

/// A batch is closed once its `raw` values reach this many bytes.
pub const BATCH_BYTES: usize = 1 << 30;

/// The largest `max_frame_bytes` of a `FrameColumns`: a batch then stays under 2 GiB, the reach
/// of 32-bit offsets.
pub const MAX_LINE_BYTES: usize = 1 << 30;

/// The most threads a `FrameColumns` takes.
pub const MAX_THREADS: usize = 1024;

/// A caller's `threads`: an integer from 1 to `MAX_THREADS`, else why not.
pub fn check_threads(value: i64) -> Result<usize, String> {
    match usize::try_from(value) {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        _ => Err(threads_out_of_range(value)),
    }
}

/// Why a `threads` of `found` (an integer, maybe beyond 64 bits) is refused.
pub fn threads_out_of_range(found: impl std::fmt::Display) -> String {
    format!("threads must be between 1 and {MAX_THREADS}, found {found}")
}

/// Why a `threads` that is not an integer (a value of type `type_name`) is refused.
pub fn threads_not_an_int(type_name: &str) -> String {
    format!("threads must be an int or None, found {type_name}")
}

/// The default `threads`: the cores this process may use (1 when unknown).
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS)
}

/// Which of `COLUMNS` a `FrameColumns` builds (`select`): the others are not filled at all (no
/// `raw` copy of the lines without `raw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    pub line: bool,
    pub kind: bool,
    pub method: bool,
    pub id: bool,
    pub session_id: bool,
    pub update_kind: bool,
    pub tool_call_id: bool,
    pub status: bool,
    pub bytes: bool,
    pub error: bool,
    pub raw: bool,
}

impl Wanted {
    /// Every column.
    pub const ALL: Self = Self {
        line: true,
        kind: true,
        method: true,
        id: true,
        session_id: true,
        update_kind: true,
        tool_call_id: true,
        status: true,
        bytes: true,
        error: true,
        raw: true,
    };

    /// The columns at these indexes of `COLUMNS`.
    pub fn of(indexes: &[usize]) -> Self {
        let has = |i: usize| indexes.contains(&i);
        Self {
            line: has(0),
            kind: has(1),
            method: has(2),
            id: has(3),
            session_id: has(4),
            update_kind: has(5),
            tool_call_id: has(6),
            status: has(7),
            bytes: has(8),
            error: has(9),
            raw: has(10),
        }
    }
}

/// Why a `columns` holding a value of type `type_name` (or being one, not a list or tuple) is
/// refused.
pub fn columns_not_names(type_name: &str) -> String {
    format!("columns must be a list or tuple of column names, found {type_name}")
}

/// A caller's `columns`: names of `COLUMNS`, none twice, at least one, as indexes into `COLUMNS`
/// in the caller's order; else why not.
pub fn check_columns<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Vec<usize>, String> {
    check_names(names, &COLUMNS)
}

/// `check_columns` against the column names `known` (`acp_fast.arrow.read_frames` checks its
/// `columns` so, against its own): names of `known`, none twice, at least one, as indexes into
/// `known` in the caller's order; else why not.
pub fn check_names<'a>(names: impl IntoIterator<Item = &'a str>, known: &[&str]) -> Result<Vec<usize>, String> {
    let mut out: Vec<usize> = Vec::new();
    for name in names {
        let Some(i) = known.iter().position(|c| *c == name) else {
            return Err(format!(
                "columns: unknown column '{name}', expected some of {}",
                known.join(", ")
            ));
        };
        if out.contains(&i) {
            return Err(format!("columns: '{name}' is named twice"));
        }
        out.push(i);
    }
    if out.is_empty() {
        return Err("columns must name at least one column".to_owned());
    }
    Ok(out)
}

/// `data` (complete lines: it ends with a newline) cut into at most `parts` ranges of about equal
/// size, each ending just after a newline; no range is empty (none at all for empty `data`).
pub fn split_ranges(data: &[u8], parts: usize) -> Vec<std::ops::Range<usize>> {
    let parts = parts.max(1);
    let mut out = Vec::with_capacity(parts);
    let mut start = 0;
    for i in 1..=parts {
        if start >= data.len() {
            break;
        }
        let target = (data.len() as u128 * i as u128 / parts as u128) as usize;
        if target <= start {
            continue;
        }
        // The cut: just after the first newline at or after `target - 1` (the end of the data
        // for the last range).
        let end = match memchr::memchr(b'\n', &data[target - 1..]) {
            Some(nl) => target + nl,
            None => data.len(),
        };
        out.push(start..end);
        start = end;
    }
    if start < data.len() {
        out.push(start..data.len());
    }
    out
}

/// A piece of a stream cut for `split_ranges`: `head`, the bytes that complete a partial line
/// the framer holds (up to its newline; empty when the framer is at a line start), `lines`, the
/// complete lines after it, `rest`, the bytes after the last newline (all of `data` when it holds
/// no newline to end the framer's partial line).
#[derive(Debug, Clone, Copy)]
pub struct Cut<'a> {
    pub head: &'a [u8],
    pub lines: &'a [u8],
    pub rest: &'a [u8],
}

/// `data` cut into `Cut`'s three parts (`at_line_start`: the framer holds no partial line).
pub fn cut_lines(at_line_start: bool, data: &[u8]) -> Cut<'_> {
    let mut head: &[u8] = &[];
    let mut lines = data;
    if !at_line_start {
        let Some(nl) = memchr::memchr(b'\n', data) else {
            return Cut {
                head,
                lines: &[],
                rest: data,
            };
        };
        (head, lines) = data.split_at(nl + 1);
    }
    let Some(last) = memchr::memrchr(b'\n', lines) else {
        return Cut {
            head,
            lines: &[],
            rest: lines,
        };
    };
    let (lines, rest) = lines.split_at(last + 1);
    Cut { head, lines, rest }
}

/// `f` of each of the `ranges` of `lines` (`split_ranges` for bytes), in order: the first on the
/// calling thread, each other one on a thread of its own, all at once (a panic in one is raised
/// here).
pub fn in_ranges<E: Sync, T: Send>(
    lines: &[E],
    ranges: &[std::ops::Range<usize>],
    f: impl Fn(&[E]) -> T + Sync,
) -> Vec<T> {
    let Some((first, others)) = ranges.split_first() else {
        return Vec::new();
    };
    let f = &f;
    std::thread::scope(|scope| {
        let others: Vec<_> = others
            .iter()
            .map(|r| {
                let piece = &lines[r.clone()];
                scope.spawn(move || f(piece))
            })
            .collect();
        let first = f(&lines[first.clone()]);
        std::iter::once(first)
            .chain(
                others
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))),
            )
            .collect()
    })
}

/// A validity bitmap (bit set: a value; least significant bit first).
#[derive(Debug, Default, Clone)]
pub struct Validity {
    pub bits: Vec<u8>,
    pub len: usize,
    pub nulls: usize,
}

impl Validity {
    #[inline(always)]
    fn push(&mut self, valid: bool) {
        if self.len.is_multiple_of(8) {
            self.bits.push(0);
        }
        if valid {
            self.bits[self.len / 8] |= 1 << (self.len % 8);
        } else {
            self.nulls += 1;
        }
        self.len += 1;
    }
}

/// A column of nullable strings or bytes: `offsets` (one more than rows, from 0), `values`.
#[derive(Debug, Clone)]
pub struct VarColumn {
    pub offsets: Vec<i32>,
    pub values: Vec<u8>,
    pub validity: Validity,
}

impl Default for VarColumn {
    fn default() -> Self {
        Self {
            offsets: vec![0],
            values: Vec::new(),
            validity: Validity::default(),
        }
    }
}

impl VarColumn {
    #[inline(always)]
    fn close(&mut self, valid: bool) {
        // At most BATCH_BYTES + MAX_LINE_BYTES (checked by the callers' limits): fits in an i32.
        self.offsets.push(self.values.len() as i32);
        self.validity.push(valid);
    }

    #[inline(always)]
    fn push(&mut self, value: &[u8]) {
        self.values.extend_from_slice(value);
        self.close(true);
    }

    #[inline(always)]
    fn push_null(&mut self) {
        self.close(false);
    }

    /// The text of a string token of `data`, unescaped.
    #[inline(always)]
    fn push_str(&mut self, data: &[u8], s: Str) {
        if s.escaped {
            unescape_into(data, s, &mut self.values);
        } else {
            self.values.extend_from_slice(&data[s.start..s.end]);
        }
        self.close(true);
    }

    /// A string span's text, or null.
    #[inline(always)]
    fn push_span(&mut self, data: &[u8], span: Option<Span>) {
        match span.and_then(|s| s.str()) {
            Some(s) => self.push_str(data, s),
            None => self.push_null(),
        }
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The rows of one batch, column by column (`COLUMNS`).
#[derive(Debug, Default, Clone)]
pub struct Batch {
    /// The rows, whichever columns are built.
    pub rows: usize,
    /// The bytes of `raw`, whether it is built or not (what cuts the batches).
    pub raw_bytes: usize,
    pub line: Vec<i64>,
    pub kind: VarColumn,
    pub method: VarColumn,
    pub id: VarColumn,
    pub session_id: VarColumn,
    pub update_kind: VarColumn,
    pub tool_call_id: VarColumn,
    pub status: VarColumn,
    pub bytes: Vec<i64>,
    pub bytes_validity: Validity,
    pub error: VarColumn,
    pub raw: VarColumn,
}

impl Batch {
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The routing columns of a row that is not one message: all null.
    #[inline(always)]
    fn no_message(&mut self, w: &Wanted) {
        for (wanted, c) in [
            (w.method, &mut self.method),
            (w.id, &mut self.id),
            (w.session_id, &mut self.session_id),
            (w.update_kind, &mut self.update_kind),
            (w.tool_call_id, &mut self.tool_call_id),
            (w.status, &mut self.status),
        ] {
            if wanted {
                c.push_null();
            }
        }
    }

    /// The columns every row has: `line`, `kind`, `bytes`, `error`, `raw` (those wanted).
    #[inline(always)]
    fn push_common(
        &mut self,
        w: &Wanted,
        line: u64,
        kind: &[u8],
        bytes: Option<u64>,
        error: Option<&[u8]>,
        raw: Option<&[u8]>,
    ) {
        self.rows += 1;
        if w.line {
            self.line.push(line as i64);
        }
        if w.kind {
            self.kind.push(kind);
        }
        if w.bytes {
            self.bytes.push(bytes.unwrap_or(0) as i64);
            self.bytes_validity.push(bytes.is_some());
        }
        if w.error {
            match error {
                Some(e) => self.error.push(e),
                None => self.error.push_null(),
            }
        }
        self.raw_bytes += raw.map_or(0, <[u8]>::len);
        if w.raw {
            match raw {
                Some(r) => self.raw.push(r),
                None => self.raw.push_null(),
            }
        }
    }
}

/// `dumps` of an id: a string re-escaped only when its token has escapes (a token without
/// escapes is already what `dumps` writes), an integer as its canonical digits, `null`.
fn write_id(data: &[u8], span: Span, out: &mut Vec<u8>, scratch: &mut Vec<u8>) {
    let text = &data[span.range()];
    match span.str() {
        Some(s) if s.escaped => {
            scratch.clear();
            unescape_into(data, s, scratch);
            crate::encoder::write_str(out, scratch);
        }
        None if span.is_int => match parse_i64(text) {
            Some(n) => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
            None => out.extend_from_slice(text),
        },
        _ => out.extend_from_slice(text),
    }
}

/// `params.update.status` when it is a string (the last duplicate, as everywhere), as the envelope
/// walk found it (`parse_line_status`).
fn status_of(status: Option<Span>) -> Option<Str> {
    status.and_then(|s| s.str())
}

/// Rows being built: the open batch and the closed ones, of the `wanted` columns.
#[derive(Debug)]
pub struct Rows {
    batch: Batch,
    done: Vec<Batch>,
    scratch: Vec<u8>,
    wanted: Wanted,
}

impl Default for Rows {
    fn default() -> Self {
        Self::new(Wanted::ALL)
    }
}

impl Rows {
    /// No rows yet, of the `wanted` columns.
    pub fn new(wanted: Wanted) -> Self {
        Self {
            batch: Batch::default(),
            done: Vec::new(),
            scratch: Vec::new(),
            wanted,
        }
    }

    /// One row for a line (`data` without its line ending) and what it parsed to.
    #[inline(always)]
    fn push_parsed(&mut self, line: u64, data: &[u8], frame: &Result<Frame, DecodeError>, status: Option<Span>) {
        let (b, w) = (&mut self.batch, &self.wanted);
        let (kind, error): (&[u8], Option<&[u8]>) = match frame {
            Ok(Frame::Single(env)) => {
                if w.method {
                    b.method.push_span(data, env.method);
                }
                if w.id {
                    match env.id {
                        Some(span) => {
                            write_id(data, span, &mut b.id.values, &mut self.scratch);
                            b.id.close(true);
                        }
                        None => b.id.push_null(),
                    }
                }
                if w.session_id {
                    b.session_id.push_span(data, env.session_id);
                }
                if w.update_kind {
                    b.update_kind.push_span(data, env.update_kind);
                }
                if w.tool_call_id {
                    b.tool_call_id.push_span(data, env.tool_call_id);
                }
                if w.status {
                    match status_of(status) {
                        Some(s) => b.status.push_str(data, s),
                        None => b.status.push_null(),
                    }
                }
                (env.kind.as_str().as_bytes(), None)
            }
            Ok(Frame::Batch(_)) => {
                b.no_message(w);
                (b"batch", None)
            }
            Err(e) => {
                b.no_message(w);
                (b"invalid", Some(e.kind.as_bytes()))
            }
        };
        b.push_common(w, line, kind, Some(data.len() as u64), error, Some(data));
        self.cut();
    }

    /// A line of the stream, as the framer cut it (a `\r` it left is stripped, as `decode` does).
    #[inline]
    fn frame(&mut self, line: u64, data: &[u8], utf8: bool) {
        let data = strip_line_ending(data);
        let (frame, status) = self.parse(data, utf8);
        self.push_parsed(line, data, &frame, status);
    }

    /// A line parsed, with `params.update.status` only when the `status` column is built.
    #[inline(always)]
    fn parse(&self, data: &[u8], utf8: bool) -> (Result<Frame, DecodeError>, Option<Span>) {
        if self.wanted.status {
            parse_line_status(data, utf8)
        } else {
            (parse_line_utf8(data, None, utf8), None)
        }
    }

    /// A line as `decode` reads it: its line ending (if any) stripped, then parsed.
    pub fn line(&mut self, line: u64, data: &[u8]) {
        let data = strip_line_ending(data);
        // `parse_frame` refuses a newline, else parses as the framer's lines are.
        let (frame, status) = if memchr::memchr(b'\n', data).is_some() {
            (parse_frame(data), None)
        } else {
            self.parse(data, false)
        };
        self.push_parsed(line, data, &frame, status);
    }

    /// A line longer than the limit: `frame_too_large`, its length when known, no bytes.
    pub fn too_large(&mut self, line: u64, bytes: Option<u64>) {
        self.invalid(line, "frame_too_large", bytes, None);
    }

    /// An invalid row with the error kind `error` (and the line's bytes when kept).
    pub fn invalid(&mut self, line: u64, error: &str, bytes: Option<u64>, raw: Option<&[u8]>) {
        let (b, w) = (&mut self.batch, &self.wanted);
        b.no_message(w);
        b.push_common(w, line, b"invalid", bytes, Some(error.as_bytes()), raw);
        self.cut();
    }

    /// Make room at once for the rows of about `bytes` more bytes of stream, estimated from the
    /// rows of the open batch (at least `SAMPLE_ROWS` of them, else nothing is done): growing
    /// the columns as the rows come copies them again at every doubling, and touches fresh pages
    /// each time.
    fn make_room(&mut self, bytes: usize) {
        let (b, w) = (&mut self.batch, &self.wanted);
        if b.rows < SAMPLE_ROWS {
            return;
        }
        // A row stands for its line and its newline; a slack of one eighth, never more rows than
        // lines of `MIN_ROW_BYTES`, nor more bytes than the batch still takes. Room that cannot
        // be had (a hint far too large) is left to grow as the rows come.
        let bytes = bytes.min(BATCH_BYTES.saturating_sub(b.raw_bytes));
        let per_row = b.raw_bytes / b.rows + 1;
        let est = (bytes / per_row).min(bytes / MIN_ROW_BYTES);
        let est = est + est / 8 + 16;
        let rows = b.rows;
        let var = |c: &mut VarColumn| {
            let values = (est as u128 * c.values.len() as u128 / rows as u128) as usize;
            let _ = c.offsets.try_reserve(est);
            let _ = c.values.try_reserve(values);
            let _ = c.validity.bits.try_reserve(est / 8 + 1);
        };
        for (wanted, c) in [
            (w.kind, &mut b.kind),
            (w.method, &mut b.method),
            (w.id, &mut b.id),
            (w.session_id, &mut b.session_id),
            (w.update_kind, &mut b.update_kind),
            (w.tool_call_id, &mut b.tool_call_id),
            (w.status, &mut b.status),
            (w.error, &mut b.error),
        ] {
            if wanted {
                var(c);
            }
        }
        if w.line {
            let _ = b.line.try_reserve(est);
        }
        if w.bytes {
            let _ = b.bytes.try_reserve(est);
            let _ = b.bytes_validity.bits.try_reserve(est / 8 + 1);
        }
        if w.raw {
            // (`raw`'s values are sized by `feed_here`, for the bytes fed.)
            let _ = b.raw.offsets.try_reserve(est);
            let _ = b.raw.validity.bits.try_reserve(est / 8 + 1);
        }
    }

    /// Close the batch when its `raw` is full (counted when `raw` is not built too, so that the
    /// batches are cut at the same rows whatever the columns).
    #[inline(always)]
    fn cut(&mut self) {
        if self.batch.raw_bytes >= BATCH_BYTES {
            self.done.push(std::mem::take(&mut self.batch));
        }
    }

    /// Batches built elsewhere, after the rows so far: their line numbers moved on by `before`.
    /// Empty ones are left out.
    fn append(&mut self, batches: Vec<Batch>, before: u64) {
        if !self.batch.is_empty() {
            self.done.push(std::mem::take(&mut self.batch));
        }
        for mut b in batches.into_iter().filter(|b| !b.is_empty()) {
            if before != 0 && self.wanted.line {
                for line in &mut b.line {
                    *line += before as i64;
                }
            }
            self.done.push(b);
        }
    }

    /// Every batch so far (the open one included when not empty); the rows start afresh.
    pub fn take(&mut self) -> Vec<Batch> {
        let mut out = std::mem::take(&mut self.done);
        if !self.batch.is_empty() || out.is_empty() {
            out.push(std::mem::take(&mut self.batch));
        }
        out
    }
}

/// The bytes a thread reads from a file at a time (`FrameColumns::feed_file`): a piece is parsed
/// while it is still in the core's L2 cache (the reads of larger pieces are slower to parse).
pub const FILE_PIECE_BYTES: usize = 1 << 20;

/// The ranges a file's bytes are cut into for each thread (`FrameColumns::feed_file`).
const RANGES_PER_THREAD: usize = 4;

/// The bytes read at a time when looking for the newline a file's range is cut after.
const CUT_WINDOW_BYTES: usize = 64 << 10;

/// `buf.len()` bytes of `file` from `offset`: fewer only at its end (interrupted reads retried).
fn read_full_at<F: FileExt>(file: &F, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// `f` of each piece of at most `piece` bytes of `start..stop` of `file`, read in order into one
/// buffer; returns the bytes read, fewer than `stop - start` only when the file ends first.
pub fn read_pieces<F: FileExt>(
    file: &F,
    start: u64,
    stop: u64,
    piece: usize,
    mut f: impl FnMut(&[u8]),
) -> io::Result<u64> {
    let mut buf = vec![0u8; piece.min(stop.saturating_sub(start) as usize)];
    let mut at = start;
    while at < stop {
        let want = buf.len().min((stop - at) as usize);
        let got = read_full_at(file, &mut buf[..want], at)?;
        f(&buf[..got]);
        at += got as u64;
        if got < want {
            break;
        }
    }
    Ok(at - start)
}

/// `start..stop` of `file` cut as `split_ranges` cuts bytes, into at most `parts` ranges, as their
/// bounds: `start`, the cuts (each just after the first newline at or after its target less one),
/// then just after the last newline before `stop` when after the last cut (the bytes from the last
/// bound to `stop` hold no newline). Only the bytes around the cuts are read, `window` at a time.
fn file_ranges<F: FileExt>(file: &F, start: u64, stop: u64, parts: usize, window: usize) -> io::Result<Vec<u64>> {
    let mut bounds = vec![start];
    let mut buf = vec![0u8; window];
    for i in 1..parts {
        let target = start + ((stop - start) as u128 * i as u128 / parts as u128) as u64;
        let last = bounds[bounds.len() - 1];
        if target <= last {
            continue;
        }
        // The first newline at or after `target - 1`.
        let mut at = target - 1;
        let cut = loop {
            let want = window.min((stop - at) as usize);
            let got = read_full_at(file, &mut buf[..want], at)?;
            if let Some(nl) = memchr::memchr(b'\n', &buf[..got]) {
                break at + nl as u64 + 1;
            }
            at += got as u64;
            if got < want || at >= stop {
                break stop;
            }
        };
        if cut >= stop {
            break;
        }
        bounds.push(cut);
    }
    // The last newline in `last..stop`.
    let last = bounds[bounds.len() - 1];
    let mut end = stop;
    while end > last {
        let begin = end.saturating_sub(window as u64).max(last);
        let want = (end - begin) as usize;
        let got = read_full_at(file, &mut buf[..want], begin)?;
        if let Some(nl) = memchr::memrchr(b'\n', &buf[..got]) {
            bounds.push(begin + nl as u64 + 1);
            break;
        }
        end = begin;
    }
    Ok(bounds)
}

/// Rows read before the columns are sized for the rest of a feed (`Rows::make_room`).
const SAMPLE_ROWS: usize = 256;

/// The bytes read first for that sample (a feed of fewer than twice this is read as it comes).
const SAMPLE_BYTES: usize = 256 << 10;

/// The fewest bytes a row is taken to stand for when sizing the columns (a shorter line costs
/// a doubling more).
const MIN_ROW_BYTES: usize = 16;

/// Rows of a stream fed in pieces (the framer's lines, numbered from `first_line + 1`), or of
/// lines given one by one (`line`, `too_large`, `invalid`: a recording's records).
#[derive(Debug)]
pub struct FrameColumns {
    framer: Framer,
    first_line: u64,
    rows: Rows,
    threads: usize,
    wanted: Wanted,
    /// Bytes of stream still expected (`reserve`), beyond those fed.
    expected: usize,
}

impl FrameColumns {
    /// `max_frame_bytes` as checked by `framing::check_max_frame_bytes`, at most `MAX_LINE_BYTES`;
    /// `threads` as checked by `check_threads` (1: all on the calling thread).
    pub fn new(first_line: u64, max_frame_bytes: usize, threads: usize) -> Self {
        Self {
            framer: Framer::new(max_frame_bytes.min(MAX_LINE_BYTES)),
            first_line,
            rows: Rows::default(),
            threads: threads.max(1),
            wanted: Wanted::ALL,
            expected: 0,
        }
    }

    /// Build only the `wanted` columns (before any row: the rows so far are dropped).
    pub fn select(mut self, wanted: Wanted) -> Self {
        self.rows = Rows::new(wanted);
        self.wanted = wanted;
        self
    }

    fn event(rows: &mut Rows, first: u64, event: Event<'_>) {
        match event {
            Event::Frame { line, data, utf8 } => rows.frame(first + line, data, utf8),
            Event::TooLarge { line } => rows.too_large(first + line, None),
        }
    }

    /// About `bytes` more bytes of stream are to come (a file's size): the columns are sized for
    /// their rows at once, from the first rows read, instead of growing as the rows come. Only a
    /// hint: the rows are the same without it.
    pub fn reserve(&mut self, bytes: usize) {
        self.expected = bytes;
    }

    /// Feed bytes of the stream: a row for every line they complete.
    pub fn feed(&mut self, data: &[u8]) {
        let data = if self.threads > 1 { self.feed_ranges(data) } else { data };
        self.feed_here(data);
    }

    /// The complete lines of `data` in ranges on `threads` threads (module docs); returns the
    /// bytes left for the framer (those of a partial line, or all of `data` when it completes no
    /// more than the framer's partial line).
    fn feed_ranges<'a>(&mut self, data: &'a [u8]) -> &'a [u8] {
        let cut = cut_lines(self.framer.at_line_start(), data);
        self.feed_here(cut.head);
        let ranges = split_ranges(cut.lines, self.threads);
        if ranges.len() < 2 {
            self.feed_here(cut.lines);
            return cut.rest;
        }
        let (max, wanted) = (self.framer.max_frame_bytes(), self.wanted);
        let parsed = in_ranges(cut.lines, &ranges, |piece| Self::range(piece, max, wanted));
        let mut before = self.first_line + self.framer.line();
        let mut counted = 0;
        for (batches, count) in parsed {
            self.rows.append(batches, before);
            before += count;
            counted += count;
        }
        self.framer.skip_lines(counted);
        cut.rest
    }

    /// The rows of `data` (complete lines), numbered from 1, and how many lines it held.
    fn range(data: &[u8], max_frame_bytes: usize, wanted: Wanted) -> (Vec<Batch>, u64) {
        let mut cols = Self::new(0, max_frame_bytes, 1).select(wanted);
        cols.reserve(data.len());
        cols.feed_here(data);
        let lines = cols.framer.line();
        (cols.finish(), lines)
    }

    /// Feed the bytes `start..stop` of `file`, as `feed` of those bytes would, read in pieces of
    /// `FILE_PIECE_BYTES` (module docs, "Files"): on several threads, each thread reads and parses
    /// a newline-aligned range of its own. Returns the bytes fed, fewer than `stop - start` only
    /// when the file ends before `stop` (it shrank): the rows are then those of the bytes fed, and
    /// the framer is where they leave it. A failed read is returned as it is.
    pub fn feed_file<F: FileExt + Sync>(&mut self, file: &F, start: u64, stop: u64) -> io::Result<u64> {
        self.feed_file_in(file, start, stop, FILE_PIECE_BYTES)
    }

    /// `feed_file` reading pieces of `piece` bytes (and looking for cuts as many at a time, at
    /// most `CUT_WINDOW_BYTES`), on threads when there are at least two pieces.
    fn feed_file_in<F: FileExt + Sync>(&mut self, file: &F, start: u64, stop: u64, piece: usize) -> io::Result<u64> {
        if stop <= start {
            return Ok(0);
        }
        if self.threads < 2 || stop - start < 2 * piece as u64 {
            return self.feed_file_here(file, start, stop, piece);
        }
        // More ranges than threads, each of at least two pieces, taken in turn by whichever
        // thread is free: a thread slowed by other work on its core holds the others up less.
        let parts = (self.threads * RANGES_PER_THREAD).min(((stop - start) / (2 * piece as u64)) as usize);
        let bounds = file_ranges(file, start, stop, parts, piece.min(CUT_WINDOW_BYTES))?;
        if bounds.len() < 3 {
            return self.feed_file_here(file, start, stop, piece);
        }
        let (max, wanted) = (self.framer.max_frame_bytes(), self.wanted);
        let (first, rest) = (bounds[0]..bounds[1], &bounds[1..]);
        let ranges = rest.len() - 1;
        let next = std::sync::atomic::AtomicUsize::new(0);
        // The ranges after the first, taken in turn until none is left: (index, rows).
        let take = || {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= ranges {
                    return done;
                }
                done.push((i, Self::file_range(file, rest[i], rest[i + 1], max, wanted, piece)));
            }
        };
        // The first range is this one's (its framer may hold a partial line), sized for itself.
        let expected = std::mem::replace(&mut self.expected, (first.end - first.start) as usize);
        let (fed, results) = std::thread::scope(|scope| {
            let take = &take;
            let handles: Vec<_> = (1..self.threads.min(ranges + 1)).map(|_| scope.spawn(take)).collect();
            let fed = self.feed_file_here(file, first.start, first.end, piece);
            let mut results: Vec<_> = take();
            for h in handles {
                results.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            }
            results.sort_unstable_by_key(|(i, _)| *i);
            (fed, results)
        });
        self.expected = expected.saturating_sub((stop - start) as usize);
        let mut fed = fed?;
        if fed < first.end - first.start {
            return Ok(fed);
        }
        let mut before = self.first_line + self.framer.line();
        let mut counted = 0;
        for (r, (_, result)) in rest.windows(2).zip(results) {
            let (batches, lines, got) = result?;
            if got < r[1] - r[0] {
                // The file shrank: the ranges from this one on are dropped, read again by the
                // caller from where the bytes fed end (a line start).
                self.framer.skip_lines(counted);
                return Ok(fed);
            }
            self.rows.append(batches, before);
            before += lines;
            counted += lines;
            fed += got;
        }
        self.framer.skip_lines(counted);
        let tail = bounds[bounds.len() - 1];
        Ok(fed + self.feed_file_here(file, tail, stop, piece)?)
    }

    /// `feed_file` on the calling thread.
    fn feed_file_here<F: FileExt>(&mut self, file: &F, start: u64, stop: u64, piece: usize) -> io::Result<u64> {
        read_pieces(file, start, stop, piece, |data| self.feed_here(data))
    }

    /// The rows of `start..stop` of `file` (complete lines), numbered from 1, how many lines it
    /// held and how many bytes were read.
    fn file_range<F: FileExt>(
        file: &F,
        start: u64,
        stop: u64,
        max: usize,
        wanted: Wanted,
        piece: usize,
    ) -> io::Result<(Vec<Batch>, u64, u64)> {
        let mut cols = Self::new(0, max, 1).select(wanted);
        cols.reserve((stop - start) as usize);
        let got = cols.feed_file_here(file, start, stop, piece)?;
        let lines = cols.framer.line();
        Ok((cols.finish(), lines, got))
    }

    /// `feed` on the calling thread.
    fn feed_here(&mut self, mut data: &[u8]) {
        let ahead = self.expected.max(data.len());
        self.expected = self.expected.saturating_sub(data.len());
        // The lines' bytes are at most those to come: one allocation for `raw` instead of doublings.
        if self.wanted.raw {
            let raw = &mut self.rows.batch.raw.values;
            let _ = raw.try_reserve(ahead.min(BATCH_BYTES.saturating_sub(raw.len())));
        }
        // The other columns are sized from a sample of rows, for the bytes still to come.
        if ahead >= 2 * SAMPLE_BYTES {
            let mut sampled = 0;
            if self.rows.batch.rows < SAMPLE_ROWS && data.len() >= 2 * SAMPLE_BYTES {
                // The sample: the lines up to the first newline after `SAMPLE_BYTES`.
                sampled = memchr::memchr(b'\n', &data[SAMPLE_BYTES..]).map_or(data.len(), |at| SAMPLE_BYTES + at + 1);
                self.frame_lines(&data[..sampled]);
                data = &data[sampled..];
            }
            self.rows.make_room(ahead - sampled);
        }
        self.frame_lines(data);
    }

    /// The framer's lines of `data`, each a row.
    fn frame_lines(&mut self, data: &[u8]) {
        let (rows, first) = (&mut self.rows, self.first_line);
        self.framer.feed(data, |event| Self::event(rows, first, event));
    }

    /// One line given whole (as `decode` takes it), numbered `line`.
    pub fn line(&mut self, line: u64, data: &[u8]) {
        self.rows.line(line, data);
    }

    /// A line over the limit, numbered `line`, of `bytes` bytes when known.
    pub fn too_large(&mut self, line: u64, bytes: Option<u64>) {
        self.rows.too_large(line, bytes);
    }

    /// An invalid row numbered `line` with the error kind `error`.
    pub fn invalid(&mut self, line: u64, error: &str, raw: Option<&[u8]>) {
        let bytes = raw.map(|r| r.len() as u64);
        self.rows.invalid(line, error, bytes, raw);
    }

    /// End of input (a last line without a newline becomes a row); every batch, in order (one,
    /// empty, when there are no rows).
    pub fn finish(&mut self) -> Vec<Batch> {
        let (rows, first) = (&mut self.rows, self.first_line);
        self.framer.finish(|event| Self::event(rows, first, event));
        self.rows.take()
    }
}

#[cfg(test)]
mod tests;
