//! Levenshtein distance (unit-cost insertions, deletions, substitutions) over Unicode code
//! points: what `rapidfuzz.distance.Levenshtein.distance(a, b)` returns for Python strings.
//!
//! Written by hand: the medoid reward needs many pairwise distances of up to 28 completions of up
//! to ~8,000 characters per page, and completions of one page are mostly near copies of each
//! other, so the cost should follow the distance, not the length product. The `rapidfuzz` crate
//! (RapidFuzz's Rust port) is slower on exactly this workload: `cargo bench --bench kernels`,
//! 378 pairs of one page's 28 completions, ours 7.3× faster on near copies, 1.6× on a mix of
//! near copies and unrelated texts (equal distances checked there).
//!
//! How:
//! 1. The common prefix and suffix are dropped (they never change the distance).
//! 2. Short pattern (≤ 64 characters after that): Hyyrö's bit-parallel algorithm in one word,
//!    O(n).
//! 3. Bounds: a character-count lower bound (`lower_bound`, or the caller's), and an upper one
//!    the caller may know (`levenshtein_within`; the medoid reward passes the triangle
//!    inequality over rows it has computed). Equal bounds are the answer.
//! 4. Texts unlike each other at both ends (their first and last 512 characters more than a
//!    quarter edited, `dissimilar`) go straight to the widest band: no narrow one could hold them.
//! 5. Near copies: the Landau–Vishkin diagonal algorithm with a cap on the distance (and only
//!    the diagonals from which the target stays within the cap), O(d² + slides).
//! 6. Past the cap: Hyyrö's banded bit vectors (`banded`), two columns at a time, starting just
//!    above the lower bound, O(n·k/64) each; a failed band leaves an upper bound on the
//!    distance (often the distance itself), and the next band takes that width, at most
//!    doubling and never past the caller's bound; guesses stop while a band is still under a
//!    third of the full column. Inside a band, rows below the path are pruned once the path has
//!    covered the length difference (`prune`: the g + h argument of A*), and texts whose
//!    dropped or repeated block lies late are reversed (`block_late`) so that the pruned part
//!    is the longer one.
//! 7. The widest band, |b|: every path of cost ≤ |b|, i.e. the exact distance, without the
//!    matrix's two far corners that Ukkonen's bound excludes, O(n·m/64).
//!
//! Every step only chooses the method; each returns the exact distance or gives up.
//!
//! Differences from upstream: none intended; property tests compare with the DP definition and
//! with RapidFuzz on random and golden inputs.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Characters past ASCII in hash maps looked up once a column: one multiplication instead of
/// the standard library's DoS-resistant hash (the keys are the texts' own characters).
#[derive(Default)]
struct CharHasher(u64);

impl Hasher for CharHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.0 = u64::from(x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn finish(&self) -> u64 {
        self.0.rotate_left(32)
    }
}

type CharMap<V> = HashMap<char, V, BuildHasherDefault<CharHasher>>;

/// The bit masks of a pattern: for each character, a bit per position where it occurs
/// (`words` 64-bit words per character; row 0 is the all-zero row of absent characters).
struct Masks {
    words: usize,
    ascii: [u32; 128],
    other: CharMap<u32>,
    rows: Vec<u64>,
}

impl Masks {
    fn new(pattern: &[char]) -> Masks {
        let words = pattern.len().div_ceil(64).max(1);
        let mut m = Masks { words, ascii: [0; 128], other: CharMap::default(), rows: Vec::new() };
        // Rows numbered first, so the table is allocated once.
        let mut next = 1u32;
        for &c in pattern {
            let slot = if (c as u32) < 128 { &mut m.ascii[c as usize] } else { m.other.entry(c).or_insert(0) };
            if *slot == 0 {
                *slot = next;
                next += 1;
            }
        }
        m.rows = vec![0; next as usize * words];
        for (i, &c) in pattern.iter().enumerate() {
            let row = if (c as u32) < 128 { m.ascii[c as usize] } else { m.other[&c] } as usize;
            m.rows[row * words + i / 64] |= 1u64 << (i % 64);
        }
        m
    }

    /// The masks of `c`, one word per 64 pattern positions.
    #[inline]
    fn row(&self, c: char) -> &[u64] {
        let row =
            if (c as u32) < 128 { self.ascii[c as usize] } else { self.other.get(&c).copied().unwrap_or(0) } as usize;
        &self.rows[row * self.words..(row + 1) * self.words]
    }
}

