#!/usr/bin/env python3
"""The trace viewer's web build in headless Chromium (WebGPU on SwiftShader), over Playwright.

Serves the assembled web bundle (`make web`) and generated traces (gen_trace.py) from a
private directory on 127.0.0.1 with Python's http.server, then:

1. loads `?trace=/small.json`, waits for the first frame whose readback arrived, saves a
   screenshot, and checks the visible span count against the CPU oracle (exported hook);
2. pans (mouse drag) and zooms (wheel) with synthetic events and checks the window moved;
3. hovers a span and checks the tooltip (a GPU hover pick) names the CPU oracle's pick for
   that pixel with its duration; clicks it and checks the GPU pick (state.selected) equals
   the oracle's pick; shift-clicks it and checks it became a focus seed;
4. clicks a process label and checks the collapse and the visible count against the oracle;
   types a search (`/kernel` Enter) and checks the visible count against the oracle;
5. checks the URL hash round-trips (a reload with the hash restores the window);
6. loads a malformed trace and checks the error is shown in the page and in state.error;
7. asserts no console errors or page errors occurred (outside the malformed-trace step);
8. with --big-spans N: loads an N-span trace, records page load → first frame and first
   GPU result, then a scripted zoom (wheel steps), each timed from the event to the frame's
   readback arriving; the median is reported.

Results go to OUT/results.json. Exit status 0 only when every check passed.
"""

import argparse
import functools
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

from playwright.sync_api import sync_playwright

HERE = os.path.dirname(os.path.abspath(__file__))
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--enable-unsafe-webgpu",
    "--enable-features=Vulkan",
    "--use-angle=swiftshader",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
W, H = 1280, 760


class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".js": "text/javascript",
        ".json": "application/json",
    }

    def log_message(self, *args):
        pass


def serve(root):
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=root)
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def gen(out, processes, threads, spans):
    subprocess.run(
        [sys.executable, os.path.join(HERE, "gen_trace.py"), "--processes", str(processes),
         "--threads", str(threads), "--spans", str(spans), "--out", out],
        check=True,
    )


def browser_env():
    """The environment Chromium runs in: SwiftShader's Vulkan ICD where Debian ships it."""
    env = dict(os.environ)
    icd = "/usr/lib/chromium/vk_swiftshader_icd.json"
    if os.path.exists(icd):
        env["VK_ICD_FILENAMES"] = icd
    return env


def gen_cached(web, root, cache, spans):
    """A fresh site at `root` (the web bundle) with `big.json`, an N-span trace generated
    once into `cache` (same arguments, same bytes) and linked in. Returns its path."""
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(web, root)
    os.makedirs(cache, exist_ok=True)
    cached = os.path.join(cache, f"big-{spans}.json")
    if not os.path.exists(cached):
        gen(cached + ".tmp", 4, 8, spans)
        os.replace(cached + ".tmp", cached)
    big = os.path.join(root, "big.json")
    try:
        os.link(cached, big)
    except OSError:
        shutil.copyfile(cached, big)
    return big


class Checks:
    def __init__(self):
        self.failed = []

    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        if not ok:
            self.failed.append(what)


def state(page):
    return page.evaluate("() => JSON.parse(JSON.stringify(window.gpugraphViewer))")


def settle(page, timeout=120_000):
    """Waits until every frame drawn so far has its readback and no pick is pending."""
    page.wait_for_function(
        """() => { const s = window.gpugraphViewer;
                   return s.loaded && !s.pickPending && s.frames > 0 && s.completed >= s.frames; }""",
        timeout=timeout,
    )
    return state(page)


