//! HTML as the reference's table parser sees it (docs/checks.md §4.2).
//!
//! The reference runs `BeautifulSoup(content, "html.parser")`: CPython 3.11.7's
//! `html.parser.HTMLParser` tokenizer, driven by beautifulsoup4 4.15 with `convert_charrefs=False`,
//! feeding bs4's tree builder. This module is our own emulation of the rules those two apply;
//! every rule below was checked against them.
//!
//! Tokenizer (CPython `goahead`):
//! * The input is processed twice, as `feed()` then `close()` do: a first pass that stops at the
//!   first construct it cannot finish (an unterminated tag, comment or declaration, a bare `&#`,
//!   `&name` at the very end...), then a second pass from there in which an unfinished construct
//!   becomes text up to the next `>` (or `<`), and anything after a second stop is plain text.
//! * `<` + ASCII letter opens a start tag. The tag name runs to whitespace, `/` or `>`; the tag
//!   ends after attributes matched the way the stdlib's tolerant regular expressions match them
//!   (backtracking included: `a= 'x` with no closing quote gives an empty value). A tag whose
//!   end is not `>` or `/>` becomes text. `</name ...>` closes; `</>` is dropped; `</` + non-letter
//!   is a comment. `<!--`..`-->`, `<?`..`>`, `<!doctype`..`>` and other `<!`..`>` are invisible.
//!   `<![CDATA[..]]>` is text; `<![if ..]>`-style sections are invisible; any other `<![`
//!   section makes the parser raise (bs4's `ParserRejectedMarkup`).
//! * `<script>` and `<style>` contents are raw text up to `</script\s*>` / `</style\s*>`.
//! * Text references: `&#123;`/`&#x7b;` need a terminator (`;` is consumed, anything else is
//!   kept); bs4 maps 0, surrogates and > U+10FFFF to U+FFFD and 0x80..0x9F through
//!   Windows-1252. `&name;` uses bs4's table of HTML5 names; an unknown name stays as `&name`
//!   (losing its `;`). Attribute values go through `html.unescape` instead.
//!
//! Tree builder (bs4): a plain stack. A start tag is pushed as a child of the current element;
//! void elements (`br`, `img`, ...) and `<x/>` are closed at once; an end tag pops up to and
//! including the most recent open element of that name, and is ignored when none is open (or
//! when it closes an earlier `<br>`-like void tag). Nothing is closed implicitly. A text run
//! made only of ASCII whitespace becomes one space or newline (unless inside `pre`/`textarea`).
//! Text inside `script`, `style`, `template`, `rt` and `rp` is not part of `get_text()`;
//! comments, declarations and processing instructions never are; CDATA always is.
//!
//! What is kept: the text `get_text()` would return, in document order, as one buffer (each
//! `<br>` contributing the `"\n"` the reference substitutes for it), and for every `<table>`,
//! `<tr>` and `<td>`/`<th>` that is a direct child of a `<tr>`, the span of that buffer its
//! subtree covers. Everything is linear in the input, with an explicit stack.
//!
//! Errors: where the reference raises (`ParserRejectedMarkup`; `ValueError` from `int()` on a
//! numeric reference of more than 4,300 digits), and where the tag scanner's work would exceed a
//! generous budget (input on which the reference's own regular expressions go quadratic).

use crate::html_entities::{BS4_CP1252, BS4_NAMED, DECIMAL_ZEROS, HTML5, INVALID_CHARREFS, INVALID_CODEPOINTS};
use crate::text::{is_py_space, py_lower, py_strip};
use std::collections::HashMap;
use std::ops::Range;

/// Why parsing stopped where the reference raises (or would take far too long).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HtmlError {
    /// bs4 raises `ParserRejectedMarkup` (html.parser's `AssertionError` on a `<![` section).
    Rejected(String),
    /// A `ValueError` escapes: `int()` on a decimal reference of more than 4,300 digits.
    Value,
    /// The start-tag scanner exceeded its work budget.
    TooComplex,
}

impl HtmlError {
    pub fn message(&self) -> String {
        match self {
            HtmlError::Rejected(why) => {
                format!("ParserRejectedMarkup: The markup you provided was rejected by the parser ({why})")
            }
            HtmlError::Value => "ValueError: Exceeds the limit (4300 digits) for integer string conversion".into(),
            HtmlError::TooComplex => "the HTML is too complex to tokenize within the work limit".into(),
        }
    }
}

/// A `<td>`/`<th>` that is a direct child of a `<tr>`.
#[derive(Debug, Clone)]
pub struct Cell {
    pub is_th: bool,
    /// The part of [`Document::text`] its subtree covers (not yet stripped).
    pub text: Range<usize>,
    /// The last `rowspan`/`colspan` attribute values, unescaped (valueless attributes are "").
    pub rowspan: Option<Vec<char>>,
    pub colspan: Option<Vec<char>>,
}

/// A `<tr>`, with its direct `<td>`/`<th>` children in order.
#[derive(Debug, Clone)]
pub struct Row {
    /// Whether any ancestor is a `<thead>`.
    pub in_thead: bool,
    pub cells: Vec<usize>,
}

/// A `<table>`: its descendant rows are `rows` (indices into [`Document::rows`]).
#[derive(Debug, Clone)]
pub struct Table {
    pub rows: Range<usize>,
}

/// The parse tree, reduced to what table extraction reads. Tables and rows are in document order.
#[derive(Debug, Clone, Default)]
pub struct Document {
    pub text: Vec<char>,
    pub tables: Vec<Table>,
    pub rows: Vec<Row>,
    pub cells: Vec<Cell>,
}

impl Document {
    /// `cell.get_text(separator="").strip()`.
    pub fn cell_text(&self, cell: usize) -> &[char] {
        py_strip(&self.text[self.cells[cell].text.clone()])
    }
}

/// Parses `s` as the reference does.
pub fn parse(s: &[char]) -> Result<Document, HtmlError> {
    let mut t = Tokenizer::new(s);
    t.b.doc.text.reserve(s.len());
    let stop = t.goahead(0, false)?;
    t.goahead(stop, true)?;
    Ok(t.b.finish())
}

