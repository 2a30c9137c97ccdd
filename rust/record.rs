//! The lines of `acp-fast proxy --record FILE` and `--trace FILE.jsons` built in the core, for
//! the native relay (`relay.rs`), which writes them with no Python per frame. No PyO3.
//!
//! A record line is `{"t":T,"from":SIDE,<payload>,<flags>}` (docs/CLI.md, "Recording format"):
//! the payload is the line itself when it is JSON (`"frame"`), else its text as a JSON string
//! (`"text"`, escaped as `acp_fast.dumps` and orjson escape) or, when it is not UTF-8, its
//! base64 (`"base64"`); the flags (`crlf`, `eol`, `action`, `reason`) only when not the default.
//! A trace event is the conductor's (docs/CLI.md, "Traces"): one `request`, `response` or
//! `notification` per message of a frame, with the frame's own JSON text of the id, method,
//! params and payload, and its `sessionId` re-encoded.
//!
//! Mirror: the Python writers, byte for byte: `line` and `too_large` are
//! `acp_fast.recording.RecordWriter.line` / `.too_large`; `events`, `event` and `route` are
//! `acp_fast.trace.events` / `_event` / `route` (the fallback keeps the proxy's Python loop,
//! which records through those). `Recorder` is what one direction of the relay records.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::encoder::write_str;
use crate::message::{parse_frame, Envelope, Frame, Kind, Span};
use crate::scanner::string_text;

/// The conductor's names of the ends and of acp-fast between them (`acp_fast.trace`).
pub const CLIENT: &str = "Client";
pub const AGENT: &str = "Agent";
pub const PROXY: &str = "Proxy(0)";

/// One line seen by the proxy, as `RecordWriter.line` takes it: `data` without its line ending.
pub struct Seen<'a> {
    pub side: &'a str,
    pub data: &'a [u8],
    /// The line is one JSON document: embedded verbatim.
    pub is_json: bool,
    pub crlf: bool,
    pub eol: bool,
    pub action: Option<&'a str>,
    pub reason: Option<&'a str>,
    /// Only the line's length is recorded.
    pub withheld: bool,
}

/// `t` as the writers give it (`"%.6f"`).
pub fn stamp(out: &mut Vec<u8>, t: f64) {
    let _ = write!(out, "{t:.6}");
}

/// The record line of `seen` at time `stamp` (written by `stamp`).
pub fn line(out: &mut Vec<u8>, seen: &Seen<'_>, stamp: &[u8]) {
    out.extend_from_slice(b"{\"t\":");
    out.extend_from_slice(stamp);
    out.extend_from_slice(b",\"from\":\"");
    out.extend_from_slice(seen.side.as_bytes());
    out.extend_from_slice(b"\",");
    if seen.withheld {
        let _ = write!(out, "\"withheld\":{}", seen.data.len());
    } else if seen.is_json {
        out.extend_from_slice(b"\"frame\":");
        out.extend_from_slice(seen.data);
    } else if std::str::from_utf8(seen.data).is_ok() {
        out.extend_from_slice(b"\"text\":");
        write_str(out, seen.data);
    } else {
        out.extend_from_slice(b"\"base64\":\"");
        base64(out, seen.data);
        out.push(b'"');
    }
    if seen.crlf {
        out.extend_from_slice(b",\"crlf\":true");
    }
    if !seen.eol {
        out.extend_from_slice(b",\"eol\":false");
    }
    if let Some(action) = seen.action {
        out.extend_from_slice(b",\"action\":\"");
        out.extend_from_slice(action.as_bytes());
        out.push(b'"');
    }
    if let Some(reason) = seen.reason {
        out.extend_from_slice(b",\"reason\":");
        write_str(out, reason.as_bytes());
    }
    out.extend_from_slice(b"}\n");
}

