//! The olmOCR-bench checks. Each type lives in its own file, which opens with what it checks,
//! when it passes, and its known differences from upstream.

pub mod baseline;
pub mod footnote;
pub mod format;
#[cfg(test)]
mod golden_tests;
pub mod math;
pub mod order;
pub mod presence;
pub mod table;

use crate::search::CharIndex;
use crate::suite::{Spec, Test};
use crate::text::{normalize, py_lower};
use std::cell::OnceCell;

/// A check's verdict, as the reference's `(passed, explanation)`; `error` marks inputs on which
/// the reference raises an exception (counted as a failure there too). `credit` is the graded
/// score in [0, 1]: 1 when passed; for a failed fuzzy check (present, format) the best
/// similarity as a fraction of the threshold; 0 otherwise.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub passed: bool,
    pub explanation: String,
    pub error: bool,
    pub credit: f64,
}

impl Verdict {
    pub fn pass() -> Self {
        Verdict { passed: true, explanation: String::new(), error: false, credit: 1.0 }
    }
    pub fn fail(explanation: String) -> Self {
        Verdict { passed: false, explanation, error: false, credit: 0.0 }
    }
    /// The reference raises here; we fail the test and say why.
    pub fn error(explanation: String) -> Self {
        Verdict { passed: false, explanation: format!("error: {explanation}"), error: true, credit: 0.0 }
    }
    /// Partial credit for a failed fuzzy match: `best / threshold`, clamped to [0, 1).
    pub fn with_partial_credit(mut self, best: f64, threshold: f64) -> Self {
        if !self.passed && threshold > 0.0 && best.is_finite() {
            self.credit = (best / threshold).clamp(0.0, 0.999_999);
        }
        self
    }
}

/// One page of model output, with the derived forms several tests share computed once.
pub struct Page<'a> {
    raw: &'a [char],
    normalized: OnceCell<Vec<char>>,
    normalized_lower: OnceCell<Vec<char>>,
    normalized_index: OnceCell<Option<CharIndex>>,
    normalized_lower_index: OnceCell<Option<CharIndex>>,
    tables: table::PageTables,
}

impl<'a> Page<'a> {
    pub fn new(raw: &'a [char]) -> Self {
        Page {
            raw,
            normalized: OnceCell::new(),
            normalized_lower: OnceCell::new(),
            normalized_index: OnceCell::new(),
            normalized_lower_index: OnceCell::new(),
            tables: Default::default(),
        }
    }
    pub fn raw(&self) -> &'a [char] {
        self.raw
    }
    /// `normalize_text(content)`.
    pub fn normalized(&self) -> &[char] {
        self.normalized.get_or_init(|| normalize(self.raw))
    }
    /// Where each character occurs in `normalized()`, for the order tests' exact scans and the
    /// presence tests' search.
    pub fn normalized_index(&self) -> Option<&CharIndex> {
        self.normalized_index.get_or_init(|| CharIndex::new(self.normalized())).as_ref()
    }
    /// The page's markdown and HTML tables, parsed on first use by its table tests.
    pub fn tables(&self) -> &table::PageTables {
        &self.tables
    }
    /// `normalize_text(content).lower()`.
    pub fn normalized_lower(&self) -> &[char] {
        self.normalized_lower.get_or_init(|| py_lower(self.normalized()))
    }
    /// Where each character occurs in `normalized_lower()`.
    pub fn normalized_lower_index(&self) -> Option<&CharIndex> {
        self.normalized_lower_index.get_or_init(|| CharIndex::new(self.normalized_lower())).as_ref()
    }
}

/// `1.0 - max_diffs / len` as the reference computes it (divisor 1 for an empty string).
pub fn threshold(max_diffs: u128, len: usize) -> f64 {
    1.0 - py_true_div(max_diffs, len.max(1) as u64)
}

