//! Tests of the schema checks against the shipped schemas (python/acp_fast/schema/).

use super::*;

fn schema(version: u8, unstable: bool) -> Schema {
    let name = if unstable {
        "schema.unstable.json"
    } else {
        "schema.json"
    };
    let path = format!(
        "{}/python/acp_fast/schema/v{version}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read(path).unwrap();
    Schema::new(&text, version).unwrap()
}

fn problems(s: &Schema, frame: &str, method: Option<&str>) -> Vec<(String, String)> {
    let mut tape = Tape::default();
    s.validate(frame.as_bytes(), method, &mut tape)
        .unwrap()
        .into_iter()
        .map(|p| (render(&p.path), p.message))
        .collect()
}

#[test]
fn every_shipped_schema_compiles() {
    for version in [1, 2] {
        for unstable in [false, true] {
            let s = schema(version, unstable);
            assert!(s.has_method("session/prompt"), "v{version}");
        }
    }
}

#[test]
fn valid_messages_have_no_problems() {
    let s = schema(1, false);
    for frame in [
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"Read","kind":"read","status":"pending"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#,
        r#"{"jsonrpc":"2.0","method":"_x/y","params":[1]}"#,
    ] {
        assert_eq!(problems(&s, frame, None), Vec::<(String, String)>::new(), "{frame}");
    }
}

#[test]
fn problems_have_paths_and_say_what_was_expected() {
    let s = schema(1, false);
    let tool = |fields: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"tool_call","toolCallId":"t",{fields}}}}}}}"#
        )
    };
    assert_eq!(
        problems(&s, &tool(r#""title":"x","status":"done""#), None),
        [(
            "params.update.status".to_owned(),
            r#"expected "params.update.status" to be one of "pending", "in_progress", "completed", "failed", found string "done""#.to_owned()
        )]
    );
    assert_eq!(
        problems(&s, &tool(r#""kind":"read""#), None),
        [(
            "params.update.title".to_owned(),
            r#"expected "params.update.title" (required by ToolCall), found none"#.to_owned()
        )]
    );
    assert_eq!(
        problems(&s, r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"nope"}}}"#, None),
        [(
            "params.update.sessionUpdate".to_owned(),
            r#"expected "params.update.sessionUpdate" to be one of "user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan", "plan_update", "plan_removed", "available_commands_update", "current_mode_update", "config_option_update", "session_info_update", "usage_update", "notice", "compaction_update", "compaction_summary_chunk", "subagent_update", "session_message", "session_message_chunk", found string "nope""#.to_owned()
        )]
    );
    assert_eq!(
        problems(&s, r#"{"jsonrpc":"1.0","id":true,"method":"session/prompt"}"#, None),
        [
            (
                "params".to_owned(),
                r#"expected "params" (required by the request session/prompt), found none"#.to_owned()
            ),
            (
                "jsonrpc".to_owned(),
                r#"expected "jsonrpc" to be "2.0", found string "1.0""#.to_owned()
            ),
            (
                "id".to_owned(),
                r#"expected "id" to be string or integer or null, found true"#.to_owned()
            ),
        ]
    );
    assert_eq!(
        problems(&s, r#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#, None),
        [(
            "method".to_owned(),
            r#"expected "method" to be a protocol v1 method or an extension method starting with "_", found string "nope""#.to_owned()
        )]
    );
    assert_eq!(
        problems(&s, r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":7}}"#, Some("session/prompt")),
        [("result.stopReason".to_owned(), r#"expected "result.stopReason" to be one of "end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", found number 7"#.to_owned())]
    );
    assert_eq!(
        problems(&s, "[]", None)[0].1,
        "expected the message to hold at least 1 item (a batch), found 0"
    );
    assert_eq!(
        problems(&schema(2, false), "[]", None)[0].1,
        "expected the message to be an object (batches exist in protocol v1 only), found array"
    );
}

#[test]
fn v2_custom_values_need_an_underscore() {
    let s = schema(2, false);
    let tool = |kind: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"tool_call_update","toolCallId":"t","messageId":null,"kind":"{kind}"}}}}}}"#
        )
    };
    let mut tape = Tape::default();
    let found = s.validate(tool("_mine").as_bytes(), None, &mut tape).unwrap();
    assert!(found.is_empty(), "{found:?}");
    let found = s.validate(tool("mine").as_bytes(), None, &mut tape).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (render(&found[0].path), found[0].rule),
        ("params.update.kind".to_owned(), CUSTOM_VALUE_PREFIX)
    );
}

