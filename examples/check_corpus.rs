fn main() {
    let path = std::env::args().nth(1).unwrap();
    let data = std::fs::read(&path).unwrap();
    for (i, l) in data.split(|&b| b == b'\n').filter(|l| !l.is_empty()).enumerate() {
        if let Err(e) = _native::scanner::validate(l) {
            let p = e.position.unwrap_or(0);
            let lo = p.saturating_sub(40);
            println!(
                "line {i}: {} at {p}: {:?}",
                e.description,
                String::from_utf8_lossy(&l[lo..(p + 20).min(l.len())])
            );
            break;
        }
    }
}
