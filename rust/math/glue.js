// olmocr-rl glue, evaluated in QuickJS after KaTeX 0.16.21's katex.min.js.
//
// __olmocr_mathml(eq): "M" + KaTeX's MathML markup, or "E" + the error message — what the
//   reference's katex.render(eq, el, {displayMode: true, throwOnError: true}) stores.
// __olmocr_layout(eq): "M" + JSON [[text, x, y, width, height], ...] of the leaf spans the
//   reference measures with getBoundingClientRect (every <span> without element children
//   whose textContent has a non-space; text JS-trimmed), with positions from a small model of
//   how Chromium lays out KaTeX's HTML with the fallback fonts (the reference ships no KaTeX
//   fonts): horizontal flow with Liberation Serif (Times) advance widths, margins, paddings and explicit widths;
//   vlists place each row's baseline at top + pstrut; rows align as the KaTeX CSS says
//   (centered by default in display mode, left in sub/superscripts); font sizes follow the
//   sizing classes; a box is the font's ascent + descent around its baseline.
//   The text of each span is exact; the geometry is an approximation (see rust/checks/math.rs).
var __olmocr_opts = { displayMode: true, throwOnError: true };

function __olmocr_mathml(eq) {
  try {
    return "M" + katex.renderToString(eq, { displayMode: true, throwOnError: true, output: "mathml" });
  } catch (e) {
    return "E" + (e && e.message !== undefined ? String(e.message) : String(e));
  }
}

var __olmocr_w = null, __olmocr_k = null;
function __olmocr_widths() {
  if (__olmocr_w) return __olmocr_w;
  __olmocr_w = {};
  __olmocr_k = {};
  for (var k in __olmocr_fonts) {
    var m = {}, kern = {};
    var runs = __olmocr_fonts[k].w.split(",");
    for (var i = 0; i < runs.length; i++) {
      var p = runs[i].split(":");
      m[parseInt(p[0], 16)] = parseInt(p[1], 16) / 2048;
    }
    var pairs = __olmocr_fonts[k].k ? __olmocr_fonts[k].k.split(",") : [];
    for (var j = 0; j < pairs.length; j++) {
      var q = pairs[j].split(":");
      kern[parseInt(q[0], 16) * 0x110000 + parseInt(q[1], 16)] = parseInt(q[2], 10) / 2048;
    }
    __olmocr_w[k] = m;
    __olmocr_k[k] = kern;
  }
  return __olmocr_w;
}

var __olmocr_size = [0, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.2, 1.44, 1.728, 2.074, 2.488];

function __olmocr_em(v) {
  if (v === undefined || v === null || v === "") return 0;
  var s = String(v);
  if (s.slice(-2) === "em") return parseFloat(s) || 0;
  return 0;
}

// A CSS length in px, snapped to Chromium's LayoutUnit (1/64 px).
function __olmocr_px(v, fs) {
  return Math.round(__olmocr_em(v) * fs * 64) / 64;
}

