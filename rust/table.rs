//! Tables as olmOCR-bench's `table_parsing.py` builds them (docs/checks.md §4): markdown tables found by
//! its line scanner (§4.1), HTML tables from the BeautifulSoup-equivalent tree of `html.rs`
//! (§4.2), the shared grid builder (§4.3) with its `IndexError` (§4.4), neighbour relations
//! (§4.5) and the heading walks (§4.6).
//!
//! Set order: the reference keeps neighbours in Python sets, and a failing table test prints the
//! text of the first best-scoring neighbour *in set iteration order*. To print the same text we
//! reproduce CPython 3.11's set table (tuple hashing, linear probing, resizing, `pop()` finger,
//! `|=`/copy merge paths) for the few small sets involved; see [`PySet`].
//!
//! Speed without changing a result: a heading walk that is a chain (every cell on it has exactly
//! one related cell in its direction, as in any markdown table) only adds the chain's headings
//! and its last cell, so it jumps from heading to heading along shortcuts built once per table
//! ([`TableData::chain_walk`], tested equal to the replay); other walks are replayed.
//!
//! Differences from upstream: a content whose tables would need more than 2^22 grid slots, more
//! than 2^25 characters of cell text, or a heading walk of more than 2^22 steps gives
//! [`TableError::TooLarge`] (the reference needs minutes and gigabytes there, or never ends).

use crate::html::{self, HtmlError, PyInt};
use crate::text::py_strip;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;
use std::sync::Arc;

const MAX_GRID: usize = 1 << 22;
const FREE: u32 = u32::MAX;
const MAX_CELL_TEXT: usize = 1 << 25;
const MAX_WALK: usize = 1 << 22;

/// Why no tables come back where the reference raises (or would not finish).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableError {
    Html(HtmlError),
    /// A colspan cancelled a rowspan that reaches past the last row (docs/checks.md §4.4).
    IndexError,
    TooLarge,
}

impl TableError {
    pub fn message(&self) -> String {
        match self {
            TableError::Html(e) => e.message(),
            TableError::IndexError => "IndexError: list index out of range".into(),
            TableError::TooLarge => "the tables are too large to check within the work limit".into(),
        }
    }
}

impl From<HtmlError> for TableError {
    fn from(e: HtmlError) -> Self {
        TableError::Html(e)
    }
}

/// Work limits shared by all the tables of one content.
struct Budget {
    grid: usize,
    text: usize,
}

impl Budget {
    fn new() -> Self {
        Budget { grid: MAX_GRID, text: MAX_CELL_TEXT }
    }
    fn grid(&mut self, n: usize) -> Result<(), TableError> {
        self.grid = self.grid.checked_sub(n).ok_or(TableError::TooLarge)?;
        Ok(())
    }
    fn text(&mut self, n: usize) -> Result<(), TableError> {
        self.text = self.text.checked_sub(n).ok_or(TableError::TooLarge)?;
        Ok(())
    }
}

/// One cell as the grid builder receives it.
#[derive(Debug, Clone)]
pub struct CellSpec {
    /// The cell text, as a range of the table's source buffer.
    pub text: Range<usize>,
    pub rowspan: u64,
    pub colspan: u64,
    pub heading: bool,
}

/// A placed cell: its top-left corner, its declared spans and its text.
#[derive(Debug, Clone)]
pub struct Cell {
    pub row: usize,
    pub col: usize,
    pub rowspan: u64,
    pub colspan: u64,
    pub heading: bool,
    pub text: Range<usize>,
}

/// Directions of the stored neighbour relations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Up = 0,
    Down = 1,
    Left = 2,
    Right = 3,
}

/// The reference's `TableData`. Cells are in its `cell_text` dict order (placement order).
#[derive(Debug, Clone)]
pub struct TableData {
    source: Arc<Vec<char>>,
    pub cells: Vec<Cell>,
    pub is_rectangular: bool,
    /// Per direction, the neighbour cell indices of every cell in the order the reference adds
    /// them: cell k's are `lists[dir][starts[dir][k]..starts[dir][k + 1]]`.
    starts: [Vec<u32>; 4],
    lists: [Vec<u32>; 4],
    /// Heading-walk shortcuts for Up and Left, built on first use (see [`TableData::chain_walk`]).
    jumps: [std::sync::OnceLock<Vec<u32>>; 2],
}

impl TableData {
    pub fn text(&self, cell: usize) -> &[char] {
        &self.source[self.cells[cell].text.clone()]
    }

    fn hash(&self, cell: u32) -> u64 {
        let c = &self.cells[cell as usize];
        tuple_hash(c.row as u64, c.col as u64)
    }

    fn neighbours(&self, cell: u32, dir: Dir) -> &[u32] {
        let starts = &self.starts[dir as usize];
        let k = cell as usize;
        &self.lists[dir as usize][starts[k] as usize..starts[k + 1] as usize]
    }

