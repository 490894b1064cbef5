//! `format` (reference: `FormatTest`, docs/checks.md §3.6).
//!
//! What it checks: that the test's text appears with the given formatting (heading, bold,
//! italic). Formatted fragments are collected from the raw page with the reference's regular
//! expressions (markdown and HTML), normalized, and compared fuzzily with the text.
//! Passes when: some fragment f has `partial_ratio(text, f) / 100 >= 1 - max_diffs/len(text)`
//! (partial_ratio is symmetric, so a fragment contained in the text counts too).
//! Differences from upstream: none. The regexes are reproduced as linear scanners with the same
//! match sets, including their quirks (`<b[^>]*>` matches `<br>`, `<i[^>]*>` matches `<img>`,
//! `\s+` after `#` crosses newlines, IGNORECASE folding `İ`/`ı` to `i` and `ſ` to `s`).

use super::{threshold, Verdict};
use crate::fuzz::partial_ratio;
use crate::scan::{ci_at, findall_delimited, findall_tag, NextFinder, NONE};
use crate::suite::{Format, Spec, Test};
use crate::text::{is_py_space, normalize, prefix, py_lower};

pub fn check(test: &Test, raw: &[char]) -> Verdict {
    let Spec::Format { text, format, case_sensitive } = &test.spec else {
        unreachable!("format::check called on another type")
    };
    let mut found: Vec<Vec<char>> = fragments(raw, *format).iter().map(|f| normalize(f)).collect();
    let lowered;
    let search: &[char] = if *case_sensitive {
        text
    } else {
        found = found.iter().map(|f| py_lower(f)).collect();
        lowered = py_lower(text);
        &lowered
    };
    let thr = threshold(test.max_diffs, search.len());
    let mut best = 0.0f64;
    for f in &found {
        let r = partial_ratio(search, f) / 100.0;
        if r >= thr {
            return Verdict::pass();
        }
        best = best.max(r);
    }
    let name = format.name();
    let detail = if found.is_empty() {
        format!("No {name} formatted text found")
    } else {
        let samples: Vec<String> = found
            .iter()
            .take(3)
            .map(|t| if t.len() > 20 { format!("'{}...'", prefix(t, 20)) } else { format!("'{}'", prefix(t, t.len())) })
            .collect();
        format!("Found {name} text: {}", samples.join(", "))
    };
    Verdict::fail(format!("Text '{}...' not found with {name} formatting. {detail}", prefix(text, 40)))
        .with_partial_credit(best, thr)
}

/// The raw fragments the reference's `re.findall` calls return, in the reference's order.
pub fn fragments(s: &[char], format: Format) -> Vec<Vec<char>> {
    let tag = |open: &'static str, close: &'static str| {
        findall_tag(s, |p| ci_at(s, p, open).then_some(open.len()), |p| ci_at(s, p, close).then_some(close.len()))
    };
    match format {
        Format::Heading => {
            let mut out = markdown_headings(s);
            let digit = |p: usize| s.get(p).is_some_and(|c| ('1'..='6').contains(c));
            out.extend(findall_tag(
                s,
                |p| (ci_at(s, p, "<h") && digit(p + 2)).then_some(3),
                |p| (ci_at(s, p, "</h") && digit(p + 3) && s.get(p + 4) == Some(&'>')).then_some(5),
            ));
            out
        }
        Format::Bold => {
            let mut out = findall_delimited(s, &['*', '*']);
            out.extend(findall_delimited(s, &['_', '_']));
            out.extend(tag("<b", "</b>"));
            out.extend(tag("<strong", "</strong>"));
            out
        }
        Format::Italic => {
            let mut out = lone_delimited(s, '*');
            out.extend(lone_delimited(s, '_'));
            out.extend(tag("<i", "</i>"));
            out.extend(tag("<em", "</em>"));
            out
        }
    }
}

/// `re.findall(r"^#{1,6}\s+(.+?)$", s, re.MULTILINE)`.
///
/// At a line start: 1..6 `#` followed by whitespace (a 7th `#` fails every backtrack). `\s+`
/// greedily takes the whole whitespace run (newlines included) and gives back characters until
/// `.+?` can start on a non-newline character; the group then runs to the end of that line.
fn markdown_headings(s: &[char]) -> Vec<Vec<char>> {
    let n = s.len();
    if !s.contains(&'#') {
        return Vec::new();
    }
    // Queries only grow (`e` and `p` move forward).
    let mut next_nl = NextFinder::new(n, |i| s[i] == '\n');
    let mut out = Vec::new();
    let mut p = 0;
    while p < n {
        if s[p] == '#' {
            let run = s[p..].iter().take_while(|&&c| c == '#').count();
            let a = p + run;
            if run <= 6 && a < n && is_py_space(s[a]) {
                let b = a + s[a..].iter().take_while(|&&c| is_py_space(c)).count();
                if let Some(e) = (a + 1..=b).rev().find(|&e| e < n && s[e] != '\n') {
                    let eol = match next_nl.next(e) {
                        NONE => n,
                        nl => nl,
                    };
                    out.push(s[e..eol].to_vec());
                    p = eol;
                }
            }
        }
        // `^` only matches at line starts: go to the next one.
        match next_nl.next(p.min(n)) {
            NONE => break,
            nl => p = nl + 1,
        }
    }
    out
}

