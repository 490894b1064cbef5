// The page list and page view of `olmocr-rl bench --report`. The data (window.REPORT_DATA) comes
// from <name>_files/data.js; each page's markdown from <name>_files/text/<chunk>.js, loaded when
// a page of that chunk is shown. Every string from the data reaches the page through esc() or
// textContent.
"use strict";
// data.js is a deferred script: it has run by DOMContentLoaded.
document.addEventListener("DOMContentLoaded", function () {
  const D = window.REPORT_DATA;
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  const pct = (x) => (x * 100).toFixed(1) + "%";
  if (!D) {
    document.body.dataset.ready = "error";
    $("detail").textContent = "The report's data (" + document.body.dataset.files + "/data.js) did not load: keep the folder beside the HTML file.";
    return;
  }
  const C = D.cands.length;
  const T = D.tests.length;
  // Per candidate and test: repeats passed, repeats, passed (majority), any error.
  const passes = [], reps = [], ok = [], err = [];
  for (let c = 0; c < C; c++) {
    const v = D.verdicts[c];
    const p = new Int32Array(T), r = new Int32Array(T), o = new Uint8Array(T), e = new Uint8Array(T);
    for (let t = 0; t < T; t++) {
      const m = v[t];
      let n = 0;
      for (const ch of m) { if (ch === "1") n++; else if (ch === "e") e[t] = 1; }
      p[t] = n; r[t] = m.length; o[t] = m.length > 0 && n / m.length > 0.5 ? 1 : 0;
    }
    passes.push(p); reps.push(r); ok.push(o); err.push(e);
  }
  const state = { pair: 0, show: C > 1 ? "flip" : "fail", cand: "any", type: "all", jsonl: "all", q: "", list: [], cur: -1 };
  const texts = {};  // chunk -> its pages' texts

  function pairOf() {
    const p = D.pairs[state.pair];
    return p ? [p.a, p.b] : null;
  }
  function flipped(t) {
    const p = pairOf();
    return p !== null && ok[p[0]][t] !== ok[p[1]][t];
  }
  function failing(t) {
    if (state.cand === "any") { for (let c = 0; c < C; c++) if (!ok[c][t]) return true; return false; }
    return !ok[+state.cand][t];
  }
  function matches(t) {
    const test = D.tests[t];
    if (state.type !== "all" && D.types[test[1]] !== state.type) return false;
    if (state.jsonl !== "all" && D.jsonls[test[2]] !== state.jsonl) return false;
    if (state.show === "fail") return failing(t);
    if (state.show === "flip") return flipped(t);
    if (state.show === "error") { for (let c = 0; c < C; c++) if (err[c][t]) return true; return false; }
    return true;
  }

  function renderList() {
    const q = state.q.toLowerCase();
    const rows = [];
    D.pages.forEach((pg, i) => {
      const ts = pg[3];
      let hit = 0, flips = 0, fails = 0;
      let found = q === "" || String(pg[0]).toLowerCase().includes(q);
      for (const t of ts) {
        if (matches(t)) hit++;
        if (flipped(t)) flips++;
        if (failing(t)) fails++;
        if (!found && String(D.tests[t][0]).toLowerCase().includes(q)) found = true;
      }
      if (hit && found) rows.push([i, flips, fails]);
    });
    rows.sort((x, y) => y[1] - x[1] || y[2] - x[2] || x[0] - y[0]);
    state.list = rows.map((r) => r[0]);
    const html = rows.map(([i, flips]) => {
      const pg = D.pages[i];
      const badges = D.cands.map((c, k) => {
        let n = 0;
        for (const t of pg[3]) if (!ok[k][t]) n++;
        const loop = D.loops && D.loops[k].includes(i) ? ' <span class="bad" title="a file ends in a repetition loop">⟳</span>' : "";
        return esc(c.name) + " " + (n ? '<span class="bad">' + n + "✗</span>" : "0✗") + loop;
      }).join(" · ");
      return '<li data-i="' + i + '"' + (i === state.cur ? ' class="cur"' : "") + ">" + esc(pg[0]) + " p." + esc(pg[1]) +
        '<span class="badges">' + pg[3].length + " tests · " + badges + (flips ? " · ⇄ " + flips : "") + "</span></li>";
    }).join("");
    $("toc").innerHTML = html || '<li class="muted">no page matches</li>';
    $("count").textContent = rows.length + " of " + D.pages.length + " pages";
    if (rows.length && !state.list.includes(state.cur)) show(state.list[0], false);
    else if (!rows.length) { state.cur = -1; $("detail").innerHTML = '<p class="muted">No page matches the filters.</p>'; }
  }

  function definition(def) {
    return '<dl class="def">' + def.map(([k, v, dflt]) => {
      const shown = typeof v === "string" ? "<code>" + esc(v) + "</code>" : "<code>" + esc(JSON.stringify(v)) + "</code>";
      return "<dt>" + esc(k) + "</dt><dd" + (dflt ? ' class="dflt" title="default"' : "") + ">" + shown + (dflt ? " (default)" : "") + "</dd>";
    }).join("") + "</dl>";
  }

  function verdictCell(c, t, i) {
    const marks = D.verdicts[c][t];
    const files = D.md[c][i] || [];
    let out = '<span class="verdict ' + (ok[c][t] ? "p" : "f") + '">' + (ok[c][t] ? "pass" : "fail") + "</span> ";
    if (!marks.length) out += '<span class="muted">no page file</span>';
    else {
      out += '<span class="reps">' + [...marks].map((m, r) => '<span class="rep ' + (m === "1" ? "p" : m === "e" ? "e" : "f") +
        '" title="' + esc(files[r] || "") + '">' + (m === "1" ? "✓" : m === "e" ? "!" : "✗") + "</span>").join("") + "</span> " +
        '<span class="muted small">' + passes[c][t] + "/" + marks.length + "</span>";
    }
    const why = (D.why[c][t] || []);
    if (why.length) {
      // Failing repeats with the same explanation are listed once, with their repeat numbers.
      const groups = new Map();
      for (const [r, text] of why) { if (!groups.has(text)) groups.set(text, []); groups.get(text).push(r); }
      out += '<ul class="why">' + [...groups].map(([text, rs]) => "<li>" + (rs[0] >= 0 ? '<span class="muted">repeat ' +
        rs.map((r) => r + 1).join(", ") + ":</span> " : "") + esc(text) + "</li>").join("") + "</ul>";
    }
    return out;
  }

  function show(i, scroll) {
    state.cur = i;
    const pg = D.pages[i];
    for (const li of $("toc").querySelectorAll("li.cur")) li.classList.remove("cur");
    const li = $("toc").querySelector('li[data-i="' + i + '"]');
    if (li) { li.classList.add("cur"); if (scroll) li.scrollIntoView({ block: "nearest" }); }
    const order = pg[3].slice().sort((x, y) => (matches(y) - matches(x)) || (flipped(y) - flipped(x)) || (failing(y) - failing(x)) || x - y);
    const rows = order.map((t) => {
      const test = D.tests[t];
      const cls = [matches(t) ? "" : "dim", flipped(t) ? "flip" : ""].join(" ").trim();
      return '<div class="test' + (cls ? " " + cls : "") + '" data-t="' + t + '" data-id="' + esc(test[0]) + '"><div><span class="tid">' + esc(test[0]) +
        '</span> <span class="ttype">' + esc(D.types[test[1]]) + " · " + esc(D.jsonls[test[2]]) + (flipped(t) ? " · ⇄ flips" : "") +
        "</span></div>" + definition(test[4]) + '<div class="verdicts">' +
        D.cands.map((c, k) => '<div class="v" data-c="' + k + '"><span class="cname">' + esc(c.name) + "</span> " + verdictCell(k, t, i) + "</div>").join("") +
        "</div></div>";
    }).join("");
    const pos = state.list.indexOf(i);
    const img = pg[2] ? '<div class="img"><img id="pageimg" src="' + esc(D.files + "/" + pg[2]) + '" alt="' + esc(pg[0]) + " page " + esc(pg[1]) +
      '" title="click to enlarge"></div>' : '<div class="img muted">(no image: the page could not be rendered)</div>';
    $("detail").innerHTML = '<div class="pagehead"><h3>' + esc(pg[0]) + " page " + esc(pg[1]) + "</h3><span>" +
      '<button id="prev"' + (pos <= 0 ? " disabled" : "") + '>← previous</button> <span class="muted small">' + (pos + 1) + " of " +
      state.list.length + '</span> <button id="next"' + (pos < 0 || pos >= state.list.length - 1 ? " disabled" : "") + ">next →</button></span></div>" +
      '<div class="pagebody">' + img + '<div class="tests">' + rows + "</div></div>" +
      '<div class="texts" id="texts"><p class="muted">loading the page texts…</p></div>';
    $("prev").onclick = () => step(-1);
    $("next").onclick = () => step(1);
    const im = $("pageimg");
    if (im) im.onclick = () => { $("lightimg").src = im.src; $("lightbox").classList.add("open"); };
    if (location.hash !== "#page=" + i) history.replaceState(null, "", "#page=" + i);
    loadTexts(pg[4], () => { if (state.cur === i) renderTexts(i); });
  }

  function renderTexts(i) {
    const pg = D.pages[i];
    const chunk = texts[pg[4]];
    const mine = chunk ? chunk[i - pg[4] * D.chunk] : null;
    const box = $("texts");
    box.textContent = "";
    D.cands.forEach((c, k) => {
      const files = D.md[k][i] || [];
      const col = document.createElement("div");
      const h = document.createElement("h4");
      h.textContent = c.name + (files.length ? ": " + files.length + (files.length > 1 ? " repeats" : " page file") : ": no page file");
      col.appendChild(h);
      const pre = document.createElement("pre");
      const pick = (r) => {
        let t = mine ? mine[k][r] : null;
        if (typeof t === "number") t = mine[k][t];  // the same text as an earlier repeat
        pre.textContent = t === null || t === undefined ? "(not loaded)" : t === "" ? "(empty)" : t;
        for (const b of col.querySelectorAll("button")) b.classList.toggle("on", +b.dataset.r === r);
      };
      if (files.length > 1) {
        const bar = document.createElement("div");
        files.forEach((f, r) => {
          const b = document.createElement("button");
          b.textContent = "repeat " + (r + 1);
          b.title = f;
          b.dataset.r = r;
          b.onclick = () => pick(r);
          bar.appendChild(b);
        });
        col.appendChild(bar);
      }
      if (files.length) {
        const name = document.createElement("div");
        name.className = "muted small";
        name.textContent = files[0];
        col.appendChild(name);
        col.appendChild(pre);
        pick(0);
      }
      box.appendChild(col);
    });
  }

  function loadTexts(chunk, done) {
    if (texts[chunk]) return done();
    const failed = (why) => { const box = $("texts"); if (box) box.textContent = "The page texts (" + D.files + "/text/" + chunk + ".js) did not load: " + why; };
    if (!pending[chunk]) {
      pending[chunk] = [];
      const s = document.createElement("script");
      s.src = D.files + "/text/" + chunk + ".js";
      s.onerror = () => failed("missing file");
      document.head.appendChild(s);
    }
    pending[chunk].push(done);
  }
  const pending = {};
  // A text file calls this with its pages' texts, gzip-compressed JSON in base64.
  window.reportText = (chunk, packed) => {
    const bytes = Uint8Array.from(atob(packed), (ch) => ch.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    new Response(stream).text().then((json) => {
      texts[chunk] = JSON.parse(json);
      for (const f of pending[chunk] || []) f();
      pending[chunk] = null;
    }, (e) => { const box = $("texts"); if (box) box.textContent = "The page texts did not decompress: " + e; });
  };

  function step(d) {
    const pos = state.list.indexOf(state.cur) + d;
    if (pos >= 0 && pos < state.list.length) show(state.list[pos], true);
  }

  function renderFlips() {
    const p = D.pairs[state.pair];
    const box = $("flips");
    if (!p || !box) return;
    const link = (t) => '<li><a href="#page=' + D.tests[t][3] + '" data-t="' + t + '">' + esc(D.tests[t][0]) + '</a> <span class="muted">' +
      esc(D.types[D.tests[t][1]]) + "</span></li>";
    const gained = [], lost = [];
    for (let t = 0; t < T; t++) { if (ok[p.b][t] && !ok[p.a][t]) gained.push(t); else if (ok[p.a][t] && !ok[p.b][t]) lost.push(t); }
    const name = (k) => esc(D.cands[k].name);
    box.innerHTML = "<summary>Tests that flip: " + gained.length + " pass only in " + name(p.b) + ", " + lost.length + " only in " + name(p.a) +
      "</summary><div class=\"controls\"><div><h3>passing only in " + name(p.b) + "</h3><ul>" + gained.map(link).join("") + "</ul></div><div><h3>passing only in " +
      name(p.a) + "</h3><ul>" + lost.map(link).join("") + "</ul></div></div>";
  }

  function setPair(k) {
    state.pair = k;
    for (const el of document.querySelectorAll(".pair")) el.classList.toggle("cur", +el.dataset.pair === k);
    renderFlips();
  }

  // Controls.
  const bind = (id, key, after) => { const el = $(id); if (el) el.addEventListener(el.tagName === "INPUT" ? "input" : "change", () => { state[key] = el.value; (after || renderList)(); }); };
  bind("f-show", "show");
  bind("f-cand", "cand");
  bind("f-type", "type");
  bind("f-jsonl", "jsonl");
  bind("f-q", "q");
  const pairSel = $("f-pair");
  if (pairSel) pairSel.addEventListener("change", () => { setPair(+pairSel.value); renderList(); });
  $("toc").addEventListener("click", (e) => { const li = e.target.closest("li[data-i]"); if (li) show(+li.dataset.i, false); });
  document.addEventListener("click", (e) => {
    const a = e.target.closest("a[data-t]");
    if (!a) return;
    e.preventDefault();
    state.show = "all"; $("f-show").value = "all";
    renderList();
    show(D.tests[+a.dataset.t][3], true);
    $("pages").scrollIntoView();
  });
  $("lightbox").addEventListener("click", () => $("lightbox").classList.remove("open"));
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
    if (e.key === "Escape") $("lightbox").classList.remove("open");
    else if (e.key === "j" || e.key === "ArrowRight") step(1);
    else if (e.key === "k" || e.key === "ArrowLeft") step(-1);
  });

  const m = /^#page=(\d+)$/.exec(location.hash);  // a link to one page, read before show() rewrites it
  if (D.pairs.length) setPair(0);
  // Open on the flips of the pair if there are any, else on the failures, else on every page.
  let anyFlip = false, anyFail = false;
  for (let t = 0; t < T; t++) { anyFlip = anyFlip || flipped(t); anyFail = anyFail || failing(t); }
  state.show = anyFlip ? "flip" : anyFail ? "fail" : "all";
  $("f-show").value = state.show;
  renderList();
  if (m && +m[1] < D.pages.length) {
    if (!state.list.includes(+m[1])) { state.show = "all"; $("f-show").value = "all"; renderList(); }
    show(+m[1], true);
  }
  document.body.dataset.ready = "1";
});
