//! Batch scoring: many (completion, test ids) pages checked on a dedicated thread pool, with the
//! per-page aggregates of the reference's GRPO reward (docs/checks.md §7.1–7.2).
//!
//! A page's tests run in load order (file order, as the reference's loader yields them) and each
//! id counts once, so the micro and macro rewards are bit-identical to the reference's
//! `passed / total` and `sum(type rates) / n_types` (types in first-appearance order). A test on
//! which the reference raises counts as a failure that stays in the denominator, as there.

use crate::checks::{run, Guard, Page, Verdict};
use crate::suite::{Kind, TestSuite};
use crate::text::chars;
use rayon::prelude::*;
use std::sync::{Arc, Mutex};

/// One page's result.
#[derive(Debug, Clone)]
pub struct PageScore {
    pub passed: usize,
    pub total: usize,
    /// (type, passed, total) in first-appearance order.
    pub by_type: Vec<(Kind, usize, usize)>,
    /// Sum of the tests' graded credit (see `Verdict::credit`).
    pub credit: f64,
    /// Each test's verdict, in the order the tests ran (load order).
    pub results: Vec<(usize, Verdict)>,
}

impl PageScore {
    /// Micro average: passed / total (None without tests).
    pub fn reward(&self) -> Option<f64> {
        (self.total > 0).then(|| self.passed as f64 / self.total as f64)
    }

    /// Graded reward: the mean credit over the page's tests (None without tests).
    pub fn graded(&self) -> Option<f64> {
        (self.total > 0).then(|| self.credit / self.total as f64)
    }

    /// Macro average over test types: the mean of per-type pass rates.
    pub fn macro_reward(&self) -> Option<f64> {
        if self.by_type.is_empty() {
            return None;
        }
        let sum = self.by_type.iter().fold(0.0, |acc, &(_, p, t)| acc + p as f64 / t as f64);
        Some(sum / self.by_type.len() as f64)
    }
}

/// The one error of the core's entry points (py.rs turns it into a Python exception, in one
/// place): a requested test id that the suite does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreError {
    UnknownId(String),
}

/// Runs the tests `ids` on one page, in the order given (a repeated id runs again), under
/// `guard`'s rules: the one per-page routine behind `check`, `check_batch` and `check_files`.
pub fn check_page(suite: &TestSuite, text: &str, ids: &[String], guard: Guard) -> Result<Vec<Verdict>, CoreError> {
    let tests = ids
        .iter()
        .map(|id| suite.get(id).ok_or_else(|| CoreError::UnknownId(id.clone())))
        .collect::<Result<Vec<_>, _>>()?;
    let raw = chars(text);
    let page = Page::new(&raw);
    Ok(tests.into_iter().map(|test| run(test, &page, guard)).collect())
}

/// Scores one page: every distinct requested test, in load order, under `guard`'s rules.
pub fn score_page(suite: &TestSuite, text: &str, ids: &[String], guard: Guard) -> Result<PageScore, CoreError> {
    let mut idx: Vec<usize> = ids
        .iter()
        .map(|id| suite.position(id).ok_or_else(|| CoreError::UnknownId(id.clone())))
        .collect::<Result<_, _>>()?;
    idx.sort_unstable();
    idx.dedup();
    let raw = chars(text);
    let page = Page::new(&raw);
    let mut score = PageScore { passed: 0, total: 0, by_type: Vec::new(), credit: 0.0, results: Vec::new() };
    for i in idx {
        let test = &suite.tests[i];
        let verdict = run(test, &page, guard);
        score.total += 1;
        score.passed += usize::from(verdict.passed);
        score.credit += verdict.credit;
        match score.by_type.iter_mut().find(|(k, _, _)| *k == test.kind) {
            Some(entry) => {
                entry.1 += usize::from(verdict.passed);
                entry.2 += 1;
            }
            None => score.by_type.push((test.kind, usize::from(verdict.passed), 1)),
        }
        score.results.push((i, verdict));
    }
    Ok(score)
}

/// Scores many pages in parallel on the shared pool.
pub fn score_pages(
    suite: &TestSuite,
    pages: &[(String, Vec<String>)],
    threads: Option<usize>,
    guard: Guard,
) -> Vec<Result<PageScore, CoreError>> {
    if pages.len() <= 1 {
        return pages.iter().map(|(t, ids)| score_page(suite, t, ids, guard)).collect();
    }
    pool(threads).install(|| pages.par_iter().map(|(t, ids)| score_page(suite, t, ids, guard)).collect())
}