// ---------------------------------------------------------------------------------------------
// Tree builder

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Table,
    Tr,
    Td,
    Th,
    Thead,
    /// `pre`, `textarea`: whitespace-only text is kept as is.
    Pre,
    /// `script`, `style`, `template`, `rt`, `rp`: their text is not `get_text()` text.
    Container,
    Br,
    Void,
    Other,
}

fn kind_of(name: &[char]) -> Kind {
    let s: String = name.iter().collect();
    match s.as_str() {
        "table" => Kind::Table,
        "tr" => Kind::Tr,
        "td" => Kind::Td,
        "th" => Kind::Th,
        "thead" => Kind::Thead,
        "pre" | "textarea" => Kind::Pre,
        "script" | "style" | "template" | "rt" | "rp" => Kind::Container,
        "br" => Kind::Br,
        "area" | "base" | "col" | "embed" | "hr" | "img" | "input" | "keygen" | "link" | "menuitem" | "meta"
        | "param" | "source" | "track" | "wbr" | "basefont" | "bgsound" | "command" | "frame" | "image" | "isindex"
        | "nextid" | "spacer" => Kind::Void,
        _ => Kind::Other,
    }
}

const NO_SLOT: usize = usize::MAX;

struct Open {
    name: u32,
    kind: Kind,
    slot: usize,
}

/// How a finished text run counts for `get_text()`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    /// A plain string: counted unless inside a container element.
    Plain,
    /// A CDATA section: always counted.
    CData,
}

#[derive(Default)]
struct Builder {
    doc: Document,
    pending: Vec<char>,
    pending_any: bool,
    stack: Vec<Open>,
    /// Tag names seen so far: the first few in a list, the rest in a map.
    few_names: Vec<Vec<char>>,
    names: HashMap<Vec<char>, u32>,
    kinds: Vec<Kind>,
    open: Vec<u32>,
    /// Void tags closed at their start tag whose explicit end tag is still to be swallowed.
    closed_voids: Vec<u32>,
    thead_open: usize,
    pre_open: usize,
    containers_open: usize,
}

impl Builder {
    fn lookup(&self, name: &[char]) -> Option<u32> {
        let same = |n: &Vec<char>| n.len() == name.len() && n.iter().zip(name).all(|(a, b)| a == b);
        match self.few_names.iter().position(same) {
            Some(k) => Some(k as u32),
            None => self.names.get(name).copied(),
        }
    }

    fn intern(&mut self, name: &[char]) -> u32 {
        if let Some(id) = self.lookup(name) {
            return id;
        }
        let name = name.to_vec();
        let id = self.kinds.len() as u32;
        self.kinds.push(kind_of(&name));
        self.open.push(0);
        self.closed_voids.push(0);
        if self.few_names.len() < 24 {
            self.few_names.push(name);
        } else {
            self.names.insert(name, id);
        }
        id
    }

    fn data(&mut self, s: &[char]) {
        self.pending.extend_from_slice(s);
        self.pending_any = true;
    }

    /// bs4 `endData`: turns the text collected since the last tag into one string.
    fn end_data(&mut self, run: Run) {
        if !self.pending_any {
            return;
        }
        self.pending_any = false;
        let counted = match run {
            Run::Plain => self.containers_open == 0,
            Run::CData => true,
        };
        if counted {
            let blank =
                self.pre_open == 0 && self.pending.iter().all(|c| matches!(c, ' ' | '\n' | '\t' | '\x0c' | '\r'));
            if blank {
                let ws = if self.pending.contains(&'\n') { '\n' } else { ' ' };
                self.doc.text.push(ws);
            } else {
                self.doc.text.extend_from_slice(&self.pending);
            }
        }
        self.pending.clear();
    }

    /// A comment, declaration, doctype or processing instruction: never text, but it ends the
    /// current run (its own string is discarded).
    fn hidden(&mut self) {
        self.end_data(Run::Plain);
    }

    fn cdata(&mut self, s: &[char]) {
        self.end_data(Run::Plain);
        self.data(s);
        self.end_data(Run::CData);
    }

    fn push(&mut self, name: u32, rowspan: Option<Vec<char>>, colspan: Option<Vec<char>>) {
        let kind = self.kinds[name as usize];
        let doc = &mut self.doc;
        let slot = match kind {
            Kind::Table => {
                doc.tables.push(Table { rows: doc.rows.len()..doc.rows.len() });
                doc.tables.len() - 1
            }
            Kind::Tr => {
                doc.rows.push(Row { in_thead: self.thead_open > 0, cells: Vec::new() });
                doc.rows.len() - 1
            }
            Kind::Td | Kind::Th => match self.stack.last() {
                Some(parent) if parent.kind == Kind::Tr => {
                    let at = doc.text.len();
                    doc.cells.push(Cell { is_th: kind == Kind::Th, text: at..at, rowspan, colspan });
                    let id = doc.cells.len() - 1;
                    doc.rows[parent.slot].cells.push(id);
                    id
                }
                _ => NO_SLOT,
            },
            Kind::Thead => {
                self.thead_open += 1;
                NO_SLOT
            }
            Kind::Pre => {
                self.pre_open += 1;
                NO_SLOT
            }
            Kind::Container => {
                self.containers_open += 1;
                NO_SLOT
            }
            Kind::Br => {
                // The reference replaces every <br> in a cell with "\n" before reading its text.
                doc.text.push('\n');
                NO_SLOT
            }
            Kind::Void | Kind::Other => NO_SLOT,
        };
        self.open[name as usize] += 1;
        self.stack.push(Open { name, kind, slot });
    }

    fn pop(&mut self) -> Option<u32> {
        let o = self.stack.pop()?;
        self.open[o.name as usize] -= 1;
        let doc = &mut self.doc;
        match o.kind {
            Kind::Table => doc.tables[o.slot].rows.end = doc.rows.len(),
            Kind::Td | Kind::Th if o.slot != NO_SLOT => doc.cells[o.slot].text.end = doc.text.len(),
            Kind::Thead => self.thead_open -= 1,
            Kind::Pre => self.pre_open -= 1,
            Kind::Container => self.containers_open -= 1,
            _ => {}
        }
        Some(o.name)
    }