/// The distance between `a` and `b`.
pub fn levenshtein(a: &[char], b: &[char]) -> usize {
    levenshtein_within(a, b, 0, usize::MAX)
}

/// The distance between `a` and `b`, given bounds a caller knows (`lower` ≤ distance ≤ `upper`,
/// e.g. from the triangle inequality over distances already computed; `lower` 0: none known,
/// the character-count bound is computed here, so a caller's nonzero one should include it):
/// equal bounds are the answer, and the upper one caps the band, so no band wider than it is
/// ever tried. Bounds that do not hold give wrong distances, so callers pass only proven ones.
pub fn levenshtein_within(a: &[char], b: &[char], lower: usize, upper: usize) -> usize {
    let p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[p..], &b[p..]);
    let s = a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[..a.len() - s], &b[..b.len() - s]);
    let (a, b) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if a.is_empty() {
        return b.len();
    }
    if a.len() <= 64 {
        return bit_parallel(a, b, &Masks::new(a));
    }
    let upper = upper.min(b.len());
    let low = if lower > 0 { lower } else { lower_bound(a, b) };
    if low >= upper {
        debug_assert_eq!(low, upper, "bounds that contradict each other");
        return upper;
    }
    // Landau–Vishkin costs O(d²), a band of bit vectors O(n·d/64): the first wins up to about
    // n/24 here. A lower bound above that skips it.
    let lv_cap = (b.len() / 24).clamp(64, 1024);
    // (A caller's bound within Landau–Vishkin's reach, or under half the longer length, makes
    // the sample pointless: the bands tried are capped by it.)
    if upper > lv_cap && 2 * upper > b.len() && dissimilar(a, b) {
        return banded(a, b, &Masks::new(a), upper).expect("the distance is at most the upper bound");
    }
    if low <= lv_cap {
        if let Some(d) = landau_vishkin(a, b, lv_cap.min(upper)) {
            return d;
        }
    }
    // The band prunes the rows below the path once the path has covered the length difference
    // (`prune`): after a dropped or repeated block, not before it. Reversed texts (same
    // distance) put a block in the second half first.
    let reversed: Vec<Vec<char>>;
    let (a, b) = if block_late(a, b) {
        reversed = vec![a.iter().rev().copied().collect(), b.iter().rev().copied().collect()];
        (reversed[0].as_slice(), reversed[1].as_slice())
    } else {
        (a, b)
    };
    let masks = Masks::new(a);
    // Start the band a little above the lower bound (each edit changes the character counts by
    // at most 2), and widen it until the distance fits: to the upper bound a failed band leaves
    // (often the distance itself), at most doubling, never past the caller's bound (a band that
    // wide always holds the distance, so it is taken at once when the first guess is near it).
    // A band of k + 1 rows costs about k/64 + 2 words a column against the full column's
    // `words`; guesses are given up while the band is still under a third of the column, so
    // failed ones never cost more than the full computation that follows them.
    let mut k = lv_cap.max(low * 5 / 4 + 32);
    if 2 * k >= upper {
        k = upper;
    }
    while k < upper && 3 * (k / 64 + 2) <= masks.words {
        match banded(a, b, &masks, k) {
            Ok(d) => return d,
            Err(bound) => k = bound.min(2 * k).min(upper),
        }
    }
    banded(a, b, &masks, upper).expect("the distance is at most the upper bound")
}

/// Whether the path between near copies of different lengths takes most of the length
/// difference late: a piece from the middle of `a` found in `b` on its own diagonal (near 0)
/// rather than shifted by the difference. Only a choice of direction, never of the result.
fn block_late(a: &[char], b: &[char]) -> bool {
    const PIECE: usize = 24;
    let (m, n) = (a.len(), b.len());
    let delta = n - m;
    if delta < 128 || m < 4 * PIECE {
        return false;
    }
    // Three pieces around the middle, in case one holds an edit.
    for at in [m / 2, m / 2 - PIECE, m / 2 + PIECE] {
        let piece = &a[at..at + PIECE];
        let (from, to) = (at.saturating_sub(64), (at + delta + 64 + PIECE).min(n));
        let found: Vec<usize> =
            (from..=to - PIECE).filter(|&p| b[p] == piece[0] && &b[p..p + PIECE] == piece).collect();
        if !found.is_empty() {
            let near_own = found.iter().any(|&p| p.abs_diff(at) <= delta / 4);
            let near_shifted = found.iter().any(|&p| p.abs_diff(at + delta) <= delta / 4);
            return near_own && !near_shifted;
        }
    }
    false
}

