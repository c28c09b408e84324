// s2s web page: calls POST /v1/translate (or, for a speech model, POST /v1/transcribe with a WAV
// file or a microphone recording) and draws the n-best and an attention heatmap.
"use strict";

const $ = (id) => document.getElementById(id);
let results = [];
let audioInput = false; // the model transcribes audio
let recorded = null; // {blob, name} of the last microphone recording
let recording = null; // {stream, ctx, node, chunks} while the microphone records

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
    if (m.input === "audio") useAudio();
    if (m.input === "vectors") {
      $("src-hint").textContent = `(one vector per line: ${m.vector_dim} numbers separated by spaces)`;
    }
    if (h.limits) {
      $("beam").max = h.limits.max_beam;
      $("nbest").max = h.limits.max_beam;
    }
    // The model's own decoding defaults (decoding.toml), as the API applies them.
    if (Number.isInteger(m.beam)) $("beam").value = Math.min(m.beam, Number($("beam").max));
    if (typeof m.alpha === "number") $("alpha").value = m.alpha;
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
  // Audio has a column per 40 ms or so: narrow cells, a time label every tenth column.
  const dense = audioInput && att.src.length > 40;
  table.classList.toggle("dense", dense);
  table.classList.toggle("vertical", att.src.some((s) => s.length > 3));
  const head = el("tr", {}, el("td"));
  att.src.forEach((s, c) => {
    head.append(el("th", { scope: "col", title: s }, el("span", { text: dense && c % 10 !== 0 ? "" : s })));
  });
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
  const columns = audioInput ? "columns the time in the audio" : "columns source tokens";
  table.append(el("caption", { class: "sr-only", text: `Attention weights: ${label}; rows are output tokens, ${columns}` }),
    el("thead", {}, head), body);
  $("heatmap-caption").textContent =
    `${label}: rows are output tokens, ${columns}; darker is more weight (hover a cell for its value).`;
}

// A speech model: the page takes a WAV file or a recording instead of text.
function useAudio() {
  audioInput = true;
  document.title = "s2s — transcribe";
  $("text-input").hidden = true;
  $("src").required = false;
  $("audio-input").hidden = false;
  $("translate").textContent = "Transcribe";
  $("record").disabled = !(navigator.mediaDevices && window.AudioContext);
  if ($("record").disabled) $("record").title = "This browser cannot record here (recording needs https or localhost).";
  $("wav").addEventListener("change", () => {
    recorded = null;
    const f = $("wav").files[0];
    $("audio-status").textContent = f ? `${f.name}, ${(f.size / 1024).toFixed(0)} KiB` : "";
    showPlayback(f || null);
  });
  $("record").addEventListener("click", () => (recording ? stopRecording() : startRecording()));
}

function showPlayback(blob) {
  const p = $("playback");
  if (p.src) URL.revokeObjectURL(p.src);
  p.hidden = !blob;
  if (blob) p.src = URL.createObjectURL(blob);
}

async function startRecording() {
  try {
    const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    const ctx = new AudioContext();
    const source = ctx.createMediaStreamSource(stream);
    // ScriptProcessorNode hands over raw samples with no module file to serve (AudioWorklet
    // would need one); the samples become a 16-bit WAV file when the recording stops.
    const node = ctx.createScriptProcessor(4096, 1, 1);
    const chunks = [];
    node.onaudioprocess = (e) => chunks.push(new Float32Array(e.inputBuffer.getChannelData(0)));
    source.connect(node);
    node.connect(ctx.destination);
    recording = { stream, ctx, node, chunks };
    $("record").textContent = "Stop";
    $("record").setAttribute("aria-pressed", "true");
    $("audio-status").textContent = "Recording…";
  } catch (e) {
    setStatus(`Cannot record: ${e.message}`, true);
  }
}