/// Python's `int / int`: the correctly rounded quotient (one rounding, unlike converting both
/// operands to f64 first once they exceed 2^53), for `a` below 2^127 (`max_diffs` saturates
/// there) and a divisor of at most 64 bits (a length): the shift below then never reaches its
/// cap, which would leave the quotient too few bits for a divisor of more than 71 bits.
pub fn py_true_div(a: u128, b: u64) -> f64 {
    const EXACT: u128 = 1 << 53;
    let b = u128::from(b);
    if b == 0 {
        return f64::NAN;
    }
    if a < EXACT && b < EXACT {
        return a as f64 / b as f64;
    }
    // Scale so the integer quotient carries >= 56 significant bits, then fold the remainder
    // into a sticky bit: converting that to f64 rounds exactly once, correctly.
    let bits = |x: u128| 128 - x.leading_zeros() as i32;
    let shift = (56 - (bits(a) - bits(b))).clamp(0, 127 - bits(a));
    let scaled = a << shift;
    let (q, r) = (scaled / b, scaled % b);
    let sticky = u128::from(r != 0);
    ((q | sticky) as f64) * 2f64.powi(-shift)
}

/// Rules added on top of the published benchmark's checks (docs/checks.md §3.1.1, §3.7.1). A
/// guard's name lists exactly the rules it turns on, joined by `+`:
///
/// * `none`: the published semantics (allenai/olmocr @ f7cfe4c);
/// * `short-output`: allenai/olmocr PR #462's rule for `present`/`absent`: a page too short to hold
///   the text fails `present` and passes `absent` before any fuzzy matching;
/// * `short-output+footnote`: that rule, and PR #476's for `footnote`: the text next to a marker
///   that is too short to hold `appears_before_marker`/`appears_after_marker` is no match there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Guard {
    #[default]
    None,
    ShortOutput,
    ShortOutputFootnote,
}

impl Guard {
    pub const ALL: [Guard; 3] = [Guard::None, Guard::ShortOutput, Guard::ShortOutputFootnote];

    /// The name users write (`--guard short-output`).
    pub fn name(self) -> &'static str {
        match self {
            Guard::None => "none",
            Guard::ShortOutput => "short-output",
            Guard::ShortOutputFootnote => "short-output+footnote",
        }
    }
    pub fn from_name(name: &str) -> Option<Guard> {
        Guard::ALL.into_iter().find(|g| g.name() == name)
    }
    /// PR #462's rule (`present`/`absent`) is on.
    pub fn short_output(self) -> bool {
        self != Guard::None
    }
    /// PR #476's rule (`footnote`) is on.
    pub fn short_footnote(self) -> bool {
        self == Guard::ShortOutputFootnote
    }
}

