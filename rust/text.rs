//! Python-compatible text primitives and olmOCR-bench's `normalize_text`.
//!
//! Strings are handled as code points (`[char]`), as Python's `str` is: every length, index and
//! slice in the checks counts code points. The predicates reproduce CPython 3.11 (Unicode 14.0),
//! the interpreter olmOCR-bench's reference runs on; `unicode_tables.rs` is generated from it by
//! `tools/gen_unicode_tables.py`.
//!
//! Differences from upstream: none known. NFC comes from the `unicode-normalization` crate
//! (a newer Unicode version); code points unassigned in Unicode 14 are passed through untouched
//! as Python 3.11 does (normalization stability guarantees the rest agrees).

use crate::unicode_tables as tables;
use unicode_normalization::UnicodeNormalization;

fn in_ranges(table: &[(u32, u32)], c: char) -> bool {
    let cp = c as u32;
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Python `str.isspace()` for one code point, which is also what `\s` matches in `re`:
/// Unicode White_Space plus U+001C..U+001F.
pub fn is_py_space(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1c}'..='\u{20}'
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// Python `str.isalnum()` for one code point (not Rust's `char::is_alphanumeric`).
pub fn is_py_alnum(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    in_ranges(tables::ALNUM, c)
}

/// Python `str.isprintable()` for one code point.
pub fn is_py_printable(c: char) -> bool {
    !in_ranges(tables::NOT_PRINTABLE, c)
}

fn lower_one(c: char) -> Option<&'static str> {
    let cp = c as u32;
    tables::LOWER.binary_search_by_key(&cp, |&(k, _)| k).ok().map(|i| tables::LOWER[i].1)
}

/// `_sre.unicode_tolower`: the simple (one code point) lowercase mapping `re` uses.
pub fn simple_lower(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    let cp = c as u32;
    match tables::SIMPLE_LOWER.binary_search_by_key(&cp, |&(k, _)| k) {
        Ok(i) => char::from_u32(tables::SIMPLE_LOWER[i].1).unwrap_or(c),
        Err(_) => c,
    }
}

/// Whether `c` matches the pattern character `m` under `re.IGNORECASE` (str patterns).
pub fn re_ignorecase_eq(c: char, m: char) -> bool {
    if c == m {
        return true;
    }
    if c.is_ascii() && m.is_ascii() {
        // No casefix class joins two ASCII characters other than by ASCII case.
        return c.eq_ignore_ascii_case(&m);
    }
    let (lc, lm) = (simple_lower(c), simple_lower(m));
    lc == lm || tables::EXTRA_CASES.iter().any(|&(a, b)| a == lm as u32 && b == lc as u32)
}

