//! Decoding a newline-delimited stream: the framer's lines, each parsed as a frame.
//!
//! `FrameDecoder` is a `Framer` plus `message::parse_line`: every complete non-blank line comes
//! out parsed (a frame or the `DecodeError` that says why not), an oversized line as the
//! `frame_too_large` error, each with its line number.
//!
//! Mirror: `_fallback/decoder.py`, whose `FrameDecoder` is also the Python class (here
//! `rust/python/frames.rs`). It parses a whole feed's lines in one loop, orjson first, where this
//! parses each line as the framer hands it over.

use crate::error::DecodeError;
use crate::framing::{too_large, Event, Framer};
use crate::message::{parse_line_utf8, Frame};

/// One line of the stream, decoded.
#[derive(Debug)]
pub enum Decoded<'a> {
    /// A complete, non-blank line (without its line ending) and what it parsed to.
    Frame {
        line: u64,
        data: &'a [u8],
        frame: &'a Result<Frame, DecodeError>,
    },
    /// The line `line` is longer than the limit (`framing::too_large`); it is skipped.
    TooLarge { line: u64, error: DecodeError },
}

#[derive(Debug, Clone, Default)]
pub struct FrameDecoder {
    framer: Framer,
}

/// Parse the line of an `Event` of the framer, and hand it to `emit`.
#[inline(always)]
fn decode<F: FnMut(Decoded<'_>)>(max: usize, event: Event<'_>, emit: &mut F) {
    match event {
        Event::Frame { line, data, utf8 } => {
            let frame = parse_line_utf8(data, None, utf8);
            emit(Decoded::Frame {
                line,
                data,
                frame: &frame,
            });
        }
        Event::TooLarge { line } => emit(Decoded::TooLarge {
            line,
            error: too_large(max),
        }),
    }
}

impl FrameDecoder {
    pub fn new(max_frame_bytes: usize) -> Self {
        Self {
            framer: Framer::new(max_frame_bytes),
        }
    }

    /// The framer (`line`, `buffered`, `max_frame_bytes`).
    pub fn framer(&self) -> &Framer {
        &self.framer
    }

    /// Feed bytes; `emit` gets every complete line, decoded, in order.
    pub fn feed<F: FnMut(Decoded<'_>)>(&mut self, data: &[u8], mut emit: F) {
        let max = self.framer.max_frame_bytes();
        self.framer.feed(data, |event| decode(max, event, &mut emit));
    }

    /// End of input: decode a last line that has no newline.
    pub fn finish<F: FnMut(Decoded<'_>)>(&mut self, mut emit: F) {
        let max = self.framer.max_frame_bytes();
        self.framer.finish(|event| decode(max, event, &mut emit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dec: &mut FrameDecoder, pieces: &[&[u8]]) -> Vec<(u64, Result<String, &'static str>)> {
        let mut out = Vec::new();
        let mut push = |d: Decoded<'_>| {
            out.push(match d {
                Decoded::Frame { line, data, frame } => (
                    line,
                    frame
                        .as_ref()
                        .map(|_| String::from_utf8_lossy(data).into_owned())
                        .map_err(|e| e.kind),
                ),
                Decoded::TooLarge { line, error } => (line, Err(error.kind)),
            })
        };
        for p in pieces {
            dec.feed(p, &mut push);
        }
        dec.finish(&mut push);
        out
    }

    #[test]
    fn lines_are_parsed_with_their_numbers() {
        let ok = r#"{"jsonrpc":"2.0","method":"m"}"#;
        let stream = format!("{ok}\r\n\nnope\n{}\n{ok}", "x".repeat(50));
        let expected = vec![
            (1, Ok(ok.to_owned())),
            (3, Err("unexpected_character")),
            (4, Err("frame_too_large")),
            (5, Ok(ok.to_owned())),
        ];
        let bytes = stream.as_bytes();
        for cut in 0..=bytes.len() {
            let mut dec = FrameDecoder::new(40);
            assert_eq!(run(&mut dec, &[&bytes[..cut], &bytes[cut..]]), expected, "cut at {cut}");
            assert_eq!(dec.framer().line(), 5);
        }
    }
}
