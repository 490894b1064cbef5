//! `math` (MathTest, docs/checks.md §3.5 and §5).
//!
//! What it checks: that the page holds an equation that renders like the test's `math`.
//!
//! Passes when: some delimited equation of the page (`\(…\)`, `\[…\]`, `$$…$$`, `$…$`, extracted
//! as the reference does, see `math::extract`) equals `math` exactly; or KaTeX 0.16.21 renders
//! it so that the reference's normalized MathML is a substring of its normalized MathML; or the
//! reference's glyphs appear in its glyph layout with consistent up/down/left/right neighbours.
//! A reference that KaTeX cannot render, or that renders no visible glyph, passes on any page
//! with at least one delimited equation (docs/checks.md §5.6).
//!
//! How: KaTeX itself (the `katex.min.js` 0.16.21 that the reference runs, from the `olmocr` PyPI
//! package) runs in QuickJS-NG, so MathML, render errors and the leaf spans' texts are exactly
//! the reference's; the MathML goes through a port of the BeautifulSoup/lxml XML round trip
//! (`math::mathml`). Renders are memoised per thread.
//!
//! Known differences from upstream:
//! * Glyph boxes: the reference measures spans with Chromium's getBoundingClientRect, using the
//!   machine's fallback fonts (no KaTeX fonts are shipped). We compute them from KaTeX's HTML
//!   tree with the fallback fonts' metrics (Liberation Serif advances and kerning, DejaVu for
//!   missing glyphs, ascent/descent rounded as Chromium does) and a model of KaTeX's CSS
//!   (`math/glue.js`). Measured against Chromium on the 843 distinct equations of the golden
//!   cases: the same up/down/left/right neighbour graph for 837; the other 6 (`\frac{\rho}
//!   {\varepsilon_0}`) differ by < 0.05 px at the 5 px tolerance. Verdicts agree on all 2,709
//!   golden cases (tests/test_golden_math.py). Other fonts on the reference's machine would
//!   change the reference's layout verdicts, not ours.
//! * Bounds: an equation over `katex::MAX_EQUATION_CHARS` characters is not rendered, and a render
//!   that exceeds our operation budget, heap or JS stack (macro bombs, 100 kB
//!   or deeply nested equations; the reference would grind on or overflow V8's stack at a
//!   different depth) counts as a render error for a hypothesis and makes the test an error
//!   verdict for a reference; a failure explanation says how many equations were not compared.
//!   One check runs at most [`PAGE_RENDERS`] renders, [`PAGE_LIMITED`] of them cut by a bound: a
//!   page that needs more is an error verdict saying so, where the reference would render on
//!   (minutes for a page of macro bombs). Bounds count operations and renders, never time, so a
//!   verdict does not depend on the machine's load (a render's operation count can differ by
//!   one interrupt tick, 10,000 operations, with what its thread ran before).
//!   The layout search gives up ("not equal") beyond
//!   `glyphs::MAX_BOXES` boxes or `glyphs::MAX_STEPS` trials.
//! * A hypothesis that KaTeX rejects compares by the XML declaration only (lxml recovers no
//!   element from KaTeX's error messages in practice); the reference parses the message itself.
//! * Stage 1 renders KaTeX's MathML output only (the reference renders HTML and MathML
//!   together): an equation whose HTML build alone throws would be a render error there.
//!   KaTeX's parse errors, which are what model output hits, are shared by both outputs.
//! * The reference's on-disk equation cache can return renders of older KaTeX/Chromium
//!   versions; we always render afresh.
//! * If KaTeX is not available, the check is an error verdict saying how to install it.

use super::Verdict;
use crate::fuzz::ratio;
use crate::math::{self, extract, Render};
use crate::text::{chars, string};

/// Renders one math check may run on its page (each distinct hypothesis's MathML, and the layout
/// renders of the second stage), and how many of them may hit a bound of `katex` (each such
/// render costs up to its whole operation budget). Counts, not time or operations: the verdict
/// is the same whatever the cache holds, the thread, or the machine's load. A failing test on
/// a page of N distinct equations needs 2N + 1 renders (MathML, then layout), so pages of up to
/// ~300 equations are checked in full; the worst page costs ~0.1 s of one core
/// (benchmarks/bench_worst_case.py).
pub const PAGE_RENDERS: usize = 600;
pub const PAGE_LIMITED: usize = 1;

/// What one check has rendered so far.
#[derive(Default)]
struct Spent {
    renders: usize,
    limited: usize,
}

