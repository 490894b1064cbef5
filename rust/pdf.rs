//! Page counts of PDF files for `olmocr-rl bench`, without a PDF library in the process.
//!
//! What it computes: the number of leaf pages of the document's page tree, which is what the
//! reference's `len(pypdf.PdfReader(path).pages)` returns for an unencrypted file (pypdf walks
//! the tree and ignores `/Count`, which can be wrong).
//!
//! When it answers: only for files it understands completely, read lazily like pypdf: the last
//! cross-reference section (a classic `xref` table or a PDF 1.5 cross-reference stream, Flate
//! with or without PNG predictors) and its `/Prev` chain, objects stored plainly or in Flate
//! object streams, and a page tree whose nodes are all indirect dictionaries typed `/Pages` (with
//! `/Kids` of references) or `/Page`. Anything else gives `None` and the caller asks pypdf:
//! encryption, hybrid files (`/XRefStm`), other filters, untyped or otherwise typed tree nodes,
//! inline kids, cycles, syntax errors, a damaged cross-reference table that pypdf might repair.
//! So a number returned here is the reference's number; `None` costs only speed.
//!
//! Bounds: linear parsing, at most `MAX_NODES` tree nodes and depth `MAX_DEPTH`, decompressed
//! streams capped at `MAX_STREAM`; never panics on any input (indexing is checked).

use std::collections::{HashMap, HashSet};
use std::path::Path;

const MAX_DEPTH: usize = 64;
const MAX_NODES: usize = 1 << 20;
const MAX_STREAM: usize = 256 << 20;
/// How far from the end `startxref` is looked for.
const TAIL: usize = 4096;

/// Leaf pages of the PDF at `path` (see the module documentation), or `None`.
pub fn page_count_file(path: &Path) -> Option<usize> {
    page_count(&std::fs::read(path).ok()?)
}

/// Leaf pages of the PDF in `data`, or `None` when it is not understood completely.
pub fn page_count(data: &[u8]) -> Option<usize> {
    let doc = Doc::open(data)?;
    let pages = match doc.trailer.get("Root")? {
        Obj::Ref(n, g) => match doc.resolve(*n, *g)? {
            Obj::Dict(root) => root.get("Pages")?.clone(),
            _ => return None,
        },
        _ => return None,
    };
    let mut seen = HashSet::new();
    let mut count = 0usize;
    let mut stack = vec![(pages, 0usize)];
    while let Some((node, depth)) = stack.pop() {
        let Obj::Ref(n, g) = node else { return None };
        if depth > MAX_DEPTH || !seen.insert((n, g)) || seen.len() > MAX_NODES {
            return None;
        }
        let Obj::Dict(d) = doc.resolve(n, g)? else { return None };
        match d.get("Type")? {
            Obj::Name(t) if t == "Page" => count += 1,
            Obj::Name(t) if t == "Pages" => {
                let kids = match d.get("Kids")? {
                    Obj::Array(a) => a.clone(),
                    Obj::Ref(kn, kg) => match doc.resolve(*kn, *kg)? {
                        Obj::Array(a) => a,
                        _ => return None,
                    },
                    _ => return None,
                };
                // Reversed onto the stack: kids are visited in order (the count does not
                // depend on it, but cycles and limits are met as pypdf meets them).
                stack.extend(kids.into_iter().rev().map(|k| (k, depth + 1)));
            }
            _ => return None,
        }
    }
    Some(count)
}

#[derive(Debug, Clone, PartialEq)]
enum Obj {
    Null,
    Bool,
    Num(f64),
    Str,
    Name(String),
    Array(Vec<Obj>),
    Dict(HashMap<String, Obj>),
    Ref(u32, u16),
}

impl Obj {
    fn get(&self, key: &str) -> Option<&Obj> {
        match self {
            Obj::Dict(d) => d.get(key),
            _ => None,
        }
    }
    fn int(&self) -> Option<usize> {
        match self {
            Obj::Num(x) if *x >= 0.0 && x.fract() == 0.0 && *x < 1e15 => Some(*x as usize),
            _ => None,
        }
    }
}

#[derive(Clone, Copy)]
enum Entry {
    Free,
    At(usize),
    InStream(u32, usize),
}