/// The distance through the band of every path of cost at most |b| (no distance is larger): a
/// quarter of the matrix, in its two far corners, is never computed. Requires |a| ≤ |b|.
#[cfg(test)]
fn widest_band(a: &[char], b: &[char], masks: &Masks) -> usize {
    banded(a, b, masks, b.len()).expect("the distance is at most the longer length")
}

/// Whether the texts look unlike each other at both ends (in 512 characters at their start and
/// 512 at their end, more than a quarter edited), so that no narrow band can hold their distance: then the attempts
/// with Landau–Vishkin and bands would only add to the full computation. Only a choice of
/// method, never of the result.
fn dissimilar(a: &[char], b: &[char]) -> bool {
    const SAMPLE: usize = 512;
    if a.len() < 4 * SAMPLE {
        return false;
    }
    // Both ends: one dropped or repeated block misaligns one end of the texts, not both. Near
    // copies usually show it in the sample's last 64 characters already (one word, a fraction
    // of the cost; the last ones, so that a shared header, such as front matter, decides
    // nothing).
    let far = |x: &[char], y: &[char]| {
        let tail = SAMPLE - 64..SAMPLE;
        bit_parallel(&x[tail.clone()], &y[tail.clone()], &Masks::new(&x[tail])) > 16
            && bit_parallel(x, y, &Masks::new(x)) > SAMPLE / 4
    };
    far(&a[..SAMPLE], &b[..SAMPLE]) && far(&a[a.len() - SAMPLE..], &b[b.len() - SAMPLE..])
}

/// The characters `b` has in excess of `a`, counted with multiplicity, ≤ the distance, and so
/// are those `a` has in excess of `b`: each edit (an insertion, a deletion, a substitution)
/// changes one count up and at most one down, so it removes at most one excess of each kind.
/// The larger of the two is (Σ_c |count_a(c) − count_b(c)| + ||b| − |a||) / 2, at least both the
/// length difference and half the count difference.
fn lower_bound(a: &[char], b: &[char]) -> usize {
    let mut counts: CharMap<isize> = CharMap::default();
    let mut ascii = [0isize; 128];
    for (s, sign) in [(a, 1isize), (b, -1)] {
        for &c in s {
            if (c as u32) < 128 {
                ascii[c as usize] += sign;
            } else {
                *counts.entry(c).or_insert(0) += sign;
            }
        }
    }
    let diff: usize = ascii.iter().chain(counts.values()).map(|d| d.unsigned_abs()).sum();
    (diff + (b.len() - a.len())) / 2
}

/// The characters of a text with their counts, sorted: for `counts_bound` between many pairs.
pub fn char_counts(text: &[char]) -> Vec<(char, usize)> {
    let mut ascii = [0usize; 128];
    let mut other: Vec<char> = Vec::new();
    for &c in text {
        if (c as u32) < 128 {
            ascii[c as usize] += 1;
        } else {
            other.push(c);
        }
    }
    other.sort_unstable();
    let mut out: Vec<(char, usize)> =
        (0u8..128).filter(|&c| ascii[c as usize] > 0).map(|c| (c as char, ascii[c as usize])).collect();
    for c in other {
        match out.last_mut() {
            Some((last, n)) if *last == c => *n += 1,
            _ => out.push((c, 1)),
        }
    }
    out
}

/// `lower_bound` of two texts from their `char_counts`.
pub fn counts_bound(x: &[(char, usize)], y: &[(char, usize)]) -> usize {
    let (mut i, mut j, mut diff) = (0, 0, 0usize);
    let (mut len_x, mut len_y) = (0usize, 0usize);
    while i < x.len() || j < y.len() {
        if j == y.len() || (i < x.len() && x[i].0 < y[j].0) {
            diff += x[i].1;
            len_x += x[i].1;
            i += 1;
        } else if i == x.len() || y[j].0 < x[i].0 {
            diff += y[j].1;
            len_y += y[j].1;
            j += 1;
        } else {
            diff += x[i].1.abs_diff(y[j].1);
            len_x += x[i].1;
            len_y += y[j].1;
            i += 1;
            j += 1;
        }
    }
    (diff + len_x.abs_diff(len_y)) / 2
}

