//! The repetition-loop detector: says whether a growing token sequence (a completion being
//! generated, or a text read as code points) has fallen into a loop.
//!
//! What it detects: a suffix that repeats a period of `p` tokens exactly (`s[i] == s[i - p]` for
//! every token of the suffix after its first period), 1 <= p <= `max_period`, spanning at least
//! `min_span` tokens and at least `min_repeats` periods. The smallest such `p` is reported, with
//! where the periodic suffix starts and `cut`: the length at which the rule first held. Only exact
//! repetition counts: a loop that varies (a counter, a sampled stray token) resets the count.
//!
//! When: `LoopDetector::push` is fed every new token (or `extend`, any number at a time); once the
//! rule holds the result is latched and later tokens are ignored. The result depends only on the
//! tokens, never on how they were fed (one at a time, every 16, all at once), so every engine and a
//! re-run on the returned ids find the same loop and the same cut.
//!
//! Why hand-written: no maintained crate does incremental periodicity at a fixed bound; the
//! algorithm is a dozen lines. For each period p we keep `run[p]`, the number of consecutive tokens
//! at the end of the sequence equal to the token p before them; a new token updates every run in
//! one pass over the last `max_period` tokens (kept twice in a buffer of 2 x `max_period`, so the
//! pass is a contiguous, vectorisable loop). The periodic suffix of period p spans `run[p] + p`.
//!
//! Bounds: time O(`max_period`) per token, whatever the input (100k tokens of one id stop at the
//! latch; without the rule firing, 100k tokens x 256 periods are 25.6M compare-and-adds); memory
//! O(`max_period`). `max_period` is at most MAX_PERIOD_BOUND. No input panics.

/// The largest `max_period` accepted: keeps the per-token cost and the memory small.
pub const MAX_PERIOD_BOUND: usize = 4096;

/// When a periodic suffix counts as a loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopRule {
    pub max_period: usize,
    pub min_repeats: usize,
    pub min_span: usize,
}

impl LoopRule {
    /// The rule, or why it is not one.
    pub fn new(max_period: usize, min_repeats: usize, min_span: usize) -> Result<LoopRule, String> {
        if max_period == 0 || max_period > MAX_PERIOD_BOUND {
            return Err(format!("max_period must be between 1 and {MAX_PERIOD_BOUND}, not {max_period}"));
        }
        if min_repeats < 2 {
            return Err(format!(
                "min_repeats must be at least 2 (a period seen once is no repetition), not {min_repeats}"
            ));
        }
        if min_span < 2 {
            return Err(format!("min_span must be at least 2 tokens, not {min_span}"));
        }
        Ok(LoopRule { max_period, min_repeats, min_span })
    }

    /// The tokens a periodic suffix of period `p` must span to be a loop.
    fn needed(&self, p: usize) -> usize {
        self.min_span.max(self.min_repeats.saturating_mul(p))
    }
}

/// A loop found: the periodic suffix starts at `start` (tokens before it: the prefix), repeats a
/// period of `period` tokens, and the rule first held when the sequence was `cut` tokens long
/// (so `cut - start` tokens were inside the loop, at least `min_span`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loop {
    pub start: usize,
    pub period: usize,
    pub cut: usize,
}

/// The periods' runs, updated token by token (see the file's opening comment).
struct Runs {
    max_period: usize,
    /// The last `max_period` tokens, written twice: `window[pos..pos + max_period]` holds them
    /// oldest first.
    window: Vec<u32>,
    /// `run[j]`: the run of period `max_period - j` (reversed, to match the window's order).
    run: Vec<u32>,
    len: usize,
}

impl Runs {
    fn new(max_period: usize) -> Runs {
        Runs { max_period, window: vec![0; 2 * max_period], run: vec![0; max_period], len: 0 }
    }