    /// bs4 `_popToTag`: pops up to and including the most recent open `name`, if any.
    fn pop_to(&mut self, name: u32) {
        if self.open[name as usize] == 0 {
            return;
        }
        while let Some(popped) = self.pop() {
            if popped == name {
                break;
            }
        }
    }

    fn start_tag(&mut self, name: &[char], spans: [Option<Vec<char>>; 2], self_closing: bool) {
        self.end_data(Run::Plain);
        let id = self.intern(name);
        let [rowspan, colspan] = spans;
        self.push(id, rowspan, colspan);
        let void = matches!(self.kinds[id as usize], Kind::Br | Kind::Void);
        if void && !self_closing {
            self.end_data(Run::Plain);
            self.pop_to(id);
            self.closed_voids[id as usize] += 1;
        }
        if self_closing {
            self.end_data(Run::Plain);
            self.pop_to(id);
        }
    }

    fn end_tag(&mut self, name: &[char]) {
        let id = self.lookup(name);
        if let Some(id) = id {
            if self.closed_voids[id as usize] > 0 {
                self.closed_voids[id as usize] -= 1;
                return;
            }
        }
        self.end_data(Run::Plain);
        if let Some(id) = id {
            self.pop_to(id);
        }
    }

    fn finish(mut self) -> Document {
        self.end_data(Run::Plain);
        while self.pop().is_some() {}
        self.doc
    }
}

// ---------------------------------------------------------------------------------------------
// Tokenizer

fn skip_ws(s: &[char], mut p: usize) -> usize {
    while p < s.len() && is_py_space(s[p]) {
        p += 1;
    }
    p
}

/// `]\s*]\s*>` at `p`: its end.
fn section_close_at(s: &[char], p: usize) -> Option<usize> {
    if s.get(p) != Some(&']') {
        return None;
    }
    let q = skip_ws(s, p + 1);
    if s.get(q) != Some(&']') {
        return None;
    }
    let r = skip_ws(s, q + 1);
    (s.get(r) == Some(&'>')).then_some(r + 1)
}

/// `]\s*>` at `p`: its end.
fn ms_section_close_at(s: &[char], p: usize) -> Option<usize> {
    if s.get(p) != Some(&']') {
        return None;
    }
    let q = skip_ws(s, p + 1);
    (s.get(q) == Some(&'>')).then_some(q + 1)
}

/// `--\s*>` at `p`: its end.
fn comment_close_at(s: &[char], p: usize) -> Option<usize> {
    if s.get(p) != Some(&'-') || s.get(p + 1) != Some(&'-') {
        return None;
    }
    let q = skip_ws(s, p + 2);
    (s.get(q) == Some(&'>')).then_some(q + 1)
}

/// What a failing search would otherwise rescan to the end of the input for: the last
/// position of a character or the start of the last match of a closing pattern, each computed
/// on first use.
#[derive(Default)]
struct Lasts {
    chars: [Option<Option<usize>>; 5],
    patterns: [Option<Option<usize>>; 3],
}

const LAST_CHARS: [char; 5] = ['>', '<', ';', '\'', '"'];
/// A closing pattern matched at a position: its end.
type Closer = fn(&[char], usize) -> Option<usize>;
const CLOSERS: [Closer; 3] = [comment_close_at, section_close_at, ms_section_close_at];
const COMMENT_CLOSE: usize = 0;
const SECTION_CLOSE: usize = 1;
const MS_SECTION_CLOSE: usize = 2;

impl Lasts {
    fn char(&mut self, s: &[char], c: char) -> Option<usize> {
        let Some(k) = LAST_CHARS.iter().position(|&x| x == c) else {
            return Some(s.len());
        };
        *self.chars[k].get_or_insert_with(|| s.iter().rposition(|&x| x == c))
    }

    fn pattern(&mut self, s: &[char], k: usize) -> Option<usize> {
        // Every match ends at a '>': try the '>'s from the last one backwards.
        *self.patterns[k].get_or_insert_with(|| {
            (0..s.len()).rev().filter(|&g| s[g] == '>').find_map(|g| {
                let w = (0..g).rev().find(|&p| !is_py_space(s[p])).map_or(0, |p| p + 1);
                let start = match k {
                    COMMENT_CLOSE => w.checked_sub(2),
                    SECTION_CLOSE => {
                        let inner = w.checked_sub(1)?;
                        (0..inner).rev().find(|&p| !is_py_space(s[p]))
                    }
                    _ => w.checked_sub(1),
                }?;
                CLOSERS[k](s, start).is_some().then_some(start)
            })
        })
    }
}

/// `[^\t\n\r\f />\x00]`: a tag-name character after the first.
fn name_char(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r' | '\x0c' | ' ' | '/' | '>' | '\0')
}

struct Tokenizer<'a> {
    s: &'a [char],
    b: Builder,
    /// `script` or `style` while inside one (raw text until its end tag).
    cdata: Option<&'static str>,
    lasts: Lasts,
    /// Attribute-loop results by start position (the loop is a function of its start).
    memo: HashMap<usize, usize>,
    /// Scratch space for lowercased tag names.
    name_buf: Vec<char>,
    work: usize,
    budget: usize,
}

impl<'a> Tokenizer<'a> {
    fn new(s: &'a [char]) -> Self {
        Tokenizer {
            s,
            b: Builder::default(),
            cdata: None,
            lasts: Lasts::default(),
            memo: HashMap::new(),
            name_buf: Vec::new(),
            work: 0,
            budget: s.len().saturating_mul(32).saturating_add(50_000_000),
        }
    }

    /// `s.find(c, from)`.
    fn find_char(&mut self, c: char, from: usize) -> Option<usize> {
        match self.lasts.char(self.s, c) {
            Some(l) if l >= from => (from..self.s.len()).find(|&p| self.s[p] == c),
            _ => None,
        }
    }

    /// The first match of a closing pattern starting at or after `from`: (start, end).
    fn find_close(&mut self, from: usize, pattern: usize) -> Option<(usize, usize)> {
        let last = self.lasts.pattern(self.s, pattern)?;
        if last < from {
            return None;
        }
        (from..=last).find_map(|p| CLOSERS[pattern](self.s, p).map(|e| (p, e)))
    }

    fn charge(&mut self, steps: usize) -> Result<(), HtmlError> {
        self.work += steps;
        if self.work > self.budget {
            Err(HtmlError::TooComplex)
        } else {
            Ok(())
        }
    }