/// `re.findall(r"(?<!D)D(?!D)(.*?)(?<!D)D(?!D)", s, re.DOTALL)`: pairs of consecutive
/// isolated delimiters (not next to another copy of it).
fn lone_delimited(s: &[char], d: char) -> Vec<Vec<char>> {
    let n = s.len();
    if !s.contains(&d) {
        return Vec::new();
    }
    let isolated = |i: usize| s[i] == d && (i == 0 || s[i - 1] != d) && s.get(i + 1) != Some(&d);
    // Queries only grow.
    let mut next = NextFinder::new(n, isolated);
    let mut out = Vec::new();
    let mut p = next.next(0);
    while p != NONE {
        let q = next.next(p + 1);
        if q == NONE {
            break;
        }
        out.push(s[p + 1..q].to_vec());
        p = next.next(q + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{chars, string};

    fn frags(s: &str, f: Format) -> Vec<String> {
        fragments(&chars(s), f).iter().map(|v| string(v)).collect()
    }

    #[test]
    fn headings() {
        assert_eq!(frags("#\nTitle", Format::Heading), vec!["Title"]);
        assert_eq!(frags("####### Title", Format::Heading), Vec::<String>::new());
        assert_eq!(frags("# Title\r\n## Two", Format::Heading), vec!["Title\r", "Two"]);
        assert_eq!(frags("#  ", Format::Heading), vec![" "]);
        assert_eq!(frags("x # no\n<H2 a=b>T</h5>", Format::Heading), vec!["T"]);
    }

    /// The edges of the two heading regexes (§3.6; expected values are what Python's `re` gives
    /// for the reference's patterns): `<h[1-6][^>]*>` needs both `<h` and the level digit, and
    /// `</h[1-6]>` needs `</h`, the digit and `>` (a `>` or `</hx>` inside the heading is text);
    /// `^#{1,6}\s+(.+?)$` finds nothing in a `#` at the very end, nor when the whitespace after
    /// `#` is only a space and newlines up to the end (`.+?` has no character to start on).
    #[test]
    fn heading_regex_edges() {
        assert_eq!(frags("<hr>Title</h2>", Format::Heading), Vec::<String>::new());
        assert_eq!(frags("x 1>T</h1>", Format::Heading), Vec::<String>::new());
        assert_eq!(frags("<h1>abcd>e</h1>", Format::Heading), vec!["abcd>e"]);
        assert_eq!(frags("<h1>A</hx>B</h2>", Format::Heading), vec!["A</hx>B"]);
        assert_eq!(frags("<h1>A xx3>B</h1>", Format::Heading), vec!["A xx3>B"]);
        assert_eq!(frags("# A\n##", Format::Heading), vec!["A"]);
        assert_eq!(frags("#", Format::Heading), Vec::<String>::new());
        assert_eq!(frags("# \n", Format::Heading), Vec::<String>::new());
    }

    fn format_test(format: &str, text: &str, extra: &str) -> Test {
        let record =
            format!(r#"{{"pdf":"a","page":1,"id":"t","type":"format","format":"{format}","text":{text:?}{extra}}}"#);
        crate::suite::parse_record(&record, "t", 1).unwrap()
    }

    /// The check itself: the text must be a formatted fragment (fuzzily), case-sensitive unless
    /// `case_sensitive` is false (the default is true), and a fragment inside the text counts.
    #[test]
    fn formatted_text_case_and_containment() {
        let bold = format_test("bold", "Abstract", "");
        assert!(check(&bold, &chars("**Abstract** text")).passed);
        assert!(check(&bold, &chars("<strong>Abstract</strong>")).passed);
        let plain = check(&bold, &chars("Abstract, not bold; **Other**"));
        assert!(!plain.passed);
        assert_eq!(plain.explanation, "Text 'Abstract...' not found with bold formatting. Found bold text: 'Other'");
        assert_eq!(
            check(&bold, &chars("no formatting")).explanation,
            "Text 'Abstract...' not found with bold formatting. No bold formatted text found"
        );
        assert!(!check(&bold, &chars("**ABSTRACT**")).passed, "case-sensitive by default");
        assert!(check(&format_test("bold", "Abstract", r#","case_sensitive":false"#), &chars("**ABSTRACT**")).passed);
        assert!(!check(&format_test("bold", "Abstract", r#","case_sensitive":true"#), &chars("**ABSTRACT**")).passed);
        // partial_ratio is symmetric: a one-letter fragment inside the text passes (§3.1.1).
        assert!(check(&format_test("heading", "Introduction", ""), &chars("# I\nbody")).passed);
        assert!(check(&format_test("italic", "local windows", ""), &chars("a *local windows* b")).passed);
        assert!(
            !check(&format_test("italic", "local windows", ""), &chars("**local windows**")).passed,
            "bold is not italic"
        );
    }

    #[test]
    fn italics_and_bold() {
        assert_eq!(frags("a_b_c *x* **y**", Format::Italic), vec!["x", "b"]);
        assert_eq!(frags("line<br>Introduction</b>", Format::Bold), vec!["Introduction"]);
        assert_eq!(frags("<img src=x>cap</i>", Format::Italic), vec!["cap"]);
    }
}
