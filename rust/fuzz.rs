//! RapidFuzz-compatible `fuzz.ratio` and `fuzz.partial_ratio` over Unicode code points
//! (docs/checks.md §3.0.1–3.0.3), reproducing RapidFuzz 3.14.6 **bit for bit**.
//!
//! # What is computed
//!
//! * `LCS(a, b)`: length of the longest common subsequence, over code points (`char`s).
//! * [`ratio`]`(a, b)`: with `s = |a| + |b|` and the Indel distance `d = s - 2·LCS(a, b)`,
//!   `100.0` if `s == 0`, else `(1.0 - (d as f64) / (s as f64)) * 100.0`, evaluated in exactly
//!   that order in IEEE-754 double precision (no rounding afterwards).
//! * [`partial_ratio`]`(a, b)`: both empty → 100, exactly one empty → 0. Otherwise the shorter
//!   string `S` (length `m`) is the needle and the longer `L` (length `n`) the haystack (`a` is
//!   the needle when `|a| <= |b|`; the function is symmetric anyway). The score is the maximum
//!   of `ratio(S, T)` over the candidates `T`: every window `L[i..i+m]`, and every prefix
//!   `L[..k]` and suffix `L[n-k..]` with `1 <= k <= m-1`. When `m == n` the maximum also runs
//!   over `ratio(L, T')` for every prefix/suffix `T'` of `S` of length `1..m-1`.
//!
//! # Differences from upstream
//!
//! None intended: the returned `f64` equals `rapidfuzz.fuzz.ratio` / `fuzz.partial_ratio`
//! (3.14.6, `processor=None`, `score_cutoff=None`) bit for bit; this is checked against a
//! golden file produced by RapidFuzz (`tests/golden/fuzz_cases.jsonl`) and by a property test
//! against the installed RapidFuzz (`tests/test_fuzz_props.py`). The only domain difference
//! is that Rust `char`s cannot hold lone surrogates, which Python `str` can.
//!
//! # How (own implementation, written from the definition above)
//!
//! Why by hand: the `rapidfuzz` crate (RapidFuzz's Rust port) has `ratio` but no `partial_ratio`,
//! and its LCS is slower on our workloads: `cargo bench --bench kernels` (results checked
//! equal) has ours 1.3–1.4× faster on 3–8 k-character page pairs, and `partial_ratio` 14–143×
//! faster than the crate's cached comparator over every window (needles of 20–1,000 characters
//! in 8 k-character pages).
//!
//! * **LCS kernel**: the bit-parallel algorithm of Allison–Dix / Hyyrö (Crochemore et al.),
//!   one machine word per 64 needle characters: per text character `c`, `U = V & PM[c]`,
//!   `V = (V + U) | (V - U)`.
//!   The LCS grows by one exactly when the addition carries out of the top word, so it is
//!   tracked without popcounts. Needle characters get bit masks through a direct table
//!   (ASCII) or a small open-addressing table (other code points); characters absent from
//!   the needle leave `V` unchanged.
//! * **Prefix / suffix candidates**: one incremental pass over `L[..m-1]`, and one over the
//!   tail of `L` read backwards against the reversed needle, give all their LCS values.
//! * **Prefilter** (`O(n)`, vectorized, no allocation): finds an exact occurrence (score 100)
//!   and picks *seed* windows: those sharing the longest prefix / suffix with the needle
//!   (anchored on the first / last 3 characters), which is where a near occurrence usually is.
//!   Given the [`CharIndex`] of the haystack (the `*_in` methods), the same candidates are read
//!   off the positions of the rarest anchor character instead.
//! * **Voted seeds** (needles of 128+ characters, when the anchored seeds fall short): 32 pieces
//!   of the needle vote for window starts wherever they occur; the most voted start of each of
//!   the two best 64-wide ranges is evaluated next. A near copy whose ends were edited, or whose
//!   anchors occur everywhere (repetitive text), is then found before the scan, which would
//!   otherwise evaluate many windows under a low bound (a 5,000-character needle with 12 %
//!   indels in a 64 kB page: 1.2 s → 7 ms; 20,000 characters: 75 s → 0.6 s).
//! * **Windows** (`L[i..i+m]`), exact branch and bound: `best` is the largest LCS actually
//!   reached so far (seeds first). Scanning left to right, window `i` is evaluated exactly and
//!   the kernel then keeps reading `L[i+m..]`; while `F = LCS(S, L[i..i+m+e]) <= best`, every
//!   window `i+1..=i+e` lies inside that text, so its LCS is `<= F <= best` and it is skipped.
//!   The next window evaluated is the first one not covered. Windows starting with a character
//!   absent from `S` are skipped (`LCS(i) <= LCS(i+1)`), and the scan stops once `best`
//!   reaches `m - 1` when the prefilter ruled out an exact occurrence. With the haystack's
//!   index, when the bound after the seeds leaves few differences `d` (a window must reach
//!   `LCS >= m - d`), only windows holding one of `2d + 1` needle pieces verbatim, near its
//!   place, can; they are found from the index and the scan visits just those ranges.
//!   Only windows that cannot beat `best` are skipped, so the maximum, hence the score, is exact.
//! * **Cost**: typically 1–2 kernel steps per haystack character (each `⌈m/64⌉` words), plus
//!   the `O(n)` prefilter; worst case (periodic adversarial text) `O(n · m · ⌈m/64⌉)` word
//!   operations, the same order as RapidFuzz's own window search. Extra memory: the needle's
//!   masks (`O(σ·⌈m/64⌉)` words, σ = distinct needle characters; above 256 characters a sparse
//!   `O(m + σ)` layout replaces tables over 2 MiB); nothing is allocated per haystack
//!   character. [`ratio`] / [`lcs_len`] use the same kernel with the shorter string as the
//!   pattern: `O(min·max/64)` after stripping the common prefix and suffix (a remainder of up
//!   to 16 characters gets its masks by direct comparison instead of tables).
//! * [`PartialRatioNeedle`] compiles a needle once for many texts, and also offers
//!   [`score_if_at_least`](PartialRatioNeedle::score_if_at_least) and
//!   [`at_least`](PartialRatioNeedle::at_least) (early exit); with
//!   [`min_score_for_threshold`] the olmOCR comparison `score / 100.0 >= threshold` is
//!   answered exactly without computing the full maximum.

use crate::search::CharIndex;

// ---------------------------------------------------------------------------------------------
// Float formula (docs/checks.md §3.0.1): the order of operations is part of the contract.
// ---------------------------------------------------------------------------------------------

/// `ratio` value for an LCS of `lcs` between strings of lengths `la` and `lb`.
#[inline]
fn score_from_lcs(lcs: usize, la: usize, lb: usize) -> f64 {
    let s = la + lb;
    if s == 0 {
        return 100.0;
    }
    let d = s - 2 * lcs.min(la).min(lb);
    (1.0 - (d as f64) / (s as f64)) * 100.0
}

// ---------------------------------------------------------------------------------------------
// Dense alphabet of a needle.
// ---------------------------------------------------------------------------------------------

/// Maps the distinct characters of a needle to `0..sigma`; any other character maps to
/// `sigma` (the "absent" index, whose bit masks are all zero).
#[derive(Clone, Debug)]
struct Alphabet {
    ascii: [u32; 128],
    /// Open-addressing table for non-ASCII characters; key 0 marks an empty slot (a non-ASCII
    /// key is always >= 128). Length is a power of two and at least twice the entry count.
    keys: Vec<u32>,
    vals: Vec<u32>,
    shift: u32,
    sigma: u32,
}

impl Alphabet {
    /// Builds the alphabet and returns it with the needle translated to indices.
    fn new(needle: &[char]) -> (Alphabet, Vec<u32>) {
        let non_ascii = needle.iter().filter(|&&c| (c as u32) >= 128).count();
        let (keys, vals, shift) = if non_ascii == 0 {
            (Vec::new(), Vec::new(), 0)
        } else {
            let size = (2 * non_ascii).next_power_of_two().max(2);
            let bits = size.trailing_zeros();
            (vec![0u32; size], vec![0u32; size], 32 - bits)
        };
        let mut alpha = Alphabet { ascii: [u32::MAX; 128], keys, vals, shift, sigma: 0 };
        let mut idx = Vec::with_capacity(needle.len());
        for &c in needle {
            let x = c as u32;
            let id = if x < 128 {
                let slot = &mut alpha.ascii[x as usize];
                if *slot == u32::MAX {
                    *slot = alpha.sigma;
                    alpha.sigma += 1;
                }
                *slot
            } else {
                let mask = alpha.keys.len() - 1;
                let mut h = alpha.hash(x) & mask;
                loop {
                    let k = alpha.keys[h];
                    if k == x {
                        break alpha.vals[h];
                    }
                    if k == 0 {
                        alpha.keys[h] = x;
                        alpha.vals[h] = alpha.sigma;
                        alpha.sigma += 1;
                        break alpha.sigma - 1;
                    }
                    h = (h + 1) & mask;
                }
            };
            idx.push(id);
        }
        let sigma = alpha.sigma;
        for slot in alpha.ascii.iter_mut() {
            if *slot == u32::MAX {
                *slot = sigma;
            }
        }
        (alpha, idx)
    }

    #[inline(always)]
    fn hash(&self, x: u32) -> usize {
        (x.wrapping_mul(0x9E37_79B1) >> self.shift) as usize
    }

    /// Index of `c`, or `sigma` when `c` is not in the needle.
    #[inline(always)]
    fn get(&self, c: char) -> u32 {
        let x = c as u32;
        if x < 128 {
            return self.ascii[x as usize];
        }
        self.get_slow(x)
    }