function __olmocr_layout(eq) {
  try {
    var tree = katex.__renderToHTMLTree(eq, __olmocr_opts);
    var W = __olmocr_widths();
    var ASC = __olmocr_fonts.r.asc, DESC = __olmocr_fonts.r.desc;
    var out = [];

    function has(n, c) { return n.classes && n.classes.indexOf(c) >= 0; }
    function styled(n) {
      for (var k in n.style) return true;
      return false;
    }
    function bare(n) { // a SymbolNode written as a plain text node
      return n.text !== undefined && !n.children &&
        !(n.classes && n.classes.length) && !(n.italic > 0) && !styled(n);
    }
    function isSym(n) { return n.text !== undefined && !n.children; }
    function fontOf(n, f) {
      if (!n.classes) return f;
      var it = f === "i" || f === "bi", bd = f === "b" || f === "bi";
      for (var i = 0; i < n.classes.length; i++) {
        var c = n.classes[i];
        if (c === "mathnormal" || c === "mathit" || c === "textit" || c === "mainit") it = true;
        if (c === "mathbf" || c === "textbf" || c === "boldsymbol") bd = true;
        if (c === "boldsymbol") it = true;
        if (c === "mathrm" || c === "textrm" || c === "mathup" || c === "textup") it = false;
      }
      return bd ? (it ? "bi" : "b") : (it ? "i" : "r");
    }
    function textWidth(t, f) {
      var w = 0, prev = -1, K = __olmocr_k[f];
      for (var i = 0; i < t.length; i++) {
        var c = t.codePointAt(i);
        if (c > 0xffff) i++;
        if (prev >= 0) { var kv = K[prev * 0x110000 + c]; if (kv) w += kv; }
        prev = W[f][c] === undefined ? -1 : c; // kerning only between glyphs of this font
        var v = W[f][c];
        if (v === undefined) v = W.r[c];
        if (v === undefined) v = W.s[c];
        if (v === undefined) v = W.ds[c];
        if (v === undefined) v = __olmocr_fonts.r.notdef / 2048; // Chromium draws .notdef
        w += v;
      }
      return w;
    }
    function textOf(n) {
      if (isSym(n)) return n.text;
      var s = "";
      if (n.children) for (var i = 0; i < n.children.length; i++) if (isSym(n.children[i]) || n.children[i].children) s += textOf(n.children[i]);
      return s;
    }
    function fsOf(n, fs) {
      if (!n.classes) return fs;
      var r = 0, s = 0;
      for (var i = 0; i < n.classes.length; i++) {
        var c = n.classes[i];
        if (c.indexOf("reset-size") === 0) r = parseInt(c.slice(10), 10);
        else if (c.indexOf("size") === 0 && (has(n, "sizing") || has(n, "fontsize-ensurer"))) s = parseInt(c.slice(4), 10);
      }
      if (r && s && __olmocr_size[r] && __olmocr_size[s]) return fs * __olmocr_size[s] / __olmocr_size[r];
      return fs;
    }
    function leaf(text, x, base, w, fs, ib) {
      if (!/\S/.test(text)) return;
      // Chromium rounds the font's ascent and descent to whole pixels.
      var a = Math.round(ASC * fs), d = Math.round(DESC * fs);
      x = Math.round(x * 64) / 64;
      if (ib) { // an inline-block (.vlist > span > span): its box is the line height, 1.2em
        var lh = Math.floor(1.2 * fs * 64) / 64;
        out.push([text.trim(), x, base - a - Math.floor((lh - a - d) / 2), w, lh]);
      } else {
        out.push([text.trim(), x, base - a, w, a + d]);
      }
    }

    // Lays out node n with its left edge at x and its baseline at base; returns its width.
    // emit=false only measures.
    function lay(n, x, base, fs, f, align, emit, ib) {
      if (isSym(n)) {
        var ff = fontOf(n, f);
        var w0 = Math.round(textWidth(n.text, ff) * fs * 64) / 64; // LayoutUnit: 1/64 px
        var w = w0 + (n.italic > 0 ? Math.round(n.italic * fs * 64) / 64 : 0);
        if (styled(n)) w += __olmocr_px(n.style.marginRight, fs);
        // getBoundingClientRect excludes margins (the italic correction is a margin-right).
        if (emit && !bare(n)) leaf(n.text, x, base, w0, fs, ib);
        return w;
      }
      if (!n.children) { // svg, img, ...: only explicit widths count
        return 0;
      }
      // A subtree's width does not depend on where it is placed: measure each node once
      // (vlists measure their rows before placing them; without this, nesting is exponential).
      if (!emit && n.__olmocr_w !== undefined) return n.__olmocr_w;
      fs = fsOf(n, fs);
      f = fontOf(n, f);
      var st = n.style, ml = 0, mr = 0, pl = 0, pr = 0, dx = 0, explicit = 0;
      if (styled(n)) {
        ml = __olmocr_px(st.marginLeft, fs); mr = __olmocr_px(st.marginRight, fs);
        pl = __olmocr_px(st.paddingLeft, fs); pr = __olmocr_px(st.paddingRight, fs);
        dx = __olmocr_em(st.left) * fs; // relative offsets stay fractional (leaf x is snapped)
        explicit = Math.max(__olmocr_px(st.width, fs), __olmocr_px(st.minWidth, fs));
        base -= __olmocr_em(st.verticalAlign) * fs;
      }
      if (has(n, "msupsub")) align = "l";
      if (has(n, "mfrac") || has(n, "op-limits") || has(n, "accent")) align = "c";
      if (has(n, "col-align-l")) align = "l";
      if (has(n, "col-align-r")) align = "r";
      if (has(n, "col-align-c")) align = "c";
      var x0 = x + ml + pl + dx;
      var inner;
      if (has(n, "vlist-t")) {
        inner = vlist(n, x0, base, fs, f, align, emit);
      } else if (has(n, "rlap") || has(n, "llap") || has(n, "clap")) {
        var iw = flow(n.children, 0, base, fs, f, align, false);
        var sx = has(n, "rlap") ? x0 : has(n, "llap") ? x0 - iw : x0 - iw / 2;
        if (emit) flow(n.children, sx, base, fs, f, align, true);
        inner = 0;
      } else {
        var allBare = true;
        for (var i = 0; i < n.children.length; i++) if (!bare(n.children[i])) { allBare = false; break; }
        if (allBare && n.children.length) {
          // One text node: Chromium shapes the run as a whole.
          inner = Math.round(textWidth(textOf(n), f) * fs * 64) / 64;
          if (emit) leaf(textOf(n), x0, base, inner, fs, ib);
        } else if (has(n, "katex-html")) {
          // \tag: absolutely positioned at the right edge of the equation box.
          var tags = [], rest = [];
          for (var t = 0; t < n.children.length; t++) (has(n.children[t], "tag") ? tags : rest).push(n.children[t]);
          inner = flow(rest, x0, base, fs, f, align, emit);
          for (var u = 0; u < tags.length; u++) {
            var tw = lay(tags[u], 0, base, fs, f, align, false);
            lay(tags[u], x0 + inner - tw, base, fs, f, align, emit);
          }
        } else {
          inner = flow(n.children, x0, base, fs, f, align, emit);
        }
      }
      if (has(n, "accent-body") && !has(n, "accent-full")) inner = 0; // CSS width: 0
      if (has(n, "nulldelimiter")) explicit = Math.round(0.12 * fs * 64) / 64;
      inner = Math.max(inner, explicit);
      n.__olmocr_w = ml + pl + inner + pr + mr;
      return n.__olmocr_w;
    }
    function flow(children, x, base, fs, f, align, emit) {
      var w = 0;
      for (var i = 0; i < children.length; i++) w += lay(children[i], x + w, base, fs, f, align, emit);
      return w;
    }
    // vlist-t > vlist-r > vlist > rows (each: pstrut + content, style top).
    function vlist(n, x, base, fs, f, align, emit) {
      var rows = [];
      var r0 = n.children[0];
      if (r0 && r0.children) {
        var vl = r0.children[0];
        if (vl && vl.children) {
          for (var i = 0; i < vl.children.length; i++) {
            var row = vl.children[i];
            if (!row.children || !row.children.length) continue;
            rows.push(row);
          }
        }
      }
      var widths = [], cellW = 0;
      for (var j = 0; j < rows.length; j++) {
        var rw = rowLay(rows[j], x, base, fs, f, align, false, 0);
        widths.push(rw);
        if (rw > cellW) cellW = rw;
      }
      if (emit) {
        for (var k = 0; k < rows.length; k++) {
          var off = align === "c" ? (cellW - widths[k]) / 2 : align === "r" ? cellW - widths[k] : 0;
          rowLay(rows[k], x + off, base, fs, f, align, true, 0);
        }
      }
      return cellW;
    }
    function rowLay(row, x, base, fs, f, align, emit) {
      var st = row.style || {};
      var top = __olmocr_em(st.top), ps = 0;
      var kids = row.children, start = 0;
      if (kids.length && has(kids[0], "pstrut")) { ps = __olmocr_em(kids[0].style.height); start = 1; }
      var rbase = base + (top + ps) * fs;
      var ml = __olmocr_px(st.marginLeft, fs), mr = __olmocr_px(st.marginRight, fs);
      var dx = __olmocr_em(st.left) * fs;
      var w = 0;
      for (var i = start; i < kids.length; i++) w += lay(kids[i], x + ml + dx + w, rbase, fs, f, align, emit, true);
      return ml + w + mr;
    }

    lay(tree, 0, 0, 24 * 1.21, "r", "c", true);
    return "M" + JSON.stringify(out);
  } catch (e) {
    return "E" + (e && e.message !== undefined ? String(e.message) : String(e));
  }
}
