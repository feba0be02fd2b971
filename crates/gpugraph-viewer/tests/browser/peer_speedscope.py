#!/usr/bin/env python3
"""Peer: speedscope (https://www.speedscope.app, the npm package's static build) next to the
gpugraph viewer, in the same headless Chromium on SwiftShader, on the same generated trace.

speedscope loads the Chrome-format JSON through `#profileURL=` (it parses on the main
thread and draws with WebGL, here on SwiftShader too); the viewer loads it with `?trace=`.
Measured for both:

* `load_ms`: navigation → the trace drawn (speedscope: its toolbar names the profile; the
  viewer: the first frame's GPU results are back);
* `zoom_latency_ms`: a scripted zoom (speedscope: ctrl+wheel on the flame chart; the
  viewer: the wheel), each step's event → the frame showing it (speedscope draws in the
  next animation frame; the viewer: that frame's readback), median / p95 / max;
* `steady_frame_ms`: one zoom event per animation frame for `--steady-s` seconds, wall time
  / frames drawn (speedscope: animation frames; the viewer: frames whose results came back).

speedscope shows one thread at a time (the first of the trace's 32 here), the viewer all
threads at once. `--speedscope DIR` is the package's `dist/release` (`make web-peer`
installs it once with `npm pack`). Writes OUT/peer.json. Not part of `make test`.
"""

import argparse
import json
import os
import shutil
import sys
import time

from playwright.sync_api import sync_playwright

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perf_swiftshader import run as run_viewer, summary  # noqa: E402
from test_viewer import FLAGS, H, W, browser_env, gen_cached, serve  # noqa: E402

ZOOM = [(0, -300)] * 6 + [(0, 300)] * 6

SCRIPT = """async ([seq, steadyS]) => {
  const until = (f) => new Promise((ok) => {
    const t = () => f() ? ok() : requestAnimationFrame(t); t(); });
  const frame = () => new Promise((ok) => requestAnimationFrame(() => ok()));
  const x = innerWidth * 0.45, y = innerHeight * 0.5;
  const target = document.elementFromPoint(x, y);
  // speedscope's wheel: ctrl zooms by 1 + deltaY / 40; the viewer's by 1.0015^deltaY.
  // Scale deltaY so one step zooms by the same factor in both.
  const wheel = (dy) => {
    const f = Math.pow(1.0015, dy);
    target.dispatchEvent(new WheelEvent('wheel', {clientX: x, clientY: y, deltaY: (f - 1) * 40,
      ctrlKey: true, bubbles: true, cancelable: true}));
  };
  const steps = [];
  for (const [, dy] of seq) {
    const t0 = performance.now();
    wheel(dy);
    await frame();
    await frame();
    steps.push({ms: performance.now() - t0});
  }
  for (let i = 0; i < 3; i++) await frame();
  const t0 = performance.now();
  let k = 0;
  while (performance.now() - t0 < steadyS * 1000) {
    wheel((k++ % 40) < 20 ? -40 : 40);
    await frame();
  }
  return {steps, steady: {wall_ms: performance.now() - t0, frames: k, events: k}};
}"""


def run_speedscope(browser, base, steady_s):
    """speedscope's figures (see the module doc)."""
    page = browser.new_page(viewport={"width": W, "height": H})
    logs = []
    page.on("console", lambda m: logs.append(f"{m.type}: {m.text}"))
    t0 = time.time()
    page.goto(f"{base}/speedscope/index.html#profileURL={base}/big.json")
    page.wait_for_function(
        "() => document.body.innerText.includes('Time Order') && /\\(1\\/\\d+\\)/.test("
        "document.body.innerText) && document.querySelectorAll('canvas').length > 0",
        timeout=900_000)
    load_ms = page.evaluate("() => performance.now()")
    wall = time.time() - t0
    out = page.evaluate(SCRIPT, [ZOOM, steady_s])
    page.close()
    steady = out["steady"]
    return {
        "load_ms": load_ms,
        "wall_to_loaded_s": wall,
        "import_log": [x for x in logs if "import" in x.lower()],
        "zoom_latency_ms": summary([st["ms"] for st in out["steps"]]),
        "steady_frame_ms": steady["wall_ms"] / max(1, steady["frames"]),
        "steady": steady,
        "errors": [x for x in logs if x.startswith("error")],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--web", required=True, help="the assembled web bundle (make web)")
    ap.add_argument("--speedscope", required=True, help="speedscope's dist/release directory")
    ap.add_argument("--chromium", default="/usr/lib/chromium/chromium")
    ap.add_argument("--out", default="web-peer-out")
    ap.add_argument("--spans", type=int, default=1_000_000)
    ap.add_argument("--steady-s", type=float, default=15.0)
    a = ap.parse_args()

    root = os.path.join(a.out, "site")
    big = gen_cached(a.web, root, a.out, a.spans)
    shutil.copytree(a.speedscope, os.path.join(root, "speedscope"))
    version = open(os.path.join(a.speedscope, "release.txt")).read().split("\n")[0].strip()
    httpd = serve(root)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    results = {"spans_requested": a.spans, "trace_bytes": os.path.getsize(big),
               "viewport": [W, H], "speedscope_release": version}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=a.chromium, args=FLAGS, env=browser_env())
        results["chromium"] = browser.version
        results["speedscope"] = run_speedscope(browser, base, a.steady_s)
        print("speedscope", json.dumps({k: v for k, v in results["speedscope"].items()
                                        if k != "steady"}), flush=True)
        ours = run_viewer(browser, base, "after", a.steady_s, ZOOM)
        results["gpugraph"] = {
            "load_ms": ours["page_load_to_first_gpu_result_ms"],
            "zoom_latency_ms": ours["latency_ms"],
            "steady_frame_ms": ours["steady_frame_ms"],
            "detail": ours,
        }
        print("gpugraph", json.dumps({k: v for k, v in results["gpugraph"].items()
                                      if k != "detail"}), flush=True)
        browser.close()
    httpd.shutdown()
    results["loadavg"] = os.getloadavg()
    with open(os.path.join(a.out, "peer.json"), "w") as f:
        json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
