//! `checkpoint::from_json` on any bytes: it never panics, and a document it accepts round-trips:
//! the store it builds has a checkpoint (`to_json`), which restores to a store with the same
//! checkpoint. (`stream` checks the other way round: stores built from traffic.) The dictionary
//! `fuzz/checkpoint.dict` holds the format's member names.
#![no_main]
use libfuzzer_sys::fuzz_target;

use _native::state::checkpoint;

fuzz_target!(|data: &[u8]| {
    let Ok(store) = checkpoint::from_json(data) else {
        return;
    };
    let doc = checkpoint::to_json(&store).expect("a store restored from a checkpoint has one");
    let again = checkpoint::from_json(&doc).expect("a checkpoint restores");
    assert_eq!(
        checkpoint::to_json(&again).ok().as_deref(),
        Some(&doc[..]),
        "checkpoint round trip"
    );
    assert_eq!(again.tool_call_count(), store.tool_call_count(), "tool calls lost");
});