#[test]
fn conversation_rules() {
    let s = schema(1, false);
    let mut conv = Conversation::new();
    let mut tape = Tape::default();
    let resp = r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#;
    let found = conv.check(&s, resp.as_bytes(), Some("agent"), &mut tape).unwrap();
    assert_eq!(found.iter().map(|p| p.rule).collect::<Vec<_>>(), [UNEXPECTED_RESPONSE]);
    let req = r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#;
    assert!(conv
        .check(&s, req.as_bytes(), Some("client"), &mut tape)
        .unwrap()
        .is_empty());
    let bad = r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":1}}"#;
    let found = conv.check(&s, bad.as_bytes(), Some("agent"), &mut tape).unwrap();
    assert_eq!(render(&found[0].path), "result.stopReason");
    let update = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t"}}}"#;
    let found = conv.check(&s, update.as_bytes(), Some("agent"), &mut tape).unwrap();
    assert_eq!(
        (found.len(), found[0].rule, found[0].severity),
        (1, TOOL_CALL_TITLE, Severity::Warning)
    );
    assert!(conv
        .check(&s, update.as_bytes(), Some("agent"), &mut tape)
        .unwrap()
        .is_empty());
}

fn request(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s","prompt":[]}}}}"#)
}

fn response(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"stopReason":"end_turn"}}}}"#)
}

fn tool_update(id: usize, title: bool) -> String {
    let title = if title { r#","title":"t""# } else { "" };
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"tool_call_update","toolCallId":"t{id}"{title}}}}}}}"#
    )
}