/// Python `str.lower()`, including the Final_Sigma rule for U+03A3.
pub fn py_lower(s: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        // A run of ASCII at a time.
        let end = find_from(s, i, |c| !c.is_ascii());
        out.extend(s[i..end].iter().map(|c| c.to_ascii_lowercase()));
        if end == s.len() {
            break;
        }
        i = end;
        let c = s[i];
        i += 1;
        if c == '\u{3a3}' {
            out.push(if final_sigma(s, i - 1) { '\u{3c2}' } else { '\u{3c3}' });
        } else if let Some(low) = lower_one(c) {
            out.extend(low.chars());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
fn py_lower_simple(s: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(s.len());
    for (i, &c) in s.iter().enumerate() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else if c == '\u{3a3}' {
            out.push(if final_sigma(s, i) { '\u{3c2}' } else { '\u{3c3}' });
        } else if let Some(low) = lower_one(c) {
            out.extend(low.chars());
        } else {
            out.push(c);
        }
    }
    out
}

/// CPython's context test: a cased letter (skipping case-ignorables) before position `i`, and
/// no cased letter (skipping case-ignorables) after it.
fn final_sigma(s: &[char], i: usize) -> bool {
    let ignorable = |c: char| in_ranges(tables::SIGMA_IGNORABLE, c);
    let cased = |c: char| in_ranges(tables::SIGMA_CASED, c);
    let before = s[..i].iter().rev().find(|&&c| !ignorable(c));
    if !before.is_some_and(|&c| cased(c)) {
        return false;
    }
    let after = s[i + 1..].iter().find(|&&c| !ignorable(c));
    !after.is_some_and(|&c| cased(c))
}

/// Unicode NFC as Python 3.11's `unicodedata.normalize("NFC", s)`.
pub fn nfc(s: &[char]) -> Vec<char> {
    nfc_owned(s.to_vec())
}

/// [`nfc`] of an owned string, returned as it is when it is already NFC.
pub fn nfc_owned(s: Vec<char>) -> Vec<char> {
    // Fast path: ASCII and Latin-1 letters below U+0300 are NFC-stable and never combine
    // with a preceding character.
    if s.iter().all(|&c| (c as u32) < 0x300) {
        return s;
    }
    // Already NFC under the crate's (newer) Unicode is already NFC under Unicode 14: composition
    // pairs and decompositions of assigned characters never change.
    if unicode_normalization::is_nfc_quick(s.iter().copied()) == unicode_normalization::IsNormalized::Yes {
        return s;
    }
    let mut out = Vec::with_capacity(s.len());
    let mut chunk_start = 0;
    for (i, &c) in s.iter().enumerate() {
        if !c.is_ascii() && in_ranges(tables::UNASSIGNED, c) {
            // Unassigned in Unicode 14: a starter with no decomposition and no composition.
            out.extend(s[chunk_start..i].iter().copied().nfc());
            out.push(c);
            chunk_start = i + 1;
        }
    }
    out.extend(s[chunk_start..].iter().copied().nfc());
    out
}

/// Python `str.strip()` (PyWS on both ends).
pub fn py_strip(s: &[char]) -> &[char] {
    let start = s.iter().position(|&c| !is_py_space(c)).unwrap_or(s.len());
    let end = s.iter().rposition(|&c| !is_py_space(c)).map_or(start, |e| e + 1);
    &s[start..end]
}

/// Lone UTF-16 surrogates (U+D800..U+DFFF), which Python strings may hold (model output, and
/// the reference's test records through `json`'s `"\ud800"` escapes) but Rust strings cannot,
/// are carried as stand-ins: the last 2,048 code points, U+10F800 + (surrogate - U+D800).
/// There they behave as Python's surrogates do for everything the checks ask (not alphanumeric,
/// not space, not printable, one character, unchanged by `lower()` and NFC), and they go back
/// to Python as surrogates when the call's inputs held any (a real U+10F800..U+10FFFF beside a
/// lone surrogate in the same call, private-use and noncharacter code points no model writes,
/// would come back as a surrogate too; without surrogates it comes back as itself).
pub const STAND_IN_BASE: u32 = 0x10F800;

/// The stand-in of a lone surrogate code unit.
pub fn stand_in(unit: u16) -> char {
    char::from_u32(STAND_IN_BASE + (u32::from(unit) - 0xD800)).expect("U+10F800..U+10FFFF are scalar values")
}

/// The surrogate a stand-in stands for, if `c` is one.
pub fn stood_in(c: char) -> Option<u16> {
    let c = u32::from(c);
    (c >= STAND_IN_BASE).then(|| (0xD800 + (c - STAND_IN_BASE)) as u16)
}

/// JSON text with every escape of a lone surrogate (`"\ud800"` not followed by its low half)
/// replaced by the escaped pair of its stand-in, so a JSON parser that rejects lone surrogates
/// reads what Python's `json` reads; the text itself when it has none.
pub fn json_stand_ins(json: &str) -> std::borrow::Cow<'_, str> {
    if !json.contains("\\u") {
        return std::borrow::Cow::Borrowed(json);
    }
    let b = json.as_bytes();
    let hex4 = |at: usize| -> Option<u16> {
        let h = b.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    };
    let mut out = String::with_capacity(json.len());
    let (mut i, mut last, mut in_string, mut changed) = (0, 0, false, false);
    while i < b.len() {
        match b[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                if b.get(i + 1) == Some(&b'u') {
                    if let Some(unit) = hex4(i + 2) {
                        let paired = (0xD800..0xDC00).contains(&unit)
                            && b.get(i + 6) == Some(&b'\\')
                            && b.get(i + 7) == Some(&b'u')
                            && hex4(i + 8).is_some_and(|low| (0xDC00..0xE000).contains(&low));
                        if paired {
                            i += 12;
                            continue;
                        }
                        if (0xD800..0xE000).contains(&unit) {
                            let mut pair = [0u16; 2];
                            stand_in(unit).encode_utf16(&mut pair);
                            out.push_str(&json[last..i]);
                            out.push_str(&format!("\\u{:04x}\\u{:04x}", pair[0], pair[1]));
                            i += 6;
                            last = i;
                            changed = true;
                            continue;
                        }
                    }
                }
                i += 2; // any other escape: skip the escaped character
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if !changed {
        return std::borrow::Cow::Borrowed(json);
    }
    out.push_str(&json[last..]);
    std::borrow::Cow::Owned(out)
}

/// The code points of `s`.
pub fn chars(s: &str) -> Vec<char> {
    // Runs of ASCII are found eight bytes at a time and widened in one go; the other
    // characters are decoded as `str::chars` does.
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < bytes.len() {
        let mut j = i;
        while let Some(block) = bytes.get(j..j + 8) {
            if block.iter().fold(0u8, |acc, &b| acc | b) >= 0x80 {
                break;
            }
            j += 8;
        }
        while bytes.get(j).is_some_and(u8::is_ascii) {
            j += 1;
        }
        out.extend(bytes[i..j].iter().map(|&b| char::from(b)));
        // `j` is at a character boundary: the end, or the start of a non-ASCII character.
        let Some(c) = s.get(j..).and_then(|rest| rest.chars().next()) else { break };
        out.push(c);
        i = j + c.len_utf8();
    }
    out
}

pub fn string(s: &[char]) -> String {
    s.iter().collect()
}

fn starts_with_at(s: &[char], p: usize, pat: &[char]) -> bool {
    // Compared inline: the patterns are a few characters long, shorter than a `memcmp` call.
    s.get(p..p + pat.len()).is_some_and(|w| w.iter().zip(pat).all(|(a, b)| a == b))
}

/// `re.sub(r"(D)(.*?)\1", r"\2", s)` for a delimiter `D` of one or two equal characters `d`:
/// from an opening delimiter the match ends at the nearest later delimiter on the same line.
/// `None` when nothing matches (the text is unchanged).
fn strip_delimited(s: &[char], d: char, width: usize) -> Option<Vec<char>> {
    let mut out = Splice::new(s);
    let mut dead_until = 0; // no opening before this index can find its close
    let mut p = 0;
    while p < s.len() {
        // Characters other than `d` stay as they are.
        p = find_from(s, p, |c| c == d);
        if p == s.len() {
            break;
        }
        if p >= dead_until && delim_at(s, p, d, width) {
            match find_close(s, p + width, d, width) {
                Ok(q) => {
                    out.replace(p, q + width, &s[p + width..q]);
                    p = q + width;
                    continue;
                }
                // No delimiter before the end of the line: no opening before it can match
                // either (its close would have been this one's).
                Err(eol) => dead_until = eol,
            }
        }
        p += 1;
    }
    out.finish()
}

/// The output of a rewrite that keeps most of its input: the input with some ranges replaced,
/// in increasing order. Nothing is allocated until the first replacement.
struct Splice<'a> {
    src: &'a [char],
    out: Option<Vec<char>>,
    /// `src[kept..]` is not yet accounted for in `out`.
    kept: usize,
}

impl<'a> Splice<'a> {
    fn new(src: &'a [char]) -> Self {
        Splice { src, out: None, kept: 0 }
    }

    /// Replaces `src[start..end]` (`kept <= start <= end`) by `with`.
    fn replace(&mut self, start: usize, end: usize, with: &[char]) {
        let src = self.src;
        let out = self.out.get_or_insert_with(|| Vec::with_capacity(src.len()));
        out.extend_from_slice(&src[self.kept..start]);
        out.extend_from_slice(with);
        self.kept = end;
    }

    /// The rewritten text, or `None` when nothing was replaced.
    fn finish(self) -> Option<Vec<char>> {
        let mut out = self.out?;
        out.extend_from_slice(&self.src[self.kept..]);
        Some(out)
    }
}

/// The first `i >= from` with `pred(s[i])`, or `s.len()`. Blocks of characters are tested
/// without branches first (vectorized for simple predicates).
#[inline]
fn find_from(s: &[char], from: usize, pred: impl Fn(char) -> bool) -> usize {
    const BLOCK: usize = 16;
    let mut i = from;
    while let Some(block) = s.get(i..i + BLOCK) {
        // A u32 accumulator matches the lanes of `char`, so this compiles to plain vector ORs.
        if block.iter().fold(0u32, |acc, &c| acc | u32::from(pred(c))) != 0 {
            break;
        }
        i += BLOCK;
    }
    s[i..].iter().position(|&c| pred(c)).map_or(s.len(), |o| i + o)
}

fn delim_at(s: &[char], p: usize, d: char, width: usize) -> bool {
    p + width <= s.len() && s[p..p + width].iter().all(|&c| c == d)
}

/// The first `q >= from` where the delimiter starts, or `Err(end of line)`.
fn find_close(s: &[char], from: usize, d: char, width: usize) -> Result<usize, usize> {
    let mut q = from;
    while q < s.len() {
        if s[q] == '\n' {
            return Err(q);
        }
        if delim_at(s, q, d, width) {
            return Ok(q);
        }
        q += 1;
    }
    Err(s.len())
}

/// Removes every exact occurrence of each pattern, or replaces it with `with` (patterns tried
/// in order at each position, left to right). `None` when none occurs.
fn replace_literals(s: &[char], pats: &[&[char]], with: Option<char>) -> Option<Vec<char>> {
    debug_assert!(pats.iter().all(|p| p.first() == Some(&'<')));
    let with: &[char] = with.as_slice();
    let mut out = Splice::new(s);
    let mut p = 0;
    while p < s.len() {
        // Every pattern starts with '<'.
        p = find_from(s, p, |c| c == '<');
        if p == s.len() {
            break;
        }
        match pats.iter().find(|pat| starts_with_at(s, p, pat)) {
            Some(pat) => {
                out.replace(p, p + pat.len(), with);
                p += pat.len();
            }
            None => p += 1,
        }
    }
    out.finish()
}

/// Collapses every maximal run of Python whitespace into one U+0020 (no trim).
pub fn collapse_ws(s: &[char]) -> Vec<char> {
    let mut out = s.to_vec();
    collapse_ws_in_place(&mut out);
    out
}

/// [`collapse_ws`] in place. Returns an upper bound of the code points left in `s`.
pub fn collapse_ws_in_place(s: &mut Vec<char>) -> u32 {
    const BLOCK: usize = 16;
    let n = s.len();
    // `s[..j]` is the output for the input `s[..i]` (`j <= i`); `prev`: `s[i - 1]` was
    // whitespace; `hi` bounds every character written.
    let (mut i, mut j) = (0usize, 0usize);
    let mut prev = false;
    let mut hi = 0u32;
    while i < n {
        // A block whose only whitespace is single U+0020s (the usual case in prose) stays as it
        // is. Code points in U+0021..U+0084 and U+00A1..U+167F are never whitespace.
        if let Some(block) = s.get(i..i + BLOCK) {
            let (odd, top) = block.iter().fold((false, 0u32), |(odd, top), &c| {
                let u = c as u32;
                let plain = (0x20..0x85).contains(&u) | (0xa1..0x1680).contains(&u);
                (odd | !plain, top.max(u))
            });
            let double = block.windows(2).fold(false, |acc, w| acc | ((w[0] == ' ') & (w[1] == ' ')));
            if !(odd | double | (prev & (block[0] == ' '))) {
                prev = block[BLOCK - 1] == ' ';
                hi = hi.max(top);
                if j < i {
                    s.copy_within(i..i + BLOCK, j);
                }
                i += BLOCK;
                j += BLOCK;
                continue;
            }
        }
        // Otherwise one block character by character.
        for _ in 0..BLOCK.min(n - i) {
            let c = s[i];
            let space = is_py_space(c);
            let w = if space { ' ' } else { c };
            s[j] = w;
            hi = hi.max(w as u32);
            j += usize::from(!(space && prev));
            prev = space;
            i += 1;
        }
    }
    s.truncate(j);
    hi
}

/// olmOCR-bench `normalize_text`, step by step in the reference's order (docs/checks.md §2).
pub fn normalize(s: &[char]) -> Vec<char> {
    const BR: &[char] = &['<', 'b', 'r', '>'];
    const BR_SLASH: &[char] = &['<', 'b', 'r', '/', '>'];
    const B_TAGS: &[&[char]] = &[&['<', 'b', '>'], &['<', '/', 'b', '>']];
    const I_TAGS: &[&[char]] = &[&['<', 'i', '>'], &['<', '/', 'i', '>']];
    // Each step only changes text holding its trigger characters ('<', '*', '_'); skipping the
    // steps that cannot apply keeps plain prose to two linear passes. A step that finds
    // nothing to change returns `None` and the text is not copied.
    let (mut lt, mut star, mut under) = (false, false, false);
    for &c in s {
        lt |= c == '<';
        star |= c == '*';
        under |= c == '_';
    }
    let mut cur: Option<Vec<char>> = None;
    let mut step = |f: &dyn Fn(&[char]) -> Option<Vec<char>>| {
        if let Some(next) = f(cur.as_deref().unwrap_or(s)) {
            cur = Some(next);
        }
    };
    if lt {
        step(&|t| replace_literals(t, &[BR, BR_SLASH], Some(' ')));
    }
    if star {
        step(&|t| strip_delimited(t, '*', 2));
    }
    if under {
        step(&|t| strip_delimited(t, '_', 2));
    }
    if lt {
        step(&|t| replace_literals(t, B_TAGS, None));
        step(&|t| replace_literals(t, I_TAGS, None));
    }
    // `(\*\*|__)(.*?)\1` then `(\*|_)(.*?)\1`: at any position only one alternative can start,
    // and the two delimiter characters never interact, so each is one left-to-right scan.
    // (Tag removal can join two '*' into "**", so these run whenever either character occurs.)
    if star || under {
        step(&|t| strip_mixed(t, 2));
        step(&|t| strip_mixed(t, 1));
    }
    let mut s = cur.unwrap_or_else(|| s.to_vec());
    let hi = collapse_ws_in_place(&mut s);
    // Below U+0300 the text is NFC already (see `nfc_owned`), and every character the last
    // step maps is at least U+00B5.
    let mut s = if hi < 0x300 { s } else { nfc_owned(s) };
    if hi < 0xb5 {
        return s;
    }
    for c in s.iter_mut().filter(|c| **c >= '\u{b5}') {
        *c = match *c {
            '\u{2018}' | '\u{2019}' | '\u{201a}' => '\'',
            '\u{201c}' | '\u{201d}' | '\u{201e}' => '"',
            '\u{ff3f}' => '_',
            '\u{2013}' | '\u{2014}' | '\u{2011}' | '\u{2012}' | '\u{2212}' => '-',
            '\u{b5}' => '\u{3bc}',
            other => other,
        };
    }
    s
}

/// One scan of `(\*{w}|_{w})(.*?)\1`: the two delimiters interleave in one left-to-right pass.
/// `None` when nothing matches.
fn strip_mixed(s: &[char], width: usize) -> Option<Vec<char>> {
    let mut out = Splice::new(s);
    let (mut star_dead, mut under_dead) = (0, 0);
    let mut p = 0;
    while p < s.len() {
        p = find_from(s, p, |c| c == '*' || c == '_');
        if p == s.len() {
            break;
        }
        let (d, dead) = if s[p] == '*' { ('*', &mut star_dead) } else { ('_', &mut under_dead) };
        if p >= *dead && delim_at(s, p, d, width) {
            match find_close(s, p + width, d, width) {
                Ok(q) => {
                    out.replace(p, q + width, &s[p + width..q]);
                    p = q + width;
                    continue;
                }
                Err(eol) => *dead = eol,
            }
        }
        p += 1;
    }
    out.finish()
}

/// `normalize_text` on a `&str`.
pub fn normalize_text(s: &str) -> String {
    string(&normalize(&chars(s)))
}

/// Python slice `s[start:stop]` with optional, possibly negative bounds.
pub fn py_slice(s: &[char], start: Option<i64>, stop: Option<i64>) -> &[char] {
    let n = s.len() as i64;
    let clamp = |v: i64| -> usize {
        let v = if v < 0 { (v + n).max(0) } else { v.min(n) };
        v as usize
    };
    let a = start.map_or(0, clamp);
    let b = stop.map_or(s.len(), clamp);
    if a >= b {
        &s[0..0]
    } else {
        &s[a..b]
    }
}

/// The first `n` code points of `s` (Python `s[:n]` for n >= 0), as a String.
pub fn prefix(s: &[char], n: usize) -> String {
    s.iter().take(n).collect()
}

/// Python `repr(float)`.
pub fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // Rust's `{:e}` gives the shortest round-trip digits, like Python's repr.
    let sci = format!("{x:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mant) = mant.strip_prefix('-').map_or(("", mant), |m| ("-", m));
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let nd = digits.len() as i32;
    if (-4..16).contains(&exp) {
        let s = if exp < 0 {
            format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
        } else if nd > exp + 1 {
            format!("{}.{}", &digits[..(exp + 1) as usize], &digits[(exp + 1) as usize..])
        } else {
            format!("{}{}.0", digits, "0".repeat((exp + 1 - nd) as usize))
        };
        format!("{sign}{s}")
    } else {
        let m = if nd > 1 { format!("{}.{}", &digits[..1], &digits[1..]) } else { digits };
        let es = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{es}{:02}", exp.abs())
    }
}

/// Python `format(x, ".{prec}f")`.
pub fn py_fixed(x: f64, prec: usize) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    format!("{x:.prec$}")
}