def canvas_origin(page):
    box = page.locator("#view").bounding_box()
    return box["x"], box["y"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--web", required=True, help="the assembled web bundle (make web)")
    ap.add_argument("--chromium", default="/usr/lib/chromium/chromium")
    ap.add_argument("--out", default="web-test-out")
    ap.add_argument("--screenshot", default=None)
    ap.add_argument("--big-spans", type=int, default=0)
    ap.add_argument("--zoom-steps", type=int, default=12)
    a = ap.parse_args()

    os.makedirs(a.out, exist_ok=True)
    root = os.path.join(a.out, "site")
    if a.big_spans:
        gen_cached(a.web, root, a.out, a.big_spans)
    else:
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(a.web, root)
    gen(os.path.join(root, "small.json"), 3, 2, 300)
    with open(os.path.join(root, "bad.json"), "w") as f:
        f.write('{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":5},{"ph":')
    httpd = serve(root)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    results = {"checks": [], "base": base}
    c = Checks()
    env = browser_env()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=a.chromium, args=FLAGS, env=env)
        page = browser.new_page(viewport={"width": W, "height": H})
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))

        # 1. First frame, screenshot, visible count.
        page.goto(f"{base}/index.html?trace=/small.json")
        try:
            s = settle(page)
        except Exception as e:
            print("state:", state(page), "console:", errors)
            raise e
        c.check(s["error"] is None, f"no error on load ({s['error']})")
        if a.screenshot:
            os.makedirs(os.path.dirname(os.path.abspath(a.screenshot)), exist_ok=True)
            page.screenshot(path=a.screenshot)
        hooks = "window.gpugraphViewerHooks"
        oracle = page.evaluate(f"() => {hooks}.oracleVisible()")
        c.check(s["visible"] == oracle and oracle > 0,
                f"visible spans {s['visible']} == CPU oracle {oracle}")
        c.check(s["compiles"] == 1, f"one graph compile ({s['compiles']})")
        pipelines = s["pipelines"]

        ox, oy = canvas_origin(page)
        # The plot starts right of the 200 px label gutter and below the 26 px axis.
        px, py = ox + 600, oy + 60

        # 2. Pan (drag left: later times) and zoom (wheel up: in).
        w0 = s["window"]
        page.mouse.move(px, py)
        page.mouse.wheel(0, -400)
        page.wait_for_function(f"() => window.gpugraphViewer.window[1] - window.gpugraphViewer.window[0] < {w0[1] - w0[0]}")
        s = settle(page)
        w1 = s["window"]
        c.check(w1[1] - w1[0] < w0[1] - w0[0], f"wheel zoomed in: {w0} -> {w1}")
        page.mouse.move(px, py)
        page.mouse.down()
        page.mouse.move(px - 150, py, steps=5)
        page.mouse.up()
        page.wait_for_function(f"() => window.gpugraphViewer.window[0] > {w1[0]}")
        s = settle(page)
        w2 = s["window"]
        c.check(w2[0] > w1[0] and w2[1] - w2[0] == w1[1] - w1[0], f"drag panned: {w1} -> {w2}")
        c.check(s["visible"] == page.evaluate(f"() => {hooks}.oracleVisible()"),
                f"visible after pan/zoom {s['visible']} == oracle")

        # 3. Click a span: GPU pick == CPU oracle pick for that pixel.
        target = None
        for sid in range(s["spans"]):
            pt = page.evaluate(f"() => {hooks}.spanPoint({sid})")
            if pt and pt[1] > 30:
                target = (sid, pt)
                break
        c.check(target is not None, "a span is on screen to click")
        sid, (x, y) = target
        want = page.evaluate(f"() => {hooks}.oraclePick({x}, {y})")
        # Hover: the tooltip is the GPU hover pick's span, read back asynchronously.
        page.mouse.move(ox + x, oy + y)
        page.wait_for_function(
            "() => window.gpugraphViewer.tooltip !== null && !window.gpugraphViewer.pickPending")
        s = settle(page)
        facts = page.evaluate(f"() => {hooks}.spanFacts({want})")
        tip = s["tooltip"] or {}
        c.check(want >= 0 and s["hovered"] == want and tip.get("name") == facts["name"]
                and tip.get("duration") == facts["duration"]
                and tip.get("durationText") == facts["durationText"],
                f"hover at ({x:.0f},{y:.0f}): tooltip {tip.get('name')!r} "
                f"{tip.get('durationText')!r} (span {s['hovered']}) == oracle span {want} "
                f"{facts['name']!r} {facts['durationText']!r}")
        if a.screenshot:
            page.screenshot(path=os.path.join(a.out, "viewer-web-tooltip.png"))
        f0 = state(page)["frames"]
        page.mouse.click(ox + x, oy + y)
        # The click's pick is answered by a later frame's readback.
        page.wait_for_function(
            f"() => window.gpugraphViewer.frames > {f0} && !window.gpugraphViewer.pickPending")
        s = settle(page)
        c.check(want >= 0 and s["selected"] == want,
                f"click at ({x:.0f},{y:.0f}) selected {s['selected']} == oracle pick {want}")
        page.keyboard.down("Shift")
        page.mouse.click(ox + x, oy + y)
        page.keyboard.up("Shift")
        page.wait_for_function(f"() => window.gpugraphViewer.focus.includes({want})")
        s = settle(page)
        c.check(want in s["focus"], f"shift-click made {want} a focus seed ({s['focus']})")
        c.check(s["visible"] == page.evaluate(f"() => {hooks}.oracleVisible()"),
                f"visible under focus {s['visible']} == oracle")
        if a.screenshot:
            page.screenshot(path=os.path.join(a.out, "viewer-web-selected.png"))
        page.keyboard.press("Escape")
        page.wait_for_function("() => window.gpugraphViewer.focus.length === 0")
        s = settle(page)

        # 4. Collapse a process by clicking its label.
        lp = page.evaluate(f"() => {hooks}.processLabel(0)")
        c.check(lp is not None, "process 0's label is on screen")
        before = s["visible"]
        page.mouse.click(ox + lp[0], oy + lp[1])
        page.wait_for_function("() => window.gpugraphViewer.collapsed.includes(0)")
        s = settle(page)
        oracle = page.evaluate(f"() => {hooks}.oracleVisible()")
        c.check(s["visible"] == oracle and s["visible"] < before,
                f"collapsed process 0: visible {s['visible']} == oracle {oracle} (< {before})")
        c.check(s["pipelines"] == pipelines and s["compiles"] == 1,
                f"no recompiles: pipelines {s['pipelines']} == {pipelines}")

        # 4b. Search from the keyboard (`/`, text, Enter: the native window's key path).
        page.keyboard.press("/")
        page.keyboard.type("kernel")
        page.keyboard.press("Enter")
        page.wait_for_function("() => window.gpugraphViewer.search === 'kernel'")
        s = settle(page)
        oracle = page.evaluate(f"() => {hooks}.oracleVisible()")
        c.check(s["searchEdit"] is None and s["visible"] == oracle and 0 < oracle < before,
                f"'/kernel⏎' filtered: visible {s['visible']} == oracle {oracle}")
        page.keyboard.press("/")
        page.keyboard.press("Escape")
        page.wait_for_function("() => window.gpugraphViewer.search === ''")
        s = settle(page)

        # 5. The URL hash restores the view.
        url = page.url
        c.check("#w=" in url and "p=0" in url, f"the URL hash holds the view ({url.split('#')[-1]})")
        page2 = browser.new_page(viewport={"width": W, "height": H})
        page2.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page2.goto(url)
        s2 = settle(page2)
        c.check(s2["window"] == s["window"] and s2["collapsed"] == [0],
                f"reload with the hash: window {s2['window']} == {s['window']}")
        page2.close()
        c.check(not errors, f"no console errors ({errors[:3]})")

        # 6. A malformed trace shows its error.
        bad = browser.new_page(viewport={"width": W, "height": H})
        bad.goto(f"{base}/index.html?trace=/bad.json")
        bad.wait_for_function("() => window.gpugraphViewer.error !== null", timeout=60_000)
        err = bad.evaluate("() => window.gpugraphViewer.error")
        shown = bad.locator("#error").inner_text()
        data = json.loads(bad.locator("body").get_attribute("data-state"))
        c.check("bad.json" in err and "byte" in err and err == shown and data["error"] == err,
                f"malformed trace: error shown and in state ({err!r})")
        bad.close()

        # 7. The big trace: load → first frame, and a scripted zoom.
        if a.big_spans:
            big = browser.new_page(viewport={"width": W, "height": H})
            big.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            t0 = time.time()
            big.goto(f"{base}/index.html?trace=/big.json")
            s = settle(big, timeout=600_000)
            wall = time.time() - t0
            results["big"] = {
                "spans": s["spans"],
                "visible": s["visible"],
                "load_parse_ms": s["loadMs"],
                "page_load_to_first_frame_ms": s["firstFrameMs"],
                "page_load_to_first_gpu_result_ms": s["firstResultMs"],
                "wall_to_settled_s": wall,
            }
            steps = big.evaluate(
                """async (n) => {
                  const s = window.gpugraphViewer;
                  const hooks = window.gpugraphViewerHooks;
                  const canvas = document.getElementById('view');
                  const r = canvas.getBoundingClientRect();
                  const x = r.width * 0.5, y = 80;
                  const out = [];
                  const until = (f) => new Promise((ok) => {
                    const t = () => f() ? ok() : requestAnimationFrame(t); t(); });
                  for (let i = 0; i < n; i++) {
                    const f0 = s.frames;
                    const t0 = performance.now();
                    canvas.dispatchEvent(new WheelEvent('wheel', {clientX: r.left + x,
                      clientY: r.top + y, deltaY: i < n / 2 ? -150 : 150, bubbles: true,
                      cancelable: true}));
                    await until(() => s.frames > f0 && s.completed >= f0 + 1);
                    out.push({ms: performance.now() - t0, visible: s.visible,
                               window: s.window, frameMs: s.frameMs, gpuMs: s.gpuMs});
                  }
                  return out;
                }""",
                a.zoom_steps,
            )
            ms = [st["ms"] for st in steps]
            results["big"]["zoom_steps"] = steps
            results["big"]["zoom_median_ms"] = statistics.median(ms)
            results["big"]["zoom_max_ms"] = max(ms)
            c.check(steps[0]["window"] != steps[-1]["window"] or len(steps) < 2,
                    "the scripted zoom changed the window")
            print(json.dumps({k: v for k, v in results["big"].items() if k != "zoom_steps"}))
            if a.screenshot:
                big.screenshot(path=os.path.join(a.out, "viewer-web-big.png"))
            big.close()
            c.check(not errors, f"no console errors with the big trace ({errors[:3]})")
        browser.close()
    httpd.shutdown()
    results["failed"] = c.failed
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    print(f"{len(c.failed)} failed" if c.failed else "all checks passed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
