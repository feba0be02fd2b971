# gpugraph developer entry points. Tests and the demo run on Vulkan: Mesa lavapipe (software)
# on machines without a GPU, the NVIDIA driver where there is one.

CARGO ?= cargo
GPUGRAPH = $(CARGO) run --release -p gpugraph-cli --bin gpugraph --
BENCH_OUT ?= bench-out

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

demo: export WGPU_BACKEND ?= vulkan
demo: vulkan
	$(GPUGRAPH) info
	$(GPUGRAPH) demo

test: export WGPU_BACKEND ?= vulkan
test: vulkan
	$(CARGO) test --workspace --release --no-fail-fast

bench: export WGPU_BACKEND ?= vulkan
bench: vulkan
	mkdir -p $(BENCH_OUT)
	$(GPUGRAPH) bench graph --json $(BENCH_OUT)/graph.json

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
