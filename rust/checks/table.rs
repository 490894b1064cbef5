//! `table` (reference: `TableTest`, docs/checks.md §3.3; table parsing in `crate::table`, §4).
//!
//! What it checks: that some table in the page (markdown tables unless `ignore_markdown_tables`,
//! then HTML tables, both parsed from the raw text) has a cell fuzzily equal to `cell` whose
//! neighbours (up/down/left/right) and headings (top_heading/left_heading) fuzzily equal the
//! requested strings.
//! Passes when: for some candidate cell, in table order then cell order, with
//! `ratio(cell, normalize_text(text)) / 100 >= max(0.5, 1 - max_diffs / len(cell))`, every
//! requested relation has a related cell scoring at least `max(0.5, 1 - max_diffs / len(e))`.
//! Failure explanations are the reference's, including which neighbour text is quoted when
//! several score equally (the first in Python's set order, which `crate::table` reproduces).
//! Differences from upstream: where the reference raises, we return an error verdict saying the
//! table is malformed or unparseable: a colspan that cancels a rowspan reaching past the last
//! row (`IndexError`, docs/checks.md §4.4), a `<![` section html.parser rejects, a decimal character
//! reference of more than 4,300 digits (`ValueError`), and `"cell": null` (`TypeError`). Pages
//! whose tables exceed the work limits of `crate::table` (millions of grid slots) also get an
//! error verdict, where the reference would run for minutes or exhaust memory; so do checks
//! that would compare more than 2^22 related cells in all, each relation checked counting one
//! more (e.g. `top_heading` on every row of a 100,000-row markdown table, which is quadratic in
//! the reference).

use super::{threshold, Page, Verdict};
use crate::fuzz::ratio;
use crate::suite::{Spec, Test};
use crate::table::{parse_html_tables, parse_markdown_tables, Dir, TableData, TableError};
use crate::text::{normalize, py_fixed, py_float_repr, string};
use std::cell::OnceCell;

/// A parsed table and its cells' `normalize_text` (`None` where it changes nothing), computed
/// on first use.
pub struct Table {
    data: TableData,
    normalized: OnceCell<Vec<Option<Vec<char>>>>,
}

impl Table {
    fn text(&self, cell: usize) -> &[char] {
        let normalized =
            self.normalized.get_or_init(|| (0..self.data.cells.len()).map(|k| normalized(self.data.text(k))).collect());
        normalized[cell].as_deref().unwrap_or_else(|| self.data.text(cell))
    }
}

type Parsed = Result<Vec<Table>, TableError>;

/// The tables of one page, parsed on first use and shared by all the page's table tests.
#[derive(Default)]
pub struct PageTables {
    markdown: OnceCell<Parsed>,
    html: OnceCell<Parsed>,
}

fn wrap(tables: Result<Vec<TableData>, TableError>) -> Parsed {
    tables.map(|ts| ts.into_iter().map(|data| Table { data, normalized: OnceCell::new() }).collect())
}

impl PageTables {
    fn markdown(&self, raw: &[char]) -> Result<&[Table], TableError> {
        self.markdown.get_or_init(|| wrap(parse_markdown_tables(raw))).as_deref().map_err(Clone::clone)
    }
    fn html(&self, raw: &[char]) -> Result<&[Table], TableError> {
        self.html.get_or_init(|| wrap(parse_html_tables(raw))).as_deref().map_err(Clone::clone)
    }
}

/// `normalize_text(s)`, or `None` for text it cannot change (printable ASCII and Latin-1/Latin
/// Extended letters without `*`, `_`, `<`, `µ`, or repeated or special spaces).
fn normalized(s: &[char]) -> Option<Vec<char>> {
    let unchanged = s.iter().enumerate().all(|(i, &c)| match c {
        ' ' => i == 0 || s[i - 1] != ' ',
        '*' | '_' | '<' | '\u{b5}' => false,
        c => c.is_ascii_graphic() || ('\u{a1}'..'\u{300}').contains(&c),
    });
    (!unchanged).then(|| normalize(s))
}