/// Hyyrö (2003): column by column over `b`, the vertical deltas of the DP column of pattern `a`
/// as bit vectors (VP: +1, VN: −1), ⌈|a|/64⌉ words carried into each other through the
/// horizontal deltas of each word's last row. The distance is |a| plus the last row's
/// horizontal deltas.
fn bit_parallel(a: &[char], b: &[char], masks: &Masks) -> usize {
    let words = masks.words;
    let last_bit = 1u64 << ((a.len() - 1) % 64);
    // (VP, VN) of each word side by side: one cache line holds four words' state.
    let mut v = vec![(!0u64, 0u64); words];
    let mut dist = a.len();
    for &c in b {
        let (up, down) = full_column(&mut v, masks.row(c), last_bit);
        dist = dist + usize::from(up) - usize::from(down);
    }
    dist
}

/// `column` over every word: the words below the last one without the output test, so the
/// loop has no branch and no bounds checks.
#[inline(always)]
fn full_column(v: &mut [(u64, u64)], pm: &[u64], out_bit: u64) -> (bool, bool) {
    let last = v.len() - 1;
    let (mut hp_carry, mut hn_carry) = (1u64, 0u64);
    for (v, &pm) in v[..last].iter_mut().zip(&pm[..last]) {
        let (v_p, v_n) = *v;
        let x = pm | hn_carry;
        let d0 = (((x & v_p).wrapping_add(v_p)) ^ v_p) | x | v_n;
        let hp = v_n | !(d0 | v_p);
        let hn = d0 & v_p;
        let (hp_s, hn_s) = ((hp << 1) | hp_carry, (hn << 1) | hn_carry);
        hp_carry = hp >> 63;
        hn_carry = hn >> 63;
        *v = (hn_s | !(d0 | hp_s), hp_s & d0);
    }
    let (v_p, v_n) = v[last];
    let x = pm[last] | hn_carry;
    let d0 = (((x & v_p).wrapping_add(v_p)) ^ v_p) | x | v_n;
    let hp = v_n | !(d0 | v_p);
    let hn = d0 & v_p;
    let (hp_s, hn_s) = ((hp << 1) | hp_carry, (hn << 1) | hn_carry);
    v[last] = (hn_s | !(d0 | hp_s), hp_s & d0);
    (hp & out_bit != 0, hn & out_bit != 0)
}