/// The record of a line of `side` over the frame limit (`length` bytes): no payload.
pub fn too_large(out: &mut Vec<u8>, side: &str, length: u64, stamp: &[u8]) {
    out.extend_from_slice(b"{\"t\":");
    out.extend_from_slice(stamp);
    let _ = write!(out, ",\"from\":\"{side}\",\"too_large\":{length}}}");
    out.push(b'\n');
}

/// Standard base64 (RFC 4648, with padding), as Python's `base64.b64encode`.
fn base64(out: &mut Vec<u8>, data: &[u8]) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(ALPHABET[(n >> 18) as usize & 63]);
        out.push(ALPHABET[(n >> 12) as usize & 63]);
        out.push(if chunk.len() > 1 {
            ALPHABET[(n >> 6) as usize & 63]
        } else {
            b'='
        });
        out.push(if chunk.len() > 2 {
            ALPHABET[n as usize & 63]
        } else {
            b'='
        });
    }
}

/// (from, to) of a line of `side` (`"editor"` or `"agent"`) that the proxy handled as `action`.
pub fn route(side: &str, action: Option<&str>) -> (&'static str, &'static str) {
    let (own, other) = if side == "editor" {
        (CLIENT, AGENT)
    } else {
        (AGENT, CLIENT)
    };
    match action {
        None => (own, other),
        Some("injected") => (PROXY, other),
        Some(_) => (own, PROXY),
    }
}

/// The trace events of one frame (`data`, without its line ending) sent by `sender` to
/// `receiver`, `ts` (written by `stamp`) seconds after the trace began: how many (none for a
/// line that is not JSON-RPC).
pub fn events(out: &mut Vec<u8>, data: &[u8], ts: &[u8], sender: &str, receiver: &str) -> usize {
    parse_frame(data).map_or(0, |frame| frame_events(out, data, &frame, ts, sender, receiver))
}

/// `events` of a frame already parsed (`frame`, of `data`).
pub fn frame_events(out: &mut Vec<u8>, data: &[u8], frame: &Frame, ts: &[u8], sender: &str, receiver: &str) -> usize {
    match frame {
        Frame::Single(env) => {
            event(out, data, env, ts, sender, receiver);
            1
        }
        Frame::Batch(entries) => {
            let mut n = 0;
            for entry in entries {
                if let Ok(env) = &entry.result {
                    event(out, &data[entry.start..entry.end], env, ts, sender, receiver);
                    n += 1;
                }
            }
            n
        }
    }
}

/// The event of one message (`raw`, its envelope `env`).
fn event(out: &mut Vec<u8>, raw: &[u8], env: &Envelope, ts: &[u8], sender: &str, receiver: &str) {
    let member = |span: Option<Span>, default: &'static [u8]| span.map_or(default, |s| &raw[s.range()]);
    let route = |out: &mut Vec<u8>| {
        out.extend_from_slice(b",\"from\":\"");
        out.extend_from_slice(sender.as_bytes());
        out.extend_from_slice(b"\",\"to\":\"");
        out.extend_from_slice(receiver.as_bytes());
        out.push(b'"');
    };
    match env.kind {
        Kind::Response | Kind::Error => {
            let error = env.kind == Kind::Error;
            out.extend_from_slice(b"{\"type\":\"response\",\"ts\":");
            out.extend_from_slice(ts);
            route(out);
            out.extend_from_slice(b",\"id\":");
            out.extend_from_slice(member(env.id, b"null"));
            out.extend_from_slice(if error {
                b",\"is_error\":true"
            } else {
                b",\"is_error\":false"
            });
            out.extend_from_slice(b",\"payload\":");
            out.extend_from_slice(member(if error { env.error } else { env.result }, b"null"));
        }
        Kind::Request | Kind::Notification => {
            out.extend_from_slice(b"{\"type\":\"");
            out.extend_from_slice(env.kind.as_str().as_bytes());
            out.extend_from_slice(b"\",\"ts\":");
            out.extend_from_slice(ts);
            out.extend_from_slice(b",\"protocol\":\"acp\"");
            route(out);
            if env.kind == Kind::Request {
                out.extend_from_slice(b",\"id\":");
                out.extend_from_slice(member(env.id, b"null"));
            }
            out.extend_from_slice(b",\"method\":");
            out.extend_from_slice(member(env.method, b"\"\""));
            if let Some(s) = env.session_id.and_then(|s| s.str()) {
                // The session's text, written again (as `acp_fast.dumps` writes it).
                out.extend_from_slice(b",\"session\":");
                let mut scratch = Vec::new();
                write_str(out, string_text(raw, s, &mut scratch));
            }
            out.extend_from_slice(b",\"params\":");
            out.extend_from_slice(member(env.params, b"null"));
        }
    }
    out.extend_from_slice(b"}\n");
}

