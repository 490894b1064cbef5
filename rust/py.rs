//! Python bindings (the only file that names pyo3). Every entry point (but the `_`-prefixed test
//! hooks, which call code the other entry points guard) catches panics, so a bug surfaces as a
//! Python exception instead of killing the caller, and work on whole texts or batches releases
//! the GIL.

use crate::checks::{Guard, Verdict};
use crate::score::CoreError;
use crate::suite::{SpecError, TestSuite};
use crate::{fuzz, score, search, text};
use pyo3::exceptions::{PyKeyError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use rayon::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn no_panic<T>(f: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|e| {
        let msg = e
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| e.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        PyRuntimeError::new_err(format!("olmocr_rl internal error (please report): {msg}"))
    })
}

#[pyfunction]
fn normalize_text(py: Python<'_>, s: &Bound<'_, PyString>) -> PyResult<PyText> {
    let (s, surrogates) = text_of(s)?;
    py.detach(|| no_panic(|| PyText(text::normalize_text(&s), surrogates)))
}

#[pyfunction]
fn ratio(a: &str, b: &str) -> PyResult<f64> {
    no_panic(|| fuzz::ratio(&text::chars(a), &text::chars(b)))
}

#[pyfunction]
fn partial_ratio(py: Python<'_>, a: &str, b: &str) -> PyResult<f64> {
    py.detach(|| no_panic(|| fuzz::partial_ratio(&text::chars(a), &text::chars(b))))
}

#[pyfunction]
fn find_near_matches(py: Python<'_>, sub: &str, seq: &str, max_l_dist: usize) -> PyResult<Vec<(usize, usize, usize)>> {
    py.detach(|| {
        no_panic(|| {
            search::find_near_matches(&text::chars(sub), &text::chars(seq), max_l_dist)
                .into_iter()
                .map(|m| (m.start, m.end, m.dist))
                .collect()
        })
    })
}

/// Test hook: the Python-compatible primitives on `s`: (str.lower, per code point isalnum,
/// isspace and isprintable, NFC).
#[pyfunction]
#[allow(clippy::type_complexity)] // a plain tuple is the simplest thing to compare in tests
fn _py_compat(s: &str) -> (String, Vec<bool>, Vec<bool>, Vec<bool>, String) {
    let c = text::chars(s);
    (
        text::string(&text::py_lower(&c)),
        c.iter().map(|&x| text::is_py_alnum(x)).collect(),
        c.iter().map(|&x| text::is_py_space(x)).collect(),
        c.iter().map(|&x| text::is_py_printable(x)).collect(),
        text::string(&text::nfc(&c)),
    )
}

/// Test hook: Python's `repr(x)`, `f"{x:.3f}"` and `f"{x:.2f}"` as the explanations print them.
#[pyfunction]
fn _fmt_float(x: f64) -> (String, String, String) {
    (text::py_float_repr(x), text::py_fixed(x, 3), text::py_fixed(x, 2))
}

/// Test hook: the tables `text` parses into (markdown tables if `markdown`, else HTML tables),
/// as JSON-like dicts (see `table::describe`). Raises ValueError where the reference raises.
#[pyfunction]
fn _parse_tables<'py>(py: Python<'py>, text: &str, markdown: bool) -> PyResult<Bound<'py, PyAny>> {
    let json = py
        .detach(|| no_panic(|| crate::table::describe(&text::chars(text), markdown)))?
        .map_err(pyo3::exceptions::PyValueError::new_err)?;
    py.import("json")?.call_method1("loads", (json,))
}

/// Leaf page counts of PDF files (`pdf::page_count_file`), files in parallel, GIL released;
/// None where a file is not understood completely (ask pypdf then).
#[pyfunction]
#[pyo3(signature = (paths, threads=None))]
fn pdf_page_counts(
    py: Python<'_>,
    paths: Vec<std::path::PathBuf>,
    threads: Option<usize>,
) -> PyResult<Vec<Option<usize>>> {
    py.detach(|| {
        no_panic(|| score::pool(threads).install(|| paths.par_iter().map(|p| crate::pdf::page_count_file(p)).collect()))
    })
}