    /// CPython `HTMLParser.goahead(end)` from position `i`; returns where it stopped.
    fn goahead(&mut self, mut i: usize, end: bool) -> Result<usize, HtmlError> {
        let s = self.s;
        let n = s.len();
        while i < n {
            let j = match self.cdata {
                Some(name) => match self.find_raw_text_end(i, name) {
                    Some(j) => j,
                    None => break,
                },
                None => find2(s, i, '<', '&').unwrap_or(n),
            };
            if i < j {
                self.b.data(&s[i..j]);
            }
            i = j;
            if i == n {
                break;
            }
            if s[i] == '<' {
                let next = s.get(i + 1).copied();
                let k = if next.is_some_and(|c| c.is_ascii_alphabetic()) {
                    self.parse_starttag(i)?
                } else if next == Some('/') {
                    self.parse_endtag(i)
                } else if starts(s, i, "<!--") {
                    self.parse_comment(i)
                } else if next == Some('?') {
                    self.parse_pi(i)
                } else if next == Some('!') {
                    self.parse_html_declaration(i)?
                } else if i + 1 < n {
                    self.b.data(&['<']);
                    Some(i + 1)
                } else {
                    break;
                };
                i = match k {
                    Some(k) => k,
                    None => {
                        if !end {
                            break;
                        }
                        let k = match self.find_char('>', i + 1) {
                            Some(g) => g + 1,
                            None => self.find_char('<', i + 1).unwrap_or(i + 1),
                        };
                        self.b.data(&s[i..k]);
                        k
                    }
                };
            } else if starts(s, i, "&#") {
                if let Some((name_end, match_end)) = charref_at(s, i) {
                    self.handle_charref(&s[i + 2..name_end])?;
                    i = if s[match_end - 1] == ';' { match_end } else { match_end - 1 };
                    continue;
                }
                if self.find_char(';', i).is_some() {
                    self.b.data(&['&', '#']);
                    i += 2;
                }
                break;
            } else {
                if let Some((name_end, match_end)) = entityref_at(s, i) {
                    self.handle_entityref(&s[i + 1..name_end]);
                    i = if s[match_end - 1] == ';' { match_end } else { match_end - 1 };
                    continue;
                }
                if s.get(i + 1).is_some_and(|c| c.is_ascii_alphabetic()) {
                    // `&x...` that cannot be a reference yet: the pass stops here.
                    if end && i + 2 == n {
                        i += 1;
                    }
                    break;
                } else if i + 1 < n {
                    self.b.data(&['&']);
                    i += 1;
                } else {
                    break;
                }
            }
        }
        if end && i < n && self.cdata.is_none() {
            self.b.data(&s[i..n]);
            i = n;
        }
        Ok(i)
    }

    /// In `<script>`/`<style>`: the start of the next `</name\s*>` (ASCII case-insensitive; the
    /// non-ASCII case variants `re.I` also accepts end up as raw text in the reference too).
    fn find_raw_text_end(&self, from: usize, name: &str) -> Option<usize> {
        let s = self.s;
        let mut p = from;
        while p < s.len() {
            let lt = p + s[p..].iter().position(|&c| c == '<')?;
            if s.get(lt + 1) == Some(&'/') {
                let q = skip_ws(s, lt + 2);
                let len = name.len();
                if q + len <= s.len()
                    && s[q..q + len].iter().zip(name.chars()).all(|(&c, m)| c.to_ascii_lowercase() == m)
                {
                    let r = skip_ws(s, q + len);
                    if s.get(r) == Some(&'>') {
                        return Some(lt);
                    }
                }
            }
            p = lt + 1;
        }
        None
    }

    // ---- start tags ----

    /// `(?:\s|/(?!>))*` from `p`.
    fn skip_ws_slash(&self, mut p: usize) -> usize {
        let s = self.s;
        while p < s.len() && (is_py_space(s[p]) || (s[p] == '/' && s.get(p + 1) != Some(&'>'))) {
            p += 1;
        }
        p
    }

    /// An attribute value at `c`: `'[^']*'|"[^"]*"|(?!['"])[^>\s]*`; its end.
    fn value_at(&mut self, c: usize) -> Result<Option<usize>, HtmlError> {
        let s = self.s;
        match s.get(c) {
            Some(&q) if q == '\'' || q == '"' => {
                let close = self.find_char(q, c + 1);
                if let Some(e) = close {
                    self.charge(e - c)?;
                }
                Ok(close.map(|e| e + 1))
            }
            _ => {
                let mut e = c;
                while e < s.len() && s[e] != '>' && !is_py_space(s[e]) {
                    e += 1;
                }
                self.charge(e - c)?;
                Ok(Some(e))
            }
        }
    }

    /// `\s*=+\s*VALUE` at `r`, with the backtracking order of Python's `re`: the value's span
    /// and the end (after trailing whitespace when `trailing_ws`).
    fn assignment_at(&mut self, r: usize, trailing_ws: bool) -> Result<Option<(Range<usize>, usize)>, HtmlError> {
        let s = self.s;
        let a = skip_ws(s, r);
        if s.get(a) != Some(&'=') {
            return Ok(None);
        }
        let mut eq_end = a;
        while s.get(eq_end) == Some(&'=') {
            eq_end += 1;
        }
        for b in (a + 1..=eq_end).rev() {
            let ws_end = skip_ws(s, b);
            for c in (b..=ws_end).rev() {
                if let Some(e) = self.value_at(c)? {
                    let end = if trailing_ws { skip_ws(s, e) } else { e };
                    return Ok(Some((c..e, end)));
                }
            }
        }
        Ok(None)
    }