struct Doc<'a> {
    data: &'a [u8],
    xref: HashMap<u32, Entry>,
    trailer: HashMap<String, Obj>,
    /// (object number, offset) of each cross-reference stream read.
    streams: Vec<(u32, usize)>,
}

impl<'a> Doc<'a> {
    fn open(data: &'a [u8]) -> Option<Doc<'a>> {
        if !data.starts_with(b"%PDF-") {
            return None;
        }
        let tail_start = data.len().saturating_sub(TAIL);
        let at = rfind(&data[tail_start..], b"startxref")? + tail_start;
        if !matches!(data.get(at.checked_sub(1)?), Some(b'\n' | b'\r')) {
            return None; // pypdf reads it as a line of its own
        }
        let mut lx = Lexer { data, pos: at + b"startxref".len() };
        let mut offset = lx.object()?.int()?;
        // Then `%%EOF` and nothing else (pypdf insists on the marker; we on the whole ending).
        let rest = data.get(lx.pos..)?;
        let rest = &rest[rest.iter().position(|&b| !is_ws(b))?..];
        if !rest.starts_with(b"%%EOF") || !rest[5..].iter().all(|&b| is_ws(b)) {
            return None;
        }
        let mut doc = Doc { data, xref: HashMap::new(), trailer: HashMap::new(), streams: Vec::new() };
        let mut visited = HashSet::new();
        let mut first = true;
        loop {
            if !visited.insert(offset) || visited.len() > 64 {
                return None;
            }
            let trailer = doc.read_section(offset)?;
            if trailer.contains_key("XRefStm") || trailer.contains_key("Encrypt") {
                return None;
            }
            let prev = trailer.get("Prev").map(Obj::int);
            if first {
                doc.trailer = trailer;
                first = false;
            }
            match prev {
                None => break,
                Some(Some(p)) => offset = p,
                Some(None) => return None,
            }
        }
        for &(num, at) in &doc.streams {
            match doc.xref.get(&num) {
                None => {} // a reference to it resolves to null here: declined where it matters
                Some(Entry::At(o)) if *o == at => {}
                Some(_) => return None,
            }
        }
        Some(doc)
    }

    /// Reads the cross-reference section at `offset` into `self.xref` (entries already known
    /// from a newer section win); returns its trailer dictionary.
    fn read_section(&mut self, offset: usize) -> Option<HashMap<String, Obj>> {
        let mut lx = Lexer { data: self.data, pos: offset };
        lx.skip_ws();
        if self.data.get(lx.pos..)?.starts_with(b"xref") {
            lx.pos += 4;
            loop {
                lx.skip_ws();
                if self.data.get(lx.pos..)?.starts_with(b"trailer") {
                    lx.pos += 7;
                    let Obj::Dict(d) = lx.object()? else { return None };
                    return Some(d);
                }
                let start = lx.object()?.int()?;
                let count = lx.object()?.int()?;
                for i in 0..count {
                    let off = lx.object()?.int()?;
                    let _gen = lx.object()?.int()?;
                    lx.skip_ws();
                    let kind = *self.data.get(lx.pos)?;
                    lx.pos += 1;
                    let num = u32::try_from(start.checked_add(i)?).ok()?;
                    let entry = match kind {
                        b'n' => Entry::At(off),
                        b'f' => Entry::Free,
                        _ => return None,
                    };
                    self.xref.entry(num).or_insert(entry);
                }
            }
        }
        // A cross-reference stream: `N G obj << /Type /XRef /W [..] ... >> stream ...`. pypdf
        // caches it as object N: N must then name no other object (checked in `open`).
        let (self_num, _) = lx.header()?;
        self.streams.push((self_num, offset));
        let (dict, body) = lx.stream_after_header(&|_| None)?;
        if dict.get("Type") != Some(&Obj::Name("XRef".into())) {
            return None;
        }
        let data = decode(&dict, body)?;
        let w: Vec<usize> = match dict.get("W")? {
            Obj::Array(a) if a.len() == 3 => a.iter().map(Obj::int).collect::<Option<_>>()?,
            _ => return None,
        };
        let row = w.iter().sum::<usize>();
        if row == 0 || w.iter().any(|&x| x > 8) {
            return None;
        }
        let size = dict.get("Size")?.int()?;
        let index: Vec<usize> = match dict.get("Index") {
            None => vec![0, size],
            Some(Obj::Array(a)) if a.len() % 2 == 0 => a.iter().map(Obj::int).collect::<Option<_>>()?,
            Some(_) => return None,
        };
        let mut rows = data.chunks_exact(row);
        for pair in index.chunks_exact(2) {
            for i in 0..pair[1] {
                let r = rows.next()?;
                let field = |k: usize, default: usize| -> usize {
                    let from: usize = w[..k].iter().sum();
                    if w[k] == 0 {
                        return default;
                    }
                    r[from..from + w[k]].iter().fold(0usize, |acc, &b| (acc << 8) | b as usize)
                };
                let num = u32::try_from(pair[0].checked_add(i)?).ok()?;
                let entry = match field(0, 1) {
                    0 => Entry::Free,
                    1 => Entry::At(field(1, 0)),
                    2 => Entry::InStream(u32::try_from(field(1, 0)).ok()?, field(2, 0)),
                    _ => continue, // reserved types: treated as null references, as the PDF specification says
                };
                self.xref.entry(num).or_insert(entry);
            }
        }
        Some(dict)
    }

    /// The object `n G R` refers to (`Null` for a free or unknown object, as PDF readers do).
    fn resolve(&self, n: u32, gen: u16) -> Option<Obj> {
        match self.xref.get(&n) {
            None | Some(Entry::Free) => Some(Obj::Null),
            Some(&Entry::At(off)) => {
                let mut lx = Lexer { data: self.data, pos: off };
                let (num, g) = lx.header()?;
                if num != n || g != gen {
                    return None;
                }
                let obj = lx.object()?;
                lx.skip_ws();
                if self.data.get(lx.pos..)?.starts_with(b"stream") {
                    return None; // a stream is never a page tree node
                }
                Some(obj)
            }
            Some(&Entry::InStream(sn, idx)) => {
                if gen != 0 {
                    return None;
                }
                let Some(&Entry::At(off)) = self.xref.get(&sn) else { return None };
                let mut lx = Lexer { data: self.data, pos: off };
                let (num, _) = lx.header()?;
                if num != sn {
                    return None;
                }
                let (dict, body) = lx.stream_after_header(&|o| self.length_of(o))?;
                if dict.get("Type") != Some(&Obj::Name("ObjStm".into())) {
                    return None;
                }
                let data = decode(&dict, body)?;
                let count = dict.get("N")?.int()?;
                let first = dict.get("First")?.int()?;
                if idx >= count {
                    return None;
                }
                let mut hx = Lexer { data: &data, pos: 0 };
                let mut found = None;
                for i in 0..count {
                    let num = hx.object()?.int()?;
                    let rel = hx.object()?.int()?;
                    if i == idx {
                        found = Some((num, rel));
                        break;
                    }
                }
                let (num, rel) = found?;
                if num != n as usize {
                    return None;
                }
                let mut ox = Lexer { data: &data, pos: first.checked_add(rel)? };
                ox.object()
            }
        }
    }

    /// An indirect `/Length`.
    fn length_of(&self, o: &Obj) -> Option<usize> {
        match o {
            Obj::Ref(n, g) => self.resolve(*n, *g)?.int(),
            _ => None,
        }
    }
}

/// The stream's data after its filters: none, or `/FlateDecode` with optional PNG predictors.
fn decode(dict: &HashMap<String, Obj>, body: &[u8]) -> Option<Vec<u8>> {
    let filter = match dict.get("Filter") {
        None => return dict.get("DecodeParms").is_none().then(|| body.to_vec()),
        Some(Obj::Name(f)) => f.as_str(),
        Some(Obj::Array(a)) if a.len() == 1 => match &a[0] {
            Obj::Name(f) => f.as_str(),
            _ => return None,
        },
        Some(_) => return None,
    };
    if filter != "FlateDecode" {
        return None;
    }
    let raw = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(body, MAX_STREAM).ok()?;
    let parms = match dict.get("DecodeParms") {
        None | Some(Obj::Null) => return Some(raw),
        Some(Obj::Array(a)) if a.len() == 1 => a[0].clone(),
        Some(p) => p.clone(),
    };
    let predictor = parms.get("Predictor").map_or(Some(1), Obj::int)?;
    if predictor == 1 {
        return Some(raw);
    }
    let colors = parms.get("Colors").map_or(Some(1), Obj::int)?;
    let bpc = parms.get("BitsPerComponent").map_or(Some(8), Obj::int)?;
    let columns = parms.get("Columns").map_or(Some(1), Obj::int)?;
    if !(10..=15).contains(&predictor) || bpc != 8 || colors == 0 || colors > 32 {
        return None;
    }
    png_unpredict(&raw, colors.checked_mul(columns)?, colors)
}

/// Undoes PNG row filters (rows of `width` bytes, each prefixed by its filter type).
fn png_unpredict(raw: &[u8], width: usize, bpp: usize) -> Option<Vec<u8>> {
    if width == 0 {
        return None;
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut prev = vec![0u8; width];
    for chunk in raw.chunks(width + 1) {
        let (&kind, row) = chunk.split_first()?;
        let mut cur = row.to_vec();
        cur.resize(width, 0);
        for i in 0..width {
            let a = if i >= bpp { cur[i - bpp] } else { 0 };
            let b = prev[i];
            let c = if i >= bpp { prev[i - bpp] } else { 0 };
            let add = match kind {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((a as u16 + b as u16) / 2) as u8,
                4 => {
                    let p = a as i16 + b as i16 - c as i16;
                    let (pa, pb, pc) = ((p - a as i16).abs(), (p - b as i16).abs(), (p - c as i16).abs());
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                _ => return None,
            };
            cur[i] = cur[i].wrapping_add(add);
        }
        out.extend_from_slice(&cur[..row.len().min(width)]);
        prev = cur;
    }
    Some(out)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'\0')
}

fn is_delim(b: u8) -> bool {
    matches!(b, b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%')
}

/// A minimal PDF object lexer/parser over a byte slice. Every method returns `None` on
/// anything unexpected; nesting is bounded.
struct Lexer<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b) = self.peek() {
            if is_ws(b) {
                self.pos += 1;
            } else if b == b'%' {
                while let Some(c) = self.peek() {
                    if c == b'\n' || c == b'\r' {
                        break;
                    }
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    fn token(&mut self) -> &'a [u8] {
        let start = self.pos;
        while let Some(b) = self.peek() {
            if is_ws(b) || is_delim(b) {
                break;
            }
            self.pos += 1;
        }
        &self.data[start..self.pos]
    }

    /// `N G obj`.
    fn header(&mut self) -> Option<(u32, u16)> {
        let n = self.object()?.int()?;
        let g = self.object()?.int()?;
        self.skip_ws();
        if self.token() != b"obj" {
            return None;
        }
        Some((u32::try_from(n).ok()?, u16::try_from(g).ok()?))
    }

    /// `N G obj <<dict>> stream ... `: the dictionary and the raw stream bytes.
    /// After `N G obj`: the stream's dictionary and raw bytes; `length` resolves an indirect
    /// `/Length`.
    fn stream_after_header(
        &mut self,
        length: &dyn Fn(&Obj) -> Option<usize>,
    ) -> Option<(HashMap<String, Obj>, &'a [u8])> {
        let Obj::Dict(dict) = self.object()? else { return None };
        self.skip_ws_no_comment();
        if !self.data.get(self.pos..)?.starts_with(b"stream") {
            return None;
        }
        self.pos += 6;
        match self.peek()? {
            b'\r' if self.data.get(self.pos + 1) == Some(&b'\n') => self.pos += 2,
            b'\n' | b'\r' => self.pos += 1,
            _ => return None,
        }
        let len = match dict.get("Length")? {
            Obj::Ref(..) => length(dict.get("Length")?)?,
            direct => direct.int()?,
        };
        let end = self.pos.checked_add(len)?;
        let body = self.data.get(self.pos..end)?;
        // The data must be followed by `endstream` (after an optional end of line), as pypdf
        // requires; a wrong /Length is declined.
        let mut after = self.data.get(end..)?;
        for eol in [&b"\r\n"[..], b"\n", b"\r"] {
            if let Some(rest) = after.strip_prefix(eol) {
                after = rest;
                break;
            }
        }
        if !after.starts_with(b"endstream") {
            return None;
        }
        Some((dict, body))
    }

    fn skip_ws_no_comment(&mut self) {
        while self.peek().is_some_and(is_ws) {
            self.pos += 1;
        }
    }

    fn object(&mut self) -> Option<Obj> {
        self.object_at_depth(0)
    }

    fn object_at_depth(&mut self, depth: usize) -> Option<Obj> {
        if depth > 100 {
            return None;
        }
        self.skip_ws();
        match self.peek()? {
            b'/' => {
                self.pos += 1;
                let raw = self.token();
                Some(Obj::Name(name(raw)?))
            }
            b'<' if self.data.get(self.pos + 1) == Some(&b'<') => {
                self.pos += 2;
                let mut d = HashMap::new();
                loop {
                    self.skip_ws();
                    if self.data.get(self.pos..)?.starts_with(b">>") {
                        self.pos += 2;
                        return Some(Obj::Dict(d));
                    }
                    let Obj::Name(k) = self.object_at_depth(depth + 1)? else { return None };
                    let v = self.object_at_depth(depth + 1)?;
                    d.insert(k, v);
                }
            }
            b'<' => {
                let end = self.data.get(self.pos..)?.iter().position(|&b| b == b'>')?;
                self.pos += end + 1;
                Some(Obj::Str)
            }
            b'(' => {
                let mut level = 0usize;
                while let Some(b) = self.peek() {
                    self.pos += 1;
                    match b {
                        b'\\' => self.pos += 1,
                        b'(' => level += 1,
                        b')' => {
                            level -= 1;
                            if level == 0 {
                                return Some(Obj::Str);
                            }
                        }
                        _ => {}
                    }
                }
                None
            }
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    if self.peek()? == b']' {
                        self.pos += 1;
                        return Some(Obj::Array(items));
                    }
                    items.push(self.object_at_depth(depth + 1)?);
                }
            }
            b if is_delim(b) => None,
            _ => {
                let tok = self.token();
                match tok {
                    b"true" | b"false" => Some(Obj::Bool),
                    b"null" => Some(Obj::Null),
                    _ => {
                        if !tok.iter().all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'+')) {
                            return None;
                        }
                        let x: f64 = std::str::from_utf8(tok).ok()?.parse().ok()?;
                        // `N G R`: look ahead without consuming if it is not a reference.
                        if tok.iter().all(u8::is_ascii_digit) {
                            let save = self.pos;
                            self.skip_ws();
                            let g = self.token();
                            if !g.is_empty() && g.iter().all(u8::is_ascii_digit) {
                                self.skip_ws();
                                if self.peek() == Some(b'R')
                                    && self.data.get(self.pos + 1).is_none_or(|&b| is_ws(b) || is_delim(b))
                                {
                                    self.pos += 1;
                                    let n = u32::try_from(x as u64).ok()?;
                                    let g: u16 = std::str::from_utf8(g).ok()?.parse().ok()?;
                                    return Some(Obj::Ref(n, g));
                                }
                            }
                            self.pos = save;
                        }
                        Some(Obj::Num(x))
                    }
                }
            }
        }
    }
}

