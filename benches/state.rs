//! State-engine throughput without Python: `cargo bench --bench state -- FILE`.
//! ns/frame of `parse_line` alone, of `parse_line` + `Store::apply` over an NDJSON corpus
//! (`python -m acp_fast.traffic`-style data, e.g. the mixed profile), and of writing and reading
//! back the checkpoint of the resulting store (`checkpoint::to_json` / `from_json`).
//! For profilers: `STATE_BENCH_PASSES=1 STATE_BENCH_ONLY=parse+apply` runs one pass of one part.
use std::time::Instant;

use _native::message::{parse_line, parse_line_captured, Frame};
use _native::state::{checkpoint, Source, Store};

fn load(lines: &[&[u8]]) -> (Store, usize) {
    let mut store = Store::new(None, None);
    let mut changes = 0;
    let mut cap = _native::message::Captured::new();
    for l in lines {
        if let Ok(Frame::Single(env)) = parse_line_captured(l, Some(&mut cap)) {
            let r = store.apply_captured(l, &env, Some(&cap), Source::Unknown);
            changes += usize::from(matches!(r, Ok(Some(_))));
        }
    }
    (store, changes)
}

fn apply_all(lines: &[&[u8]]) -> usize {
    load(lines).1
}

fn parse_all(lines: &[&[u8]]) -> usize {
    lines.iter().filter(|l| parse_line(l).is_ok()).count()
}

fn main() {
    // `cargo bench --bench state -- FILE` (make bench-rust writes /tmp/acp-mixed.ndjson); cargo
    // passes `--bench` itself, which is skipped.
    let path = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_else(|| "/tmp/acp-mixed.ndjson".to_owned());
    let data = match std::fs::read(&path) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("state bench: cannot read the corpus {path}: {e}\nusage: cargo bench --bench state -- FILE.ndjson (make bench-rust writes /tmp/acp-mixed.ndjson)");
            std::process::exit(2);
        }
    };
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    let passes: usize = std::env::var("STATE_BENCH_PASSES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let only = std::env::var("STATE_BENCH_ONLY").ok();
    let (store, _) = load(&lines);
    let options = checkpoint::Options::default();
    let doc = checkpoint::to_json(&store, &options).expect("a checkpoint");
    let to_json = || checkpoint::to_json(&store, &options).map_or(0, |d| d.len());
    let from_json = || checkpoint::from_json(&doc).map_or(0, |(s, _)| s.tool_call_count());
    let parts: [(&str, &dyn Fn() -> usize); 4] = [
        ("parse_line", &|| parse_all(&lines)),
        ("parse+apply", &|| apply_all(&lines)),
        ("to_json", &to_json),
        ("from_json", &from_json),
    ];
    for (name, f) in parts {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let mut best = f64::MAX;
        let mut result = 0;
        for _ in 0..passes {
            let t = Instant::now();
            result = std::hint::black_box(f());
            best = best.min(t.elapsed().as_secs_f64());
        }
        // result: frames parsed, changes, checkpoint bytes, tool calls restored.
        println!(
            "{name:12} {:8.1} ns/frame {:8.1} MB/s  (result {result}; {} frames)",
            best * 1e9 / lines.len() as f64,
            data.len() as f64 / best / 1e6,
            lines.len()
        );
    }
}
