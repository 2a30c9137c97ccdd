//! The proxy's relay loop in the core (no PyO3): read a side's bytes from a file descriptor,
//! cut them into lines (`framing`, the exact reading), give each line to the engine's per-frame
//! loop (`engine::Engine`: parse, strict check, apply), and gather the lines to forward,
//! byte-exact, in order. The binding
//! (`rust/python/relay.rs`) runs it with the interpreter released; `acp_fast.proxy` uses it when
//! nothing per frame needs Python (no middleware, no `--watch`, no schema check, no bridge, no
//! `--otlp`). Docs: docs/PROXY.md, "Performance".
//!
//! `--record` and `--trace` (`record::Recorder`, given by `record`): the lines forwarded are
//! recorded here as they are forwarded; a line the caller must decide about (not JSON-RPC,
//! refused, over the limit) stops the step, so that the caller records it in its place.
//!
//! A step is `read` (one chunk into a buffer reused from step to step), then `process` (under
//! the store's lock): the lines of the chunk are applied and appended to `out`; what the caller
//! must know comes back as `Notice`s. A line that is not JSON-RPC stops the step just before it
//! (`Notice::Invalid`): what to do with it (divert, pass, drop, answer, fail) is the caller's,
//! and the next `process` goes on after it, from the lines kept meanwhile (`queued`).
//!
//! Mirror: none (the fallback keeps the Python loop of `acp_fast.proxy`, `_relay.py`, whose
//! `tracked_block` this does per line, with the same verdicts: blank lines forwarded, a batch
//! with one valid message a frame, a bad state update (−32602) forwarded and reported, a frame
//! the strict check refuses not forwarded).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd, RawFd};
use std::time::Instant;

use crate::coalesce::Coalescer;

use crate::engine::{Engine, Framed, Item};
use crate::error::{DecodeError, INVALID_PARAMS};
use crate::framing::{Framer, Piece};
use crate::message::strip_line_ending;
use crate::record::Recorder;
use crate::schema::Problem;
use crate::state::{Source, Store};

/// Bytes read from a side at a time (and the pipe buffers the proxy asks for).
pub const CHUNK: usize = 1 << 20;

/// What the relay tells its caller, in stream order.
#[derive(Debug)]
pub enum Notice {
    /// Line `line`, `bytes` long (line ending included), was over the limit: skipped. `head`:
    /// its first bytes (`framing::HEAD_BYTES` at most), to answer it.
    TooLarge { line: u64, bytes: u64, head: Vec<u8> },
    /// A frame the state engine refused (a bad state update, −32602): forwarded all the same.
    /// `data` is the line without its line ending.
    StateError {
        line: u64,
        data: Vec<u8>,
        error: DecodeError,
    },
    /// Line `line` is not JSON-RPC: not forwarded; the step stopped before it. `wire` is the line
    /// as read (line ending included, none for a last line without one).
    Invalid {
        line: u64,
        wire: Vec<u8>,
        error: DecodeError,
    },
    /// Line `line` was refused as a whole by the store's strict check: not applied, not
    /// forwarded; the step stopped before it (as `Invalid`).
    RefusedFrame {
        line: u64,
        wire: Vec<u8>,
        problems: Vec<Problem>,
    },
    /// A batch entry (`raw`) of line `line` was refused by the strict check: not applied; the
    /// frame is forwarded.
    Refused {
        line: u64,
        raw: Vec<u8>,
        problems: Vec<Problem>,
    },
}

/// A line cut but not applied yet (after a step stopped at an invalid line).
enum Queued {
    Line(u64, Vec<u8>),
    TooLarge(u64, u64, Vec<u8>),
}

