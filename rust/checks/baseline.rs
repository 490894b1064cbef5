//! `baseline` (reference: `BaselineTest` and `RepeatDetector`, docs/checks.md §3.4 and §6).
//!
//! What it checks: basic output quality on the raw page: not blank, not ending in a long run of
//! a repeated 1..5-gram, and free of CJK ideographs, kana and some emoji blocks. With
//! `max_length` set it is a blank-page check instead and nothing else is looked at.
//! Passes when: blank-page mode: at most `max_length` alphanumeric code points (Python
//! `isalnum`), optionally not counting markdown images `![..](..)`; otherwise: at least one
//! alphanumeric code point, no final n-gram repeated more than `max_repeats` times back to back,
//! and (when `check_disallowed_characters`) no disallowed code point.
//! Differences from upstream: none. A non-numeric `max_length`/`max_repeats` gives an error
//! verdict where the reference raises `TypeError`.

use super::Verdict;
use crate::scan::{next_table, NONE};
use crate::suite::Spec;
use crate::text::{collapse_ws, is_py_alnum, is_py_space, py_str_repr};

pub fn check(spec: &Spec, content: &[char]) -> Verdict {
    let Spec::Baseline { max_length, max_length_skips_image_alt_tags, max_repeats, check_disallowed_characters } = spec
    else {
        unreachable!("baseline::check called on another type")
    };
    let alnum = |s: &[char]| s.iter().filter(|&&c| is_py_alnum(c)).count();
    if let Some(max_length) = max_length {
        let n = if *max_length_skips_image_alt_tags { alnum(&strip_markdown_images(content)) } else { alnum(content) };
        return match max_length.lt(n) {
            Ok(true) => Verdict::fail(format!("{n} characters were output for a page we expected to be blank")),
            Ok(false) => Verdict::pass(),
            Err(e) => Verdict::error(e),
        };
    }
    if !content.iter().any(|&c| is_py_alnum(c)) {
        return Verdict::fail("The text contains no alpha numeric characters".into());
    }
    for (i, count) in ngram_repeats(content).into_iter().enumerate() {
        match max_repeats.lt(count) {
            Ok(true) => return Verdict::fail(format!("Text ends with {count} repeating {}-grams, invalid", i + 1)),
            Ok(false) => {}
            Err(e) => return Verdict::error(e),
        }
    }
    if *check_disallowed_characters {
        let bad: Vec<String> = content.iter().filter(|&&c| disallowed(c)).map(|&c| py_str_repr(&[c])).collect();
        if !bad.is_empty() {
            return Verdict::fail(format!("Text contains disallowed characters [{}]", bad.join(", ")));
        }
    }
    Verdict::pass()
}

/// The code points the reference's character class rejects.
pub fn disallowed(c: char) -> bool {
    matches!(c,
        '\u{4e00}'..='\u{9fff}'
        | '\u{3040}'..='\u{309f}'
        | '\u{30a0}'..='\u{30ff}'
        | '\u{1f600}'..='\u{1f64f}'
        | '\u{1f300}'..='\u{1f5ff}'
        | '\u{1f680}'..='\u{1f6ff}'
        | '\u{1f1e0}'..='\u{1f1ff}')
}

/// `RepeatDetector(max_ngram_size=5).ngram_repeats()`: for each size, how many back-to-back
/// copies of the final n-gram end the whitespace-collapsed text.
///
/// Only the end of the collapsed text matters unless the text repeats: the counts are first
/// taken on its last `TAIL` characters (collapsed from the raw end backwards), and the whole
/// text is collapsed only when some run of copies reaches back to that window's start.
pub fn ngram_repeats(content: &[char]) -> [usize; 5] {
    const TAIL: usize = 64;
    if content.is_empty() {
        return [0; 5];
    }
    let mut tail: Vec<char> = Vec::with_capacity(TAIL + 1);
    let mut i = content.len();
    while i > 0 && tail.len() <= TAIL {
        i -= 1;
        if is_py_space(content[i]) {
            tail.push(' ');
            while i > 0 && is_py_space(content[i - 1]) {
                i -= 1;
            }
        } else {
            tail.push(content[i]);
        }
    }
    if tail.len() <= TAIL {
        // The whole text fits: `tail` is all of it.
        tail.reverse();
        return repeats_in(&tail).0;
    }
    tail.reverse();
    match repeats_in(&tail) {
        (counts, false) => counts,
        _ => repeats_in(&collapse_ws(content)).0,
    }
}

