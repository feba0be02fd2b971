// The page glue of the gpugraph trace viewer: no framework, no CDN. It loads the wasm
// module (wasm-bindgen's gpugraph_viewer.js), feeds canvas events to the viewer, draws
// frames on demand from requestAnimationFrame, loads traces (open button, drag and drop,
// ?trace=URL) and keeps the view in the URL hash. State for tests: window.gpugraphViewer and
// the body's data-state attribute.
import init, { start } from "./gpugraph_viewer.js";

const state = {
  ready: false, loaded: false, loading: false, error: null, name: null,
  frames: 0, completed: 0, spans: 0, visible: null, selected: null, hovered: null,
  tooltip: null, search: "", searchEdit: null,
  window: null, collapsed: [], focus: [], hops: 0,
  frameMs: 0, encodeMs: 0, gpuMs: 0, compiles: 0, pipelines: 0, pickPending: false, reused: 0,
  loadMs: null, firstFrameMs: null, firstResultMs: null,
};
window.gpugraphViewer = state;

const $ = (id) => document.getElementById(id);
const canvas = $("view");
let viewer = null;
let lastHash = null;

function publish() {
  if (viewer) Object.assign(state, JSON.parse(viewer.state_json()));
  if (state.loaded && state.firstResultMs === null && state.completed > 0) {
    state.firstResultMs = performance.now();
  }
  document.body.dataset.state = JSON.stringify(state);
}

function fail(message) {
  state.error = String(message);
  state.loading = false;
  $("error").textContent = state.error;
  $("error").hidden = false;
  $("status").textContent = "error";
  console.warn("gpugraph-viewer:", state.error);
  publish();
}

function errorText(e) {
  return e && e.message ? e.message : String(e);
}

async function loadBytes(bytes, name) {
  state.loading = true;
  state.error = null;
  $("error").hidden = true;
  $("status").textContent = `parsing ${name} (${(bytes.length / 1e6).toFixed(1)} MB)…`;
  publish();
  // Let the status paint before the (synchronous) parse.
  await new Promise((r) => setTimeout(r, 0));
  const t0 = performance.now();
  try {
    viewer.load_trace(bytes);
  } catch (e) {
    fail(`${name}: ${errorText(e)}`);
    return;
  }
  state.loadMs = performance.now() - t0;
  state.loading = false;
  state.name = name;
  $("drop").hidden = true;
  const hash = location.hash.slice(1);
  if (hash) {
    try { viewer.apply_hash(hash); } catch (e) { console.warn("ignoring the URL hash:", errorText(e)); }
  }
  publish();
  $("status").textContent = `${name}: ${state.spans} spans`;
}

async function loadUrl(url) {
  state.loading = true;
  $("status").textContent = `fetching ${url}…`;
  let bytes;
  let name = url.split("/").pop() || url;
  try {
    const r = await fetch(url);
    if (!r.ok) throw new Error(`HTTP ${r.status} ${r.statusText}`);
    const m = /filename="([^"]+)"/.exec(r.headers.get("Content-Disposition") || "");
    if (m) name = m[1];
    bytes = new Uint8Array(await r.arrayBuffer());
  } catch (e) {
    fail(`fetching ${url}: ${errorText(e)}`);
    return;
  }
  await loadBytes(bytes, name);
}

async function loadFile(file) {
  await loadBytes(new Uint8Array(await file.arrayBuffer()), file.name);
}

function resize() {
  const r = canvas.getBoundingClientRect();
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.max(1, Math.round(r.width * dpr));
  canvas.height = Math.max(1, Math.round(r.height * dpr));
  if (viewer) viewer.resize(r.width, r.height, dpr);
}

function pos(e) {
  const r = canvas.getBoundingClientRect();
  return [e.clientX - r.left, e.clientY - r.top];
}

function wire() {
  canvas.addEventListener("pointerdown", (e) => {
    canvas.setPointerCapture(e.pointerId);
    viewer.pointer_down(...pos(e), e.button);
  });
  canvas.addEventListener("pointermove", (e) => viewer.pointer_move(...pos(e)));
  canvas.addEventListener("pointerup", (e) => {
    if (e.button === 0) viewer.pointer_up(...pos(e), e.shiftKey);
  });
  canvas.addEventListener("pointerleave", () => viewer.pointer_leave());
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const k = e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? 400 : 1;
    viewer.wheel(...pos(e), e.deltaX * k, e.deltaY * k);
  }, { passive: false });
  window.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLInputElement) return;
    if (viewer.key(e.key)) e.preventDefault();
  });
  $("search").addEventListener("input", (e) => viewer.set_search(e.target.value));
  $("open").addEventListener("click", () => $("file").click());
  $("file").addEventListener("change", (e) => {
    if (e.target.files.length) loadFile(e.target.files[0]);
  });
  document.addEventListener("dragover", (e) => {
    e.preventDefault();
    document.body.classList.add("dragging");
  });
  document.addEventListener("dragleave", () => document.body.classList.remove("dragging"));
  document.addEventListener("drop", (e) => {
    e.preventDefault();
    document.body.classList.remove("dragging");
    if (e.dataTransfer.files.length) loadFile(e.dataTransfer.files[0]);
  });
  window.addEventListener("hashchange", () => {
    const h = location.hash.slice(1);
    if (h === lastHash || !state.loaded) return;
    try { viewer.apply_hash(h); } catch (e) { console.warn("ignoring the URL hash:", errorText(e)); }
  });
  new ResizeObserver(resize).observe(canvas);
}

function tick() {
  try {
    viewer.poll();
    if (viewer.needs_frame()) {
      if (viewer.frame() && state.firstFrameMs === null) state.firstFrameMs = performance.now();
    }
    publish();
    if (state.loaded && !state.loading) {
      const h = viewer.hash();
      if (h !== lastHash) {
        lastHash = h;
        history.replaceState(null, "", `#${h}`);
      }
    }
  } catch (e) {
    fail(errorText(e));
  }
  requestAnimationFrame(tick);
}

async function main() {
  try {
    await init();
    if (!navigator.gpu) throw new Error("this browser has no WebGPU (navigator.gpu is missing)");
    resize();
    viewer = await start(canvas);
  } catch (e) {
    fail(`starting the viewer: ${errorText(e)}`);
    return;
  }
  window.gpugraphViewerHooks = {
    oraclePick: (x, y) => viewer.oracle_pick(x, y),
    oracleVisible: () => viewer.oracle_visible(),
    processLabel: (p) => viewer.process_label_center(p),
    spanPoint: (id) => viewer.span_point(id),
    spanFacts: (id) => JSON.parse(viewer.span_facts(id)),
  };
  wire();
  resize();
  state.ready = true;
  $("status").textContent = "ready";
  publish();
  requestAnimationFrame(tick);
  const params = new URLSearchParams(location.search);
  // ?inflight=N: frames on the GPU before the next waits (0: no limit; for measuring).
  if (params.has("inflight")) viewer.set_frames_in_flight(Number(params.get("inflight")));
  // ?reuse=0: every frame runs the graphs, also when the view did not change (for measuring).
  if (params.get("reuse") === "0") viewer.set_graph_reuse(false);
  const trace = params.get("trace");
  if (trace) await loadUrl(trace);
}

main();