/// One direction of the relay: the framer, the buffers, and the counts.
pub struct Relay {
    source: Source,
    framer: Framer,
    buf: Vec<u8>,
    /// Bytes of `buf` read and not yet framed.
    fresh: usize,
    eof: bool,
    finished: bool,
    /// Set when a step stopped at an invalid line: later lines of the chunk go to `queued`.
    stopped: bool,
    queued: VecDeque<Queued>,
    /// The part of the chunk being framed known to be valid UTF-8 (addresses; empty: none), so
    /// that its lines are not checked again one by one (the framer's windowed check, as `feed`).
    utf8: (usize, usize),
    /// The lines to forward, gathered by `process` (the caller writes and clears them).
    pub out: Vec<u8>,
    pub bytes_in: u64,
    pub lines: u64,
    /// `--coalesce`: the agent's tool-call updates held and merged on the way to `out`, on the
    /// relay's own clock (seconds since `clock`).
    coalescer: Option<Coalescer>,
    clock: Instant,
    /// `--record` / `--trace`: what the lines forwarded are recorded in.
    recorder: Option<Recorder>,
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

/// JSON errors and invalid JSON-RPC: the line is not a JSON-RPC message.
fn not_json_rpc(e: &DecodeError) -> bool {
    e.code == -32700 || e.code == -32600
}

impl Relay {
    /// A relay for the lines of one side (`source`: who sends them, for the state engine).
    pub fn new(max_frame_bytes: usize, source: Source) -> Self {
        Self {
            source,
            framer: Framer::new(max_frame_bytes),
            buf: vec![0; CHUNK],
            fresh: 0,
            eof: false,
            finished: false,
            stopped: false,
            queued: VecDeque::new(),
            utf8: (0, 0),
            out: Vec::with_capacity(CHUNK + 4096),
            bytes_in: 0,
            lines: 0,
            coalescer: None,
            clock: Instant::now(),
            recorder: None,
        }
    }

    /// Coalesce the lines forwarded (`--coalesce`: the agent's side only).
    pub fn coalesce(&mut self, coalescer: Coalescer) {
        self.coalescer = Some(coalescer);
    }

    /// Record the lines forwarded (`--record`, `--trace`); a line over the limit then stops the
    /// step too (the caller records it, and its answer, in their place).
    pub fn record(&mut self, recorder: Recorder) {
        self.recorder = Some(recorder);
    }

    /// The recorder, when recording.
    pub fn recorder(&mut self) -> Option<&mut Recorder> {
        self.recorder.as_mut()
    }

    fn now(&self) -> f64 {
        self.clock.elapsed().as_secs_f64()
    }

    /// The coalescer's counts: updates held, lines released (zeros without one).
    pub fn coalesced(&self) -> (u64, u64) {
        self.coalescer.as_ref().map_or((0, 0), |c| (c.updates_in, c.frames_out))
    }

    /// Whether the coalescer holds anything.
    pub fn holding(&mut self) -> bool {
        self.coalescer.as_mut().is_some_and(|c| c.held() > 0)
    }

    /// Before a `read`: wait until `fd` has input or the oldest held update is due (then released
    /// to `out`). Whether to read now.
    pub fn wait(&mut self, fd: RawFd) -> io::Result<bool> {
        let now = self.now();
        let Some(due) = self.coalescer.as_mut().and_then(Coalescer::next_due) else {
            return Ok(true);
        };
        if due > now && readable(fd, due - now)? {
            return Ok(true);
        }
        let now = self.now();
        if let Some(c) = self.coalescer.as_mut() {
            c.release_due(now, &mut self.out);
        }
        Ok(false)
    }

    /// Release what the coalescer holds to `out` (at the end of the input, or when stopping).
    pub fn release_all(&mut self) {
        if let Some(c) = self.coalescer.as_mut() {
            c.release_all(&mut self.out);
        }
    }

    /// A line to forward (`data` with its line ending; `tracked`: applied without error), through
    /// the coalescer when there is one.
    fn forward(&mut self, engine: &mut Engine, data: &[u8], tracked: bool) {
        if let Some(r) = self.recorder.as_mut() {
            let frame = engine.take_kept();
            r.forwarded(data, !is_blank(strip_line_ending(data)), frame.as_ref());
        }
        let now = if self.coalescer.is_some() { self.now() } else { 0.0 };
        match self.coalescer.as_mut() {
            None => self.out.extend_from_slice(data),
            Some(c) => {
                let store = engine.store();
                c.protocol = store.fixed_version().or(store.negotiated_version());
                c.push_line(data, now, tracked, &mut self.out);
            }
        }
    }

    /// Whether a `read` is needed before the next `process` (nothing is waiting).
    pub fn wants_input(&self) -> bool {
        self.queued.is_empty() && self.fresh == 0 && !self.eof
    }