/// The distance if it is at most `k`, else None: `bit_parallel` restricted to the words that
/// hold the band of column j, rows a path of cost ≤ k can pass through. Its top is Ukkonen's:
/// with δ = n − m ≥ 0, rows from j − (k + δ)/2. Its bottom is a lowest diagonal j − row:
/// Ukkonen's −(k − δ)/2 to start with, raised as the columns show more rows to be dead (`prune`).
/// A word enters the band at its bottom with the rows below its upper neighbour counted +1
/// each, and the word below a dropped one reads +1 from above: both are over-estimates of the
/// DP values there, and those cells hold values above k anyway, so every cell on a path of cost
/// at most k comes out exact (the path stays in the band) and none comes out at most k wrongly.
/// Requires |a| ≤ |b|.
///
/// `Err(upper)` when the distance exceeds k: every value computed is at least the true one
/// (the DP is monotone in its inputs, and both kinds of border value over-estimate), so the
/// last row's value is an upper bound on the distance, and a band of that width will hold it.
fn banded(a: &[char], b: &[char], masks: &Masks, k: usize) -> Result<usize, usize> {
    let (m, n) = (a.len(), b.len());
    if n - m > k {
        return Err(n);
    }
    let delta = n - m;
    let up = (k + delta) / 2;
    let words = masks.words;
    let bottom = |w: usize| (64 * (w + 1)).min(m); // the block's last row (rows count from 1)
    let last_bit = 1u64 << ((m - 1) % 64);
    let out_bit = |last: usize| if last + 1 == words { last_bit } else { 1 << 63 };
    // The lowest diagonal j − i of the band (never above δ, the diagonal of the last cell).
    let mut lowest = -(((k - delta) / 2) as isize);
    // The words of column j's band (rows j − up ..= j − lowest, clipped to 1..=m).
    let band = |j: usize, lowest: isize| {
        let last_row = (j as isize - lowest).clamp(1, m as isize) as usize;
        ((j.saturating_sub(up).max(1) - 1) / 64, (last_row - 1) / 64)
    };
    let mut v = vec![(!0u64, 0u64); words];
    let (mut first, mut last) = (0usize, band(0, lowest).1);
    let mut score = bottom(last); // D[bottom row of word `last`][j]; column 0: D[i][0] = i
                                  // A word entering the band at its bottom: its rows +1 each below the row above.
    let enter = |v: &mut [(u64, u64)], last: &mut usize, to: usize, score: &mut usize| {
        while *last < to {
            *last += 1;
            v[*last] = (!0, 0);
            *score += bottom(*last) - 64 * *last;
        }
    };
    // Columns two at a time (`two_columns`), the last one alone when n is odd.
    let mut j = 1;
    while j < n {
        let (f1, l1) = band(j, lowest);
        let (f2, l2) = band(j + 1, lowest);
        let f1 = first.max(f1);
        let f2 = f1.max(f2);
        enter(&mut v, &mut last, l1, &mut score);
        enter(&mut v, &mut last, l2, &mut score);
        let ((hp1, hn1), (hp2, hn2)) = two_columns(&mut v, masks.row(b[j - 1]), masks.row(b[j]), (f1, l1), (f2, l2));
        let (o1, o2) = (out_bit(l1), out_bit(l2));
        score = score + usize::from(hp1 & o1 != 0) + usize::from(hp2 & o2 != 0)
            - usize::from(hn1 & o1 != 0)
            - usize::from(hn2 & o2 != 0);
        first = f2;
        if j % 8 == 7 && lowest < delta as isize {
            lowest = prune(&v, (first, &mut last), &mut score, (j + 1, m, delta, k), lowest);
        }
        j += 2;
    }
    if j == n {
        let (f, l) = band(j, lowest);
        enter(&mut v, &mut last, l, &mut score);
        first = first.max(f);
        let (hp, hn) = full_column(&mut v[first..=last], &masks.row(b[j - 1])[first..=last], out_bit(last));
        score = score + usize::from(hp) - usize::from(hn);
    }
    debug_assert_eq!(last, words - 1, "n - m <= k: the band reaches the last row");
    if score <= k {
        Ok(score)
    } else {
        Err(score)
    }
}

/// The band's lowest diagonal after column j, raised past rows no path of cost ≤ k can use.
///
/// With g the DP value and h(i, j) = |δ − (j − i)| (the length difference left, a consistent
/// lower bound on the cost to the end), f = g + h never decreases along a path, and a cell with
/// f > k is on no path of cost ≤ k. Below diagonal δ (rows i ≥ j − δ), one row down changes g
/// by −1..=1 and adds 1 to h, so f never decreases down the column there: if f(R, j) > k for
/// such a row R, every row below R in column j is dead too, and so is every row below R + t in
/// column j + t (a path reaching one enters column j + t either from a dead cell of column j + t
/// − 1 or above row R + t, and then pays at least 2 in f for each row it descends below the
/// diagonal, as much as f can have fallen up the column from R). So the diagonals ≤ j − R are
/// dead from column j on. The values at the words' last rows come from `score` and the words'
/// vertical deltas; computed values are exact where f ≤ k, so a computed f > k is a true one.
/// The words below the new bottom leave the band (`score` moves up with them).
fn prune(
    v: &[(u64, u64)],
    (first, last): (usize, &mut usize),
    score: &mut usize,
    (j, m, delta, k): (usize, usize, usize, usize),
    lowest: isize,
) -> isize {
    let bottom = |w: usize| (64 * (w + 1)).min(m);
    let (mut w, mut g, mut dead) = (*last, *score, None);
    loop {
        let row = bottom(w);
        if row + delta < j || g + row + delta - j <= k {
            break; // above diagonal δ, or alive
        }
        dead = Some((w, row, g));
        if w == first {
            break;
        }
        let rows = row - 64 * w; // the word's rows in the band, 1..=64
        let mask = if rows == 64 { !0 } else { (1u64 << rows) - 1 };
        let (vp, vn) = v[w];
        g = g + (vn & mask).count_ones() as usize - (vp & mask).count_ones() as usize;
        w -= 1;
    }
    let Some((w, row, g)) = dead else { return lowest };
    let raised = (j as isize - row as isize + 1).min(delta as isize);
    // Rows from `row` down are dead; the band keeps word w (its rows above `row` may live) and
    // drops the words below it.
    if w < *last {
        *last = w;
        *score = g;
    }
    raised.max(lowest)
}

