# yao-sandbox — a thin front end over CMake.
#   make          build everything into build/ (binaries in build/bin/)
#   make test     install missing packages, build, run every test suite (unit, ASan+UBSan,
#                 valgrind, integration on a real local control plane) in one ctest run
#   make demo     build, start the local plane, install the CRD, run the controller,
#                 create the sample Sandbox and exec into it
BUILD ?= build
JOBS ?= 2
# ctest's slots: the suites' two lanes on the plane (tests/tests.cmake) and the unit tests
TEST_JOBS ?= 3
CMAKE_FLAGS ?=

.PHONY: all deps configure build test unit demo images bench chaos plane-up plane-down clean

all: build

deps:
	@tests/cluster/deps

configure: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@tests/cluster/build all
	@bench/run --build-only
	@cd $(BUILD) && ctest -j $(TEST_JOBS) --output-on-failure --timeout 1800

unit: build
	@cd $(BUILD) && ctest -j $(JOBS) --output-on-failure -L '^unit'

# The demo runs the controller and the CLI (the images build their own binaries): only
# those two are built, not the test, sanitizer and valgrind binaries `make` builds.
demo: configure
	@cmake --build $(BUILD) -j $(JOBS) --target yao-sandbox-controller yao-sandbox
	@tests/cluster/demo

images:
	@images/build.sh all agents

bench: build
	@bench/run

chaos: build
	@tests/cluster/build all
	@tests/chaos/run

plane-up:
	@tests/cluster/up

plane-down:
	@tests/cluster/down

clean:
	rm -rf $(BUILD)
