//! Small scanners that reproduce Python `re` matches used by the checks, without backtracking
//! blow-ups: each search for a closing delimiter uses a precomputed "next occurrence" table, so
//! every scan is linear (or O(n·pattern)) in the input even where Python's `re` is quadratic.

use crate::text::re_ignorecase_eq;

pub const NONE: usize = usize::MAX;

/// `next[i]` = the smallest `j >= i` with `pred(j)`, or `NONE`.
pub fn next_table(n: usize, pred: impl Fn(usize) -> bool) -> Vec<usize> {
    let mut next = vec![NONE; n + 1];
    for i in (0..n).rev() {
        next[i] = if pred(i) { i } else { next[i + 1] };
    }
    next
}

/// Whether `pat` (ASCII, lowercase) matches at `s[p..]` under `re.IGNORECASE`.
pub fn ci_at(s: &[char], p: usize, pat: &str) -> bool {
    let mut i = p;
    for m in pat.chars() {
        match s.get(i) {
            Some(&c) if re_ignorecase_eq(c, m) => i += 1,
            _ => return false,
        }
    }
    true
}

/// Whether `pat` matches exactly at `s[p..]`.
pub fn at(s: &[char], p: usize, pat: &[char]) -> bool {
    s.len() >= p + pat.len() && s[p..p + pat.len()] == *pat
}

/// `re.findall(OPEN + r"[^>]*>(.*?)" + CLOSE, s, re.IGNORECASE | re.DOTALL)`, where `open` and
/// `close` return the length they match at a position (or `None`); both patterns start with `<`.
pub fn findall_tag(
    s: &[char],
    open: impl Fn(usize) -> Option<usize>,
    close: impl Fn(usize) -> Option<usize>,
) -> Vec<Vec<char>> {
    let n = s.len();
    if !s.contains(&'<') {
        return Vec::new();
    }
    let next_gt = next_table(n, |i| s[i] == '>');
    // Every closing pattern starts with '<'.
    let close_len: Vec<Option<usize>> =
        (0..n).map(|i| if s[i] == '<' { close(i) } else { None }).collect();
    let next_close = next_table(n, |i| close_len[i].is_some());
    let mut out = Vec::new();
    let mut p = 0;
    while p < n {
        if s[p] == '<' {
            if let Some(len) = open(p) {
                let gt = next_gt[(p + len).min(n)];
                if gt != NONE {
                    let q = next_close[gt + 1];
                    if q != NONE {
                        out.push(s[gt + 1..q].to_vec());
                        p = q + close_len[q].unwrap_or(1);
                        continue;
                    }
                }
            }
        }
        p += 1;
    }
    out
}

/// `re.findall(r"D(.*?)D", s, re.DOTALL)` for a literal delimiter `D`.
pub fn findall_delimited(s: &[char], delim: &[char]) -> Vec<Vec<char>> {
    let n = s.len();
    let w = delim.len();
    if delim.first().is_some_and(|d| !s.contains(d)) {
        return Vec::new();
    }
    let next = next_table(n, |i| at(s, i, delim));
    let mut out = Vec::new();
    let mut p = 0;
    while p < n {
        if at(s, p, delim) {
            let q = next[(p + w).min(n)];
            if q != NONE {
                out.push(s[p + w..q].to_vec());
                p = q + w;
                continue;
            }
        }
        p += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{chars, string};

    #[test]
    fn tags_and_delimiters() {
        let s = chars("a<b>x</B> <br>y</b><b>unclosed");
        let got: Vec<String> = findall_tag(
            &s,
            |p| ci_at(&s, p, "<b").then_some(2),
            |p| ci_at(&s, p, "</b>").then_some(4),
        )
        .iter()
        .map(|v| string(v))
        .collect();
        assert_eq!(got, vec!["x", "y"]);
        let s = chars("**a\nb** **c**d**");
        let got: Vec<String> =
            findall_delimited(&s, &['*', '*']).iter().map(|v| string(v)).collect();
        assert_eq!(got, vec!["a\nb", "c"]);
    }
}
