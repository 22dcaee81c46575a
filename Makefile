# torch-vkml developer entry points.
#
#   make build | test | demo | bench | docs | format | lint | clean
#
# Knobs (override on the command line, e.g. `make test SETUP=none PYTHON=python3`):
#   PYTHON      interpreter with torch installed          (default: .venv/bin/python)
#   SETUP       apt  -> run scripts/setup.sh first (Debian packages + .venv)
#               none -> touch nothing outside the repo: no setup.sh, no pip install;
#                       python/ is put on PYTHONPATH instead (for machines with no registry)
#   JOBS        parallel build jobs                         (default: nproc)
#   TEST_JOBS   pytest worker processes (pytest-xdist; 1 = in-process) (default: JOBS)
#   BUILD_DIR   CMake build directory                       (default: build)
#   BUILD_TYPE  CMAKE_BUILD_TYPE                            (default: Release)
#   BUILD_TESTS ON/OFF -> -DVKML_BUILD_TESTS; OFF also skips ctest in `make test`
#   CMAKE_ARGS  extra arguments for the CMake configure step
#   PYTEST_ARGS / CTEST_ARGS  extra arguments for pytest / ctest
# Any other environment (VK_ICD_FILENAMES, VK_LOADER_DEBUG, ...) is passed through untouched.
# BUILD_TESTS and CMAKE_ARGS only take effect when the build dir is (re)configured:
# `make clean` first, or run cmake on $(BUILD_DIR) yourself.

PYTHON      ?= .venv/bin/python
SETUP       ?= apt
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
TEST_JOBS   ?= $(JOBS)
BUILD_DIR   ?= build
BUILD_TYPE  ?= Release
BUILD_TESTS ?= ON
CMAKE_ARGS  ?=
PYTEST_ARGS ?=
CTEST_ARGS  ?=
CMAKE       ?= cmake
CTEST       ?= ctest

# A PYTHON given as a path (a venv's python) puts its bin/ dir first on PATH, so the cmake,
# ctest, ninja and ruff that requirements-dev.txt installs there are the ones used.
ifneq ($(findstring /,$(PYTHON)),)
export PATH := $(abspath $(dir $(PYTHON))):$(PATH)
endif

# Environment for the Python-side commands. Values the caller already set win.
#   LP_NUM_THREADS=0        lavapipe runs kernels inline: faster for our tiny kernels (tests only)
#   TORCH_VKML_VALIDATION=1 enable the Khronos validation layer in the runtime (tests only)
TEST_ENV = LP_NUM_THREADS=$${LP_NUM_THREADS:-0} TORCH_VKML_VALIDATION=$${TORCH_VKML_VALIDATION:-1}
DEMO_ENV =
RUN_ENV  =
ifeq ($(SETUP),none)
# No pip install in this mode: import the package from the source tree, and expose its
# torch.backends entry point (autoload) through a minimal dist-info written by `build`.
PYPATH_DIR := $(abspath $(BUILD_DIR))/pypath
RUN_ENV    = PYTHONPATH=$(PYPATH_DIR):$(CURDIR)/python$${PYTHONPATH:+:$$PYTHONPATH}
endif

# Importing torch would auto-load torch_vkml through its entry point; never do that while
# building it (the extension may be missing or stale then).
NO_AUTOLOAD = TORCH_DEVICE_BACKEND_AUTOLOAD=0

# Exit 0 iff `import torch_vkml` resolves to this checkout (editable install present).
# Installed from this tree, with the current autoload entry point (an older install named
# torch_vkml:_autoload, which skips the check that keeps CUDA working).
IS_INSTALLED_PY = import importlib.util as u, importlib.metadata as m, os, sys; \
  s = u.find_spec("torch_vkml"); \
  e = [x.value for x in m.entry_points(group="torch.backends") if x.name == "torch_vkml"]; \
  sys.exit(0 if s and s.origin and os.path.realpath(s.origin).startswith(os.path.realpath("python/torch_vkml") + os.sep) and e == ["_torch_vkml_autoload:autoload"] else 1)

.PHONY: all setup build demo test bench docs format lint clean

all: build

setup:
ifeq ($(SETUP),none)
	@echo "==> setup: SETUP=none, skipping scripts/setup.sh"
else
	@echo "==> setup: scripts/setup.sh"
	@bash scripts/setup.sh
endif

