//! `order` (reference: `TextOrderTest`, spec §3.2).
//!
//! What it checks: that `before` occurs before `after` in the normalized page, each found with
//! fuzzysearch's `find_near_matches` (Levenshtein distance ≤ max_diffs).
//! Passes when: some match of `before` starts strictly before some match of `after`.
//! Differences from upstream: where fuzzysearch's choice among equally good matches depends on
//! Python's hash seed, `search.rs` picks deterministically (see there), so on those rare inputs
//! the reference itself gives different verdicts from run to run.

use super::{Page, Verdict};
use crate::search::find_near_matches_indexed;
use crate::suite::Test;
use crate::text::prefix;

pub fn check(test: &Test, before: &[char], after: &[char], page: &Page) -> Verdict {
    let content = page.normalized();
    let k = usize::try_from(test.max_diffs).unwrap_or(usize::MAX);
    let max_diffs = &test.max_diffs_text;
    let index = page.normalized_index();
    let b = find_near_matches_indexed(before, content, k, index);
    if b.is_empty() {
        return Verdict::fail(format!(
            "'before' text '{}...' not found with max_l_dist {max_diffs}",
            prefix(before, 40)
        ));
    }
    let a = find_near_matches_indexed(after, content, k, index);
    if a.is_empty() {
        return Verdict::fail(format!(
            "'after' text '{}...' not found with max_l_dist {max_diffs}",
            prefix(after, 40)
        ));
    }
    let first_before = b.iter().map(|m| m.start).min().unwrap_or(usize::MAX);
    let last_after = a.iter().map(|m| m.start).max().unwrap_or(0);
    if first_before < last_after {
        Verdict::pass()
    } else {
        Verdict::fail(format!(
            "Could not find a location where '{}...' appears before '{}...'.",
            prefix(before, 40),
            prefix(after, 40)
        ))
    }
}
