//! Unit tests of `coalesce.rs` (the behaviour on both backends: tests/test_coalesce.py).

use super::*;

fn upd(tc: &str, fields: &str) -> Vec<u8> {
    let sep = if fields.is_empty() { "" } else { "," };
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"tool_call_update","toolCallId":"{tc}"{sep}{fields}}}}}}}"#
    )
    .into_bytes()
    .into_iter()
    .chain(*b"\n")
    .collect()
}

fn text(out: &[u8]) -> String {
    String::from_utf8(out.to_vec()).unwrap()
}

#[test]
fn merges_later_wins_in_first_place_and_releases_when_due() {
    let mut c = Coalescer::new(50.0, Some(2), DEFAULT_MAX_HELD, DEFAULT_MAX_HELD_BYTES);
    let mut out = Vec::new();
    c.push_line(
        &upd("a", r#""status":"in_progress","content":[1]"#),
        0.0,
        true,
        &mut out,
    );
    c.push_line(&upd("a", r#""content":[1,2],"_meta":{"x":1}"#), 0.01, true, &mut out);
    c.push_line(&upd("b", r#""title":"B""#), 0.02, true, &mut out);
    c.push_line(
        &upd("a", r#""content":[1,2,3],"_meta":{"y":null}"#),
        0.02,
        true,
        &mut out,
    );
    assert!(out.is_empty());
    assert_eq!(c.next_due(), Some(0.05));
    c.release_due(0.049, &mut out);
    assert!(out.is_empty());
    c.release_due(0.05, &mut out);
    assert_eq!(
        text(&out),
        text(&upd(
            "a",
            r#""status":"in_progress","content":[1,2,3],"_meta":{"x":1,"y":null}"#
        ))
    );
    out.clear();
    c.push_line(&upd("b", r#""status":"completed""#), 0.06, true, &mut out);
    assert_eq!(text(&out), text(&upd("b", r#""title":"B","status":"completed""#)));
    assert_eq!(c.held(), 0);
    assert_eq!(c.held_bytes, 0);
}

#[test]
fn one_update_is_released_byte_for_byte() {
    let mut c = Coalescer::new(0.0, Some(1), DEFAULT_MAX_HELD, DEFAULT_MAX_HELD_BYTES);
    let line = b"{ \"jsonrpc\":\"2.0\", \"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"\\u0061\" , \"title\" : \"x\"}}}\r\n";
    let mut out = Vec::new();
    c.push_line(line, 1.0, true, &mut out);
    assert!(out.is_empty());
    c.release_due(1.0, &mut out);
    assert_eq!(out, line);
}

#[test]
fn v1_null_leaves_v2_unset_then_set_releases() {
    let mut c = Coalescer::new(50.0, Some(1), DEFAULT_MAX_HELD, DEFAULT_MAX_HELD_BYTES);
    let mut out = Vec::new();
    c.push_line(&upd("a", r#""title":"T""#), 0.0, true, &mut out);
    c.push_line(&upd("a", r#""title":null,"kind":"read""#), 0.0, true, &mut out);
    c.release_all(&mut out);
    assert_eq!(text(&out), text(&upd("a", r#""title":"T","kind":"read""#)));
    let mut c = Coalescer::new(50.0, Some(2), DEFAULT_MAX_HELD, DEFAULT_MAX_HELD_BYTES);
    out.clear();
    c.push_line(&upd("a", r#""x":null"#), 0.0, true, &mut out);
    c.push_line(&upd("a", r#""x":1"#), 0.0, true, &mut out);
    assert_eq!(text(&out), text(&upd("a", r#""x":null"#)));
    // Unknown version: a null over a held member cannot be merged either.
    let mut c = Coalescer::new(50.0, None, DEFAULT_MAX_HELD, DEFAULT_MAX_HELD_BYTES);
    out.clear();
    c.push_line(&upd("a", r#""title":"T""#), 0.0, true, &mut out);
    c.push_line(&upd("a", r#""title":null"#), 0.0, true, &mut out);
    assert_eq!(text(&out), text(&upd("a", r#""title":"T""#)));
}

#[test]
fn releases_before_requests_responses_and_chunks() {
    let mut c = Coalescer::new(50.0, Some(2), DEFAULT_MAX_HELD, DEFAULT_MAX_HELD_BYTES);
    let mut out = Vec::new();
    c.push_line(&upd("a", r#""title":"A""#), 0.0, true, &mut out);
    let chunk = b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}}}\n";
    c.push_line(chunk, 0.0, true, &mut out);
    assert_eq!(out, chunk, "a message chunk passes, nothing released");
    out.clear();
    let ask =
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/request_permission\",\"params\":{\"sessionId\":\"s\"}}\n";
    c.push_line(ask, 0.0, true, &mut out);
    let mut expected = upd("a", r#""title":"A""#);
    expected.extend_from_slice(ask);
    assert_eq!(text(&out), text(&expected));
    out.clear();
    c.push_line(&upd("a", r#""title":"B""#), 0.0, true, &mut out);
    c.push_line(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", 0.0, true, &mut out);
    assert!(text(&out).starts_with(&text(&upd("a", r#""title":"B""#))));
    out.clear();
    c.push_line(&upd("a", r#""title":"C""#), 0.0, true, &mut out);
    c.push_line(&upd("a", r#""title":"D""#), 0.0, false, &mut out);
    assert_eq!(
        text(&out),
        text(&upd("a", r#""title":"C""#)) + &text(&upd("a", r#""title":"D""#))
    );
}

#[test]
fn bounds_release_the_oldest() {
    let mut c = Coalescer::new(50.0, Some(2), 2, DEFAULT_MAX_HELD_BYTES);
    let mut out = Vec::new();
    for tc in ["a", "b", "c"] {
        c.push_line(&upd(tc, r#""title":"T""#), 0.0, true, &mut out);
    }
    assert_eq!(text(&out), text(&upd("a", r#""title":"T""#)));
    let mut c = Coalescer::new(50.0, Some(2), 10, 10);
    out.clear();
    c.push_line(&upd("a", r#""title":"T""#), 0.0, true, &mut out);
    assert_eq!(text(&out), text(&upd("a", r#""title":"T""#)));
}