    #[inline]
    fn get_slow(&self, x: u32) -> u32 {
        if self.keys.is_empty() {
            return self.sigma;
        }
        let mask = self.keys.len() - 1;
        let mut h = self.hash(x) & mask;
        // Terminates: the table is at most half full, so an empty slot exists.
        loop {
            let k = self.keys[h];
            if k == x {
                return self.vals[h];
            }
            if k == 0 {
                return self.sigma;
            }
            h = (h + 1) & mask;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Bit-parallel LCS kernels.
// ---------------------------------------------------------------------------------------------

/// A needle compiled into bit masks: LCS against a text fed one character at a time.
///
/// The state `V` has one bit per needle position (plus always-set padding bits above the
/// needle in the last word). A step is `U = V & PM[c]; V = (V + U) | (V ^ U)` (`V ^ U` equals
/// `V - U` because `U ⊆ V`). The LCS grows by one exactly when the addition carries out of the
/// top word: the highest run of ones (which reaches the top through the padding) then
/// contains a match and loses a one without another run gaining one. So the LCS is tracked
/// as the sum of the carries, without popcounts.
trait Kernel {
    type State: Clone;
    /// The state for the empty text.
    fn fresh(&self) -> Self::State;
    /// Feeds `c` (needle read forwards); returns the LCS increment (0 or 1).
    fn step(&self, st: &mut Self::State, c: char) -> usize;
    /// Feeds `c` against the reversed needle (for texts read backwards); returns the increment.
    fn step_rev(&self, st: &mut Self::State, c: char) -> usize;
    /// Whether `c` occurs in the needle.
    fn contains(&self, c: char) -> bool;
    /// Feeds `text` into `st`; returns the LCS gained.
    fn feed(&self, st: &mut Self::State, text: &[char]) -> usize {
        text.iter().map(|&c| self.step(st, c)).sum()
    }
    /// Feeds `text` into `st`, starting from LCS `f`, while the LCS stays `<= best`; returns
    /// how many characters were consumed before it would exceed `best` (`st` is then
    /// unspecified).
    fn extend(&self, st: &mut Self::State, mut f: usize, best: usize, text: &[char]) -> usize {
        for (e, &c) in text.iter().enumerate() {
            f += self.step(st, c);
            if f > best {
                return e;
            }
        }
        text.len()
    }
}

/// Adds `pm` into `v` (one step over `W` words); returns the carry out of the top word.
#[inline(always)]
fn advance<const W: usize>(v: &mut [u64; W], pm: &[u64; W]) -> usize {
    // The u128 sum makes the compiler emit an add-with-carry chain.
    let mut carry = 0u128;
    for j in 0..W {
        let vj = v[j];
        let u = vj & pm[j];
        let sum = u128::from(vj) + u128::from(u) + carry;
        carry = sum >> 64;
        v[j] = (sum as u64) | (vj ^ u);
    }
    carry as usize
}

/// Needles of up to `64·W` characters: the state is a `[u64; W]` on the stack. A text
/// character's masks are found through the [`Alphabet`] (a direct table for ASCII).
#[derive(Clone, Debug)]
struct Fixed<const W: usize> {
    alpha: Alphabet,
    /// Rows by alphabet index (`sigma + 1` rows, the last one all zero).
    fwd: Vec<[u64; W]>,
    rev: Vec<[u64; W]>,
    /// The forward rows of the ASCII characters by code point (one lookup instead of two), for
    /// needles compiled once and run over long texts ([`Fixed::with_direct_ascii`]).
    direct: Option<Box<[[u64; W]; 128]>>,
}

impl<const W: usize> Fixed<W> {
    fn new(alpha: Alphabet, idx: &[u32]) -> Self {
        let m = idx.len();
        let rows = alpha.sigma as usize + 1;
        let mut fwd = vec![[0u64; W]; rows];
        let mut rev = vec![[0u64; W]; rows];
        for (j, &c) in idx.iter().enumerate() {
            let jr = m - 1 - j;
            if let Some(w) = fwd.get_mut(c as usize).and_then(|r| r.get_mut(j / 64)) {
                *w |= 1u64 << (j % 64);
            }
            if let Some(w) = rev.get_mut(c as usize).and_then(|r| r.get_mut(jr / 64)) {
                *w |= 1u64 << (jr % 64);
            }
        }
        Fixed { alpha, fwd, rev, direct: None }
    }

    /// Adds the direct ASCII table.
    fn with_direct_ascii(mut self) -> Self {
        let mut direct = Box::new([[0u64; W]; 128]);
        for (c, row) in direct.iter_mut().enumerate() {
            *row = Self::row(&self.fwd, &self.alpha, char::from(c as u8));
        }
        self.direct = Some(direct);
        self
    }

    /// Runs `f` on the forward masks of each character of `text` until it returns `false`;
    /// returns how many characters were accepted.
    #[inline(always)]
    fn each_row(&self, text: &[char], mut f: impl FnMut(&[u64; W]) -> bool) -> usize {
        match &self.direct {
            Some(direct) => {
                for (e, &c) in text.iter().enumerate() {
                    let x = c as u32;
                    let pm = if x < 128 { direct[x as usize] } else { Self::row(&self.fwd, &self.alpha, c) };
                    if !f(&pm) {
                        return e;
                    }
                }
            }
            None => {
                for (e, &c) in text.iter().enumerate() {
                    if !f(&Self::row(&self.fwd, &self.alpha, c)) {
                        return e;
                    }
                }
            }
        }
        text.len()
    }

    #[inline(always)]
    fn row(rows: &[[u64; W]], alpha: &Alphabet, c: char) -> [u64; W] {
        rows.get(alpha.get(c) as usize).copied().unwrap_or([0u64; W])
    }
}

impl<const W: usize> Kernel for Fixed<W> {
    type State = [u64; W];

    #[inline(always)]
    fn fresh(&self) -> [u64; W] {
        [u64::MAX; W]
    }

    #[inline(always)]
    fn step(&self, st: &mut [u64; W], c: char) -> usize {
        advance(st, &Self::row(&self.fwd, &self.alpha, c))
    }

    #[inline(always)]
    fn step_rev(&self, st: &mut [u64; W], c: char) -> usize {
        advance(st, &Self::row(&self.rev, &self.alpha, c))
    }

    #[inline(always)]
    fn contains(&self, c: char) -> bool {
        self.alpha.get(c) < self.alpha.sigma
    }

    // The state stays in registers over the whole text.
    #[inline(always)]
    fn feed(&self, st: &mut [u64; W], text: &[char]) -> usize {
        let mut v = *st;
        let mut l = 0usize;
        self.each_row(text, |pm| {
            l += advance(&mut v, pm);
            true
        });
        *st = v;
        l
    }

    #[inline(always)]
    fn extend(&self, st: &mut [u64; W], mut f: usize, best: usize, text: &[char]) -> usize {
        let mut v = *st;
        let e = self.each_row(text, |pm| {
            f += advance(&mut v, pm);
            f <= best
        });
        *st = v;
        e
    }
}

/// Needles longer than 256 characters: heap state of `words` words. Masks are a dense table
/// when it is small (`(σ+1)·words` words, up to [`DENSE_LIMIT`]), otherwise *sparse*: for each
/// alphabet index only its non-zero mask words, as `(word index, mask)` in increasing word
/// order, so memory stays `O(m + σ)` whatever the alphabet (a dense table for a long text with
/// thousands of distinct characters would need gigabytes).
///
/// A sparse step only touches the words from the first non-zero mask word of `c` up to where
/// the carry dies after its last one: the other words have `U = 0` and no incoming carry, so
/// `V` is unchanged there.
#[derive(Clone, Debug)]
struct Dyn {
    alpha: Alphabet,
    words: usize,
    fwd: Masks,
    rev: Masks,
}

/// Largest dense mask table, in words (2 MiB).
const DENSE_LIMIT: usize = 1 << 18;

#[derive(Clone, Debug)]
enum Masks {
    /// `words` words per alphabet index.
    Dense(Vec<u64>),
    Sparse(SparseMasks),
}

impl Masks {
    fn new(idx: &[u32], sigma: u32, words: usize, limit: usize, pos: impl Fn(usize) -> usize) -> Self {
        let rows = sigma as usize + 1;
        match rows.checked_mul(words) {
            Some(size) if size <= limit => {
                let mut tab = vec![0u64; size];
                for (j, &c) in idx.iter().enumerate() {
                    let p = pos(j);
                    if let Some(w) = tab.get_mut(c as usize * words + p / 64) {
                        *w |= 1u64 << (p % 64);
                    }
                }
                Masks::Dense(tab)
            }
            _ => Masks::Sparse(SparseMasks::new(idx, sigma, pos)),
        }
    }
}

/// Compressed rows: the entries of alphabet index `c` are `ent[start[c]..start[c + 1]]`.
#[derive(Clone, Debug)]
struct SparseMasks {
    start: Vec<usize>,
    ent: Vec<(usize, u64)>,
}

impl SparseMasks {
    /// `pos[j]` is the bit position of needle character `j` (`j` or `m - 1 - j`).
    fn new(idx: &[u32], sigma: u32, pos: impl Fn(usize) -> usize) -> Self {
        let mut raw: Vec<(u32, usize, u64)> = idx
            .iter()
            .enumerate()
            .map(|(j, &c)| {
                let p = pos(j);
                (c, p / 64, 1u64 << (p % 64))
            })
            .collect();
        raw.sort_unstable_by_key(|&(c, w, _)| (c, w));
        let rows = sigma as usize + 1;
        let mut start = vec![0usize; rows + 1];
        let mut ent: Vec<(usize, u64)> = Vec::with_capacity(raw.len());
        let mut last: Option<(u32, usize)> = None;
        for (c, w, bit) in raw {
            if last == Some((c, w)) {
                if let Some(e) = ent.last_mut() {
                    e.1 |= bit;
                }
            } else {
                ent.push((w, bit));
                if let Some(x) = start.get_mut(c as usize + 1) {
                    *x += 1;
                }
                last = Some((c, w));
            }
        }
        for r in 0..rows {
            start[r + 1] += start[r];
        }
        SparseMasks { start, ent }
    }

    fn row(&self, c: u32) -> &[(usize, u64)] {
        let c = c as usize;
        match (self.start.get(c), self.start.get(c + 1)) {
            (Some(&a), Some(&b)) => self.ent.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    }
}

impl Dyn {
    fn new(alpha: Alphabet, idx: &[u32]) -> Self {
        Self::with_dense_limit(alpha, idx, DENSE_LIMIT)
    }

    fn with_dense_limit(alpha: Alphabet, idx: &[u32], limit: usize) -> Self {
        let m = idx.len();
        let words = m.div_ceil(64).max(1);
        let fwd = Masks::new(idx, alpha.sigma, words, limit, |j| j);
        let rev = Masks::new(idx, alpha.sigma, words, limit, |j| m - 1 - j);
        Dyn { alpha, words, fwd, rev }
    }

    #[inline]
    fn advance(&self, v: &mut [u64], masks: &Masks, c: char) -> usize {
        let id = self.alpha.get(c);
        if id >= self.alpha.sigma {
            return 0; // absent from the needle: all-zero masks leave the state unchanged
        }
        match masks {
            Masks::Dense(tab) => {
                let base = id as usize * self.words;
                match tab.get(base..base + self.words) {
                    Some(pm) => Self::advance_dense(v, pm),
                    None => 0,
                }
            }
            Masks::Sparse(sp) => Self::advance_sparse(v, sp.row(id)),
        }
    }

    #[inline]
    fn advance_dense(v: &mut [u64], pm: &[u64]) -> usize {
        let mut carry = 0u128;
        for (vw, &p) in v.iter_mut().zip(pm) {
            let vj = *vw;
            let u = vj & p;
            let sum = u128::from(vj) + u128::from(u) + carry;
            carry = sum >> 64;
            *vw = (sum as u64) | (vj ^ u);
        }
        carry as usize
    }

    #[inline]
    fn advance_sparse(v: &mut [u64], row: &[(usize, u64)]) -> usize {
        let Some(&(mut w, _)) = row.first() else { return 0 };
        let mut k = 0usize;
        let mut carry = 0u128;
        while let Some(vw) = v.get_mut(w) {
            let p = match row.get(k) {
                Some(&(ew, mask)) if ew == w => {
                    k += 1;
                    mask
                }
                _ => 0,
            };
            let vj = *vw;
            let u = vj & p;
            let sum = u128::from(vj) + u128::from(u) + carry;
            carry = sum >> 64;
            *vw = (sum as u64) | (vj ^ u);
            w += 1;
            if carry == 0 {
                // Nothing reaches the words before the next non-zero mask word.
                match row.get(k) {
                    Some(&(next, _)) => w = next,
                    None => return 0,
                }
            }
        }
        carry as usize
    }
}

impl Kernel for Dyn {
    type State = Vec<u64>;
    fn fresh(&self) -> Vec<u64> {
        vec![u64::MAX; self.words]
    }
    fn step(&self, st: &mut Vec<u64>, c: char) -> usize {
        self.advance(st, &self.fwd, c)
    }
    fn step_rev(&self, st: &mut Vec<u64>, c: char) -> usize {
        self.advance(st, &self.rev, c)
    }
    fn contains(&self, c: char) -> bool {
        self.alpha.get(c) < self.alpha.sigma
    }
}

/// A kernel of the right width for the needle length.
#[derive(Clone, Debug)]
enum AnyKernel {
    W1(Fixed<1>),
    W2(Fixed<2>),
    W3(Fixed<3>),
    W4(Fixed<4>),
    Wide(Dyn),
}

impl AnyKernel {
    fn new(alpha: Alphabet, idx: &[u32]) -> Self {
        match idx.len().div_ceil(64) {
            0 | 1 => AnyKernel::W1(Fixed::new(alpha, idx)),
            2 => AnyKernel::W2(Fixed::new(alpha, idx)),
            3 => AnyKernel::W3(Fixed::new(alpha, idx)),
            4 => AnyKernel::W4(Fixed::new(alpha, idx)),
            _ => AnyKernel::Wide(Dyn::new(alpha, idx)),
        }
    }
}

/// Runs `$body` with `$k` bound to the concrete kernel inside `$any`.
macro_rules! with_kernel {
    ($any:expr, $k:ident => $body:expr) => {
        match $any {
            AnyKernel::W1($k) => $body,
            AnyKernel::W2($k) => $body,
            AnyKernel::W3($k) => $body,
            AnyKernel::W4($k) => $body,
            AnyKernel::Wide($k) => $body,
        }
    };
}

/// `LCS(needle, text)`.
fn kernel_lcs<K: Kernel>(k: &K, text: &[char]) -> usize {
    let mut st = k.fresh();
    let mut l = 0usize;
    for &c in text {
        l += k.step(&mut st, c);
    }
    l
}

// ---------------------------------------------------------------------------------------------
// Public LCS / Indel helpers and `ratio`.
// ---------------------------------------------------------------------------------------------

/// Patterns up to this length get their masks by direct comparison in [`lcs_len`].
const TINY: usize = 16;

/// Length of the longest common subsequence of `a` and `b` (over code points).
///
/// Strips the common prefix and suffix, then runs the bit-parallel kernel with the shorter
/// remainder as the pattern: `O(|a| + |b| + min·max/64)`.
pub fn lcs_len(a: &[char], b: &[char]) -> usize {
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[pre..], &b[pre..]);
    let suf = a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[..a.len() - suf], &b[..b.len() - suf]);
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.is_empty() {
        return pre + suf;
    }
    if short.len() <= TINY {
        // A tiny pattern: each text character's mask is built by comparison, which costs less
        // than compiling the alphabet and mask tables.
        let mut v = [u64::MAX];
        let mut l = pre + suf;
        for &c in long {
            let pm = short.iter().enumerate().fold(0u64, |acc, (j, &x)| acc | (u64::from(x == c) << j));
            l += advance(&mut v, &[pm]);
        }
        return l;
    }
    let (alpha, idx) = Alphabet::new(short);
    let kernel = AnyKernel::new(alpha, &idx);
    pre + suf + with_kernel!(&kernel, k => kernel_lcs(k, long))
}

/// Indel distance (insertions and deletions only): `|a| + |b| - 2·LCS(a, b)`.
pub fn indel_distance(a: &[char], b: &[char]) -> usize {
    a.len() + b.len() - 2 * lcs_len(a, b)
}

/// `fuzz.ratio(a, b)`: returns the same f64 RapidFuzz returns (0..=100), bit for bit.
pub fn ratio(a: &[char], b: &[char]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 100.0;
    }
    score_from_lcs(lcs_len(a, b), a.len(), b.len())
}

// ---------------------------------------------------------------------------------------------
// partial_ratio
// ---------------------------------------------------------------------------------------------

/// `fuzz.partial_ratio(a, b)`: same f64 as RapidFuzz, bit for bit.
pub fn partial_ratio(a: &[char], b: &[char]) -> f64 {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    PartialRatioNeedle::new(short).score(long)
}

/// A pre-compiled `partial_ratio` query: build once, score against many texts.
///
/// `PartialRatioNeedle::new(q).score(t) == partial_ratio(q, t)` for every `t` (bit for bit),
/// including when `t` is shorter than `q` (the roles of needle and haystack then flip, as in
/// RapidFuzz) and when both have the same length.
///
/// The compiled kernel is built on first use, so a suite loads in time and memory proportional
/// to its text even with huge queries (a 50 MB `present` text: its kernel, ~40 bytes a
/// character, is only built if a page longer than the query comes to be searched with it).
#[derive(Clone, Debug)]
pub struct PartialRatioNeedle {
    needle: Vec<char>,
    direct_ascii: bool,
    kernel: std::sync::OnceLock<AnyKernel>,
}

impl PartialRatioNeedle {
    /// Compiles `needle` (any length, possibly empty).
    pub fn new(needle: &[char]) -> Self {
        PartialRatioNeedle { needle: needle.to_vec(), direct_ascii: false, kernel: std::sync::OnceLock::new() }
    }

