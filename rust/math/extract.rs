//! Equation extraction from a page, exactly as the reference's `MathTest.run` (docs/checks.md §5.1).
//!
//! Four patterns in order — `\( … \)`, `\[ … \]`, `$$ … $$`, `$ … $` (the dollar ones skipped
//! with `ignore_dollar_delimited`) — each lazy, DOTALL, with a body of at least one character.
//! For each pattern: every non-overlapping match of the *current* string is collected (group 1,
//! Python-stripped), then every match is deleted before the next pattern runs. A lazy
//! `open(.+?)close` match starting at `i` ends at the first `close` that begins at least one
//! character after the opener, which is what the scanner below finds.

use crate::text::py_strip;

const PATTERNS: [(&[char], &[char]); 4] =
    [(&['\\', '('], &['\\', ')']), (&['\\', '['], &['\\', ']']), (&['$', '$'], &['$', '$']), (&['$'], &['$'])];

fn at(s: &[char], i: usize, pat: &[char]) -> bool {
    s.len() >= i + pat.len() && &s[i..i + pat.len()] == pat
}

/// One pattern over `s`: (bodies, `s` with every match removed).
fn apply(s: &[char], open: &[char], close: &[char]) -> (Vec<Vec<char>>, Vec<char>) {
    let mut bodies = Vec::new();
    let mut rest = Vec::with_capacity(s.len());
    let mut i = 0;
    let mut copied = 0;
    while i < s.len() {
        if !at(s, i, open) {
            i += 1;
            continue;
        }
        let body = i + open.len();
        // The first closer starting at body+1 or later (the body holds at least one char).
        let close_at = (body + 1..s.len()).find(|&j| at(s, j, close));
        let Some(j) = close_at else {
            // No closer after this opener means none after any later opener either.
            break;
        };
        bodies.push(py_strip(&s[body..j]).to_vec());
        rest.extend_from_slice(&s[copied..i]);
        i = j + close.len();
        copied = i;
    }
    rest.extend_from_slice(&s[copied..]);
    (bodies, rest)
}

/// The hypothesis equations of `content`, in the reference's (pattern-major) order.
pub fn equations(content: &[char], ignore_dollar_delimited: bool) -> Vec<Vec<char>> {
    let n = if ignore_dollar_delimited { 2 } else { 4 };
    let mut out = Vec::new();
    let mut cur = content.to_vec();
    for (open, close) in &PATTERNS[..n] {
        let (bodies, rest) = apply(&cur, open, close);
        out.extend(bodies);
        cur = rest;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{chars, string};

    fn eqs(s: &str) -> Vec<String> {
        equations(&chars(s), false).iter().map(|e| string(e)).collect()
    }

    #[test]
    fn spec_examples() {
        assert_eq!(eqs("$$a$$ and $b$ and \\(c\\) and \\[d\\]"), ["c", "d", "a", "b"]);
        assert_eq!(eqs("$a\\(x\\)$"), ["x", "a"]);
        assert_eq!(eqs("$$$$"), ["$"]);
        assert_eq!(eqs("costs $5 and $6"), ["5 and"]);
        assert_eq!(eqs("\\$5 and \\$6"), ["5 and \\"]);
        assert_eq!(eqs("$$ x $ y $$"), ["x $ y"]);
        assert_eq!(eqs("\\(\\)"), Vec::<String>::new());
        assert_eq!(eqs("$ $"), [""]);
        assert_eq!(eqs("$a\nb$"), ["a\nb"]);
        assert_eq!(eqs("\\(a\\) \\(b"), ["a"]);
        assert_eq!(equations(&chars("$a$ \\(b\\)"), true), vec![chars("b")]);
    }

    #[test]
    fn unclosed_openers_are_linear() {
        let s: String = "\\(".repeat(50_000) + "$";
        assert!(eqs(&s).is_empty());
    }
}
