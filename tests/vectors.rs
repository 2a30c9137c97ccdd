//! The shared conformance vectors (tests/vectors/*.jsonl), checked against the Rust core directly
//! (`cargo test`). The pytest suite reads the same files for both Python backends.

use std::path::Path;

use serde_json::Value;

/// The non-blank lines of one vector file, each parsed as `T`.
fn read<T: serde::de::DeserializeOwned>(file: &str) -> Vec<T> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("vector line"))
        .collect()
}

fn cases(file: &str) -> Vec<Value> {
    read(file)
}

/// The input bytes of a case: `key` as UTF-8, or `key_b64` (for bytes that are not UTF-8).
fn input(case: &Value, key: &str) -> Vec<u8> {
    if let Some(s) = case.get(key).and_then(Value::as_str) {
        return s.as_bytes().to_vec();
    }
    let b64 = case[format!("{key}_b64")].as_str().expect("input");
    decode_base64(b64)
}

fn decode_base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("bad base64"),
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::new();
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= u32::from(val(c)) << (18 - 6 * i);
        }
        for i in 0..chunk.len() - 1 {
            out.push((acc >> (16 - 8 * i)) as u8);
        }
    }
    out
}

fn name(case: &Value) -> &str {
    case["name"].as_str().unwrap_or("?")
}

#[test]
fn json_rejects_have_the_documented_error() {
    let cases = cases("json_reject.jsonl");
    assert!(cases.len() > 50);
    for case in &cases {
        let doc = input(case, "doc");
        let err = _native::scanner::validate(&doc).expect_err(name(case));
        assert_eq!(err.kind, case["kind"].as_str().unwrap(), "{}", name(case));
        assert_eq!(
            err.position,
            case["position"].as_u64().map(|p| p as usize),
            "{}",
            name(case)
        );
        assert_eq!(err.description, case["message"].as_str().unwrap(), "{}", name(case));
    }
}

/// Only the input of an accept case (its expected value may hold integers beyond 64 bits, which
/// `serde_json::Value` cannot; the pytest suite checks the values).
#[derive(serde::Deserialize)]
struct Accept {
    name: String,
    doc: Option<String>,
    doc_b64: Option<String>,
}

#[test]
fn json_accepts_validate() {
    let cases: Vec<Accept> = read("json_accept.jsonl");
    assert!(cases.len() > 30);
    for case in &cases {
        let doc = match (&case.doc, &case.doc_b64) {
            (Some(d), _) => d.as_bytes().to_vec(),
            (None, Some(b)) => decode_base64(b),
            (None, None) => panic!("{}: no input", case.name),
        };
        _native::scanner::validate(&doc).unwrap_or_else(|e| panic!("{}: {e}", case.name));
    }
}

#[test]
fn invalid_frames_have_the_documented_error() {
    let cases = cases("frames_invalid.jsonl");
    assert!(cases.len() > 50);
    for case in &cases {
        let frame = input(case, "frame");
        let err = _native::parse_frame(&frame).expect_err(name(case));
        assert_eq!(i64::from(err.code), case["code"].as_i64().unwrap(), "{}", name(case));
        assert_eq!(err.kind, case["kind"].as_str().unwrap(), "{}", name(case));
        assert_eq!(
            err.position,
            case["position"].as_u64().map(|p| p as usize),
            "{}",
            name(case)
        );
        assert_eq!(err.description, case["message"].as_str().unwrap(), "{}", name(case));
    }
}

#[test]
fn valid_frames_classify() {
    let cases = cases("frames_valid.jsonl");
    assert!(cases.len() > 50);
    for case in &cases {
        let frame = input(case, "frame");
        match _native::parse_frame(&frame).unwrap_or_else(|e| panic!("{}: {e}", name(case))) {
            _native::Frame::Single(env) => {
                assert_eq!(env.kind.as_str(), case["kind"].as_str().unwrap(), "{}", name(case));
                let text = |span: Option<_native::message::Span>| {
                    span.and_then(|s| s.str()).map(|s| {
                        let mut scratch = Vec::new();
                        String::from_utf8(_native::scanner::string_text(&frame, s, &mut scratch).to_vec()).unwrap()
                    })
                };
                for (field, span) in [
                    ("method", env.method),
                    ("session_id", env.session_id),
                    ("update_kind", env.update_kind),
                    ("tool_call_id", env.tool_call_id),
                ] {
                    assert_eq!(text(span).as_deref(), case[field].as_str(), "{} {field}", name(case));
                }
            }
            _native::Frame::Batch(_) => panic!("{}: unexpected batch", name(case)),
        }
    }
}
