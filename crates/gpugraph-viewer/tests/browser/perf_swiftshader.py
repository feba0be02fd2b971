#!/usr/bin/env python3
"""Frame times of the web viewer in headless Chromium on SwiftShader (WebGPU on the CPU).

Loads a generated N-span trace (gen_trace.py; 1M by default) once per configuration:
`after` (the defaults: at most 2 frames in flight, frames whose view did not change reuse
the graphs' results) and `before` (`?inflight=0&reuse=0`: neither, what the viewer did
before both), then runs a scripted pan/zoom sequence inside the page and records, per
configuration:

* `latency_ms`: each step's input event → the readback of the first frame drawn after it
  (the time until the user sees the step and its counts), median / p95 / max;
* `steady_frame_ms`: under continuous input (one wheel event per animation frame for
  `--steady-s` seconds), wall time / frames whose results came back, i.e. the frame time a
  user dragging or zooming sees.

Writes OUT/perf.json. Not part of `make test` (minutes at 1M spans): `make web-perf`.
"""

import argparse
import json
import os
import statistics
import sys
import time

from playwright.sync_api import sync_playwright

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_viewer import FLAGS, H, W, browser_env, gen_cached, serve, settle  # noqa: E402

# Steps of the scripted sequence: (deltaX, deltaY) wheel deltas (negative dy zooms in; dx
# pans in time).
SEQUENCE = [(0, -300)] * 4 + [(200, 0), (-200, 0), (400, 0)] + [(0, -300)] * 2 + \
    [(-300, 0)] + [(0, 300)] * 6

SCRIPT = """async ([seq, steadyS]) => {
  const s = window.gpugraphViewer;
  const canvas = document.getElementById('view');
  const r = canvas.getBoundingClientRect();
  const x = r.left + r.width * 0.45, y = r.top + 80;
  const until = (f) => new Promise((ok) => {
    const t = () => f() ? ok() : requestAnimationFrame(t); t(); });
  const wheel = (dx, dy) => canvas.dispatchEvent(new WheelEvent('wheel', {clientX: x,
    clientY: y, deltaX: dx, deltaY: dy, bubbles: true, cancelable: true}));
  const steps = [];
  for (const [dx, dy] of seq) {
    const f0 = s.frames;
    const t0 = performance.now();
    wheel(dx, dy);
    await until(() => s.frames > f0);
    const drawn = s.frames;
    await until(() => s.completed >= drawn);
    steps.push({ms: performance.now() - t0, visible: s.visible, window: s.window});
  }
  // Continuous input: one event per animation frame, zooming in then out.
  const c0 = s.completed, t0 = performance.now();
  let k = 0;
  await new Promise((ok) => {
    const t = () => {
      if (performance.now() - t0 > steadyS * 1000) return ok();
      wheel(0, (k++ % 40) < 20 ? -40 : 40);
      requestAnimationFrame(t);
    };
    t();
  });
  const sent = s.frames;
  await until(() => s.completed >= sent);
  const wall = performance.now() - t0;
  return {steps, steady: {wall_ms: wall, frames: s.completed - c0, events: k},
          frames: s.frames, reused: s.reused};
}"""


def pct(v, q):
    """The `q` quantile of `v` (nearest rank)."""
    v = sorted(v)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def summary(ms):
    """Median, p95 and max of step times."""
    return {"median": statistics.median(ms), "p95": pct(ms, 0.95), "max": max(ms),
            "steps": len(ms)}


CONFIGS = {"after": "", "before": "inflight=0&reuse=0&"}


def run(browser, base, config, steady_s, sequence=SEQUENCE):
    """Loads /big.json in `config` (a key of CONFIGS) and runs `sequence` then the
    continuous input; returns the figures (see the module doc)."""
    page = browser.new_page(viewport={"width": W, "height": H})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    t0 = time.time()
    page.goto(f"{base}/index.html?{CONFIGS[config]}trace=/big.json")
    s = settle(page, timeout=900_000)
    settled = time.time() - t0
    out = page.evaluate(SCRIPT, [sequence, steady_s])
    page.close()
    ms = [st["ms"] for st in out["steps"]]
    steady = out["steady"]
    return {
        "config": config,
        "frames": out["frames"],
        "graph_reused_frames": out["reused"],
        "spans": s["spans"],
        "load_parse_ms": s["loadMs"],
        "page_load_to_first_frame_ms": s["firstFrameMs"],
        "page_load_to_first_gpu_result_ms": s["firstResultMs"],
        "wall_to_settled_s": settled,
        "latency_ms": summary(ms),
        "steady_frame_ms": steady["wall_ms"] / max(1, steady["frames"]),
        "steady": steady,
        "steps": out["steps"],
        "console_errors": errors,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--web", required=True, help="the assembled web bundle (make web)")
    ap.add_argument("--chromium", default="/usr/lib/chromium/chromium")
    ap.add_argument("--out", default="web-perf-out")
    ap.add_argument("--spans", type=int, default=1_000_000)
    ap.add_argument("--configs", default="before,after",
                    help="configurations to measure, comma-separated: before, after")
    ap.add_argument("--steady-s", type=float, default=15.0)
    a = ap.parse_args()

    root = os.path.join(a.out, "site")
    big = gen_cached(a.web, root, a.out, a.spans)
    httpd = serve(root)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    results = {"spans_requested": a.spans, "trace_bytes": os.path.getsize(big),
               "viewport": [W, H], "runs": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=a.chromium, args=FLAGS, env=browser_env())
        results["chromium"] = browser.version
        for config in a.configs.split(","):
            r = run(browser, base, config, a.steady_s)
            print(json.dumps({k: v for k, v in r.items() if k not in ("steps", "steady")}),
                  flush=True)
            results["runs"].append(r)
        browser.close()
    httpd.shutdown()
    results["loadavg"] = os.getloadavg()
    with open(os.path.join(a.out, "perf.json"), "w") as f:
        json.dump(results, f, indent=2)
    bad = [r for r in results["runs"] if r["console_errors"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