    /// One more token; returns whether some run reached `threshold` (a cheap bound for the rule).
    fn push(&mut self, x: u32, threshold: u32) -> bool {
        let m = self.max_period;
        let pos = self.len % m;
        let last = &self.window[pos..pos + m];
        let mut hit = 0u32;
        // Branch-free and without an unsigned max (not in x86-64's baseline SSE2), so that it
        // vectorises: a run grows by one where the token repeats, else drops to 0.
        for (r, &prev) in self.run.iter_mut().zip(last) {
            let keep = 0u32.wrapping_sub(u32::from(prev == x));
            *r = r.wrapping_add(1) & keep;
            hit |= u32::from(*r >= threshold);
        }
        if self.len < m {
            // Periods longer than the sequence compared against the buffer's fill: no run yet.
            self.run[..m - self.len].fill(0);
            hit = u32::from(self.run.iter().any(|&r| r >= threshold));
        }
        self.window[pos] = x;
        self.window[pos + m] = x;
        self.len += 1;
        hit != 0
    }

    /// The span of the periodic suffix of period `p` (0 without a repeat).
    fn span(&self, p: usize) -> usize {
        match self.run[self.max_period - p] as usize {
            0 => 0,
            r => r + p,
        }
    }
}

/// Feeds tokens and says when they fall into a loop (see the file's opening comment).
pub struct LoopDetector {
    rule: LoopRule,
    runs: Runs,
    found: Option<Loop>,
    ignored: usize, // tokens fed after the loop was found
}

impl LoopDetector {
    pub fn new(rule: LoopRule) -> LoopDetector {
        LoopDetector { rule, runs: Runs::new(rule.max_period), found: None, ignored: 0 }
    }

    pub fn rule(&self) -> LoopRule {
        self.rule
    }