/// One word of one column (`full_column`'s step): the word's new (VP, VN) from its old one, the
/// character's mask and the horizontal deltas carried in from the word above (updated to those
/// carried out); returns the word's horizontal deltas (HP, HN) before the shift.
#[inline(always)]
fn word(v: &mut (u64, u64), pm: u64, carry: &mut (u64, u64)) -> (u64, u64) {
    let (v_p, v_n) = *v;
    let x = pm | carry.1;
    let d0 = (((x & v_p).wrapping_add(v_p)) ^ v_p) | x | v_n;
    let hp = v_n | !(d0 | v_p);
    let hn = d0 & v_p;
    let (hp_s, hn_s) = ((hp << 1) | carry.0, (hn << 1) | carry.1);
    *carry = (hp >> 63, hn >> 63);
    *v = (hn_s | !(d0 | hp_s), hp_s & d0);
    (hp, hn)
}

/// Two consecutive columns over their bands' words ([f1, l1] and [f2, l2], f1 ≤ f2, l1 ≤ l2),
/// skewed by one word: word w of the first column and word w − 1 of the second are computed
/// together. Each depends only on what the other's previous step wrote, so the processor
/// overlaps their dependency chains (a word's carry chain is the kernel's latency bound).
/// Returns the (HP, HN) of each column's last word. The same values as two `full_column`s.
#[inline(always)]
fn two_columns(
    v: &mut [(u64, u64)],
    pa: &[u64],
    pb: &[u64],
    (f1, l1): (usize, usize),
    (f2, l2): (usize, usize),
) -> ((u64, u64), (u64, u64)) {
    let (mut ca, mut cb) = ((1u64, 0u64), (1u64, 0u64));
    let (mut oa, mut ob) = ((0, 0), (0, 0));
    for w in f1..=f2.min(l1) {
        oa = word(&mut v[w], pa[w], &mut ca);
    }
    for w in f2 + 1..=l1 {
        oa = word(&mut v[w], pa[w], &mut ca);
        ob = word(&mut v[w - 1], pb[w - 1], &mut cb);
    }
    for w in f2.max(l1)..=l2 {
        ob = word(&mut v[w], pb[w], &mut cb);
    }
    (oa, ob)
}