/// Where math checks read KaTeX 0.16.21's `katex.min.js` (None: nowhere; math checks then give
/// error verdicts naming the fix). Set by `olmocr_rl._katex.configure`.
#[pyfunction]
#[pyo3(signature = (path))]
fn set_katex_path(path: Option<std::path::PathBuf>) {
    crate::math::katex::set_katex_path(path);
}

/// None if math checks can run here, else why not (and how to fix it).
#[pyfunction]
fn katex_problem(py: Python<'_>) -> PyResult<Option<String>> {
    py.detach(|| no_panic(|| crate::math::katex::available().err()))
}

/// A Python string as Rust text: lone surrogates (Python strings may hold them, Rust strings
/// cannot) become their stand-ins (`text::stand_in`), one character each, as in Python. Also
/// says whether there were any.
fn text_of(s: &Bound<'_, PyString>) -> PyResult<(String, bool)> {
    if let Ok(t) = s.to_str() {
        return Ok((t.to_owned(), false));
    }
    let encoded = s.call_method1("encode", ("utf-16-le", "surrogatepass"))?;
    let bytes: &[u8] = encoded.cast::<pyo3::types::PyBytes>()?.as_bytes();
    let units = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
    let text =
        char::decode_utf16(units).map(|r| r.unwrap_or_else(|e| text::stand_in(e.unpaired_surrogate()))).collect();
    Ok((text, true))
}

/// Rust text back to Python; with `.1` set (the inputs held lone surrogates), stand-ins become
/// the surrogates they stand for. Without it they stay what they are: real U+10F800..U+10FFFF.
struct PyText(String, bool);

impl<'py> IntoPyObject<'py> for PyText {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if !self.1 || !self.0.chars().any(|c| text::stood_in(c).is_some()) {
            return Ok(PyString::new(py, &self.0).into_any());
        }
        let mut bytes = Vec::with_capacity(self.0.len() * 2);
        for c in self.0.chars() {
            match text::stood_in(c) {
                Some(unit) => bytes.extend_from_slice(&unit.to_le_bytes()),
                None => {
                    let mut buf = [0u16; 2];
                    for unit in c.encode_utf16(&mut buf) {
                        bytes.extend_from_slice(&unit.to_le_bytes());
                    }
                }
            }
        }
        pyo3::types::PyBytes::new(py, &bytes).call_method1("decode", ("utf-16-le", "surrogatepass"))
    }
}

/// A rejected test record: where it is and why.
#[pyclass(frozen, module = "olmocr_rl._core")]
struct RecordError {
    #[pyo3(get)]
    source: String,
    #[pyo3(get)]
    line: usize,
    #[pyo3(get)]
    id: Option<String>,
    #[pyo3(get)]
    message: String,
}

/// A loaded test: its id, type, PDF, page (the JSON value as Python reads it), and where it
/// was loaded from.
#[pyclass(frozen, module = "olmocr_rl._core")]
struct Record {
    #[pyo3(get)]
    id: String,
    #[pyo3(get, name = "type")]
    kind: &'static str,
    #[pyo3(get)]
    pdf: String,
    #[pyo3(get)]
    page: Py<PyAny>,
    #[pyo3(get)]
    source: String,
    #[pyo3(get)]
    line: usize,
}

/// One test's verdict on one page; `error`: the reference would have raised.
#[pyclass(frozen, name = "Verdict", module = "olmocr_rl._core")]
struct PyVerdict {
    #[pyo3(get)]
    passed: bool,
    #[pyo3(get)]
    explanation: Py<PyAny>,
    #[pyo3(get)]
    error: bool,
}