/// Runs `test` on `page`, with `guard`'s rules on top of the published checks.
pub fn run(test: &Test, page: &Page, guard: Guard) -> Verdict {
    match &test.spec {
        Spec::Presence { .. } => presence::check(test, page, guard),
        Spec::Order { before, after } => order::check(test, before, after, page),
        Spec::Baseline { .. } => baseline::check(&test.spec, page.raw()),
        Spec::Format { .. } => format::check(test, page.raw()),
        Spec::Footnote { .. } => footnote::check(test, page.raw(), guard),
        Spec::Table { .. } => table::check_page(test, page),
        Spec::Math { math, ignore_dollar_delimited } => math::check(math, *ignore_dollar_delimited, page.raw()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn true_division_is_correctly_rounded() {
        assert_eq!(py_true_div(1, 3), 1.0 / 3.0);
        assert_eq!(py_true_div(2, 24), 2.0 / 24.0);
        // (2^64 + 1) / 10 = 1844674407370955161.7 -> 1844674407370955264.0 in Python
        assert_eq!(py_true_div((1u128 << 64) + 1, 10), 1844674407370955264.0);
        assert_eq!(py_true_div((1u128 << 63) + 1, 7), 1317624576693539401.0);
        assert_eq!(threshold(0, 0), 1.0);
    }

    /// The scaled path of `py_true_div` against Python's `int / int` (values from CPython):
    /// a divisor past 2^53 (a float conversion would round it first: 1/2^53 = ...565e-16), a
    /// quotient that needs the dividend shifted up, and the sticky bit deciding a round-half
    /// case (dropping it, or folding it in with xor, rounds these two down).
    #[test]
    fn true_division_scaled_path_and_sticky_bit() {
        assert_eq!(py_true_div(1, (1u64 << 53) + 1), 1.1102230246251564e-16);
        assert_eq!(py_true_div((1u128 << 70) + 12345, 3 * (1u64 << 60) + 7), 341.3333333333333);
        // The extremes of the domain: the widest divisor, the largest dividend.
        assert_eq!(py_true_div(3, u64::MAX), 1.6263032587282567e-19);
        assert_eq!(py_true_div(i128::MAX as u128, 3), 5.671372782015641e37);
        assert_eq!(py_true_div(1408047540671741429, 7), 2.0114964866739165e17);
        assert_eq!(py_true_div(310255278691018057, 13), 2.3865790668539852e16);
    }

    /// An exact quotient lying halfway between two doubles must round half-to-even with no
    /// sticky bit: a remainder that is wrongly nonzero (the `%` mutated) rounds it up. Values
    /// are CPython's: `((2**53+1)/1).hex()` and `((2**53+1)*3/3).hex()` are both
    /// `0x1.0000000000000p+53` (bits 0x4340000000000000), while `((2**53+1)*3+1)/3` (just above
    /// halfway) is `0x1.0000000000001p+53` (bits 0x4340000000000001).
    #[test]
    fn true_division_exact_halfway_rounds_to_even() {
        let half = (1u128 << 53) + 1;
        assert_eq!(py_true_div(half, 1), f64::from_bits(0x4340_0000_0000_0000));
        assert_eq!(py_true_div(half * 3, 3), f64::from_bits(0x4340_0000_0000_0000));
        assert_eq!(py_true_div(half * 3 + 1, 3), f64::from_bits(0x4340_0000_0000_0001));
    }

    /// The guard names users write (docs/checks.md §3.1.1, §3.7.1) and the rules each turns on.
    #[test]
    fn guard_names_and_rules() {
        let names: Vec<&str> = Guard::ALL.iter().map(|g| g.name()).collect();
        assert_eq!(names, ["none", "short-output", "short-output+footnote"]);
        for g in Guard::ALL {
            assert_eq!(Guard::from_name(g.name()), Some(g));
        }
        assert_eq!(Guard::from_name("short_output"), None);
        assert_eq!(Guard::from_name(""), None);
        let rules: Vec<(bool, bool)> = Guard::ALL.iter().map(|g| (g.short_output(), g.short_footnote())).collect();
        assert_eq!(rules, [(false, false), (true, false), (true, true)]);
    }

    /// `Verdict::with_partial_credit` (its docs and `Verdict`'s): a failed check earns
    /// `best / threshold` clamped to [0, 0.999999]; a passed one keeps its credit of 1, and a
    /// threshold of 0 or less, or a best that is not finite, leaves the failure's 0.
    #[test]
    fn partial_credit_only_for_failures_with_a_positive_threshold() {
        let fail = || Verdict::fail("no".into());
        assert_eq!(fail().with_partial_credit(0.4, 0.8).credit, 0.5);
        assert_eq!(fail().with_partial_credit(0.9, 0.8).credit, 0.999_999);
        assert_eq!(fail().with_partial_credit(-0.1, 0.8).credit, 0.0);
        assert_eq!(fail().with_partial_credit(0.4, 0.0).credit, 0.0);
        assert_eq!(fail().with_partial_credit(0.4, -0.5).credit, 0.0);
        assert_eq!(fail().with_partial_credit(f64::NAN, 0.8).credit, 0.0);
        assert_eq!(fail().with_partial_credit(f64::INFINITY, 0.8).credit, 0.0);
        assert_eq!(Verdict::pass().with_partial_credit(0.4, 0.8).credit, 1.0);
        assert_eq!(Verdict::pass().with_partial_credit(f64::NAN, 0.0).credit, 1.0);
    }

    /// A fixed-seed fuzz run over the whole core: random test records of every type (random
    /// field values, also of the wrong JSON type) are loaded, and every loaded test runs on
    /// random completions built from markup fragments (tables, equations, markdown, repeats,
    /// stray surrogate stand-ins, control characters). Nothing may panic, and each (test,
    /// completion) pair must take less than a generous ceiling (deterministic budgets bound the
    /// real cost far below it).
    #[test]
    fn fuzz_records_and_completions() {
        use crate::suite::TestSuite;
        use crate::text::chars;
        let mut rng = crate::test_rng::XorShift(0x9e37_79b9_7f4a_7c15u64);
        let mut next = |n: usize| rng.below(n);
        const FRAGMENTS: &[&str] = &[
            "Hello world",
            " ",
            "\n",
            "\n\n",
            "| a | b |\n",
            "|---|---|\n",
            "| 1 | 2 |\n",
            "<table>",
            "</table>",
            "<tr>",
            "<td rowspan=3>",
            "<th colspan=2>",
            "</td>",
            "$x^2$",
            "$$\\frac{a}{b}$$",
            "\\(\\alpha\\)",
            "\\[",
            "\\]",
            "{",
            "}",
            "\\def\\a{\\a\\a}\\a",
            "**bold**",
            "_it_",
            "# Heading\n",
            "[^1]",
            "¹",
            "é",
            "ﬁ",
            "\u{200b}",
            "\u{10f800}",
            "\u{0}",
            "\r",
            "\t",
            "<![CDATA[",
            "&amp;",
            "&#99999999;",
            "ab",
            "...",
        ];
        const TYPES: &[&str] = &["present", "absent", "order", "table", "math", "baseline", "format", "footnote"];
        const KEYS: &[&str] = &[
            "text",
            "before",
            "after",
            "cell",
            "up",
            "down",
            "left",
            "right",
            "top_heading",
            "left_heading",
            "math",
            "format",
            "marker",
            "max_diffs",
            "case_sensitive",
            "first_n",
            "last_n",
            "max_repeats",
            "max_length",
            "check_disallowed_characters",
            "ignore_markdown_tables",
            "ignore_dollar_delimited",
        ];
        let value = |next: &mut dyn FnMut(usize) -> usize| -> String {
            match next(8) {
                0 => next(5).to_string(),
                1 => "true".into(),
                2 => "null".into(),
                3 => "-1".into(),
                4 => "[\"x\"]".into(),
                _ => {
                    let s: String = (0..1 + next(4)).map(|_| FRAGMENTS[next(FRAGMENTS.len())]).collect();
                    serde_json::to_string(&s).unwrap()
                }
            }
        };
        let mut lines = Vec::new();
        for i in 0..600 {
            let kind = TYPES[next(TYPES.len())];
            let mut fields = vec![
                format!("\"id\": \"t{i}\""),
                format!("\"type\": \"{kind}\""),
                "\"pdf\": \"a.pdf\"".into(),
                "\"page\": 1".into(),
            ];
            let text = |next: &mut dyn FnMut(usize) -> usize| -> String {
                let s: String = (0..1 + next(3)).map(|_| FRAGMENTS[next(FRAGMENTS.len())]).collect();
                serde_json::to_string(&s).unwrap()
            };
            let required: &[&str] = match kind {
                "present" | "absent" => &["text"],
                "order" => &["before", "after"],
                "table" => &["cell"],
                "math" => &["math"],
                "format" => &["text"],
                "footnote" => &["marker"],
                _ => &[],
            };
            for key in required {
                fields.push(format!("\"{key}\": {}", text(&mut next)));
            }
            if kind == "format" {
                fields.push(format!("\"format\": \"{}\"", ["bold", "italic", "heading", "underline"][next(4)]));
            }
            if kind == "table" {
                let rel = ["up", "down", "left", "right", "top_heading", "left_heading"][next(6)];
                fields.push(format!("\"{rel}\": {}", text(&mut next)));
            }
            for _ in 0..next(3) {
                let key = KEYS[next(KEYS.len())];
                if !fields.iter().any(|f| f.starts_with(&format!("\"{key}\""))) {
                    fields.push(format!("\"{key}\": {}", value(&mut next)));
                }
            }
            lines.push(format!("{{{}}}", fields.join(", ")));
        }
        let jsonl = lines.join("\n");
        let suite = TestSuite::from_sources([("fuzz.jsonl", jsonl.as_str())]);
        assert!(suite.tests.len() > 100, "{} tests loaded", suite.tests.len());
        for round in 0..500 {
            let mut text = String::new();
            for _ in 0..next(60) {
                let f = FRAGMENTS[next(FRAGMENTS.len())];
                text.push_str(&f.repeat(1 + next(3) * usize::from(next(5) == 0) * 20));
            }
            let raw = chars(&text);
            let page = Page::new(&raw);
            for k in 0..8 {
                let test = &suite.tests[(round * 8 + k) % suite.tests.len()];
                let start = std::time::Instant::now();
                let _ = run(test, &page, Guard::ALL[k % Guard::ALL.len()]);
                let took = start.elapsed();
                assert!(took < std::time::Duration::from_secs(20), "{} on {:?}: {took:?}", test.id, text);
            }
        }
    }
}
