//! Our hand-written string kernels against the `rapidfuzz` crate (RapidFuzz's own Rust port),
//! on the workloads they serve, with the results checked equal:
//!
//! * LCS (`fuzz::lcs_len`, behind `ratio` and the edit-distance reward): OCR-like pages of
//!   3–8 k characters, near copies and unrelated pages;
//! * `partial_ratio` (`fuzz::partial_ratio`, the present/absent checks): needles of 20–1,000
//!   characters in 8 k-character pages; the crate has no partial_ratio, so its side is its cached
//!   one-against-many LCS comparator over every window and affix, which is what it would take;
//! * Levenshtein (`rewards::levenshtein`, the medoid reward): the 378 pairs of 28 completions
//!   of one page.
//!
//!     cargo bench --bench kernels
//!
//! Prints each workload's best-of-5 time for both and the ratio (crate time / ours).

use std::hint::black_box;
use std::time::Instant;

use olmocr_rl_core::fuzz::{lcs_len, partial_ratio};
use olmocr_rl_core::rewards::levenshtein::levenshtein;
use rapidfuzz::distance::{lcs_seq, levenshtein as rf_lev};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "results",
    "table",
    "figure",
    "model",
    "training",
    "page",
    "Straße",
    "größer",
    "résultats",
    "таблица",
    "данные",
    "数据",
    "表格",
    "$x^2$",
    "<td>",
    "|",
    "1.5",
    "2024",
    "(a)",
    "—",
    "naïve",
];

fn page(rng: &mut Rng, len: usize) -> Vec<char> {
    let mut out = String::new();
    while out.chars().count() < len {
        out.push_str(WORDS[rng.below(WORDS.len())]);
        out.push(if rng.below(12) == 0 { '\n' } else { ' ' });
    }
    out.chars().take(len).collect()
}

fn mutate(rng: &mut Rng, text: &[char], edits: usize) -> Vec<char> {
    let mut t = text.to_vec();
    for _ in 0..edits {
        let at = rng.below(t.len() + 1);
        match rng.below(4) {
            0 if !t.is_empty() => {
                t.remove(at.min(t.len() - 1));
            }
            1 => t.insert(at, "abcxyz .,\né中".chars().nth(rng.below(12)).unwrap()),
            2 if !t.is_empty() => {
                let i = at.min(t.len() - 1);
                t[i] = 'q';
            }
            _ => {
                let start = rng.below(t.len().max(1));
                let chunk: Vec<char> = t[start..(start + 1 + rng.below(40)).min(t.len())].to_vec();
                t.splice(at..at, chunk);
            }
        }
    }
    t
}

fn best_of<T>(mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut out = f();
    for _ in 0..5 {
        let t = Instant::now();
        out = black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best, out)
}

fn report(name: &str, ours: f64, theirs: f64) {
    println!(
        "{name:<58} ours {:>9.2} ms   rapidfuzz crate {:>9.2} ms   ratio {:>6.2}×",
        ours * 1e3,
        theirs * 1e3,
        theirs / ours
    );
}

/// The crate's way to the best window/affix LCS of a needle in a text: its cached comparator
/// over each candidate. Returns the best score as RapidFuzz computes it.
fn crate_partial_ratio(needle: &[char], hay: &[char]) -> f64 {
    let m = needle.len();
    let cached = lcs_seq::BatchComparator::new(needle.iter().copied());
    let score = |t: &[char]| {
        let lcs = cached.similarity(t.iter().copied());
        let s = m + t.len();
        if s == 0 {
            100.0
        } else {
            (1.0 - ((s - 2 * lcs) as f64) / (s as f64)) * 100.0
        }
    };
    let mut best = 0f64;
    for k in 1..m {
        best = best.max(score(&hay[..k])).max(score(&hay[hay.len() - k..]));
    }
    for i in 0..=hay.len() - m {
        best = best.max(score(&hay[i..i + m]));
    }
    best
}

fn main() {
    let mut rng = Rng(0x9e3779b97f4a7c15);

    // LCS of page pairs
    let mut near = Vec::new();
    let mut far = Vec::new();
    for _ in 0..40 {
        let len = 3000 + rng.below(5000);
        let a = page(&mut rng, len);
        let edits = [5, 50, 300][rng.below(3)];
        near.push((a.clone(), mutate(&mut rng, &a, edits)));
        far.push((a, page(&mut rng, len)));
    }
    for (name, pairs) in [("LCS, 40 near-copy page pairs (3-8k chars)", &near), ("LCS, 40 unrelated page pairs", &far)]
    {
        let (ours, x) = best_of(|| pairs.iter().map(|(a, b)| lcs_len(a, b)).collect::<Vec<_>>());
        let (theirs, y) = best_of(|| {
            pairs.iter().map(|(a, b)| lcs_seq::similarity(a.iter().copied(), b.iter().copied())).collect::<Vec<_>>()
        });
        assert_eq!(x, y, "{name}: results differ");
        report(name, ours, theirs);
    }

    // partial_ratio: needles in pages
    for m in [20usize, 100, 1000] {
        let mut cases = Vec::new();
        for i in 0..6 {
            let hay = page(&mut rng, 8000);
            let start = rng.below(hay.len() - m);
            let needle =
                if i % 2 == 0 { mutate(&mut rng, &hay[start..start + m], m / 20 + 1) } else { page(&mut rng, m) };
            cases.push((needle, hay));
        }
        let (ours, x) = best_of(|| cases.iter().map(|(n, h)| partial_ratio(n, h)).collect::<Vec<_>>());
        let (theirs, y) = best_of(|| cases.iter().map(|(n, h)| crate_partial_ratio(n, h)).collect::<Vec<_>>());
        let same = x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits());
        assert!(same, "partial_ratio m={m}: {x:?} vs {y:?}");
        report(&format!("partial_ratio, 6 needles of {m} chars in 8k-char pages"), ours, theirs);
    }

    // Levenshtein: one medoid group (28 completions of one page, pairwise)
    for (label, edits) in [("near copies", [0usize, 5, 30, 100]), ("mixed", [0, 300, 1500, 4000])] {
        let base = page(&mut rng, 6000);
        let group: Vec<Vec<char>> = (0..28)
            .map(|i| {
                let e = edits[i % 4];
                if e >= 1500 {
                    let len = 3000 + rng.below(5000);
                    page(&mut rng, len)
                } else {
                    mutate(&mut rng, &base, e)
                }
            })
            .collect();
        let pairs: Vec<(usize, usize)> = (0..28).flat_map(|i| (i + 1..28).map(move |j| (i, j))).collect();
        let (ours, x) = best_of(|| pairs.iter().map(|&(i, j)| levenshtein(&group[i], &group[j])).collect::<Vec<_>>());
        let (theirs, y) = best_of(|| {
            pairs
                .iter()
                .map(|&(i, j)| rf_lev::distance(group[i].iter().copied(), group[j].iter().copied()))
                .collect::<Vec<_>>()
        });
        assert_eq!(x, y, "levenshtein {label}: results differ");
        report(&format!("Levenshtein, 378 pairs of 28 completions ({label})"), ours, theirs);
    }
}