    fn relation_set(&self, cell: u32, dir: Dir) -> PySet {
        // `defaultdict(set)` filled by `.add`, then copied with `set(...)`.
        let mut built = PySet::new();
        for &nb in self.neighbours(cell, dir) {
            built.add(nb, self.hash(nb));
        }
        let mut copy = PySet::new();
        copy.merge(&built);
        copy
    }

    /// `up_relations[cell]` etc., in Python's iteration order.
    pub fn relation(&self, cell: usize, dir: Dir) -> Vec<u32> {
        self.relation_set(cell as u32, dir).keys()
    }

    /// `top_heading_relations(row, col)` of `cell`, in Python's iteration order.
    pub fn top_heading(&self, cell: usize) -> Result<Vec<u32>, TableError> {
        self.walk(cell as u32, Dir::Up)
    }

    /// `left_heading_relations(row, col)` of `cell`, in Python's iteration order.
    pub fn left_heading(&self, cell: usize) -> Result<Vec<u32>, TableError> {
        self.walk(cell as u32, Dir::Left)
    }

    /// `_walk_heading_relations`: [`Self::chain_walk`] where it applies, else the reference's set
    /// operations replayed step by step.
    fn walk(&self, start: u32, dir: Dir) -> Result<Vec<u32>, TableError> {
        if let Some(result) = self.chain_walk(start, dir) {
            return Ok(result);
        }
        self.replay_walk(start, dir)
    }

    /// The step of the heading walk at `cell`: `Some(next)` when its relation set in `dir` is
    /// exactly one cell, `None` when it has no neighbours there (the walk ends), and `FREE`
    /// (as `Some(FREE)`) when it has several (the walk branches).
    fn step(&self, cell: u32, dir: Dir) -> Option<u32> {
        let nbs = self.neighbours(cell, dir);
        let first = *nbs.first()?;
        Some(if nbs.iter().all(|&n| n == first) { first } else { FREE })
    }

    /// For each cell, the first cell after it along its walk in `dir` that matters to the
    /// walk's result: a heading, an end, or a branch (`FREE` where the next step branches).
    /// Built once per table and direction in O(cells): the walk's cells are followed once each.
    fn jumps(&self, dir: Dir) -> &[u32] {
        self.jumps[if dir == Dir::Up { 0 } else { 1 }].get_or_init(|| {
            const TODO: u32 = FREE - 1;
            let n = self.cells.len();
            let mut jump = vec![TODO; n];
            let mut path = Vec::new();
            for k in 0..n as u32 {
                let mut cur = k;
                // Follow the chain until a cell whose jump is known or that decides it.
                let target = loop {
                    if jump[cur as usize] != TODO {
                        break jump[cur as usize];
                    }
                    match self.step(cur, dir) {
                        None => break FREE, // an end has no step after it (never followed)
                        Some(FREE) => break FREE,
                        Some(next) => {
                            path.push(cur);
                            let decides = self.cells[next as usize].heading
                                || !matches!(self.step(next, dir), Some(x) if x != FREE);
                            if decides {
                                break next;
                            }
                            cur = next;
                        }
                    }
                };
                // Every cell on the path jumps to the same target (the cells between are plain).
                for c in path.drain(..) {
                    jump[c as usize] = target;
                }
                if jump[k as usize] == TODO {
                    jump[k as usize] = target;
                }
            }
            jump
        })
    }

    /// The heading walk of `start` when it is a chain (every cell on it has exactly one related
    /// cell in `dir`, as in every markdown table and any HTML table without spans on the way):
    /// then the walk only adds the chain's headings to `headings` in order and its last cell to
    /// `ends`, and the plain cells between can be skipped. Exactly the replay's set operations on
    /// `headings` and `ends`, in O(headings on the chain). None where the walk branches.
    fn chain_walk(&self, start: u32, dir: Dir) -> Option<Vec<u32>> {
        let jump = self.jumps(dir);
        let mut headings = PySet::new();
        let mut ends = PySet::new();
        let mut cur = start;
        loop {
            if self.cells[cur as usize].heading {
                headings.add(cur, self.hash(cur));
            }
            match self.step(cur, dir) {
                None => {
                    ends.add(cur, self.hash(cur));
                    break;
                }
                Some(FREE) => return None,
                Some(_) => match jump[cur as usize] {
                    FREE => return None,
                    next => cur = next,
                },
            }
        }
        let h = self.hash(start);
        headings.difference_one(start, h);
        ends.difference_one(start, h);
        Some(if headings.used > 0 { headings.keys() } else { ends.keys() })
    }