/// Seconds since the epoch (`time.time()`).
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// What one direction of the relay records: the record lines (`--record`) and trace events
/// (`--trace`) of the lines it forwards, gathered until the caller takes them (`take`). One clock
/// reading per read chunk (`clock`): every line of a chunk has its time.
pub struct Recorder {
    /// `"editor"` or `"agent"`: who sends the lines.
    side: &'static str,
    record: Option<Vec<u8>>,
    /// The trace's events and its start (unix seconds).
    trace: Option<(Vec<u8>, f64)>,
    /// Lines forwarded that gave no trace event (blank lines).
    skipped: u64,
    stamp: Vec<u8>,
    ts: Vec<u8>,
}

impl Recorder {
    /// `record`: build record lines; `trace_start`: build trace events, `ts` counting from it.
    pub fn new(side: &'static str, record: bool, trace_start: Option<f64>) -> Self {
        let mut r = Self {
            side,
            record: record.then(Vec::new),
            trace: trace_start.map(|s| (Vec::new(), s)),
            skipped: 0,
            stamp: Vec::new(),
            ts: Vec::new(),
        };
        r.clock_at(unix_now());
        r
    }

    /// The time of the lines recorded from now on: now.
    pub fn clock(&mut self) {
        self.clock_at(unix_now());
    }

    /// The time of the lines recorded from now on: `t` (unix seconds).
    pub fn clock_at(&mut self, t: f64) {
        self.stamp.clear();
        stamp(&mut self.stamp, t);
        if let Some((_, start)) = &self.trace {
            self.ts.clear();
            stamp(&mut self.ts, (t - start).max(0.0));
        }
    }

    /// Whether trace events are built (the relay then keeps each frame parsed for `forwarded`).
    pub fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// A line forwarded as it came (`wire`: with its line ending, none for a last line without
    /// one). `is_json`: it is not blank (a frame); `frame`: it parsed as that (for the trace).
    pub fn forwarded(&mut self, wire: &[u8], is_json: bool, frame: Option<&Frame>) {
        let eol = wire.last() == Some(&b'\n');
        let mut data = if eol { &wire[..wire.len() - 1] } else { wire };
        let crlf = eol && data.last() == Some(&b'\r');
        if crlf {
            data = &data[..data.len() - 1];
        }
        if let Some(out) = self.record.as_mut() {
            let seen = Seen {
                side: self.side,
                data,
                is_json,
                crlf,
                eol,
                action: None,
                reason: None,
                withheld: false,
            };
            line(out, &seen, &self.stamp);
        }
        if let Some((out, _)) = self.trace.as_mut() {
            let (sender, receiver) = route(self.side, None);
            let found = match frame {
                Some(frame) if is_json => frame_events(out, data, frame, &self.ts, sender, receiver),
                _ => 0,
            };
            if found == 0 {
                self.skipped += 1;
            }
        }
    }

