//! Test records: parsing and load-time validation of olmOCR-bench test JSONL (docs/checks.md §1.3).
//!
//! What it does: turns each JSONL line into a [`Test`], accepting and rejecting exactly what the
//! reference's `load_single_test` accepts and rejects (unknown keys, missing keys, empty
//! fields after `normalize_text`, `max_diffs` that is not a non-negative int, order tests whose
//! `max_diffs` exceeds half a string, ...). Values the reference does not type-check at load time
//! (e.g. a string `first_n`) load here too and make the check report an error at run time, where
//! the reference raises.
//!
//! Differences from upstream (documented, deliberate):
//! * JSON: Python's `json` accepts `NaN`/`Infinity` literals; these lines are rejected here with
//!   a clear error. Lone surrogate escapes (`"\ud800"`) load as the reference loads them, as
//!   stand-ins (`text::stand_in`).
//! * Non-string ids are accepted as the reference does and keyed by their JSON text (`5` → "5").
//! * Integers beyond 2^127 in `max_diffs` saturate (thresholds are far below 0 either way, but
//!   the threshold printed in an explanation would differ). An integer literal of more than
//!   4,300 digits anywhere in a line rejects the line, as CPython's `json.loads` does.

use crate::fuzz::PartialRatioNeedle;
use crate::text::{chars, normalize, py_lower, py_strip};
use serde_json::{Map, Number, Value};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Present,
    Absent,
    Order,
    Table,
    Math,
    Baseline,
    Format,
    Footnote,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Present,
        Kind::Absent,
        Kind::Order,
        Kind::Table,
        Kind::Math,
        Kind::Baseline,
        Kind::Format,
        Kind::Footnote,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Present => "present",
            Kind::Absent => "absent",
            Kind::Order => "order",
            Kind::Table => "table",
            Kind::Math => "math",
            Kind::Baseline => "baseline",
            Kind::Format => "format",
            Kind::Footnote => "footnote",
        }
    }

    pub fn from_name(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    fn fields(self) -> &'static [&'static str] {
        match self {
            Kind::Present | Kind::Absent => &["text", "case_sensitive", "first_n", "last_n"],
            Kind::Order => &["before", "after"],
            Kind::Table => {
                &["cell", "up", "down", "left", "right", "top_heading", "left_heading", "ignore_markdown_tables"]
            }
            Kind::Math => &["math", "ignore_dollar_delimited"],
            Kind::Baseline => {
                &["max_length", "max_length_skips_image_alt_tags", "max_repeats", "check_disallowed_characters"]
            }
            Kind::Format => &["text", "format", "case_sensitive"],
            Kind::Footnote => &["marker", "appears_before_marker", "appears_after_marker"],
        }
    }

    fn required(self) -> &'static [&'static str] {
        match self {
            Kind::Present | Kind::Absent | Kind::Format => &["text"],
            Kind::Order => &["before", "after"],
            Kind::Table => &["cell"],
            Kind::Math => &["math"],
            Kind::Baseline => &[],
            Kind::Footnote => &["marker"],
        }
    }
}

const COMMON: [&str; 7] = ["pdf", "page", "id", "type", "max_diffs", "checked", "url"];

/// A JSON value the reference uses as a Python int (slice bound, comparison operand), or the
/// reason Python would raise `TypeError` when it does.
#[derive(Debug, Clone, PartialEq)]
pub enum PyNum {
    Int(i128),
    Float(f64),
    /// Not a number in Python (str, list, dict, None): using it raises TypeError.
    Invalid(&'static str),
}

impl PyNum {
    fn from_value(v: &Value) -> PyNum {
        match v {
            Value::Bool(b) => PyNum::Int(i128::from(*b)),
            Value::Number(n) => number(n),
            other => PyNum::Invalid(type_name(other)),
        }
    }

