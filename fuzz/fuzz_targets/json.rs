//! The strict JSON validator against serde_json (also RFC 8259-strict) on any bytes: both must
//! accept and reject the same documents, except where the two differ by design — serde_json
//! stops at 128 levels of nesting (acp-fast at 1024) and rejects numbers beyond the range of
//! f64 (JSON has no such limit; acp-fast keeps them, byte-exact).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let ours = _native::scanner::validate(data);
    let theirs = serde_json::from_slice::<serde_json::Value>(data);
    match (&ours, &theirs) {
        (Ok(()), Err(e)) => {
            let e = e.to_string();
            assert!(
                e.contains("recursion limit") || e.contains("number out of range"),
                "acp-fast accepts what serde_json rejects: {e}: {:?}",
                String::from_utf8_lossy(data)
            );
        }
        (Err(e), Ok(_)) => panic!(
            "acp-fast rejects what serde_json accepts: {e:?}: {:?}",
            String::from_utf8_lossy(data)
        ),
        _ => {}
    }
    if let Err(e) = &ours {
        assert!(
            e.position.is_none_or(|p| p <= data.len()),
            "error position past the end"
        );
    }
});
