//! `present` / `absent` (reference: `TextPresenceTest`, docs/checks.md §3.1).
//!
//! What it checks: whether the test's text (normalized at load time) occurs, fuzzily, in the
//! normalized page, optionally case-insensitively and within the first/last N code points.
//! Passes when: `partial_ratio(text, page) / 100 >= 1 - max_diffs / len(text)` for `present`,
//! and when that does not hold for `absent`.
//! With allenai/olmocr PR #462's rule on (`Guard::short_output`; not in the published benchmark,
//! on by default in training rewards only, §3.1.1): first, when the page as compared (normalized,
//! lowercased if case-insensitive, cut to `first_n`/`last_n`) has fewer code points than
//! `len(text) - max_diffs` (`text` lowercased if case-insensitive), `present` fails ("Candidate too
//! short ...") and `absent` passes, whatever `partial_ratio` says. A failure there earns no
//! partial credit (graded reward 0).
//! Differences from upstream: none (either rule set). A `first_n`/`last_n` that Python cannot
//! slice with (a float, a string, ...) gives an error verdict where the reference raises
//! `TypeError`, before the guard as there.
//!
//! How: the query (lowercased when case-insensitive) is compiled once at load time; the
//! search over a whole page uses the page's shared character index (the same scores, found
//! from the positions of rare query characters). The guard is one length comparison.

use super::{threshold, Guard, Page, Verdict};
use crate::fuzz::min_score_for_threshold;
use crate::suite::{Kind, SliceArg, Spec, Test};
use crate::text::{prefix, py_fixed, py_float_repr, py_slice};

const SLICE_ERROR: &str = "TypeError: slice indices must be integers or None or have an __index__ method";

