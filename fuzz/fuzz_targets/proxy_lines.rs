//! The framer's exact reading (`Framer::feed_exact` / `finish_exact`), which `acp-fast proxy`
//! relays through, on any bytes cut into any pieces under any limit: the events give the stream
//! back byte for byte (each line as it was, each oversized line as the number of its bytes
//! dropped), every line within the limit is a line and every line over it is reported, line
//! numbers count 1, 2, 3, ... with blank lines included, and the cuts change nothing.
#![no_main]
use libfuzzer_sys::fuzz_target;

use _native::framing::{Framer, Piece, DEFAULT_MAX_FRAME_BYTES};

#[derive(Debug, PartialEq)]
enum Event {
    Line(u64, Vec<u8>),
    TooLarge(u64, u64),
}

fn events(framer: &mut Framer, pieces: &[&[u8]]) -> Vec<Event> {
    let mut out = Vec::new();
    let mut push = |p: Piece<'_>| {
        out.push(match p {
            Piece::Line { line, data } => Event::Line(line, data.to_vec()),
            Piece::TooLarge { line, bytes } => Event::TooLarge(line, bytes),
        })
    };
    for piece in pieces {
        framer.feed_exact(piece, &mut push);
    }
    framer.finish_exact(&mut push);
    out
}

fuzz_target!(|input: &[u8]| {
    let Some((&ctl, rest)) = input.split_first() else {
        return;
    };
    let Some((&cuts, stream)) = rest.split_first() else {
        return;
    };
    let max = if ctl == 0 {
        DEFAULT_MAX_FRAME_BYTES
    } else {
        usize::from(ctl)
    };
    // Up to 15 pieces at pseudo-random offsets drawn from `cuts`.
    let mut at: Vec<usize> = (0..usize::from(cuts & 15))
        .map(|i| (usize::from(cuts) * 7919 + i * 104_729) % (stream.len() + 1))
        .collect();
    at.sort_unstable();
    let mut pieces = Vec::new();
    let mut from = 0;
    for cut in at {
        pieces.push(&stream[from..cut]);
        from = cut;
    }
    pieces.push(&stream[from..]);

    let mut framer = Framer::new(max);
    let got = events(&mut framer, &pieces);
    assert_eq!(
        got,
        events(&mut Framer::new(max), &[stream]),
        "the cuts changed the events"
    );
    assert_eq!(framer.buffered(), 0, "bytes held after finish");

    let mut cursor = 0usize;
    for (i, event) in got.iter().enumerate() {
        let (line, len) = match event {
            Event::Line(line, data) => {
                assert_eq!(
                    &stream[cursor..cursor + data.len()],
                    &data[..],
                    "a line is not the stream's bytes"
                );
                let body = data.len() - usize::from(data.ends_with(b"\n"));
                assert!(body <= max, "a line over the limit was passed on");
                assert!(!data[..body].contains(&b'\n'), "a newline inside a line");
                (*line, data.len())
            }
            Event::TooLarge(line, bytes) => {
                let len = usize::try_from(*bytes).expect("a length in memory");
                let dropped = &stream[cursor..cursor + len];
                let body = len - usize::from(dropped.ends_with(b"\n"));
                assert!(body > max, "a line within the limit was reported too large");
                assert!(!dropped[..body].contains(&b'\n'), "two lines reported as one");
                (*line, len)
            }
        };
        assert_eq!(line, i as u64 + 1, "line numbers are not 1, 2, 3, ...");
        assert!(len > 0, "an empty event");
        cursor += len;
        let last = i + 1 == got.len();
        assert!(
            last || stream[cursor - 1] == b'\n',
            "only the last line may lack its newline"
        );
    }
    assert_eq!(cursor, stream.len(), "bytes of the stream were lost");
    assert_eq!(framer.line(), got.len() as u64, "the framer's line count");
});
