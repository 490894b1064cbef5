//! The reference's second comparison (docs/checks.md §5.4): glyph boxes with consistent neighbours,
//! ported from `compare_rendered_equations` line by line (same float operations, same
//! nearest-neighbour tie rule, same backtracking order).
//!
//! Bounds (the reference has none; its search can take exponential time): more than
//! [`MAX_BOXES`] boxes on either side, or more than [`MAX_STEPS`] candidate trials, end the
//! search with "not equal". Both are far above what real equations need.

use super::mathml::is_norm_space;

pub const MAX_BOXES: usize = 5_000;
pub const MAX_STEPS: u64 = 2_000_000;

/// One leaf span: its text (JS-trimmed) and bounding box (x, y, width, height).
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub text: String,
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

struct GlyphBox {
    c: char,
    cx: f64,
    cy: f64,
}

/// Drops spans whose normalized text is empty and splits the rest into one box per character.
fn boxes(spans: &[Span]) -> Vec<GlyphBox> {
    let mut out = Vec::new();
    for s in spans {
        let t: Vec<char> = s.text.chars().filter(|&c| !is_norm_space(c)).collect();
        let n = t.len() as f64;
        for (i, &c) in t.iter().enumerate() {
            let x = s.x + (s.w * i as f64) / n;
            let w = s.w / n;
            out.push(GlyphBox { c, cx: x + w / 2.0, cy: s.y + s.h / 2.0 });
        }
    }
    out
}

const TOL: f64 = 5.0;

/// [up, down, left, right] nearest neighbour of every box (ties: the lowest index).
fn neighbours(b: &[GlyphBox]) -> Vec<[Option<usize>; 4]> {
    let mut out = Vec::with_capacity(b.len());
    for (i, s) in b.iter().enumerate() {
        let mut best: [Option<(usize, f64)>; 4] = [None; 4];
        for (j, o) in b.iter().enumerate() {
            if i == j {
                continue;
            }
            let cand = [
                (o.cy < s.cy && (o.cx - s.cx).abs() <= TOL).then_some(s.cy - o.cy),
                (o.cy > s.cy && (o.cx - s.cx).abs() <= TOL).then_some(o.cy - s.cy),
                (o.cx < s.cx && (o.cy - s.cy).abs() <= TOL).then_some(s.cx - o.cx),
                (o.cx > s.cx && (o.cy - s.cy).abs() <= TOL).then_some(o.cx - s.cx),
            ];
            for (d, dist) in cand.into_iter().enumerate() {
                if let Some(dist) = dist {
                    if best[d].is_none_or(|(_, bd)| dist < bd) {
                        best[d] = Some((j, dist));
                    }
                }
            }
        }
        out.push(best.map(|o| o.map(|(j, _)| j)));
    }
    out
}

/// Whether the reference's glyphs (`reference`) appear in the hypothesis with locally
/// consistent up/down/left/right neighbours.
pub fn layout_match(reference: &[Span], hypothesis: &[Span]) -> bool {
    let h = boxes(reference);
    let r = boxes(hypothesis);
    if h.is_empty() {
        return true;
    }
    if h.len() > MAX_BOXES || r.len() > MAX_BOXES {
        return false;
    }
    let mut cands: Vec<Vec<usize>> = Vec::with_capacity(h.len());
    for hb in &h {
        let c: Vec<usize> = (0..r.len()).filter(|&j| r[j].c == hb.c).collect();
        if c.is_empty() {
            return false;
        }
        cands.push(c);
    }
    let hn = neighbours(&h);
    let rn = neighbours(&r);
    let mut s = Search {
        h: &h,
        r: &r,
        hn: &hn,
        rn: &rn,
        cands: &cands,
        used: vec![false; r.len()],
        assign: vec![None; h.len()],
        steps: 0,
    };
    s.run()
}

struct Search<'a> {
    h: &'a [GlyphBox],
    r: &'a [GlyphBox],
    hn: &'a [[Option<usize>; 4]],
    rn: &'a [[Option<usize>; 4]],
    cands: &'a [Vec<usize>],
    used: Vec<bool>,
    assign: Vec<Option<usize>>,
    steps: u64,
}

impl Search<'_> {
    fn valid(&self, i: usize, cand: usize) -> bool {
        for d in 0..4 {
            let Some(hyp_nb) = self.hn[i][d] else { continue };
            let Some(ref_nb) = self.rn[cand][d] else { return false };
            match self.assign[hyp_nb] {
                Some(a) => {
                    if a != ref_nb {
                        return false;
                    }
                }
                None => {
                    if self.r[ref_nb].c != self.h[hyp_nb].c {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Iterative backtracking (deep recursion could overflow on thousands of boxes).
    fn run(&mut self) -> bool {
        let n = self.h.len();
        let mut pos = vec![0usize; n]; // next candidate index to try at each level
        let mut i = 0usize;
        loop {
            if i == n {
                return true;
            }
            let mut advanced = false;
            while pos[i] < self.cands[i].len() {
                let cand = self.cands[i][pos[i]];
                pos[i] += 1;
                if self.used[cand] {
                    continue;
                }
                self.steps += 1;
                if self.steps > MAX_STEPS {
                    return false;
                }
                self.assign[i] = Some(cand);
                self.used[cand] = true;
                if self.valid(i, cand) {
                    advanced = true;
                    break;
                }
                self.used[cand] = false;
                self.assign[i] = None;
            }
            if advanced {
                i += 1;
                if i < n {
                    pos[i] = 0;
                }
                continue;
            }
            // Exhausted level i: undo level i-1 and try its next candidate.
            if i == 0 {
                return false;
            }
            i -= 1;
            if let Some(c) = self.assign[i].take() {
                self.used[c] = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(text: &str, x: f64, y: f64) -> Span {
        Span { text: text.into(), x, y, w: 10.0 * text.chars().count() as f64, h: 20.0 }
    }

    #[test]
    fn neighbour_consistency() {
        let ab = [sp("ab", 0.0, 0.0)];
        assert!(layout_match(&ab, &[sp("xab", 0.0, 0.0)]));
        assert!(!layout_match(&ab, &[sp("ba", 0.0, 0.0)]));
        assert!(!layout_match(&ab, &[sp("a", 0.0, 0.0), sp("b", 10.0, 40.0)]));
        // b far below a: no neighbour constraint in the reference
        assert!(layout_match(&[sp("a", 0.0, 0.0), sp("b", 50.0, 40.0)], &[sp("ba", 0.0, 0.0)]));
        assert!(layout_match(&[], &[]));
        assert!(!layout_match(&ab, &[]));
        // The assignment must be injective.
        assert!(!layout_match(&[sp("a", 0.0, 0.0), sp("a", 100.0, 100.0)], &[sp("a", 0.0, 0.0)]));
    }

    #[test]
    fn search_is_bounded() {
        // Many identical glyphs with an impossible last one: exhaustive search is exponential.
        let mut r: Vec<Span> = (0..60).map(|i| sp("a", 30.0 * i as f64, 30.0 * i as f64)).collect();
        let h = r.clone();
        r.push(sp("b", 10_000.0, 0.0));
        let mut h2 = h;
        h2.push(sp("ab", 5000.0, 5000.0));
        let t = std::time::Instant::now();
        let _ = layout_match(&h2, &r);
        assert!(t.elapsed().as_secs() < 20);
    }
}
