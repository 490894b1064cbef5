// `olmocr-rl report`: the filters of the completions, the page images (each stored once, in the
// #images JSON block) and the full-size view.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const images = JSON.parse($("images").textContent);
  for (const img of document.querySelectorAll("img[data-k]")) {
    img.src = images[+img.dataset.k];
    img.addEventListener("click", () => { $("lightimg").src = img.src; $("lightbox").classList.add("open"); });
  }
  $("lightbox").addEventListener("click", () => $("lightbox").classList.remove("open"));
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") $("lightbox").classList.remove("open"); });
  const entries = [...document.querySelectorAll("section.entry")];
  function apply() {
    const mode = $("f-mode").value, step = $("f-step").value, flat = $("f-flat").checked, q = $("f-q").value.toLowerCase();
    let n = 0;
    for (const e of entries) {
      const ok = (mode === "all" || e.dataset.mode === mode) && (step === "all" || e.dataset.step === step) &&
        (!flat || e.dataset.flat === "1") && (q === "" || e.dataset.pdf.toLowerCase().includes(q));
      e.hidden = !ok;
      if (ok) n++;
    }
    $("count").textContent = n + " of " + entries.length + " shown";
  }
  for (const id of ["f-mode", "f-step", "f-flat", "f-q"]) {
    const el = $(id);
    if (el) el.addEventListener(el.type === "search" ? "input" : "change", apply);
  }
  if ($("f-mode")) apply();
  document.body.dataset.ready = "1";
})();