/// A name token's text with `#xx` escapes decoded; `None` when it is not valid UTF-8.
fn name(raw: &[u8]) -> Option<String> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'#' && i + 2 < raw.len() {
            let hex = std::str::from_utf8(&raw[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic-xref PDF: catalog 1, page tree 2 with `kids` (object numbers), then the
    /// objects given as (number, body).
    fn classic(objects: &[(u32, String)]) -> Vec<u8> {
        let mut out = b"%PDF-1.4\n".to_vec();
        let mut offsets = HashMap::new();
        for (n, body) in objects {
            offsets.insert(*n, out.len());
            out.extend_from_slice(format!("{n} 0 obj\n{body}\nendobj\n").as_bytes());
        }
        let size = objects.iter().map(|o| o.0).max().unwrap_or(0) + 1;
        let xref = out.len();
        out.extend_from_slice(format!("xref\n0 {size}\n0000000000 65535 f \n").as_bytes());
        for n in 1..size {
            match offsets.get(&n) {
                Some(o) => out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes()),
                None => out.extend_from_slice(b"0000000000 00000 f \n"),
            }
        }
        out.extend_from_slice(
            format!("trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").as_bytes(),
        );
        out
    }

    fn tree(kids_of_root: &str, count: usize, extra: &[(u32, String)]) -> Vec<u8> {
        let mut objs = vec![
            (1, "<< /Type /Catalog /Pages 2 0 R >>".to_string()),
            (2, format!("<< /Type /Pages /Kids [{kids_of_root}] /Count {count} >>")),
        ];
        objs.extend_from_slice(extra);
        classic(&objs)
    }

    fn page(parent: u32) -> String {
        format!("<< /Type /Page /Parent {parent} 0 R /MediaBox [0 0 612 792] /Contents (x\\)y) >>")
    }

    #[test]
    fn counts_leaves_not_the_count_entry() {
        let one = tree("3 0 R", 1, &[(3, page(2))]);
        assert_eq!(page_count(&one), Some(1));
        let wrong_count = tree("3 0 R 4 0 R", 7, &[(3, page(2)), (4, page(2))]);
        assert_eq!(page_count(&wrong_count), Some(2));
        let nested = tree(
            "3 0 R 5 0 R",
            3,
            &[(3, "<< /Type /Pages /Kids [4 0 R 6 0 R] /Count 2 >>".into()), (4, page(3)), (5, page(2)), (6, page(3))],
        );
        assert_eq!(page_count(&nested), Some(3));
    }

    #[test]
    fn declines_what_it_does_not_fully_understand() {
        let cycle = tree("3 0 R", 1, &[(3, "<< /Type /Pages /Kids [2 0 R] /Count 1 >>".into())]);
        assert_eq!(page_count(&cycle), None);
        let untyped = tree("3 0 R", 1, &[(3, "<< /MediaBox [0 0 1 1] >>".into())]);
        assert_eq!(page_count(&untyped), None);
        let inline = classic(&[
            (1, "<< /Type /Catalog /Pages 2 0 R >>".into()),
            (2, "<< /Type /Pages /Kids [<< /Type /Page >>] /Count 1 >>".into()),
        ]);
        assert_eq!(page_count(&inline), None);
        let mut encrypted = tree("3 0 R", 1, &[(3, page(2))]);
        let at = rfind(&encrypted, b"/Root").unwrap();
        encrypted.splice(at..at, b"/Encrypt 9 0 R ".iter().copied());
        assert_eq!(page_count(&encrypted), None);
        let one = tree("3 0 R", 1, &[(3, page(2))]);
        for cut in [0, 10, one.len() / 2, one.len() - 30, one.len() - 1] {
            let _ = page_count(&one[..cut]); // no panic on truncated input
        }
        let mut bad_offset = one.clone();
        let at = rfind(&bad_offset, b"startxref\n").unwrap() + 10;
        bad_offset[at] = b'1';
        assert_eq!(page_count(&bad_offset), None);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let base = tree("3 0 R 4 0 R", 2, &[(3, page(2)), (4, page(2))]);
        let mut rng = crate::test_rng::XorShift(0x2545_F491_4F6C_DD1Du64);
        for _ in 0..3000 {
            let mut data = base.clone();
            for _ in 0..(rng.0 % 6) {
                let x = rng.next();
                let i = (x as usize) % data.len();
                data[i] = (x >> 32) as u8;
            }
            let _ = page_count(&data);
        }
    }

    #[test]
    fn png_predictors_round_trip() {
        // Up filter (2) on two rows of width 3.
        let raw = [2u8, 1, 2, 3, 2, 1, 1, 1];
        assert_eq!(png_unpredict(&raw, 3, 1), Some(vec![1, 2, 3, 2, 3, 4]));
        // Sub (1) and Paeth (4).
        assert_eq!(png_unpredict(&[1, 5, 1, 1], 3, 1), Some(vec![5, 6, 7]));
        assert_eq!(png_unpredict(&[4, 5, 1, 1], 3, 1), Some(vec![5, 6, 7]));
    }
}