    /// [`new`](Self::new) for a needle kept to search many long texts: needles of up to 256
    /// characters also get a table of masks by ASCII code point (1–4 KiB), which makes each
    /// text character cost one lookup instead of two. The results are the same.
    pub fn reusable(needle: &[char]) -> Self {
        PartialRatioNeedle { direct_ascii: true, ..Self::new(needle) }
    }

    fn kernel(&self) -> &AnyKernel {
        self.kernel.get_or_init(|| {
            let (alpha, idx) = Alphabet::new(&self.needle);
            let kernel = AnyKernel::new(alpha, &idx);
            if !self.direct_ascii {
                return kernel;
            }
            match kernel {
                AnyKernel::W1(k) => AnyKernel::W1(k.with_direct_ascii()),
                AnyKernel::W2(k) => AnyKernel::W2(k.with_direct_ascii()),
                AnyKernel::W3(k) => AnyKernel::W3(k.with_direct_ascii()),
                AnyKernel::W4(k) => AnyKernel::W4(k.with_direct_ascii()),
                wide @ AnyKernel::Wide(_) => wide,
            }
        })
    }

    /// The needle this was compiled from.
    pub fn needle(&self) -> &[char] {
        &self.needle
    }

    /// `partial_ratio(needle, text)`, bit for bit equal to RapidFuzz.
    pub fn score(&self, text: &[char]) -> f64 {
        self.eval(text, None, 0.0, false, true)
    }

