//! `order` (reference: `TextOrderTest`, docs/checks.md §3.2).
//!
//! What it checks: that `before` occurs before `after` in the normalized page, each found with
//! fuzzysearch's `find_near_matches` (Levenshtein distance ≤ max_diffs).
//! Passes when: some match of `before` starts strictly before some match of `after`, i.e. the
//! smallest start among `before`'s matches is below the greatest start among `after`'s. It fails
//! with "'before' text ... not found" if `before` has no match, else with "'after' text ... not
//! found" if `after` has none, else with "Could not find a location ...".
//!
//! Only those two starts (and whether each list is empty) matter, so the check asks
//! `search::extreme_match` for the first match of `before` and the last match of `after`: the
//! same matches as the first and last elements of the full `find_near_matches` lists, found
//! with an early exit (see there). Verdicts and explanations are the same as with the full lists.
//!
//! Differences from upstream: where fuzzysearch's choice among equally good matches depends on
//! Python's hash seed, `search.rs` picks deterministically (see there), so on those rare inputs
//! the reference itself gives different verdicts from run to run.

use super::{Page, Verdict};
use crate::search::{extreme_match, End};
use crate::suite::Test;
use crate::text::prefix;

pub fn check(test: &Test, before: &[char], after: &[char], page: &Page) -> Verdict {
    let content = page.normalized();
    let k = usize::try_from(test.max_diffs).unwrap_or(usize::MAX);
    let max_diffs = &test.max_diffs_text;
    let index = page.normalized_index();
    let Some(first_before) = extreme_match(before, content, k, End::First, index) else {
        return Verdict::fail(format!(
            "'before' text '{}...' not found with max_l_dist {max_diffs}",
            prefix(before, 40)
        ));
    };
    let Some(last_after) = extreme_match(after, content, k, End::Last, index) else {
        return Verdict::fail(format!("'after' text '{}...' not found with max_l_dist {max_diffs}", prefix(after, 40)));
    };
    if first_before.start < last_after.start {
        Verdict::pass()
    } else {
        Verdict::fail(format!(
            "Could not find a location where '{}...' appears before '{}...'.",
            prefix(before, 40),
            prefix(after, 40)
        ))
    }
}