    /// Python `count > self`.
    pub fn lt(&self, count: usize) -> Result<bool, String> {
        match self {
            PyNum::Int(i) => Ok((count as i128) > *i),
            PyNum::Float(f) => Ok((count as f64) > *f),
            PyNum::Invalid(t) => Err(format!("TypeError: '>' not supported between instances of 'int' and '{t}'")),
        }
    }
}

fn number(n: &Number) -> PyNum {
    let lit = n.to_string();
    if lit.contains(['.', 'e', 'E']) {
        PyNum::Float(n.as_f64().unwrap_or(f64::NAN))
    } else {
        // Python ints are unbounded; beyond i128 the exact value never matters here.
        let neg = lit.starts_with('-');
        PyNum::Int(lit.parse::<i128>().unwrap_or(if neg { i128::MIN } else { i128::MAX }))
    }
}

/// Python's name for the type of a JSON value.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) => match number(n) {
            PyNum::Float(_) => "float",
            _ => "int",
        },
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Python truthiness of a JSON value.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => match number(n) {
            PyNum::Int(i) => i != 0,
            PyNum::Float(f) => f != 0.0,
            PyNum::Invalid(_) => true,
        },
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A `first_n`/`last_n` value: unused when falsy, else it must be an int (or bool) for slicing.
#[derive(Debug, Clone, PartialEq)]
pub enum SliceArg {
    Off,
    At(i64),
    Invalid(&'static str),
}

impl SliceArg {
    fn from_value(v: Option<&Value>) -> SliceArg {
        let Some(v) = v else { return SliceArg::Off };
        if !truthy(v) {
            return SliceArg::Off;
        }
        match PyNum::from_value(v) {
            PyNum::Int(i) => SliceArg::At(i.clamp(i64::MIN as i128, i64::MAX as i128) as i64),
            PyNum::Float(_) => SliceArg::Invalid("float"),
            PyNum::Invalid(t) => SliceArg::Invalid(t),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Heading,
    Bold,
    Italic,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Heading => "heading",
            Format::Bold => "bold",
            Format::Italic => "italic",
        }
    }
}

/// The type-specific part of a test, with string fields already normalized as the reference
/// does at load time.
#[derive(Debug, Clone)]
pub enum Spec {
    Presence {
        text: Vec<char>,
        case_sensitive: bool,
        first_n: SliceArg,
        last_n: SliceArg,
        /// The string searched for, compiled once: `text`, lowercased unless `case_sensitive`.
        query: Box<PartialRatioNeedle>,
    },
    Order {
        before: Vec<char>,
        after: Vec<char>,
    },
    Table {
        /// `None` when the record says `"cell": null` (the reference raises at run time).
        cell: Option<Vec<char>>,
        /// up, down, left, right, top_heading, left_heading; `None`/empty means "not checked".
        relations: [Option<Vec<char>>; 6],
        ignore_markdown_tables: bool,
    },
    Math {
        math: String,
        ignore_dollar_delimited: bool,
    },
    Baseline {
        max_length: Option<PyNum>,
        max_length_skips_image_alt_tags: bool,
        max_repeats: PyNum,
        check_disallowed_characters: bool,
    },
    Format {
        text: Vec<char>,
        format: Format,
        case_sensitive: bool,
    },
    Footnote {
        /// `Err(type)` for a truthy non-string marker (the reference raises at run time).
        marker: Result<Vec<char>, &'static str>,
        before: Option<Vec<char>>,
        after: Option<Vec<char>>,
    },
}

/// One loaded test.
#[derive(Debug, Clone)]
pub struct Test {
    pub id: String,
    pub pdf: String,
    pub page: Value,
    pub kind: Kind,
    /// Python `int(max_diffs)` (booleans are 0/1), saturated at 2^127.
    pub max_diffs: u128,
    /// `str(max_diffs)` as Python prints it in explanations ("2", "True").
    pub max_diffs_text: String,
    pub spec: Spec,
    /// Where the record came from, for messages.
    pub source: String,
    pub line: usize,
}

/// A record the reference would reject, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    pub source: String,
    pub line: usize,
    pub id: Option<String>,
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.source, self.line)?;
        if let Some(id) = &self.id {
            write!(f, "test {id:?}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for SpecError {}

fn id_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Parses and validates one JSONL record (already stripped of surrounding whitespace).
pub fn parse_record(line: &str, source: &str, line_no: usize) -> Result<Test, SpecError> {
    parse_prepared(line, &crate::text::json_stand_ins(line), source, line_no)
}

/// [`parse_record`] of `line`, whose lone surrogate escapes `json` already replaced.
fn parse_prepared(line: &str, json: &str, source: &str, line_no: usize) -> Result<Test, SpecError> {
    let err =
        |id: Option<String>, message: String| SpecError { source: source.to_string(), line: line_no, id, message };
    if line.starts_with('\u{feff}') {
        return Err(err(
            None,
            "invalid JSON: the line starts with a byte-order mark (U+FEFF); save the file as UTF-8 without a BOM \
             (the reference's json.loads rejects it too: \"Unexpected UTF-8 BOM\")"
                .to_string(),
        ));
    }
    let value: Value = serde_json::from_str(json).map_err(|e| err(None, format!("invalid JSON: {e}")))?;
    if let Some(digits) = longest_integer(&value).filter(|&d| d > PY_INT_MAX_STR_DIGITS) {
        return Err(err(
            None,
            format!(
                "invalid JSON: an integer of {digits} digits exceeds Python's limit of \
                 {PY_INT_MAX_STR_DIGITS} digits for integer string conversion (the reference rejects it too)"
            ),
        ));
    }
    let Value::Object(obj) = value else {
        return Err(err(None, format!("expected a JSON object, got {}", type_name(&value))));
    };
    let id = obj.get("id").filter(|v| truthy(v)).map(id_text);
    validate(&obj, source, line_no).map_err(|m| err(id, m))
}

/// CPython's default `sys.get_int_max_str_digits()`: `json.loads` raises ValueError on a longer
/// integer literal, so the reference fails to load such a line.
const PY_INT_MAX_STR_DIGITS: usize = 4300;

/// The digit count of the longest integer literal in a JSON value (numbers keep their text:
/// serde_json's `arbitrary_precision`), iteratively so deep nesting cannot overflow the stack.
fn longest_integer(value: &Value) -> Option<usize> {
    let mut longest = None;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Number(n) => {
                let text = n.to_string();
                if !text.contains(['.', 'e', 'E']) {
                    let digits = text.trim_start_matches('-').len();
                    longest = longest.max(Some(digits));
                }
            }
            Value::Array(items) => stack.extend(items.iter()),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    longest
}

fn get_str_field(obj: &Map<String, Value>, key: &str) -> Result<Option<Vec<char>>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(normalize(&chars(s)))),
        Some(other) => Err(format!("field '{key}' must be a string, got {}", type_name(other))),
    }
}