/// The pool size when the caller names none: the cores this process may use. The Python side
/// always names one (`olmocr_rl.suite.check_threads`: `OLMOCR_RL_THREADS`, else the cores divided
/// among the local ranks), so that setting is read in one place.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

struct PoolSlot {
    pid: u32,
    threads: usize,
    pool: Arc<rayon::ThreadPool>,
}

static POOL: Mutex<Option<PoolSlot>> = Mutex::new(None);

/// A dedicated pool (not rayon's global one, which tokenizers share), rebuilt when the size
/// changes or when this is a forked child (a fork inherits no worker threads).
pub fn pool(threads: Option<usize>) -> Arc<rayon::ThreadPool> {
    let threads = threads.filter(|&n| n > 0).unwrap_or_else(default_threads);
    let pid = std::process::id();
    let mut slot = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = slot.as_ref() {
        if s.pid == pid && s.threads == threads {
            return Arc::clone(&s.pool);
        }
    }
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("olmocr-rl-{i}"))
        .stack_size(16 << 20)
        .build()
        .map(Arc::new)
        .unwrap_or_else(|_| {
            // Could not spawn threads (e.g. a restricted sandbox): run on the caller's thread.
            Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .use_current_thread()
                    .build()
                    .expect("a one-thread pool on the current thread needs no new threads"),
            )
        });
    *slot = Some(PoolSlot { pid, threads, pool: Arc::clone(&built) });
    built
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_follow_load_order_and_dedup() {
        let jsonl = [
            r#"{"pdf":"a","page":1,"id":"p1","type":"present","text":"alpha"}"#,
            r#"{"pdf":"a","page":1,"id":"b1","type":"baseline"}"#,
            r#"{"pdf":"a","page":1,"id":"p2","type":"present","text":"gamma"}"#,
            r#"{"pdf":"a","page":1,"id":"a1","type":"absent","text":"delta"}"#,
        ]
        .join("\n");
        let suite = TestSuite::from_sources([("t.jsonl", jsonl.as_str())]);
        let ids: Vec<String> = ["a1", "p2", "p1", "b1", "p1"].iter().map(|s| s.to_string()).collect();
        let s = score_page(&suite, "alpha beta", &ids, Guard::None).unwrap();
        assert_eq!((s.passed, s.total), (3, 4));
        assert_eq!(s.by_type, vec![(Kind::Present, 1, 2), (Kind::Baseline, 1, 1), (Kind::Absent, 1, 1)]);
        assert_eq!(s.reward(), Some(0.75));
        assert_eq!(s.macro_reward(), Some((0.5 + 1.0 + 1.0) / 3.0));
        assert_eq!(
            score_page(&suite, "x", &["zz".to_string()], Guard::None).unwrap_err(),
            CoreError::UnknownId("zz".into())
        );
        let empty = score_page(&suite, "x", &[], Guard::None).unwrap();
        assert_eq!((empty.reward(), empty.macro_reward()), (None, None));
        // Two passes of one type add up (the first is counted at its entry's creation, the second after).
        let both = score_page(&suite, "alpha gamma", &["p1".to_string(), "p2".to_string()], Guard::None).unwrap();
        assert_eq!(both.by_type, vec![(Kind::Present, 2, 2)]);
    }

    fn suite_of(lines: &[&str]) -> TestSuite {
        let jsonl = lines.join("\n");
        TestSuite::from_sources([("t.jsonl", jsonl.as_str())])
    }

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    /// The graded reward is the mean credit: a failed `present` earns best / threshold (the best
    /// alignment of "abcdefghij" is the page's "abcdefghi": indel ratio 2·9/19, threshold 1.0), a
    /// passed test 1, a failed `absent` 0; None without tests.
    #[test]
    fn graded_reward_is_the_mean_credit() {
        let suite = suite_of(&[
            r#"{"pdf":"a","page":1,"id":"p","type":"present","text":"abcdefghij"}"#,
            r#"{"pdf":"a","page":1,"id":"a","type":"absent","text":"zzz"}"#,
            r#"{"pdf":"a","page":1,"id":"x","type":"absent","text":"abcdefghi"}"#,
        ]);
        let s = score_page(&suite, "abcdefghiX", &ids(&["p", "a"]), Guard::None).unwrap();
        assert_eq!((s.passed, s.total), (1, 2));
        let credit = 18.0 / 19.0;
        assert!((s.graded().unwrap() - (credit + 1.0) / 2.0).abs() < 1e-12, "{:?}", s.graded());
        assert_eq!(
            s.results[0].1.explanation,
            "Expected 'abcdefghij...' with threshold 1.0 but best match ratio was 0.947"
        );
        let s = score_page(&suite, "abcdefghiX", &ids(&["p", "a", "x"]), Guard::None).unwrap();
        assert!(
            (s.credit - (credit + 1.0)).abs() < 1e-12 && (s.graded().unwrap() - (credit + 1.0) / 3.0).abs() < 1e-12
        );
        assert_eq!(s.results.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(score_page(&suite, "x", &[], Guard::None).unwrap().graded(), None);
    }

    /// `check_page` runs the ids in the order given, a repeated id again; an unknown id is an
    /// error, whatever comes before it.
    #[test]
    fn check_page_runs_the_ids_as_given() {
        let suite = suite_of(&[
            r#"{"pdf":"a","page":1,"id":"p","type":"present","text":"alpha"}"#,
            r#"{"pdf":"a","page":1,"id":"a","type":"absent","text":"alpha"}"#,
        ]);
        let got = check_page(&suite, "alpha", &ids(&["a", "p", "a"]), Guard::None).unwrap();
        assert_eq!(got.iter().map(|v| v.passed).collect::<Vec<_>>(), vec![false, true, false]);
        assert_eq!(
            got[0].explanation,
            "Expected absence of 'alpha...' with threshold 1.0 but best match ratio was 1.000"
        );
        assert!(check_page(&suite, "alpha", &[], Guard::None).unwrap().is_empty());
        assert_eq!(
            check_page(&suite, "alpha", &ids(&["p", "q"]), Guard::None).unwrap_err(),
            CoreError::UnknownId("q".into())
        );
    }

    /// Many pages give one result each, in the pages' order, the same as scoring them one by
    /// one, on any pool size (also one page, and none).
    #[test]
    fn score_pages_keeps_the_page_order() {
        let suite = suite_of(&[
            r#"{"pdf":"a","page":1,"id":"p","type":"present","text":"alpha"}"#,
            r#"{"pdf":"a","page":1,"id":"b","type":"baseline"}"#,
        ]);
        let pages: Vec<(String, Vec<String>)> = (0..7)
            .map(|i| (if i % 2 == 0 { "alpha".to_string() } else { format!("beta {i}") }, ids(&["p", "b"])))
            .chain([("x".to_string(), ids(&["nope"]))])
            .collect();
        for threads in [None, Some(1), Some(3)] {
            let got = score_pages(&suite, &pages, threads, Guard::None);
            assert_eq!(got.len(), pages.len());
            for (i, r) in got.iter().take(7).enumerate() {
                assert_eq!(r.as_ref().unwrap().passed, if i % 2 == 0 { 2 } else { 1 }, "page {i}");
            }
            assert_eq!(got[7].as_ref().unwrap_err(), &CoreError::UnknownId("nope".into()));
            let one = score_pages(&suite, &pages[1..2], threads, Guard::None);
            assert_eq!(one.len(), 1);
            assert_eq!(one[0].as_ref().unwrap().passed, 1);
        }
        assert!(score_pages(&suite, &[], None, Guard::None).is_empty());
    }

    /// Without a size the pool has as many threads as the process may use; a size of 0 means
    /// the same. Its threads have a 16 MiB stack: a recursion needing more than the 2 MiB of a
    /// default Rust thread runs on them.
    #[test]
    fn pool_defaults_and_stack() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(default_threads(), cores);
        assert_eq!(pool(None).current_num_threads(), cores);
        assert_eq!(pool(Some(0)).current_num_threads(), cores);
        fn deep(n: u32) -> u64 {
            let pad = std::hint::black_box([n as u8; 1024]);
            if n == 0 {
                u64::from(pad[0])
            } else {
                deep(n - 1) + u64::from(pad[7])
            }
        }
        // ~6 MiB of frames.
        assert_eq!(pool(Some(2)).install(|| deep(6000)), (1..=6000u64).map(|n| n as u8 as u64).sum::<u64>());
    }

    #[test]
    fn pool_is_reused_and_resized() {
        let a = pool(Some(2));
        let b = pool(Some(2));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(pool(Some(1)).current_num_threads(), 1);
    }
}
