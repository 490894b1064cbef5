//! olmocr-rl core: olmOCR-bench checks in Rust.
//!
//! Pure Rust (testable with `cargo test`, no libpython); `py.rs` is the only file that names pyo3
//! and is compiled with the `python` feature.

pub mod checks;
pub mod files;
pub mod fuzz;
pub mod html;
#[doc(hidden)]
pub mod html_entities;
pub mod math;
pub mod pdf;
pub mod rewards;
pub mod scan;
pub mod score;
pub mod search;
pub mod suite;
pub mod table;
pub mod text;
#[cfg(test)]
mod test_rng;
#[doc(hidden)]
pub mod unicode_tables;

#[cfg(feature = "python")]
mod py;