    /// One attribute at `q` (`(?<=['"\s/])[^\s/>][^\s/=>]*` + optional assignment + trailing
    /// `(?:\s|/(?!>))*`): name span, value span (if assigned) and end.
    #[allow(clippy::type_complexity)]
    fn attribute_at(
        &mut self,
        q: usize,
        trailing_ws: bool,
    ) -> Result<Option<(Range<usize>, Option<Range<usize>>, usize)>, HtmlError> {
        let s = self.s;
        if q == 0 || q >= s.len() {
            return Ok(None);
        }
        let prev = s[q - 1];
        if !(prev == '\'' || prev == '"' || prev == '/' || is_py_space(prev)) {
            return Ok(None);
        }
        let first = s[q];
        if is_py_space(first) || first == '/' || first == '>' {
            return Ok(None);
        }
        let mut r = q + 1;
        while r < s.len() && !(is_py_space(s[r]) || matches!(s[r], '/' | '=' | '>')) {
            r += 1;
        }
        let name = q..r;
        let mut value = None;
        if let Some((v, e)) = self.assignment_at(r, trailing_ws)? {
            value = Some(v);
            r = e;
        }
        let end = self.skip_ws_slash(r);
        self.charge(end - q)?;
        Ok(Some((name, value, end)))
    }

    /// The attribute loop of `locatestarttagend_tolerant` from `q`: where it stops.
    fn attribute_loop(&mut self, start: usize) -> Result<usize, HtmlError> {
        let mut q = start;
        let mut visited = Vec::new();
        loop {
            if let Some(&m) = self.memo.get(&q) {
                q = m;
                break;
            }
            match self.attribute_at(q, true)? {
                Some((_, _, e)) => {
                    visited.push(q);
                    q = e;
                }
                None => break,
            }
        }
        // Only long loops are worth remembering (they are what repeated scans would redo).
        if visited.len() >= 8 {
            for v in visited {
                self.memo.insert(v, q);
            }
        }
        Ok(q)
    }

    /// `check_for_whole_start_tag`: the end of the start tag at `i`, or `None` if unfinished.
    fn whole_start_tag(&mut self, i: usize) -> Result<Option<usize>, HtmlError> {
        let s = self.s;
        let mut p = i + 2;
        while p < s.len() && name_char(s[p]) {
            p += 1;
        }
        let mut q = p;
        while q < s.len() && (is_py_space(s[q]) || s[q] == '/') {
            q += 1;
        }
        self.charge(q - i)?;
        let q = self.attribute_loop(q)?;
        let j = skip_ws(s, q);
        Ok(match s.get(j) {
            Some('>') => Some(j + 1),
            Some('/') => (s.get(j + 1) == Some(&'>')).then_some(j + 2),
            None => None,
            Some(&c) if c.is_ascii_alphabetic() || c == '=' => None,
            Some(_) => Some(j),
        })
    }

    fn parse_starttag(&mut self, i: usize) -> Result<Option<usize>, HtmlError> {
        let Some(endpos) = self.whole_start_tag(i)? else {
            return Ok(None);
        };
        let s = self.s;
        let mut p = i + 2;
        while p < s.len() && name_char(s[p]) {
            p += 1;
        }
        let mut tag = std::mem::take(&mut self.name_buf);
        lower_name(&s[i + 1..p], &mut tag);
        let mut k = self.skip_ws_slash(p);
        let mut spans: [Option<Vec<char>>; 2] = [None, None];
        while k < endpos {
            let Some((name, value, end)) = self.attribute_at(k, false)? else {
                break;
            };
            // Python lowercases the name; no other character lowercases into these ASCII names.
            let slot = if ascii_ci_eq(&s[name.clone()], "rowspan") {
                Some(0)
            } else if ascii_ci_eq(&s[name], "colspan") {
                Some(1)
            } else {
                None
            };
            let inner = match value {
                None => &[][..],
                Some(v) => {
                    let raw = &s[v];
                    let quoted = raw.len() >= 2 && (raw[0] == '\'' || raw[0] == '"') && raw[raw.len() - 1] == raw[0];
                    if quoted {
                        &raw[1..raw.len() - 1]
                    } else {
                        raw
                    }
                }
            };
            // Every value is unescaped (which can raise), but only the spans are kept.
            match slot {
                Some(k) => spans[k] = Some(unescape(inner)?),
                None if inner.contains(&'&') => {
                    unescape(inner)?;
                }
                None => {}
            }
            k = end;
        }
        let tail = if k < endpos { py_strip(&s[k..endpos]) } else { &[] };
        let self_closing = match tail {
            ['>'] => false,
            ['/', '>'] => true,
            _ => {
                self.b.data(&s[i..endpos]);
                return Ok(Some(endpos));
            }
        };
        let raw_text = match tag.as_slice() {
            ['s', 'c', 'r', 'i', 'p', 't'] if !self_closing => Some("script"),
            ['s', 't', 'y', 'l', 'e'] if !self_closing => Some("style"),
            _ => None,
        };
        self.b.start_tag(&tag, spans, self_closing);
        self.name_buf = tag;
        if raw_text.is_some() {
            self.cdata = raw_text;
        }
        Ok(Some(endpos))
    }

    // ---- other markup ----

    fn parse_endtag(&mut self, i: usize) -> Option<usize> {
        let s = self.s;
        let gt = self.find_char('>', i + 1)?;
        let gtpos = gt + 1;
        // `</\s*([a-zA-Z][-.a-zA-Z0-9:_]*)\s*>`
        let p = skip_ws(s, i + 2);
        let mut exact = None;
        if s.get(p).is_some_and(|c| c.is_ascii_alphabetic()) {
            let mut q = p + 1;
            while q < s.len() && (s[q].is_ascii_alphanumeric() || matches!(s[q], '-' | '.' | ':' | '_')) {
                q += 1;
            }
            if skip_ws(s, q) == gt {
                exact = Some(p..q);
            }
        }
        let Some(name) = exact else {
            if self.cdata.is_some() {
                self.b.data(&s[i..gtpos]);
                return Some(gtpos);
            }
            if s.get(i + 2).is_some_and(|c| c.is_ascii_alphabetic()) {
                let mut q = i + 3;
                while q < s.len() && name_char(s[q]) {
                    q += 1;
                }
                let mut tag = std::mem::take(&mut self.name_buf);
                lower_name(&s[i + 2..q], &mut tag);
                self.b.end_tag(&tag);
                self.name_buf = tag;
                return Some(gtpos);
            }
            if s.get(i + 2) == Some(&'>') {
                return Some(i + 3);
            }
            self.b.hidden();
            return Some(gtpos);
        };
        let mut tag = std::mem::take(&mut self.name_buf);
        lower_name(&s[name], &mut tag);
        if let Some(raw) = self.cdata {
            if !tag.iter().copied().eq(raw.chars()) {
                self.b.data(&s[i..gtpos]);
                return Some(gtpos);
            }
        }
        self.b.end_tag(&tag);
        self.name_buf = tag;
        self.cdata = None;
        Some(gtpos)
    }