/// The order the reference checks relations in: up, down, left, right, left_heading,
/// top_heading (indices into `Spec::Table::relations`).
const RELATION_ORDER: [usize; 6] = [0, 1, 2, 3, 5, 4];

fn floor_half(t: f64) -> f64 {
    if t > 0.5 {
        t
    } else {
        0.5
    }
}

/// The most related cells one check compares before giving up (see the module docs).
const MAX_RELATION_WORK: usize = 1 << 22;

fn crashed(e: TableError) -> Verdict {
    let why = match e {
        TableError::IndexError => {
            "the HTML table is malformed (a colspan cancels a rowspan that reaches past the last row)"
        }
        TableError::Html(_) => "the HTML cannot be parsed by the reference's parser",
        TableError::TooLarge => "the tables are too large to check",
    };
    Verdict::error(format!("{} ({why})", e.message()))
}

/// `TableTest.run(raw)`.
pub fn check(test: &Test, raw: &[char]) -> Verdict {
    check_page(test, &Page::new(raw))
}

/// `TableTest.run` on a page, reusing the tables its other table tests already parsed.
pub fn check_page(test: &Test, page: &Page) -> Verdict {
    let raw = page.raw();
    let Spec::Table { cell, relations, ignore_markdown_tables } = &test.spec else {
        unreachable!("table::check called on another type")
    };
    let Some(cell) = cell else {
        return Verdict::error("TypeError: object of type 'NoneType' has no len() (the test's cell is null)".into());
    };
    let thr = floor_half(threshold(test.max_diffs, cell.len()));
    let markdown = if *ignore_markdown_tables {
        &[]
    } else {
        match page.tables().markdown(raw) {
            Ok(t) => t,
            Err(e) => return crashed(e),
        }
    };
    let html = match page.tables().html(raw) {
        Ok(t) => t,
        Err(e) => return crashed(e),
    };
    if markdown.is_empty() && html.is_empty() {
        return Verdict::fail("No tables found in the content".into());
    }
    let mut reasons: Vec<String> = Vec::new();
    let mut work = 0usize;
    for table in markdown.iter().chain(html) {
        let candidates = (0..table.data.cells.len()).filter(|&k| at_least(cell, table.text(k), thr));
        for candidate in candidates {
            let mut failed = Vec::new();
            for idx in RELATION_ORDER {
                let Some(expected) = relations[idx].as_deref().filter(|e| !e.is_empty()) else {
                    continue;
                };
                let related = match related(&table.data, candidate, idx) {
                    Ok(r) => r,
                    Err(e) => return crashed(e),
                };
                work += related.len() + 1;
                if work > MAX_RELATION_WORK {
                    return crashed(TableError::TooLarge);
                }
                if let Some(reason) = relation_failure(test, expected, &related, table) {
                    failed.push(reason);
                }
            }
            if failed.is_empty() {
                return Verdict::pass();
            }
            reasons.extend(failed);
        }
    }
    if reasons.is_empty() {
        Verdict::fail(format!(
            "No cell matching '{}' found in any table with threshold {}",
            string(cell),
            py_float_repr(thr)
        ))
    } else {
        Verdict::fail(format!(
            "Found cells matching '{}' but relationships were not satisfied: {}",
            string(cell),
            reasons.join("; ")
        ))
    }
}

/// `ratio(a, b) / 100 >= thr`, skipping the ratio when the lengths alone rule it out: the
/// Indel distance is at least the length difference, and the score formula is monotonic.
fn at_least(a: &[char], b: &[char], thr: f64) -> bool {
    let total = a.len() + b.len();
    if total > 0 {
        let least = a.len().abs_diff(b.len());
        if (1.0 - (least as f64) / (total as f64)) * 100.0 / 100.0 < thr - 1e-9 {
            return false;
        }
    }
    ratio(a, b) / 100.0 >= thr
}

