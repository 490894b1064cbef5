//! Math rendering and comparison without a browser: KaTeX 0.16.21 in QuickJS for MathML
//! ([`katex`], [`mathml`]), equation extraction ([`extract`]) and the glyph-layout comparison on
//! approximate boxes ([`glyphs`]). The check itself is `checks::math`.

pub mod extract;
pub mod glyphs;
pub mod katex;
pub mod mathml;

use glyphs::Span;
use katex::Rendered;
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// An equation's render, as far as the comparison needs it.
#[derive(Debug)]
pub enum Render {
    /// `norm(inner(mathml))`, plus the leaf spans and their render's cost, computed on first use.
    Ok { compare: String, spans: OnceCell<(Option<Vec<Span>>, bool)> },
    /// KaTeX threw: the reference's error render (no spans).
    Error(String),
    /// Our resource bounds ended the render.
    Limit(String),
    /// No usable KaTeX: the message names the fix.
    Unavailable(String),
}

impl Render {
    /// The leaf spans (`None` if the layout render hit a bound).
    pub fn spans(&self, eq: &str) -> Option<&[Span]> {
        match self {
            Render::Ok { spans, .. } => spans.get_or_init(|| layout(eq)).0.as_deref(),
            _ => None,
        }
    }

    /// Whether the layout render ran and was cut by a bound.
    pub fn layout_limited(&self) -> bool {
        matches!(self, Render::Ok { spans, .. } if spans.get().is_some_and(|s| s.1))
    }

    /// Approximate heap bytes, for the cache's bound.
    fn bytes(&self) -> usize {
        let spans = |s: &OnceCell<(Option<Vec<Span>>, bool)>| {
            s.get().and_then(|s| s.0.as_ref()).map_or(0, |v| v.iter().map(|x| x.text.len() + 48).sum())
        };
        128 + match self {
            Render::Ok { compare, spans: s } => compare.len() + spans(s),
            Render::Error(e) | Render::Limit(e) | Render::Unavailable(e) => e.len(),
        }
    }
}

/// The leaf spans of `eq`'s layout render, and whether a bound cut that render.
fn layout(eq: &str) -> (Option<Vec<Span>>, bool) {
    let json = match katex::render("__olmocr_layout", eq) {
        Rendered::Ok(json) => json,
        r => return (None, matches!(r, Rendered::Limit(_))),
    };
    type Row = (String, f64, f64, f64, f64); // text, x, y, width, height
    let rows: Option<Vec<Row>> = serde_json::from_str(&json).ok();
    (rows.map(|rows| rows.into_iter().map(|(text, x, y, w, h)| Span { text, x, y, w, h }).collect()), false)
}

fn render_uncached(eq: &str) -> Render {
    match katex::render("__olmocr_mathml", eq) {
        Rendered::Ok(markup) => match mathml::compare_string(&markup) {
            Some(compare) => Render::Ok { compare, spans: OnceCell::new() },
            None => Render::Limit("KaTeX's MathML could not be read".to_string()),
        },
        Rendered::Error(e) => Render::Error(e),
        Rendered::Limit(e) => Render::Limit(e),
        Rendered::Unavailable(e) => Render::Unavailable(e),
    }
}

/// Renders kept per thread (QuickJS contexts are per thread too), bounded in bytes: the cache
/// is emptied when its renders (MathML, spans, keys) pass this many bytes. Layout spans are
/// counted when the entry is stored, so a thread may hold somewhat more.
const CACHE_BYTES: usize = 32 << 20;

#[derive(Default)]
struct Cache {
    renders: HashMap<String, Rc<Render>>,
    bytes: usize,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// The render of `eq`, memoised per thread.
pub fn render(eq: &str) -> Rc<Render> {
    if let Some(r) = CACHE.with(|c| c.borrow().renders.get(eq).cloned()) {
        return r;
    }
    let r = Rc::new(render_uncached(eq));
    if !matches!(*r, Render::Unavailable(_)) {
        CACHE.with(|c| {
            let mut c = c.borrow_mut();
            let size = eq.len() + r.bytes();
            if c.bytes + size > CACHE_BYTES {
                c.renders.clear();
                c.bytes = 0;
            }
            c.bytes += size;
            c.renders.insert(eq.to_string(), Rc::clone(&r));
        });
    }
    r
}

/// The first half of `compare_rendered_equations(reference, hypothesis)`: normalized MathML
/// containment (false unless both rendered).
pub fn mathml_match(reference: &Render, hypothesis: &Render) -> bool {
    match (reference, hypothesis) {
        (Render::Ok { compare: r, .. }, Render::Ok { compare: h, .. }) => h.contains(r.as_str()),
        _ => false,
    }
}

/// The second half: the glyph-layout match (an error reference has no spans, so it holds).
pub fn layout_match(ref_eq: &str, reference: &Render, hyp_eq: &str, hypothesis: &Render) -> bool {
    if !matches!(reference, Render::Ok { .. }) {
        return true;
    }
    let Some(ref_spans) = reference.spans(ref_eq) else { return false };
    let hyp_spans: &[Span] = match hypothesis {
        Render::Ok { .. } => match hypothesis.spans(hyp_eq) {
            Some(s) => s,
            None => return false,
        },
        _ => &[],
    };
    glyphs::layout_match(ref_spans, hyp_spans)
}
