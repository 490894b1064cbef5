//! The reference's MathML comparison string (docs/checks.md §5.3), from KaTeX's own MathML markup.
//!
//! The reference takes Chromium's `outerHTML` of the `<math>` element, parses it with
//! BeautifulSoup's XML parser (lxml, recover mode), serializes each child of `<semantics>` except
//! `<annotation>`, and deletes whitespace. We start from KaTeX's `renderToString` MathML (the same
//! tree; it escapes `& < > " '`) and reproduce what that round trip does, measured with bs4 4.15.0
//! and lxml 6.1.3:
//! * attributes sorted by name, double-quoted (single quotes when the value holds `"` but no
//!   `'`), with `& < >` escaped; text escapes only `& < >`; an element without children is
//!   self-closed (`<mspace width="1em"/>`);
//! * Chromium writes U+00A0 as the entity `&nbsp;`, which XML does not define: lxml drops it,
//!   and from then on it also drops every *named entity in text* (`&amp;`, `&lt;`, `&gt;`, all
//!   of which Chromium uses for `& < >` in text) for the rest of the document, while entities in
//!   attribute values are still decoded. So `\text{if } x<y` compares as `…<mo/>…`.
//! * `norm` deletes runs of Python whitespace, U+200A–U+200D, U+2060 and U+FEFF.

use crate::text::is_py_space;

/// Whitespace removed by the reference's `normalize` (`[\s\u200a-\u200d\u2060\ufeff]`).
pub fn is_norm_space(c: char) -> bool {
    is_py_space(c) || matches!(c, '\u{200a}'..='\u{200d}' | '\u{2060}' | '\u{feff}')
}

/// `norm(s)`: `s` without any [`is_norm_space`] character.
pub fn norm(s: &str) -> String {
    s.chars().filter(|&c| !is_norm_space(c)).collect()
}

enum Node {
    Elem { name: String, attrs: Vec<(String, String)>, children: Vec<Node> },
    Text(String),
}

fn decode(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#x27;", "'").replace("&amp;", "&")
}

/// Deeper MathML than this is refused (the serializer recurses).
pub const MAX_DEPTH: usize = 1_000;

/// Parses KaTeX's MathML markup (well-formed: KaTeX wrote it). `None` if it is not, or if it
/// nests deeper than [`MAX_DEPTH`].
fn parse(markup: &str) -> Option<Vec<Node>> {
    let mut stack: Vec<Vec<Node>> = vec![Vec::new()];
    let mut names: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut rest = markup;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("</") {
            let end = after.find('>')?;
            let (name, attrs) = names.pop()?;
            if name != after[..end].trim() {
                return None;
            }
            let children = stack.pop()?;
            stack.last_mut()?.push(Node::Elem { name, attrs, children });
            rest = &after[end + 1..];
        } else if let Some(after) = rest.strip_prefix('<') {
            let end = tag_end(after)?;
            let mut tag = &after[..end];
            let self_closing = tag.ends_with('/');
            if self_closing {
                tag = &tag[..tag.len() - 1];
            }
            let (name, attrs) = parse_tag(tag)?;
            if self_closing {
                stack.last_mut()?.push(Node::Elem { name, attrs, children: Vec::new() });
            } else {
                names.push((name, attrs));
                stack.push(Vec::new());
                if stack.len() > MAX_DEPTH {
                    return None;
                }
            }
            rest = &after[end + 1..];
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            stack.last_mut()?.push(Node::Text(decode(&rest[..end])));
            rest = &rest[end..];
        }
    }
    (names.is_empty() && stack.len() == 1).then(|| stack.pop().unwrap_or_default())
}

/// Index of the `>` closing a tag, skipping quoted attribute values.
fn tag_end(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if q == c => quote = None,
            (None, '>') => return Some(i),
            _ => {}
        }
    }
    None
}

/// `name a="v" b ="w"` (KaTeX writes ` class ="…"` with a space before `=`).
fn parse_tag(tag: &str) -> Option<(String, Vec<(String, String)>)> {
    let tag = tag.trim();
    let name_end = tag.find(char::is_whitespace).unwrap_or(tag.len());
    let name = tag[..name_end].to_string();
    let mut attrs = Vec::new();
    let mut rest = tag[name_end..].trim_start();
    while !rest.is_empty() {
        let eq = rest.find('=')?;
        let key = rest[..eq].trim().to_string();
        let after = rest[eq + 1..].trim_start();
        let q = after.chars().next()?;
        if q != '"' && q != '\'' {
            return None;
        }
        let close = after[1..].find(q)? + 1;
        attrs.push((key, decode(&after[1..close])));
        rest = after[close + 1..].trim_start();
    }
    Some((name, attrs))
}

/// bs4's serializer state: whether lxml has met an undefined entity yet.
struct Out {
    s: String,
    broken: bool,
}