    /// `Some(partial_ratio(needle, text))` (exact) when it is `>= min_score`, else `None`.
    /// Faster than [`score`](Self::score) when `min_score` is high, since windows that cannot
    /// reach it are never evaluated.
    ///
    /// This is the plain definition, **not** RapidFuzz's `score_cutoff` argument, which has
    /// float quirks at the boundary (it can return 0 when the score equals the cutoff, and can
    /// return a score one ulp below it); olmOCR never passes `score_cutoff`.
    pub fn score_if_at_least(&self, text: &[char], min_score: f64) -> Option<f64> {
        self.score_if_at_least_in(text, None, min_score)
    }

    /// [`score_if_at_least`](Self::score_if_at_least), given optionally the [`CharIndex`] of
    /// `text` (the same result, found faster; see [`decide_in`](Self::decide_in)).
    pub fn score_if_at_least_in(&self, text: &[char], index: Option<&CharIndex>, min_score: f64) -> Option<f64> {
        let s = self.eval(text, index, min_score, false, false);
        (s >= min_score).then_some(s)
    }

    /// Whether `partial_ratio(needle, text) >= min_score`, stopping at the first candidate
    /// substring that reaches `min_score`. For the olmOCR test `score / 100.0 >= threshold`,
    /// pass `min_score_for_threshold(threshold)`.
    pub fn at_least(&self, text: &[char], min_score: f64) -> bool {
        self.eval(text, None, min_score, true, false) >= min_score
    }

    /// `Ok(())` when `partial_ratio(needle, text) >= min_score` (stopping at the first candidate
    /// that reaches it, as [`at_least`](Self::at_least)); otherwise `Err` with the exact score.
    /// One pass where `at_least` then [`score`](Self::score) would take two.
    pub fn decide(&self, text: &[char], min_score: f64) -> Result<(), f64> {
        self.decide_in(text, None, min_score)
    }

    /// [`decide`](Self::decide), given optionally `index = CharIndex::new(text)` (built once
    /// for many needles searched in the same text; it must be the index of exactly `text`).
    /// The result is the same with or without it: the index only lets the search look for
    /// exact occurrences and near-occurrence windows from the positions of rare needle
    /// characters instead of scanning every window.
    pub fn decide_in(&self, text: &[char], index: Option<&CharIndex>, min_score: f64) -> Result<(), f64> {
        let s = self.eval(text, index, min_score, true, true);
        if s >= min_score {
            Ok(())
        } else {
            Err(s)
        }
    }