fn non_empty(key: &str, v: Vec<char>) -> Result<Vec<char>, String> {
    if py_strip(&v).is_empty() {
        Err(format!("field '{key}' is empty after normalization"))
    } else {
        Ok(v)
    }
}

fn required_text(obj: &Map<String, Value>, key: &str) -> Result<Vec<char>, String> {
    match get_str_field(obj, key)? {
        Some(v) => non_empty(key, v),
        None => Err(format!("field '{key}' must be a string, got NoneType")),
    }
}

fn flag(obj: &Map<String, Value>, key: &str, default: bool) -> bool {
    obj.get(key).map_or(default, truthy)
}

fn validate(obj: &Map<String, Value>, source: &str, line: usize) -> Result<Test, String> {
    let kind = match obj.get("type") {
        Some(Value::String(s)) => Kind::from_name(s),
        _ => None,
    }
    .ok_or_else(|| {
        format!("unknown test type {}", obj.get("type").map_or("(missing)".to_string(), |v| v.to_string()))
    })?;
    let allowed = |k: &str| COMMON.contains(&k) || kind.fields().contains(&k);
    let unknown: Vec<&str> = obj.keys().map(String::as_str).filter(|k| !allowed(k)).collect();
    if !unknown.is_empty() {
        return Err(format!("unexpected field(s) for a {} test: {}", kind.name(), unknown.join(", ")));
    }
    for key in ["pdf", "page", "id"].iter().chain(kind.required()) {
        if !obj.contains_key(*key) {
            return Err(format!("missing required field '{key}'"));
        }
    }
    if !obj.get("pdf").is_some_and(truthy) {
        return Err("PDF filename cannot be empty".into());
    }
    if !obj.get("id").is_some_and(truthy) {
        return Err("Test ID cannot be empty".into());
    }
    if let Some(why) = obj.get("page").and_then(page_error) {
        return Err(why);
    }
    let max_diffs = match obj.get("max_diffs").map(PyNum::from_value) {
        None => 0,
        Some(PyNum::Int(i)) if i >= 0 => i as u128,
        Some(_) => return Err("max_diffs must be a non-negative integer".into()),
    };
    let max_diffs_text = match obj.get("max_diffs") {
        Some(Value::Bool(true)) => "True".to_string(),
        Some(Value::Bool(false)) => "False".to_string(),
        _ => max_diffs.to_string(),
    };
    let spec = match kind {
        Kind::Present | Kind::Absent => {
            let text = required_text(obj, "text")?;
            let case_sensitive = flag(obj, "case_sensitive", true);
            let query = if case_sensitive { text.clone() } else { py_lower(&text) };
            let query = Box::new(PartialRatioNeedle::reusable(&query));
            Spec::Presence {
                text,
                case_sensitive,
                first_n: SliceArg::from_value(obj.get("first_n")),
                last_n: SliceArg::from_value(obj.get("last_n")),
                query,
            }
        }
        Kind::Order => {
            let before = required_text(obj, "before")?;
            let after = required_text(obj, "after")?;
            let half = (before.len() / 2).min(after.len() / 2) as u128;
            if max_diffs > half {
                return Err(format!(
                    "max_diffs {max_diffs} is more than half of 'before' ({}) or 'after' ({})",
                    before.len(),
                    after.len()
                ));
            }
            Spec::Order { before, after }
        }
        Kind::Table => {
            let rel = |k: &str| get_str_field(obj, k);
            Spec::Table {
                cell: rel("cell")?,
                relations: [
                    rel("up")?,
                    rel("down")?,
                    rel("left")?,
                    rel("right")?,
                    rel("top_heading")?,
                    rel("left_heading")?,
                ],
                ignore_markdown_tables: flag(obj, "ignore_markdown_tables", false),
            }
        }
        Kind::Math => match obj.get("math") {
            Some(Value::String(m)) if !py_strip(&chars(m)).is_empty() => {
                Spec::Math { math: m.clone(), ignore_dollar_delimited: flag(obj, "ignore_dollar_delimited", false) }
            }
            Some(Value::String(_)) => return Err("Math test must have non-empty math expression".into()),
            Some(other) => return Err(format!("field 'math' must be a string, got {}", type_name(other))),
            None => unreachable!("checked as required"),
        },
        Kind::Baseline => Spec::Baseline {
            max_length: match obj.get("max_length") {
                None | Some(Value::Null) => None,
                Some(v) => Some(PyNum::from_value(v)),
            },
            max_length_skips_image_alt_tags: flag(obj, "max_length_skips_image_alt_tags", false),
            max_repeats: obj.get("max_repeats").map_or(PyNum::Int(30), PyNum::from_value),
            check_disallowed_characters: flag(obj, "check_disallowed_characters", true),
        },
        Kind::Format => {
            let text = required_text(obj, "text")?;
            let format = match obj.get("format") {
                Some(Value::String(s)) if s == "heading" => Format::Heading,
                Some(Value::String(s)) if s == "bold" => Format::Bold,
                Some(Value::String(s)) if s == "italic" => Format::Italic,
                other => {
                    return Err(format!(
                        "Invalid format type: {}. Must be 'heading', 'bold', or 'italic'",
                        other.map_or("(missing)".into(), |v| v.to_string())
                    ))
                }
            };
            Spec::Format { text, format, case_sensitive: flag(obj, "case_sensitive", true) }
        }
        Kind::Footnote => Spec::Footnote {
            marker: footnote_marker(obj.get("marker"))?,
            before: optional_text(obj, "appears_before_marker")?,
            after: optional_text(obj, "appears_after_marker")?,
        },
    };
    Ok(Test {
        id: obj.get("id").map(id_text).unwrap_or_default(),
        pdf: obj.get("pdf").map(id_text).unwrap_or_default(),
        page: obj.get("page").cloned().unwrap_or(Value::Null),
        kind,
        max_diffs,
        max_diffs_text,
        spec,
        source: source.to_string(),
        line,
    })
}

