//! How fast can each JSON crate validate a corpus of ACP frames, line by line?
//! `cargo bench --bench json_machinery -- FILE...` (release build). Used to choose the JSON
//! machinery of the core; results in benches/RESULTS.md.
use std::time::Instant;

fn time(lines: &[&[u8]], bytes: usize, name: &str, mut f: impl FnMut(&[u8]) -> bool) {
    let mut best = f64::MAX;
    for _ in 0..11 {
        let t = Instant::now();
        let mut ok = 0usize;
        for l in lines {
            ok += usize::from(std::hint::black_box(f(l)));
        }
        assert_eq!(ok, lines.len(), "{name} rejected a frame");
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "  {name:38} {:9.1} ns/frame {:8.0} MB/s",
        best * 1e9 / lines.len() as f64,
        bytes as f64 / best / 1e6
    );
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    for path in files {
        let data = std::fs::read(&path).expect("read corpus");
        let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
        let bytes: usize = lines.iter().map(|l| l.len()).sum();
        println!(
            "{path}: {} frames, {:.0} B/frame",
            lines.len(),
            bytes as f64 / lines.len() as f64
        );
        time(&lines, bytes, "acp-fast parse_line (validate+envelope)", |l| {
            _native::message::parse_line(l).is_ok()
        });
        time(&lines, bytes, "acp-fast scanner::validate", |l| {
            _native::scanner::validate(l).is_ok()
        });
        time(&lines, bytes, "serde_json IgnoredAny", |l| {
            serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok()
        });
        time(&lines, bytes, "serde_json Value", |l| {
            serde_json::from_slice::<serde_json::Value>(l).is_ok()
        });
        let mut scratch = Vec::new();
        time(&lines, bytes, "simd-json tape (copy + to_tape)", |l| {
            scratch.clear();
            scratch.extend_from_slice(l);
            simd_json::to_tape(&mut scratch).is_ok()
        });
        time(&lines, bytes, "sonic-rs IgnoredAny", |l| {
            sonic_rs::from_slice::<serde::de::IgnoredAny>(l).is_ok()
        });
        time(&lines, bytes, "jiter next_skip", |l| {
            let mut j = jiter::Jiter::new(l);
            j.next_skip().is_ok() && j.finish().is_ok()
        });
    }
}
