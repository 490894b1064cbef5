//! RapidFuzz-compatible `ratio` and `partial_ratio` over code points (spec §3.0.1–3.0.3).

/// `fuzz.ratio(a, b)`: normalized Indel similarity ×100.
pub fn ratio(a: &[char], b: &[char]) -> f64 {
    let _ = (a, b);
    unimplemented!()
}

/// `fuzz.partial_ratio(a, b)` (RapidFuzz ≥ 2.13 semantics).
pub fn partial_ratio(a: &[char], b: &[char]) -> f64 {
    let _ = (a, b);
    unimplemented!()
}