pub fn check(test: &Test, page: &Page, guard: Guard) -> Verdict {
    let Spec::Presence { case_sensitive, first_n, last_n, query: needle, .. } = &test.spec else {
        unreachable!("presence::check called on another type")
    };
    let query = needle.needle();
    let content = if *case_sensitive { page.normalized() } else { page.normalized_lower() };
    let joined;
    // The character index applies to the whole page only.
    let (window, index): (&[char], _) = match (first_n, last_n) {
        (SliceArg::Off, SliceArg::Off) => {
            let index = if *case_sensitive { page.normalized_index() } else { page.normalized_lower_index() };
            (content, index)
        }
        (SliceArg::Invalid(_), _) | (_, SliceArg::Invalid(_)) => {
            return Verdict::error(SLICE_ERROR.into());
        }
        (SliceArg::At(f), SliceArg::At(l)) => {
            joined = [py_slice(content, None, Some(*f)), py_slice(content, Some(l.saturating_neg()), None)].concat();
            (&joined, None)
        }
        (SliceArg::At(f), SliceArg::Off) => (py_slice(content, None, Some(*f)), None),
        (SliceArg::Off, SliceArg::At(l)) => (py_slice(content, Some(l.saturating_neg()), None), None),
    };
    let present = test.kind == Kind::Present;
    if guard.short_output() {
        if let Some(verdict) = short_output(test, query, window.len(), present) {
            return verdict;
        }
    }
    let thr = threshold(test.max_diffs, query.len());
    // Decide with an early-exit search; the exact best score is only needed for a message
    // (and a failed `present` test's partial credit).
    let min_score = min_score_for_threshold(thr);
    let best = if present {
        // Usually present when it passes; when not, one pass also gives the exact score.
        match needle.decide_in(window, index, min_score) {
            Ok(()) => return Verdict::pass(),
            Err(score) => score / 100.0,
        }
    } else {
        // Windows below the threshold are not evaluated; above it, the exact score.
        match needle.score_if_at_least_in(window, index, min_score) {
            None => return Verdict::pass(),
            Some(score) => score / 100.0,
        }
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

/// PR #462's guard: `len(page) < len(query) - max_diffs` (Python ints, so never true once
/// `max_diffs >= len(query)`) decides the test: `present` fails with PR #462's message, `absent`
/// passes. None when the page is long enough and the fuzzy comparison decides.
fn short_output(test: &Test, query: &[char], page_len: usize, present: bool) -> Option<Verdict> {
    let needed = (query.len() as u128).checked_sub(test.max_diffs)?;
    if page_len as u128 >= needed {
        return None;
    }
    Some(if present {
        Verdict::fail(format!(
            "Candidate too short ({page_len} chars) to plausibly contain '{}...' (need >= {needed} chars)",
            prefix(query, 40)
        ))
    } else {
        Verdict::pass()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::partial_ratio;
    use crate::suite::parse_record;
    use crate::text::{chars, py_lower, string};

    /// The check as the definition reads, with nothing compiled ahead or indexed: a fresh
    /// `partial_ratio` on the (sliced) normalized page, after PR #462's length test when guarded.
    fn plain(test: &Test, page: &Page, guard: Guard) -> Verdict {
        let Spec::Presence { text, case_sensitive, first_n, last_n, .. } = &test.spec else { unreachable!() };
        let (query, content) = if *case_sensitive {
            (text.clone(), page.normalized().to_vec())
        } else {
            (py_lower(text), page.normalized_lower().to_vec())
        };
        let window: Vec<char> = match (first_n, last_n) {
            (SliceArg::Off, SliceArg::Off) => content,
            (SliceArg::Invalid(_), _) | (_, SliceArg::Invalid(_)) => return Verdict::error(SLICE_ERROR.into()),
            (SliceArg::At(f), SliceArg::At(l)) => {
                [py_slice(&content, None, Some(*f)), py_slice(&content, Some(-*l), None)].concat()
            }
            (SliceArg::At(f), SliceArg::Off) => py_slice(&content, None, Some(*f)).to_vec(),
            (SliceArg::Off, SliceArg::At(l)) => py_slice(&content, Some(-*l), None).to_vec(),
        };
        let present = test.kind == Kind::Present;
        let min_required = query.len() as i128 - test.max_diffs.min(1 << 100) as i128;
        if guard.short_output() && (window.len() as i128) < min_required {
            if !present {
                return Verdict::pass();
            }
            return Verdict::fail(format!(
                "Candidate too short ({} chars) to plausibly contain '{}...' (need >= {min_required} chars)",
                window.len(),
                prefix(&query, 40)
            ));
        }
        let thr = threshold(test.max_diffs, query.len());
        let best = partial_ratio(&query, &window) / 100.0;
        if (best >= thr) == present {
            return Verdict::pass();
        }
        let absence = if present { "" } else { "absence of " };
        let v = Verdict::fail(format!(
            "Expected {absence}'{}...' with threshold {} but best match ratio was {}",
            prefix(&query, 40),
            py_float_repr(thr),
            py_fixed(best, 3)
        ));
        if present {
            v.with_partial_credit(best, thr)
        } else {
            v
        }
    }

    /// The compiled-once query and the page's character index give the plain verdicts.
    #[test]
    fn compiled_and_indexed_verdicts_equal_plain_ones() {
        let rng = std::cell::RefCell::new(crate::test_rng::XorShift(0x5eed_cafe_u64));
        let below = |n: usize| rng.borrow_mut().below(n);
        let alphabets = ["ab ", "abcAB d", "the Quick brown FOX, jumps", "aéΣσς€ ", "x**y_ <b>z</b>"];
        let mut passed = [0usize; 2];
        let mut guarded = [0usize; 2];
        for it in 0..400 {
            let alpha: Vec<char> = chars(alphabets[it % alphabets.len()]);
            let pick = |len: usize| -> Vec<char> { (0..len).map(|_| alpha[below(alpha.len())]).collect() };
            let page_raw = pick(if it % 5 == 0 { below(30) } else { below(300) });
            let mut query = pick(1 + below(25));
            if it % 2 == 0 && page_raw.len() > 30 {
                // A (possibly damaged) piece of the page itself.
                let a = below(page_raw.len() - 20);
                query = page_raw[a..a + 1 + below(19)].to_vec();
                if it % 4 == 0 {
                    let j = below(query.len());
                    query[j] = 'é';
                }
            }
            if py_lower(&query).iter().all(|c| c.is_whitespace() || "*_".contains(*c)) {
                continue;
            }
            let kind = if it % 3 == 0 { "absent" } else { "present" };
            let extra = match it % 6 {
                0 => ", \"first_n\": 40".to_string(),
                1 => ", \"last_n\": 35, \"first_n\": 12".to_string(),
                2 => ", \"last_n\": 50".to_string(),
                _ => String::new(),
            };
            let record = format!(
                "{{\"pdf\":\"a\",\"page\":1,\"id\":\"t\",\"type\":\"{kind}\",\"text\":{:?},\"max_diffs\":{},\"case_sensitive\":{}{extra}}}",
                string(&query),
                below(4),
                it % 4 != 1
            );
            let Ok(test) = parse_record(&record, "t", 1) else { continue };
            let page = Page::new(&page_raw);
            for guard in [Guard::None, Guard::ShortOutput] {
                let got = check(&test, &page, guard);
                assert_eq!(got, plain(&test, &page, guard), "{record} on {:?} ({guard:?})", string(&page_raw));
                passed[usize::from(got.passed)] += 1;
                guarded[usize::from(got.explanation.starts_with("Candidate too short"))] += 1;
            }
        }
        assert!(passed[0] > 50 && passed[1] > 50, "{passed:?}");
        assert!(guarded[1] > 20, "the guard decided only {} checks", guarded[1]);
    }

    /// `case_sensitive` defaults to true: a record without it compares case; `false` lowercases
    /// both sides (with Python's rules: `İ` lowercases to two code points).
    #[test]
    fn case_sensitive_by_default() {
        let load = |kind: &str, extra: &str| {
            parse_record(
                &format!(r#"{{"pdf":"a","page":1,"id":"t","type":"{kind}","text":"Alpha Beta"{extra}}}"#),
                "t",
                1,
            )
            .unwrap()
        };
        let raw = chars("the alpha beta test");
        let page = Page::new(&raw);
        for (extra, present_passes) in
            [("", false), (r#","case_sensitive":true"#, false), (r#","case_sensitive":false"#, true)]
        {
            assert_eq!(check(&load("present", extra), &page, Guard::None).passed, present_passes, "present{extra}");
            assert_eq!(check(&load("absent", extra), &page, Guard::None).passed, !present_passes, "absent{extra}");
        }
        let dotted = parse_record(
            r#"{"pdf":"a","page":1,"id":"t","type":"present","text":"İstanbul","case_sensitive":false}"#,
            "t",
            1,
        )
        .unwrap();
        assert!(check(&dotted, &Page::new(&chars("İSTANBUL")), Guard::None).passed);
        assert!(!check(&dotted, &Page::new(&chars("istanbul")), Guard::None).passed, "i̇ (two code points) is not i");
    }

    /// The guard's boundary, by hand: "abcdef" (6 code points) with max_diffs 2 needs a page of
    /// at least 4 code points; below that `present` fails with PR #462's message (and no credit)
    /// and `absent` passes, above it the fuzzy comparison decides as without the guard.
    #[test]
    fn short_output_guard_boundary() {
        let load = |kind: &str, extra: &str| {
            parse_record(
                &format!(r#"{{"pdf":"a","page":1,"id":"t","type":"{kind}","text":"abcdef","max_diffs":2{extra}}}"#),
                "t",
                1,
            )
            .unwrap()
        };
        let (present, absent) = (load("present", ""), load("absent", ""));
        let run_on = |test: &Test, page: &str, guard| check(test, &Page::new(&chars(page)), guard);
        // " x d" (4 code points after normalizing "\n x  d"): long enough, so the published
        // verdicts stand; "cde" (3): too short.
        for page in ["\n x  d", "abcd"] {
            for test in [&present, &absent] {
                assert_eq!(run_on(test, page, Guard::ShortOutput), run_on(test, page, Guard::None), "{page:?}");
            }
        }
        let short = run_on(&present, "cde", Guard::ShortOutput);
        assert!(!short.passed && short.credit == 0.0);
        assert_eq!(
            short.explanation,
            "Candidate too short (3 chars) to plausibly contain 'abcdef...' (need >= 4 chars)"
        );
        assert!(run_on(&present, "cde", Guard::None).passed, "published semantics: the roles swap");
        assert!(run_on(&absent, "cde", Guard::ShortOutput).passed);
        assert!(!run_on(&absent, "cde", Guard::None).passed);
        // first_n cuts before the guard measures: 3 code points of a long page are too short.
        let cut = load("present", r#","first_n":3"#);
        assert!(!run_on(&cut, "abcdef and more", Guard::ShortOutput).passed);
        assert!(run_on(&cut, "abcdef and more", Guard::None).passed);
        // max_diffs >= len(text): the requirement is <= 0 and never triggers.
        let lax = parse_record(r#"{"pdf":"a","page":1,"id":"t","type":"present","text":"ab","max_diffs":2}"#, "t", 1)
            .unwrap();
        assert!(run_on(&lax, "", Guard::ShortOutput).passed);
    }
}