/// Why `page` is not a page number, or None. A page is a JSON integer from 1 to 2^63 - 1, or a
/// string of ASCII digits naming one ("3": the reference pastes the page into the regex
/// `_pg{page}_`, so it runs such a test on page 3's files, though its coverage check never counts
/// it as page 3). The reference accepts any value, and pastes it into that regex: a float never
/// matches a page file, a huge integer breaks JSON writers, a string can be a pattern that hangs.
fn page_error(page: &Value) -> Option<String> {
    let ok = match page {
        Value::Number(n) => n.as_i64().is_some_and(|i| i >= 1),
        Value::String(s) => !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && s.bytes().any(|b| b != b'0'),
        _ => false,
    };
    if ok {
        return None;
    }
    let mut shown = page.to_string();
    if shown.chars().count() > 40 {
        shown = shown.chars().take(40).collect::<String>() + "...";
    }
    Some(format!(
        "page must be a whole number from 1 to {} (a JSON integer, or a string of its digits), not {shown}",
        i64::MAX
    ))
}

/// `marker`: falsy → rejected; `" " in marker` → rejected (for a list it tests elements, for a
/// dict keys; numbers raise TypeError). A truthy list/dict loads and fails at run time.
fn footnote_marker(v: Option<&Value>) -> Result<Result<Vec<char>, &'static str>, String> {
    let v = v.filter(|v| truthy(v)).ok_or("marker field is required")?;
    let space = " ".to_string();
    match v {
        Value::String(s) if s.contains(' ') => Err("Marker cannot contain whitespace".into()),
        Value::String(s) => Ok(Ok(chars(s))),
        Value::Array(a) if a.contains(&Value::String(space.clone())) => Err("Marker cannot contain whitespace".into()),
        Value::Object(o) if o.contains_key(&space) => Err("Marker cannot contain whitespace".into()),
        Value::Array(_) | Value::Object(_) => Ok(Err(type_name(v))),
        other => Err(format!("marker must be a string, got {}", type_name(other))),
    }
}