/// Python `repr(str)`.
pub fn py_str_repr(s: &[char]) -> String {
    let quote = if s.contains(&'\'') && !s.contains(&'"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for &c in s {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_py_printable(c) => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_lone_surrogate_escapes_become_stand_ins() {
        let parse = |j: &str| -> String { serde_json::from_str(&json_stand_ins(j)).unwrap() };
        assert_eq!(parse(r#""a\ud800b""#).chars().collect::<Vec<_>>(), vec!['a', stand_in(0xD800), 'b']);
        assert_eq!(parse(r#""\udfff\ud800""#), format!("{}{}", stand_in(0xDFFF), stand_in(0xD800)));
        assert_eq!(parse(r#""\ud83d\ude00""#), "\u{1F600}"); // a pair stays a pair
        assert_eq!(parse(r#""\\ud800""#), "\\ud800"); // an escaped backslash, then text
        assert!(matches!(json_stand_ins(r#"{"a": "\u00e9"}"#), std::borrow::Cow::Borrowed(_)));
        assert_eq!(stood_in(stand_in(0xDABC)), Some(0xDABC));
        assert_eq!(stood_in('x'), None);
    }

    use super::*;

    // The step-by-step copying implementation `normalize` replaced (each step allocates its
    // output), kept as the reference for the allocation-free one.
    fn strip_delimited_copying(s: &[char], d: char, width: usize) -> Vec<char> {
        let mut out = Vec::with_capacity(s.len());
        let mut dead_until = 0; // no opening before this index can find its close
        let mut p = 0;
        while p < s.len() {
            // Characters other than `d` are copied as they are, a run at a time.
            let q = find_from(s, p, |c| c == d);
            out.extend_from_slice(&s[p..q]);
            p = q;
            if p == s.len() {
                break;
            }
            if p >= dead_until && delim_at(s, p, d, width) {
                match find_close(s, p + width, d, width) {
                    Ok(q) => {
                        out.extend_from_slice(&s[p + width..q]);
                        p = q + width;
                        continue;
                    }
                    // No delimiter before the end of the line: no opening before it can match
                    // either (its close would have been this one's).
                    Err(eol) => dead_until = eol,
                }
            }
            out.push(s[p]);
            p += 1;
        }
        out
    }

    fn replace_literals_copying(s: &[char], pats: &[&[char]], with: Option<char>) -> Vec<char> {
        debug_assert!(pats.iter().all(|p| p.first() == Some(&'<')));
        let mut out = Vec::with_capacity(s.len());
        let mut p = 0;
        while p < s.len() {
            // Every pattern starts with '<': copy up to the next one.
            let q = find_from(s, p, |c| c == '<');
            out.extend_from_slice(&s[p..q]);
            p = q;
            if p == s.len() {
                break;
            }
            match pats.iter().find(|pat| starts_with_at(s, p, pat)) {
                Some(pat) => {
                    out.extend(with);
                    p += pat.len();
                }
                None => {
                    out.push('<');
                    p += 1;
                }
            }
        }
        out
    }

    fn collapse_ws_copying(s: &[char]) -> Vec<char> {
        // Branch-free: every character is written, and the write position only advances past a
        // whitespace character that follows another one.
        let mut out = vec!['\0'; s.len()];
        let mut j = 0;
        let mut prev = false;
        for &c in s {
            let u = c as u32;
            let space = if u < 0x85 { (9..=13).contains(&u) | (0x1c..=0x20).contains(&u) } else { is_py_space(c) };
            out[j] = if space { ' ' } else { c };
            j += usize::from(!(space && prev));
            prev = space;
        }
        out.truncate(j);
        out
    }

    fn normalize_copying(s: &[char]) -> Vec<char> {
        const BR: &[char] = &['<', 'b', 'r', '>'];
        const BR_SLASH: &[char] = &['<', 'b', 'r', '/', '>'];
        const B_TAGS: &[&[char]] = &[&['<', 'b', '>'], &['<', '/', 'b', '>']];
        const I_TAGS: &[&[char]] = &[&['<', 'i', '>'], &['<', '/', 'i', '>']];
        // Each step only changes text holding its trigger characters ('<', '*', '_'); skipping the
        // steps that cannot apply keeps plain prose to two linear passes.
        let (mut lt, mut star, mut under) = (false, false, false);
        for &c in s {
            lt |= c == '<';
            star |= c == '*';
            under |= c == '_';
        }
        let mut s = if lt { replace_literals_copying(s, &[BR, BR_SLASH], Some(' ')) } else { s.to_vec() };
        if star {
            s = strip_delimited_copying(&s, '*', 2);
        }
        if under {
            s = strip_delimited_copying(&s, '_', 2);
        }
        if lt {
            s = replace_literals_copying(&s, B_TAGS, None);
            s = replace_literals_copying(&s, I_TAGS, None);
        }
        // `(\*\*|__)(.*?)\1` then `(\*|_)(.*?)\1`: at any position only one alternative can start,
        // and the two delimiter characters never interact, so each is one left-to-right scan.
        // (Tag removal can join two '*' into "**", so these run whenever either character occurs.)
        if star || under {
            s = strip_mixed_copying(&s, 2);
            s = strip_mixed_copying(&s, 1);
        }
        let s = collapse_ws_copying(&s);
        let mut s = nfc(&s);
        for c in s.iter_mut() {
            *c = match *c {
                '\u{2018}' | '\u{2019}' | '\u{201a}' => '\'',
                '\u{201c}' | '\u{201d}' | '\u{201e}' => '"',
                '\u{ff3f}' => '_',
                '\u{2013}' | '\u{2014}' | '\u{2011}' | '\u{2012}' | '\u{2212}' => '-',
                '\u{b5}' => '\u{3bc}',
                other => other,
            };
        }
        s
    }

    fn strip_mixed_copying(s: &[char], width: usize) -> Vec<char> {
        let mut out = Vec::with_capacity(s.len());
        let (mut star_dead, mut under_dead) = (0, 0);
        let mut p = 0;
        while p < s.len() {
            let q = find_from(s, p, |c| c == '*' || c == '_');
            out.extend_from_slice(&s[p..q]);
            p = q;
            if p == s.len() {
                break;
            }
            let (d, dead) = if s[p] == '*' { ('*', &mut star_dead) } else { ('_', &mut under_dead) };
            if p >= *dead && delim_at(s, p, d, width) {
                match find_close(s, p + width, d, width) {
                    Ok(q) => {
                        out.extend_from_slice(&s[p + width..q]);
                        p = q + width;
                        continue;
                    }
                    Err(eol) => *dead = eol,
                }
            }
            out.push(s[p]);
            p += 1;
        }
        out
    }

    /// `normalize` equals the copying implementation on texts dense in its trigger characters.
    #[test]
    fn normalize_equals_copying_steps() {
        let mut rng = crate::test_rng::XorShift(0x9e37_79b9_7f4a_7c15u64);
        let mut next = |m: usize| rng.below(m);
        let tokens = [
            "*", "**", "_", "__", "<br>", "<br/>", "<b>", "</b>", "<i>", "</i>", "<", "b", "i", ">", "/", "a", "é",
            "e\u{301}", " ", "  ", "\n", "\t", "\u{a0}", "\u{2019}", "\u{2014}", "\u{b5}", "\u{3a3}", "x",
        ];
        let prose = ["word", "a", "the", " ", " ", " ", " ", "é", ".", "\n", "  ", "**", "<td>", "_"];
        for it in 0..scaled_iterations(30_000) {
            let len = next(if it % 10 == 0 { 120 } else { 25 });
            let text: String = if it % 3 == 0 {
                // Mostly words and single spaces: the block paths.
                (0..4 * len).map(|_| prose[next(if it % 2 == 0 { 7 } else { prose.len() })]).collect()
            } else {
                (0..len).map(|_| tokens[next(tokens.len())]).collect()
            };
            let s = chars(&text);
            assert_eq!(normalize(&s), normalize_copying(&s), "{text:?}");
            assert_eq!(collapse_ws(&s), collapse_ws_copying(&s), "{text:?}");
            assert_eq!(chars(&text), text.chars().collect::<Vec<char>>(), "{text:?}");
        }
    }

    fn scaled_iterations(release: usize) -> usize {
        if cfg!(debug_assertions) {
            release / 10
        } else {
            release
        }
    }

    fn norm(s: &str) -> String {
        normalize_text(s)
    }

    #[test]
    fn spec_examples() {
        assert_eq!(norm("a\x1fb\u{200b}c"), "a b\u{200b}c");
        assert_eq!(norm("a<br />b<BR>c<br>d<br/>e"), "a<br />b<BR>c d e");
        assert_eq!(norm("  lead  and trail  "), " lead and trail ");
        assert_eq!(
            norm("\u{201c}x\u{201d} \u{2018}y\u{2019} \u{2014} \u{2013} \u{2212} \u{b5} \u{ff3f}z\u{ff3f} _w_"),
            "\"x\" 'y' - - - \u{3bc} _z_ w"
        );
        assert_eq!(norm("**a\nb**"), "a b");
        assert_eq!(norm("*a\nb*"), "*a b*");
        assert_eq!(norm("my_var_name 2*3*4"), "myvarname 234");
        assert_eq!(norm("***a***"), "a");
        assert_eq!(norm("****"), "");
        assert_eq!(norm("_italic__ is *bold*"), "italic_ is bold");
        assert_eq!(norm("a * b * c"), "a b c");
        assert_eq!(norm("\u{fb01}ne"), "\u{fb01}ne");
        assert_eq!(norm("e\u{301}"), "\u{e9}");
    }

    #[test]
    fn fast_passes_match_simple_loops() {
        let mut rng = crate::test_rng::XorShift(0x2545_F491_4F6C_DD1Du64);
        let mut next = |m: u64| rng.below(m as usize);
        let alpha: Vec<char> = "aB \t\n\r\u{1c}\u{1f}\u{85}\u{a0}\u{3000}\u{3a3}\u{130}é!".chars().collect();
        for _ in 0..20_000 {
            let s: Vec<char> = (0..next(50)).map(|_| alpha[next(alpha.len() as u64)]).collect();
            let mut want = Vec::new();
            let mut in_ws = false;
            for &c in &s {
                if is_py_space(c) {
                    if !in_ws {
                        want.push(' ');
                    }
                    in_ws = true;
                } else {
                    want.push(c);
                    in_ws = false;
                }
            }
            assert_eq!(collapse_ws(&s), want, "{s:?}");
            assert_eq!(py_lower(&s), py_lower_simple(&s), "{s:?}");
            let at = next(s.len() as u64 + 1);
            let want = s[at..].iter().position(|&c| c == 'a').map_or(s.len(), |o| at + o);
            assert_eq!(find_from(&s, at, |c| c == 'a'), want);
        }
    }

    #[test]
    fn python_predicates() {
        for c in ['\u{1c}', '\u{1f}', '\u{85}', '\u{a0}', '\u{3000}', '\u{2028}'] {
            assert!(is_py_space(c), "{c:?}");
        }
        for c in ['\u{200b}', '\u{2060}', '\u{feff}', 'a'] {
            assert!(!is_py_space(c), "{c:?}");
        }
        assert!(!is_py_alnum('\u{301}'));
        assert!(!is_py_alnum('\u{93e}'));
        assert!(!is_py_alnum('\u{24b6}'));
        assert!(is_py_alnum('\u{4e00}'));
        assert!(is_py_alnum('\u{2160}')); // Roman numeral, Nl
        assert!(is_py_alnum('\u{96f6}')); // CJK numeral
    }

    #[test]
    fn lower_and_sigma() {
        let l = |s: &str| string(&py_lower(&chars(s)));
        assert_eq!(l("\u{130}"), "i\u{307}");
        assert_eq!(l("\u{3a3}"), "\u{3c3}");
        assert_eq!(l("A\u{3a3}"), "a\u{3c2}");
        assert_eq!(l("A\u{3a3}B"), "a\u{3c3}b");
        assert_eq!(l("A\u{3a3}."), "a\u{3c2}.");
        assert_eq!(l("\u{1e9e}"), "\u{df}");
        assert!(re_ignorecase_eq('\u{130}', 'i'));
        assert!(re_ignorecase_eq('\u{131}', 'I'));
        assert!(re_ignorecase_eq('\u{17f}', 's'));
        assert!(re_ignorecase_eq('B', 'b'));
        assert!(!re_ignorecase_eq('c', 'b'));
    }

    #[test]
    fn reprs() {
        assert_eq!(py_float_repr(1.0), "1.0");
        assert_eq!(py_float_repr(0.9166666666666666), "0.9166666666666666");
        assert_eq!(py_float_repr(-0.5), "-0.5");
        assert_eq!(py_float_repr(1e-5), "1e-05");
        assert_eq!(py_float_repr(1.5e16), "1.5e+16");
        assert_eq!(py_float_repr(123456.0), "123456.0");
        assert_eq!(py_float_repr(0.0001), "0.0001");
        assert_eq!(py_float_repr(-0.0), "-0.0");
        assert_eq!(py_float_repr(-3.0), "-3.0");
        assert_eq!(py_fixed(0.0625, 3), "0.062");
        assert_eq!(py_str_repr(&['\u{4e2d}']), "'\u{4e2d}'");
        assert_eq!(py_str_repr(&['\u{1f6d8}']), "'\\U0001f6d8'");
    }

    #[test]
    fn slicing() {
        let s = chars("abcdef");
        assert_eq!(string(py_slice(&s, None, Some(2))), "ab");
        assert_eq!(string(py_slice(&s, Some(-2), None)), "ef");
        assert_eq!(string(py_slice(&s, None, Some(-2))), "abcd");
        assert_eq!(string(py_slice(&s, Some(2), None)), "cdef");
        assert_eq!(string(py_slice(&s, Some(-10), None)), "abcdef");
        assert_eq!(string(py_slice(&s, None, Some(10))), "abcdef");
    }
}
