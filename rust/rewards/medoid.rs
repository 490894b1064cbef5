//! What it computes: upstream's `medoid_reward` (allenai/olmocr f7cfe4c,
//! `olmocr/train/grpo_train.py`): over a set of completions, the Levenshtein distance of every
//! pair; the medoid is the completion with the least mean distance to the others (the first on
//! ties); each completion's reward is `max(0, 1 − d(completion, medoid) / largest pairwise
//! distance)`, the medoid's 1.0 (all 1.0 when every distance is 0; one completion: 1.0; none: no
//! rewards).
//!
//! Range: [0, 1] per completion; the medoid and its exact copies 1.0, the completion farthest
//! from it 0.0 (when it is also the largest pairwise distance).
//!
//! Differences from upstream: none in the value for one set. Upstream applies it to whatever
//! list trl hands the reward function (one rank's slice of the batch, pages mixed); `groups`
//! here lets a caller compute it per page group (what the idea means), upstream's mode being one
//! group. Only the distances the result depends on are computed (`Group`: the others are
//! bounded, and the bounds decide; typically half the pairs), in parallel, the GIL released;
//! a test compares with the full matrix, ties included.

use rayon::prelude::*;

use super::levenshtein::{char_counts, counts_bound, levenshtein_within};

/// Rewards for `texts`, the medoid computed within each group (`groups[i]`: the group of text
/// i; any labels). Groups need not be contiguous.
pub fn medoid_rewards(texts: &[Vec<char>], groups: &[u64]) -> Vec<f64> {
    assert_eq!(texts.len(), groups.len(), "one group label per text");
    let mut members: Vec<(u64, Vec<usize>)> = Vec::new();
    for (i, &g) in groups.iter().enumerate() {
        match members.iter_mut().find(|(label, _)| *label == g) {
            Some((_, list)) => list.push(i),
            None => members.push((g, vec![i])),
        }
    }
    let counts: Vec<Vec<(char, usize)>> = texts.par_iter().map(|t| char_counts(t)).collect();
    // One task per group: rayon's splitting in halves would keep costly groups together.
    let rewards: Vec<Vec<f64>> = members
        .par_iter()
        .with_max_len(1)
        .map(|(_, m)| {
            let group = Group::new(
                m.iter().map(|&i| texts[i].as_slice()).collect(),
                m.iter().map(|&i| counts[i].as_slice()).collect(),
            );
            group.rewards()
        })
        .collect();
    let mut out = vec![1.0; texts.len()];
    for ((_, m), r) in members.iter().zip(rewards) {
        for (&i, r) in m.iter().zip(r) {
            out[i] = r;
        }
    }
    out
}

/// The rows whose distances bound the others (triangle inequality): a few suffice, and each
/// one costs every bound a lookup.
const MAX_PIVOTS: usize = 16;

/// One group's distances, computed only where the result needs them. The rewards need the
/// medoid (the first least row sum), its row, and the largest distance. Every distance not
/// computed is bounded: below by the character counts (`counts_bound`) and by |d(i,p) − d(j,p)|,
/// above by d(i,p) + d(p,j) and the longer length, p a text whose row is known. A text whose
/// row sum is bounded above the best exact one (or equal to it, with a later index) cannot be
/// the medoid; a pair bounded at or below the largest distance found cannot exceed it. The
/// result is what the full matrix gives (a test compares), at a fraction of its pairs. Row sums
/// stand for upstream's mean distances: they share the divisor n − 1, so the same one is least.
struct Group<'a> {
    texts: Vec<&'a [char]>,
    n: usize,
    known: Vec<Option<usize>>,
    floor: Vec<usize>,
    pivots: Vec<usize>,
}