    /// Returns the exact score when it is `>= cutoff` (with `early`: some candidate score
    /// `>= cutoff`, not necessarily the largest); otherwise a value below `cutoff`, which is the
    /// exact score when `exact_below`.
    fn eval(&self, text: &[char], index: Option<&CharIndex>, cutoff: f64, early: bool, exact_below: bool) -> f64 {
        let m = self.needle.len();
        let n = text.len();
        if m == 0 && n == 0 {
            return 100.0;
        }
        if m == 0 || n == 0 {
            return 0.0;
        }
        if n < m {
            // The shorter string is always the needle.
            return PartialRatioNeedle::new(text).eval(&self.needle, None, cutoff, early, exact_below);
        }
        with_kernel!(self.kernel(), k => {
            if n == m {
                // Equal lengths: the one window, the affixes of `text` against the needle,
                // and (other direction) the affixes of the needle against `text`.
                let full = kernel_lcs(k, text);
                if full == m {
                    return 100.0;
                }
                let mine = score_from_lcs(full, m, m).max(best_affix(k, m, text));
                if early && mine >= cutoff {
                    return mine;
                }
                let other = PartialRatioNeedle::new(text);
                let theirs = with_kernel!(other.kernel(), k2 => best_affix(k2, m, &self.needle));
                mine.max(theirs)
            } else {
                score_longer(k, &self.needle, text, index, cutoff, early, exact_below)
            }
        })
    }
}

/// The smallest `f64` `s` with `s / 100.0 >= threshold` (IEEE division), so that for every
/// score `s`: `s / 100.0 >= threshold` ⇔ `s >= min_score_for_threshold(threshold)`.
/// Returns `0.0` when every score passes (`threshold <= 0`) and `f64::INFINITY` when none does
/// (`threshold > 1` or NaN).
pub fn min_score_for_threshold(threshold: f64) -> f64 {
    if threshold.is_nan() || threshold > 1.0 {
        return f64::INFINITY;
    }
    if threshold <= 0.0 {
        return 0.0;
    }
    // 0 < threshold <= 1: the answer lies in (0, 100]; walk a few ulps from the estimate.
    let up = |x: f64| f64::from_bits(x.to_bits() + 1);
    let down = |x: f64| f64::from_bits(x.to_bits() - 1);
    let mut s = threshold * 100.0;
    while s / 100.0 < threshold {
        s = up(s);
    }
    while s > 0.0 && down(s) / 100.0 >= threshold {
        s = down(s);
    }
    s
}

/// Max of `ratio(needle, T)` over the prefixes and suffixes `T` of `hay` of length `1..m-1`
/// (`m` = needle length, `hay.len() >= m - 1`), or 0 when there are none.
fn best_affix<K: Kernel>(k: &K, m: usize, hay: &[char]) -> f64 {
    let k_max = m.saturating_sub(1).min(hay.len());
    let mut best = 0.0f64;
    let mut st = k.fresh();
    // For a fixed LCS the score falls as the affix grows, so only lengths where the LCS just
    // grew can hold the maximum.
    let mut l = 0usize;
    for (j, &c) in hay[..k_max].iter().enumerate() {
        let inc = k.step(&mut st, c);
        l += inc;
        if inc != 0 {
            best = best.max(score_from_lcs(l, m, j + 1));
        }
    }
    let mut st = k.fresh();
    let mut l = 0usize;
    for (j, &c) in hay[hay.len() - k_max..].iter().rev().enumerate() {
        let inc = k.step_rev(&mut st, c);
        l += inc;
        if inc != 0 {
            best = best.max(score_from_lcs(l, m, j + 1));
        }
    }
    best
}

/// `partial_ratio` when `hay.len() > needle.len() >= 1`, under the contract of
/// [`PartialRatioNeedle::eval`].
fn score_longer<K: Kernel>(
    k: &K,
    needle: &[char],
    hay: &[char],
    index: Option<&CharIndex>,
    cutoff: f64,
    early: bool,
    exact_below: bool,
) -> f64 {
    let m = needle.len();
    let pre = match index {
        Some(index) => prefilter_indexed(hay, needle, index),
        None => prefilter(hay, needle),
    };
    if pre.exact == Some(true) {
        return 100.0;
    }
    let affix = best_affix(k, m, hay);
    if early && affix >= cutoff {
        return affix;
    }
    // A window must reach an LCS above `floor` to beat the best prefix/suffix, and at least
    // `pass` to reach the cutoff (`m + 1`: no window can).
    let mut floor = 0usize;
    while floor < m && score_from_lcs(floor + 1, m, m) <= affix {
        floor += 1;
    }
    let pass = (0..=m).find(|&l| score_from_lcs(l, m, m) >= cutoff).unwrap_or(m + 1);
    // Unless the exact score is wanted below the cutoff, windows that cannot reach it need
    // no evaluation either.
    let floor = if exact_below { floor } else { floor.max(pass.saturating_sub(1)) };
    let ceiling = if pre.exact == Some(false) { m - 1 } else { m };
    let stop = if early { ceiling.min(pass) } else { ceiling };
    let pieces = index.map(|index| (needle, index));
    match best_window(k, needle, hay, floor, &pre.seeds, stop, pieces) {
        Some(l) => affix.max(score_from_lcs(l, m, m)),
        None => affix,
    }
}

/// The maximum LCS of the needle (length `m`) with the windows `hay[i..i+m]`, if it exceeds
/// `floor`; `None` otherwise. Requires `hay.len() >= m >= 1`. `seeds` are windows to evaluate
/// first. The search stops as soon as some window reaches `stop` (`m`, or `m - 1` when no
/// window equals the needle, or a lower target when any passing window will do).
///
/// Scan from left to right, keeping `best` (an LCS actually reached by some window, or
/// `floor`). At window `i` the kernel computes `l = LCS(needle, hay[i..i+m])` exactly and then
/// keeps reading `hay[i+m..]`: as long as `F = LCS(needle, hay[i..i+m+e]) <= best`, every
/// window `i+1..=i+e` (a substring of that text) is at most `best` and needs no evaluation.
/// The next evaluated window is the first one not covered. Windows starting with a character
/// absent from the needle are skipped too (`LCS(i) <= LCS(i+1)` then). With `pieces` (the
/// needle and the [`CharIndex`] of `hay`), windows outside [`candidate_windows`] for the
/// bound reached by the seeds are skipped as well. Only windows that cannot exceed the
/// current `best` are ever skipped, so the result is exact.
fn best_window<K: Kernel>(
    k: &K,
    needle: &[char],
    hay: &[char],
    floor: usize,
    seeds: &[Option<usize>],
    stop: usize,
    pieces: Option<(&[char], &CharIndex)>,
) -> Option<usize> {
    let m = needle.len();
    let n = hay.len();
    let nw = n + 1 - m;
    let mut best = floor;
    let mut found = None;
    let mut tried: Vec<usize> = Vec::new();
    let mut evaluate = |p: usize, best: &mut usize, found: &mut Option<usize>| {
        if tried.contains(&p) {
            return;
        }
        tried.push(p);
        let Some(w) = hay.get(p..p + m) else { return };
        let l = kernel_lcs(k, w);
        if l > *best {
            *best = l;
            *found = Some(l);
        }
    };
    for &p in seeds.iter().flatten() {
        evaluate(p, &mut best, &mut found);
    }
    // Long needles: when the anchored seeds fall short, a scan with a low bound is expensive
    // (every window costs up to m kernel steps), so first try the windows most pieces of the
    // needle vote for; they lift the bound when the needle nearly occurs with its ends edited
    // or in text whose anchors occur everywhere.
    if best < stop && m >= VOTE_MIN_NEEDLE {
        for p in voted_windows(needle, hay) {
            evaluate(p, &mut best, &mut found);
        }
    }
    if best >= stop {
        return found;
    }
    // Only windows reaching `best + 1` matter from here on (`best` never decreases).
    let ranges = pieces.and_then(|(needle, index)| candidate_windows(needle, hay, index, m - best - 1));
    let ranges = ranges.as_deref();
    let mut r = 0usize;
    let mut i = 0usize;
    while i < nw && best < stop {
        if let Some(ranges) = ranges {
            // Move `i` into the next candidate range (none left: done).
            while ranges.get(r).is_some_and(|&(_, end)| end <= i) {
                r += 1;
            }
            match ranges.get(r) {
                Some(&(start, _)) => i = i.max(start),
                None => break,
            }
        }
        while i + 1 < nw && !hay.get(i).is_some_and(|&c| k.contains(c)) {
            i += 1;
        }
        let mut st = k.fresh();
        let l = feed(k, &mut st, &hay[i..i + m]);
        if l > best {
            best = l;
            found = Some(l);
            if l >= stop {
                break;
            }
        }
        let e = extend(k, &mut st, l, best, &hay[i + m..]);
        i += e + 1;
    }
    found
}

/// Needles from this length on get voted seeds ([`voted_windows`]).
const VOTE_MIN_NEEDLE: usize = 128;

/// Up to two window starts where a near copy of `needle` most likely sits in `hay`: 32 pieces of
/// 8 characters, spread over the needle, vote for `p - o` wherever one occurs (piece at needle
/// offset `o`, found at `p`); in the two disjoint ranges of 64 starts with most votes (at least
/// 3), the most voted start is returned. Only a
/// choice of where to look first: the windows are then evaluated exactly, so results never
/// depend on it. `O(n)` hashing; stops voting (returns nothing) on text so repetitive that the
/// pieces occur more than `4n` times. Requires `hay.len() >= needle.len() >= VOTE_MIN_NEEDLE`.
fn voted_windows(needle: &[char], hay: &[char]) -> Vec<usize> {
    const Q: usize = 8;
    const PIECES: usize = 32;
    let (m, n) = (needle.len(), hay.len());
    let nw = n + 1 - m;
    let hash =
        |w: &[char]| w.iter().fold(0u64, |h, &c| (h.rotate_left(5) ^ c as u64).wrapping_mul(0x517c_c1b7_2722_0a95));
    let mut pieces: std::collections::HashMap<u64, Vec<usize>> = std::collections::HashMap::new();
    for j in 0..PIECES {
        let o = j * (m - Q) / (PIECES - 1);
        pieces.entry(hash(&needle[o..o + Q])).or_default().push(o);
    }
    let mut votes = vec![0u32; nw];
    let mut work = 4 * n;
    for p in 0..=n - Q {
        let Some(offsets) = pieces.get(&hash(&hay[p..p + Q])) else { continue };
        for &o in offsets {
            if hay[p..p + Q] != needle[o..o + Q] {
                continue;
            }
            let Some(w) = work.checked_sub(1) else { return Vec::new() };
            work = w;
            if let Some(start) = p.checked_sub(o).filter(|&s| s < nw) {
                votes[start] += 1;
            }
        }
    }
    // Insertions and deletions make the pieces of one near copy vote for neighbouring starts
    // (drifting by the edits before them): rank ranges of DRIFT starts by their total votes, and
    // in each of the two best (disjoint) ranges try its most voted start.
    const DRIFT: usize = 64;
    let mut sum: u32 = votes[..DRIFT.min(nw)].iter().sum();
    let mut sums: Vec<u32> = vec![sum];
    for lo in 1..nw.saturating_sub(DRIFT - 1) {
        sum = sum + votes[lo + DRIFT - 1] - votes[lo - 1];
        sums.push(sum);
    }
    let mut out: Vec<usize> = Vec::new();
    let mut taken: Option<usize> = None;
    for _ in 0..2 {
        let best = (0..sums.len())
            .filter(|&lo| taken.is_none_or(|t| lo.abs_diff(t) >= DRIFT))
            .map(|lo| (sums[lo], usize::MAX - lo))
            .max()
            .map(|(total, at)| (total, usize::MAX - at));
        let Some((_, lo)) = best.filter(|&(total, _)| total >= 3) else { break };
        taken = Some(lo);
        let (_, at) = (lo..(lo + DRIFT).min(nw)).map(|i| (votes[i], usize::MAX - i)).max().expect("non-empty range");
        out.push(usize::MAX - at);
    }
    out
}

/// The window starts `i` (as sorted, disjoint half-open ranges) where `LCS(needle,
/// hay[i..i+m]) >= m - d` is possible, found through the `index` of `hay`; `None` when that
/// filter would not pay (too many pieces, or too many occurrences: the caller scans all
/// windows). Requires `hay.len() >= m = needle.len() >= 1`.
///
/// Why it is a superset: take a common subsequence of length `L >= m - d` of the needle and
/// the window; at most `m - L <= d` needle characters and `m - L` window characters are left
/// out. Cut the needle into `2d + 1` consecutive pieces. A piece whose characters are all
/// matched, to consecutive window positions, occurs verbatim in the window. Each left-out
/// needle character spoils at most one piece, and so does each left-out window character
/// (it lies between two consecutive matched pairs, which split at most one piece), so some
/// piece occurs verbatim. If that piece starts at needle offset `o` and at `hay` position `p`,
/// its window offset `p - i` differs from `o` by the left-out window characters before it
/// minus the left-out needle characters before it, so `|p - i - o| <= d`; and the window holds
/// it whole: `p + len - m <= i <= p`.
fn candidate_windows(needle: &[char], hay: &[char], index: &CharIndex, d: usize) -> Option<Vec<(usize, usize)>> {
    let (m, n) = (needle.len(), hay.len());
    let nw = n.checked_sub(m)? + 1;
    let parts = 2 * d + 1;
    // Pieces of one character match too often to filter anything.
    if m / parts < 2 {
        return None;
    }
    // Each range costs about one window evaluation (m kernel steps) plus its width: give up
    // once the ranges would cost a good part of a full scan (about n steps), or once
    // verifying piece occurrences has cost as much.
    let max_ranges = n / (2 * (m + parts)) + 1;
    let mut budget = n + 64;
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for j in 0..parts {
        let (o, end) = (j * m / parts, (j + 1) * m / parts);
        let piece = &needle[o..end];
        // Anchor on the piece's rarest character in this text.
        let (r, positions) =
            piece.iter().enumerate().map(|(r, &c)| (r, index.positions(c))).min_by_key(|(_, v)| v.len())?;
        for &x in positions {
            let Some(p) = (x as usize).checked_sub(r) else { continue };
            if p + piece.len() > n {
                break;
            }
            budget = budget.checked_sub(piece.len())?;
            if !same(hay.get(p..p + piece.len()), piece) {
                continue;
            }
            let lo = (p.saturating_sub(o + d)).max((p + piece.len()).saturating_sub(m));
            let hi = (p + d + 1).saturating_sub(o).min(p + 1).min(nw);
            if lo < hi {
                ranges.push((lo, hi));
                if ranges.len() > 4 * max_ranges {
                    return None;
                }
            }
        }
    }
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match merged.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    (merged.len() <= max_ranges).then_some(merged)
}

/// [`Kernel::feed`], as its own function for profiles.
#[inline(never)]
fn feed<K: Kernel>(k: &K, st: &mut K::State, text: &[char]) -> usize {
    k.feed(st, text)
}

/// [`Kernel::extend`], as its own function for profiles.
#[inline(never)]
fn extend<K: Kernel>(k: &K, st: &mut K::State, f: usize, best: usize, text: &[char]) -> usize {
    k.extend(st, f, best, text)
}

/// What the exact-occurrence prefilter learned.
struct Prefilter {
    /// `Some(true)`: the needle occurs in the haystack; `Some(false)`: it does not; `None`:
    /// the verification budget ran out (highly repetitive input), unknown.
    exact: Option<bool>,
    /// Start of the window that agrees with the needle on the longest prefix, and of the one
    /// that agrees on the longest suffix: good first windows to evaluate, since they raise the
    /// bound early when the needle nearly occurs (even with insertions or deletions).
    seeds: [Option<usize>; 2],
}

/// Number of leading (trailing) characters a window must share with the needle to become a
/// prefix (suffix) seed candidate.
const ANCHOR: usize = 3;

/// Looks for `needle` (non-empty, not longer than `hay`) as a contiguous substring of `hay`.
///
/// A window `hay[p..p+m]` is a candidate when its first `g = min(3, m)` characters equal the
/// needle's (prefix anchor) or its last `g` do (suffix anchor); the anchors are tested in
/// blocks of positions by a branch-free loop that the compiler vectorizes. An exact occurrence
/// has both anchors and is confirmed by full comparison. Candidates are extended to the
/// longest common prefix / suffix to pick the seeds. Verification work is capped at a linear
/// budget, so the pass is `O(n + m)` even on repetitive inputs.
fn prefilter(hay: &[char], needle: &[char]) -> Prefilter {
    let m = needle.len();
    let mut out = Prefilter { exact: Some(false), seeds: [None, None] };
    if m == 0 || hay.len() < m {
        out.exact = Some(m == 0);
        return out;
    }
    let g = ANCHOR.min(m);
    let nw = hay.len() - m + 1;
    let p0 = needle[0];
    let p1 = needle[1.min(g - 1)];
    let p2 = needle[g - 1];
    let s0 = needle[m - g];
    let s1 = needle[m - g + 1.min(g - 1)];
    let s2 = needle[m - 1];
    // Element p of each view is the character at a fixed offset inside window p.
    let view = |off: usize| &hay[off..off + nw];
    let (a0, a1, a2) = (view(0), view(1.min(g - 1)), view(g - 1));
    let (b0, b1, b2) = (view(m - g), view(m - g + 1.min(g - 1)), view(m - 1));
    let mut budget = 4 * hay.len() + 64;
    let (mut best_pre, mut best_suf) = (0usize, 0usize);
    const BLOCK: usize = 32;
    let mut base = 0usize;
    while base < nw {
        let end = (base + BLOCK).min(nw);
        let (c0, c1, c2) = (&a0[base..end], &a1[base..end], &a2[base..end]);
        let (d0, d1, d2) = (&b0[base..end], &b1[base..end], &b2[base..end]);
        let mut flags = [0u8; BLOCK];
        let len = c0.len().min(BLOCK);
        for j in 0..len {
            let pre = (c0[j] == p0) & (c1[j] == p1) & (c2[j] == p2);
            let suf = (d0[j] == s0) & (d1[j] == s1) & (d2[j] == s2);
            flags[j] = pre as u8 | ((suf as u8) << 1);
        }
        if flags.iter().fold(0u8, |acc, &f| acc | f) != 0 {
            for (j, &f) in flags.iter().enumerate() {
                if f == 0 {
                    continue;
                }
                let (pre_hit, suf_hit) = (f & 1 != 0, f & 2 != 0);
                let p = base + j;
                let Some(w) = hay.get(p..p + m) else { continue };
                let mut work = 1;
                if pre_hit {
                    let pre = w.iter().zip(needle).take_while(|(x, y)| x == y).count();
                    if pre == m {
                        out.exact = Some(true);
                        out.seeds = [Some(p), None];
                        return out;
                    }
                    work += pre;
                    if pre > best_pre {
                        best_pre = pre;
                        out.seeds[0] = Some(p);
                    }
                }
                if suf_hit {
                    let suf = w.iter().rev().zip(needle.iter().rev()).take_while(|(x, y)| x == y).count();
                    work += suf;
                    if suf > best_suf {
                        best_suf = suf;
                        out.seeds[1] = Some(p);
                    }
                }
                match budget.checked_sub(work) {
                    Some(b) => budget = b,
                    None => {
                        out.exact = None;
                        return out;
                    }
                }
            }
        }
        base = end;
    }
    out
}

/// Whether `a` is `Some(b)`, compared inline (short slices: a `memcmp` call costs more).
#[inline]
fn same(a: Option<&[char]>, b: &[char]) -> bool {
    a.is_some_and(|a| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y))
}