/// The cells relation `idx` (up, down, left, right, top_heading, left_heading) relates
/// `candidate` to, in the reference's iteration order.
fn related(table: &TableData, candidate: usize, idx: usize) -> Result<Vec<u32>, TableError> {
    Ok(match idx {
        0 => table.relation(candidate, Dir::Up),
        1 => table.relation(candidate, Dir::Down),
        2 => table.relation(candidate, Dir::Left),
        3 => table.relation(candidate, Dir::Right),
        4 => table.top_heading(candidate)?,
        _ => table.left_heading(candidate)?,
    })
}

/// `_check_relationship`: `None` when some related cell matches `expected`, else the reason.
fn relation_failure(test: &Test, expected: &[char], related: &[u32], table: &Table) -> Option<String> {
    let thr = floor_half(threshold(test.max_diffs, expected.len()));
    let mut best = 0.0;
    let mut best_text: Option<&[char]> = None;
    let mut satisfied = false;
    for &k in related {
        let text = table.text(k as usize);
        let sim = ratio(expected, text) / 100.0;
        if sim > best {
            best = sim;
            best_text = Some(text);
        }
        if sim >= thr {
            satisfied = true;
        }
    }
    if satisfied {
        return None;
    }
    Some(format!(
        "Cell compared to '{}' doesn't match expected '{}' (best similarity: {})",
        best_text.map_or_else(|| "None".to_string(), string),
        string(expected),
        py_fixed(best, 2)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::TestSuite;
    use crate::text::chars;

    fn verdict(record: &str, content: &str) -> Verdict {
        let line = format!(r#"{{"pdf": "a.pdf", "page": 1, "id": "t", "type": "table", {record}}}"#);
        let suite = TestSuite::from_sources([("t.jsonl", line.as_str())]);
        assert!(suite.errors.is_empty(), "{:?}", suite.errors);
        check(suite.get("t").expect("loaded"), &chars(content))
    }

    const MD: &str = "| Name | Val |\n|---|---|\n| A | 1 |\n| B | 2 |";
    const GRID: &str =
        "<table><tr><td>h1</td><td>h2</td></tr><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>";

    #[test]
    fn case_8_markdown_headings() {
        assert!(verdict(r#""cell": "B", "top_heading": "A""#, MD).passed);
        let v = verdict(r#""cell": "2", "top_heading": "1""#, MD);
        assert!(!v.passed);
        assert_eq!(
            v.explanation,
            "Found cells matching '2' but relationships were not satisfied: Cell compared to 'None' doesn't match expected '1' (best similarity: 0.00)"
        );
        assert!(verdict(r#""cell": "Val", "left_heading": "Name""#, MD).passed);
    }

    #[test]
    fn case_9_heading_walk() {
        assert!(verdict(r#""cell": "d", "top_heading": "h2""#, GRID).passed);
        assert!(!verdict(r#""cell": "d", "top_heading": "b""#, GRID).passed);
    }

    #[test]
    fn case_10_half_floor() {
        assert!(verdict(r#""cell": "abcd", "max_diffs": 3"#, "<table><tr><td>ab</td></tr></table>").passed);
        let v = verdict(r#""cell": "abcd", "max_diffs": 3"#, "<table><tr><td>a</td></tr></table>");
        assert_eq!(v.explanation, "No cell matching 'abcd' found in any table with threshold 0.5");
    }

    #[test]
    fn case_11_index_error() {
        let v = verdict(
            r#""cell": "C", "up": "A""#,
            "<table><tr><td>A</td><td rowspan='3'>B</td></tr><tr><td colspan='2'>C</td></tr></table>",
        );
        assert!(v.error && !v.passed);
    }

    #[test]
    fn case_12_lt_swallows_table() {
        let v = verdict(r#""cell": "1""#, "where $x<y$ holds.\n\n<table><tr><td>1</td></tr></table>");
        assert_eq!(v.explanation, "No tables found in the content");
        assert!(verdict(r#""cell": "1""#, "where $p<0.05$ holds.\n\n<table><tr><td>1</td></tr></table>").passed);
    }

    #[test]
    fn case_13_unclosed_td() {
        let page = "<table><tr><td>a<td>b</tr><tr><td>c</td><td>d</td></tr></table>";
        assert!(!verdict(r#""cell": "b""#, page).passed);
        assert!(verdict(r#""cell": "ab", "down": "c""#, page).passed);
    }

    #[test]
    fn case_14_nested_tables() {
        let page = "<table><tr><td>a</td><td><table><tr><td>in1</td><td>in2</td></tr></table></td></tr></table>";
        assert!(verdict(r#""cell": "in1", "up": "a""#, page).passed);
    }

    #[test]
    fn null_cell_and_no_tables() {
        assert!(verdict(r#""cell": null"#, MD).error);
        assert_eq!(verdict(r#""cell": "x""#, "plain text").explanation, "No tables found in the content");
        assert!(!verdict(r#""cell": "B", "ignore_markdown_tables": true"#, MD).passed);
    }

    /// The length prefilter of `at_least` keeps a cell scoring exactly the 0.5 floor (§3.3 note:
    /// `ratio("abc", "a") = (1 - 2/4) * 100 = 50`, and 0.5 >= max(0.5, 1 - 2/3) passes).
    #[test]
    fn a_cell_exactly_at_the_half_floor_passes() {
        assert!(verdict(r#""cell": "abc", "max_diffs": 2"#, "<table><tr><td>a</td></tr></table>").passed);
        assert!(!verdict(r#""cell": "abcd", "max_diffs": 2"#, "<table><tr><td>a</td></tr></table>").passed);
    }

    /// A markdown table of `rows` rows whose column 0 is all "x" (column 1: "x" in the first
    /// `x_in_column_1` rows, else "y"). Column 0 and row 0 are headings (§4.1), so `top_heading`
    /// of (r, 0) is the r column-0 cells above it and of (r, 1) is {(0, 1)} (§4.6).
    fn column_of_x(rows: usize, x_in_column_1: usize) -> String {
        (0..rows).map(|r| if r < x_in_column_1 { "| x | x |\n" } else { "| x | y |\n" }).collect()
    }

    /// The relation work bound (module docs): each relation check counts its related cells
    /// plus one, and a check whose count goes past 2^22 = 4,194,304 is an error verdict. With
    /// cell "x" and an unmatched `top_heading`, every "x" is a failing candidate: the column-0
    /// cell of row r counts r + 1, so n rows count n(n + 1)/2; each column-1 "x" counts 2, the
    /// one in row 0 counts 1.
    #[test]
    fn relation_work_bound() {
        let test = r#""cell": "x", "top_heading": "zz""#;
        // 2896 rows: 4,194,856 > 2^22 (without the "+ 1": 4,191,960, under it).
        let v = verdict(test, &column_of_x(2896, 0));
        assert!(v.error && !v.passed, "{}", &v.explanation[..80.min(v.explanation.len())]);
        // 2894 rows (4,189,065) and 2620 column-1 "x" (1 + 2 * 2619): exactly 2^22, not past it.
        let v = verdict(test, &column_of_x(2894, 2620));
        assert!(!v.error && !v.passed);
        assert!(v.explanation.starts_with("Found cells matching 'x' but relationships were not satisfied: "));
    }

    #[test]
    fn none_when_no_neighbour_scores() {
        let v = verdict(r#""cell": "h1", "up": "zz""#, GRID);
        assert_eq!(
            v.explanation,
            "Found cells matching 'h1' but relationships were not satisfied: Cell compared to 'None' doesn't match expected 'zz' (best similarity: 0.00)"
        );
    }
}