build: setup
	@echo "==> build: checking tools"
	@command -v $(CMAKE) >/dev/null 2>&1 || { echo "error: '$(CMAKE)' not found (run 'make setup' or install cmake >= 3.25)" >&2; exit 1; }
	@command -v ninja >/dev/null 2>&1 || { echo "error: 'ninja' not found (run 'make setup' or install ninja)" >&2; exit 1; }
	@$(CMAKE) --version | awk 'NR==1 { split($$3, v, "."); if (v[1] < 3 || (v[1] == 3 && v[2] < 25)) { print "error: cmake " $$3 " found, need >= 3.25" > "/dev/stderr"; exit 1 } }'
	@set -e; \
	if [ ! -f $(BUILD_DIR)/CMakeCache.txt ] || [ ! -f $(BUILD_DIR)/build.ninja ]; then \
	  py=$$($(PYTHON) -c 'import sys; print(sys.executable)'); \
	  echo "==> build: configuring: $(CMAKE) -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DPython_EXECUTABLE=$$py -DVKML_BUILD_TESTS=$(BUILD_TESTS) $(CMAKE_ARGS)"; \
	  $(NO_AUTOLOAD) $(CMAKE) -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	    -DPython_EXECUTABLE="$$py" -DVKML_BUILD_TESTS=$(BUILD_TESTS) $(CMAKE_ARGS); \
	fi
	@echo "==> build: $(CMAKE) --build $(BUILD_DIR) -j$(JOBS)"
	@$(NO_AUTOLOAD) $(CMAKE) --build $(BUILD_DIR) -j$(JOBS)
ifeq ($(SETUP),none)
	@mkdir -p $(PYPATH_DIR)/torch_vkml-0.1.0.dist-info
	@printf 'Metadata-Version: 2.1\nName: torch-vkml\nVersion: 0.1.0\n' \
	  > $(PYPATH_DIR)/torch_vkml-0.1.0.dist-info/METADATA
	@printf '[torch.backends]\ntorch_vkml = _torch_vkml_autoload:autoload\n' \
	  > $(PYPATH_DIR)/torch_vkml-0.1.0.dist-info/entry_points.txt
else
	@if ! $(PYTHON) -c '$(IS_INSTALLED_PY)'; then \
	  echo "==> build: $(PYTHON) -m pip install --no-build-isolation --no-deps -e ."; \
	  $(NO_AUTOLOAD) $(PYTHON) -m pip install --disable-pip-version-check -q --no-build-isolation --no-deps -e . ; \
	fi
endif

demo: build
	@echo "==> demo: $(PYTHON) examples/digits_mlp.py"
	@$(RUN_ENV) $(DEMO_ENV) $(PYTHON) examples/digits_mlp.py

test: build
ifeq ($(BUILD_TESTS),OFF)
	@echo "==> test: BUILD_TESTS=OFF, skipping ctest"
else
	@# Each test is its own process (and Vulkan device): they run side by side like the
	@# pytest workers below.
	@echo "==> test: $(CTEST) --test-dir $(BUILD_DIR) --output-on-failure -j $(TEST_JOBS) $(CTEST_ARGS)"
	@$(RUN_ENV) $(TEST_ENV) $(CTEST) --test-dir $(BUILD_DIR) --output-on-failure -j $(TEST_JOBS) $(CTEST_ARGS)
endif
	@# Each worker is its own process with its own Vulkan device; lavapipe runs our kernels
	@# inline (LP_NUM_THREADS=0), so workers scale with cores. Without pytest-xdist (a
	@# SETUP=none machine) the suite runs in one process.
	@set -e; xdist=""; \
	if [ "$(TEST_JOBS)" -gt 1 ] && $(NO_AUTOLOAD) $(PYTHON) -c 'import xdist' 2>/dev/null; then \
	  xdist="-n $(TEST_JOBS)"; fi; \
	echo "==> test: $(PYTHON) -m pytest -q $$xdist tests $(PYTEST_ARGS)"; \
	$(RUN_ENV) $(TEST_ENV) $(PYTHON) -m pytest -q $$xdist tests $(PYTEST_ARGS)

bench: build
	@echo "==> bench: $(PYTHON) -m torch_vkml.bench --quick"
	@$(RUN_ENV) $(PYTHON) -m torch_vkml.bench --quick

docs: build
	@echo "==> docs: $(PYTHON) tools/gen_ops_md.py"
	@$(RUN_ENV) $(PYTHON) tools/gen_ops_md.py

PY_SOURCES = $(wildcard python tests examples scripts tools setup.py)

format:
	@if command -v clang-format >/dev/null 2>&1; then \
	  echo "==> format: clang-format -i csrc/**/*.{h,cpp}"; \
	  find csrc \( -name '*.h' -o -name '*.cpp' \) -print0 2>/dev/null | xargs -0 -r clang-format -i; \
	else \
	  echo "==> format: clang-format not found, skipping C++ (apt-get install clang-format)"; \
	fi
	@echo "==> format: ruff format $(PY_SOURCES)"
	@$(PYTHON) -m ruff format $(PY_SOURCES)

lint:
	@echo "==> lint: ruff check $(PY_SOURCES)"
	@$(PYTHON) -m ruff check $(PY_SOURCES)

clean:
	@echo "==> clean: removing $(BUILD_DIR)/, dist/, built extensions and caches"
	rm -rf $(BUILD_DIR) dist .pytest_cache .ruff_cache
	find python -name '_C*.so' -delete 2>/dev/null || true
	find python -name '*.egg-info' -prune -exec rm -rf {} + 2>/dev/null || true
	find python tests examples -name __pycache__ -prune -exec rm -rf {} + 2>/dev/null || true