/// [`prefilter`] from the [`CharIndex`] of `hay`: the candidate windows are read off the
/// positions of the rarest anchor character instead of testing every window.
///
/// The prefix candidates are the windows whose first `g` characters equal the needle's (every
/// exact occurrence is one), visited in increasing order, as the scan visits them; likewise
/// the suffix candidates. So while the budget lasts the result equals [`prefilter`]'s; when it
/// runs out, `exact` is `None` (unknown) unless an occurrence was already found.
fn prefilter_indexed(hay: &[char], needle: &[char], index: &CharIndex) -> Prefilter {
    let m = needle.len();
    let mut out = Prefilter { exact: Some(false), seeds: [None, None] };
    if m == 0 || hay.len() < m {
        out.exact = Some(m == 0);
        return out;
    }
    let g = ANCHOR.min(m);
    let nw = hay.len() - m + 1;
    let mut budget = 4 * hay.len() + 64;
    // Window starts `p < nw` whose characters at offsets `off..off + g` equal `anchor`.
    let anchored = |off: usize| {
        let anchor = &needle[off..off + g];
        let (r, positions) = anchor
            .iter()
            .enumerate()
            .map(|(r, &c)| (r, index.positions(c)))
            .min_by_key(|(_, v)| v.len())
            .unwrap_or((0, &[]));
        let first = positions.partition_point(|&x| (x as usize) < off + r);
        positions[first..]
            .iter()
            .map(move |&x| x as usize - off - r)
            .take_while(move |&p| p < nw)
            .filter(move |&p| same(hay.get(p + off..p + off + g), anchor))
    };
    let mut best_pre = 0usize;
    for p in anchored(0) {
        let Some(w) = hay.get(p..p + m) else { break };
        let pre = w.iter().zip(needle).take_while(|(x, y)| x == y).count();
        if pre == m {
            out.exact = Some(true);
            out.seeds = [Some(p), None];
            return out;
        }
        if pre > best_pre {
            best_pre = pre;
            out.seeds[0] = Some(p);
        }
        match budget.checked_sub(pre + 1) {
            Some(b) => budget = b,
            None => {
                out.exact = None;
                return out;
            }
        }
    }
    let mut best_suf = 0usize;
    for p in anchored(m - g) {
        let Some(w) = hay.get(p..p + m) else { break };
        let suf = w.iter().rev().zip(needle.iter().rev()).take_while(|(x, y)| x == y).count();
        if suf > best_suf {
            best_suf = suf;
            out.seeds[1] = Some(p);
        }
        // Exactness is settled; running out here only leaves the suffix seed where it is.
        match budget.checked_sub(suf + 1) {
            Some(b) => budget = b,
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cs(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    /// Iteration counts: smaller in unoptimized builds so `cargo test` stays quick.
    fn scaled(release: usize) -> usize {
        if cfg!(debug_assertions) {
            release / 5
        } else {
            release
        }
    }

    fn lcs_dp(a: &[char], b: &[char]) -> usize {
        let mut prev = vec![0usize; b.len() + 1];
        for &x in a {
            let mut cur = vec![0usize; b.len() + 1];
            for (j, &y) in b.iter().enumerate() {
                cur[j + 1] = if x == y { prev[j] + 1 } else { prev[j + 1].max(cur[j]) };
            }
            prev = cur;
        }
        prev[b.len()]
    }

    fn ratio_ref(a: &[char], b: &[char]) -> f64 {
        if a.is_empty() && b.is_empty() {
            return 100.0;
        }
        let s = a.len() + b.len();
        let d = s - 2 * lcs_dp(a, b);
        (1.0 - (d as f64) / (s as f64)) * 100.0
    }

    fn partial_one_dir(s: &[char], l: &[char]) -> f64 {
        let (m, n) = (s.len(), l.len());
        let mut best = 0.0f64;
        for i in 0..=(n - m) {
            best = best.max(ratio_ref(s, &l[i..i + m]));
        }
        for k in 1..m {
            best = best.max(ratio_ref(s, &l[..k]));
            best = best.max(ratio_ref(s, &l[n - k..]));
        }
        best
    }

    fn partial_ref(a: &[char], b: &[char]) -> f64 {
        if a.is_empty() && b.is_empty() {
            return 100.0;
        }
        if a.is_empty() || b.is_empty() {
            return 0.0;
        }
        let (s, l) = if a.len() <= b.len() { (a, b) } else { (b, a) };
        let mut best = partial_one_dir(s, l);
        if s.len() == l.len() {
            best = best.max(partial_one_dir(l, s));
        }
        best
    }

    use crate::test_rng::XorShift;

    #[test]
    fn spec_examples() {
        assert_eq!(ratio(&cs("abc"), &cs("")), 0.0);
        assert_eq!(ratio(&cs(""), &cs("")), 100.0);
        assert_eq!(partial_ratio(&cs(""), &cs("")), 100.0);
        assert_eq!(partial_ratio(&cs("a"), &cs("")), 0.0);
        assert_eq!(partial_ratio(&cs(""), &cs("a")), 0.0);
        assert_eq!(partial_ratio(&cs("Hello world"), &cs("world")), 100.0);
        assert_eq!(partial_ratio(&cs("world"), &cs("Hello world")), 100.0);
        let p = partial_ratio(&cs("aaaabaa"), &cs("bcaaaca"));
        assert_eq!(p, (1.0 - 6.0 / 22.0) * 100.0);
        assert!((p - 72.727_272_727).abs() < 1e-6);
        assert_eq!(p.to_bits(), 72.72727272727273f64.to_bits());
        // docs/checks.md §3.0.3: 12-char needle, one substitution.
        let q = cs("abcdefghijkl");
        let t = cs("xxxx abcdefXhijkl yyyy");
        let r = partial_ratio(&q, &t);
        assert_eq!(r.to_bits(), 91.66666666666666f64.to_bits());
        assert_eq!((r / 100.0).to_bits(), 0.9166666666666665f64.to_bits());
        assert!(r / 100.0 < 1.0 - 1.0 / 12.0);
        assert_eq!(ratio(&cs("abcd"), &cs("abce")), 75.0);
    }

    #[test]
    fn random_against_brute_force() {
        let mut rng = XorShift(0x1234_5678_9abc_def1);
        let alphabets: Vec<Vec<char>> = vec![
            cs("ab"),
            cs("abc"),
            cs("abcdefgh"),
            cs("aé€𝄞"),
            cs("the quick brown fox"),
            (0..90u32).filter_map(|x| char::from_u32(0x30 + x)).collect(),
        ];
        for it in 0..scaled(6000) {
            let alpha = &alphabets[it % alphabets.len()];
            let la = rng.below(if it % 7 == 0 { 150 } else { 40 });
            let lb = if it % 5 == 0 { la } else { rng.below(if it % 11 == 0 { 300 } else { 60 }) };
            let a = rng.string(alpha, la);
            let mut b = rng.string(alpha, lb);
            if it % 9 == 0 && la <= lb && la > 0 {
                // Plant a mutated copy of `a`.
                let pos = rng.below(lb - la + 1);
                for (j, &c) in a.iter().enumerate() {
                    if rng.below(6) != 0 {
                        b[pos + j] = c;
                    }
                }
            }
            let r = ratio(&a, &b);
            assert_eq!(r.to_bits(), ratio_ref(&a, &b).to_bits(), "ratio {:?} {:?}", a, b);
            let p = partial_ratio(&a, &b);
            let pr = partial_ref(&a, &b);
            assert_eq!(p.to_bits(), pr.to_bits(), "partial {:?} {:?}: {} vs {}", a, b, p, pr);
            assert_eq!(partial_ratio(&b, &a).to_bits(), pr.to_bits());
            assert_eq!(PartialRatioNeedle::new(&a).score(&b).to_bits(), pr.to_bits());
            assert_eq!(PartialRatioNeedle::reusable(&a).score(&b).to_bits(), pr.to_bits());
        }
    }

    #[test]
    fn long_needles_multiword() {
        let mut rng = XorShift(0xdead_beef_cafe_f00d);
        let small = cs("abcdefghij ");
        // Many distinct characters: exercises the sparse masks of long needles.
        let big: Vec<char> = (0..3000u32).filter_map(|x| char::from_u32(0x4E00 + x)).collect();
        for it in 0..scaled(80) {
            let alpha = if it % 3 == 2 { &big } else { &small };
            let m = 60 + rng.below(if it % 4 == 0 { 700 } else { 300 });
            let n = m + rng.below(200);
            let a = rng.string(alpha, m);
            let mut b = rng.string(alpha, n);
            if it % 2 == 0 {
                let pos = rng.below(n - m + 1);
                for (j, &c) in a.iter().enumerate() {
                    if rng.below(10) != 0 {
                        b[pos + j] = c;
                    }
                }
            }
            assert_eq!(lcs_len(&a, &b), lcs_dp(&a, &b));
            assert_eq!(lcs_len(&b[..m], &a), lcs_dp(&b[..m], &a));
            if it % 4 != 0 {
                assert_eq!(partial_ratio(&a, &b).to_bits(), partial_ref(&a, &b).to_bits());
            }
        }
    }

    /// Long needles whose near copy sits in repetitive text with insertions and deletions (the
    /// case the voted seeds are for): every entry point equals the definition, and the votes
    /// point within the edits' drift of the copy.
    #[test]
    fn voted_seeds_near_copies_with_indels() {
        let mut rng = XorShift(0x5eed_70e5);
        let vocab = ["the ", "of ", "page ", "table ", "model ", "order "];
        for it in 0..scaled(30) {
            let mut hay: Vec<char> = Vec::new();
            while hay.len() < 1000 {
                hay.extend(vocab[rng.below(vocab.len())].chars());
            }
            let m = VOTE_MIN_NEEDLE + rng.below(250);
            let pos = rng.below(hay.len() - m);
            let mut needle = hay[pos..pos + m].to_vec();
            let edits = m / [50, 15, 8][it % 3];
            for _ in 0..edits {
                let at = rng.below(needle.len());
                match rng.below(3) {
                    0 => needle[at] = '#',
                    1 => {
                        needle.remove(at);
                    }
                    _ => needle.insert(at, '#'),
                }
            }
            let voted = voted_windows(&needle, &hay);
            assert!(voted.iter().any(|&p| p.abs_diff(pos) <= edits + 64), "{voted:?} vs {pos}");
            let want = partial_ref(&needle, &hay);
            assert_eq!(partial_ratio(&needle, &hay).to_bits(), want.to_bits());
            let index = CharIndex::new(&hay).expect("short text");
            let compiled = PartialRatioNeedle::reusable(&needle);
            for c in [want, (want - 5.0).max(0.0), 100.0] {
                let decided = compiled.decide_in(&hay, Some(&index), c).map_err(f64::to_bits);
                assert_eq!(decided, if want >= c { Ok(()) } else { Err(want.to_bits()) });
            }
        }
    }

    /// The wide kernel with dense and with sparse masks (normally chosen by table size).
    #[test]
    fn wide_kernel_dense_and_sparse() {
        let mut rng = XorShift(0x05ee_d0f5_aa5e);
        let small = cs("abcdefghij ");
        let big: Vec<char> = (0..3000u32).filter_map(|x| char::from_u32(0x4E00 + x)).collect();
        for it in 0..scaled(40) {
            let alpha = if it % 2 == 0 { &big } else { &small };
            let m = 257 + rng.below(if it % 4 < 2 { 120 } else { 600 });
            let n = m + 1 + rng.below(100);
            let a = rng.string(alpha, m);
            let mut b = rng.string(alpha, n);
            let pos = rng.below(n - m + 1);
            for (j, &c) in a.iter().enumerate() {
                if rng.below(12) != 0 {
                    b[pos + j] = c;
                }
            }
            let want_lcs = lcs_dp(&a, &b);
            let want = if it % 4 < 2 { Some(partial_ref(&a, &b)) } else { None };
            for limit in [usize::MAX, 0] {
                let (alpha_a, idx) = Alphabet::new(&a);
                let k = Dyn::with_dense_limit(alpha_a, &idx, limit);
                assert!(matches!(k.fwd, Masks::Sparse(_)) == (limit == 0));
                assert_eq!(kernel_lcs(&k, &b), want_lcs, "limit {limit}");
                let rev_a: Vec<char> = a.iter().rev().copied().collect();
                let rev_b: Vec<char> = b.iter().rev().copied().collect();
                let mut st = k.fresh();
                let l: usize = rev_b.iter().map(|&c| k.step_rev(&mut st, c)).sum();
                assert_eq!(l, lcs_dp(&rev_a, &rev_b));
                if let Some(w) = want {
                    assert_eq!(
                        score_longer(&k, &a, &b, None, 0.0, false, true).to_bits(),
                        w.to_bits(),
                        "limit {limit}"
                    );
                }
            }
        }
    }

    #[test]
    fn cutoff_variants_against_brute_force() {
        let mut rng = XorShift(0x0bad_cafe_1234_5678);
        let alphabets = [cs("ab"), cs("abcd"), cs("the quick brown fox"), cs("aé€𝄞")];
        let bump = |x: f64, up: bool| {
            if x <= 0.0 {
                return x;
            }
            f64::from_bits(if up { x.to_bits() + 1 } else { x.to_bits() - 1 })
        };
        for it in 0..scaled(4000) {
            let alpha = &alphabets[it % alphabets.len()];
            let la = rng.below(30);
            let lb = if it % 6 == 0 { la } else { rng.below(90) };
            let a = rng.string(alpha, la);
            let mut b = rng.string(alpha, lb);
            if la > 0 && la <= lb && it % 3 == 0 {
                let pos = rng.below(lb - la + 1);
                for (j, &c) in a.iter().enumerate() {
                    if rng.below(8) != 0 {
                        b[pos + j] = c;
                    }
                }
            }
            let s = partial_ref(&a, &b);
            let needle = if it % 2 == 0 { PartialRatioNeedle::new(&a) } else { PartialRatioNeedle::reusable(&a) };
            let cutoffs =
                [0.0, s, bump(s, true), bump(s, false), (rng.below(10001) as f64) / 100.0, 100.0, 100.5, -1.0];
            for &c in &cutoffs {
                let want = (s >= c).then_some(s.to_bits());
                assert_eq!(needle.score_if_at_least(&b, c).map(f64::to_bits), want, "{a:?} {b:?} cutoff {c}");
                assert_eq!(needle.at_least(&b, c), s >= c, "{a:?} {b:?} at_least {c}");
                let decided = needle.decide(&b, c).map_err(f64::to_bits);
                assert_eq!(decided, if s >= c { Ok(()) } else { Err(s.to_bits()) }, "{a:?} {b:?} decide {c}");
            }
            // olmOCR-style threshold.
            if la > 0 {
                let k = rng.below(la + 1);
                let thr = 1.0 - (k as f64) / (la as f64);
                let ms = min_score_for_threshold(thr);
                assert_eq!(needle.at_least(&b, ms), s / 100.0 >= thr, "{a:?} {b:?} thr {thr}");
            }
        }
    }

    #[test]
    fn min_score_for_threshold_is_exact() {
        let down = |x: f64| f64::from_bits(x.to_bits() - 1);
        for n in 1..scaled(200) {
            for k in 0..=n {
                let thr = 1.0 - (k as f64) / (n as f64);
                let ms = min_score_for_threshold(thr);
                if ms > 0.0 && ms.is_finite() {
                    assert!(ms / 100.0 >= thr);
                    assert!(down(ms) / 100.0 < thr);
                }
                // Every achievable ratio value agrees with the direct comparison.
                for s_len in [n, n + 1, 2 * n, 2 * n + 7, 3 * n] {
                    for d in 0..=s_len {
                        let score = (1.0 - (d as f64) / (s_len as f64)) * 100.0;
                        assert_eq!(score / 100.0 >= thr, score >= ms, "n={n} k={k} S={s_len} d={d}");
                    }
                }
            }
        }
        assert_eq!(min_score_for_threshold(0.0), 0.0);
        assert_eq!(min_score_for_threshold(-3.0), 0.0);
        assert_eq!(min_score_for_threshold(1.5), f64::INFINITY);
        assert_eq!(min_score_for_threshold(f64::NAN), f64::INFINITY);
        assert_eq!(min_score_for_threshold(1.0), 100.0);
        // docs/checks.md §3.0.3: 91.66666666666666 fails the threshold 1 - 1/12.
        assert!(91.666_666_666_666_66 < min_score_for_threshold(1.0 - 1.0 / 12.0));
    }

    /// Random (needle, haystack) pairs of the kinds the indexed paths must survive: small
    /// alphabets, non-ASCII, periodic texts, planted (mutated) copies, any relative length.
    fn index_cases(rng: &mut XorShift, count: usize) -> Vec<(Vec<char>, Vec<char>)> {
        let alphabets: Vec<Vec<char>> = vec![
            cs("ab"),
            cs("abc"),
            cs("abcdefgh"),
            cs("aé€𝄞"),
            cs("the quick brown fox"),
            (0..200u32).filter_map(|x| char::from_u32(0x4E00 + x)).collect(),
        ];
        (0..count)
            .map(|it| {
                let alpha = &alphabets[it % alphabets.len()];
                let m = rng.below(if it % 4 == 0 { 90 } else { 30 });
                let n = match it % 7 {
                    0 => m,
                    1 => m.saturating_sub(rng.below(5)),
                    _ => m + rng.below(if it % 3 == 0 { 400 } else { 80 }),
                };
                let needle = rng.string(alpha, m);
                let mut hay = if it % 5 == 0 {
                    // Periodic text (the needle's own start, or a short random period).
                    let period = if m > 0 && it % 2 == 0 {
                        let len = 1 + rng.below(m.min(4));
                        needle[..len].to_vec()
                    } else {
                        let len = 1 + rng.below(3);
                        rng.string(alpha, len)
                    };
                    period.iter().copied().cycle().take(n).collect()
                } else {
                    rng.string(alpha, n)
                };
                if m > 0 && m <= n && it % 3 != 2 {
                    let pos = rng.below(n - m + 1);
                    let keep = [1, 4, 8, 30][rng.below(4)];
                    for (j, &c) in needle.iter().enumerate() {
                        if rng.below(keep + 1) != 0 {
                            hay[pos + j] = c;
                        }
                    }
                }
                (needle, hay)
            })
            .collect()
    }

    /// While neither runs out of budget the index-driven prefilter returns exactly what the
    /// scan returns (same candidates, same order); exactness is never wrong either way.
    #[test]
    fn indexed_prefilter_equals_scan() {
        let mut rng = XorShift(0x7a11_5eed_0001);
        let mut compared = 0;
        for (needle, hay) in index_cases(&mut rng, scaled(8000)) {
            let index = CharIndex::new(&hay).expect("short text");
            let scan = prefilter(&hay, &needle);
            let fast = prefilter_indexed(&hay, &needle, &index);
            let truth = needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle.as_slice());
            for exact in [scan.exact, fast.exact].into_iter().flatten() {
                assert_eq!(exact, truth, "{needle:?} in {hay:?}");
            }
            if scan.exact.is_some() && fast.exact.is_some() {
                assert_eq!(scan.seeds, fast.seeds, "{needle:?} in {hay:?}");
                compared += 1;
            }
        }
        assert!(compared > scaled(8000) / 2);
    }

    /// Every window reaching `m - d` lies in a candidate range.
    #[test]
    fn candidate_windows_hold_every_good_window() {
        let mut rng = XorShift(0xc0ff_ee00_0002);
        let mut filtered = 0;
        for (needle, hay) in index_cases(&mut rng, scaled(3000)) {
            let m = needle.len();
            if m == 0 || hay.len() < m {
                continue;
            }
            let index = CharIndex::new(&hay).expect("short text");
            let lcs: Vec<usize> = hay.windows(m).map(|w| lcs_dp(&needle, w)).collect();
            for d in 0..=m / 3 {
                let Some(ranges) = candidate_windows(&needle, &hay, &index, d) else { continue };
                filtered += 1;
                assert!(ranges.windows(2).all(|r| r[0].1 < r[1].0), "sorted, disjoint: {ranges:?}");
                assert!(ranges.iter().all(|&(a, b)| a < b && b <= hay.len() - m + 1));
                for (i, &l) in lcs.iter().enumerate() {
                    if l + d >= m {
                        assert!(
                            ranges.iter().any(|&(a, b)| a <= i && i < b),
                            "window {i} (lcs {l}, d {d}) missed: {needle:?} {hay:?} {ranges:?}"
                        );
                    }
                }
            }
        }
        assert!(filtered > 100, "the filter was hardly used: {filtered}");
    }

    /// With the text's index, every entry point gives the same score as the definition.
    #[test]
    fn indexed_search_equals_definition() {
        let mut rng = XorShift(0x1dea_0003);
        for (needle, hay) in index_cases(&mut rng, scaled(3000)) {
            let index = CharIndex::new(&hay).expect("short text");
            let want = partial_ref(&needle, &hay);
            let compiled = PartialRatioNeedle::reusable(&needle);
            let m = needle.len().max(1) as f64;
            let cutoffs = [0.0, want, 100.0, (1.0 - 1.0 / m) * 100.0, (1.0 - 3.0 / m) * 100.0, 50.0];
            for &c in &cutoffs {
                let decided = compiled.decide_in(&hay, Some(&index), c).map_err(f64::to_bits);
                assert_eq!(decided, if want >= c { Ok(()) } else { Err(want.to_bits()) }, "{needle:?} {hay:?} {c}");
                assert_eq!(
                    compiled.score_if_at_least_in(&hay, Some(&index), c).map(f64::to_bits),
                    (want >= c).then_some(want.to_bits()),
                    "{needle:?} {hay:?} {c}"
                );
            }
        }
    }

    fn golden_bits(v: &serde_json::Value, key: &str) -> u64 {
        let hex = v[key].as_str().expect("bits field");
        u64::from_str_radix(hex, 16).expect("hex bits")
    }

    /// RapidFuzz 3.14.6 results from `tests/golden/gen_fuzz_cases.py` (bit patterns compared).
    /// `FUZZ_GOLDEN=path` runs the same check on another file (e.g. a larger generated one).
    #[test]
    fn golden_rapidfuzz() {
        let default = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/fuzz_cases.jsonl");
        let path = std::env::var("FUZZ_GOLDEN").unwrap_or_else(|_| default.to_string());
        let data = std::fs::read_to_string(&path).expect("golden file");
        let mut n = 0;
        for line in data.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line).expect("json");
            let a = cs(v["a"].as_str().expect("a"));
            let b = cs(v["b"].as_str().expect("b"));
            let r = golden_bits(&v, "ratio_bits");
            let p = golden_bits(&v, "partial_ratio_bits");
            // The decimal fields must agree with the bit patterns (to within float parsing).
            let rd = v["ratio"].as_f64().expect("ratio");
            assert!((rd - f64::from_bits(r)).abs() <= 1e-9, "ratio field vs bits");
            assert_eq!(ratio(&a, &b).to_bits(), r, "ratio {:?} {:?}", a, b);
            assert_eq!(ratio(&b, &a).to_bits(), r, "ratio (swapped) {:?} {:?}", a, b);
            let got = partial_ratio(&a, &b);
            assert_eq!(got.to_bits(), p, "partial {:?} {:?}: {} vs {}", a, b, got, f64::from_bits(p));
            assert_eq!(partial_ratio(&b, &a).to_bits(), p, "partial (swapped) {:?} {:?}", a, b);
            let needle = PartialRatioNeedle::new(&a);
            assert_eq!(needle.score(&b).to_bits(), p, "needle {:?} {:?}", a, b);
            // The cutoff helpers, at the boundary of the true score.
            let pf = f64::from_bits(p);
            for c in [pf, f64::from_bits(p + 1), if p > 0 { f64::from_bits(p - 1) } else { pf }] {
                assert_eq!(needle.at_least(&b, c), pf >= c, "at_least {c} {:?} {:?}", a, b);
                let want = if pf >= c { Some(p) } else { None };
                assert_eq!(needle.score_if_at_least(&b, c).map(f64::to_bits), want, "cutoff {c} {:?} {:?}", a, b);
            }
            n += 1;
        }
        assert!(n >= 1000, "golden file too small: {n}");
    }
}
