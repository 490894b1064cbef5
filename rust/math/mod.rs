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
    /// `norm(inner(mathml))`, plus the leaf spans, computed on first use.
    Ok { compare: String, spans: OnceCell<Option<Vec<Span>>> },
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
            Render::Ok { spans, .. } => spans.get_or_init(|| layout(eq)).as_deref(),
            _ => None,
        }
    }
}

fn layout(eq: &str) -> Option<Vec<Span>> {
    let Rendered::Ok(json) = katex::render("__olmocr_layout", eq) else { return None };
    let rows: Vec<(String, f64, f64, f64, f64)> = serde_json::from_str(&json).ok()?;
    Some(rows.into_iter().map(|(text, x, y, w, h)| Span { text, x, y, w, h }).collect())
}

fn render_uncached(eq: &str) -> Render {
    match katex::render("__olmocr_mathml", eq) {
        Rendered::Ok(markup) => match mathml::compare_string(&markup) {
            Some(compare) => Render::Ok { compare, spans: OnceCell::new() },
            None => Render::Limit(format!("unexpected MathML from KaTeX: {:.80}", markup)),
        },
        Rendered::Error(e) => Render::Error(e),
        Rendered::Limit(e) => Render::Limit(e),
        Rendered::Unavailable(e) => Render::Unavailable(e),
    }
}

/// Renders kept per thread (QuickJS contexts are per thread too); cleared when full. A few KB
/// each, so a few MB per scoring thread.
const CACHE_ENTRIES: usize = 4_096;

thread_local! {
    static CACHE: RefCell<HashMap<String, Rc<Render>>> = RefCell::new(HashMap::new());
}

/// The render of `eq`, memoised per thread.
pub fn render(eq: &str) -> Rc<Render> {
    if let Some(r) = CACHE.with(|c| c.borrow().get(eq).cloned()) {
        return r;
    }
    let r = Rc::new(render_uncached(eq));
    if !matches!(*r, Render::Unavailable(_)) {
        CACHE.with(|c| {
            let mut c = c.borrow_mut();
            if c.len() >= CACHE_ENTRIES {
                c.clear();
            }
            c.insert(eq.to_string(), Rc::clone(&r));
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
