// Text a rendered page would not show: olmocr-rl's own script for the rules of olmOCR's cutoff
// detection (allenai/olmocr @ f7cfe4c, olmocr/synth/cutoff_detection.py), run in the page by
// olmocr_rl/synth/render.py. Returns {clipped: [...], occluded: [...]}, each in document order.
//
// The elements looked at: every element below <body> (not inside one whose computed display is
// none or visibility hidden) with a text node child that is not blank; its text is its text node
// children joined and trimmed, and it must have a box of positive width and height.
// * clipped: the element's box, widened by what it scrolls (scrollWidth - clientWidth, likewise
//   down), cut by every ancestor whose overflow, overflow-x or overflow-y is hidden or clip (along
//   the axes it clips). Listed when less than `threshold` of its area is left.
// * occluded: texts of 3 or more characters, sampled on a grid (2 to 5 columns, one per 20 px;
//   2 to 4 rows; 2 px in from the edges); a point counts when it lies at x, y >= 0 and counts as
//   hidden when the topmost element there is neither the element, nor one of its ancestors or
//   descendants, and has a background colour of alpha above 0.5. Listed when at least 20% of
//   the counted points are hidden.
// Each listed element also says whether it lies inside KaTeX's `.katex-mathml` (katexMathml): the
// MathML copy of a formula KaTeX writes for screen readers, clipped to a 1 px box on purpose (the
// formula shows in its `.katex-html` sibling). Upstream does not tell them apart (see render.py).
(threshold) => {
  const shown = [];
  const visit = (element) => {
    const style = getComputedStyle(element);
    if (style.display === "none" || style.visibility === "hidden") return;
    if ([...element.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim())) shown.push(element);
    for (const child of element.children) visit(child);
  };
  visit(document.body);

  const ownText = (element) =>
    [...element.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent).join("").trim();
  const box = (r) => ({ left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height });
  const clips = (value) => value === "hidden" || value === "clip";
  const alphaOf = (color) => {
    if (!color || color === "transparent" || color === "rgba(0, 0, 0, 0)") return 0;
    const rgba = /rgba\((\d+),\s*(\d+),\s*(\d+),\s*([\d.]+)\)/.exec(color);
    if (rgba) return parseFloat(rgba[4]);
    return color.startsWith("rgb(") ? 1 : 0;
  };
  const kin = (a, b) => a.contains(b) || b.contains(a);
  const inKatexMathml = (element) => element.closest(".katex-mathml") !== null;

  const clipped = [];
  const occluded = [];
  for (const element of shown) {
    const rect = element.getBoundingClientRect();
    if (rect.width <= 0 || rect.height <= 0) continue;
    const text = ownText(element);
    if (!text) continue;

    const extraX = Math.max(0, element.scrollWidth - element.clientWidth);
    const extraY = Math.max(0, element.scrollHeight - element.clientHeight);
    let [left, top, right, bottom] = [rect.left, rect.top, rect.right + extraX, rect.bottom + extraY];
    let clipper = null;
    for (let up = element.parentElement; up; up = up.parentElement) {
      const s = getComputedStyle(up);
      const x = clips(s.overflow) || clips(s.overflowX);
      const y = clips(s.overflow) || clips(s.overflowY);
      if (!x && !y) continue;
      const a = up.getBoundingClientRect();
      const before = [left, top, right, bottom];
      if (x) [left, right] = [Math.max(left, a.left), Math.min(right, a.right)];
      if (y) [top, bottom] = [Math.max(top, a.top), Math.min(bottom, a.bottom)];
      if (!clipper && [left, top, right, bottom].some((v, i) => v !== before[i])) clipper = up.tagName;
    }
    const width = rect.width + extraX;
    const height = rect.height + extraY;
    const seenWidth = Math.max(0, right - left);
    const seenArea = seenWidth * Math.max(0, bottom - top);
    const ratio = width * height > 0 ? seenArea / (width * height) : 0;
    if (ratio < threshold) {
      clipped.push({ tag: element.tagName, text: text.substring(0, 500), visibleRatio: ratio,
        horizontalVisibleRatio: width > 0 ? seenWidth / width : 1, boundingRect: box(rect), clippingAncestorTag: clipper,
        katexMathml: inKatexMathml(element) });
    }

    if (text.length < 3) continue;
    const columns = Math.max(2, Math.min(5, Math.ceil(rect.width / 20)));
    const rows = Math.max(2, Math.min(4, Math.ceil(rect.height / 20)));
    let counted = 0;
    let hidden = 0;
    let blocker = null;
    for (let r = 0; r < rows; r++) {
      const y = rect.top + 2 + ((rect.height - 4) * r) / (rows - 1);
      for (let c = 0; c < columns; c++) {
        const x = rect.left + 2 + ((rect.width - 4) * c) / (columns - 1);
        if (x < 0 || y < 0) continue;
        counted++;
        const top = document.elementFromPoint(x, y);
        if (!top || top === element || kin(top, element)) continue;
        if (alphaOf(getComputedStyle(top).backgroundColor) > 0.5) {
          hidden++;
          blocker = blocker || top.tagName;
        }
      }
    }
    if (counted > 0 && hidden / counted >= 0.2) {
      occluded.push({ tag: element.tagName, text: text.substring(0, 500), occludedPoints: hidden, totalPoints: counted,
        blockerTag: blocker, boundingRect: box(rect), katexMathml: inKatexMathml(element) });
    }
  }
  return { clipped, occluded };
}
