use super::*;

fn texts(c: &VarColumn) -> Vec<Option<String>> {
    (0..c.len())
        .map(|i| {
            let valid = c.validity.bits[i / 8] & (1 << (i % 8)) != 0;
            let (a, b) = (c.offsets[i] as usize, c.offsets[i + 1] as usize);
            valid.then(|| String::from_utf8_lossy(&c.values[a..b]).into_owned())
        })
        .collect()
}

fn s(v: &str) -> Option<String> {
    Some(v.to_owned())
}

#[test]
fn rows_of_a_stream() {
    let stream = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1"}}"#,
        "\r\n\n",
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\u0031","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","status":"completed"}}}"#,
        "\nnope\n",
        r#"{"jsonrpc":"2.0","id":"a\"b","result":null}"#,
        "\n",
        r#"[{"jsonrpc":"2.0","method":"x"}]"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":-0,"error":{"code":1,"message":"m"}}"#,
    );
    let mut cols = FrameColumns::new(10, 1 << 20);
    let bytes = stream.as_bytes();
    cols.feed(&bytes[..50]);
    cols.feed(&bytes[50..]);
    let batches = cols.finish();
    assert_eq!(batches.len(), 1);
    let b = &batches[0];
    assert_eq!(b.line, vec![11, 13, 14, 15, 16, 17]);
    assert_eq!(
        texts(&b.kind),
        vec![
            s("request"),
            s("notification"),
            s("invalid"),
            s("response"),
            s("batch"),
            s("error")
        ]
    );
    assert_eq!(texts(&b.id), vec![s("1"), None, None, s(r#""a\"b""#), None, s("0")]);
    assert_eq!(texts(&b.session_id), vec![s("s1"), s("s1"), None, None, None, None]);
    assert_eq!(texts(&b.status), vec![None, s("completed"), None, None, None, None]);
    assert_eq!(texts(&b.tool_call_id)[1], s("c1"));
    assert_eq!(texts(&b.error)[2], s("unexpected_character"));
    assert_eq!(b.bytes[2], 4);
    assert_eq!(texts(&b.raw)[2], s("nope"));
    assert_eq!(b.bytes_validity.nulls, 0);
}

#[test]
fn too_large_lines_and_given_lines() {
    let mut cols = FrameColumns::new(0, 8);
    cols.feed(b"0123456789\n{}\n");
    cols.line(7, b"{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\r\n");
    cols.line(8, b"a\nb");
    cols.too_large(9, Some(99));
    cols.invalid(10, "invalid_record", None);
    let b = &cols.finish()[0];
    assert_eq!(b.line, vec![1, 2, 7, 8, 9, 10]);
    assert_eq!(
        texts(&b.error),
        vec![
            s("frame_too_large"),
            s("missing_jsonrpc"),
            None,
            s("embedded_newline"),
            s("frame_too_large"),
            s("invalid_record")
        ]
    );
    assert_eq!(texts(&b.raw)[0], None);
    assert_eq!(b.bytes_validity.nulls, 2);
    assert_eq!(b.bytes[4], 99);
    assert_eq!(texts(&b.method)[2], s("m"));
}

#[test]
fn no_rows_is_one_empty_batch() {
    let mut cols = FrameColumns::new(0, 100);
    cols.feed(b"\n \n");
    let batches = cols.finish();
    assert_eq!(batches.len(), 1);
    assert!(batches[0].is_empty());
    assert_eq!(batches[0].kind.offsets, vec![0]);
}