/// appears_before/after_marker: falsy → absent; otherwise a string, non-empty after normalize.
fn optional_text(obj: &Map<String, Value>, key: &str) -> Result<Option<Vec<char>>, String> {
    match obj.get(key) {
        Some(v) if truthy(v) => match v {
            Value::String(s) => {
                let n = normalize(&chars(s));
                if py_strip(&n).is_empty() {
                    Err(format!("{key} field cannot be empty if provided"))
                } else {
                    Ok(Some(n))
                }
            }
            other => Err(format!("field '{key}' must be a string, got {}", type_name(other))),
        },
        _ => Ok(None),
    }
}

/// Splits a file's text into lines as Python's text mode does (universal newlines), numbering
/// from 1, and yields the non-blank ones (after Python `strip()`).
pub fn jsonl_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut lines = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..i]);
                start = i + 1;
            }
            b'\r' => {
                lines.push(&text[start..i]);
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines.into_iter().enumerate().filter_map(|(i, l)| {
        let t = l.trim_matches(crate::text::is_py_space);
        (!t.is_empty()).then_some((i + 1, t))
    })
}

/// The result of loading one or more JSONL sources.
#[derive(Debug, Default)]
pub struct Loaded {
    pub tests: Vec<Test>,
    pub errors: Vec<SpecError>,
    /// Whether some line held a lone surrogate escape.
    pub stand_ins: bool,
}

/// Loads every record of one JSONL text; bad records become errors, good ones are kept.
pub fn load_jsonl(text: &str, source: &str, out: &mut Loaded) {
    for (line_no, line) in jsonl_lines(text) {
        let json = crate::text::json_stand_ins(line);
        out.stand_ins |= matches!(json, std::borrow::Cow::Owned(_));
        match parse_prepared(line, &json, source, line_no) {
            Ok(t) => out.tests.push(t),
            Err(e) => out.errors.push(e),
        }
    }
}

/// Loaded tests indexed by id; records that failed validation are kept as errors.
#[derive(Debug, Default)]
pub struct TestSuite {
    pub tests: Vec<Test>,
    pub errors: Vec<SpecError>,
    /// Whether some record holds a lone surrogate escape (so texts hold stand-ins for them).
    pub has_stand_ins: bool,
    index: std::collections::HashMap<String, usize>,
}

