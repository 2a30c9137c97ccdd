//! Strict checking of a stream of frames: the `strict_schema` option of `FrameDecoder` and
//! `ToolCallStore` (and so of `acp-fast proxy --strict-schema` and `acp_sdk.install(strict=True)`).
//! Every frame goes through one `Conversation` (`rules.rs`); a frame with problems of severity
//! `error` is refused, as a whole or, for a batch, entry by entry.
//!
//! The schema a frame is checked against is the one of the protocol version in force when it was
//! sent: the fixed version, else the version the `initialize` answer negotiated, else the one its
//! sender asked for in an `initialize` not answered yet (`session/new` may follow it at once),
//! else 1. The
//! answer itself is checked against the version of its request (the conversation learns the new
//! version while checking it, after the schema was chosen).
//!
//! Mirror: `_fallback/schema/stream.py`.

use super::{Conversation, Problem, Schema, Severity, Tape, MAX_PROBLEMS, PROBLEM_LIMIT};
use crate::encoder::PathItem;
use crate::message::{parse_frame, Frame, Kind};

/// The sender of the frames a decoder reads once it was told what was sent the other way
/// (`FrameDecoder.sent`), and of what it was told.
pub const RECEIVED: &str = "received";
pub const SENT: &str = "sent";

/// The stream check: the schemas of both versions, the conversation, the version setting.
pub struct Strict {
    /// The fixed protocol version, or None to follow the `initialize` answer (1 until then).
    fixed: Option<u8>,
    /// The compiled schemas of protocol v1 and v2.
    schemas: [&'static Schema; 2],
    conversation: Conversation,
    /// `sent` was called: the frames checked are the sender `RECEIVED` (else they name no sender
    /// unless the caller does).
    directed: bool,
    tape: Tape,
}

/// What `Strict::check` found in one frame.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No problem of severity `error`.
    Valid,
    /// The frame as a whole fails: its problems (not empty).
    Frame(Vec<Problem>),
    /// A batch judged entry by entry: the problems of each entry (empty: valid).
    Entries(Vec<Vec<Problem>>),
}

impl Strict {
    /// `fixed`: 1 or 2, or None to follow the negotiation; `schemas`: protocol v1's and v2's.
    pub fn new(fixed: Option<u8>, schemas: [&'static Schema; 2]) -> Self {
        Self {
            fixed,
            schemas,
            conversation: Conversation::new(),
            directed: false,
            tape: Tape::default(),
        }
    }

    /// The fixed version (None: follows the negotiation).
    pub fn fixed(&self) -> Option<u8> {
        self.fixed
    }

    /// The protocol version in force: the fixed one, else the negotiated one, else 1.
    pub fn version(&self) -> u8 {
        self.fixed.or(self.conversation.negotiated).unwrap_or(1)
    }

    /// The version the frame `data` of `sender` is checked by: the fixed one, else the
    /// negotiated one, else for a request or notification the one `sender` asked for in an
    /// `initialize` not answered yet, else 1 (so the answer is checked by the version in force).
    fn version_for(&self, data: &[u8], sender: Option<&str>) -> u8 {
        if let Some(version) = self.fixed.or(self.conversation.negotiated) {
            return version;
        }
        if self.conversation.asked.is_none() {
            return 1;
        }
        let call =
            matches!(parse_frame(data), Ok(Frame::Single(e)) if matches!(e.kind, Kind::Request | Kind::Notification));
        if call {
            self.conversation.version_of(sender).unwrap_or(1)
        } else {
            1
        }
    }

    /// The sender of the frames checked when the caller names none.
    pub fn default_sender(&self) -> Option<&'static str> {
        self.directed.then_some(RECEIVED)
    }

    /// A frame sent the other way (`FrameDecoder.sent`), into the conversation (a request is then
    /// pending, a response answers one received); its problems are not reported.
    pub fn sent(&mut self, data: &[u8]) {
        self.directed = true;
        let schema = self.schemas[usize::from(self.version_for(data, Some(SENT)) - 1)];
        // Not JSON: nothing to learn from it.
        let _ = self.conversation.check(schema, data, Some(SENT), &mut self.tape);
    }

    /// Check the frame `data` (no line ending), sent by `sender` (None: `default_sender`).
    /// `entries`: the byte ranges of a batch's entries, to judge each on its own (problems at the
    /// frame itself, such as a batch in protocol v1, still fail the whole frame); None: the
    /// frame as one. A frame the scanner refuses is `Valid` here: its decode error is the
    /// caller's to report.
    pub fn check(&mut self, data: &[u8], entries: Option<&[(usize, usize)]>, sender: Option<&str>) -> Verdict {
        let sender = sender.or(self.default_sender());
        let schema = self.schemas[usize::from(self.version_for(data, sender) - 1)];
        let Ok(found) = self
            .conversation
            .check_at_most(schema, data, sender, &mut self.tape, MAX_PROBLEMS)
        else {
            return Verdict::Valid;
        };
        let errors: Vec<Problem> = found.into_iter().filter(|p| p.severity == Severity::Error).collect();
        if errors.is_empty() {
            return Verdict::Valid;
        }
        let Some(entries) = entries else {
            return Verdict::Frame(errors);
        };
        let entry_of = |p: &Problem| match p.path.first() {
            Some(PathItem::Index(i)) if *i < entries.len() => Some(*i),
            _ => None,
        };
        if errors.iter().any(|p| entry_of(p).is_none()) {
            return Verdict::Frame(errors);
        }
        let mut by_entry: Vec<Vec<Problem>> = entries.iter().map(|_| Vec::new()).collect();
        for p in errors {
            if let Some(i) = entry_of(&p) {
                by_entry[i].push(p);
            }
        }
        Verdict::Entries(by_entry)
    }

    /// (pending request ids, tool call ids remembered, pending requests forgotten).
    pub fn sizes(&self) -> (usize, usize, u64) {
        self.conversation.sizes()
    }
}

/// The message of the error that refuses a frame for `errors` (not empty): the first problem's,
/// and how many more there are: `(and N more)`, or when the check of a message stopped at
/// [`MAX_PROBLEMS`] (a `problem-limit` marker), `(and at least N more)`: N is the number of
/// problems listed after the first, each marker standing for the one or more it did not list.
pub fn message(errors: &[Problem]) -> String {
    let first = errors.first().map(|p| p.message.clone()).unwrap_or_default();
    let stopped = errors.iter().any(|p| p.rule == PROBLEM_LIMIT);
    match errors.len().saturating_sub(1) {
        0 => first,
        more if stopped => format!("{first} (and at least {more} more)"),
        more => format!("{first} (and {more} more)"),
    }
}
