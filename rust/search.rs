//! Port of `fuzzysearch.find_near_matches(sub, seq, max_l_dist=k)` from the Python package
//! fuzzysearch 0.8.1 (docs/checks.md §3.0.4), as used by the olmOCR-bench `order` test.
//!
//! # What it computes
//!
//! A list of approximate occurrences of `sub` in `seq`, each a half-open range of code-point
//! offsets into `seq` plus a distance, sorted by `(start, end, dist)`. Only `max_l_dist` is
//! given, so upstream takes one of these paths (the pure-Python ones: in fuzzysearch 0.8.1
//! wheels the C helpers either do not exist or reject `str`):
//!
//! * `k == 0`: every exact occurrence, overlapping ones included (the search restarts one past
//!   the previous start), ascending, **without** consolidation.
//! * `k >= 1` and `len(sub) // (k+1) >= 3`: the n-gram algorithm (exact occurrences of each
//!   n-gram of length `len(sub) // (k+1)` inside its search window, expanded to the right and
//!   then to the left with the `_expand_short` / `_expand_long` prefix aligners, the latter
//!   banded, with its stale out-of-band scores reproduced).
//! * otherwise: the "linear programming" candidate algorithm. If `k >= len(sub)` upstream
//!   yields the empty match `(i, i, len(sub))` for every `i` in `0..=len(seq)`; that is kept.
//!
//! For `k >= 1` the raw matches are consolidated: matches whose ranges share at least one
//! position are grouped transitively (touching ranges do not count), and from each group the
//! match with the smallest distance, then the greatest length, is kept. Both search algorithms
//! are heuristics: the result is not "every substring within distance k"; it is exactly what
//! fuzzysearch returns.
//!
//! # Differences from upstream
//!
//! * **Tie rule.** When a consolidation group holds several best matches (equal distance and
//!   equal length), upstream's pick depends on CPython set iteration order over hashes that
//!   include a per-process random string hash, so it varies with `PYTHONHASHSEED` (e.g.
//!   `find_near_matches("abab", "a babaabb", 2)` gives `(0, 5, 1)` or `(3, 8, 1)`). Here the
//!   tied match with the smallest start (then smallest end) wins, deterministically; it is one
//!   of the group's tied best matches, i.e. a pick upstream also makes under some seeds.
//! * **Bounded LP search.** Upstream's LP candidate list is never deduplicated and can grow
//!   exponentially in `k`. Here a candidate `(s, j, d)` is dropped when another one with the
//!   same `j`, `s' <= s` and `d' <= d` exists (identical duplicates collapse to one). This
//!   does not change the consolidated output (the argument is at `lp_search`). The LP search
//!   then costs O(len(seq) · len(sub) · (k+1)) time.
//! * Empty `sub` returns an empty list (upstream raises `ValueError`). `k >= len(sub)` is
//!   handled as upstream does (see above). Like upstream's parameter normalisation,
//!   `max_l_dist` is capped at `3 << 29`.
//!
//! Not a difference, but worth knowing: the n-gram path runs upstream's expansions, at most
//! k+1 right/left expansion pairs per seq position, each O(len(sub) · (len(sub) + k)) at worst
//! (banded in practice). A small exact memo (`Memo`) skips re-expanding text identical to a
//! recent one, which keeps repetitive input (runs of one char, a repeated phrase) cheap. Exact
//! search (k == 0) is Knuth-Morris-Pratt, O(len(seq) + len(sub)); consolidation is
//! O(log(groups)) per raw match.
//!
//! `extreme_match` gives the first or last element of the same list (all the `order` test
//! needs) with an early exit: for the n-gram path it visits the n-gram occurrences by
//! alignment from one end of the text and stops once the extreme group can no longer change.
//! Its tests compare it with the full search on random and adversarial inputs.
//!
//! Agreement with the real library is checked against `tests/golden/search_cases.jsonl`
//! (produced by `tests/golden/gen_search_cases.py` under several hash seeds).

use std::cmp::{max, min, Reverse};
use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NearMatch {
    pub start: usize,
    pub end: usize,
    pub dist: usize,
}

/// Upstream replaces `max_l_dist` by `min(max_l_dist, sum of the three unset limits)`, each
/// unset limit counting as `1 << 29`.
const MAX_L_DIST_CAP: usize = 3 << 29;

/// `find_near_matches(sub, seq, max_l_dist=k)`; see the module documentation.
pub fn find_near_matches(sub: &[char], seq: &[char], max_l_dist: usize) -> Vec<NearMatch> {
    find_near_matches_indexed(sub, seq, max_l_dist, None)
}

/// [`find_near_matches`] with an optional [`CharIndex`] of `seq` (built once for several
/// searches in the same text): the exact n-gram scans then visit only the positions of the
/// pattern's rarest character. The result is the same with or without it.
pub fn find_near_matches_indexed(
    sub: &[char],
    seq: &[char],
    max_l_dist: usize,
    index: Option<&CharIndex>,
) -> Vec<NearMatch> {
    if sub.is_empty() {
        return Vec::new();
    }
    let k = min(max_l_dist, MAX_L_DIST_CAP);
    let m = sub.len();
    if k == 0 {
        let mut out = Vec::new();
        for_each_occurrence(sub, seq, 0, seq.len(), index, |x| {
            out.push(NearMatch { start: x, end: x + m, dist: 0 });
        });
        return out;
    }
    if k >= m {
        // Every empty match lies in a group of its own (an empty range shares no position).
        return (0..=seq.len()).map(|i| NearMatch { start: i, end: i, dist: m }).collect();
    }
    let mut groups = Groups::default();
    if m / (k + 1) >= 3 {
        ngram_search_with(sub, seq, k, &mut groups, true, index);
    } else {
        lp_search(sub, seq, k, &mut groups);
    }
    groups.finish()
}

/// Which end of [`find_near_matches`]'s list [`extreme_match`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The first match: the smallest start (for `k >= 1` the best match of the leftmost group).
    First,
    /// The last match: the greatest start (for `k >= 1` the best match of the rightmost group).
    Last,
}

/// `find_near_matches_indexed(sub, seq, max_l_dist, index)` followed by `.first()` or
/// `.last()`, without computing the rest of the list where it can stop early.
///
/// The list is sorted by start, and for `k >= 1` it holds one match per group, the groups being
/// disjoint spans, each match starting inside its group's span; so its first element is the
/// best match of the leftmost group, and its last that of the rightmost group.
///
/// * `k == 0`: the first or last exact occurrence.
/// * `k >= len(sub)`: the empty match at 0 or at `len(seq)`.
/// * n-gram path: the exact occurrences of all n-grams are visited by alignment `y = x - a`
///   (`x` the occurrence, `a` the n-gram's offset in `sub`), ascending for `First`, descending
///   for `Last`, a block of alignments at a time (so memory stays bounded). A raw match from
///   alignment `y` lies within `[y-k, y+m+k)` (see [`NgramExpander::raw_match`]). Groups are the
///   connected components of the overlap graph of the raw matches whatever their order (see
///   [`Groups`]), and the memos are exact in any order, so the raw matches may come in this
///   order. For `First`, once the next alignment has `y - k >= end` of the current leftmost
///   span, no later raw match shares a position with that group or starts before it (matches
///   are non-empty, as an n-gram is), so that group, with its best match, is final; likewise
///   for `Last` once `y + m + k <= start` of the rightmost span.
/// * LP path (`len(sub) // (k+1) < 3`, short patterns): the full search, then its first or
///   last element.
///
/// Cost: the expansions of the occurrences visited before the stop (about half of them on
/// ordinary text, when the extreme group lies mid-page), plus scanning and ordering each block.
/// When the extreme group never settles (e.g. a match that keeps growing through periodic
/// text) or there is no match, every occurrence is visited, as in the full search.
pub fn extreme_match(
    sub: &[char],
    seq: &[char],
    max_l_dist: usize,
    end: End,
    index: Option<&CharIndex>,
) -> Option<NearMatch> {
    extreme_match_blocks(sub, seq, max_l_dist, end, index, FIRST_BLOCK)
}

/// Alignments in the first block of [`extreme_match`]'s sweep.
const FIRST_BLOCK: usize = 256;

