// s2s web page: calls POST /v1/translate and draws the n-best and an attention heatmap.
"use strict";

const $ = (id) => document.getElementById(id);
let results = [];

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function setStatus(text, isError = false) {
  const s = $("status");
  s.textContent = text;
  s.classList.toggle("error", isError);
}

async function loadInfo() {
  try {
    const r = await fetch("/health");
    const h = await r.json();
    const m = h.model;
    $("model-info").textContent =
      `${m.arch} · ${m.params.toLocaleString()} parameters · vocabularies ${m.src_vocab}/${m.tgt_vocab}`;
    if (h.limits) {
      $("beam").max = h.limits.max_beam;
      $("nbest").max = h.limits.max_beam;
    }
  } catch (e) {
    $("model-info").textContent = "Model information unavailable.";
  }
}

function renderResults() {
  const box = $("results");
  box.replaceChildren();
  results.forEach((t, i) => {
    const best = t.hyps[0];
    const list = el("ol", { class: "nbest", "aria-label": "N-best hypotheses" });
    t.hyps.forEach((h, j) => {
      const b = el("button", { type: "button", "data-sentence": i, "data-hyp": j, "aria-pressed": "false" },
        el("span", { class: "hyp-text", text: h.text }),
        el("span", { class: "score", text: h.score.toFixed(4), title: `logprob ${h.logprob.toFixed(4)}` }));
      b.addEventListener("click", () => select(i, j));
      list.append(el("li", {}, b));
    });
    box.append(el("article", { class: "result" },
      el("p", { class: "src", text: t.src }),
      el("p", { class: "translation", text: best ? best.text : "" }),
      list));
  });
}

function select(i, j) {
  document.querySelectorAll(".nbest button").forEach((b) => {
    const on = Number(b.dataset.sentence) === i && Number(b.dataset.hyp) === j;
    b.setAttribute("aria-pressed", on ? "true" : "false");
  });
  const h = results[i] && results[i].hyps[j];
  const section = $("attention");
  if (!h) {
    section.hidden = true;
    return;
  }
  if (!h.attention) {
    $("heatmap").replaceChildren();
    $("heatmap-caption").textContent = "This model returns no attention weights, so there is no heatmap.";
    section.hidden = false;
    return;
  }
  drawHeatmap(h.attention, `Sentence ${i + 1}, hypothesis ${j + 1}`);
  section.hidden = false;
}

function drawHeatmap(att, label) {
  const table = $("heatmap");
  table.replaceChildren();
  table.dataset.rows = att.tgt.length;
  table.dataset.cols = att.src.length;
  table.classList.toggle("vertical", att.src.some((s) => s.length > 3));
  const head = el("tr", {}, el("td"));
  for (const s of att.src) head.append(el("th", { scope: "col" }, el("span", { text: s })));
  const body = el("tbody");
  att.mean.forEach((row, r) => {
    const tr = el("tr", {}, el("th", { scope: "row", text: att.tgt[r] }));
    row.forEach((w, c) => {
      const v = Math.max(0, Math.min(1, w));
      const td = el("td", {
        class: "heat-cell",
        title: `${att.tgt[r]} ← ${att.src[c]}: ${w.toFixed(3)}`,
        "data-weight": w.toFixed(4),
      }, el("span", { class: "sr-only", text: w.toFixed(2) }));
      td.style.backgroundColor = `rgba(29, 78, 216, ${v.toFixed(3)})`;
      tr.append(td);
    });
    body.append(tr);
  });
  table.append(el("caption", { class: "sr-only", text: `Attention weights: ${label}; rows are output tokens, columns source tokens` }),
    el("thead", {}, head), body);
  $("heatmap-caption").textContent =
    `${label}: rows are output tokens, columns source tokens; darker is more weight (hover a cell for its value).`;
}

async function translate(ev) {
  ev.preventDefault();
  const lines = $("src").value.split("\n").map((l) => l.trim()).filter((l) => l.length > 0);
  if (lines.length === 0) {
    setStatus("Type a sentence first.", true);
    return;
  }
  const beam = Number($("beam").value);
  const body = {
    text: lines,
    beam,
    alpha: Number($("alpha").value),
    nbest: Math.min(Number($("nbest").value), beam),
    attention: true,
  };
  const button = $("translate");
  button.disabled = true;
  setStatus("Translating…");
  const t0 = performance.now();
  try {
    const post = () => {
      const headers = { "Content-Type": "application/json" };
      const token = sessionStorage.getItem("s2s-token");
      if (token) headers["Authorization"] = `Bearer ${token}`;
      return fetch("/v1/translate", { method: "POST", headers, body: JSON.stringify(body) });
    };
    let r = await post();
    if (r.status === 401) {
      // The server was started with --token-file: ask once, keep it for this tab.
      const token = window.prompt("This server needs its access token (--token-file):");
      if (token) {
        sessionStorage.setItem("s2s-token", token.trim());
        r = await post();
      }
    }
    const data = await r.json();
    if (!r.ok) throw new Error(data.error || `HTTP ${r.status}`);
    results = data.translations;
    renderResults();
    select(0, 0);
    setStatus(`Translated ${results.length} sentence${results.length === 1 ? "" : "s"} in ${Math.round(performance.now() - t0)} ms.`);
  } catch (e) {
    setStatus(`Error: ${e.message}`, true);
  } finally {
    button.disabled = false;
  }
}

$("form").addEventListener("submit", translate);
$("src").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) $("form").requestSubmit();
});
loadInfo();
