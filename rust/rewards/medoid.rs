//! What it computes: upstream's `medoid_reward` (allenai/olmocr f7cfe4c,
//! `olmocr/train/grpo_train.py`): over a set of completions, the Levenshtein distance of every
//! pair; the medoid is the completion with the least mean distance to the others (the first on
//! ties); each completion's reward is `max(0, 1 − d(completion, medoid) / largest pairwise
//! distance)`, the medoid's 1.0 (all 1.0 when every distance is 0; one completion: 1.0; none: no
//! rewards).
//!
//! Passes when: — (a reward, not a test).
//!
//! Differences from upstream: none in the value for one set. Upstream applies it to whatever
//! list trl hands the reward function (one rank's slice of the batch, pages mixed); `groups`
//! here lets a caller compute it per page group (what the idea means), upstream's mode being one
//! group. The pairwise distances are computed in parallel, the GIL released.

use rayon::prelude::*;

use super::levenshtein::levenshtein;

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
    // Every pair of every group, in one parallel pass.
    let pairs: Vec<(usize, usize, usize)> = members
        .iter()
        .enumerate()
        .flat_map(|(g, (_, m))| (0..m.len()).flat_map(move |x| (x + 1..m.len()).map(move |y| (g, x, y))))
        .collect();
    let dists: Vec<usize> =
        pairs.par_iter().map(|&(g, x, y)| levenshtein(&texts[members[g].1[x]], &texts[members[g].1[y]])).collect();
    let mut out = vec![1.0; texts.len()];
    let mut cursor = 0;
    for (_, m) in &members {
        let n = m.len();
        let count = n * n.saturating_sub(1) / 2;
        let mut d = vec![vec![0usize; n]; n];
        for (k, &(_, x, y)) in pairs[cursor..cursor + count].iter().enumerate() {
            d[x][y] = dists[cursor + k];
            d[y][x] = dists[cursor + k];
        }
        cursor += count;
        for (i, r) in group_rewards(&d).into_iter().enumerate() {
            out[m[i]] = r;
        }
    }
    out
}

/// Upstream's arithmetic on one distance matrix. The mean distances share the divisor n − 1,
/// so comparing row sums picks the same medoid (first minimum).
fn group_rewards(d: &[Vec<usize>]) -> Vec<f64> {
    let n = d.len();
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

#[cfg(test)]
mod tests {
    use super::*;

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
