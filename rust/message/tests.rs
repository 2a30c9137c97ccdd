//! Tests of `message.rs`: the envelope rules, the located fields, batches.

use super::*;

fn single(s: &str) -> Envelope {
    match parse_frame(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e}")) {
        Frame::Single(e) => e,
        Frame::Batch(_) => panic!("batch"),
    }
}

fn text(data: &str, s: Option<Span>) -> Option<&str> {
    s.and_then(|s| s.str()).map(|s| &data[s.start..s.end])
}

#[test]
fn classifies_and_locates() {
    let f = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"x"}}}"#;
    let e = single(f);
    assert_eq!(e.kind, Kind::Notification);
    assert_eq!(text(f, e.method), Some("session/update"));
    assert_eq!(text(f, e.session_id), Some("s1"));
    assert_eq!(text(f, e.update_kind), Some("tool_call"));
    assert_eq!(text(f, e.tool_call_id), Some("c1"));
    assert!(e.id.is_none());

    let r = single(r#"{"jsonrpc":"2.0","id":7,"result":{"sessionId":"zz"}}"#);
    assert_eq!(r.kind, Kind::Response);
    assert!(r.session_id.is_none());
    assert_eq!(
        single(r#"{"id":null,"method":"x","jsonrpc":"2.0"}"#).kind,
        Kind::Request
    );
    let err = single(r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"nope"}}"#);
    assert_eq!(err.kind, Kind::Error);
}

#[test]
fn escaped_keys_and_duplicates() {
    let f = r#"{"jsonrpc":"2.0","\u006dethod":"a","method":"b","params":{"sessionId":"s"},"params":[1]}"#;
    let e = single(f);
    assert_eq!(text(f, e.method), Some("b"));
    assert!(e.session_id.is_none());
}