impl Spent {
    fn charge(&mut self, render: &Render) {
        self.renders += 1;
        self.limited += usize::from(matches!(render, Render::Limit(_)));
    }
    fn over(&self) -> bool {
        self.renders >= PAGE_RENDERS || self.limited >= PAGE_LIMITED
    }
}

fn over_budget(spent: &Spent, compared: usize, total: usize) -> Verdict {
    let why = if spent.limited >= PAGE_LIMITED {
        format!("{} of its equations exceed the render limits", spent.limited)
    } else {
        format!("it needs more than {PAGE_RENDERS} renders")
    };
    Verdict::error(format!(
        "the page's equations exceed the math check's budget ({why}); {compared} of its {total} distinct equations were compared"
    ))
}

pub fn check(math_src: &str, ignore_dollar_delimited: bool, raw: &[char]) -> Verdict {
    let equations = extract::equations(raw, ignore_dollar_delimited);
    let fail = || Verdict::fail(format!("No match found for {math_src} anywhere in content"));
    let target = chars(math_src);
    if equations.contains(&target) {
        return Verdict::pass();
    }
    if equations.is_empty() {
        return fail();
    }
    let reference = math::render(math_src);
    let mut spent = Spent::default();
    match &*reference {
        Render::Unavailable(e) => return Verdict::error(e.clone()),
        Render::Limit(e) => return Verdict::error(format!("the test's equation could not be rendered: {e}")),
        Render::Error(_) => return Verdict::pass(), // no spans: any hypothesis matches
        Render::Ok { .. } => {}
    }
    // Most similar first, as the reference (stable); only speed depends on the order.
    let mut order: Vec<(f64, usize)> = equations.iter().enumerate().map(|(i, e)| (-ratio(e, &target), i)).collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut seen = std::collections::HashSet::new();
    let mut rendered = Vec::new();
    let distinct = equations.iter().collect::<std::collections::HashSet<_>>().len();
    for (_, i) in order {
        let hyp = string(&equations[i]);
        if !seen.insert(hyp.clone()) {
            continue; // the same equation twice gives the same answer
        }
        if spent.over() {
            return over_budget(&spent, seen.len() - 1, distinct);
        }
        let r = math::render(&hyp);
        spent.charge(&r);
        if let Render::Unavailable(e) = &*r {
            return Verdict::error(e.clone());
        }
        // The reference tries (MathML or layout) hypothesis by hypothesis; the verdict is the same
        // if every hypothesis gets the cheap MathML test first and the layout test after.
        if math::mathml_match(&reference, &r) {
            return Verdict::pass();
        }
        rendered.push((hyp, r));
    }
    let mut limited_hypotheses = rendered.iter().filter(|(_, r)| matches!(**r, Render::Limit(_))).count();
    for (i, (hyp, r)) in rendered.iter().enumerate() {
        // The layout stage renders the reference once and each rendered hypothesis once.
        if matches!(**r, Render::Ok { .. }) {
            if spent.over() {
                return over_budget(&spent, i, rendered.len());
            }
            spent.renders += 1 + usize::from(i == 0);
        }
        if math::layout_match(math_src, &reference, hyp, r) {
            return Verdict::pass();
        }
        if r.layout_limited() {
            spent.limited += 1;
            limited_hypotheses += 1;
        }
    }
    if limited_hypotheses > 0 {
        // Said in plain words: the reference would have rendered these and might have matched.
        return Verdict::fail(format!(
            "No match found for {math_src} anywhere in content ({limited_hypotheses} equation(s) of the page exceed the render limits and were not compared)"
        ));
    }
    fail()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::katex::tests::katex_or_skip;

    fn run(m: &str, content: &str) -> bool {
        check(m, false, &chars(content)).passed
    }

    #[test]
    fn spec_cases_15_to_18() {
        if !katex_or_skip() {
            return;
        }
        assert!(run("\\frac{a}{", "$x$"));
        assert!(run("\\frac{a}{", "$$ $$"));
        assert!(!run("\\frac{a}{", "no math here"));
        assert!(run("\\quad", "text $z$"));
        assert!(!run("\\quad", "no equations"));
        assert!(run("5", "it costs $5 and $6 today"));
        assert!(run(" a+b", "$a+b$"));
        assert_eq!(check("x", false, &chars("none")).explanation, "No match found for x anywhere in content");
    }

    #[test]
    fn mathml_containment() {
        if !katex_or_skip() {
            return;
        }
        assert!(run("a+b", "$a + b$"));
        assert!(run("\\to", "$\\rightarrow$"));
        assert!(!run("\\phi", "$\\varphi$"));
        assert!(run("x^2", "where \\[ y = x^2 \\] holds"));
        assert!(run("\\int_a^b", "$\\int\\limits_a^b$"));
        assert!(!run("x_{i,j}", "$x_{j,i}$"));
        assert!(run("x", "$\\color{red} x$"));
        assert!(!check("a+b", true, &chars("$a+b$")).passed);
    }

    /// An equation that exceeds KaTeX's operation budget (katex.rs's bomb: nested macros).
    fn bomb() -> String {
        let mut bomb = format!("\\def\\za{{{}}}", "x+".repeat(250) + "y");
        for (prev, name) in ["za", "zb", "zc", "zd"].iter().zip(["zb", "zc", "zd", "ze"]) {
            bomb += &format!("\\def\\{name}{{{}}}", format!("\\{prev}").repeat(4));
        }
        bomb + "\\ze"
    }

    /// A hypothesis cut by a render bound is no match, and the failure says so; a second
    /// hypothesis after it exceeds the page's budget (PAGE_LIMITED = 1): an error verdict that
    /// says why and how many equations were compared.
    #[test]
    fn a_render_cut_by_a_bound_is_said_and_spends_the_budget() {
        if !katex_or_skip() {
            return;
        }
        let alone = check("x+y", false, &chars(&format!("${}$", bomb())));
        assert_eq!(
            (alone.passed, alone.error, alone.explanation.as_str()),
            (false, false, "No match found for x+y anywhere in content (1 equation(s) of the page exceed the render limits and were not compared)")
        );
        // The bomb is the more similar to the target, so it is rendered first.
        let two = check("x+y", false, &chars(&format!("${}$ and $\\beta$", bomb())));
        assert!(two.error && !two.passed);
        assert_eq!(
            two.explanation,
            "error: the page's equations exceed the math check's budget (1 of its equations exceed the render limits); 1 of its 2 distinct equations were compared"
        );
    }

    /// A hypothesis whose MathML renders but whose layout render is cut by a bound (the bomb
    /// with a short body: nested macros that the MathML render fits and the layout render does
    /// not) is no match and is said so; a hypothesis after it exceeds the page's budget.
    #[test]
    fn a_layout_render_cut_by_a_bound_is_said_and_spends_the_budget() {
        if !katex_or_skip() {
            return;
        }
        let small = bomb().replacen(&"x+".repeat(250), &"x+".repeat(8), 1);
        let alone = check("\\beta", false, &chars(&format!("${small}$")));
        assert_eq!(
            alone.explanation,
            "No match found for \\beta anywhere in content (1 equation(s) of the page exceed the render limits and were not compared)"
        );
        // `7` shares nothing with the target: the bomb is tried first, `7` is over the budget.
        let two = check("\\beta", false, &chars(&format!("${small}$ and $7$")));
        assert_eq!(
            two.explanation,
            "error: the page's equations exceed the math check's budget (1 of its equations exceed the render limits); 1 of its 2 distinct equations were compared"
        );
    }

    /// PAGE_RENDERS: 700 distinct equations that do not match stop after 600 MathML renders; the
    /// same page with a matching equation passes, as it is the most similar and tried first.
    #[test]
    fn a_page_of_many_equations_stops_at_the_render_budget() {
        if !katex_or_skip() {
            return;
        }
        let page: Vec<String> = (0..700).map(|i| format!("$x_{{{i}}}^{{{}}}$", i % 7)).collect();
        let v = check("\\alpha+\\beta=\\gamma", false, &chars(&page.join(" text ")));
        assert!(v.error && !v.passed);
        assert_eq!(
            v.explanation,
            "error: the page's equations exceed the math check's budget (it needs more than 600 renders); 600 of its 700 distinct equations were compared"
        );
        let with_match = page.join(" text ") + " $\\alpha + \\beta = \\gamma$";
        assert!(check("\\alpha+\\beta=\\gamma", false, &chars(&with_match)).passed);
        // 350 distinct: 350 MathML renders, then the layout stage's (the reference once, each
        // hypothesis once) until 600: 249 of the 350 get their layout compared.
        let v = check("\\alpha+\\beta=\\gamma", false, &chars(&page[..350].join(" text ")));
        assert_eq!(
            v.explanation,
            "error: the page's equations exceed the math check's budget (it needs more than 600 renders); 249 of its 350 distinct equations were compared"
        );
    }
}
