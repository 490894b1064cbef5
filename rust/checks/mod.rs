//! The olmOCR-bench checks. Each type lives in its own file, which opens with what it checks,
//! when it passes, and its known differences from upstream.

pub mod baseline;
pub mod footnote;
pub mod format;
pub mod order;
pub mod presence;

use crate::suite::{Kind, Spec, Test};
use crate::text::{normalize, py_lower};
use std::cell::OnceCell;

/// A check's verdict, as the reference's `(passed, explanation)`; `error` marks inputs on which
/// the reference raises an exception (counted as a failure there too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub passed: bool,
    pub explanation: String,
    pub error: bool,
}

impl Verdict {
    pub fn pass() -> Self {
        Verdict { passed: true, explanation: String::new(), error: false }
    }
    pub fn fail(explanation: String) -> Self {
        Verdict { passed: false, explanation, error: false }
    }
    /// The reference raises here; we fail the test and say why.
    pub fn error(explanation: String) -> Self {
        Verdict { passed: false, explanation: format!("error: {explanation}"), error: true }
    }
}

/// One page of model output, with the derived forms several tests share computed once.
pub struct Page<'a> {
    raw: &'a [char],
    normalized: OnceCell<Vec<char>>,
    normalized_lower: OnceCell<Vec<char>>,
}

impl<'a> Page<'a> {
    pub fn new(raw: &'a [char]) -> Self {
        Page { raw, normalized: OnceCell::new(), normalized_lower: OnceCell::new() }
    }
    pub fn raw(&self) -> &'a [char] {
        self.raw
    }
    /// `normalize_text(content)`.
    pub fn normalized(&self) -> &[char] {
        self.normalized.get_or_init(|| normalize(self.raw))
    }
    /// `normalize_text(content).lower()`.
    pub fn normalized_lower(&self) -> &[char] {
        self.normalized_lower.get_or_init(|| py_lower(self.normalized()))
    }
}

/// `1.0 - max_diffs / len` as the reference computes it (divisor 1 for an empty string).
pub fn threshold(max_diffs: u64, len: usize) -> f64 {
    1.0 - (max_diffs as f64) / (len.max(1) as f64)
}

/// Runs `test` on `page`. `None` for the types whose checks live elsewhere (table, math).
pub fn run(test: &Test, page: &Page) -> Option<Verdict> {
    Some(match &test.spec {
        Spec::Presence { .. } => presence::check(test, page),
        Spec::Order { before, after } => order::check(before, after, test.max_diffs, page),
        Spec::Baseline { .. } => baseline::check(&test.spec, page.raw()),
        Spec::Format { .. } => format::check(test, page.raw()),
        Spec::Footnote { .. } => footnote::check(test, page.raw()),
        Spec::Table { .. } | Spec::Math { .. } => return None,
    })
}

/// Whether `kind` has a check in this build.
pub fn supported(kind: Kind) -> bool {
    !matches!(kind, Kind::Table | Kind::Math)
}
