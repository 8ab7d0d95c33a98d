# The two commands: `make demo` and `make test`. Both install what is missing
# (scripts/setup), build with CMake + Ninja (ccache when present) and run.
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
PYTHON ?= python3

.PHONY: all setup configure build test demo sanitize clean

all: build

setup:
	@bash scripts/setup

configure: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) > /dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	./$(BUILD)/tools/lumen-demo

# ASan + UBSan build of everything, then the C++ tests.
sanitize: setup
	cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Sanitize > /dev/null
	cmake --build build-sanitize -j $(JOBS)
	cd build-sanitize && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) build-sanitize