/// [`extreme_match`] with the size of the first block of alignments (tests use tiny ones).
fn extreme_match_blocks(
    sub: &[char],
    seq: &[char],
    max_l_dist: usize,
    end: End,
    index: Option<&CharIndex>,
    first_block: usize,
) -> Option<NearMatch> {
    if sub.is_empty() {
        return None;
    }
    let k = min(max_l_dist, MAX_L_DIST_CAP);
    let (m, n) = (sub.len(), seq.len());
    if k == 0 {
        let window = NgramWindow { a: 0, g: m, lo: 0, hi: n };
        let anchor = Anchor::new(sub, index);
        let mut found = None;
        let mut sweep = AlignmentSweep::new(end, 0, n + 1, 1, first_block);
        while let Some((y0, y1)) = sweep.next_block() {
            window.for_each_in_block(sub, seq, y0, y1, anchor, |x| {
                // Ascending within the block: keep the first, or the last.
                if end == End::Last || found.is_none() {
                    found = Some(x);
                }
            });
            if let Some(x) = found {
                return Some(NearMatch { start: x, end: x + m, dist: 0 });
            }
        }
        return None;
    }
    if k >= m {
        let at = if end == End::First { 0 } else { n };
        return Some(NearMatch { start: at, end: at, dist: m });
    }
    if m / (k + 1) < 3 {
        let all = find_near_matches_indexed(sub, seq, k, index);
        return if end == End::First { all.first().copied() } else { all.last().copied() };
    }
    let ngrams = ngram_windows(m, n, k);
    let anchors: Vec<Anchor> = ngrams.iter().map(|w| Anchor::new(w.ngram(sub), index)).collect();
    let mut expander = NgramExpander::new(sub, seq, k, ngrams.len(), true);
    let mut groups = Groups::default();
    // Alignments run over [-k, n]; they are shifted by k to stay unsigned: y + k.
    let mut sweep = AlignmentSweep::new(end, 0, n + k + 1, k + 1, first_block);
    // (shifted alignment, n-gram number, occurrence)
    let mut block: Vec<(usize, usize, usize)> = Vec::with_capacity(256);
    // Whether the extreme group is final once every raw match left has shifted alignment
    // `>= ys` (First) or `<= ys` (Last).
    let settled = |groups: &Groups, ys: usize| match end {
        // y - k >= span end, i.e. ys >= span end + 2k.
        End::First => groups.spans.first_key_value().is_some_and(|(_, &(e, _))| ys >= e + 2 * k),
        // y + m + k <= span start, i.e. ys + m <= span start.
        End::Last => groups.spans.last_key_value().is_some_and(|(&s, _)| ys + m <= s),
    };
    'sweep: while let Some((y0, y1)) = sweep.next_block() {
        if settled(&groups, if end == End::First { y0 } else { y1 - 1 }) {
            break;
        }
        block.clear();
        for (idx, (w, &anchor)) in ngrams.iter().zip(&anchors).enumerate() {
            // Occurrence x has shifted alignment x + k - a.
            let shift = |y: usize| (y + w.a).saturating_sub(k);
            w.for_each_in_block(sub, seq, shift(y0), shift(y1), anchor, |x| {
                block.push((x + k - w.a, idx, x));
            });
        }
        // Each n-gram's occurrences come ascending: the stable sort merges these runs.
        block.sort_by_key(|&(ys, _, _)| ys);
        for i in 0..block.len() {
            let (ys, idx, x) = block[if end == End::First { i } else { block.len() - 1 - i }];
            if settled(&groups, ys) {
                break 'sweep;
            }
            if let Some(found) = expander.raw_match(idx, ngrams[idx].a, x) {
                groups.add_one(found);
            }
        }
    }
    let best = |(_, &(_, b)): (&usize, &(usize, NearMatch))| b;
    match end {
        End::First => groups.spans.first_key_value().map(best),
        End::Last => groups.spans.last_key_value().map(best),
    }
}

/// Blocks `[y0, y1)` of alignments covering `[lo, hi)`, from the low end for [`End::First`],
/// from the high end for [`End::Last`]. They start small (the answer is often near the
/// starting end) and double, up to a size that keeps `per_alignment * size` (the most
/// occurrences one block can hold) moderate.
struct AlignmentSweep {
    end: End,
    lo: usize,
    hi: usize,
    size: usize,
    max_size: usize,
}

impl AlignmentSweep {
    fn new(end: End, lo: usize, hi: usize, per_alignment: usize, first: usize) -> Self {
        let max_size = max(64, (1 << 18) / per_alignment);
        AlignmentSweep { end, lo, hi, size: first.clamp(1, max_size), max_size }
    }

