//! Reading candidate page files as the reference does: `open(path, encoding="utf-8").read()`,
//! i.e. strict UTF-8 and universal newlines (`\r\n` and a lone `\r` both become `\n`).
//!
//! Used by `olmocr-rl bench` so that thousands of small files are read on the thread pool, next
//! to their checks, instead of one by one in Python. A file that cannot be read or is not UTF-8
//! gives `None`; the caller re-reads it in Python for the exact error message.

use std::path::Path;

/// The file's text with Python's universal-newline translation, or `None` when it cannot be
/// read, is not a regular file (a FIFO would block the read forever; the reference's `open().read()`
/// does block) or is not valid UTF-8 (Rust and Python reject the same byte sequences: overlong
/// forms, surrogates, code points above U+10FFFF, truncated sequences).
pub fn read_text(path: &Path) -> Option<String> {
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    Some(universal_newlines(text))
}

/// `\r\n` → `\n`, then every remaining `\r` → `\n`.
pub fn universal_newlines(text: String) -> String {
    if !text.contains('\r') {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(i) = rest.find('\r') {
        out.push_str(&rest[..i]);
        out.push('\n');
        rest = &rest[i + 1..];
        if let Some(after) = rest.strip_prefix('\n') {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newlines_are_translated_as_python_text_mode_does() {
        let cases = [
            ("", ""),
            ("a\nb", "a\nb"),
            ("a\r\nb", "a\nb"),
            ("a\rb", "a\nb"),
            ("\r\r\n\n\r", "\n\n\n\n"),
            ("x\r", "x\n"),
            ("\r\n\r\n", "\n\n"),
            ("é\r\nü\rß", "é\nü\nß"),
        ];
        for (given, want) in cases {
            assert_eq!(universal_newlines(given.to_string()), want, "{given:?}");
        }
    }

    #[test]
    fn unreadable_or_invalid_files_give_none() {
        let dir = std::env::temp_dir().join(format!("olmocr-rl-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = dir.join("ok.md");
        std::fs::write(&ok, b"a\r\nb\xc3\xa9").unwrap();
        assert_eq!(read_text(&ok).as_deref(), Some("a\nbé"));
        let bad = dir.join("bad.md");
        for bytes in [&b"\xff"[..], b"\xed\xa0\x80", b"\xc0\xaf", b"ab\xe2\x82"] {
            std::fs::write(&bad, bytes).unwrap();
            assert_eq!(read_text(&bad), None, "{bytes:?}");
        }
        assert_eq!(read_text(&dir.join("missing.md")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