    /// `_walk_heading_relations`, replaying the reference's set operations step by step.
    fn replay_walk(&self, start: u32, dir: Dir) -> Result<Vec<u32>, TableError> {
        let mut headings = PySet::new();
        let mut ends = PySet::new();
        let mut to_visit = PySet::new();
        to_visit.add(start, self.hash(start));
        let mut relations: HashMap<u32, PySet, BuildHasherDefault<CellHasher>> = HashMap::default();
        let mut steps = 0;
        while to_visit.used > 0 {
            steps += 1;
            if steps > MAX_WALK {
                return Err(TableError::TooLarge);
            }
            let cur = to_visit.pop();
            if self.cells[cur as usize].heading {
                headings.add(cur, self.hash(cur));
            }
            if self.neighbours(cur, dir).is_empty() {
                ends.add(cur, self.hash(cur));
            } else {
                let rel = relations.entry(cur).or_insert_with(|| self.relation_set(cur, dir));
                to_visit.merge(rel);
            }
        }
        let h = self.hash(start);
        headings.difference_one(start, h);
        ends.difference_one(start, h);
        Ok(if headings.used > 0 { headings.keys() } else { ends.keys() })
    }
}

/// A multiplicative hash for cell ids (the walk's cache needs no protection from collisions).
#[derive(Default)]
struct CellHasher(u64);