/// The five counts on `t` (the collapsed text, or its end), and whether some run of copies
/// reached the first `size` characters of `t` (so that a longer text could extend it).
fn repeats_in(t: &[char]) -> ([usize; 5], bool) {
    let mut out = [0; 5];
    let mut reached_start = false;
    for (i, slot) in out.iter_mut().enumerate() {
        let size = i + 1;
        if t.len() < size {
            continue;
        }
        let target = &t[t.len() - size..];
        let mut count = 0;
        let mut pos = t.len() - size;
        loop {
            if t[pos..pos + size] != *target {
                break;
            }
            count += 1;
            if pos < size {
                reached_start = true;
                break;
            }
            pos -= size;
        }
        *slot = count;
    }
    (out, reached_start)
}

/// The reference's loop on the fully collapsed text (the oracle for the tail shortcut).
#[cfg(test)]
fn ngram_repeats_full(content: &[char]) -> [usize; 5] {
    if content.is_empty() {
        return [0; 5];
    }
    repeats_in(&collapse_ws(content)).0
}

/// `re.sub(r"!\[.*?\]\(.*?\)", "", s)`: `.` stops at `\n`; from `![` the match takes the first
/// `](` on that line and then the first `)` after it on the same line.
fn strip_markdown_images(s: &[char]) -> Vec<char> {
    let n = s.len();
    let next_nl = next_table(n, |i| s[i] == '\n');
    let next_open = next_table(n, |i| s[i] == ']' && s.get(i + 1) == Some(&'('));
    let next_close = next_table(n, |i| s[i] == ')');
    let mut out = Vec::with_capacity(n);
    let mut p = 0;
    while p < n {
        if s[p] == '!' && s.get(p + 1) == Some(&'[') {
            let q = next_open[p + 2];
            if q != NONE && q < next_nl[p + 2] {
                let r = next_close[q + 2];
                if r != NONE && r < next_nl[q + 2] {
                    p = r + 1;
                    continue;
                }
            }
        }
        out.push(s[p]);
        p += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{chars, string};

    #[test]
    fn repeat_detector_examples() {
        assert_eq!(ngram_repeats(&chars("abab")), [1, 2, 1, 1, 0]);
        assert_eq!(ngram_repeats(&chars(&"a".repeat(10000))), [10000, 5000, 3333, 2500, 2000]);
        assert_eq!(ngram_repeats(&chars(&"ab".repeat(40)))[1], 40);
        assert_eq!(ngram_repeats(&chars(&("ab".repeat(40) + "\n"))), [1, 1, 1, 1, 1]);
        assert_eq!(ngram_repeats(&chars("")), [0; 5]);
        assert_eq!(ngram_repeats(&chars("abc")), [1, 1, 1, 0, 0]);
    }

    #[test]
    fn tail_shortcut_matches_the_full_count() {
        let mut rng = crate::test_rng::XorShift(0x9E37_79B9_7F4A_7C15u64);
        let mut next = |m: u64| rng.below(m as usize);
        let alpha: Vec<char> = "ab \n\t\u{a0}".chars().collect();
        for _ in 0..20_000 {
            let unit: Vec<char> = (0..next(6) + 1).map(|_| alpha[next(alpha.len() as u64)]).collect();
            let mut s: Vec<char> = (0..next(70)).map(|_| alpha[next(alpha.len() as u64)]).collect();
            for _ in 0..next(60) {
                s.extend(&unit);
            }
            s.extend((0..next(3)).map(|_| alpha[next(alpha.len() as u64)]));
            assert_eq!(ngram_repeats(&s), ngram_repeats_full(&s), "{s:?}");
        }
    }

    #[test]
    fn markdown_images() {
        let s = chars("a![alt](x.png)b ![no\n](y) ![x](y\n) ![a](b)(c)");
        assert_eq!(string(&strip_markdown_images(&s)), "ab ![no\n](y) ![x](y\n) (c)");
        // `\](` is one token: a lone `]` on the first line and `](` on the next are no image.
        assert_eq!(string(&strip_markdown_images(&chars("![a]\n](c)"))), "![a]\n](c)");
        assert_eq!(string(&strip_markdown_images(&chars("x![a]b](c)y"))), "xy");
        // Each token whole (values from Python's `re.sub`): `](` adjacent, `![` adjacent, a `)`.
        for kept in ["![a] (b)", "x[a](b)", "!a](b)", "![a](b"] {
            assert_eq!(string(&strip_markdown_images(&chars(kept))), kept);
        }
        // A `)` in the alt text is no close: the close is the first `)` after `](` (Python's `re.sub`).
        assert_eq!(string(&strip_markdown_images(&chars("x![a)b](c)y"))), "xy");
        assert_eq!(string(&strip_markdown_images(&chars("![)](x)"))), "");
    }
}