#[test]
fn conversation_forgets_the_oldest_pending_requests() {
    let s = schema(1, false);
    let mut conv = Conversation::with_limits(3, 10);
    let mut tape = Tape::default();
    let mut check = |conv: &mut Conversation, frame: String, sender: &str| {
        conv.check(&s, frame.as_bytes(), Some(sender), &mut tape).unwrap()
    };
    for id in 0..10 {
        assert!(check(&mut conv, request(id), "client").is_empty());
        assert_eq!(conv.sizes().0, (id + 1).min(3));
    }
    assert_eq!(conv.sizes(), (3, 0, 7));
    // Kept: answered as before, against the method's result.
    assert!(check(&mut conv, response(9), "agent").is_empty());
    let bad = r#"{"jsonrpc":"2.0","id":8,"result":{"stopReason":1}}"#.to_owned();
    let found = check(&mut conv, bad, "agent");
    assert_eq!(
        found.iter().map(|p| (render(&p.path), p.rule)).collect::<Vec<_>>(),
        [("result.stopReason".to_owned(), "schema")]
    );
    // Forgotten: a warning, not an error.
    let found = check(&mut conv, response(0), "agent");
    assert_eq!(
        found.iter().map(|p| (p.rule, p.severity)).collect::<Vec<_>>(),
        [(UNEXPECTED_RESPONSE, Severity::Warning)]
    );
    assert!(found[0]
        .message
        .ends_with("(no such request pending; 7 older requests were forgotten, it may answer one of them)"));
    // Still checked against the schema (any result).
    let found = check(&mut conv, r#"{"jsonrpc":"2.0","id":1}"#.to_owned(), "agent");
    assert!(found.iter().any(|p| p.severity == Severity::Error), "{found:?}");
}

#[test]
fn conversation_without_eviction_still_refuses_unknown_responses() {
    let s = schema(1, false);
    let mut conv = Conversation::with_limits(3, 10);
    let mut tape = Tape::default();
    for id in 0..3 {
        conv.check(&s, request(id).as_bytes(), Some("client"), &mut tape)
            .unwrap();
    }
    let found = conv
        .check(&s, response(7).as_bytes(), Some("agent"), &mut tape)
        .unwrap();
    assert_eq!(
        found.iter().map(|p| (p.rule, p.severity)).collect::<Vec<_>>(),
        [(UNEXPECTED_RESPONSE, Severity::Error)]
    );
    assert!(found[0].message.ends_with("(no such request pending)"));
    assert_eq!(conv.sizes(), (3, 0, 0));
}

#[test]
fn conversation_answered_requests_leave_a_short_queue() {
    let s = schema(1, false);
    let mut conv = Conversation::with_limits(100, 10);
    let mut tape = Tape::default();
    // One request kept pending throughout, thousands answered around it.
    conv.check(&s, request(0).as_bytes(), Some("client"), &mut tape)
        .unwrap();
    for id in 1..5000 {
        assert!(conv
            .check(&s, request(id).as_bytes(), Some("client"), &mut tape)
            .unwrap()
            .is_empty());
        assert!(conv
            .check(&s, response(id).as_bytes(), Some("agent"), &mut tape)
            .unwrap()
            .is_empty());
        // At most 2 ids pending at a push: the queue stays within 2 * 2 + 32 + 1.
        assert!(conv.queued().0 <= 37, "{:?}", conv.queued());
    }
    assert_eq!(conv.sizes(), (1, 0, 0));
    // The same id pending again after an answer is the newest, not the oldest.
    let mut conv2 = Conversation::with_limits(2, 10);
    for id in [1, 2] {
        conv2
            .check(&s, request(id).as_bytes(), Some("client"), &mut tape)
            .unwrap();
    }
    conv2
        .check(&s, response(1).as_bytes(), Some("agent"), &mut tape)
        .unwrap();
    conv2
        .check(&s, request(1).as_bytes(), Some("client"), &mut tape)
        .unwrap();
    conv2
        .check(&s, request(3).as_bytes(), Some("client"), &mut tape)
        .unwrap();
    assert_eq!(conv2.sizes(), (2, 0, 1));
    assert!(conv2
        .check(&s, response(1).as_bytes(), Some("agent"), &mut tape)
        .unwrap()
        .is_empty());
    assert!(conv2
        .check(&s, response(3).as_bytes(), Some("agent"), &mut tape)
        .unwrap()
        .is_empty());
}

#[test]
fn conversation_forgets_the_oldest_tool_calls() {
    let s = schema(1, false);
    let mut conv = Conversation::with_limits(10, 3);
    let mut tape = Tape::default();
    let mut warned = |conv: &mut Conversation, id: usize, title: bool| {
        let found = conv
            .check(&s, tool_update(id, title).as_bytes(), Some("agent"), &mut tape)
            .unwrap();
        assert!(found
            .iter()
            .all(|p| p.rule == TOOL_CALL_TITLE && p.severity == Severity::Warning));
        !found.is_empty()
    };
    for id in 0..10 {
        assert!(warned(&mut conv, id, false));
        assert!(!warned(&mut conv, id, false));
        assert_eq!(conv.sizes().1, (id + 1).min(3));
        assert_eq!(conv.queued().1, (id + 1).min(3));
    }
    // Remembered: no second warning; forgotten: warned again (the documented consequence).
    assert!(!warned(&mut conv, 9, false));
    assert!(warned(&mut conv, 0, false));
    assert!(!warned(&mut conv, 1, true));
    assert_eq!(conv.sizes(), (0, 3, 0));
}

/// `cargo test --release --lib schema::tests::speed -- --ignored --nocapture` with a corpus of
/// `method<TAB>where<TAB>frame` lines in $SCHEMA_CORPUS (a measuring aid, not a test).
#[test]
#[ignore]
fn speed() {
    let Ok(path) = std::env::var("SCHEMA_CORPUS") else {
        return;
    };
    let version = if path.contains("v2") { 2 } else { 1 };
    let s = schema(version, false);
    let text = std::fs::read_to_string(path).unwrap();
    let rows: Vec<(&str, &str)> = text
        .lines()
        .map(|l| {
            let mut it = l.splitn(3, '\t');
            let m = it.next().unwrap();
            it.next();
            (m, it.next().unwrap())
        })
        .collect();
    let mut tape = Tape::default();
    for _ in 0..5 {
        let t = std::time::Instant::now();
        let mut bad = 0;
        for (m, f) in &rows {
            let hint = if m.is_empty() { None } else { Some(*m) };
            bad += s.validate(f.as_bytes(), hint, &mut tape).unwrap().len();
        }
        let e = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        for (_, f) in &rows {
            tape.read(f.as_bytes()).unwrap();
        }
        let e2 = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        for (_, f) in &rows {
            crate::scanner::validate(f.as_bytes()).unwrap();
        }
        let e3 = t.elapsed().as_secs_f64();
        let n = rows.len() as f64;
        println!(
            "{:.0} msgs/s, {bad} problems; tape only {:.0}/s; scan only {:.0}/s",
            n / e,
            n / e2,
            n / e3
        );
    }
}

/// The stream check follows the negotiation: the `initialize` answer is checked against the
/// version of its request (v1), the frames after it against v2.
#[test]
fn the_stream_check_follows_the_initialize_answer() {
    let schemas: [&'static Schema; 2] = [
        Box::leak(Box::new(schema(1, false))),
        Box::leak(Box::new(schema(2, false))),
    ];
    let mut strict = Strict::new(None, schemas);
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2}}"#;
    assert_eq!(strict.check(request.as_bytes(), None, Some("client")), Verdict::Valid);
    assert_eq!(strict.version(), 1);
    let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":2}}"#;
    assert_eq!(strict.check(answer.as_bytes(), None, Some("agent")), Verdict::Valid);
    assert_eq!(strict.version(), 2);
    // checked against v2 now: a custom kind needs "_"
    let update = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","kind":"mine"}}}"#;
    match strict.check(update.as_bytes(), None, Some("agent")) {
        Verdict::Frame(problems) => assert_eq!(problems[0].rule, CUSTOM_VALUE_PREFIX),
        other => panic!("{other:?}"),
    }
    // a fixed version never follows
    let mut fixed = Strict::new(Some(1), schemas);
    fixed.check(request.as_bytes(), None, Some("client"));
    fixed.check(answer.as_bytes(), None, Some("agent"));
    assert_eq!(fixed.version(), 1);
}