    fn parse_comment(&mut self, i: usize) -> Option<usize> {
        let (_, end) = self.find_close(i + 4, COMMENT_CLOSE)?;
        self.b.hidden();
        Some(end)
    }

    fn parse_pi(&mut self, i: usize) -> Option<usize> {
        let gt = self.find_char('>', i + 2)?;
        self.b.hidden();
        Some(gt + 1)
    }

    fn parse_html_declaration(&mut self, i: usize) -> Result<Option<usize>, HtmlError> {
        let s = self.s;
        if starts(s, i, "<![") {
            return self.parse_marked_section(i);
        }
        let doctype =
            i + 9 <= s.len() && s[i..i + 9].iter().zip("<!doctype".chars()).all(|(&c, m)| c.to_ascii_lowercase() == m);
        let from = if doctype { i + 9 } else { i + 2 };
        let Some(gt) = self.find_char('>', from) else {
            return Ok(None);
        };
        self.b.hidden();
        Ok(Some(gt + 1))
    }

    fn parse_marked_section(&mut self, i: usize) -> Result<Option<usize>, HtmlError> {
        let s = self.s;
        let j = i + 3;
        if j == s.len() {
            return Ok(None);
        }
        if !s[j].is_ascii_alphabetic() {
            let near: String = s[i..(i + 20).min(s.len())].iter().collect();
            return Err(HtmlError::Rejected(format!("expected name token at {near:?}")));
        }
        let mut p = j + 1;
        while p < s.len() && (s[p].is_ascii_alphanumeric() || matches!(s[p], '-' | '_' | '.')) {
            p += 1;
        }
        if skip_ws(s, p) == s.len() {
            return Ok(None);
        }
        let name: String = s[j..p].iter().map(|c| c.to_ascii_lowercase()).collect();
        let close = match name.as_str() {
            "temp" | "cdata" | "ignore" | "include" | "rcdata" => self.find_close(i + 3, SECTION_CLOSE),
            "if" | "else" | "endif" => self.find_close(i + 3, MS_SECTION_CLOSE),
            _ => {
                let near: String = s[j..p].iter().collect();
                return Err(HtmlError::Rejected(format!("unknown status keyword {near:?} in marked section")));
            }
        };
        let Some((start, end)) = close else {
            return Ok(None);
        };
        if name == "cdata" && s.get(p) == Some(&'[') {
            self.b.cdata(&s[(i + 9).min(start)..start]);
        } else {
            self.b.hidden();
        }
        Ok(Some(end))
    }

    // ---- references in text ----

    fn handle_charref(&mut self, name: &[char]) -> Result<(), HtmlError> {
        let (radix, digits) = match name.first() {
            Some('x' | 'X') => (16, &name[1..]),
            _ => (10, name),
        };
        if radix == 10 && digits.len() > 4300 {
            return Err(HtmlError::Value);
        }
        let n = saturating_number(digits, radix);
        let c = if n == 0 || n > 0x10FFFF || (0xD800..=0xDFFF).contains(&n) {
            '\u{fffd}'
        } else if let Ok(k) = BS4_CP1252.binary_search_by_key(&n, |&(k, _)| k) {
            BS4_CP1252[k].1
        } else {
            char::from_u32(n).unwrap_or('\u{fffd}')
        };
        self.b.data(&[c]);
        Ok(())
    }

    fn handle_entityref(&mut self, name: &[char]) {
        let key: String = name.iter().collect();
        match BS4_NAMED.binary_search_by(|(k, _)| (*k).cmp(key.as_str())) {
            Ok(k) => {
                let text: Vec<char> = BS4_NAMED[k].1.chars().collect();
                self.b.data(&text);
            }
            Err(_) => {
                self.b.data(&['&']);
                self.b.data(name);
            }
        }
    }
}

/// The first position at or after `from` holding `a` or `b` (scanned in blocks the compiler
/// can vectorize: pages are mostly plain text).
pub(crate) fn find2(s: &[char], from: usize, a: char, b: char) -> Option<usize> {
    const BLOCK: usize = 32;
    let mut p = from.min(s.len());
    while p < s.len() {
        let end = (p + BLOCK).min(s.len());
        let block = &s[p..end];
        let (a32, b32) = (a as u32, b as u32);
        let hits = block.iter().fold(0u32, |hits, &c| hits | u32::from(c as u32 == a32) | u32::from(c as u32 == b32));
        if hits != 0 {
            return block.iter().position(|&c| c == a || c == b).map(|k| p + k);
        }
        p = end;
    }
    None
}

/// Python `name.lower()` into `out`, without the general machinery for ASCII names.
fn lower_name(name: &[char], out: &mut Vec<char>) {
    out.clear();
    if name.iter().all(char::is_ascii) {
        out.extend(name.iter().map(char::to_ascii_lowercase));
    } else {
        out.extend(py_lower(name));
    }
}

fn ascii_ci_eq(s: &[char], pat: &str) -> bool {
    s.len() == pat.len() && s.iter().zip(pat.chars()).all(|(&c, m)| c.to_ascii_lowercase() == m)
}

fn starts(s: &[char], p: usize, pat: &str) -> bool {
    (p..).zip(pat.chars()).all(|(i, m)| s.get(i) == Some(&m))
}

/// `&#(?:[0-9]+|[xX][0-9a-fA-F]+)[^0-9a-fA-F]` at `i`: (end of the number, end of the match).
fn charref_at(s: &[char], i: usize) -> Option<(usize, usize)> {
    let p = i + 2;
    let c = *s.get(p)?;
    let (from, digit): (usize, fn(&char) -> bool) = if c.is_ascii_digit() {
        (p, char::is_ascii_digit)
    } else if c == 'x' || c == 'X' {
        (p + 1, char::is_ascii_hexdigit)
    } else {
        return None;
    };
    let mut e = from;
    while s.get(e).is_some_and(digit) {
        e += 1;
    }
    if e == from {
        return None;
    }
    let term = s.get(e)?;
    (!term.is_ascii_hexdigit()).then_some((e, e + 1))
}

