//! Any byte stream, in any pieces, through the framer, the envelope parser and the state engine:
//! nothing may panic or hang, the pieces must not change the lines, the parse of a line must not
//! depend on how it was reached (with or without captured members, UTF-8 known or not), and a
//! store's checkpoint must restore to a store with the same checkpoint.
#![no_main]
use libfuzzer_sys::fuzz_target;

use _native::framing::{Event, Framer, DEFAULT_MAX_FRAME_BYTES};
use _native::message::{parse_line, parse_line_utf8, Captured, Frame};
use _native::state::{checkpoint, Source, Store};

#[derive(Debug, PartialEq)]
enum Line {
    Frame(u64, Vec<u8>),
    TooLarge(u64),
}

fn lines(max: usize, pieces: &[&[u8]]) -> Vec<(Line, bool)> {
    let mut framer = Framer::new(max);
    let mut out = Vec::new();
    let mut push = |e: Event<'_>| {
        out.push(match e {
            Event::Frame { line, data, utf8 } => (Line::Frame(line, data.to_vec()), utf8),
            Event::TooLarge { line } => (Line::TooLarge(line), false),
        })
    };
    for p in pieces {
        framer.feed(p, &mut push);
    }
    framer.finish(&mut push);
    out
}

fuzz_target!(|input: &[u8]| {
    let Some((&ctl, stream)) = input.split_first() else {
        return;
    };
    let max = if ctl & 1 == 0 {
        DEFAULT_MAX_FRAME_BYTES
    } else {
        1 + usize::from(ctl >> 1) * 3
    };
    let cut = (usize::from(ctl) * 7919) % (stream.len() + 1);
    let whole = lines(max, &[stream]);
    let split = lines(max, &[&stream[..cut], &stream[cut..]]);
    assert!(
        whole.iter().map(|(l, _)| l).eq(split.iter().map(|(l, _)| l)),
        "a split changed the lines"
    );

    let mut stores = [
        Store::new(None, None),
        Store::new(Some(1), Some(2)),
        Store::new(Some(2), Some(1)),
    ];
    let mut cap = Captured::new();
    for (line, utf8) in &whole {
        let Line::Frame(_, data) = line else { continue };
        if *utf8 {
            assert!(std::str::from_utf8(data).is_ok(), "a line flagged UTF-8 is not");
        }
        let plain = parse_line(data);
        let captured = parse_line_utf8(data, Some(&mut cap), *utf8);
        assert_eq!(plain, captured, "capturing members changed the parse");
        for store in &mut stores {
            match &captured {
                Ok(Frame::Single(env)) => {
                    let _ = store.apply_captured(data, env, Some(&cap), Source::Unknown);
                }
                Ok(Frame::Batch(entries)) => {
                    for e in entries {
                        if let Ok(env) = &e.result {
                            let _ = store.apply(&data[e.start..e.end], env, Source::Client);
                        }
                    }
                }
                Err(e) => assert!(
                    e.position.is_none_or(|p| p <= data.len()),
                    "error position past the line"
                ),
            }
        }
    }
    assert!(
        stores[1].tool_call_count() <= 2 && stores[2].tool_call_count() <= 1,
        "bound not kept"
    );
    for store in &stores {
        // A value nested deeper than `dumps` writes has no checkpoint (an EncodeError in Python).
        let Ok(doc) = checkpoint::to_json(store) else { continue };
        let restored = checkpoint::from_json(&doc).expect("a checkpoint restores");
        assert_eq!(checkpoint::to_json(&restored).ok(), Some(doc), "checkpoint round trip");
    }
});