impl Out {
    fn text(&mut self, t: &str) -> bool {
        let start = self.s.len();
        for c in t.chars() {
            match c {
                '\u{a0}' => self.broken = true,
                '&' | '<' | '>' if self.broken => {}
                '&' => self.s.push_str("&amp;"),
                '<' => self.s.push_str("&lt;"),
                '>' => self.s.push_str("&gt;"),
                c => self.s.push(c),
            }
        }
        self.s.len() > start
    }

    fn attr(&mut self, v: &str) {
        if v.contains('\u{a0}') {
            self.broken = true;
        }
        let v: String = v.chars().filter(|&c| c != '\u{a0}').collect();
        let quote = if v.contains('"') && !v.contains('\'') { '\'' } else { '"' };
        self.s.push(quote);
        for c in v.chars() {
            match c {
                '&' => self.s.push_str("&amp;"),
                '<' => self.s.push_str("&lt;"),
                '>' => self.s.push_str("&gt;"),
                '"' if quote == '"' => self.s.push_str("&quot;"),
                c => self.s.push(c),
            }
        }
        self.s.push(quote);
    }

    fn node(&mut self, n: &Node, emit: bool) {
        match n {
            Node::Text(t) => {
                let mark = self.s.len();
                self.text(t);
                if !emit {
                    self.s.truncate(mark);
                }
            }
            Node::Elem { name, attrs, children } => {
                let mark = self.s.len();
                self.s.push('<');
                self.s.push_str(name);
                let mut sorted: Vec<&(String, String)> = attrs.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                for (k, v) in sorted {
                    self.s.push(' ');
                    self.s.push_str(k);
                    self.s.push('=');
                    self.attr(v);
                }
                let open_end = self.s.len();
                self.s.push('>');
                let body = self.s.len();
                for c in children {
                    self.node(c, true);
                }
                if self.s.len() == body {
                    self.s.truncate(open_end);
                    self.s.push_str("/>");
                } else {
                    self.s.push_str("</");
                    self.s.push_str(name);
                    self.s.push('>');
                }
                if !emit {
                    self.s.truncate(mark);
                }
            }
        }
    }
}

fn find<'a>(nodes: &'a [Node], want: &str) -> Option<&'a Node> {
    nodes.iter().find_map(|n| match n {
        Node::Elem { name, children, .. } => {
            if name == want {
                Some(n)
            } else {
                find(children, want)
            }
        }
        Node::Text(_) => None,
    })
}

/// `norm(inner(mathml))` for KaTeX `renderToString(…, {output: "mathml"})` markup. `None` when
/// the markup is not the well-formed MathML KaTeX writes.
pub fn compare_string(markup: &str) -> Option<String> {
    let doc = parse(markup)?;
    let mut out = Out { s: String::new(), broken: false };
    match find(&doc, "semantics") {
        Some(Node::Elem { children, .. }) => {
            // Nothing before <semantics> in KaTeX's output can hold U+00A0 (<math> attributes).
            for c in children {
                let keep = !matches!(c, Node::Elem { name, .. } if name == "annotation");
                out.node(c, keep);
            }
        }
        _ => {
            out.s.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
            for c in &doc {
                out.node(c, true);
            }
        }
    }
    Some(norm(&out.s))
}

/// The comparison string of a render error: lxml finds no element in KaTeX's error messages
/// in practice, so bs4 serializes only the XML declaration (see the check's differences).
pub fn error_compare_string() -> String {
    norm("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bs4_round_trip() {
        let m = r#"<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><semantics><mrow><mo stretchy="false" lspace="0em">(</mo><mspace width="1em"/><mtext>don&#x27;t &quot;q&quot; &amp; &lt;</mtext><mi mathvariant="normal" class ="x">x</mi></mrow><annotation encoding="application/x-tex">x</annotation></semantics></math>"#;
        assert_eq!(
            compare_string(m).unwrap(),
            r#"<mrow><molspace="0em"stretchy="false">(</mo><mspacewidth="1em"/><mtext>don't"q"&amp;&lt;</mtext><miclass="x"mathvariant="normal">x</mi></mrow>"#
        );
    }

    #[test]
    fn nbsp_drops_later_text_entities() {
        let m = "<math><semantics><mrow><mo>&lt;</mo><mtext>a\u{a0}b</mtext><mo>&gt;</mo><mi a=\"x&amp;y\">q</mi><mtext>&amp;</mtext></mrow><annotation>x</annotation></semantics></math>";
        assert_eq!(
            compare_string(m).unwrap(),
            r#"<mrow><mo>&lt;</mo><mtext>ab</mtext><mo/><mia="x&amp;y">q</mi><mtext/></mrow>"#
        );
    }

    #[test]
    fn malformed_is_none() {
        assert!(compare_string("<math><mi>x</math>").is_none());
        assert!(compare_string("<math a=b></math>").is_none());
    }
}
