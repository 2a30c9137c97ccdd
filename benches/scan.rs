//! Core throughput without Python: `cargo bench --bench scan -- FILE`.
//! Frames/s and MB/s of `parse_frame` (validate + locate fields) and of `scanner::validate`.
use std::time::Instant;

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/mixed.ndjson".to_owned());
    let data = std::fs::read(&path).expect("read corpus");
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    for (name, f) in [
        (
            "parse_frame",
            (|l: &[u8]| _native::message::parse_line(l).is_ok()) as fn(&[u8]) -> bool,
        ),
        ("validate", |l: &[u8]| _native::scanner::validate(l).is_ok()),
        ("check_utf8", |l: &[u8]| _native::scanner::check_utf8(l).is_ok()),
    ] {
        let mut best = f64::MAX;
        for _ in 0..15 {
            let t = Instant::now();
            let mut ok = 0usize;
            for l in &lines {
                ok += usize::from(std::hint::black_box(f(l)));
            }
            assert_eq!(ok, lines.len());
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{name:12} {:8.1} ns/frame {:8.1} MB/s",
            best * 1e9 / lines.len() as f64,
            data.len() as f64 / best / 1e6
        );
    }
    // UTF-8 of the whole buffer in one call (what a per-feed check would cost per frame).
    let mut best = f64::MAX;
    for _ in 0..15 {
        let t = Instant::now();
        assert!(std::hint::black_box(_native::scanner::check_utf8(&data)).is_ok());
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{:12} {:8.1} ns/frame {:8.1} MB/s",
        "utf8 buffer",
        best * 1e9 / lines.len() as f64,
        data.len() as f64 / best / 1e6
    );
}