    /// The record lines, trace events and skipped lines gathered since the last call, given to
    /// `f`; then they are cleared (their buffers kept).
    pub fn drain<R>(&mut self, f: impl FnOnce(&[u8], &[u8], u64) -> R) -> R {
        let record = self.record.as_deref().unwrap_or_default();
        let trace = self.trace.as_ref().map_or(&[][..], |(t, _)| t.as_slice());
        let r = f(record, trace, self.skipped);
        if let Some(out) = self.record.as_mut() {
            out.clear();
        }
        if let Some((out, _)) = self.trace.as_mut() {
            out.clear();
        }
        self.skipped = 0;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen<'a>(data: &'a [u8], is_json: bool) -> Seen<'a> {
        Seen {
            side: "agent",
            data,
            is_json,
            crlf: false,
            eol: true,
            action: None,
            reason: None,
            withheld: false,
        }
    }

    #[test]
    fn record_lines_have_the_writers_shape() {
        let mut out = Vec::new();
        line(&mut out, &seen(b"{\"a\":1}", true), b"1.500000");
        line(&mut out, &seen(b" \t\"\x01\xc3\xa9", false), b"2.000000");
        line(&mut out, &seen(b"\xff\x00ab", false), b"3.000000");
        let mut s = seen(b"abcd", true);
        (s.crlf, s.eol, s.action, s.reason, s.withheld) = (true, false, Some("replaced"), Some("r\""), true);
        line(&mut out, &s, b"4.000000");
        too_large(&mut out, "editor", 99, b"5.000000");
        let expected = concat!(
            "{\"t\":1.500000,\"from\":\"agent\",\"frame\":{\"a\":1}}\n",
            "{\"t\":2.000000,\"from\":\"agent\",\"text\":\" \\t\\\"\\u0001\u{e9}\"}\n",
            "{\"t\":3.000000,\"from\":\"agent\",\"base64\":\"/wBhYg==\"}\n",
            "{\"t\":4.000000,\"from\":\"agent\",\"withheld\":4,\"crlf\":true,\"eol\":false,\"action\":\"replaced\",\"reason\":\"r\\\"\"}\n",
            "{\"t\":5.000000,\"from\":\"editor\",\"too_large\":99}\n",
        );
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        let mut t = Vec::new();
        stamp(&mut t, 0.0078125);
        assert_eq!(t, b"0.007812");
    }

    #[test]
    fn trace_events_have_the_conductors_shape() {
        let mut out = Vec::new();
        let frame = br#"[{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s\u0041","prompt":[]}},{"jsonrpc":"2.0","method":"n"},3,{"jsonrpc":"2.0","id":"x","result": {"ok":true} },{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}]"#;
        assert_eq!(events(&mut out, frame, b"0.250000", CLIENT, AGENT), 4);
        let expected = concat!(
            "{\"type\":\"request\",\"ts\":0.250000,\"protocol\":\"acp\",\"from\":\"Client\",\"to\":\"Agent\",\"id\":1,\"method\":\"session/prompt\",\"session\":\"sA\",\"params\":{\"sessionId\":\"s\\u0041\",\"prompt\":[]}}\n",
            "{\"type\":\"notification\",\"ts\":0.250000,\"protocol\":\"acp\",\"from\":\"Client\",\"to\":\"Agent\",\"method\":\"n\",\"params\":null}\n",
            "{\"type\":\"response\",\"ts\":0.250000,\"from\":\"Client\",\"to\":\"Agent\",\"id\":\"x\",\"is_error\":false,\"payload\":{\"ok\":true}}\n",
            "{\"type\":\"response\",\"ts\":0.250000,\"from\":\"Client\",\"to\":\"Agent\",\"id\":null,\"is_error\":true,\"payload\":{\"code\":1,\"message\":\"m\"}}\n",
        );
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        assert_eq!(events(&mut Vec::new(), b"not json", b"0", CLIENT, AGENT), 0);
        assert_eq!(route("agent", Some("diverted")), (AGENT, PROXY));
        assert_eq!(route("editor", Some("injected")), (PROXY, AGENT));
    }
}
