//! What it computes: two of upstream's GRPO rewards (allenai/olmocr f7cfe4c,
//! `olmocr/train/grpo_train.py`) that look at a completion's structure:
//! * `reward_element_count`: the number of HTML tables (`<table\b[^>]*>.*?</table>`, case
//!   insensitive) and of math spans (`\$\$(.+?)\$\$`, `\\\((.+?)\\\)`, `\\\[(.+?)\\\]`, each
//!   pattern counted on its own) in the completion and in the reference; 0.5 for each count that
//!   agrees, 0.0 without a reference.
//! * `reward_rect_tables`: the share of the completion's HTML tables (as `parse_html_tables`
//!   reads them) that are rectangular; 1.0 without HTML tables.
//!
//! Passes when: — (rewards, not tests).
//!
//! Differences from upstream: the counts follow Python `re.findall` with DOTALL on code points
//! (leftmost, non-overlapping, lazy), written as scans rather than a regex engine: `\b` after
//! `<table` uses Python's `\w` (`text::is_py_alnum` or `_`), and the letters of `table` have
//! no case-insensitive equivalents besides their ASCII capitals. Where upstream's table parser
//! raises (html.parser errors on some broken markup, and the whole training step with it),
//! `rect_table_share` returns None and the Python reward gives 0.0.

use crate::table::parse_html_tables;
use crate::text::is_py_alnum;

/// (HTML tables, math spans) of `text`, as upstream's `count_elements`.
pub fn element_counts(text: &[char]) -> (usize, usize) {
    let math = spans(text, &['$', '$'], &['$', '$'])
        + spans(text, &['\\', '('], &['\\', ')'])
        + spans(text, &['\\', '['], &['\\', ']']);
    (tables(text), math)
}

/// Upstream's reward for one completion and its reference.
pub fn element_count_reward(completion: &[char], reference: Option<&[char]>) -> f64 {
    let Some(reference) = reference else { return 0.0 };
    let (ct, cm) = element_counts(completion);
    let (rt, rm) = element_counts(reference);
    (usize::from(ct == rt) + usize::from(cm == rm)) as f64 * 0.5
}

/// The share of `text`'s HTML tables that are rectangular (1.0 without tables); None where the
/// table parser (as upstream's) fails.
pub fn rect_table_share(text: &[char]) -> Option<f64> {
    let tables = parse_html_tables(text).ok()?;
    if tables.is_empty() {
        return Some(1.0);
    }
    Some(tables.iter().filter(|t| t.is_rectangular).count() as f64 / tables.len() as f64)
}

fn starts_with(text: &[char], at: usize, lit: &[char]) -> bool {
    text.len() >= at + lit.len() && &text[at..at + lit.len()] == lit
}

fn find(text: &[char], from: usize, lit: &[char]) -> Option<usize> {
    (from..=text.len().saturating_sub(lit.len())).find(|&i| starts_with(text, i, lit))
}

/// `len(re.findall(re.escape(open) + "(.+?)" + re.escape(close), text, re.DOTALL))`.
fn spans(text: &[char], open: &[char], close: &[char]) -> usize {
    let (mut count, mut i) = (0, 0);
    while let Some(start) = find(text, i, open) {
        // `.+?`: at least one character, then the first `close`.
        match find(text, start + open.len() + 1, close) {
            Some(end) => {
                count += 1;
                i = end + close.len();
            }
            // No close after this start: none after any later start either.
            None => break,
        }
    }
    count
}

fn ascii_ci(text: &[char], at: usize, lit: &str) -> bool {
    let n = lit.chars().count();
    text.len() >= at + n && text[at..at + n].iter().zip(lit.chars()).all(|(c, l)| c.to_ascii_lowercase() == l)
}

/// `len(re.findall(r"<table\b[^>]*>.*?</table>", text, re.DOTALL | re.IGNORECASE))`.
fn tables(text: &[char]) -> usize {
    let (mut count, mut i) = (0, 0);
    while i + 6 <= text.len() {
        if !ascii_ci(text, i, "<table") || text.get(i + 6).is_some_and(|&c| is_py_alnum(c) || c == '_') {
            i += 1;
            continue;
        }
        // `[^>]*>`: up to the first '>'; then `.*?</table>`: the first closing tag after it.
        let Some(gt) = (i + 6..text.len()).find(|&k| text[k] == '>') else { break };
        match (gt + 1..=text.len().saturating_sub(8)).find(|&k| ascii_ci(text, k, "</table>")) {
            Some(end) => {
                count += 1;
                i = end + 8;
            }
            // No closing tag after this table: none after any later `<table` either.
            None => break,
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(x: &str) -> Vec<char> {
        x.chars().collect()
    }

    #[test]
    fn counts_as_python_findall() {
        assert_eq!(element_counts(&c("")), (0, 0));
        assert_eq!(element_counts(&c("$$x$$ and \\(y\\) and \\[z\\]")), (0, 3));
        assert_eq!(element_counts(&c("$$$$")), (0, 0));
        assert_eq!(element_counts(&c("$$$$$")), (0, 1));
        assert_eq!(element_counts(&c("$$a\nb$$ $$c")), (0, 1));
        assert_eq!(element_counts(&c("<TABLE border=1><tr></tr></Table> <table><table></table></table>")), (2, 0));
        assert_eq!(element_counts(&c("<tableau></table> <table_x></table> <tableé></table>")), (0, 0));
        assert_eq!(element_counts(&c("<table></table")), (0, 0));
        assert_eq!(element_counts(&c("<table")), (0, 0));
        // Back to back: the next search starts right after a close (Python's `re.findall`: 2, 2 and 2).
        assert_eq!(element_counts(&c("\\(a\\)\\(b\\)")), (0, 2));
        assert_eq!(element_counts(&c("\\[a\\]\\[b\\]")), (0, 2));
        assert_eq!(element_counts(&c("$$a$$$$b$$")), (0, 2));
    }

    #[test]
    fn rewards() {
        assert_eq!(element_count_reward(&c("$$x$$"), None), 0.0);
        assert_eq!(element_count_reward(&c("$$x$$"), Some(&c("\\(y\\)"))), 1.0);
        assert_eq!(element_count_reward(&c("$$x$$"), Some(&c("<table></table>"))), 0.0);
        assert_eq!(rect_table_share(&c("no tables")), Some(1.0));
        let two = "<table><tr><td>a</td><td>b</td></tr></table><table><tr><td colspan=2>a</td></tr><tr><td>b</td></tr></table>";
        assert_eq!(rect_table_share(&c(two)), Some(0.5));
    }
}