/// A verdict in a scored page's details, with its test's id and type.
#[pyclass(frozen, module = "olmocr_rl._core")]
struct TestVerdict {
    #[pyo3(get)]
    id: String,
    #[pyo3(get, name = "type")]
    kind: &'static str,
    #[pyo3(get)]
    passed: bool,
    #[pyo3(get)]
    explanation: Py<PyAny>,
    #[pyo3(get)]
    error: bool,
}

/// One scored page: counts, (type, passed, total) in first-appearance order, the micro, macro
/// and graded rewards (None without tests), and the verdicts when details were asked for.
#[pyclass(frozen, module = "olmocr_rl._core")]
struct ScoredPage {
    #[pyo3(get)]
    passed: usize,
    #[pyo3(get)]
    total: usize,
    #[pyo3(get)]
    by_type: Vec<(&'static str, usize, usize)>,
    #[pyo3(get)]
    reward: Option<f64>,
    #[pyo3(get)]
    macro_reward: Option<f64>,
    #[pyo3(get)]
    graded: Option<f64>,
    #[pyo3(get)]
    results: Py<PyList>,
}

/// A guard by the name users write (`Guard::ALL`'s names); ValueError naming the choices.
fn guard_named(name: &str) -> PyResult<Guard> {
    Guard::from_name(name).ok_or_else(|| {
        let names: Vec<String> = Guard::ALL.iter().map(|g| format!("'{}'", g.name())).collect();
        pyo3::exceptions::PyValueError::new_err(format!("guard must be one of {}, not {name:?}", names.join(", ")))
    })
}

impl From<CoreError> for PyErr {
    fn from(e: CoreError) -> PyErr {
        match e {
            CoreError::UnknownId(id) => PyKeyError::new_err(format!("no test with id {id:?}")),
        }
    }
}

/// Verdicts for Python; `surrogates`: whether the page or the tests held lone surrogates.
fn verdicts_to_py(py: Python<'_>, verdicts: Vec<Verdict>, surrogates: bool) -> PyResult<Vec<Py<PyVerdict>>> {
    verdicts
        .into_iter()
        .map(|v| {
            let explanation = PyText(v.explanation, surrogates).into_pyobject(py)?.unbind();
            Py::new(py, PyVerdict { passed: v.passed, explanation, error: v.error })
        })
        .collect()
}

/// A test's page as Python's `json` reads it (plain page numbers directly).
fn page_value(py: Python<'_>, loads: &Bound<'_, PyAny>, page: &serde_json::Value) -> PyResult<Py<PyAny>> {
    match page.as_u64() {
        Some(n) if page.to_string().bytes().all(|b| b.is_ascii_digit()) => Ok(n.into_pyobject(py)?.into_any().unbind()),
        _ => Ok(loads.call1((page.to_string(),))?.unbind()),
    }
}

/// The compiled tests of one or more JSONL sources.
#[pyclass(frozen, module = "olmocr_rl._core")]
struct Suite {
    inner: TestSuite,
}

#[pymethods]
impl Suite {
    /// Builds a suite from (source name, JSONL text) pairs.
    #[staticmethod]
    fn from_sources(py: Python<'_>, sources: Vec<(String, String)>) -> PyResult<Self> {
        py.detach(|| {
            no_panic(|| Suite { inner: TestSuite::from_sources(sources.iter().map(|(a, b)| (a.as_str(), b.as_str()))) })
        })
    }

    fn __len__(&self) -> usize {
        self.inner.tests.len()
    }

    /// The rejected records, in file order.
    #[getter]
    fn errors(&self) -> Vec<RecordError> {
        let row = |e: &SpecError| RecordError {
            source: e.source.clone(),
            line: e.line,
            id: e.id.clone(),
            message: e.message.clone(),
        };
        self.inner.errors.iter().map(row).collect()
    }

    /// Every loaded test, in load order.
    fn records(&self, py: Python<'_>) -> PyResult<Vec<Record>> {
        let loads = py.import("json")?.getattr("loads")?;
        self.inner
            .tests
            .iter()
            .map(|t| {
                Ok(Record {
                    id: t.id.clone(),
                    kind: t.kind.name(),
                    pdf: t.pdf.clone(),
                    page: page_value(py, &loads, &t.page)?,
                    source: t.source.clone(),
                    line: t.line,
                })
            })
            .collect()
    }

