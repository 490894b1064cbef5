//! fuzzysearch 0.8.1 `find_near_matches` semantics (spec §3.0.4).

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NearMatch {
    pub start: usize,
    pub end: usize,
    pub dist: usize,
}

/// `find_near_matches(sub, seq, max_l_dist=k)`.
pub fn find_near_matches(sub: &[char], seq: &[char], max_l_dist: usize) -> Vec<NearMatch> {
    let _ = (sub, seq, max_l_dist);
    unimplemented!()
}
