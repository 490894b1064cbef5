//! `present` / `absent` (reference: `TextPresenceTest`, spec §3.1).
//!
//! What it checks: whether the test's text (normalized at load time) occurs, fuzzily, in the
//! normalized page, optionally case-insensitively and within the first/last N code points.
//! Passes when: `partial_ratio(text, page) / 100 >= 1 - max_diffs / len(text)` for `present`,
//! and when that does not hold for `absent`.
//! Differences from upstream: none. A `first_n`/`last_n` that Python cannot slice with (a float,
//! a string, ...) gives an error verdict where the reference raises `TypeError`.

use super::{threshold, Page, Verdict};
use crate::fuzz::{min_score_for_threshold, PartialRatioNeedle};
use crate::suite::{Kind, SliceArg, Spec, Test};
use crate::text::{prefix, py_fixed, py_float_repr, py_lower, py_slice};

const SLICE_ERROR: &str =
    "TypeError: slice indices must be integers or None or have an __index__ method";

pub fn check(test: &Test, page: &Page) -> Verdict {
    let Spec::Presence { text, case_sensitive, first_n, last_n } = &test.spec else {
        unreachable!("presence::check called on another type")
    };
    let lowered;
    let (query, content) = if *case_sensitive {
        (text.as_slice(), page.normalized())
    } else {
        lowered = py_lower(text);
        (lowered.as_slice(), page.normalized_lower())
    };
    let joined;
    let window: &[char] = match (first_n, last_n) {
        (SliceArg::Off, SliceArg::Off) => content,
        (SliceArg::Invalid(_), _) | (_, SliceArg::Invalid(_)) => {
            return Verdict::error(SLICE_ERROR.into());
        }
        (SliceArg::At(f), SliceArg::At(l)) => {
            joined = [py_slice(content, None, Some(*f)), py_slice(content, Some(l.saturating_neg()), None)]
                .concat();
            &joined
        }
        (SliceArg::At(f), SliceArg::Off) => py_slice(content, None, Some(*f)),
        (SliceArg::Off, SliceArg::At(l)) => py_slice(content, Some(l.saturating_neg()), None),
    };
    let thr = threshold(test.max_diffs, query.len());
    let present = test.kind == Kind::Present;
    // Decide with an early-exit search; the exact best score is only needed for a message
    // (and a failed `present` test's partial credit).
    let needle = PartialRatioNeedle::new(query);
    let min_score = min_score_for_threshold(thr);
    let best = if present {
        // Usually present when it passes; when not, one pass also gives the exact score.
        match needle.decide(window, min_score) {
            Ok(()) => return Verdict::pass(),
            Err(score) => score / 100.0,
        }
    } else {
        if !needle.at_least(window, min_score) {
            return Verdict::pass();
        }
        needle.score(window) / 100.0
    };
    let absence = if present { "" } else { "absence of " };
    let verdict = Verdict::fail(format!(
        "Expected {absence}'{}...' with threshold {} but best match ratio was {}",
        prefix(query, 40),
        py_float_repr(thr),
        py_fixed(best, 3)
    ));
    if present {
        verdict.with_partial_credit(best, thr)
    } else {
        verdict
    }
}
