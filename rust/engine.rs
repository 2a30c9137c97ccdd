//! The state engine's whole per-frame loop, once: bytes in (through the framer), an ordered
//! stream of outcomes out. Each frame is parsed (`message`), checked by the strict schema check
//! when there is one (`schema::Strict`), and applied to the store (`state::Store`); a batch's
//! entries are checked and applied one by one, each outcome in entry order, their errors at frame
//! positions. `ToolCallStore` (`rust/python/state.rs`) and the proxy's relay (`relay.rs`) are
//! callers of this module; neither repeats any of it.
//!
//! Outcomes (`Item`): a message applied and what it changed; a decode or state error (a frame the
//! parser refused, an invalid batch entry, a bad state update: −32602); a frame or entry the
//! strict check refused (its problems); a line over the limit. The caller turns them into what
//! it returns (Python objects, relay notices); `Framed` says what the frame was as a whole.
//!
//! Mirror: `_fallback/engine.py`.

use crate::error::DecodeError;
use crate::framing::{too_large, Event, Framer};
use crate::message::{parse_frame, parse_line_utf8, Captured, Envelope, Frame};
use crate::schema::{Problem, Strict, Verdict};
use crate::state::{Change, Source, Store};

/// One outcome of a frame, in stream order. `data` / `raw`: the bytes of the message it is about
/// (a batch entry's, or the frame's).
#[derive(Debug)]
pub enum Item<'a> {
    /// A message applied, and the change it made (None: nothing tracked changed).
    Applied { data: &'a [u8], change: Option<Change> },
    /// A frame or batch entry that is not a valid message, or whose state update is bad
    /// (−32602): its error, positions in the frame.
    Error { raw: &'a [u8], error: DecodeError },
    /// A frame or batch entry the strict check refused: its problems (severity `error`, not
    /// empty). Not applied.
    Refused { raw: &'a [u8], problems: Vec<Problem> },
    /// A line longer than the limit (stream only): its error; the line is skipped.
    TooLarge { error: DecodeError },
}

/// What a frame was as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framed {
    /// One message (applied, or reported as an `Item::Error` / `Item::Refused`).
    Message,
    /// A batch, `messages` of whose entries were valid messages (each entry has its item).
    Batch { messages: usize },
    /// Refused as a whole by the strict check (one `Item::Refused`).
    Refused,
    /// Not parsed: the frame's error is its one `Item::Error`.
    Unparsed,
}

/// The store, the framer that cuts its stream, the strict check and scratch space.
pub struct Engine {
    store: Store,
    framer: Framer,
    strict: Option<Strict>,
    cap: Captured,
    /// `keep_frames`: the last frame parsed is kept here for the caller (the relay's `--trace`).
    keep: bool,
    kept: Option<Frame>,
}

impl Engine {
    pub fn new(store: Store, max_frame_bytes: usize, strict: Option<Strict>) -> Self {
        Self {
            store,
            framer: Framer::new(max_frame_bytes),
            strict,
            cap: Captured::new(),
            keep: false,
            kept: None,
        }
    }

    /// Keep each frame parsed from now on (`on`) or not, for `take_kept`, so that a caller that
    /// needs it again (the relay's `--trace`) does not parse it twice. Turning it on forgets the
    /// frame kept; turning it off leaves it.
    pub fn keep_frames(&mut self, on: bool) {
        self.keep = on;
        if on {
            self.kept = None;
        }
    }

    /// The last frame parsed, when `keep_frames` is on and it parsed.
    pub fn take_kept(&mut self) -> Option<Frame> {
        self.kept.take()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn strict(&self) -> Option<&Strict> {
        self.strict.as_ref()
    }

    /// Lines the stream's framer has seen.
    pub fn line(&self) -> u64 {
        self.framer.line()
    }

    pub fn max_frame_bytes(&self) -> usize {
        self.framer.max_frame_bytes()
    }

    /// Feed stream bytes: every line they complete is applied, its outcomes given to `out` with
    /// the line number, in order. Stops at the first error `out` returns.
    pub fn feed<E>(
        &mut self,
        data: &[u8],
        source: Source,
        out: &mut impl FnMut(&Store, u64, Item<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.framed(Some(data), source, out)
    }

    /// End of input: a last line that has no newline.
    pub fn finish<E>(
        &mut self,
        source: Source,
        out: &mut impl FnMut(&Store, u64, Item<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.framed(None, source, out)
    }

    fn framed<E>(
        &mut self,
        data: Option<&[u8]>,
        source: Source,
        out: &mut impl FnMut(&Store, u64, Item<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut failure: Option<E> = None;
        let mut framer = std::mem::replace(&mut self.framer, Framer::new(1));
        let max = framer.max_frame_bytes();
        {
            let mut on_event = |event: Event<'_>| {
                if failure.is_some() {
                    return;
                }
                let r = match event {
                    Event::Frame { line, data, utf8 } => self
                        .line_frame(data, utf8, source, &mut |store, item| out(store, line, item))
                        .map(|_| ()),
                    Event::TooLarge { line } => out(&self.store, line, Item::TooLarge { error: too_large(max) }),
                };
                if let Err(e) = r {
                    failure = Some(e);
                }
            };
            match data {
                Some(d) => framer.feed(d, &mut on_event),
                None => framer.finish(&mut on_event),
            }
        }
        self.framer = framer;
        failure.map_or(Ok(()), Err)
    }

    /// One line of a stream (`data` without its line ending, `utf8`: known valid UTF-8).
    pub fn line_frame<E>(
        &mut self,
        data: &[u8],
        utf8: bool,
        source: Source,
        out: &mut impl FnMut(&Store, Item<'_>) -> Result<(), E>,
    ) -> Result<Framed, E> {
        let parsed = parse_line_utf8(data, Some(&mut self.cap), utf8);
        self.apply_parsed(data, parsed, true, source, out)
    }

    /// One frame on its own (not a stream's line: no line number; `data` without its line
    /// ending).
    pub fn frame<E>(
        &mut self,
        data: &[u8],
        source: Source,
        out: &mut impl FnMut(&Store, Item<'_>) -> Result<(), E>,
    ) -> Result<Framed, E> {
        let parsed = parse_frame(data);
        self.apply_parsed(data, parsed, false, source, out)
    }

    /// One message already parsed (`env`, the envelope of `data`): checked and applied.
    pub fn message<E>(
        &mut self,
        data: &[u8],
        env: &Envelope,
        source: Source,
        out: &mut impl FnMut(&Store, Item<'_>) -> Result<(), E>,
    ) -> Result<Framed, E> {
        self.apply_parsed(data, Ok(Frame::Single(*env)), false, source, out)
    }

    /// Check and apply a parsed frame. `captured`: `self.cap` holds the update's members.
    fn apply_parsed<E>(
        &mut self,
        data: &[u8],
        parsed: Result<Frame, DecodeError>,
        captured: bool,
        source: Source,
        out: &mut impl FnMut(&Store, Item<'_>) -> Result<(), E>,
    ) -> Result<Framed, E> {
        let frame = match parsed {
            Ok(frame) => frame,
            Err(error) => {
                out(&self.store, Item::Error { raw: data, error })?;
                return Ok(Framed::Unparsed);
            }
        };
        if self.keep {
            self.kept = Some(frame.clone());
        }
        if matches!(frame, Frame::Batch(_)) && self.store.version() >= 2 {
            out(
                &self.store,
                Item::Error {
                    raw: data,
                    error: no_batches(data),
                },
            )?;
            return Ok(Framed::Unparsed);
        }
        let mut refused: Vec<Vec<Problem>> = Vec::new();
        if let Some(strict) = &mut self.strict {
            let ranges: Option<Vec<(usize, usize)>> = match &frame {
                Frame::Single(_) => None,
                Frame::Batch(entries) => Some(entries.iter().map(|e| (e.start, e.end)).collect()),
            };
            match strict.check(data, ranges.as_deref(), source.name()) {
                Verdict::Valid => {}
                Verdict::Frame(problems) => {
                    out(&self.store, Item::Refused { raw: data, problems })?;
                    return Ok(Framed::Refused);
                }
                Verdict::Entries(by_entry) => refused = by_entry,
            }
        }
        match frame {
            Frame::Single(env) => {
                let cap = captured.then_some(&self.cap);
                let item = match self.store.apply_captured(data, &env, cap, source) {
                    Ok(change) => Item::Applied { data, change },
                    Err(error) => Item::Error { raw: data, error },
                };
                out(&self.store, item)?;
                Ok(Framed::Message)
            }
            Frame::Batch(entries) => {
                let mut refused = refused.into_iter();
                let mut messages = 0;
                for entry in entries {
                    let bytes = &data[entry.start..entry.end];
                    let problems = refused.next().unwrap_or_default();
                    let item = match entry.result {
                        // The entry's own decode error comes first; then the strict verdict.
                        Err(error) => Item::Error { raw: bytes, error },
                        Ok(_) if !problems.is_empty() => {
                            messages += 1;
                            Item::Refused { raw: bytes, problems }
                        }
                        Ok(env) => {
                            messages += 1;
                            match self.store.apply(bytes, &env, source) {
                                Ok(change) => Item::Applied { data: bytes, change },
                                Err(error) => Item::Error {
                                    raw: bytes,
                                    error: error.shifted(entry.start),
                                },
                            }
                        }
                    };
                    out(&self.store, item)?;
                }
                Ok(Framed::Batch { messages })
            }
        }
    }
}

/// A batch under protocol v2, which has none: one error for the frame (−32600, at its `[`), as
/// the official SDKs answer it; nothing of it is checked or applied.
#[cold]
fn no_batches(data: &[u8]) -> DecodeError {
    let at = data.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
    DecodeError::invalid(
        "batch_in_v2",
        "expected one message, found a batch (protocol v2 has no batches)".to_owned(),
        at.unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(engine: &mut Engine, input: &[u8]) -> Vec<(u64, String)> {
        let mut seen = Vec::new();
        let mut out = |_: &Store, line: u64, item: Item<'_>| -> Result<(), ()> {
            seen.push((
                line,
                match item {
                    Item::Applied { change, .. } => format!("applied {:?}", change.map(|c| (c.target, c.action))),
                    Item::Error { error, raw } => {
                        format!(
                            "error {} {} at {:?} in {}",
                            error.code,
                            error.kind,
                            error.position,
                            raw.len()
                        )
                    }
                    Item::Refused { problems, .. } => format!("refused {}", problems.len()),
                    Item::TooLarge { error } => format!("too large {}", error.kind),
                },
            ));
            Ok(())
        };
        engine.feed(input, Source::Agent, &mut out).unwrap();
        engine.finish(Source::Agent, &mut out).unwrap();
        seen
    }

    #[test]
    fn a_stream_gives_one_outcome_per_message_in_order() {
        let mut engine = Engine::new(Store::new(Some(1), None), 200, None);
        let call = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","title":"t"}}}"#;
        let bad = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call"}}}"#;
        let batch = format!(r#"[{{"jsonrpc":"2.0","method":"m"}}, 1, {bad}]"#);
        let input = format!("{call}\nnot json\n\n{batch}\n{}\n{call}", "x".repeat(300));
        let seen = items(&mut engine, input.as_bytes());
        let shown: Vec<(u64, &str)> = seen.iter().map(|(l, s)| (*l, s.as_str())).collect();
        let bad_at = batch.find(r#"{"jsonrpc":"2.0","method":"session/update""#).unwrap();
        let update_at = bad_at + bad.find(r#"{"sessionUpdate""#).unwrap();
        let expected_bad = format!(
            "error -32602 invalid_tool_call_id at Some({update_at}) in {}",
            bad.len()
        );
        assert_eq!(
            shown,
            [
                (1, "applied Some((ToolCall, Created))"),
                (2, "error -32700 unexpected_character at Some(1) in 8"),
                (4, "applied None"),
                // the entry's error at its position in the frame
                (4, "error -32600 not_an_object at Some(33) in 1"),
                (4, expected_bad.as_str()),
                (5, "too large frame_too_large"),
                (6, "applied Some((ToolCall, Replaced))"),
            ]
        );
    }

    #[test]
    fn a_batch_under_v2_is_one_invalid_request() {
        let call = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","title":"t"}}}"#;
        let input = format!(" [{call}]\n");
        let mut v2 = Engine::new(Store::new(Some(2), None), 1000, None);
        let shown = items(&mut v2, input.as_bytes());
        let len = input.len() - 1;
        assert_eq!(shown, [(1, format!("error -32600 batch_in_v2 at Some(1) in {len}"))]);
        assert!(v2.store().sessions().is_empty());
        let mut v1 = Engine::new(Store::new(Some(1), None), 1000, None);
        assert_eq!(
            items(&mut v1, input.as_bytes()),
            [(1, "applied Some((ToolCall, Created))".to_owned())]
        );
    }
}