/// `&([a-zA-Z][-.a-zA-Z0-9]*)[^a-zA-Z0-9]` at `i`: (end of the name, end of the match).
fn entityref_at(s: &[char], i: usize) -> Option<(usize, usize)> {
    if !s.get(i + 1)?.is_ascii_alphabetic() {
        return None;
    }
    let mut e = i + 2;
    while e < s.len() && (s[e].is_ascii_alphanumeric() || s[e] == '-' || s[e] == '.') {
        e += 1;
    }
    if e < s.len() {
        return Some((e, e + 1));
    }
    // The name ran to the end: backtrack to its last '-' or '.', which then terminates it.
    (i + 2..s.len()).rev().find(|&p| s[p] == '-' || s[p] == '.').map(|p| (p, p + 1))
}

/// The value of ASCII `digits` in `radix`, saturated above U+10FFFF.
fn saturating_number(digits: &[char], radix: u32) -> u32 {
    let mut n: u32 = 0;
    for c in digits {
        n = n.saturating_mul(radix).saturating_add(c.to_digit(radix).unwrap_or(0)).min(0x110000);
    }
    n
}

fn html5_lookup(name: &[char]) -> Option<&'static str> {
    let key: String = name.iter().collect();
    HTML5.binary_search_by(|(k, _)| (*k).cmp(key.as_str())).ok().map(|k| HTML5[k].1)
}

/// Python `html.unescape` (what CPython's parser applies to attribute values).
pub fn unescape(v: &[char]) -> Result<Vec<char>, HtmlError> {
    if !v.contains(&'&') {
        return Ok(v.to_vec());
    }
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        if v[i] != '&' {
            out.push(v[i]);
            i += 1;
            continue;
        }
        // `&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)`
        let numeric = match (v.get(i + 1), v.get(i + 2)) {
            (Some('#'), Some(c)) if c.is_ascii_digit() => Some((10, i + 2)),
            (Some('#'), Some('x' | 'X')) if v.get(i + 3).is_some_and(char::is_ascii_hexdigit) => Some((16, i + 3)),
            _ => None,
        };
        if let Some((radix, from)) = numeric {
            let mut e = from;
            while v.get(e).is_some_and(|c| c.is_digit(radix)) {
                e += 1;
            }
            if radix == 10 && e - from > 4300 {
                return Err(HtmlError::Value);
            }
            let n = saturating_number(&v[from..e], radix);
            if v.get(e) == Some(&';') {
                e += 1;
            }
            if let Ok(k) = INVALID_CHARREFS.binary_search_by_key(&n, |&(k, _)| k) {
                out.push(INVALID_CHARREFS[k].1);
            } else if (0xD800..=0xDFFF).contains(&n) || n > 0x10FFFF {
                out.push('\u{fffd}');
            } else if INVALID_CODEPOINTS.iter().any(|&(lo, hi)| (lo..=hi).contains(&n)) {
            } else if let Some(c) = char::from_u32(n) {
                out.push(c);
            }
            i = e;
            continue;
        }
        let mut e = i + 1;
        while e < v.len() && e - (i + 1) < 32 && !matches!(v[e], '\t' | '\n' | '\x0c' | ' ' | '<' | '&' | '#' | ';') {
            e += 1;
        }
        if e == i + 1 {
            out.push('&');
            i += 1;
            continue;
        }
        if v.get(e) == Some(&';') {
            e += 1;
        }
        let name = &v[i + 1..e];
        if let Some(text) = html5_lookup(name) {
            out.extend(text.chars());
        } else if let Some(x) = (2..name.len()).rev().find(|&x| html5_lookup(&name[..x]).is_some()) {
            out.extend(html5_lookup(&name[..x]).unwrap_or_default().chars());
            out.extend_from_slice(&name[x..]);
        } else {
            out.push('&');
            out.extend_from_slice(name);
        }
        i = e;
    }
    Ok(out)
}

/// Python `int(s)` as `_safe_span_int` uses it: `None` where `int()` raises.
pub fn py_int(s: &[char]) -> Option<PyInt> {
    let int_space =
        |c: char| matches!(c, '\t' | '\n' | '\x0b' | '\x0c' | '\r' | ' ') || (!c.is_ascii() && is_py_space(c));
    let start = s.iter().position(|&c| !int_space(c))?;
    let end = s.iter().rposition(|&c| !int_space(c))? + 1;
    let mut body = &s[start..end];
    let negative = match body.first() {
        Some('-') => true,
        Some('+') => false,
        _ => {
            return digits_value(body).map(PyInt::from_magnitude);
        }
    };
    body = &body[1..];
    let magnitude = digits_value(body)?;
    Some(if negative && magnitude.0 > 0 { PyInt::NonPositive } else { PyInt::from_magnitude(magnitude) })
}

/// A Python int as the span code uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyInt {
    NonPositive,
    /// Positive, saturated at `u64::MAX`.
    Positive(u64),
}

impl PyInt {
    fn from_magnitude(m: (u64, usize)) -> PyInt {
        if m.0 == 0 {
            PyInt::NonPositive
        } else {
            PyInt::Positive(m.0)
        }
    }
}

/// The decimal value of a Unicode digit (`Nd`), as `int()` reads it.
fn decimal_value(c: char) -> Option<u64> {
    if c.is_ascii_digit() {
        return Some(u64::from(c as u32 - '0' as u32));
    }
    let cp = c as u32;
    let k = DECIMAL_ZEROS.partition_point(|&z| z <= cp).checked_sub(1)?;
    let d = cp - DECIMAL_ZEROS[k];
    (d < 10).then_some(u64::from(d))
}