impl<'a> Group<'a> {
    fn new(texts: Vec<&'a [char]>, counts: Vec<&[(char, usize)]>) -> Group<'a> {
        let n = texts.len();
        let mut floor = vec![0; n * n];
        for i in 0..n {
            for j in i + 1..n {
                floor[i * n + j] = counts_bound(counts[i], counts[j]);
                floor[j * n + i] = floor[i * n + j];
            }
        }
        let known = (0..n * n).map(|x| (x / n == x % n).then_some(0)).collect();
        Group { texts, n, known, floor, pivots: Vec::new() }
    }

    fn lower(&self, i: usize, j: usize) -> usize {
        let n = self.n;
        if let Some(d) = self.known[i * n + j] {
            return d;
        }
        let d = |x: usize, p: usize| self.known[x * n + p].expect("a pivot's row is known");
        self.pivots.iter().map(|&p| d(i, p).abs_diff(d(j, p))).fold(self.floor[i * n + j], usize::max)
    }

    fn upper(&self, i: usize, j: usize) -> usize {
        let n = self.n;
        if let Some(d) = self.known[i * n + j] {
            return d;
        }
        let d = |x: usize, p: usize| self.known[x * n + p].expect("a pivot's row is known");
        let longer = self.texts[i].len().max(self.texts[j].len());
        self.pivots.iter().map(|&p| d(i, p) + d(p, j)).fold(longer, usize::min)
    }

    fn row_lower(&self, i: usize) -> usize {
        (0..self.n).map(|j| self.lower(i, j)).sum()
    }

    /// The distances of `pairs`, in parallel, each given its bounds.
    fn compute(&mut self, pairs: &[(usize, usize)]) {
        let n = self.n;
        let work: Vec<(usize, usize, usize, usize)> =
            pairs.iter().map(|&(i, j)| (i, j, self.lower(i, j), self.upper(i, j))).collect();
        let texts = &self.texts;
        let found: Vec<usize> =
            work.par_iter().map(|&(i, j, lo, up)| levenshtein_within(texts[i], texts[j], lo, up)).collect();
        for (&(i, j, _, _), d) in work.iter().zip(found) {
            self.known[i * n + j] = Some(d);
            self.known[j * n + i] = Some(d);
            for x in [i, j] {
                let complete = self.known[x * n..(x + 1) * n].iter().all(Option::is_some);
                if complete && self.pivots.len() < MAX_PIVOTS && !self.pivots.contains(&x) {
                    self.pivots.push(x);
                }
            }
        }
    }

    fn rewards(mut self) -> Vec<f64> {
        let n = self.n;
        if n <= 1 {
            return vec![1.0; n];
        }
        let batch = rayon::current_num_threads().max(1);
        // The medoid: candidates in the order of their bounded row sums; the first one's row in
        // full, then each other's distances until its bound exceeds the best row sum or its row
        // is known, those first whose bounds are widest for what they cost (a band of bit
        // vectors costs about the upper bound).
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| (self.row_lower(i), i));
        let mut medoid = order[0];
        self.compute(&(0..n).filter(|&j| j != medoid).map(|j| (medoid, j)).collect::<Vec<_>>());
        let mut best = self.row_lower(medoid);
        // The others in the order of their likely row sums, now that a known row bounds every
        // distance from both sides (the counts alone favour texts whose edits are insertions
        // and deletions): the medoid tends to come early, and with it a low best sum that rules
        // the rest out sooner.
        let mut rest: Vec<(usize, usize)> =
            order[1..].iter().map(|&i| ((0..n).map(|j| self.lower(i, j) + self.upper(i, j)).sum(), i)).collect();
        rest.sort_unstable();
        for &(_, i) in &rest {
            loop {
                let bound = self.row_lower(i);
                if bound > best || (bound == best && i > medoid) {
                    break; // not the medoid
                }
                let mut open: Vec<(usize, usize)> = (0..n)
                    .filter(|&j| self.known[i * n + j].is_none())
                    .map(|j| ((self.upper(i, j) - self.lower(i, j)) * 1024 / (self.upper(i, j) + 64), j))
                    .collect();
                if open.is_empty() {
                    (medoid, best) = (i, bound); // an exact row sum below the best (or equal, earlier)
                    break;
                }
                open.sort_unstable_by(|x, y| y.cmp(x));
                let pairs: Vec<(usize, usize)> = open.iter().take(batch).map(|&(_, j)| (i, j)).collect();
                self.compute(&pairs);
            }
        }
        // The largest distance: pairs in the order of their upper bounds, until the next bound is
        // no larger than the largest distance found.
        let mut max = self.known.iter().flatten().copied().max().unwrap_or(0);
        let mut open: Vec<(usize, usize, usize)> = (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .filter(|&(i, j)| self.known[i * n + j].is_none())
            .map(|(i, j)| (self.upper(i, j), i, j))
            .filter(|&(up, _, _)| up > max)
            .collect();
        open.sort_unstable_by(|x, y| y.cmp(x));
        let mut next = 0;
        while next < open.len() && open[next].0 > max {
            let end = (next + batch).min(open.len());
            let pairs: Vec<(usize, usize)> = open[next..end].iter().map(|&(_, i, j)| (i, j)).collect();
            self.compute(&pairs);
            max = pairs.iter().map(|&(i, j)| self.known[i * n + j].unwrap_or(0)).fold(max, usize::max);
            next = end;
        }
        let row = |i: usize| self.known[medoid * n + i].expect("the medoid's row is known");
        (0..n)
            .map(|i| {
                if i == medoid {
                    1.0
                } else {
                    let normalized = if max > 0 { row(i) as f64 / max as f64 } else { 0.0 };
                    (1.0 - normalized).max(0.0)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_rng::XorShift;

    /// Upstream's computation as it stands: every distance, then its arithmetic on the matrix
    /// (row sums for its mean distances, as `Group` compares them).
    fn full_matrix(texts: &[Vec<char>]) -> Vec<f64> {
        let n = texts.len();
        let d: Vec<Vec<usize>> = texts
            .iter()
            .map(|a| texts.iter().map(|b| crate::rewards::levenshtein::levenshtein(a, b)).collect())
            .collect();
        if n <= 1 {
            return vec![1.0; n];
        }
        let max = d.iter().flatten().copied().max().unwrap_or(0) as f64;
        let sums: Vec<usize> = d.iter().map(|row| row.iter().sum()).collect();
        let medoid = (0..n).min_by_key(|&i| (sums[i], i)).unwrap_or(0);
        (0..n)
            .map(|i| {
                if i == medoid {
                    1.0
                } else {
                    let normalized = if max > 0.0 { d[medoid][i] as f64 / max } else { 0.0 };
                    (1.0 - normalized).max(0.0)
                }
            })
            .collect()
    }

    /// Tied row sums between different texts (frequent among short texts over two letters): the
    /// medoid is the first of them wherever the search meets them.
    #[test]
    fn ties_go_to_the_first() {
        // Row sums 16, 13, 17, 11, 11: texts 3 and 4 tie, and the character counts put 4 first
        // in the search.
        let texts = t(&["bababbb", "bbaaab", "b", "baa", "bbaba"]);
        assert_eq!(medoid_rewards(&texts, &[0; 5]), full_matrix(&texts));
        assert_eq!(medoid_rewards(&texts, &[0; 5])[3], 1.0);
        let mut rng = XorShift(0x71e5_0ff1);
        let ab: Vec<char> = "ab".chars().collect();
        for round in 0..3000 {
            let n = 3 + rng.below(5);
            let texts: Vec<Vec<char>> = (0..n)
                .map(|_| {
                    let len = rng.below(6);
                    rng.string(&ab, len)
                })
                .collect();
            assert_eq!(medoid_rewards(&texts, &vec![0; n]), full_matrix(&texts), "round {round}: {texts:?}");
        }
    }

    /// The pruned computation against the full matrix on groups made to be hard for it: near
    /// copies with dropped and repeated blocks, duplicates (tied row sums), small alphabets,
    /// unrelated texts, empty texts; groups of 1 to 30.
    #[test]
    fn same_as_the_full_matrix() {
        let mut rng = XorShift(0x3ed0_1d5e);
        for round in 0..400 {
            let alphabet: Vec<char> = match round % 3 {
                0 => "ab".chars().collect(),
                1 => "abcdefgh ijklmnop\n".chars().collect(),
                _ => "abcdefghijklmnopqrstuvwxyzé😀 ".chars().collect(),
            };
            let len = rng.below(if round % 5 == 0 { 40 } else { 700 });
            let base = rng.string(&alphabet, len);
            let n = 1 + rng.below(30);
            let mut texts: Vec<Vec<char>> = Vec::new();
            for _ in 0..n {
                let mut x = match rng.below(8) {
                    0 if !texts.is_empty() => texts[rng.below(texts.len())].clone(), // a duplicate
                    1 => {
                        let len = rng.below(300);
                        rng.string(&alphabet, len)
                    } // unrelated
                    _ => base.clone(),
                };
                if !x.is_empty() && rng.below(3) == 0 {
                    let at = rng.below(x.len());
                    let len = rng.below(x.len() - at + 1);
                    if rng.below(2) == 0 {
                        x.drain(at..at + len); // a dropped block
                    } else {
                        let block: Vec<char> = x[at..at + len].to_vec();
                        x.splice(at..at, block); // a repeated one
                    }
                }
                for _ in 0..rng.below(12) {
                    let at = rng.below(x.len() + 1);
                    match rng.below(3) {
                        0 if at < x.len() => {
                            x.remove(at);
                        }
                        1 if at < x.len() => x[at] = alphabet[rng.below(alphabet.len())],
                        _ => x.insert(at, alphabet[rng.below(alphabet.len())]),
                    }
                }
                texts.push(x);
            }
            let groups = vec![0; n];
            assert_eq!(medoid_rewards(&texts, &groups), full_matrix(&texts), "round {round}");
        }
    }

    fn t(xs: &[&str]) -> Vec<Vec<char>> {
        xs.iter().map(|x| x.chars().collect()).collect()
    }

    #[test]
    fn upstream_arithmetic() {
        assert!(medoid_rewards(&[], &[]).is_empty());
        assert_eq!(medoid_rewards(&t(&["x"]), &[0]), vec![1.0]);
        assert_eq!(medoid_rewards(&t(&["a", "a", "a"]), &[0, 0, 0]), vec![1.0; 3]);
        // d(abc,abd)=1, d(abc,xyz)=3, d(abd,xyz)=3: sums 4, 4, 6 -> medoid 0 (first), max 3.
        assert_eq!(medoid_rewards(&t(&["abc", "abd", "xyz"]), &[0, 0, 0]), vec![1.0, 1.0 - 1.0 / 3.0, 0.0]);
    }

    #[test]
    fn groups_are_independent() {
        let texts = t(&["abc", "zzzz", "abd", "zzzy", "xyz"]);
        let grouped = medoid_rewards(&texts, &[7, 9, 7, 9, 7]);
        let a = medoid_rewards(&t(&["abc", "abd", "xyz"]), &[0, 0, 0]);
        let b = medoid_rewards(&t(&["zzzz", "zzzy"]), &[0, 0]);
        assert_eq!(grouped, vec![a[0], b[0], a[1], b[1], a[2]]);
    }
}