/// Landau–Vishkin: for d = 0, 1, …, the furthest row of `a` reachable with d edits on each
/// diagonal k = j − i, extended along runs of equal characters. None when the distance
/// exceeds `cap`. Requires |a| ≤ |b|.
fn landau_vishkin(a: &[char], b: &[char], cap: usize) -> Option<usize> {
    let (m, n) = (a.len() as isize, b.len() as isize);
    let target = n - m;
    if target as usize > cap {
        return None;
    }
    let off = cap as isize + 1;
    let size = 2 * cap + 3;
    // Rows in the arrays are always reachable points of their diagonal with at most the round's
    // edits, or this (far below any row), which the border below lifts.
    const NONE: isize = isize::MIN / 4;
    let mut prev = vec![NONE; size];
    let mut cur = vec![NONE; size];
    let slide = |mut i: isize, k: isize| {
        while i < m && i + k < n && a[i as usize] == b[(i + k) as usize] {
            i += 1;
        }
        i
    };
    prev[off as usize] = slide(0, 0);
    if target == 0 && prev[off as usize] >= m {
        return Some(0);
    }
    for d in 1..=cap as isize {
        // A path of cost ≤ cap is, after d edits, within cap − d diagonals of the target: the
        // others cannot lead to an answer (their furthest rows stay valid reachable points for
        // the diagonals next to them).
        let slack = cap as isize - d;
        let (lo, hi) = ((-d.min(m)).max(target - slack), d.min(n).min(target + slack));
        let (from, to) = ((lo + off) as usize, (hi + off) as usize);
        for (x, (c, w)) in cur[from..=to].iter_mut().zip(prev[from - 1..=to + 1].windows(3)).enumerate() {
            let k = lo + x as isize;
            // A substitution, a character of a skipped, one of b skipped; or the border cell
            // of the diagonal (|k| ≤ d edits away from the start).
            let i = (w[1] + 1).max(w[2] + 1).max(w[0]).max(-k.min(0));
            *c = slide(i.min(m).min(n - k), k);
        }
        if cur[(target + off) as usize] >= m {
            return Some(d as usize);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::XorShift;

    fn dp(a: &[char], b: &[char]) -> usize {
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, &ca) in a.iter().enumerate() {
            let mut diag = row[0];
            row[0] = i + 1;
            for (j, &cb) in b.iter().enumerate() {
                let up = row[j + 1];
                row[j + 1] = (diag + usize::from(ca != cb)).min(up + 1).min(row[j] + 1);
                diag = up;
            }
        }
        row[b.len()]
    }

    fn s(x: &str) -> Vec<char> {
        x.chars().collect()
    }

    /// U+007F is the last character counted in the ASCII table, U+0080 the first counted in the
    /// map: both counted, in sorted order, repeats merged, nothing with a count of 0.
    #[test]
    fn counts_and_bounds_at_the_ascii_edge() {
        let t = |s: &str| s.chars().collect::<Vec<char>>();
        assert_eq!(
            char_counts(&t("b\u{80}aé\u{7f}é")),
            vec![('a', 1), ('b', 1), ('\u{7f}', 1), ('\u{80}', 1), ('é', 2)]
        );
        assert!(char_counts(&t("")).is_empty());
        // "\u{80}a" -> "\u{80}\u{80}bc": one substitution and two insertions (the DP's 3); the
        // counts differ by 4 and the lengths by 2: (4 + 2) / 2 = 3.
        assert_eq!(lower_bound(&t("\u{80}a"), &t("\u{80}\u{80}bc")), 3);
        assert_eq!(levenshtein(&t("\u{80}a"), &t("\u{80}\u{80}bc")), 3);
    }

    #[test]
    fn small_cases() {
        assert_eq!(levenshtein(&s(""), &s("")), 0);
        assert_eq!(levenshtein(&s("abc"), &s("")), 3);
        assert_eq!(levenshtein(&s("kitten"), &s("sitting")), 3);
        assert_eq!(levenshtein(&s("flaw"), &s("lawn")), 2);
        assert_eq!(levenshtein(&s("héllo wörld"), &s("hello world")), 2);
        assert_eq!(levenshtein(&s("😀a"), &s("a😀")), 2);
        // The count bound is exact when every edit is forced by the counts: 4 substitutions and
        // 2 insertions (the length difference alone says 2, half the count difference 5).
        assert_eq!(lower_bound(&s("aaaa"), &s("bbbbbb")), 6);
        assert_eq!(counts_bound(&char_counts(&s("xaaaa")), &char_counts(&s("bbbbbbx"))), 6);
    }

    /// Every path (one word, Landau–Vishkin, several words, the fallback) against the DP.
    #[test]
    fn random_against_dp() {
        let mut rng = XorShift(0x1e7e_05c1);
        for round in 0..3000 {
            let alphabet: Vec<char> = if round % 3 == 0 {
                s("ab")
            } else if round % 3 == 1 {
                s("abcdé😀 \n")
            } else {
                s("abcdefghijklmnopqrstuvwxyz")
            };
            let len = match round % 4 {
                0 => rng.below(20),
                1 => rng.below(90),
                2 => 60 + rng.below(200),
                _ => rng.below(400),
            };
            let a: Vec<char> = (0..len).map(|_| alphabet[rng.below(alphabet.len())]).collect();
            // b: a noisy copy of a (near) or an independent string (far).
            let b: Vec<char> = if rng.below(2) == 0 {
                let mut b = a.clone();
                for _ in 0..rng.below(len / 4 + 2) {
                    let at = rng.below(b.len() + 1);
                    match rng.below(3) {
                        0 if at < b.len() => {
                            b.remove(at);
                        }
                        1 if at < b.len() => b[at] = alphabet[rng.below(alphabet.len())],
                        _ => b.insert(at, alphabet[rng.below(alphabet.len())]),
                    }
                }
                b
            } else {
                (0..rng.below(400)).map(|_| alphabet[rng.below(alphabet.len())]).collect()
            };
            let want = dp(&a, &b);
            assert_eq!(levenshtein(&a, &b), want, "round {round}: {a:?} vs {b:?}");
            assert_eq!(levenshtein(&b, &a), want);
            // Any true bounds, tight or loose, give the same distance.
            for (lo, up) in [(0, want), (want, want), (want / 2, want + 3), (0, 2 * want + 1), (want, usize::MAX)] {
                assert_eq!(levenshtein_within(&a, &b, lo, up), want, "bounds {lo}..={up}, round {round}");
            }
            let (short, long) = if a.len() <= b.len() { (&a, &b) } else { (&b, &a) };
            if !short.is_empty() {
                let masks = Masks::new(short);
                assert_eq!(bit_parallel(short, long, &masks), want, "bit-parallel, round {round}");
                for k in [1, 3, 10, 63, 64, 65, 130, 500] {
                    match banded(short, long, &masks, k) {
                        Ok(d) => assert!(want <= k && d == want, "banded k {k}, round {round}: {short:?} vs {long:?}"),
                        // a failed band's bound holds the distance, and a band that wide finds it
                        Err(upper) => {
                            assert!(want > k && upper >= want, "banded k {k}, round {round}: {short:?} vs {long:?}");
                            assert_eq!(
                                banded(short, long, &masks, upper),
                                Ok(want),
                                "band of the bound, round {round}"
                            );
                        }
                    }
                }
                assert!(lower_bound(short, long) <= want, "lower bound, round {round}");
                assert_eq!(
                    counts_bound(&char_counts(&a), &char_counts(&b)),
                    lower_bound(short, long),
                    "counts bound, round {round}"
                );
                for cap in [0, 1, 5, 40] {
                    let lv = landau_vishkin(short, long, cap);
                    assert_eq!(lv, (want <= cap).then_some(want), "LV cap {cap}, round {round}");
                }
                assert_eq!(widest_band(short, long, &masks), want, "widest band, round {round}");
            }
        }
    }

    /// Texts long enough for the dissimilarity sample (both ends), near and far, with block
    /// edits (a dropped or repeated run) as well as character edits.
    #[test]
    fn long_texts_against_dp() {
        let mut rng = XorShift(0x5eed_1e7e);
        let alphabet = s("abcdefghij klmnop\n");
        for round in 0..24 {
            let len = 2048 + rng.below(1200);
            let a: Vec<char> = (0..len).map(|_| alphabet[rng.below(alphabet.len())]).collect();
            let b: Vec<char> = match round % 4 {
                0 => (0..len + rng.below(300)).map(|_| alphabet[rng.below(alphabet.len())]).collect(),
                1 => {
                    let at = rng.below(len - 600);
                    [&a[..at], &a[at + 100 + rng.below(500)..]].concat() // a dropped run
                }
                2 => {
                    let at = rng.below(len - 600);
                    let run = &a[at..at + 100 + rng.below(500)];
                    [&a[..at], run, &a[at..]].concat() // a repeated run
                }
                _ => {
                    let mut b = a.clone();
                    for _ in 0..rng.below(200) {
                        let at = rng.below(b.len());
                        b[at] = alphabet[rng.below(alphabet.len())];
                    }
                    b
                }
            };
            let want = dp(&a, &b);
            assert_eq!(levenshtein(&a, &b), want, "round {round}");
            assert_eq!(levenshtein(&b, &a), want, "round {round}, swapped");
        }
    }

    /// A block dropped early or late, with scattered edits around it: the direction is chosen
    /// as meant (late blocks reversed), the pruned bands give the DP's distance either way, for
    /// tight and loose bands.
    #[test]
    fn blocks_early_and_late() {
        let mut rng = XorShift(0xb10c_4e7e);
        let alphabet = s("abcdefghijklmnopqrstuvwxyz ,.");
        for round in 0..16 {
            let len = 2500 + rng.below(800);
            let base: Vec<char> = (0..len).map(|_| alphabet[rng.below(alphabet.len())]).collect();
            let late = round % 2 == 1;
            let at = if late { len * 3 / 4 } else { len / 5 } + rng.below(100);
            let mut short = [&base[..at], &base[at + 200 + rng.below(300)..]].concat();
            let mut long = base.clone();
            for x in [&mut short, &mut long] {
                for _ in 0..rng.below(40) {
                    let i = rng.below(x.len());
                    x[i] = alphabet[rng.below(alphabet.len())];
                }
            }
            assert_eq!(block_late(&short, &long), late, "round {round}");
            let want = dp(&short, &long);
            let masks = Masks::new(&short);
            for k in [want, want + 40, 2 * want] {
                assert_eq!(banded(&short, &long, &masks, k), Ok(want), "round {round}, k {k}");
            }
            assert_eq!(levenshtein(&short, &long), want, "round {round}");
            assert_eq!(levenshtein_within(&long, &short, want / 2, want + 7), want, "round {round}");
        }
    }
}