#[test]
fn status_of_the_last_update_object() {
    let status = |f: &str| {
        let (frame, status) = parse_line_status(f.as_bytes(), false);
        assert_eq!(frame, parse_frame(f.as_bytes()), "{f}");
        status.map(|s| f[s.range()].to_owned())
    };
    let head = r#"{"jsonrpc":"2.0","method":"session/update","params":"#;
    let cases: &[(&str, Option<&str>)] = &[
        (r#"{"update":{"status":"a","st\u0061tus":"b"}}}"#, Some(r#""b""#)),
        (r#"{"update":{"status":1}}}"#, Some("1")),
        (r#"{"update":{"status":"a"},"update":{"x":1}}}"#, None),
        (r#"{"update":{"status":"a"},"update":[1]}}"#, None),
        (r#"{"update":{"status":"a"}},"params":{"sessionId":"s"}}"#, None),
        (r#"{"update":{"status":"a"}},"params":null}"#, None),
        (r#"{"update":{"content":{"status":"x"}}}}"#, None),
    ];
    for &(params, want) in cases {
        let f = format!("{head}{params}");
        assert_eq!(status(&f).as_deref(), want, "{f}");
    }
    let r = r#"{"jsonrpc":"2.0","id":1,"result":{"update":{"status":"a"}}}"#;
    assert_eq!(status(r), None);
    let batch = r#"[{"jsonrpc":"2.0","method":"m","params":{"update":{"status":"a"}}}]"#;
    assert_eq!(status(batch), None);
}

#[test]
fn invalid_requests() {
    let cases: &[(&str, &str, usize)] = &[
        (r#"{"method":"x"}"#, "missing_jsonrpc", 0),
        (r#"{"jsonrpc":"1.0","method":"x"}"#, "invalid_jsonrpc", 11),
        (r#"{"jsonrpc":"2.0","method":1}"#, "invalid_method", 26),
        (r#"{"jsonrpc":"2.0","method":"x","id":1.5}"#, "invalid_id", 35),
        (
            r#"{"jsonrpc":"2.0","method":"x","id":9223372036854775808}"#,
            "invalid_id",
            35,
        ),
        (r#"{"jsonrpc":"2.0","method":"x","params":3}"#, "invalid_params", 39),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
            "result_and_error",
            0,
        ),
        (r#"{"jsonrpc":"2.0","id":1}"#, "missing_method", 0),
        (r#"{"jsonrpc":"2.0","result":1}"#, "missing_id", 0),
        (r#"{"jsonrpc":"2.0","id":1,"error":"x"}"#, "invalid_error", 32),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}"#,
            "invalid_error",
            32,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.0,"message":"m"}}"#,
            "invalid_error",
            40,
        ),
        (r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#, "invalid_error", 32),
        ("3", "not_an_object", 0),
        ("[]", "empty_batch", 0),
    ];
    for &(f, kind, pos) in cases {
        let e = parse_frame(f.as_bytes()).expect_err(f);
        assert_eq!(
            (e.code, e.kind, e.position),
            (crate::error::INVALID_REQUEST, kind, Some(pos)),
            "{f}: {e}"
        );
    }
    let e = parse_frame(br#"{"jsonrpc":"1.0","method":"x"}"#).unwrap_err();
    assert_eq!(e.description, r#"expected "jsonrpc": "2.0", found string "1.0""#);
}

#[test]
fn garbage_is_a_parse_error() {
    let e = parse_frame(b"xx").unwrap_err();
    assert_eq!(
        (e.kind, e.description.as_str()),
        ("unexpected_character", "expected a JSON value, found 'x'")
    );
}

#[test]
fn json_errors_win() {
    let e = parse_frame(br#"{"method":1,"x":}"#).unwrap_err();
    assert_eq!(e.code, crate::error::PARSE_ERROR);
    let e = parse_frame(br#"[{"jsonrpc":"2.0","method":"a"},]"#).unwrap_err();
    assert_eq!(e.code, crate::error::PARSE_ERROR);
}

/// No input makes the frame parser panic: valid frames mutated at random (byte flips, cuts,
/// insertions of JSON-significant bytes) and random bytes all end as a frame or an error.
#[test]
fn never_panics_on_mutated_frames() {
    let seeds: &[&[u8]] = &[
        br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","title":"t\u00e9\n","content":[{"type":"diff","path":"/a","newText":"x"}]}}}"#,
        br#"[{"jsonrpc":"2.0","id":1,"result":{"a":[1,-2.5e3,true,null]}},{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"m"}}]"#,
        br#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"x","params":["\ud83d\ude00"]}"#,
    ];
    let inserts: &[u8] = b"{}[]\",:\\u0123456789eE.-+ tfnx\x00\x1f\xc3\xa9\xff";
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..if cfg!(miri) { 600 } else { 30_000 } {
        let mut frame = seeds[round % seeds.len()].to_vec();
        for _ in 0..(1 + next() % 4) {
            let at = (next() as usize) % (frame.len() + 1);
            match next() % 4 {
                0 if at < frame.len() => frame[at] = inserts[(next() as usize) % inserts.len()],
                1 => frame.insert(at, inserts[(next() as usize) % inserts.len()]),
                2 => frame.truncate(at),
                _ if at < frame.len() => {
                    frame.remove(at);
                }
                _ => {}
            }
        }
        let _ = parse_frame(&frame);
        let random: Vec<u8> = (0..(next() % 64))
            .map(|_| inserts[(next() as usize) % inserts.len()])
            .collect();
        let _ = parse_frame(&random);
    }
}

#[test]
fn batches() {
    let f = r#"[{"jsonrpc":"2.0","method":"a"}, 1, {"jsonrpc":"2.0","id":2,"result":null}]"#;
    let Frame::Batch(entries) = parse_frame(f.as_bytes()).unwrap() else {
        panic!()
    };
    assert_eq!(entries.len(), 3);
    let first = entries[0].result.as_ref().unwrap();
    assert_eq!(first.kind, Kind::Notification);
    let m = first.method.unwrap().str().unwrap();
    assert_eq!(&f[entries[0].start..entries[0].end][m.start..m.end], "a");
    let bad = entries[1].result.as_ref().unwrap_err();
    assert_eq!((bad.kind, bad.position), ("not_an_object", Some(33)));
    assert_eq!(entries[2].result.as_ref().unwrap().kind, Kind::Response);
}