    /// Tokens fed so far (those after a loop was found included).
    pub fn len(&self) -> usize {
        self.runs.len + self.ignored
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The loop, once found.
    pub fn found(&self) -> Option<Loop> {
        self.found
    }

    /// One more token; the loop once found (then latched: later tokens change nothing).
    pub fn push(&mut self, x: u32) -> Option<Loop> {
        if self.found.is_some() {
            self.ignored += 1;
            return self.found;
        }
        // A loop's span is a run plus its period: nothing to look at until some run is that long.
        let threshold = self.rule.min_span.saturating_sub(self.rule.max_period).clamp(1, u32::MAX as usize) as u32;
        let near = self.runs.push(x, threshold);
        let n = self.runs.len;
        if n < self.rule.min_span || !near {
            return None;
        }
        for p in 1..=self.rule.max_period.min(n) {
            let span = self.runs.span(p);
            if span >= self.rule.needed(p) {
                self.found = Some(Loop { start: n - span, period: p, cut: n });
                break;
            }
        }
        self.found
    }

    /// Several more tokens (`push` each).
    pub fn extend(&mut self, xs: &[u32]) -> Option<Loop> {
        for (i, &x) in xs.iter().enumerate() {
            if self.push(x).is_some() {
                self.ignored += xs.len() - i - 1;
                break;
            }
        }
        self.found
    }
}

/// The loop of a whole sequence (the first length at which `rule` holds), if any.
pub fn find_loop(tokens: &[u32], rule: LoopRule) -> Option<Loop> {
    LoopDetector::new(rule).extend(tokens)
}

/// For measuring legitimate text: the longest periodic stretch of each period 1..=`max_period`
/// anywhere in `tokens` (`out[p - 1]`, 0 where none repeats), whatever its place.
pub fn longest_runs(tokens: &[u32], max_period: usize) -> Vec<usize> {
    let m = max_period.clamp(1, MAX_PERIOD_BOUND);
    let mut runs = Runs::new(m);
    let mut best = vec![0usize; m];
    for &x in tokens {
        runs.push(x, u32::MAX);
        for (p, b) in best.iter_mut().enumerate() {
            *b = (*b).max(runs.span(p + 1));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::XorShift;

    fn rule(max_period: usize, min_repeats: usize, min_span: usize) -> LoopRule {
        LoopRule::new(max_period, min_repeats, min_span).unwrap()
    }

    /// The rule checked the slow way: at each length, each period's periodic suffix counted back
    /// from the end; the first length (and smallest period) at which it holds.
    fn naive(tokens: &[u32], r: LoopRule) -> Option<Loop> {
        for n in 1..=tokens.len() {
            let s = &tokens[..n];
            for p in 1..=r.max_period.min(n) {
                let run = (p..n).rev().take_while(|&i| s[i] == s[i - p]).count();
                let span = if run == 0 { 0 } else { run + p };
                if span >= r.min_span.max(r.min_repeats * p) {
                    return Some(Loop { start: n - span, period: p, cut: n });
                }
            }
        }
        None
    }

    fn ids(text: &str) -> Vec<u32> {
        text.chars().map(|c| c as u32).collect()
    }

    #[test]
    fn one_token_repeated_after_a_prefix() {
        let t = ids(&format!("abc{}", "x".repeat(100)));
        assert_eq!(find_loop(&t, rule(8, 3, 10)), Some(Loop { start: 3, period: 1, cut: 13 }));
    }

    #[test]
    fn a_line_repeated_reports_its_period_and_where_it_starts() {
        let t = ids(&format!("Title\n{}", "| 0 | 0 |\n".repeat(30)));
        let found = find_loop(&t, rule(64, 4, 40)).unwrap();
        assert_eq!(found.period, 10);
        // "Title\n" ends with the row's last character, so the periodic suffix starts one before the first
        // row; the rule holds once it spans 40 = 4 rows.
        assert_eq!(found.start, 5);
        assert_eq!(found.cut, 45);
        assert_eq!(&t[found.start + found.period..found.cut], &t[found.start..found.cut - found.period]);
    }

    #[test]
    fn the_smallest_period_is_reported() {
        let t = ids(&"ab".repeat(50));
        assert_eq!(find_loop(&t, rule(16, 2, 20)).map(|l| l.period), Some(2));
    }

    #[test]
    fn too_few_repeats_or_too_short_a_span_is_no_loop() {
        // A 50-token period three times spans 150 >= min_span but has 3 < 4 repeats.
        let mut rng = XorShift(7);
        let period: Vec<u32> = (0..50).map(|_| rng.below(1000) as u32).collect();
        let t: Vec<u32> = period.iter().cycle().take(150).copied().collect();
        assert_eq!(find_loop(&t, rule(64, 4, 100)), None);
        assert_eq!(find_loop(&t, rule(64, 3, 100)).map(|l| (l.start, l.period, l.cut)), Some((0, 50, 150)));
        // One token 99 times: a span of 99 < 100.
        assert_eq!(find_loop(&[5; 99], rule(64, 3, 100)), None);
        assert_eq!(find_loop(&[5; 100], rule(64, 3, 100)).map(|l| l.cut), Some(100));
        // A period longer than max_period is not looked for.
        assert_eq!(find_loop(&t, rule(49, 2, 100)), None);
    }

    #[test]
    fn rows_that_differ_in_a_number_are_no_loop() {
        let table: String = (0..2000).map(|i| format!("| {i} | 0 | 0 | 0 |\n")).collect();
        assert_eq!(find_loop(&ids(&table), rule(256, 4, 64)), None);
        let numbers: String = (0..5000).map(|i| format!("{i}\n")).collect();
        assert_eq!(find_loop(&ids(&numbers), rule(256, 4, 64)), None);
    }

    #[test]
    fn found_is_latched_and_later_tokens_are_counted_not_read() {
        let mut d = LoopDetector::new(rule(4, 2, 6));
        let l = d.extend(&[1, 2, 3, 9, 9, 9, 9, 9, 9, 4, 5]).unwrap();
        assert_eq!(l, Loop { start: 3, period: 1, cut: 9 });
        assert_eq!(d.len(), 11);
        assert_eq!(d.push(7), Some(l));
        assert_eq!(d.len(), 12);
    }

    #[test]
    fn empty_until_a_token_is_fed() {
        let mut d = LoopDetector::new(rule(4, 2, 6));
        assert!(d.is_empty());
        d.push(1);
        assert!(!d.is_empty());
    }

    #[test]
    fn the_rule_refuses_what_is_no_rule() {
        assert!(LoopRule::new(0, 2, 10).is_err());
        assert!(LoopRule::new(MAX_PERIOD_BOUND + 1, 2, 10).is_err());
        assert!(LoopRule::new(8, 1, 10).is_err());
        assert!(LoopRule::new(8, 2, 1).is_err());
        assert!(LoopRule::new(MAX_PERIOD_BOUND, 2, 2).is_ok());
    }

    /// Random sequences over a small alphabet (accidental repeats) with loops of random periods
    /// spliced in: the detector agrees with the slow rule whatever the chunks it is fed in.
    #[test]
    fn agrees_with_the_slow_rule_whatever_the_feeding() {
        let mut rng = XorShift(0x5eed_1005);
        for case in 0..400 {
            let r = rule(1 + rng.below(12), 2 + rng.below(4), 2 + rng.below(30));
            let alphabet = 1 + rng.below(6) as u32;
            let mut t: Vec<u32> = (0..rng.below(60)).map(|_| rng.next() as u32 % alphabet).collect();
            if rng.below(3) > 0 {
                let period: Vec<u32> = (0..1 + rng.below(14)).map(|_| rng.next() as u32 % (alphabet + 3)).collect();
                t.extend(period.iter().cycle().take(rng.below(90)));
                t.extend((0..rng.below(20)).map(|_| rng.next() as u32 % alphabet));
            }
            let expected = naive(&t, r);
            assert_eq!(find_loop(&t, r), expected, "case {case}: {t:?} under {r:?}");
            let mut d = LoopDetector::new(r);
            let mut at = 0;
            while at < t.len() {
                let step = 1 + rng.below(17);
                d.extend(&t[at..(at + step).min(t.len())]);
                at += step;
            }
            assert_eq!(d.found(), expected, "case {case}, fed in chunks");
            assert_eq!(d.len(), t.len());
            if let Some(l) = expected {
                assert!(l.cut - l.start >= r.min_span && l.cut - l.start >= r.min_repeats * l.period);
            }
        }
    }

    #[test]
    fn longest_runs_measures_each_period() {
        let t = ids("xx abcabcabc y zzzz");
        let best = longest_runs(&t, 4);
        // Period 1 and 2: "zzzz"; 3: "abcabcabc"; 4: none (" y " repeats its space two apart: 3 < 4 for period 2).
        assert_eq!(best, vec![4, 4, 9, 0]);
    }

    /// Hostile sequences are bounded in time and never panic: 100k tokens of one id, alternating
    /// ids, a long table whose rows differ in a number (never a loop), each detected with the
    /// largest period bound and measured without the latch.
    #[test]
    fn hostile_sequences_take_bounded_time() {
        let one = vec![7u32; 100_000];
        let alternating: Vec<u32> = (0..100_000).map(|i| i % 2).collect();
        let table: Vec<u32> = ids(&(0..12_000).map(|i| format!("| {i} | 0 |\n")).collect::<String>());
        let r = rule(MAX_PERIOD_BOUND, 2, 1_000_000);
        for t in [&one, &alternating, &table] {
            let started = std::time::Instant::now();
            assert_eq!(find_loop(t, r), None);
            let _ = longest_runs(t, 256);
            assert!(started.elapsed().as_secs_f64() < 5.0, "{:?} for {} tokens", started.elapsed(), t.len());
        }
        assert_eq!(find_loop(&one, rule(256, 4, 1000)).map(|l| l.cut), Some(1000));
        assert_eq!(find_loop(&alternating, rule(256, 4, 1000)).map(|l| (l.start, l.period, l.cut)), Some((0, 2, 1000)));
        assert_eq!(find_loop(&[u32::MAX; 10], rule(2, 2, 4)).map(|l| l.cut), Some(4));
    }
}
