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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::{run, Guard};
    use crate::suite::parse_record;
    use crate::text::chars;

    fn order(before: &str, after: &str, max_diffs: u32) -> Test {
        let record = format!(
            r#"{{"pdf":"a","page":1,"id":"t","type":"order","before":{before:?},"after":{after:?},"max_diffs":{max_diffs}}}"#
        );
        parse_record(&record, "t", 1).unwrap()
    }

    fn verdict(test: &Test, page: &str) -> Verdict {
        run(test, &Page::new(&chars(page)), Guard::None)
    }

    #[test]
    fn before_must_start_before_after() {
        let t = order("Introduction", "Conclusion", 0);
        assert!(verdict(&t, "1 Introduction ... 9 Conclusion").passed);
        let v = verdict(&t, "9 Conclusion ... 1 Introduction");
        assert!(!v.passed);
        assert_eq!(v.explanation, "Could not find a location where 'Introduction...' appears before 'Conclusion...'.");
        // Some pair in order suffices: the first `before` against the last `after`.
        assert!(verdict(&t, "Conclusion Introduction Conclusion").passed);
        // Starts are compared, strictly: a match of `after` inside `before` at a later start counts.
        assert!(verdict(&order("abc", "bc", 0), "abc").passed);
        assert!(!verdict(&order("abc", "abc", 0), "abc").passed, "the same start is not before");
    }

    #[test]
    fn missing_texts_are_named_before_first() {
        let t = order("alpha", "omega", 0);
        let v = verdict(&t, "nothing here");
        assert_eq!(v.explanation, "'before' text 'alpha...' not found with max_l_dist 0");
        let v = verdict(&t, "alpha only");
        assert_eq!(v.explanation, "'after' text 'omega...' not found with max_l_dist 0");
    }

    /// The same text on both sides: one occurrence fails (its start is not before itself), two pass.
    #[test]
    fn same_text_needs_two_occurrences() {
        let t = order("Table 1", "Table 1", 0);
        assert!(!verdict(&t, "see Table 1 here").passed);
        assert!(verdict(&t, "Table 1 and again Table 1").passed);
    }

    /// Levenshtein distance up to max_diffs; the page is normalized but never case-folded.
    #[test]
    fn fuzzy_normalized_and_case_sensitive() {
        let t = order("colour", "finish", 1);
        assert!(verdict(&t, "color first, then finsh").passed, "one edit on each side");
        assert!(!verdict(&order("colour", "finish", 0), "color first, then finsh").passed);
        assert!(!verdict(&order("Alpha", "Omega", 0), "alpha then omega").passed, "no case folding");
        assert!(
            verdict(&order("a b", "c d", 0), "a \n\t b   then   c\n\nd").passed,
            "whitespace runs normalize to one space"
        );
    }
}