    /// Runs one test on one page (`guard`: "none", the published checks, or a guard's name).
    #[pyo3(signature = (test_id, text, guard="none"))]
    fn check(&self, py: Python<'_>, test_id: &str, text: &Bound<'_, PyString>, guard: &str) -> PyResult<Py<PyVerdict>> {
        let guard = guard_named(guard)?;
        let (text, surrogates) = text_of(text)?;
        let ids = [test_id.to_string()];
        let verdicts = py.detach(|| no_panic(|| score::check_page(&self.inner, &text, &ids, guard)))??;
        let mut out = verdicts_to_py(py, verdicts, surrogates || self.inner.has_stand_ins)?;
        Ok(out.remove(0))
    }

    /// Runs each page's tests, pages in parallel (`threads`: the pool's size, default as in
    /// `score`): one list of verdicts per page, under `guard` (as in `check`). The GIL is released
    /// for the whole batch.
    #[pyo3(signature = (pages, threads=None, guard="none"))]
    fn check_batch(
        &self,
        py: Python<'_>,
        pages: Vec<(Bound<'_, PyString>, Vec<String>)>,
        threads: Option<usize>,
        guard: &str,
    ) -> PyResult<Vec<Vec<Py<PyVerdict>>>> {
        let guard = guard_named(guard)?;
        let pages: Vec<((String, bool), Vec<String>)> =
            pages.into_iter().map(|(t, ids)| Ok((text_of(&t)?, ids))).collect::<PyResult<_>>()?;
        let verdicts = py.detach(|| {
            no_panic(|| {
                let one = |((text_, _), ids): &((String, bool), Vec<String>)| {
                    score::check_page(&self.inner, text_, ids, guard)
                };
                if pages.len() <= 1 {
                    // Handing one page to the pool costs more than it saves.
                    pages.iter().map(one).collect::<Result<Vec<_>, _>>()
                } else {
                    score::pool(threads).install(|| pages.par_iter().map(one).collect())
                }
            })
        })??;
        verdicts
            .into_iter()
            .zip(&pages)
            .map(|(v, ((_, surrogates), _))| verdicts_to_py(py, v, *surrogates || self.inner.has_stand_ins))
            .collect()
    }

    /// `check_batch` on files: reads each (path, test ids) item as the reference reads page
    /// files (`files::read_text`) and runs its tests, items in parallel, GIL released. Per item:
    /// None when the file cannot be read or is not UTF-8 (re-read it in Python for the error),
    /// else its verdicts (`guard` as in `check`).
    #[pyo3(signature = (items, threads=None, guard="none"))]
    fn check_files(
        &self,
        py: Python<'_>,
        items: Vec<(std::path::PathBuf, Vec<String>)>,
        threads: Option<usize>,
        guard: &str,
    ) -> PyResult<Vec<Option<Vec<Py<PyVerdict>>>>> {
        let guard = guard_named(guard)?;
        let verdicts = py.detach(|| {
            no_panic(|| {
                let one = |(path, ids): &(std::path::PathBuf, Vec<String>)| match crate::files::read_text(path) {
                    Some(text) => score::check_page(&self.inner, &text, ids, guard).map(Some),
                    None => Ok(None),
                };
                score::pool(threads).install(|| items.par_iter().map(one).collect::<Result<Vec<_>, _>>())
            })
        })??;
        let surrogates = self.inner.has_stand_ins;
        verdicts.into_iter().map(|v| v.map(|v| verdicts_to_py(py, v, surrogates)).transpose()).collect()
    }

    /// Scores pages, each page's distinct tests in load order (see `ScoredPage`); the verdicts
    /// are kept when `details`; `guard` as in `check`.
    #[pyo3(signature = (pages, threads=None, details=false, guard="none"))]
    fn score(
        &self,
        py: Python<'_>,
        pages: Vec<(Bound<'_, PyString>, Vec<String>)>,
        threads: Option<usize>,
        details: bool,
        guard: &str,
    ) -> PyResult<Vec<ScoredPage>> {
        let guard = guard_named(guard)?;
        let mut surrogates = Vec::with_capacity(pages.len());
        let pages: Vec<(String, Vec<String>)> = pages
            .into_iter()
            .map(|(t, ids)| {
                let (text, had) = text_of(&t)?;
                surrogates.push(had || self.inner.has_stand_ins);
                Ok((text, ids))
            })
            .collect::<PyResult<_>>()?;
        let scored = py.detach(|| no_panic(|| score::score_pages(&self.inner, &pages, threads, guard)))?;
        scored
            .into_iter()
            .zip(surrogates)
            .map(|(r, surrogates)| {
                let s = r?;
                let results = PyList::empty(py);
                if details {
                    for (i, v) in &s.results {
                        let t = &self.inner.tests[*i];
                        let explanation = PyText(v.explanation.clone(), surrogates).into_pyobject(py)?.unbind();
                        let row = TestVerdict {
                            id: t.id.clone(),
                            kind: t.kind.name(),
                            passed: v.passed,
                            explanation,
                            error: v.error,
                        };
                        results.append(Py::new(py, row)?)?;
                    }
                }
                Ok(ScoredPage {
                    passed: s.passed,
                    total: s.total,
                    by_type: s.by_type.iter().map(|&(k, p, t)| (k.name(), p, t)).collect(),
                    reward: s.reward(),
                    macro_reward: s.macro_reward(),
                    graded: s.graded(),
                    results: results.unbind(),
                })
            })
            .collect()
    }
}

/// Texts of a list of Python strings (stand-ins for lone surrogates: one character each, as in
/// Python, so distances and counts are Python's).
fn texts_of(items: &[Bound<'_, PyString>]) -> PyResult<Vec<Vec<char>>> {
    items.iter().map(|s| Ok(text::chars(&text_of(s)?.0))).collect()
}

fn optional_texts_of(items: &[Option<Bound<'_, PyString>>]) -> PyResult<Vec<Option<Vec<char>>>> {
    items.iter().map(|s| s.as_ref().map(|s| Ok(text::chars(&text_of(s)?.0))).transpose()).collect()
}

fn same_length(what: &str, a: usize, b: usize) -> PyResult<()> {
    if a != b {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("{a} completions but {b} {what}")));
    }
    Ok(())
}

#[pyfunction]
fn levenshtein(py: Python<'_>, a: &Bound<'_, PyString>, b: &Bound<'_, PyString>) -> PyResult<usize> {
    let (a, b) = (text::chars(&text_of(a)?.0), text::chars(&text_of(b)?.0));
    py.detach(|| no_panic(|| crate::rewards::levenshtein::levenshtein(&a, &b)))
}

#[pyfunction]
#[pyo3(signature = (texts, groups=None, threads=None))]
fn medoid_rewards(
    py: Python<'_>,
    texts: Vec<Bound<'_, PyString>>,
    groups: Option<Vec<u64>>,
    threads: Option<usize>,
) -> PyResult<Vec<f64>> {
    let texts = texts_of(&texts)?;
    let groups = groups.unwrap_or_else(|| vec![0; texts.len()]);
    same_length("group labels", texts.len(), groups.len())?;
    py.detach(|| no_panic(|| score::pool(threads).install(|| crate::rewards::medoid::medoid_rewards(&texts, &groups))))
}

#[pyfunction]
#[pyo3(signature = (texts, references, threads=None))]
fn edit_similarities(
    py: Python<'_>,
    texts: Vec<Bound<'_, PyString>>,
    references: Vec<Option<Bound<'_, PyString>>>,
    threads: Option<usize>,
) -> PyResult<Vec<f64>> {
    same_length("references", texts.len(), references.len())?;
    let (texts, refs) = (texts_of(&texts)?, optional_texts_of(&references)?);
    py.detach(|| {
        no_panic(|| {
            score::pool(threads).install(|| {
                texts.par_iter().zip(&refs).map(|(t, r)| crate::rewards::edit_similarity(t, r.as_deref())).collect()
            })
        })
    })
}

#[pyfunction]
fn element_counts(text: &Bound<'_, PyString>) -> PyResult<(usize, usize)> {
    let text = crate::text::chars(&text_of(text)?.0);
    no_panic(|| crate::rewards::elements::element_counts(&text))
}

#[pyfunction]
#[pyo3(signature = (texts, references, threads=None))]
fn element_count_rewards(
    py: Python<'_>,
    texts: Vec<Bound<'_, PyString>>,
    references: Vec<Option<Bound<'_, PyString>>>,
    threads: Option<usize>,
) -> PyResult<Vec<f64>> {
    same_length("references", texts.len(), references.len())?;
    let (texts, refs) = (texts_of(&texts)?, optional_texts_of(&references)?);
    py.detach(|| {
        no_panic(|| {
            score::pool(threads).install(|| {
                texts
                    .par_iter()
                    .zip(&refs)
                    .map(|(t, r)| crate::rewards::elements::element_count_reward(t, r.as_deref()))
                    .collect()
            })
        })
    })
}

#[pyfunction]
#[pyo3(signature = (texts, threads=None))]
fn rect_table_shares(
    py: Python<'_>,
    texts: Vec<Bound<'_, PyString>>,
    threads: Option<usize>,
) -> PyResult<Vec<Option<f64>>> {
    let texts = texts_of(&texts)?;
    py.detach(|| {
        no_panic(|| {
            score::pool(threads)
                .install(|| texts.par_iter().map(|t| crate::rewards::elements::rect_table_share(t)).collect())
        })
    })
}

/// A rule from Python's three numbers; ValueError saying what is wrong.
fn loop_rule(max_period: usize, min_repeats: usize, min_span: usize) -> PyResult<crate::loops::LoopRule> {
    crate::loops::LoopRule::new(max_period, min_repeats, min_span).map_err(pyo3::exceptions::PyValueError::new_err)
}

/// A loop found (`loops::Loop`): the periodic suffix's start, its period, and the length at which
/// the rule first held.
#[pyclass(frozen, eq, name = "Loop", module = "olmocr_rl._core")]
#[derive(PartialEq)]
struct PyLoop {
    #[pyo3(get)]
    start: usize,
    #[pyo3(get)]
    period: usize,
    #[pyo3(get)]
    cut: usize,
}

#[pymethods]
impl PyLoop {
    #[new]
    fn new(start: usize, period: usize, cut: usize) -> Self {
        PyLoop { start, period, cut }
    }

    fn __repr__(&self) -> String {
        format!("Loop(start={}, period={}, cut={})", self.start, self.period, self.cut)
    }

    fn __getnewargs__(&self) -> (usize, usize, usize) {
        (self.start, self.period, self.cut)
    }
}

fn py_loop(found: Option<crate::loops::Loop>) -> Option<PyLoop> {
    found.map(|l| PyLoop { start: l.start, period: l.period, cut: l.cut })
}

/// The incremental detector (`loops::LoopDetector`), one per completion being generated.
#[pyclass(name = "LoopDetector", module = "olmocr_rl._core")]
struct PyLoopDetector {
    inner: crate::loops::LoopDetector,
}

#[pymethods]
impl PyLoopDetector {
    #[new]
    fn new(max_period: usize, min_repeats: usize, min_span: usize) -> PyResult<Self> {
        Ok(PyLoopDetector { inner: crate::loops::LoopDetector::new(loop_rule(max_period, min_repeats, min_span)?) })
    }

    /// Feeds tokens; the loop once found.
    fn extend(&mut self, tokens: Vec<u32>) -> PyResult<Option<PyLoop>> {
        let inner = &mut self.inner;
        no_panic(|| py_loop(inner.extend(&tokens)))
    }

    #[getter]
    fn found(&self) -> Option<PyLoop> {
        py_loop(self.inner.found())
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

#[pyfunction]
fn find_loop(
    py: Python<'_>,
    tokens: Vec<u32>,
    max_period: usize,
    min_repeats: usize,
    min_span: usize,
) -> PyResult<Option<PyLoop>> {
    let rule = loop_rule(max_period, min_repeats, min_span)?;
    py.detach(|| no_panic(|| py_loop(crate::loops::find_loop(&tokens, rule))))
}

#[pyfunction]
fn find_loop_text(
    py: Python<'_>,
    text: &Bound<'_, PyString>,
    max_period: usize,
    min_repeats: usize,
    min_span: usize,
) -> PyResult<Option<PyLoop>> {
    let rule = loop_rule(max_period, min_repeats, min_span)?;
    let points: Vec<u32> = text::chars(&text_of(text)?.0).into_iter().map(|c| c as u32).collect();
    py.detach(|| no_panic(|| py_loop(crate::loops::find_loop(&points, rule))))
}

#[pyfunction]
fn longest_runs_text(py: Python<'_>, text: &Bound<'_, PyString>, max_period: usize) -> PyResult<Vec<usize>> {
    let points: Vec<u32> = text::chars(&text_of(text)?.0).into_iter().map(|c| c as u32).collect();
    py.detach(|| no_panic(|| crate::loops::longest_runs(&points, max_period)))
}

#[pyfunction]
fn longest_runs(py: Python<'_>, tokens: Vec<u32>, max_period: usize) -> PyResult<Vec<usize>> {
    py.detach(|| no_panic(|| crate::loops::longest_runs(&tokens, max_period)))
}

#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("UNICODE_VERSION", crate::unicode_tables::UNICODE_VERSION)?;
    m.add_function(wrap_pyfunction!(normalize_text, m)?)?;
    m.add_function(wrap_pyfunction!(ratio, m)?)?;
    m.add_function(wrap_pyfunction!(levenshtein, m)?)?;
    m.add_function(wrap_pyfunction!(medoid_rewards, m)?)?;
    m.add_function(wrap_pyfunction!(edit_similarities, m)?)?;
    m.add_function(wrap_pyfunction!(element_counts, m)?)?;
    m.add_function(wrap_pyfunction!(element_count_rewards, m)?)?;
    m.add_function(wrap_pyfunction!(rect_table_shares, m)?)?;
    m.add_function(wrap_pyfunction!(partial_ratio, m)?)?;
    m.add_function(wrap_pyfunction!(find_near_matches, m)?)?;
    m.add_function(wrap_pyfunction!(_py_compat, m)?)?;
    m.add_function(wrap_pyfunction!(_fmt_float, m)?)?;
    m.add_function(wrap_pyfunction!(_parse_tables, m)?)?;
    m.add_function(wrap_pyfunction!(pdf_page_counts, m)?)?;
    m.add_function(wrap_pyfunction!(set_katex_path, m)?)?;
    m.add_function(wrap_pyfunction!(katex_problem, m)?)?;
    m.add_function(wrap_pyfunction!(find_loop, m)?)?;
    m.add_function(wrap_pyfunction!(find_loop_text, m)?)?;
    m.add_function(wrap_pyfunction!(longest_runs, m)?)?;
    m.add_function(wrap_pyfunction!(longest_runs_text, m)?)?;
    m.add("LOOP_MAX_PERIOD_BOUND", crate::loops::MAX_PERIOD_BOUND)?;
    m.add_class::<PyLoop>()?;
    m.add_class::<PyLoopDetector>()?;
    m.add_class::<Suite>()?;
    m.add_class::<PyVerdict>()?;
    m.add_class::<TestVerdict>()?;
    m.add_class::<ScoredPage>()?;
    m.add_class::<Record>()?;
    m.add_class::<RecordError>()?;
    Ok(())
}