    /// Whether everything was read and processed.
    pub fn done(&self) -> bool {
        self.finished && self.queued.is_empty()
    }

    /// Read one chunk from `fd` (retrying on EINTR); end of file is remembered.
    pub fn read(&mut self, fd: RawFd) -> io::Result<()> {
        // SAFETY: the caller owns `fd` and keeps it open during the call; ManuallyDrop never
        // closes it.
        let mut file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
        loop {
            match file.read(&mut self.buf) {
                Ok(n) => {
                    self.fresh = n;
                    self.bytes_in += n as u64;
                    if let Some(r) = self.recorder.as_mut() {
                        r.clock();
                    }
                    self.eof = n == 0;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Apply what was read (and what waits from an earlier step) through `engine`, gathering the
    /// lines to forward in `out` and what the caller must know in `notices`; stops after a
    /// `Notice::Invalid`.
    pub fn process(&mut self, engine: &mut Engine, notices: &mut Vec<Notice>) {
        self.stopped = false;
        while let Some(item) = self.queued.pop_front() {
            match item {
                Queued::Line(line, data) => self.line(engine, line, &data, notices),
                Queued::TooLarge(line, bytes, head) => {
                    self.lines += 1;
                    self.stopped = self.recorder.is_some();
                    notices.push(Notice::TooLarge { line, bytes, head });
                }
            }
            if self.stopped {
                return;
            }
        }
        let mut framer = std::mem::replace(&mut self.framer, Framer::new(1));
        let buf = std::mem::take(&mut self.buf);
        let (fresh, finish) = (self.fresh, self.eof && !self.finished);
        if fresh > 0 {
            self.utf8 = valid_lines(&buf[..fresh]);
        }
        let mut on_piece = |piece: Piece<'_>| {
            if self.stopped {
                self.queued.push_back(match piece {
                    Piece::Line { line, data } => Queued::Line(line, data.to_vec()),
                    Piece::TooLarge { line, bytes, head } => Queued::TooLarge(line, bytes, head.to_vec()),
                });
                return;
            }
            match piece {
                Piece::Line { line, data } => self.line(engine, line, data, notices),
                Piece::TooLarge { line, bytes, head } => {
                    self.lines += 1;
                    self.stopped = self.recorder.is_some();
                    notices.push(Notice::TooLarge {
                        line,
                        bytes,
                        head: head.to_vec(),
                    });
                }
            }
        };
        if fresh > 0 {
            framer.feed_exact(&buf[..fresh], &mut on_piece);
            self.utf8 = (0, 0);
        } else if finish {
            framer.finish_exact(&mut on_piece);
        }
        self.buf = buf;
        self.framer = framer;
        if fresh > 0 {
            self.fresh = 0;
        } else if finish {
            self.finished = true;
        }
    }

    /// One line as read (`data` with its line ending): applied and forwarded, or a notice. The
    /// frame goes through the engine's per-frame loop; what it was decides what the relay does.
    fn line(&mut self, engine: &mut Engine, line: u64, data: &[u8], notices: &mut Vec<Notice>) {
        let content = strip_line_ending(data);
        if is_blank(content) {
            self.lines += 1;
            self.forward(engine, data, true);
            return;
        }
        let at = content.as_ptr() as usize;
        let utf8 = self.utf8.0 <= at && at + content.len() <= self.utf8.1;
        // The first error of the frame (a batch's first bad entry), and the notices of the others.
        let mut first: Option<DecodeError> = None;
        let mut reported: Vec<Notice> = Vec::new();
        let mut on_item = |_: &Store, item: Item<'_>| -> Result<(), std::convert::Infallible> {
            match item {
                Item::Applied { .. } | Item::TooLarge { .. } => {}
                Item::Error { error, .. } => {
                    if first.is_none() {
                        first = Some(error.clone());
                    }
                    if error.code == INVALID_PARAMS {
                        reported.push(Notice::StateError {
                            line,
                            data: content.to_vec(),
                            error,
                        });
                    }
                }
                Item::Refused { raw, problems } => reported.push(Notice::Refused {
                    line,
                    raw: raw.to_vec(),
                    problems,
                }),
            }
            Ok(())
        };
        let tracing = self.recorder.as_ref().is_some_and(Recorder::tracing);
        if tracing {
            engine.keep_frames(true);
        }
        let Ok(framed) = engine.line_frame(content, utf8, self.source, &mut on_item);
        if tracing {
            engine.keep_frames(false); // the frame parsed stays for `forward`
        }
        let not_json_rpc = match framed {
            Framed::Unparsed => first.as_ref().is_some_and(not_json_rpc),
            Framed::Batch { messages: 0 } => true,
            _ => false,
        };
        if not_json_rpc {
            if let Some(error) = first {
                return self.invalid(line, data, error, notices);
            }
        }
        if framed == Framed::Refused {
            if let Some(Notice::Refused { problems, .. }) = reported.pop() {
                self.lines += 1;
                self.stopped = true;
                notices.push(Notice::RefusedFrame {
                    line,
                    wire: data.to_vec(),
                    problems,
                });
                return;
            }
        }
        if let (Framed::Unparsed, Some(error)) = (framed, first) {
            // A frame the parser refused with another code: reported, forwarded.
            reported.push(Notice::StateError {
                line,
                data: content.to_vec(),
                error,
            });
        }
        let tracked = reported.is_empty();
        notices.append(&mut reported);
        self.lines += 1;
        self.forward(engine, data, tracked);
    }

    fn invalid(&mut self, line: u64, data: &[u8], error: DecodeError, notices: &mut Vec<Notice>) {
        self.lines += 1;
        self.stopped = true;
        notices.push(Notice::Invalid {
            line,
            wire: data.to_vec(),
            error,
        });
    }
}

/// Wait until `fd` is readable (or hung up) or `timeout` seconds pass: whether it is.
fn readable(fd: RawFd, timeout: f64) -> io::Result<bool> {
    let ms = (timeout * 1000.0).ceil().clamp(0.0, f64::from(i32::MAX)) as i32;
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd for the call's duration.
        let n = unsafe { libc::poll(&raw mut p, 1, ms) };
        if n >= 0 {
            return Ok(n > 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The addresses of the whole lines of `chunk` that lie in it from their first byte (after its
/// first newline, up to its last), when they are valid UTF-8 (a newline never splits a UTF-8
/// sequence); `(0, 0)` when they are not, or there are none.
fn valid_lines(chunk: &[u8]) -> (usize, usize) {
    let (Some(first), Some(last)) = (memchr::memchr(b'\n', chunk), memchr::memrchr(b'\n', chunk)) else {
        return (0, 0);
    };
    let lines = &chunk[first + 1..=last];
    if first == last || crate::scanner::check_utf8(lines).is_err() {
        return (0, 0);
    }
    let start = lines.as_ptr() as usize;
    (start, start + lines.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(relay: &mut Relay, store: &mut Engine, input: &[u8]) -> (Vec<u8>, Vec<Notice>) {
        let mut all = Vec::new();
        relay.buf[..input.len()].copy_from_slice(input);
        relay.fresh = input.len();
        let mut out = Vec::new();
        loop {
            let mut notices = Vec::new();
            relay.process(store, &mut notices);
            out.append(&mut relay.out);
            let stop = notices.is_empty() && relay.queued.is_empty();
            all.extend(notices);
            if stop {
                if relay.eof {
                    break;
                }
                relay.eof = true;
            }
        }
        (out, all)
    }

    #[test]
    fn recording_records_the_lines_forwarded_and_stops_at_a_line_over_the_limit() {
        let mut store = Engine::new(Store::new(None, None), 1000, None);
        let mut relay = Relay::new(1000, Source::Agent);
        relay.record(Recorder::new("agent", true, Some(1.5)));
        relay.recorder().unwrap().clock_at(2.0);
        let first = b"{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\r\n\n";
        let mut input = first.to_vec();
        input.extend_from_slice(&[b'x'; 1200]);
        input.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}");
        relay.buf[..input.len()].copy_from_slice(&input);
        relay.fresh = input.len();
        let mut notices = Vec::new();
        relay.process(&mut store, &mut notices);
        // The line over the limit ends the step: its record is the caller's, in its place.
        assert!(matches!(
            notices.as_slice(),
            [Notice::TooLarge {
                line: 3,
                bytes: 1201,
                ..
            }]
        ));
        assert_eq!(relay.out, first);
        relay.out.clear();
        let (out, rest) = run(&mut relay, &mut store, b"");
        assert_eq!(out, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}");
        assert!(rest.is_empty());
        let (record, trace, skipped) = relay.recorder().unwrap().drain(|r, t, s| {
            (
                String::from_utf8(r.to_vec()).unwrap(),
                String::from_utf8(t.to_vec()).unwrap(),
                s,
            )
        });
        assert_eq!(
            record,
            concat!(
                "{\"t\":2.000000,\"from\":\"agent\",\"frame\":{\"jsonrpc\":\"2.0\",\"method\":\"m\"},\"crlf\":true}\n",
                "{\"t\":2.000000,\"from\":\"agent\",\"text\":\"\"}\n",
                "{\"t\":2.000000,\"from\":\"agent\",\"frame\":{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null},\"eol\":false}\n",
            )
        );
        assert_eq!(
            trace,
            concat!(
                "{\"type\":\"notification\",\"ts\":0.500000,\"protocol\":\"acp\",\"from\":\"Agent\",\"to\":\"Client\",\"method\":\"m\",\"params\":null}\n",
                "{\"type\":\"response\",\"ts\":0.500000,\"from\":\"Agent\",\"to\":\"Client\",\"id\":1,\"is_error\":false,\"payload\":null}\n",
            )
        );
        assert_eq!(skipped, 1); // the blank line
    }

    #[test]
    fn lines_are_forwarded_and_tracked_invalid_ones_stop_a_step() {
        let mut store = Engine::new(Store::new(None, None), 1000, None);
        let mut relay = Relay::new(1000, Source::Agent);
        let call = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","title":"t"}}}"#;
        let bad_update = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call"}}}"#;
        let mut input = Vec::new();
        input.extend_from_slice(call);
        input.extend_from_slice(b"\r\n  \nnot json\n");
        input.extend_from_slice(bad_update);
        input.extend_from_slice(b"\n[1,2]\n[{\"jsonrpc\":\"2.0\",\"method\":\"m\"},1]\n");
        input.extend_from_slice(&[b'x'; 1200]);
        input.extend_from_slice(b"\nlast");
        let (out, notices) = run(&mut relay, &mut store, &input);
        let mut expected = Vec::new();
        expected.extend_from_slice(call);
        expected.extend_from_slice(b"\r\n  \n");
        expected.extend_from_slice(bad_update);
        expected.extend_from_slice(b"\n[{\"jsonrpc\":\"2.0\",\"method\":\"m\"},1]\n");
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&expected));
        let kinds: Vec<(u64, &str)> = notices
            .iter()
            .map(|n| match n {
                Notice::TooLarge { line, .. } => (*line, "too_large"),
                Notice::StateError { line, .. } => (*line, "state"),
                Notice::Invalid { line, .. } => (*line, "invalid"),
                Notice::RefusedFrame { line, .. } | Notice::Refused { line, .. } => (*line, "refused"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                (3, "invalid"),
                (4, "state"),
                (5, "invalid"),
                (7, "too_large"),
                (8, "invalid")
            ]
        );
        match &notices[0] {
            Notice::Invalid { wire, error, .. } => {
                assert_eq!(wire, b"not json\n");
                assert_eq!(error.code, -32700);
            }
            other => panic!("{other:?}"),
        }
        // A batch with no valid message: its first entry's error, at its position in the line.
        match &notices[2] {
            Notice::Invalid { wire, error, .. } => {
                assert_eq!(wire, b"[1,2]\n");
                assert_eq!((error.code, error.position), (-32600, Some(1)));
            }
            other => panic!("{other:?}"),
        }
        match &notices[4] {
            Notice::Invalid { wire, .. } => assert_eq!(wire, b"last"),
            other => panic!("{other:?}"),
        }
        assert_eq!(relay.lines, 8);
        assert!(store
            .store()
            .session(b"s")
            .unwrap()
            .tool_calls
            .get(b"c".as_slice())
            .is_some());
    }
}
