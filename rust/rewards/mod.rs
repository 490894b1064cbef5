//! GRPO rewards beyond the olmOCR-bench checks: upstream's medoid, edit-distance, element-count
//! and rectangular-tables rewards (allenai/olmocr f7cfe4c, `olmocr/train/grpo_train.py`), one file
//! each except the two that look at structure (elements.rs), and the Levenshtein distance they
//! rest on.

pub mod elements;
pub mod levenshtein;
pub mod medoid;

/// Upstream's `bench_edit_distance_reward`: `fuzz.ratio(completion, reference) / 100`, 0.0
/// without a reference.
pub fn edit_similarity(completion: &[char], reference: Option<&[char]>) -> f64 {
    reference.map_or(0.0, |r| crate::fuzz::ratio(completion, r) / 100.0)
}
