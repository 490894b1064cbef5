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

/// The first `j >= x` with `pred(j)` (or `NONE`), memoized for queries that do not decrease:
/// a query at or before the last answer reuses it, so a series of non-decreasing queries reads
/// each position at most once (linear in total, where `next_table` would precompute every
/// position). Decreasing queries are answered correctly too, by a fresh scan.
pub struct NextFinder<P> {
    n: usize,
    pred: P,
    /// No position in `from..found` satisfies `pred`; `found` does (or is `NONE`: none in `from..n`).
    from: usize,
    found: usize,
}

impl<P: Fn(usize) -> bool> NextFinder<P> {
    pub fn new(n: usize, pred: P) -> Self {
        NextFinder { n, pred, from: usize::MAX, found: NONE }
    }

    pub fn next(&mut self, x: usize) -> usize {
        if self.from <= x && (self.found == NONE || x <= self.found) {
            return self.found;
        }
        let mut j = x;
        while j < self.n && !(self.pred)(j) {
            j += 1;
        }
        self.from = x;
        self.found = if j < self.n { j } else { NONE };
        self.found
    }
}

/// The first `i >= from` with `s[i] == c`, or `s.len()`.
#[inline]
pub fn skip_to(s: &[char], from: usize, c: char) -> usize {
    match s.get(from..) {
        Some(rest) => rest.iter().position(|&x| x == c).map_or(s.len(), |o| from + o),
        None => s.len(),
    }
}

/// `re.findall(OPEN + r"[^>]*>(.*?)" + CLOSE, s, re.IGNORECASE | re.DOTALL)`, where `open` and
/// `close` return the length they match at a position (or `None`); both patterns start with `<`.
pub fn findall_tag(
    s: &[char],
    open: impl Fn(usize) -> Option<usize>,
    close: impl Fn(usize) -> Option<usize>,
) -> Vec<Vec<char>> {
    let n = s.len();
    // Queries below only grow: `p + len` and `gt + 1` with `p` increasing (so `gt` too).
    let mut next_gt = NextFinder::new(n, |i| s[i] == '>');
    // Every closing pattern starts with '<'.
    let mut next_close = NextFinder::new(n, |i| s[i] == '<' && close(i).is_some());
    let mut out = Vec::new();
    let mut p = skip_to(s, 0, '<');
    while p < n {
        if let Some(len) = open(p) {
            let gt = next_gt.next((p + len).min(n));
            if gt != NONE {
                let q = next_close.next(gt + 1);
                if q != NONE {
                    out.push(s[gt + 1..q].to_vec());
                    p = skip_to(s, q + close(q).unwrap_or(1), '<');
                    continue;
                }
            }
        }
        p = skip_to(s, p + 1, '<');
    }
    out
}

/// `re.findall(r"D(.*?)D", s, re.DOTALL)` for a literal (non-empty) delimiter `D`.
pub fn findall_delimited(s: &[char], delim: &[char]) -> Vec<Vec<char>> {
    let n = s.len();
    let w = delim.len();
    let Some(&d0) = delim.first() else { return Vec::new() };
    // Queries grow with `p`.
    let mut next = NextFinder::new(n, |i| s[i] == d0 && at(s, i, delim));
    let mut out = Vec::new();
    let mut p = skip_to(s, 0, d0);
    while p < n {
        if at(s, p, delim) {
            let q = next.next((p + w).min(n));
            if q != NONE {
                out.push(s[p + w..q].to_vec());
                p = skip_to(s, q + w, d0);
                continue;
            }
        }
        p = skip_to(s, p + 1, d0);
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
        let got: Vec<String> =
            findall_tag(&s, |p| ci_at(&s, p, "<b").then_some(2), |p| ci_at(&s, p, "</b>").then_some(4))
                .iter()
                .map(|v| string(v))
                .collect();
        assert_eq!(got, vec!["x", "y"]);
        let s = chars("**a\nb** **c**d**");
        let got: Vec<String> = findall_delimited(&s, &['*', '*']).iter().map(|v| string(v)).collect();
        assert_eq!(got, vec!["a\nb", "c"]);
    }

    /// The lazy scanners against their precomputed-table forms (kept here as the oracle).
    fn findall_tag_table(
        s: &[char],
        open: impl Fn(usize) -> Option<usize>,
        close: impl Fn(usize) -> Option<usize>,
    ) -> Vec<Vec<char>> {
        let n = s.len();
        let next_gt = next_table(n, |i| s[i] == '>');
        let close_len: Vec<Option<usize>> = (0..n).map(|i| if s[i] == '<' { close(i) } else { None }).collect();
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

    fn findall_delimited_table(s: &[char], delim: &[char]) -> Vec<Vec<char>> {
        let n = s.len();
        let w = delim.len();
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

    #[test]
    fn lazy_scanners_match_tables_on_random_text() {
        let mut rng = crate::test_rng::XorShift(0x2545_F491_4F6C_DD1Du64);
        let mut next = |m: u64| rng.below(m as usize);
        let alpha: Vec<char> = "<>/bB*_a \n".chars().collect();
        for _ in 0..20_000 {
            let n = next(40);
            let s: Vec<char> = (0..n).map(|_| alpha[next(alpha.len() as u64)]).collect();
            let open = |p: usize| ci_at(&s, p, "<b").then_some(2);
            let close = |p: usize| ci_at(&s, p, "</b>").then_some(4);
            assert_eq!(findall_tag(&s, open, close), findall_tag_table(&s, open, close), "{s:?}");
            for d in [&['*', '*'][..], &['*'][..], &['_', '*'][..]] {
                assert_eq!(findall_delimited(&s, d), findall_delimited_table(&s, d), "{s:?} {d:?}");
            }
            let mut f = NextFinder::new(n, |i| s[i] == '>');
            let want = next_table(n, |i| s[i] == '>');
            let mut qs: Vec<usize> = (0..8).map(|_| next(n as u64 + 1)).collect();
            if next(2) == 0 {
                qs.sort_unstable();
            }
            for q in qs {
                assert_eq!(f.next(q), want[q], "{s:?} {q}");
            }
        }
    }
}