/// The stream check stops a message at its `MAX_PROBLEMS + 1`th error: the first problems are
/// those of the full check, then the `problem-limit` marker; `validate` lists every problem.
#[test]
fn the_stream_check_stops_at_the_problem_limit() {
    let schemas: [&'static Schema; 2] = [
        Box::leak(Box::new(schema(1, false))),
        Box::leak(Box::new(schema(2, false))),
    ];
    let frame = |n: usize| {
        let items: Vec<String> = (0..n).map(|i| format!(r#"{{"type":"bogus{i}"}}"#)).collect();
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","content":[{}]}}}}}}"#,
            items.join(",")
        )
    };
    let huge = frame(5 * MAX_PROBLEMS);
    let full = schemas[0]
        .validate(huge.as_bytes(), None, &mut Tape::default())
        .unwrap();
    assert_eq!(full.len(), 5 * MAX_PROBLEMS);
    let Verdict::Frame(found) = Strict::new(Some(1), schemas).check(huge.as_bytes(), None, None) else {
        panic!("expected a refusal")
    };
    assert_eq!(found[..MAX_PROBLEMS], full[..MAX_PROBLEMS]);
    assert_eq!(found.len(), MAX_PROBLEMS + 1);
    assert_eq!(found[MAX_PROBLEMS].rule, PROBLEM_LIMIT);
    assert!(stream::message(&found).ends_with(&format!("(and at least {MAX_PROBLEMS} more)")));
    // exactly the limit: every problem counted
    let exact = frame(MAX_PROBLEMS);
    let Verdict::Frame(found) = Strict::new(Some(1), schemas).check(exact.as_bytes(), None, None) else {
        panic!("expected a refusal")
    };
    assert_eq!(found.len(), MAX_PROBLEMS);
    assert!(stream::message(&found).ends_with(&format!("(and {} more)", MAX_PROBLEMS - 1)));
}
