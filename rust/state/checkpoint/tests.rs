//! Unit tests of `checkpoint.rs`.

use super::super::records::{write_value, OUTCOMES};
use super::super::restore::OUTCOME_WHAT;
use super::*;

fn canonical(text: &str) -> String {
    let mut out = Vec::new();
    write_value(&mut out, text.as_bytes(), 0).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn values_are_written_as_dumps_of_loads_numbers_and_strings_as_received() {
    assert_eq!(
        canonical(r#" { "a" : 1E2 , "b":[ 1.50 , -0 , -0.0 , 1e-400 ], "\u0061": "\u00e9\/" } "#),
        r#"{"a":"\u00e9\/","b":[1.50,-0,-0.0,1e-400]}"#
    );
    assert_eq!(
        canonical(r#"[{"k":1,"k":2,"j":[]},"\u0000",true,null,12345678901234567890123]"#),
        r#"[{"k":2,"j":[]},"\u0000",true,null,12345678901234567890123]"#
    );
}

#[test]
fn too_deep_names_the_path() {
    let deep = format!("{{\"x\":{}{}}}", "[".repeat(1030), "]".repeat(1030));
    let err = write_value(&mut Vec::new(), deep.as_bytes(), 5).unwrap_err();
    assert_eq!(err.len(), MAX_DEPTH as usize - 5);
    assert_eq!(err.last(), Some(&PathItem::Key("x".into())));
}

#[test]
fn messages() {
    let e = from_json(br#"{"format":{"a":[1,"b"]}}"#).err().unwrap();
    assert_eq!(
        e.to_string(),
        r#"expected "state.format" to be 'acp-fast-state/2' or 'acp-fast-state/1', found {"a":[1,"b"]}"#
    );
    let doc = br#"{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{"s'1":{"toolCalls":{},"terminals":{},"plans":{},"permissions":[]}},"permissionOrder":["s'1"]}"#;
    let e = from_json(doc).err().unwrap();
    assert_eq!(
        e.to_string(),
        r#"expected "state.permissionOrder" to name "s'1" 0 times (its permission records), found more"#
    );
    assert_eq!(
        OUTCOME_WHAT,
        format!("one of {}", OUTCOMES.map(Outcome::as_str).join(", "))
    );
}

#[test]
fn counts_are_63_bit_integers() {
    let doc = |max: &str, evicted: &str| {
        format!(
            r#"{{"format":"acp-fast-state/1","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":{max},"evicted":{evicted},"sessions":{{}}}}"#
        )
    };
    for big in ["9223372036854775808", "18446744073709551615", "18446744073709551616"] {
        let e = from_json(doc(big, "0").as_bytes()).err().unwrap();
        assert_eq!(
            e.to_string(),
            r#"expected "state.maxToolCalls" to be a positive integer or null, found number"#
        );
        let e = from_json(doc("null", big).as_bytes()).err().unwrap();
        assert_eq!(
            e.to_string(),
            r#"expected "state.evicted" to be a non-negative integer, found number"#
        );
    }
    let max = "9223372036854775807";
    let (store, _) = from_json(doc(max, max).as_bytes()).unwrap();
    assert_eq!(
        (store.max_tool_calls(), store.evicted()),
        (Some(i64::MAX as usize), i64::MAX as u64)
    );
}

#[test]
fn round_trip() {
    let doc = br#"{"format":"acp-fast-state/2","protocolVersion":2,"negotiatedVersion":1,"maxToolCalls":3,"maxFrameBytes":10,"strictSchema":true,"unstable":true,"draft":"alpha.5","wrapBareContent":true,"evicted":4,"sessions":{"s1":{"toolCalls":{"c1":{"toolCallId":"c1","kind":"other","status":"completed","content":[{"a":"\u00e9\/"}],"locations":[],"zz":[1]}},"terminals":{"t":{"terminalId":"t","output":"QQ==","exitStatus":{}}},"plans":{"main":{"planId":"main"}},"permissions":[{"id":"p","sessionId":"s1","options":[],"outcome":"pending","approved":false}]}},"permissionOrder":["s1"]}"#;
    let (store, options) = from_json(doc).unwrap();
    assert_eq!(
        options,
        Options {
            max_frame_bytes: 10,
            strict_schema: Some(None),
            unstable: true,
            draft: 1
        }
    );
    assert_eq!(to_json(&store, &options).unwrap(), doc.to_vec());
    assert_eq!(store.finished.len(), 1);
}

#[test]
fn tool_call_order_is_the_eviction_order() {
    let upd = |sid: &str, id: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{sid}","update":{{"sessionUpdate":"tool_call_update","toolCallId":"{id}"}}}}}}"#
        )
    };
    let mut s = Store::new(Some(2), Some(3));
    for (sid, id) in [("a", "1"), ("b", "2"), ("a", "3"), ("c", "4")] {
        super::super::tests::apply(&mut s, &upd(sid, id)).unwrap();
    }
    let options = Options::default();
    let doc = to_json(&s, &options).unwrap();
    // the sessions' activity order too: b, a (touched again), c
    assert!(doc.ends_with(br#""toolCallOrder":["b","a","c"],"sessionOrder":["b","a","c"]}"#));
    let kept = |store: &Store| -> Vec<Vec<u8>> {
        let sessions = store.sessions().iter();
        sessions
            .flat_map(|(_, ss)| ss.tool_calls.iter().map(|(k, _)| k.to_vec()))
            .collect()
    };
    // "1" was dropped; "2" (session b) is the oldest, not "3" (session a, first in the document)
    let (mut back, _) = from_json(&doc).unwrap();
    for store in [&mut s, &mut back] {
        super::super::tests::apply(store, &upd("c", "5")).unwrap();
        assert_eq!(kept(store), [b"3".to_vec(), b"4".to_vec(), b"5".to_vec()]);
    }
    // v1 documents are read (session order)
    let v1 = String::from_utf8(doc)
        .unwrap()
        .replace("acp-fast-state/2", "acp-fast-state/1");
    let v1 = v1.replace(r#","toolCallOrder":["b","a","c"]"#, "");
    let (mut old, _) = from_json(v1.as_bytes()).unwrap();
    super::super::tests::apply(&mut old, &upd("c", "5")).unwrap();
    assert_eq!(kept(&old), [b"2".to_vec(), b"4".to_vec(), b"5".to_vec()]);
    let bad = br#"{"format":"acp-fast-state/2","protocolVersion":null,"negotiatedVersion":null,"maxToolCalls":null,"evicted":0,"sessions":{"s":{"toolCalls":{},"terminals":{},"plans":{},"permissions":[]}},"toolCallOrder":["s"]}"#;
    assert_eq!(
        from_json(bad).err().unwrap().to_string(),
        r#"expected "state.toolCallOrder" to name 's' 0 times (its tool calls), found more"#
    );
}