    fn next_block(&mut self) -> Option<(usize, usize)> {
        if self.lo >= self.hi {
            return None;
        }
        let size = min(self.size, self.hi - self.lo);
        self.size = min(self.size.saturating_mul(2), self.max_size);
        Some(match self.end {
            End::First => {
                self.lo += size;
                (self.lo - size, self.lo)
            }
            End::Last => {
                self.hi -= size;
                (self.hi, self.hi + size)
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Consolidation

/// Ranking inside a group: smallest distance, then greatest length, then (our tie rule)
/// smallest start, then smallest end. A total order on distinct matches.
fn rank(x: &NearMatch) -> (usize, Reverse<usize>, usize, usize) {
    (x.dist, Reverse(x.end - x.start), x.start, x.end)
}

/// Online grouping of non-empty matches.
///
/// Upstream keeps a list of groups with a running span and merges every group whose span shares
/// a position with the new match. A group's matches are linked by overlaps, so their union is
/// exactly the span, and spans of different groups never share a position. Hence the groups
/// are the connected components of the overlap graph of the (distinct) matches, whatever their
/// order, and the spans form a set of disjoint intervals, kept here in a map keyed by start.
/// As `rank` is a total order, a group only needs its best match.
#[derive(Default)]
struct Groups {
    /// span start -> (span end, best match)
    spans: BTreeMap<usize, (usize, NearMatch)>,
}

impl Groups {
    /// Adds matches that pairwise share a position: `lo..hi` is the union of their ranges and
    /// `best` the best of them by `rank`. Equivalent to adding them one by one.
    fn add(&mut self, lo: usize, hi: usize, best: NearMatch) {
        let (mut lo, mut hi, mut best) = (lo, hi, best);
        loop {
            // The last span starting before `hi`; it is the only candidate that may still
            // overlap, as spans are disjoint and sorted.
            let found = self.spans.range(..hi).next_back().map(|(&s, &(e, b))| (s, e, b));
            match found {
                Some((s, e, b)) if e > lo => {
                    self.spans.remove(&s);
                    lo = min(lo, s);
                    hi = max(hi, e);
                    if rank(&b) < rank(&best) {
                        best = b;
                    }
                }
                _ => break,
            }
        }
        self.spans.insert(lo, (hi, best));
    }

    fn add_one(&mut self, x: NearMatch) {
        self.add(x.start, x.end, x);
    }

    fn finish(self) -> Vec<NearMatch> {
        let mut out: Vec<NearMatch> = self.spans.into_values().map(|(_, b)| b).collect();
        out.sort_unstable();
        out
    }
}

/// Collects the matches emitted during one LP step. They all end at the same position, hence
/// pairwise share that last position and fall into one group.
struct StepBatch {
    lo: usize,
    best: Option<NearMatch>,
}

impl StepBatch {
    fn new() -> Self {
        StepBatch { lo: usize::MAX, best: None }
    }

    fn push(&mut self, x: NearMatch) {
        self.lo = min(self.lo, x.start);
        match self.best {
            Some(b) if rank(&b) <= rank(&x) => {}
            _ => self.best = Some(x),
        }
    }

    fn flush(&mut self, groups: &mut Groups) {
        if let Some(b) = self.best.take() {
            groups.add(self.lo, b.end, b);
        }
        self.lo = usize::MAX;
    }
}

// ---------------------------------------------------------------------------------------------
// Exact search

/// Calls `f(x)` for every occurrence of `pat` (non-empty) in `text` with `lo <= x` and
/// `x + pat.len() <= hi`, overlapping occurrences included, ascending.
fn for_each_occurrence(
    pat: &[char],
    text: &[char],
    lo: usize,
    hi: usize,
    index: Option<&CharIndex>,
    f: impl FnMut(usize),
) {
    for_each_anchored(pat, text, lo, hi, Anchor::new(pat, index), f);
}

/// The character of a pattern that [`for_each_occurrence`] scans for: its offset `r` in the
/// pattern and, with an index, its positions in the text. Depends only on the pattern and the
/// text, so it can be reused for several ranges.
#[derive(Clone, Copy)]
struct Anchor<'i> {
    r: usize,
    positions: Option<&'i [u32]>,
}

impl<'i> Anchor<'i> {
    /// With an index, the pattern's rarest character in the text (the first if tied); without,
    /// its least common one by a fixed prose-frequency guess.
    fn new(pat: &[char], index: Option<&'i CharIndex>) -> Self {
        match index {
            Some(index) => {
                let (r, positions) = (0..pat.len())
                    .map(|i| (i, index.positions(pat[i])))
                    .min_by_key(|(_, v)| v.len())
                    .unwrap_or((0, &[]));
                Anchor { r, positions: Some(positions) }
            }
            None => {
                let r = (0..pat.len()).min_by_key(|&i| commonness(pat[i])).unwrap_or(0);
                Anchor { r, positions: None }
            }
        }
    }
}

/// [`for_each_occurrence`] with the pattern's anchor computed beforehand.
fn for_each_anchored(pat: &[char], text: &[char], lo: usize, hi: usize, anchor: Anchor<'_>, mut f: impl FnMut(usize)) {
    let p = pat.len();
    let hi = min(hi, text.len());
    if p == 0 || lo >= hi || hi - lo < p {
        return;
    }
    // Fast path: anchor on one character of the pattern, scan for it, and verify each
    // candidate; this visits few positions on ordinary text. Periodic or adversarial text makes
    // verification expensive: after `budget` verified characters fall back to KMP from where
    // the scan stopped. Both report the same occurrences in ascending order.
    let mut budget = (hi - lo).saturating_mul(2) + 64;
    let r = anchor.r;
    if let Some(positions) = anchor.positions {
        // The same scan over the positions of the anchor character in this text.
        let first = positions.partition_point(|&x| (x as usize) < lo + r);
        for &x in &positions[first..] {
            let start = x as usize - r;
            if start + p > hi {
                return;
            }
            budget = budget.saturating_sub(p);
            if text[start..start + p].iter().zip(pat).all(|(a, b)| a == b) {
                f(start);
            }
            if budget == 0 {
                return kmp_from(pat, text, start + 1, hi, f);
            }
        }
        return;
    }
    let mut i = lo + r;
    while i + (p - r) <= hi {
        match text[i..hi - (p - r - 1)].iter().position(|&c| c == pat[r]) {
            None => return,
            Some(off) => i += off,
        }
        let start = i - r;
        budget = budget.saturating_sub(p);
        if text[start..start + p] == *pat {
            f(start);
        }
        if budget == 0 {
            return kmp_from(pat, text, start + 1, hi, f);
        }
        i += 1;
    }
}

/// The positions of each character of a text, ascending: a counting sort of the positions by
/// character (ASCII through a direct table, other characters by sorting), built in linear time
/// plus `O(u log u)` for the `u` non-ASCII positions.
pub struct CharIndex {
    /// Positions grouped by character: ASCII `c` owns `order[start[c]..start[c + 1]]`.
    order: Vec<u32>,
    start: [u32; 129],
    /// (character, position) of the non-ASCII characters, sorted.
    other: Vec<(char, u32)>,
    other_pos: Vec<u32>,
}

impl CharIndex {
    /// `None` when the text is too long for `u32` positions.
    pub fn new(text: &[char]) -> Option<Self> {
        if text.len() >= u32::MAX as usize {
            return None;
        }
        // Counts in slot `c + 1` (non-ASCII characters in slot 129, not part of `order`).
        let mut start = [0u32; 130];
        for &c in text {
            start[(c as usize).min(128) + 1] += 1;
        }
        let n_other = start[129] as usize;
        for c in 0..128 {
            start[c + 1] += start[c];
        }
        let mut fill = start;
        let mut order = vec![0u32; start[128] as usize];
        let mut other = Vec::with_capacity(n_other);
        for (i, &c) in text.iter().enumerate() {
            if c.is_ascii() {
                let slot = &mut fill[c as usize];
                if let Some(o) = order.get_mut(*slot as usize) {
                    *o = i as u32;
                }
                *slot += 1;
            } else {
                other.push((c, i as u32));
            }
        }
        let start: [u32; 129] = std::array::from_fn(|c| start[c]);
        other.sort_unstable();
        let other_pos = other.iter().map(|&(_, i)| i).collect();
        Some(CharIndex { order, start, other, other_pos })
    }

    /// The positions of `c` in the text, ascending.
    pub fn positions(&self, c: char) -> &[u32] {
        if c.is_ascii() {
            let c = c as usize;
            return &self.order[self.start[c] as usize..self.start[c + 1] as usize];
        }
        let a = self.other.partition_point(|&(x, _)| x < c);
        let b = self.other.partition_point(|&(x, _)| x <= c);
        &self.other_pos[a..b]
    }
}

/// How common a character is in running prose (lower is rarer); only used to pick an anchor.
fn commonness(c: char) -> u8 {
    match c {
        ' ' => 9,
        'e' | 't' | 'a' | 'o' | 'i' | 'n' => 8,
        's' | 'h' | 'r' | 'l' | 'd' => 7,
        'a'..='z' => 5,
        '.' | ',' => 4,
        _ => 2,
    }
}

/// Knuth–Morris–Pratt over `text[from..hi]`, reporting starts of occurrences ending by `hi`.
fn kmp_from(pat: &[char], text: &[char], from: usize, hi: usize, mut f: impl FnMut(usize)) {
    let p = pat.len();
    // fail[i]: length of the longest proper border of pat[..=i].
    let mut fail = vec![0usize; p];
    let mut b = 0usize;
    for i in 1..p {
        while b > 0 && pat[i] != pat[b] {
            b = fail[b - 1];
        }
        if pat[i] == pat[b] {
            b += 1;
        }
        fail[i] = b;
    }
    let mut q = 0usize;
    for (i, &c) in text.iter().enumerate().take(hi).skip(from) {
        while q > 0 && c != pat[q] {
            q = fail[q - 1];
        }
        if c == pat[q] {
            q += 1;
        }
        if q == p {
            f(i + 1 - p);
            q = fail[q - 1];
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Linear-programming algorithm

/// A partial match: started at `seq[start]`, next expected char `sub[j]`, `dist` edits so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Cand {
    j: usize,
    start: usize,
    dist: usize,
}

/// Largest `len(sub) * (k+1)` for the dense LP tables (two tables of `u32`, 8 MiB each).
const LP_TABLE_MAX: usize = 1 << 21;

/// Upstream's LP search, with candidate pruning.
///
/// Each step maps every candidate to successors and emitted matches that depend only on the
/// candidate itself, the position and the character. Let X = (s, j, d) and Y = (s', j, d')
/// with s' <= s and d' <= d, X != Y. Case by case on upstream's rules, whatever X yields, Y
/// yields the same with start s' and distance (d - d') lower: a match leaves both with the same
/// dist; on a mismatch X is dropped if d == k, otherwise Y (d' < k) makes the same skip and
/// substitution moves, and its skip-sub-chars loop runs at least as far as X's and stops at
/// the same offset; at the end d' + m - j <= d + m - j. By induction, every match emitted
/// through X's descendants, (s, e, δ), has a twin (s', e, δ') emitted through Y's with δ' <= δ,
/// which is distinct from it. Such a dominated match changes nothing after consolidation: its
/// range lies inside the twin's, so it overlaps nothing the twin does not (the groups are the
/// same), and it ranks strictly below the twin (smaller dist or, at equal dist, greater length),
/// so it is never a group's best nor part of a best tie. Identical duplicate candidates emit
/// identical matches, which collapse in upstream's sets.
///
/// So any candidate set that is a subset of upstream's and contains, for each upstream
/// candidate, one dominating or equal to it, yields the same output (dominance is transitive,
/// so this invariant carries over from step to step). Two such sets are used:
/// * dense (`lp_dense`): for every `(j, d)`, only the smallest start; O(len(sub) · (k+1)) per
///   position, with contiguous row operations;
/// * sparse (`lp_sparse`, when the dense tables would be too large): the exact Pareto front
///   per `j`, at most k+1 candidates, kept by sorting.
fn lp_search(sub: &[char], seq: &[char], k: usize, groups: &mut Groups) {
    lp_search_with(sub, seq, k, groups, LP_TABLE_MAX);
}

fn lp_search_with(sub: &[char], seq: &[char], k: usize, groups: &mut Groups, table_max: usize) {
    let fits = match sub.len().checked_mul(k + 1) {
        Some(size) => size <= table_max,
        None => false,
    };
    // Starts are stored as u32 below u32::MAX (the "none" marker).
    if fits && seq.len() < u32::MAX as usize {
        lp_dense(sub, seq, k, groups);
    } else {
        lp_sparse(sub, seq, k, groups);
    }
}

/// Smallest index of each char among the first k+1 chars of sub.
fn first_indices(sub: &[char], k: usize) -> HashMap<char, usize> {
    let mut first = HashMap::new();
    for (idx, &c) in sub.iter().enumerate().take(k.saturating_add(1)) {
        first.entry(c).or_insert(idx);
    }
    first
}

/// Sorted positions of each char in sub.
fn char_positions(sub: &[char]) -> HashMap<char, Vec<usize>> {
    let mut positions: HashMap<char, Vec<usize>> = HashMap::new();
    for (idx, &c) in sub.iter().enumerate() {
        positions.entry(c).or_default().push(idx);
    }
    positions
}

/// The first index p > j with sub[p] == c (`pos_c`: the sorted positions of c), else m.
fn next_pos(pos_c: &[usize], j: usize, m: usize) -> usize {
    match pos_c.get(pos_c.partition_point(|&x| x <= j)) {
        Some(&p) => p,
        None => m,
    }
}

/// `dst[i] = min(dst[i], src[i])`.
fn min_into(dst: &mut [u32], src: &[u32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = min(*d, s);
    }
}

const NO_START: u32 = u32::MAX;

/// Dense LP search: `table[j * (k+1) + d]` = smallest start of a candidate `(start, j, d)`.
fn lp_dense(sub: &[char], seq: &[char], k: usize, groups: &mut Groups) {
    let m = sub.len();
    let n = seq.len();
    let w = k + 1;
    let first = first_indices(sub, k);
    let positions = char_positions(sub);
    let mut cur = vec![NO_START; m * w];
    let mut nxt = vec![NO_START; m * w];
    let mut cur_rows: Vec<usize> = Vec::new();
    let mut nxt_rows: Vec<usize> = Vec::new();
    let mut nxt_marked = vec![false; m];
    let mut batch = StepBatch::new();
    let mark = |rows: &mut Vec<usize>, marked: &mut Vec<bool>, j: usize| {
        if !marked[j] {
            marked[j] = true;
            rows.push(j);
        }
    };
    for (i, &c) in seq.iter().enumerate() {
        let pos_c: &[usize] = positions.get(&c).map_or(&[], |v| v.as_slice());
        if let Some(&j0) = first.get(&c) {
            if j0 + 1 == m {
                batch.push(NearMatch { start: i, end: i + 1, dist: j0 });
            } else {
                let slot = &mut nxt[(j0 + 1) * w + j0];
                *slot = min(*slot, i as u32);
                mark(&mut nxt_rows, &mut nxt_marked, j0 + 1);
            }
        }
        for &j in &cur_rows {
            let row = &cur[j * w..(j + 1) * w];
            if sub[j] == c {
                if j + 1 == m {
                    for (d, &s) in row.iter().enumerate() {
                        if s != NO_START {
                            batch.push(NearMatch { start: s as usize, end: i + 1, dist: d });
                        }
                    }
                } else {
                    min_into(&mut nxt[(j + 1) * w..(j + 2) * w], row);
                    mark(&mut nxt_rows, &mut nxt_marked, j + 1);
                }
                continue;
            }
            // Mismatch: only candidates with d < k survive.
            // Skip a seq char: (j, d) -> (j, d+1).
            min_into(&mut nxt[j * w + 1..(j + 1) * w], &row[..k]);
            mark(&mut nxt_rows, &mut nxt_marked, j);
            // Substitution: (j, d) -> (j+1, d+1).
            if i + 1 < n && j + 1 < m {
                min_into(&mut nxt[(j + 1) * w + 1..(j + 2) * w], &row[..k]);
                mark(&mut nxt_rows, &mut nxt_marked, j + 1);
            }
            // Skip t = p - j sub chars up to the next c (or the end): d + t <= k.
            let p = next_pos(pos_c, j, m);
            let t = p - j;
            if t <= k {
                if p + 1 >= m {
                    for (d, &s) in row[..w - t].iter().enumerate() {
                        if s != NO_START {
                            batch.push(NearMatch { start: s as usize, end: i + 1, dist: d + t });
                        }
                    }
                } else {
                    min_into(&mut nxt[(p + 1) * w + t..(p + 2) * w], &row[..w - t]);
                    mark(&mut nxt_rows, &mut nxt_marked, p + 1);
                }
            }
        }
        batch.flush(groups);
        for &j in &cur_rows {
            cur[j * w..(j + 1) * w].fill(NO_START);
        }
        for &j in &nxt_rows {
            nxt_marked[j] = false;
        }
        std::mem::swap(&mut cur, &mut nxt);
        std::mem::swap(&mut cur_rows, &mut nxt_rows);
        nxt_rows.clear();
    }
    for &j in &cur_rows {
        for (d, &s) in cur[j * w..(j + 1) * w].iter().enumerate() {
            let dist = d + (m - j);
            if s != NO_START && dist <= k {
                batch.push(NearMatch { start: s as usize, end: n, dist });
            }
        }
    }
    batch.flush(groups);
}

/// Sparse LP search: a list of candidates reduced to the Pareto front after every step.
fn lp_sparse(sub: &[char], seq: &[char], k: usize, groups: &mut Groups) {
    let m = sub.len();
    let n = seq.len();
    let first = first_indices(sub, k);
    let positions = char_positions(sub);
    let mut cands: Vec<Cand> = Vec::new();
    let mut next: Vec<Cand> = Vec::new();
    let mut batch = StepBatch::new();
    for (i, &c) in seq.iter().enumerate() {
        let pos_c: &[usize] = positions.get(&c).map_or(&[], |v| v.as_slice());
        next.clear();
        if let Some(&j0) = first.get(&c) {
            if j0 + 1 == m {
                batch.push(NearMatch { start: i, end: i + 1, dist: j0 });
            } else {
                next.push(Cand { j: j0 + 1, start: i, dist: j0 });
            }
        }
        for &Cand { j, start, dist } in &cands {
            if sub[j] == c {
                if j + 1 == m {
                    batch.push(NearMatch { start, end: i + 1, dist });
                } else {
                    next.push(Cand { j: j + 1, start, dist });
                }
                continue;
            }
            if dist >= k {
                continue;
            }
            next.push(Cand { j, start, dist: dist + 1 });
            if i + 1 < n && j + 1 < m {
                next.push(Cand { j: j + 1, start, dist: dist + 1 });
            }
            let p = next_pos(pos_c, j, m);
            if p - j <= k - dist {
                let d = dist + (p - j);
                if p + 1 >= m {
                    batch.push(NearMatch { start, end: i + 1, dist: d });
                } else {
                    next.push(Cand { j: p + 1, start, dist: d });
                }
            }
        }
        batch.flush(groups);
        prune_sorted(&mut next);
        std::mem::swap(&mut cands, &mut next);
    }
    for &Cand { j, start, dist } in &cands {
        let d = dist + (m - j);
        if d <= k {
            batch.push(NearMatch { start, end: n, dist: d });
        }
    }
    batch.flush(groups);
}

/// Keeps only the candidates not dominated by another: sorted by (j, start, dist), a
/// candidate survives iff its dist is below that of every earlier one with the same j.
fn prune_sorted(cands: &mut Vec<Cand>) {
    cands.sort_unstable();
    let mut kept = 0usize;
    let mut cur_j = usize::MAX;
    let mut min_dist = usize::MAX;
    for idx in 0..cands.len() {
        let x = cands[idx];
        if x.j != cur_j {
            cur_j = x.j;
            min_dist = usize::MAX;
        }
        if x.dist < min_dist {
            min_dist = x.dist;
            cands[kept] = x;
            kept += 1;
        }
    }
    cands.truncate(kept);
}

// ---------------------------------------------------------------------------------------------
// N-gram algorithm

fn ngram_search_with(
    sub: &[char],
    seq: &[char],
    k: usize,
    groups: &mut Groups,
    use_memo: bool,
    index: Option<&CharIndex>,
) {
    let ngrams = ngram_windows(sub.len(), seq.len(), k);
    let mut expander = NgramExpander::new(sub, seq, k, ngrams.len(), use_memo);
    for (idx, w) in ngrams.iter().enumerate() {
        for_each_occurrence(w.ngram(sub), seq, w.lo, w.hi, index, |x| {
            if let Some(found) = expander.raw_match(idx, w.a, x) {
                groups.add_one(found);
            }
        });
    }
}

/// The n-gram `sub[a..a+g]` and its search window `seq[lo..hi]`.
#[derive(Clone, Copy)]
struct NgramWindow {
    a: usize,
    g: usize,
    lo: usize,
    hi: usize,
}

/// Upstream's n-grams (length `len(sub) // (k+1)`, at offsets 0, g, 2g, ... while they fit)
/// and their windows `[max(0, a-k), min(n, n-m+b+k))`, clamped as upstream's search_exact does.
fn ngram_windows(m: usize, n: usize, k: usize) -> Vec<NgramWindow> {
    let g = m / (k + 1);
    if g == 0 {
        return Vec::new();
    }
    (0..=m - g)
        .step_by(g)
        .map(|a| {
            let lo = min(a.saturating_sub(k), n);
            let hi = min(n, (n + a + g).saturating_add(k).saturating_sub(m));
            NgramWindow { a, g, lo, hi: max(hi, lo) }
        })
        .collect()
}

impl NgramWindow {
    /// Calls `f(x)` for the occurrences `x` of the n-gram in its window with `x0 <= x < x1`,
    /// ascending.
    fn for_each_in_block(
        &self,
        sub: &[char],
        seq: &[char],
        x0: usize,
        x1: usize,
        anchor: Anchor<'_>,
        f: impl FnMut(usize),
    ) {
        let lo = max(self.lo, x0);
        let hi = min(self.hi, x1.saturating_add(self.g - 1));
        for_each_anchored(self.ngram(sub), seq, lo, hi, anchor, f);
    }

    fn ngram<'s>(&self, sub: &'s [char]) -> &'s [char] {
        &sub[self.a..self.a + self.g]
    }
}

/// Turns an exact occurrence of an n-gram into upstream's raw match (or none): expansion to
/// the right, then to the left with the distance left over. Keeps one pair of memos per n-gram
/// (a memo hit is exact whatever the order in which occurrences come) and the scratch buffers.
struct NgramExpander<'s> {
    sub: &'s [char],
    seq: &'s [char],
    k: usize,
    g: usize,
    /// `sub` reversed: the left pattern of the n-gram at `a` is `rev_sub[m-a..]`.
    rev_sub: Vec<char>,
    /// Per n-gram: (right memo, left memo).
    memos: Vec<(Memo, Memo)>,
    use_memo: bool,
    scores: Vec<usize>,
    left_text: Vec<char>,
}

impl<'s> NgramExpander<'s> {
    fn new(sub: &'s [char], seq: &'s [char], k: usize, ngrams: usize, use_memo: bool) -> Self {
        NgramExpander {
            sub,
            seq,
            k,
            g: sub.len() / (k + 1),
            rev_sub: sub.iter().rev().copied().collect(),
            memos: (0..ngrams).map(|_| (Memo::default(), Memo::default())).collect(),
            use_memo,
            scores: Vec::with_capacity(sub.len()),
            left_text: Vec::with_capacity(sub.len() + k),
        }
    }

    /// The raw match grown from the occurrence at `x` of the n-gram number `idx`, at offset
    /// `a` in `sub`. It lies within `[x-a-k, x-a+m+k)` (see the window arithmetic below).
    fn raw_match(&mut self, idx: usize, a: usize, x: usize) -> Option<NearMatch> {
        let (seq, k, g) = (self.seq, self.k, self.g);
        let (m, n) = (self.sub.len(), seq.len());
        let (right_memo, left_memo) = &mut self.memos[idx];
        // seq[x+g : x-a+m+k]; x >= a-k, so the end is non-negative, and >= x+g.
        let r_lo = x + g;
        let r_hi = max(r_lo, min(n, (x + m).saturating_add(k) - a));
        let hit = if self.use_memo { right_memo.get(seq, r_lo, r_hi, k, Dir::Forward) } else { None };
        let right = match hit {
            Some(r) => r,
            None => {
                let e = expand(&self.sub[a + g..], &seq[r_lo..r_hi], k, &mut self.scores);
                right_memo.put(r_lo, r_hi, k, e);
                e.result
            }
        };
        let (dr, rsize) = right?;
        // seq[max(0, x-a-(k-dr)) : x], reversed.
        let kl = k - dr;
        let l_lo = x.saturating_sub(a.saturating_add(kl));
        let hit = if self.use_memo { left_memo.get(seq, l_lo, x, kl, Dir::Backward) } else { None };
        let left = match hit {
            Some(r) => r,
            None => {
                self.left_text.clear();
                self.left_text.extend(seq[l_lo..x].iter().rev());
                let e = expand(&self.rev_sub[m - a..], &self.left_text, kl, &mut self.scores);
                left_memo.put(l_lo, x, kl, e);
                e.result
            }
        };
        let (dl, lsize) = left?;
        Some(NearMatch { start: x - lsize, end: x + g + rsize, dist: dl + dr })
    }
}

/// Outcome of an expansion: the result, and how much of the text it read. `read` chars were
/// read; if `stopped`, the loop broke early, so any text with the same first `read` chars gives
/// the same result; otherwise the whole text was read (`read` = its length).
#[derive(Clone, Copy)]
struct Expansion {
    result: Option<(usize, usize)>,
    read: usize,
    stopped: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// The text is `seq[lo..hi]`.
    Forward,
    /// The text is `seq[lo..hi]` reversed.
    Backward,
}

/// Remembers a few recent expansions of one pattern so that repetitive input (the same text
/// after many n-gram occurrences) is not expanded again. A hit requires the chars the earlier
/// expansion read to be equal (and, if it read the whole text, equal lengths), so the result
/// is exactly what a new expansion would give.
#[derive(Default)]
struct Memo {
    /// (lo, hi, kk, outcome), filled in turn, then replaced oldest first.
    slots: [Option<(usize, usize, usize, Expansion)>; MEMO_SLOTS],
    next: usize,
}

const MEMO_SLOTS: usize = 4;

impl Memo {
    fn get(&self, seq: &[char], lo: usize, hi: usize, kk: usize, dir: Dir) -> Option<Option<(usize, usize)>> {
        let len = hi - lo;
        for &(elo, ehi, ekk, e) in self.slots.iter().flatten() {
            let fits = if e.stopped { len >= e.read } else { len == e.read };
            if ekk != kk || !fits {
                continue;
            }
            let same = match dir {
                Dir::Forward => seq[lo..lo + e.read] == seq[elo..elo + e.read],
                Dir::Backward => seq[hi - e.read..hi] == seq[ehi - e.read..ehi],
            };
            if same {
                return Some(e.result);
            }
        }
        None
    }

    fn put(&mut self, lo: usize, hi: usize, kk: usize, e: Expansion) {
        self.slots[self.next] = Some((lo, hi, kk, e));
        self.next = (self.next + 1) % MEMO_SLOTS;
    }
}

/// Best-scoring prefix of `t` for `p`, anchored at `t[0]`: `Some((dist, prefix_len))` if the
/// best distance is at most `kk`.
fn expand(p: &[char], t: &[char], kk: usize, scores: &mut Vec<usize>) -> Expansion {
    if p.len() > max(kk.saturating_mul(2), 10) {
        expand_long(p, t, kk, scores)
    } else {
        expand_short(p, t, kk, scores)
    }
}

fn expand_short(p: &[char], t: &[char], kk: usize, scores: &mut Vec<usize>) -> Expansion {
    let plen = p.len();
    if plen == 0 {
        return Expansion { result: Some((0, 0)), read: 0, stopped: true };
    }
    scores.clear();
    scores.extend(1..=plen);
    let mut best = plen;
    let mut best_len = 0usize;
    let mut read = 0usize;
    let mut stopped = false;
    for (q, &c) in t.iter().enumerate() {
        read = q + 1;
        let mut a = q;
        let mut cc = q + 1;
        let mut row_min = usize::MAX;
        for (s, &pc) in scores.iter_mut().zip(p) {
            let b = *s;
            cc = min(min(a + usize::from(c != pc), b + 1), cc + 1);
            *s = cc;
            a = b;
            row_min = min(row_min, cc);
        }
        if cc <= best {
            best = cc;
            best_len = q + 1;
        } else if row_min >= best {
            stopped = true;
            break;
        }
    }
    Expansion { result: (best <= kk).then_some((best, best_len)), read, stopped }
}

/// Banded variant. As upstream, cells outside the band keep stale scores, and each row starts
/// from `a = q`, `c = q + 1` even when the band does not start at 0.
fn expand_long(p: &[char], t: &[char], kk: usize, scores: &mut Vec<usize>) -> Expansion {
    let plen = p.len();
    if plen == 0 {
        return Expansion { result: Some((0, 0)), read: 0, stopped: true };
    }
    // Nothing read: the best is still the empty prefix, at distance plen.
    let none_read = (plen <= kk).then_some((plen, 0));
    let Some(&c0) = t.first() else {
        return Expansion { result: none_read, read: 0, stopped: false };
    };
    let mut max_good = kk;
    // The first row, whose band is the whole pattern, in closed form. Before it scores[j] is
    // j + 1; it computes min(a + [c0 != p[j]], b + 1, cc + 1) with a = j (0 at j = 0),
    // b = j + 1 and cc the previous cell (1 before column 0), which by induction on j is j if
    // c0 occurs in p[..=j], else j + 1: with `f` the first column holding c0 (plen if none),
    // j + 1 below f and j from f on. So the columns scoring at most max_good (good) are those
    // j < f with j + 1 <= max_good, each reaching j + 1 + (max_good - (j + 1)) = max_good, and
    // those f <= j <= max_good, each reaching max_good + 1; the row's last score is
    // plen - 1 + [f == plen]. As the loop below would, the row starts with column 0 good (and
    // reach 0) if 1 <= max_good.
    let f = p.iter().position(|&pc| pc == c0).unwrap_or(plen);
    scores.clear();
    scores.extend((0..plen).map(|j| if j < f { j + 1 } else { j }));
    if max_good == 0 && f > 0 {
        // No good column: upstream's loop breaks after reading one char.
        return Expansion { result: none_read, read: 1, stopped: true };
    }
    let mut band_start = 0usize;
    // The columns computed in the next row: `band_start..band_end`. Upstream keeps the end as
    // "range end" (one below the exclusive end).
    let mut band_end = if f <= max_good {
        max_good + 2
    } else {
        // Here 1 <= max_good < f, so column 0 is good.
        max_good + 1
    };
    band_end = min(plen, band_end);
    let first_last = plen - 1 + usize::from(f == plen);
    // The band of the first row is the whole pattern; best starts at plen.
    let (mut best, mut best_len) = (plen, 0usize);
    if first_last <= best {
        best = first_last;
        best_len = 1;
        if best < max_good {
            max_good = best;
        }
    }
    let mut read = 1usize;
    let mut stopped = false;
    for (q, &c) in t.iter().enumerate().skip(1) {
        read = q + 1;
        let mut a = q;
        let mut cc = q + 1;
        // The first column of this row scoring at most max_good (usize::MAX if none), and the
        // greatest `j + 1 + (max_good - score)` over such columns (upstream's new range end).
        let (mut first_good, mut last) = if cc <= max_good { (0, 0) } else { (usize::MAX, 0) };
        let (lo, hi) = (band_start, max(band_start, band_end));
        let row = scores[lo..hi].iter_mut().zip(&p[lo..hi]);
        for (j, (s, &pc)) in (lo..).zip(row) {
            let b = *s;
            cc = min(a + usize::from(c != pc), min(b, cc) + 1);
            *s = cc;
            a = b;
            if cc <= max_good {
                first_good = min(first_good, j);
                last = max(last, j + 1 + (max_good - cc));
            }
        }
        if first_good == usize::MAX {
            stopped = true;
            break;
        }
        let full_row = band_end == plen;
        band_start = first_good;
        band_end = min(plen, last + 1);
        if full_row && cc <= best {
            best = cc;
            best_len = q + 1;
            if best < max_good {
                max_good = best;
            }
        }
    }
    Expansion { result: (best <= kk).then_some((best, best_len)), read, stopped }
}

#[cfg(test)]
mod tests {
    #[test]
    fn exact_occurrences_match_a_naive_scan_including_the_kmp_fallback() {
        let mut rng = crate::test_rng::XorShift(0x9E37_79B9_7F4A_7C15u64);
        let mut next = |m: u64| rng.below(m as usize);
        for round in 0..3000 {
            let alpha: Vec<char> = if round % 3 == 0 { vec!['a'] } else { "ab e".chars().collect() };
            let n = next(300) + 1;
            let text: Vec<char> = (0..n).map(|_| alpha[next(alpha.len() as u64)]).collect();
            let p = next(8) + 1;
            let pat: Vec<char> = (0..p).map(|_| alpha[next(alpha.len() as u64)]).collect();
            let (lo, hi) = (next(n as u64 + 1), next(n as u64 + 1));
            let want: Vec<usize> = (lo..n).filter(|&x| x + p <= hi.min(n) && text[x..x + p] == pat[..]).collect();
            let mut got = Vec::new();
            for_each_occurrence(&pat, &text, lo, hi, None, |x| got.push(x));
            assert_eq!(got, want, "{text:?} {pat:?} {lo} {hi}");
            let index = CharIndex::new(&text).unwrap();
            let mut got = Vec::new();
            for_each_occurrence(&pat, &text, lo, hi, Some(&index), |x| got.push(x));
            assert_eq!(got, want, "indexed: {text:?} {pat:?} {lo} {hi}");
        }
    }

    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    fn fnm(sub: &str, seq: &str, k: usize) -> Vec<(usize, usize, usize)> {
        find_near_matches(&chars(sub), &chars(seq), k).into_iter().map(|x| (x.start, x.end, x.dist)).collect()
    }

    /// Small deterministic PRNG (xorshift64*).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: usize) -> usize {
            if n == 0 {
                0
            } else {
                (self.next() % n as u64) as usize
            }
        }

        fn string(&mut self, alphabet: &[char], len: usize) -> Vec<char> {
            (0..len).map(|_| alphabet[self.below(alphabet.len())]).collect()
        }
    }

    /// Literal port of upstream's LP search (no pruning). None if the candidate list grows
    /// past `cap`.
    fn lp_reference(sub: &[char], seq: &[char], k: usize, cap: usize) -> Option<Vec<NearMatch>> {
        let m = sub.len();
        let n = seq.len();
        let mut out = Vec::new();
        let mut first = HashMap::new();
        for (idx, &c) in sub.iter().enumerate().take(k + 1).collect::<Vec<_>>().into_iter().rev() {
            first.insert(c, idx);
        }
        let mut cands: Vec<(usize, usize, usize)> = Vec::new();
        for (i, &c) in seq.iter().enumerate() {
            let mut new = Vec::new();
            if let Some(&j0) = first.get(&c) {
                if j0 + 1 == m {
                    out.push(NearMatch { start: i, end: i + 1, dist: j0 });
                } else {
                    new.push((i, j0 + 1, j0));
                }
            }
            for &(s, j, d) in &cands {
                if sub[j] == c {
                    if j + 1 == m {
                        out.push(NearMatch { start: s, end: i + 1, dist: d });
                    } else {
                        new.push((s, j + 1, d));
                    }
                } else {
                    if d == k {
                        continue;
                    }
                    new.push((s, j, d + 1));
                    if i + 1 < n && j + 1 < m {
                        new.push((s, j + 1, d + 1));
                    }
                    for t in 1..=(k - d) {
                        if j + t == m {
                            out.push(NearMatch { start: s, end: i + 1, dist: d + t });
                            break;
                        } else if sub[j + t] == c {
                            if j + t + 1 == m {
                                out.push(NearMatch { start: s, end: i + 1, dist: d + t });
                            } else {
                                new.push((s, j + t + 1, d + t));
                            }
                            break;
                        }
                    }
                }
            }
            if new.len() > cap {
                return None;
            }
            cands = new;
        }
        for &(s, j, d) in &cands {
            if d + m - j <= k {
                out.push(NearMatch { start: s, end: n, dist: d + m - j });
            }
        }
        Some(out)
    }

    /// Literal port of upstream's group_matches + best-of-group, with our tie rule.
    fn consolidate_reference(matches: &[NearMatch]) -> Vec<NearMatch> {
        let mut groups: Vec<(usize, usize, Vec<NearMatch>)> = Vec::new();
        for &x in matches {
            let overl: Vec<usize> =
                (0..groups.len()).filter(|&g| !(x.end <= groups[g].0 || x.start >= groups[g].1)).collect();
            if overl.is_empty() {
                groups.push((x.start, x.end, vec![x]));
            } else if overl.len() == 1 {
                let g = &mut groups[overl[0]];
                g.0 = g.0.min(x.start);
                g.1 = g.1.max(x.end);
                g.2.push(x);
            } else {
                let mut ng = (x.start, x.end, vec![x]);
                for &g in &overl {
                    ng.0 = ng.0.min(groups[g].0);
                    ng.1 = ng.1.max(groups[g].1);
                    ng.2.extend(groups[g].2.iter().copied());
                }
                let mut idx = 0;
                groups.retain(|_| {
                    idx += 1;
                    !overl.contains(&(idx - 1))
                });
                groups.push(ng);
            }
        }
        let mut out: Vec<NearMatch> =
            groups.iter().filter_map(|g| g.2.iter().min_by_key(|x| rank(x)).copied()).collect();
        out.sort();
        out
    }

    #[test]
    fn exact_overlapping() {
        assert_eq!(fnm("aa", "aaaa", 0), vec![(0, 2, 0), (1, 3, 0), (2, 4, 0)]);
        assert_eq!(fnm("aba", "ababa", 0), vec![(0, 3, 0), (2, 5, 0)]);
        assert_eq!(fnm("x", "abc", 0), vec![]);
        assert_eq!(fnm("é😀", "aé😀é😀", 0), vec![(1, 3, 0), (3, 5, 0)]);
    }

    #[test]
    fn spec_tie_example() {
        // Upstream answers (0, 5, 1) or (3, 8, 1) depending on PYTHONHASHSEED; both have dist 1
        // and length 5 in one group. Our rule: the smallest start.
        assert_eq!(fnm("abab", "a babaabb", 2), vec![(0, 5, 1)]);
    }

    #[test]
    fn lp_path() {
        // len(sub) // (k+1) < 3.
        assert_eq!(fnm("PATTERN", "---PATERN---", 2), vec![(3, 9, 1)]);
        assert_eq!(fnm("abc", "xxabcxx", 1), vec![(2, 5, 0)]);
        assert_eq!(fnm("abc", "xxacxx", 1), vec![(2, 4, 1)]);
        assert_eq!(fnm("abcd", "zzzz", 1), vec![]);
    }

    #[test]
    fn ngram_path() {
        // 7 // 2 = 3: n-gram algorithm.
        assert_eq!(fnm("PATTERN", "---PATERN---", 1), vec![(3, 9, 1)]);
        assert_eq!(fnm("PATTERN", "PATTERN--PATTXRN", 1), vec![(0, 7, 0), (9, 16, 1)]);
        assert_eq!(fnm("abcdefgh", "xxxxabcdxfghxxx", 1), vec![(4, 12, 1)]);
    }

    #[test]
    fn expand_long_path() {
        // len 30, k = 2: n-grams of 10; expanding right from the first n-gram uses a 20-char
        // pattern > max(2*2, 10), i.e. the banded expand_long.
        let sub = "the quick brown fox jumps over";
        let seq = "xx the quick brwn fox jumps ovr the lazy dog";
        assert_eq!(fnm(sub, seq, 2), vec![(3, 31, 2)]);
        assert_eq!(
            expand_long(&chars("abcdefghijkl"), &chars("abcdefghijkl"), 1, &mut Vec::new()).result,
            Some((0, 12))
        );
        assert_eq!(
            expand_long(&chars("abcdefghijkl"), &chars("abcdeXfghijkl"), 1, &mut Vec::new()).result,
            Some((1, 13))
        );
        assert_eq!(expand_long(&chars("abcdefghijkl"), &chars("zzzz"), 1, &mut Vec::new()).result, None);
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(fnm("", "abc", 0), vec![]);
        assert_eq!(fnm("", "abc", 3), vec![]);
        assert_eq!(fnm("", "", 0), vec![]);
        assert_eq!(fnm("abc", "", 0), vec![]);
        assert_eq!(fnm("abc", "", 1), vec![]);
        assert_eq!(fnm("abcdefghi", "", 2), vec![]);
        assert_eq!(fnm("abcdef", "ab", 1), vec![]);
        assert_eq!(fnm("abcdef", "ab", 4), vec![(0, 2, 4)]);
        // k >= len(sub): every empty match, as upstream.
        assert_eq!(fnm("ab", "xy", 2), vec![(0, 0, 2), (1, 1, 2), (2, 2, 2)]);
        assert_eq!(fnm("ab", "", 7), vec![(0, 0, 2)]);
        assert_eq!(fnm("ab", "ab", usize::MAX).len(), 3);
    }

    /// The pruned LP search and the Groups consolidation against literal ports of upstream,
    /// including large k where the unpruned candidate list grows fast.
    #[test]
    fn lp_pruning_matches_literal_port() {
        let alphabets: Vec<Vec<char>> =
            ["ab", "abc", "a", " ab", "abcdefg"].iter().map(|s| s.chars().collect()).collect();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut compared = 0;
        for _ in 0..3000 {
            let alpha = &alphabets[rng.below(alphabets.len())];
            let m = 1 + rng.below(40);
            let sub = rng.string(alpha, m);
            // LP cases only: m // (k+1) < 3.
            let kmin = m / 3;
            let k = max(1, kmin + rng.below(m - kmin));
            if k >= m || m / (k + 1) >= 3 {
                continue;
            }
            let big = rng.below(4) == 0;
            let n = rng.below(if big { 400 } else { 60 });
            let seq = rng.string(alpha, n);
            let Some(raw) = lp_reference(&sub, &seq, k, 5_000) else {
                continue;
            };
            let expected = consolidate_reference(&raw);
            assert_eq!(find_near_matches(&sub, &seq, k), expected, "{sub:?} {seq:?} {k}");
            let mut sparse = Groups::default();
            lp_search_with(&sub, &seq, k, &mut sparse, 0);
            assert_eq!(sparse.finish(), expected, "sparse: {sub:?} {seq:?} {k}");
            compared += 1;
        }
        assert!(compared > 1000, "{compared}");
    }

    /// The n-gram search with and without the expansion memo, on repetitive inputs.
    #[test]
    fn char_index_is_transparent() {
        let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
        for round in 0..4000 {
            let alphabet: Vec<char> =
                if round % 2 == 0 { "ab é".chars().collect() } else { "abcdeéü€ ".chars().collect() };
            let (n, m) = (rng.below(120), rng.below(20) + 1);
            let seq = rng.string(&alphabet, n);
            let sub = rng.string(&alphabet, m);
            let k = rng.below(6);
            let index = CharIndex::new(&seq).unwrap();
            for (i, &c) in seq.iter().enumerate() {
                assert!(index.positions(c).contains(&(i as u32)));
            }
            assert_eq!(
                find_near_matches_indexed(&sub, &seq, k, Some(&index)),
                find_near_matches(&sub, &seq, k),
                "{sub:?} {seq:?} {k}"
            );
        }
    }

    #[test]
    fn ngram_memo_is_transparent() {
        let alphabets: Vec<Vec<char>> = ["a", "ab", "abc", ". a"].iter().map(|s| s.chars().collect()).collect();
        let mut rng = Rng(0x1234_5678_9ABC_DEF1);
        for _ in 0..800 {
            let alpha = &alphabets[rng.below(alphabets.len())];
            let m = 3 + rng.below(60);
            let k = 1 + rng.below(max(1, m / 3 - 1));
            if m / (k + 1) < 3 {
                continue;
            }
            // A short random unit repeated, with a few random changes, around a copy of sub.
            let unit_len = 1 + rng.below(5);
            let unit = rng.string(alpha, unit_len);
            let sub: Vec<char> =
                if rng.below(2) == 0 { unit.iter().cycle().take(m).copied().collect() } else { rng.string(alpha, m) };
            let n = rng.below(200);
            let mut seq: Vec<char> = unit.iter().cycle().take(n).copied().collect();
            for _ in 0..rng.below(4) {
                if !seq.is_empty() {
                    let at = rng.below(seq.len());
                    seq[at] = alpha[rng.below(alpha.len())];
                }
            }
            if rng.below(2) == 0 {
                let at = rng.below(seq.len() + 1);
                seq.splice(at..at, sub.iter().copied());
            }
            let mut plain = Groups::default();
            ngram_search_with(&sub, &seq, k, &mut plain, false, None);
            assert_eq!(find_near_matches(&sub, &seq, k), plain.finish(), "{sub:?} {seq:?} {k}");
        }
    }

    /// A test input for `extreme_match`: random, periodic, prose-like, with copies of `sub`.
    fn extreme_case(rng: &mut Rng) -> (Vec<char>, Vec<char>, usize) {
        const WORDS: [&str; 12] =
            ["the", "of", "model", "page", "reading", "order", "naïve", "résumé", "a", "table", "**bold**", "1."];
        let alphabets: Vec<Vec<char>> =
            ["a", "ab", "ab e", "abc", "abcdeéü€ ", ". a"].iter().map(|s| s.chars().collect()).collect();
        let alpha = &alphabets[rng.below(alphabets.len())];
        let big = rng.below(8) == 0;
        let n = rng.below(if big { 1500 } else { 300 });
        let mut seq: Vec<char> = match rng.below(3) {
            0 => rng.string(alpha, n),
            1 => {
                let unit_len = 1 + rng.below(6);
                let unit = rng.string(alpha, unit_len);
                unit.iter().cycle().take(n).copied().collect()
            }
            _ => {
                let mut text = String::new();
                while text.chars().count() < n {
                    text.push_str(WORDS[rng.below(WORDS.len())]);
                    text.push(if rng.below(9) == 0 { '\n' } else { ' ' });
                }
                text.chars().collect()
            }
        };
        let m = 1 + rng.below(60);
        let mut sub: Vec<char> = match rng.below(3) {
            0 if seq.len() > m => {
                let at = rng.below(seq.len() - m);
                seq[at..at + m].to_vec()
            }
            1 => {
                let unit_len = 1 + rng.below(4);
                let unit = rng.string(alpha, unit_len);
                unit.iter().cycle().take(m).copied().collect()
            }
            _ => rng.string(alpha, m),
        };
        // A few edits to sub, then a few (edited) copies of it in seq.
        for _ in 0..rng.below(3) {
            let at = rng.below(sub.len());
            sub[at] = alpha[rng.below(alpha.len())];
        }
        for _ in 0..rng.below(4) {
            let mut copy = sub.clone();
            for _ in 0..rng.below(3) {
                match rng.below(3) {
                    0 if copy.len() > 1 => {
                        copy.remove(rng.below(copy.len()));
                    }
                    1 => copy.insert(rng.below(copy.len() + 1), alpha[rng.below(alpha.len())]),
                    _ => {
                        let at = rng.below(copy.len());
                        copy[at] = alpha[rng.below(alpha.len())];
                    }
                }
            }
            let at = rng.below(seq.len() + 1);
            seq.splice(at..at, copy);
        }
        // k over 0..=m+1: 0 a fifth of the time, else half of the time in the n-gram range
        // (m // (k+1) >= 3).
        let k = match rng.below(10) {
            0 | 1 => 0,
            2..=5 if m >= 6 => 1 + rng.below(m / 3 - 1),
            _ => rng.below(m + 2),
        };
        (sub, seq, k)
    }

    /// `extreme_match` against the ends of the full search, with and without the index and
    /// with tiny alignment blocks (many block boundaries).
    #[test]
    fn extreme_match_is_the_first_or_last_full_match() {
        let mut rng = Rng(0xC0FF_EE12_3456_789B);
        let mut by_path = [0usize; 4]; // exact, k >= m, n-gram, LP
        let mut early = 0;
        for _ in 0..12_000 {
            let (sub, seq, k) = extreme_case(&mut rng);
            let m = sub.len();
            by_path[if k == 0 {
                0
            } else if k >= m {
                1
            } else if m / (k + 1) >= 3 {
                2
            } else {
                3
            }] += 1;
            let all = find_near_matches(&sub, &seq, k);
            let index = CharIndex::new(&seq).unwrap();
            let first_block = 1 + rng.below(8);
            for (end, want) in [(End::First, all.first()), (End::Last, all.last())] {
                let want = want.copied();
                let ctx = || format!("{end:?} {sub:?} {seq:?} {k}");
                assert_eq!(extreme_match(&sub, &seq, k, end, None), want, "{}", ctx());
                assert_eq!(extreme_match(&sub, &seq, k, end, Some(&index)), want, "{}", ctx());
                let tiny = extreme_match_blocks(&sub, &seq, k, end, Some(&index), first_block);
                assert_eq!(tiny, want, "tiny blocks: {}", ctx());
            }
            if all.len() > 1 {
                early += 1;
            }
        }
        eprintln!("extreme_match: {by_path:?} cases by path (exact, k>=m, n-gram, LP), {early} with several matches");
        assert!(by_path.iter().all(|&c| c > 500), "{by_path:?}");
        assert!(early > 3000, "{early}");
    }

    /// `extreme_match` on many short texts over two or three letters with tiny blocks: here
    /// the bounds of the early exit are often tight (moving either by one fails this test).
    #[test]
    fn extreme_match_on_small_dense_inputs() {
        let mut rng = Rng(0xABCD_EF01_2345_6789);
        let alphabets: Vec<Vec<char>> = ["ab", "abc", "ab "].iter().map(|s| s.chars().collect()).collect();
        for i in 0..100_000 {
            let alpha = &alphabets[rng.below(alphabets.len())];
            let m = 1 + rng.below(16);
            let k = if m >= 6 && rng.below(4) != 0 { 1 + rng.below(m / 3 - 1) } else { rng.below(m + 1) };
            let sub = rng.string(alpha, m);
            let n = rng.below(40);
            let seq = rng.string(alpha, n);
            let all = find_near_matches(&sub, &seq, k);
            for (end, want) in [(End::First, all.first()), (End::Last, all.last())] {
                let got = extreme_match_blocks(&sub, &seq, k, end, None, 1 + rng.below(4));
                assert_eq!(got, want.copied(), "{i} {end:?} {sub:?} {seq:?} {k}");
            }
        }
    }

    /// Upstream's `_expand_long` as first ported (a direct transcription), for the tests.
    fn expand_long_reference(p: &[char], t: &[char], kk: usize) -> Expansion {
        let plen = p.len();
        if plen == 0 {
            return Expansion { result: Some((0, 0)), read: 0, stopped: true };
        }
        let mut scores: Vec<usize> = (1..=plen).collect();
        let (mut best, mut best_len, mut max_good) = (plen, 0usize, kk);
        let mut band_start = 0usize;
        let mut band_last: Option<usize> = Some(plen - 1);
        let (mut read, mut stopped) = (0usize, false);
        for (q, &c) in t.iter().enumerate() {
            read = q + 1;
            let st = band_start;
            let en = match band_last {
                Some(e) => min(plen, e.saturating_add(1)),
                None => 0,
            };
            let mut a = q;
            let mut cc = q + 1;
            let (mut new_start, mut new_last): (Option<usize>, Option<usize>) =
                if cc <= max_good { (Some(0), Some(0)) } else { (None, None) };
            for j in st..en {
                let b = scores[j];
                cc = min(min(a + usize::from(c != p[j]), b + 1), cc + 1);
                scores[j] = cc;
                a = b;
                if cc <= max_good {
                    if new_start.is_none() {
                        new_start = Some(j);
                    }
                    let reach = j + 1 + (max_good - cc);
                    new_last = Some(match new_last {
                        Some(e) => max(e, reach),
                        None => reach,
                    });
                }
            }
            match new_start {
                Some(s) => band_start = s,
                None => {
                    stopped = true;
                    break;
                }
            }
            band_last = new_last;
            if en == plen && cc <= best {
                best = cc;
                best_len = q + 1;
                if best < max_good {
                    max_good = best;
                }
            }
        }
        Expansion { result: (best <= kk).then_some((best, best_len)), read, stopped }
    }

    #[test]
    fn expand_long_matches_its_direct_transcription() {
        let alphabets: Vec<Vec<char>> =
            ["a", "ab", "abc", "ab e", "abcdefghij"].iter().map(|s| s.chars().collect()).collect();
        let mut rng = Rng(0x0DDB_A11C_AFE5_1234);
        let mut scores = Vec::new();
        let mut found = 0;
        for _ in 0..200_000 {
            let alpha = &alphabets[rng.below(alphabets.len())];
            let plen = rng.below(40);
            let p = rng.string(alpha, plen);
            let mut t = if rng.below(2) == 0 || p.is_empty() {
                let tlen = rng.below(60);
                rng.string(alpha, tlen)
            } else {
                // An edited copy of p, then more text.
                let mut t = p.clone();
                for _ in 0..rng.below(6) {
                    let at = rng.below(t.len() + 1);
                    match rng.below(3) {
                        0 if at < t.len() => {
                            t.remove(at);
                        }
                        1 if at < t.len() => t[at] = alpha[rng.below(alpha.len())],
                        _ => t.insert(at, alpha[rng.below(alpha.len())]),
                    }
                }
                t
            };
            let more = rng.below(10);
            t.extend(rng.string(alpha, more));
            let kk = rng.below(12);
            let want = expand_long_reference(&p, &t, kk);
            let got = expand_long(&p, &t, kk, &mut scores);
            assert_eq!((got.result, got.read, got.stopped), (want.result, want.read, want.stopped), "{p:?} {t:?} {kk}");
            found += usize::from(want.result.is_some());
        }
        assert!(found > 50_000, "{found}");
    }

    #[test]
    fn groups_match_literal_consolidation() {
        let mut rng = Rng(12345);
        for _ in 0..3000 {
            let count = rng.below(30);
            let ms: Vec<NearMatch> = (0..count)
                .map(|_| {
                    let s = rng.below(60);
                    NearMatch { start: s, end: s + 1 + rng.below(8), dist: rng.below(4) }
                })
                .collect();
            let mut g = Groups::default();
            for &x in &ms {
                g.add_one(x);
            }
            assert_eq!(g.finish(), consolidate_reference(&ms), "{ms:?}");
        }
    }

    #[test]
    fn golden_cases_against_fuzzysearch() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/search_cases.jsonl");
        let text = std::fs::read_to_string(path).expect("golden file");
        let as_matches = |v: &serde_json::Value| -> Vec<(usize, usize, usize)> {
            v.as_array()
                .expect("array")
                .iter()
                .map(|t| {
                    let f = |i: usize| t[i].as_u64().expect("int") as usize;
                    (f(0), f(1), f(2))
                })
                .collect()
        };
        let (mut total, mut hash_dep, mut ties, mut in_seen, mut literal) = (0, 0, 0, 0, 0);
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line).expect("json");
            let sub = v["sub"].as_str().expect("sub");
            let seq = v["seq"].as_str().expect("seq");
            let k = v["k"].as_u64().expect("k") as usize;
            let got = fnm(sub, seq, k);
            total += 1;
            // The literal (unpruned) port used by `lp_pruning_matches_literal_port` must agree
            // with the library too.
            let (subc, seqc) = (chars(sub), chars(seq));
            if k >= 1 && k < subc.len() && subc.len() / (k + 1) < 3 {
                if let Some(raw) = lp_reference(&subc, &seqc, k, 200_000) {
                    let lit: Vec<_> =
                        consolidate_reference(&raw).into_iter().map(|x| (x.start, x.end, x.dist)).collect();
                    assert_eq!(lit, got, "literal port: {sub:?} {seq:?} {k}");
                    literal += 1;
                }
            }
            let tie = v["tie"].as_bool().unwrap_or(false);
            let hd = v["hash_dependent"].as_bool().unwrap_or(false);
            if hd {
                hash_dep += 1;
                assert!(tie, "hash-dependent without a tie: {line}");
                let seen: Vec<_> = v["all_results"].as_array().expect("all_results").iter().map(as_matches).collect();
                if seen.contains(&got) {
                    in_seen += 1;
                }
            }
            if tie {
                ties += 1;
                assert_eq!(got, as_matches(&v["tie_break"]), "{sub:?} {seq:?} {k}");
            } else {
                assert_eq!(got, as_matches(&v["matches"]), "{sub:?} {seq:?} {k}");
            }
        }
        eprintln!(
            "golden: {total} cases, {ties} with ties, {hash_dep} hash-dependent \
             ({in_seen} of them answered as one of the seeds did); \
             {literal} LP cases also checked through the literal port"
        );
        assert!(total >= 1000);
    }
}