impl TestSuite {
    /// Loads `(source name, JSONL text)` pairs in order. A duplicate id is an error on the
    /// later record (the first one is kept).
    pub fn from_sources<'a>(sources: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut loaded = Loaded::default();
        for (name, text) in sources {
            load_jsonl(text, name, &mut loaded);
        }
        let mut suite = TestSuite { errors: loaded.errors, has_stand_ins: loaded.stand_ins, ..Default::default() };
        for test in loaded.tests {
            if let Some(&first) = suite.index.get(&test.id) {
                let prev = &suite.tests[first];
                suite.errors.push(SpecError {
                    source: test.source.clone(),
                    line: test.line,
                    id: Some(test.id.clone()),
                    message: format!("duplicate test id (first defined at {}:{})", prev.source, prev.line),
                });
                continue;
            }
            suite.index.insert(test.id.clone(), suite.tests.len());
            suite.tests.push(test);
        }
        suite.errors.sort_by(|a, b| (&a.source, a.line).cmp(&(&b.source, b.line)));
        suite
    }

    pub fn get(&self, id: &str) -> Option<&Test> {
        self.index.get(id).map(|&i| &self.tests[i])
    }

    /// The load-order position of a test.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(line: &str) -> Result<Test, SpecError> {
        parse_record(line, "t.jsonl", 1)
    }

    #[test]
    fn accepts_and_rejects_like_the_reference() {
        let base = r#""pdf":"a.pdf","page":1,"id":"x""#;
        let ok = |s: &str| load(&format!("{{{base},{s}}}")).is_ok();
        assert!(ok(r#""type":"present","text":"hi""#));
        assert!(ok(r#""type":"present","text":"hi","max_diffs":true"#));
        assert!(!ok(r#""type":"present","text":"hi","max_diffs":1.0"#));
        assert!(!ok(r#""type":"present","text":"hi","max_diffs":-1"#));
        assert!(!ok(r#""type":"present","text":"**""#));
        assert!(!ok(r#""type":"present","text":null"#));
        assert!(!ok(r#""type":"present","text":"hi","notes":"x""#));
        assert!(!ok(r#""type":"baseline","text":"x""#));
        assert!(ok(r#""type":"baseline","max_length":"x""#));
        assert!(!ok(r#""type":"order","before":"abcd","after":"abcdef","max_diffs":3"#));
        assert!(ok(r#""type":"order","before":"abcd","after":"abcdef","max_diffs":2"#));
        assert!(ok(r#""type":"table","cell":null"#));
        assert!(!ok(r#""type":"table","cell":3"#));
        assert!(!ok(r#""type":"footnote","marker":1"#));
        assert!(!ok(r#""type":"footnote","marker":"a b""#));
        assert!(ok(r#""type":"footnote","marker":"a\tb""#));
        assert!(ok(r#""type":"footnote","marker":["a"]"#));
        assert!(ok(r#""type":"footnote","marker":"1","appears_before_marker":"""#));
        assert!(!ok(r#""type":"footnote","marker":"1","appears_before_marker":" ""#));
        assert!(!ok(r#""type":"format","text":"x","format":"underline""#));
        assert!(!ok(r#""type":"math","math":"  ""#));
        assert!(!ok(r#""type":"nope""#));
        assert!(load(r#"{"type":"present","text":"x","pdf":"","page":1,"id":"x"}"#).is_err());
        assert!(load(r#"{"type":"present","text":"x","pdf":"a","page":1,"id":5}"#).is_ok());
        assert!(load("[1]").is_err());
        for page in ["1", "9223372036854775807", "\"3\"", "\"0012\""] {
            assert!(load(&format!(r#"{{"type":"baseline","pdf":"a","id":"x","page":{page}}}"#)).is_ok(), "{page}");
        }
        for page in [
            "0",
            "-1",
            "1.0",
            "1e20",
            "100000000000000000000",
            "9223372036854775808",
            "true",
            "null",
            "[1]",
            "\"\"",
            "\"0\"",
            "\"1_|(a|a)*b\"",
            "\" 3\"",
            "\"3.0\"",
        ] {
            let err = load(&format!(r#"{{"type":"baseline","pdf":"a","id":"x","page":{page}}}"#)).unwrap_err();
            assert!(err.to_string().contains("page must be a whole number from 1"), "{page}: {err}");
        }
    }

    #[test]
    fn universal_newlines_and_blank_lines() {
        let text = "a\r\nb\rc\n\n \u{a0}\nd";
        let lines: Vec<_> = jsonl_lines(text).collect();
        assert_eq!(lines, vec![(1, "a"), (2, "b"), (3, "c"), (6, "d")]);
    }

    #[test]
    fn errors_name_file_line_and_id() {
        let mut out = Loaded::default();
        load_jsonl(
            "{\"pdf\":\"a\",\"page\":1,\"id\":\"ok\",\"type\":\"present\",\"text\":\"x\"}\n\
             {\"pdf\":\"a\",\"page\":1,\"id\":\"bad\",\"type\":\"present\",\"text\":\"\"}\n",
            "f.jsonl",
            &mut out,
        );
        assert_eq!(out.tests.len(), 1);
        assert_eq!(out.errors[0].to_string(), "f.jsonl:2: test \"bad\": field 'text' is empty after normalization");
    }
}