/// `digit (_? digit)*` with at most 4,300 digits: (saturated value, 1 if non-zero else 0).
fn digits_value(s: &[char]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    let mut count = 0;
    let mut after_underscore = true; // a leading '_' is not allowed
    for (k, &c) in s.iter().enumerate() {
        if c == '_' {
            if after_underscore || k + 1 == s.len() {
                return None;
            }
            after_underscore = true;
            continue;
        }
        let d = decimal_value(c)?;
        value = value.saturating_mul(10).saturating_add(d);
        count += 1;
        after_underscore = false;
    }
    if count == 0 || count > 4300 {
        return None;
    }
    Some((value, usize::from(value > 0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{chars, string};

    fn doc(s: &str) -> Document {
        parse(&chars(s)).expect("parses")
    }

    /// (row texts per table), with cells as stripped text.
    fn tables(s: &str) -> Vec<Vec<Vec<String>>> {
        let d = doc(s);
        d.tables
            .iter()
            .map(|t| {
                d.rows[t.rows.clone()]
                    .iter()
                    .map(|r| r.cells.iter().map(|&c| string(d.cell_text(c))).collect())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn unclosed_cells_nest() {
        assert_eq!(tables("<table><tr><td>a<td>b</tr></table>"), vec![vec![vec!["ab"]]]);
        assert_eq!(tables("<table><tr><td>a<tr><td>b</table>"), vec![vec![vec!["ab"], vec!["b"]]]);
        assert_eq!(
            tables("<table><tr><td>a<td>b</tr><tr><td>c</td><td>d</td></tr></table>"),
            vec![vec![vec!["ab"], vec!["c", "d"]]]
        );
    }

    #[test]
    fn nested_tables_leak_rows() {
        let t = tables("<table><tr><td>a</td><td><table><tr><td>in1</td><td>in2</td></tr></table></td></tr></table>");
        assert_eq!(t[0], vec![vec!["a", "in1in2"], vec!["in1", "in2"]]);
        assert_eq!(t[1], vec![vec!["in1", "in2"]]);
    }

    #[test]
    fn lt_swallows_table() {
        assert!(tables("where $x<y$ holds.\n\n<table><tr><td>1</td></tr></table>").is_empty());
        assert_eq!(tables("$p<0.05$ <table><tr><td>1</td></tr></table>").len(), 1);
        assert_eq!(tables("x < y <table><tr><td>1</td></tr></table>").len(), 1);
    }

    #[test]
    fn entities_and_br() {
        assert_eq!(
            tables("<table><tr><td>a&amp;b &copy &foo; &#65;&#x42;<br>c</td></tr></table>")[0][0][0],
            "a&b © &foo AB\nc"
        );
        assert_eq!(tables("<table><tr><td>&#128;&#0;&#xD800;</td></tr></table>")[0][0][0], "€\u{fffd}\u{fffd}");
        assert_eq!(tables("<table><tr><td>x&nbsp;y</td></tr></table>")[0][0][0], "x\u{a0}y");
    }

    #[test]
    fn comments_scripts_cdata() {
        assert_eq!(tables("<table><tr><td>a<!-- <td>x --></td></tr></table>")[0][0], vec!["a"]);
        assert_eq!(tables("<table><tr><td>a<script>b</td>c</script>d</td></tr></table>")[0][0], vec!["ad"]);
        assert_eq!(tables("<table><tr><td>a<![CDATA[b]]>c</td></tr></table>")[0][0], vec!["abc"]);
        assert_eq!(tables("<table><tr><td>a<![CDATA[]]>c</td></tr></table>")[0][0], vec!["a c"]);
        assert_eq!(tables("<!-- <table><tr><td>x</td></tr></table> -->").len(), 0);
        assert_eq!(tables("<table><tr><td>a<rt>b</rt><template>c</template></td></tr></table>")[0][0], vec!["a"]);
    }

    #[test]
    fn void_and_self_closing() {
        assert_eq!(tables("<table><tr><td/><td>x</td></tr></table>")[0][0], vec!["", "x"]);
        assert_eq!(tables("<table><tr><td>a<img>b</img>c</td></tr></table>")[0][0], vec!["abc"]);
    }

    #[test]
    fn spans_and_headings() {
        let d =
            doc("<table><thead><tr><th colspan=' 2 '>h</th></tr></thead><tr><TD ROWSPAN=\"&#50;\">x</TD></tr></table>");
        assert!(d.rows[0].in_thead && !d.rows[1].in_thead);
        assert_eq!(d.cells[0].colspan, Some(chars(" 2 ")));
        assert_eq!(d.cells[1].rowspan, Some(chars("2")));
        assert!(d.cells[0].is_th && !d.cells[1].is_th);
    }

    #[test]
    fn rejected_sections() {
        assert!(matches!(parse(&chars("<![foo[x]]>")), Err(HtmlError::Rejected(_))));
        assert!(matches!(parse(&chars("<![ x")), Err(HtmlError::Rejected(_))));
        assert!(parse(&chars("<![if !x]>y<![endif]>")).is_ok());
    }

    #[test]
    fn huge_decimal_reference() {
        let s = format!("&#{};", "1".repeat(4301));
        assert_eq!(parse(&chars(&s)).unwrap_err(), HtmlError::Value);
        let s = format!("&#{};", "1".repeat(4300));
        assert!(parse(&chars(&s)).is_ok());
    }

    #[test]
    fn python_int() {
        let v = |s: &str| py_int(&chars(s));
        assert_eq!(v(" 3 "), Some(PyInt::Positive(3)));
        assert_eq!(v("1_0"), Some(PyInt::Positive(10)));
        assert_eq!(v("２"), Some(PyInt::Positive(2)));
        assert_eq!(v("-1"), Some(PyInt::NonPositive));
        assert_eq!(v("0"), Some(PyInt::NonPositive));
        assert_eq!(v("2x"), None);
        assert_eq!(v(""), None);
        assert_eq!(v("1__0"), None);
        assert_eq!(v("\u{1c}5"), None);
        assert_eq!(v("\u{a0}5"), Some(PyInt::Positive(5)));
        assert_eq!(v("- 2"), None);
    }

    #[test]
    fn unescape_like_python() {
        let u = |s: &str| string(&unescape(&chars(s)).unwrap());
        assert_eq!(u("&amp;&ampx&#50;&#x41;&notit;&zz;&#13;&#1;"), "&&x2A¬it;&zz;\r");
    }

    #[test]
    fn deep_nesting_is_linear() {
        let s = "<td>".repeat(200_000) + "x";
        let d = parse(&chars(&s)).unwrap();
        assert_eq!(d.tables.len(), 0);
    }
}