function stopRecording() {
  const { stream, ctx, node, chunks } = recording;
  recording = null;
  node.disconnect();
  stream.getTracks().forEach((t) => t.stop());
  const rate = ctx.sampleRate;
  ctx.close();
  const blob = encodeWav(chunks, rate);
  const seconds = chunks.reduce((n, c) => n + c.length, 0) / rate;
  recorded = { blob, name: "recording.wav" };
  $("wav").value = "";
  $("record").textContent = "Record";
  $("record").setAttribute("aria-pressed", "false");
  $("audio-status").textContent = `Recorded ${seconds.toFixed(1)} s.`;
  showPlayback(blob);
}

// Mono float samples as a 16-bit PCM WAV file.
function encodeWav(chunks, rate) {
  const n = chunks.reduce((k, c) => k + c.length, 0);
  const view = new DataView(new ArrayBuffer(44 + 2 * n));
  const text = (o, s) => [...s].forEach((ch, i) => view.setUint8(o + i, ch.charCodeAt(0)));
  text(0, "RIFF");
  view.setUint32(4, 36 + 2 * n, true);
  text(8, "WAVE");
  text(12, "fmt ");
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true); // PCM
  view.setUint16(22, 1, true); // mono
  view.setUint32(24, rate, true);
  view.setUint32(28, 2 * rate, true);
  view.setUint16(32, 2, true);
  view.setUint16(34, 16, true);
  text(36, "data");
  view.setUint32(40, 2 * n, true);
  let o = 44;
  for (const c of chunks) {
    for (const x of c) {
      view.setInt16(o, Math.round(Math.max(-1, Math.min(1, x)) * 32767), true);
      o += 2;
    }
  }
  return new Blob([view], { type: "audio/wav" });
}

// POST with the page's token, asking for it once if the server wants one (--token-file).
async function post(url, contentType, body) {
  const send = () => {
    const headers = { "Content-Type": contentType };
    const token = sessionStorage.getItem("s2s-token");
    if (token) headers["Authorization"] = `Bearer ${token}`;
    return fetch(url, { method: "POST", headers, body });
  };
  let r = await send();
  if (r.status === 401) {
    const token = window.prompt("This server needs its access token (--token-file):");
    if (token) {
      sessionStorage.setItem("s2s-token", token.trim());
      r = await send();
    }
  }
  return r;
}

function options() {
  const beam = Number($("beam").value);
  return { beam, alpha: Number($("alpha").value), nbest: Math.min(Number($("nbest").value), beam) };
}

async function transcribe() {
  const file = $("wav").files[0];
  const audio = recorded || (file ? { blob: file, name: file.name } : null);
  if (!audio) {
    setStatus("Choose a WAV file or record first.", true);
    return;
  }
  const o = options();
  const query = new URLSearchParams({ ...o, attention: "true", name: audio.name });
  const button = $("translate");
  button.disabled = true;
  setStatus("Transcribing…");
  const t0 = performance.now();
  try {
    const r = await post(`/v1/transcribe?${query}`, "audio/wav", audio.blob);
    const data = await r.json();
    if (!r.ok) throw new Error(data.error || `HTTP ${r.status}`);
    results = data.translations;
    renderResults();
    select(0, 0);
    setStatus(`Transcribed ${audio.name} in ${Math.round(performance.now() - t0)} ms.`);
  } catch (e) {
    setStatus(`Error: ${e.message}`, true);
  } finally {
    button.disabled = false;
  }
}

async function translate(ev) {
  ev.preventDefault();
  if (audioInput) return transcribe();
  const lines = $("src").value.split("\n").map((l) => l.trim()).filter((l) => l.length > 0);
  if (lines.length === 0) {
    setStatus("Type a sentence first.", true);
    return;
  }
  const body = { text: lines, ...options(), attention: true };
  const button = $("translate");
  button.disabled = true;
  setStatus("Translating…");
  const t0 = performance.now();
  try {
    const r = await post("/v1/translate", "application/json", JSON.stringify(body));
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