impl Hasher for CellHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.0 = (self.0 ^ u64::from(x)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// `_build_table_data_from_specs` (docs/checks.md §4.3–4.5): `Ok(None)` where it returns None.
fn build(
    source: &Arc<Vec<char>>,
    rows: &[Vec<CellSpec>],
    budget: &mut Budget,
) -> Result<Option<TableData>, TableError> {
    if rows.is_empty() {
        return Ok(None);
    }
    let mut cells: Vec<Cell> = Vec::new();
    // The occupancy rows, one after another; `bounds[r]` is row r's range of `entries`.
    let mut entries: Vec<u32> = Vec::new();
    let mut bounds: Vec<Range<usize>> = Vec::with_capacity(rows.len());
    // Per column: (cell, rows still to cover below).
    let mut active: Vec<Option<(u32, u64)>> = Vec::new();
    let advance = |slot: &mut Option<(u32, u64)>| -> u32 {
        match *slot {
            Some((id, left)) => {
                *slot = (left > 1).then_some((id, left - 1));
                id
            }
            None => FREE,
        }
    };
    for (r, specs) in rows.iter().enumerate() {
        let row_start = entries.len();
        let mut col = 0usize;
        let mut next = 0usize;
        while next < specs.len() || col < active.len() {
            if col < active.len() && active[col].is_some() {
                entries.push(advance(&mut active[col]));
                col += 1;
                budget.grid(1)?;
                continue;
            }
            if next >= specs.len() {
                if col < active.len() {
                    entries.push(FREE);
                    col += 1;
                    budget.grid(1)?;
                    continue;
                }
                break;
            }
            let spec = &specs[next];
            next += 1;
            let colspan = usize::try_from(spec.colspan).map_err(|_| TableError::TooLarge)?;
            budget.grid(colspan)?;
            budget.text(spec.text.len())?;
            let id = u32::try_from(cells.len()).map_err(|_| TableError::TooLarge)?;
            cells.push(Cell {
                row: r,
                col,
                rowspan: spec.rowspan,
                colspan: spec.colspan,
                heading: spec.heading,
                text: spec.text.clone(),
            });
            if active.len() < col + colspan {
                active.resize(col + colspan, None);
            }
            for slot in &mut active[col..col + colspan] {
                entries.push(id);
                *slot = (spec.rowspan > 1).then_some((id, spec.rowspan - 1));
            }
            col += colspan;
        }
        bounds.push(row_start..entries.len());
    }
    // Rowspans still running continue as extra rows.
    let extra = active.iter().flatten().map(|&(_, left)| left).max().unwrap_or(0);
    let extra = usize::try_from(extra).map_err(|_| TableError::TooLarge)?;
    budget.grid(extra.checked_mul(active.len()).ok_or(TableError::TooLarge)?)?;
    while active.iter().any(Option::is_some) {
        let row_start = entries.len();
        for slot in active.iter_mut() {
            entries.push(advance(slot));
        }
        bounds.push(row_start..entries.len());
    }
    if cells.is_empty() {
        return Ok(None);
    }
    let last_used = |b: &Range<usize>| entries[b.clone()].iter().rposition(|&x| x != FREE);
    let Some(width) = bounds.iter().filter_map(last_used).max() else {
        return Ok(None);
    };
    let width = width + 1;
    let height = bounds.len();
    // Every row is padded (or cut) to the width, as the reference does.
    budget.grid(width.checked_mul(height).ok_or(TableError::TooLarge)?)?;
    let mut grid = vec![FREE; width * height];
    for (r, b) in bounds.iter().enumerate() {
        let row = &entries[b.clone()];
        let n = row.len().min(width);
        grid[r * width..r * width + n].copy_from_slice(&row[..n]);
    }
    drop(entries);
    let at = |r: usize, c: usize| grid[r * width + c];
    let is_rectangular = !grid.contains(&FREE);

    let mut lists: [Vec<u32>; 4] = Default::default();
    let mut starts: [Vec<u32>; 4] = Default::default();
    let mut per_dir: [Vec<u32>; 4] = Default::default();
    for (id, cell) in cells.iter().enumerate() {
        let (r0, c0) = (cell.row, cell.col);
        let r1 = r0.saturating_add(usize::try_from(cell.rowspan - 1).unwrap_or(usize::MAX));
        let c1 = c0 + (cell.colspan as usize) - 1;
        if r1 >= height && (c1 + 1 < width || c0 > 0) {
            // The reference indexes `occupancy[row]` for a row that does not exist.
            return Err(TableError::IndexError);
        }
        let me = id as u32;
        let found = |x: &u32| *x != FREE && *x != me;
        let rows = r0..r1.saturating_add(1).min(height);
        per_dir.iter_mut().for_each(Vec::clear);
        for r in rows.clone() {
            per_dir[Dir::Right as usize].extend((c1 + 1..width).map(|c| at(r, c)).find(found));
        }
        for r in rows {
            per_dir[Dir::Left as usize].extend((0..c0).rev().map(|c| at(r, c)).find(found));
        }
        for c in c0..=c1 {
            per_dir[Dir::Down as usize].extend((r1.saturating_add(1)..height).map(|r| at(r, c)).find(found));
        }
        for c in c0..=c1 {
            per_dir[Dir::Up as usize].extend((0..r0).rev().map(|r| at(r, c)).find(found));
        }
        for (dir, found) in per_dir.iter().enumerate() {
            starts[dir].push(u32::try_from(lists[dir].len()).map_err(|_| TableError::TooLarge)?);
            push_distinct(&mut lists[dir], found);
        }
    }
    for (dir, list) in lists.iter().enumerate() {
        starts[dir].push(list.len() as u32);
    }
    Ok(Some(TableData { source: Arc::clone(source), cells, is_rectangular, starts, lists, jumps: Default::default() }))
}

/// Appends `items` to `list` without repeats, keeping first occurrences (a set's `.add`s).
fn push_distinct(list: &mut Vec<u32>, items: &[u32]) {
    if items.len() <= 16 {
        let from = list.len();
        for &x in items {
            if !list[from..].contains(&x) {
                list.push(x);
            }
        }
    } else {
        let mut seen = std::collections::HashSet::new();
        list.extend(items.iter().copied().filter(|&x| seen.insert(x)));
    }
}

/// `parse_markdown_tables` (docs/checks.md §4.1).
pub fn parse_markdown_tables(content: &[char]) -> Result<Vec<TableData>, TableError> {
    let s = content;
    if html::find2(s, 0, '|', '|').is_none() {
        return Ok(Vec::new());
    }
    let body = strip_range(s, 0..s.len());
    let (offset, body) = (body.start, &s[body]);
    // Lines of the stripped content as ranges of `content`, and whether each holds a '|'.
    let end = offset + body.len();
    let mut lines: Vec<(Range<usize>, bool)> = Vec::new();
    let mut start = offset;
    while start <= end {
        let stop = html::find2(&s[..end], start, '\n', '\n').unwrap_or(end);
        let pipe = html::find2(&s[..stop], start, '|', '|').is_some();
        lines.push((start..stop, pipe));
        start = stop + 1;
    }

    let mut budget = Budget::new();
    let mut tables = Vec::new();
    let mut block: Vec<Range<usize>> = Vec::new();
    for line in lines.into_iter().map(Some).chain(std::iter::once(None)) {
        if let Some((line, true)) = &line {
            block.push(line.clone());
            continue;
        }
        if block.len() >= 2 {
            let mut cell_texts = Vec::new();
            let rows = markdown_rows(s, &block, &mut cell_texts);
            if !rows.is_empty() {
                if let Some(t) = build(&Arc::new(cell_texts), &rows, &mut budget)? {
                    tables.push(t);
                }
            }
        }
        block.clear();
    }
    Ok(tables)
}

/// `_process_table_lines` plus the heading rule (row 0 and column 0 are headings). The cell
/// texts are appended to `texts`, which the specs' ranges refer to.
fn markdown_rows(s: &[char], block: &[Range<usize>], texts: &mut Vec<char>) -> Vec<Vec<CellSpec>> {
    let is_sep_char = |c: char| matches!(c, '-' | ' ' | ':');
    // `line.replace("|", "").strip()` is non-empty and made of "- :" only.
    let separator = block.iter().position(|line| {
        let text = &s[line.clone()];
        let solid = |c: &char| *c != '|' && !crate::text::is_py_space(*c);
        match (text.iter().position(solid), text.iter().rposition(solid)) {
            (Some(f), Some(l)) => text[f..=l].iter().all(|&c| c == '|' || is_sep_char(c)),
            _ => false,
        }
    });
    let mut rows: Vec<Vec<CellSpec>> = Vec::new();
    for (k, line) in block.iter().enumerate() {
        let text = &s[line.clone()];
        if Some(k) == separator {
            continue;
        }
        if !py_strip(text).is_empty() && text.iter().all(|&c| is_sep_char(c) || c == '|') {
            continue;
        }
        let mut pieces: Vec<Range<usize>> = Vec::new();
        let mut from = line.start;
        for p in line.clone() {
            if s[p] == '|' {
                pieces.push(strip_range(s, from..p));
                from = p + 1;
            }
        }
        pieces.push(strip_range(s, from..line.end));
        if pieces.first().is_some_and(|r| r.is_empty()) {
            pieces.remove(0);
        }
        if pieces.last().is_some_and(|r| r.is_empty()) {
            pieces.pop();
        }
        if pieces.is_empty() {
            continue;
        }
        let r = rows.len();
        let mut specs = Vec::with_capacity(pieces.len());
        for (c, piece) in pieces.into_iter().enumerate() {
            let at = texts.len();
            texts.extend_from_slice(&s[piece]);
            specs.push(CellSpec { text: at..texts.len(), rowspan: 1, colspan: 1, heading: r == 0 || c == 0 });
        }
        rows.push(specs);
    }
    rows
}

/// The range of `s[r]` left after Python `str.strip()`.
fn strip_range(s: &[char], r: Range<usize>) -> Range<usize> {
    let part = &s[r.clone()];
    let t = py_strip(part);
    if t.is_empty() {
        return r.start..r.start;
    }
    let lead = part.iter().position(|&c| !crate::text::is_py_space(c)).unwrap_or(0);
    r.start + lead..r.start + lead + t.len()
}

/// `_safe_span_int(value, 1)`.
fn safe_span(raw: Option<&[char]>) -> u64 {
    match raw.and_then(html::py_int) {
        Some(PyInt::Positive(n)) => n,
        _ => 1,
    }
}

/// `parse_html_tables` (docs/checks.md §4.2).
pub fn parse_html_tables(content: &[char]) -> Result<Vec<TableData>, TableError> {
    let doc = html::parse(content)?;
    let mut budget = Budget::new();
    let mut tables = Vec::new();
    let mut specs_of_table = Vec::new();
    // Cell texts (stripped) as ranges of the document's text buffer.
    let cell_text: Vec<Range<usize>> =
        (0..doc.cells.len()).map(|c| strip_range(&doc.text, doc.cells[c].text.clone())).collect();
    let source = Arc::new(doc.text);
    for table in &doc.tables {
        if table.rows.is_empty() {
            continue;
        }
        let total = table.rows.len() as u64;
        specs_of_table.clear();
        for (r, row) in doc.rows[table.rows.clone()].iter().enumerate() {
            let mut specs = Vec::with_capacity(row.cells.len());
            for &c in &row.cells {
                let cell = &doc.cells[c];
                let mut rowspan = safe_span(cell.rowspan.as_deref());
                if cell.rowspan.as_deref().is_some_and(|v| py_strip(v) == ['0']) {
                    rowspan = (total - r as u64).max(1);
                }
                specs.push(CellSpec {
                    text: cell_text[c].clone(),
                    rowspan,
                    colspan: safe_span(cell.colspan.as_deref()),
                    heading: cell.is_th || row.in_thead,
                });
            }
            budget.grid(specs.len())?;
            specs_of_table.push(specs);
        }
        if let Some(t) = build(&source, &specs_of_table, &mut budget)? {
            tables.push(t);
        }
    }
    Ok(tables)
}

/// Test hook: the tables of `content` (markdown or HTML) as JSON, for comparison with the
/// reference's `TableData`: per table its cells `[row, col, text]` in dict order, declared
/// `[rowspan, colspan]`, heading cells, `is_rectangular`, and per cell each relation as a list
/// of `[row, col]` in Python's set iteration order. `Err` carries the error message.
pub fn describe(content: &[char], markdown: bool) -> Result<String, String> {
    use serde_json::{json, Value};
    let tables = if markdown { parse_markdown_tables(content) } else { parse_html_tables(content) };
    let tables = tables.map_err(|e| e.message())?;
    let mut out = Vec::new();
    for t in &tables {
        let pos = |ids: &[u32]| -> Value {
            ids.iter().map(|&k| json!([t.cells[k as usize].row, t.cells[k as usize].col])).collect()
        };
        let per_cell = |f: &dyn Fn(usize) -> Result<Vec<u32>, TableError>| -> Result<Value, String> {
            (0..t.cells.len()).map(|k| f(k).map(|ids| pos(&ids)).map_err(|e| e.message())).collect()
        };
        out.push(json!({
            "cells": t.cells.iter().enumerate()
                .map(|(k, c)| json!([c.row, c.col, crate::text::string(t.text(k))])).collect::<Value>(),
            "spans": t.cells.iter().map(|c| json!([c.rowspan, c.colspan])).collect::<Value>(),
            "headings": t.cells.iter().filter(|c| c.heading).map(|c| json!([c.row, c.col])).collect::<Value>(),
            "rectangular": t.is_rectangular,
            "up": per_cell(&|k| Ok(t.relation(k, Dir::Up)))?,
            "down": per_cell(&|k| Ok(t.relation(k, Dir::Down)))?,
            "left": per_cell(&|k| Ok(t.relation(k, Dir::Left)))?,
            "right": per_cell(&|k| Ok(t.relation(k, Dir::Right)))?,
            "top_heading": per_cell(&|k| t.top_heading(k))?,
            "left_heading": per_cell(&|k| t.left_heading(k))?,
        }));
    }
    Ok(Value::Array(out).to_string())
}

// ---------------------------------------------------------------------------------------------
// CPython's set, for iteration order

/// `hash((row, col))` for small non-negative ints (CPython 3.8+ xxHash-based tuple hash).
fn tuple_hash(row: u64, col: u64) -> u64 {
    const P1: u64 = 11400714785074694791;
    const P2: u64 = 14029467366897019727;
    const P5: u64 = 2870177450012600261;
    let mut acc = P5;
    for lane in [row, col] {
        acc = acc.wrapping_add(lane.wrapping_mul(P2)).rotate_left(31).wrapping_mul(P1);
    }
    acc = acc.wrapping_add(2 ^ (P5 ^ 3527539));
    if acc == u64::MAX {
        1546275796
    } else {
        acc
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Empty,
    Dummy,
    Key(u64, u32),
}

const LINEAR_PROBES: u64 = 9;
const PERTURB_SHIFT: u32 = 5;
const SET_MINSIZE: usize = 8;

/// A CPython 3.11 `set` of cell ids, reproducing its slot layout so that iteration and
/// `pop()` visit elements in the same order as the reference's sets.
#[derive(Debug, Clone)]
struct PySet {
    table: Vec<Slot>,
    fill: usize,
    used: usize,
    finger: usize,
}

fn next_probe(i: u64, perturb: &mut u64, mask: u64) -> u64 {
    *perturb >>= PERTURB_SHIFT;
    (i.wrapping_mul(5).wrapping_add(1).wrapping_add(*perturb)) & mask
}

fn insert_clean(table: &mut [Slot], key: u32, hash: u64) {
    let mask = (table.len() - 1) as u64;
    let mut perturb = hash;
    let mut i = hash & mask;
    loop {
        let probes = if i + LINEAR_PROBES <= mask { LINEAR_PROBES } else { 0 };
        for idx in i..=i + probes {
            if table[idx as usize] == Slot::Empty {
                table[idx as usize] = Slot::Key(hash, key);
                return;
            }
        }
        i = next_probe(i, &mut perturb, mask);
    }
}

impl PySet {
    fn new() -> Self {
        PySet { table: vec![Slot::Empty; SET_MINSIZE], fill: 0, used: 0, finger: 0 }
    }

    fn mask(&self) -> u64 {
        (self.table.len() - 1) as u64
    }

    /// `set_add_entry`.
    fn add(&mut self, key: u32, hash: u64) {
        let mask = self.mask();
        let mut perturb = hash;
        let mut i = hash & mask;
        let mut freeslot = None;
        let unused = 'probe: loop {
            let probes = if i + LINEAR_PROBES <= mask { LINEAR_PROBES } else { 0 };
            for idx in i..=i + probes {
                match self.table[idx as usize] {
                    Slot::Empty => break 'probe idx as usize,
                    Slot::Key(h, k) if h == hash && k == key => return,
                    Slot::Key(..) => {}
                    Slot::Dummy => freeslot = Some(idx as usize),
                }
            }
            i = next_probe(i, &mut perturb, mask);
        };
        self.used += 1;
        if let Some(f) = freeslot {
            self.table[f] = Slot::Key(hash, key);
            return;
        }
        self.fill += 1;
        self.table[unused] = Slot::Key(hash, key);
        if (self.fill as u64) * 5 < mask * 3 {
            return;
        }
        self.resize(if self.used > 50000 { self.used * 2 } else { self.used * 4 });
    }

    /// `set_table_resize`.
    fn resize(&mut self, minused: usize) {
        let mut size = SET_MINSIZE;
        while size <= minused {
            size <<= 1;
        }
        if size == SET_MINSIZE && self.table.len() == SET_MINSIZE && self.fill == self.used {
            return;
        }
        let old = std::mem::replace(&mut self.table, vec![Slot::Empty; size]);
        self.fill = self.used;
        for slot in old {
            if let Slot::Key(h, k) = slot {
                insert_clean(&mut self.table, k, h);
            }
        }
    }

    /// `set_merge`: `self |= other`, or `set(other)` on a new set.
    fn merge(&mut self, other: &PySet) {
        if other.used == 0 {
            return;
        }
        if ((self.fill + other.used) as u64) * 5 >= self.mask() * 3 {
            self.resize((self.used + other.used) * 2);
        }
        if self.fill == 0 && self.table.len() == other.table.len() && other.fill == other.used {
            self.table.copy_from_slice(&other.table);
            self.fill = other.fill;
            self.used = other.used;
            return;
        }
        if self.fill == 0 {
            self.fill = other.used;
            self.used = other.used;
            for slot in &other.table {
                if let Slot::Key(h, k) = *slot {
                    insert_clean(&mut self.table, k, h);
                }
            }
            return;
        }
        for slot in &other.table {
            if let Slot::Key(h, k) = *slot {
                self.add(k, h);
            }
        }
    }

    /// `set.pop()`. The set must not be empty.
    fn pop(&mut self) -> u32 {
        let mask = self.table.len() - 1;
        let mut idx = self.finger & mask;
        loop {
            if let Slot::Key(_, k) = self.table[idx] {
                self.table[idx] = Slot::Dummy;
                self.used -= 1;
                self.finger = idx + 1;
                return k;
            }
            idx = if idx >= mask { 0 } else { idx + 1 };
        }
    }

    /// `self -= {key}`.
    fn difference_one(&mut self, key: u32, hash: u64) {
        let mask = self.mask();
        let mut perturb = hash;
        let mut i = hash & mask;
        'probe: loop {
            let probes = if i + LINEAR_PROBES <= mask { LINEAR_PROBES } else { 0 };
            for idx in i..=i + probes {
                match self.table[idx as usize] {
                    Slot::Empty => break 'probe,
                    Slot::Key(h, k) if h == hash && k == key => {
                        self.table[idx as usize] = Slot::Dummy;
                        self.used -= 1;
                        break 'probe;
                    }
                    _ => {}
                }
            }
            i = next_probe(i, &mut perturb, mask);
        }
        if ((self.fill - self.used) as u64) > mask / 4 {
            self.resize(if self.used > 50000 { self.used * 2 } else { self.used * 4 });
        }
    }

    fn keys(&self) -> Vec<u32> {
        self.table
            .iter()
            .filter_map(|s| match s {
                Slot::Key(_, k) => Some(*k),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{chars, string};

    /// (row, col) -> text of the first table.
    fn cells(t: &TableData) -> Vec<((usize, usize), String)> {
        t.cells.iter().enumerate().map(|(k, c)| ((c.row, c.col), string(t.text(k)))).collect()
    }

    fn find(t: &TableData, text: &str) -> usize {
        (0..t.cells.len()).find(|&k| string(t.text(k)) == text).expect("cell present")
    }

    fn texts(t: &TableData, ids: &[u32]) -> Vec<String> {
        ids.iter().map(|&k| string(t.text(k as usize))).collect()
    }

    #[test]
    fn python_hash_and_set_order() {
        assert_eq!(tuple_hash(0, 0) as i64, -8458139203682520985);
        assert_eq!(tuple_hash(1, 2) as i64, -3550055125485641917);
        assert_eq!(tuple_hash(100, 5) as i64, -4309070903715076516);
        let keys = [(5, 1), (0, 3), (2, 2), (9, 9), (1, 0), (4, 4)];
        let mut s = PySet::new();
        for (k, &(r, c)) in keys.iter().enumerate() {
            s.add(k as u32, tuple_hash(r, c));
        }
        let order = |s: &PySet| s.keys().iter().map(|&k| keys[k as usize]).collect::<Vec<_>>();
        assert_eq!(order(&s), vec![(4, 4), (9, 9), (0, 3), (5, 1), (2, 2), (1, 0)]);
        let mut copy = PySet::new();
        copy.merge(&s);
        assert_eq!(order(&copy), vec![(4, 4), (2, 2), (9, 9), (1, 0), (0, 3), (5, 1)]);
    }

    #[test]
    fn markdown_blocks() {
        let t = parse_markdown_tables(&chars("| Name | Val |\n|---|---|\n| A | 1 |\n| B | 2 |")).unwrap();
        assert_eq!(t.len(), 1);
        let t = &t[0];
        assert_eq!(cells(t)[2], ((1, 0), "A".to_string()));
        // top_heading of (r, 0) is every column-0 cell above; of (r, c>0) only row 0.
        let b = find(t, "B");
        let mut th = texts(t, &t.top_heading(b).unwrap());
        th.sort();
        assert_eq!(th, vec!["A", "Name"]);
        assert_eq!(texts(t, &t.top_heading(find(t, "2")).unwrap()), vec!["Val"]);
        assert_eq!(texts(t, &t.left_heading(find(t, "Val")).unwrap()), vec!["Name"]);
        // A single row, or rows split by a blank line, is no table.
        assert!(parse_markdown_tables(&chars("| a | b |\n\n| c | d |")).unwrap().is_empty());
        // Any two adjacent lines with a pipe form one.
        assert_eq!(parse_markdown_tables(&chars("$|x|$\nand |y|")).unwrap().len(), 1);
    }

    #[test]
    fn markdown_separator_rules() {
        let t = parse_markdown_tables(&chars("| a | b |\n|---|---|\n|---|---|\r\n| c | d |")).unwrap();
        let got: Vec<_> = cells(&t[0]).into_iter().map(|(_, s)| s).collect();
        assert_eq!(got, vec!["a", "b", "---", "---", "c", "d"]);
    }

    #[test]
    fn html_heading_walk_without_th() {
        let t = parse_html_tables(&chars(
            "<table><tr><td>h1</td><td>h2</td></tr><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>",
        ))
        .unwrap();
        let t = &t[0];
        assert_eq!(texts(t, &t.top_heading(find(t, "d")).unwrap()), vec!["h2"]);
        assert_eq!(texts(t, &t.left_heading(find(t, "d")).unwrap()), vec!["c"]);
        assert!(t.top_heading(find(t, "h1")).unwrap().is_empty());
    }

    #[test]
    fn colspan_cancelling_rowspan_crashes() {
        let s = "<table><tr><td>A</td><td rowspan='3'>B</td></tr><tr><td colspan='2'>C</td></tr></table>";
        assert_eq!(parse_html_tables(&chars(s)).unwrap_err(), TableError::IndexError);
        // Within the height: no error, B's relations cover rows it no longer occupies.
        let s = "<table><tr><td>A</td><td rowspan='2'>B</td></tr><tr><td colspan='2'>C</td></tr></table>";
        let t = &parse_html_tables(&chars(s)).unwrap()[0];
        let mut left = texts(t, &t.relation(find(t, "B"), Dir::Left));
        left.sort();
        assert_eq!(left, vec!["A", "C"]);
    }

    #[test]
    fn ragged_and_spans() {
        let t = &parse_html_tables(&chars(
            "<table><tr><td rowspan=0>a</td><td>b</td></tr><tr><td>c</td></tr><tr></tr></table>",
        ))
        .unwrap()[0];
        assert_eq!(t.cells[0].rowspan, 3);
        assert!(!t.is_rectangular);
        let t = &parse_html_tables(&chars("<table><tr><td colspan='2x'>a</td><td colspan=' 2 '>b</td></tr></table>"))
            .unwrap()[0];
        assert_eq!((t.cells[0].colspan, t.cells[1].colspan, t.cells[1].col), (1, 2, 1));
    }

    #[test]
    fn gaps_are_skipped() {
        let t = &parse_markdown_tables(&chars("| a | b | c |\n| d |\n| e | f | g |")).unwrap()[0];
        assert!(!t.is_rectangular);
        assert_eq!(texts(t, &t.relation(find(t, "f"), Dir::Up)), vec!["b"]);
        assert_eq!(texts(t, &t.relation(find(t, "b"), Dir::Down)), vec!["f"]);
    }

    /// The chain shortcut gives exactly the replayed walk (cells and order) on random HTML
    /// tables with spans, th/td mixes and ragged rows, and on markdown tables.
    #[test]
    fn chain_walks_equal_the_replay() {
        let mut rng = crate::test_rng::XorShift(0x2545_f491_4f6c_dd1du64);
        let mut next = |n: u64| rng.below(n as usize) as u64;
        let mut chained = 0;
        for round in 0..3000 {
            let rows = 1 + next(7);
            let mut html = String::from("<table>");
            for _ in 0..rows {
                html.push_str("<tr>");
                for _ in 0..next(6) {
                    let tag = if next(4) == 0 { "th" } else { "td" };
                    let rs = if next(6) == 0 { format!(" rowspan={}", 1 + next(3)) } else { String::new() };
                    let cs = if next(6) == 0 { format!(" colspan={}", 1 + next(3)) } else { String::new() };
                    html.push_str(&format!("<{tag}{rs}{cs}>c{}</{tag}>", next(5)));
                }
                html.push_str("</tr>");
            }
            html.push_str("</table>");
            let md = format!("| h | i | j |\n|---|---|---|\n{}", "| a | b | c |\n".repeat(round % 9));
            let mut tables = parse_html_tables(&chars(&html)).unwrap_or_default();
            tables.extend(parse_markdown_tables(&chars(&md)).unwrap_or_default());
            for t in &tables {
                for cell in 0..t.cells.len() as u32 {
                    for dir in [Dir::Up, Dir::Left] {
                        let replay = t.replay_walk(cell, dir).unwrap();
                        if let Some(fast) = t.chain_walk(cell, dir) {
                            chained += 1;
                            assert_eq!(fast, replay, "{html} / {md}: cell {cell} {dir:?}");
                        }
                    }
                }
            }
        }
        assert!(chained > 10_000, "{chained}");
    }

    #[test]
    fn a_long_markdown_column_takes_the_chain_shortcut() {
        let md = format!("| A | H |\n|---|---|\n{}", "| A | B |\n".repeat(3_000));
        let t = &parse_markdown_tables(&chars(&md)).unwrap()[0];
        for cell in 0..t.cells.len() as u32 {
            assert!(t.chain_walk(cell, Dir::Up).is_some(), "a markdown column is a chain");
            assert!(t.chain_walk(cell, Dir::Left).is_some());
        }
    }
}
