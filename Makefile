# The plugin, its tests and its benchmarks. `make` builds the plugin.
GO ?= go
SO := build/out_mongodb.so
SOURCES := $(shell find . -path ./test -prune -o -name '*.go' -not -name '*_test.go' -print) go.mod go.sum
# Packages that must build without cgo: everything but plugin/.
PURE := ./bsonscan/... ./errkind/... ./naming/... ./conf/... ./model/... ./parser/... ./bucketer/... ./writer/... ./sink/... ./instance/... ./layout/... ./metrics/... ./fbconf/... ./mongolog/... ./cmd/... ./sim/... ./version/... ./deploy/...
# The version goes into one place, package version, through -ldflags -X:
# the plugin's start-up line, `mongolog version` and the build_info metric
# say it. Outside a git checkout it is dev.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
VERSION_FLAG := -X github.com/fluent-bit-out-mongodb/out_mongodb/version.Version=$(VERSION)
# Fuzz budgets are counts of executions, not durations: with a duration,
# Go 1.26's fuzz coordinator can report "context deadline exceeded" at the
# deadline on a loaded machine (golang/go#75804, fixed in Go 1.27), failing
# a run that found nothing. 30000 runs take about 5 to 15 s per target here.
FUZZTIME ?= 30000x

.PHONY: build test unit integration arm64-test arm64-test-if-tools fuzz-short fuzz sim run serve bench soak dist clean mongosh

build: $(SO) build/mongolog

$(SO): $(SOURCES)
	@mkdir -p build
	$(GO) build -buildmode=c-shared -ldflags "$(VERSION_FLAG)" -o $(SO) ./plugin
	@rm -f build/out_mongodb.h

build/mongolog: $(SOURCES)
	@mkdir -p build
	CGO_ENABLED=0 $(GO) build -ldflags "$(VERSION_FLAG)" -o build/mongolog ./cmd/mongolog

# Everything: unit tests (with the race detector), integration tests of the
# real .so against the test server (or MONGO_URI), the arm64 build under
# emulation (when the cross compiler and qemu are installed; .ci/run
# installs them), and a short fuzz run.
test: unit integration arm64-test-if-tools fuzz-short

unit:
	CGO_ENABLED=0 $(GO) vet $(PURE)
	CGO_ENABLED=0 $(GO) build $(PURE)
	$(GO) vet ./plugin
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run TestMemoryDoesNotGrowWithFlushes ./sink
	$(GO) test -count=1 -run '^TestSimulate$$' ./sim

integration: build
	@sh tools/glibc-floor $(SO) linux/$(shell $(GO) env GOARCH) README.md
	cd test && $(GO) vet ./... && OUT_MONGODB_SO=$(abspath $(SO)) $(GO) test -count=1 -timeout 20m ./...
	cd test && OUT_MONGODB_SO=$(abspath $(SO)) $(GO) test -race -count=1 -timeout 20m -run 'BoundaryRace|BoundaryExit' ./e2e/

# Release artefacts in dist/: for each of DIST_ARCHS the plugin
# (out_mongodb-$(VERSION)-linux-ARCH.so, cgo, built with CC_ARCH) and
# mongolog (mongolog-$(VERSION)-linux-ARCH, no cgo), stripped, then
# dist/SHA256SUMS. Each .so's glibc floor (the highest GLIBC_x.y symbol
# version it needs) is printed and checked against the floor the README
# states for its platform (tools/glibc-floor), or against GLIBC_MAX
# (GLIBC_x.y) when set: the image's build holds it to the image's glibc.
DIST_ARCHS := amd64 arm64
CC_amd64 ?= gcc
CC_arm64 ?= aarch64-linux-gnu-gcc
DIST_PKG_amd64 := gcc
DIST_PKG_arm64 := gcc-aarch64-linux-gnu
DIST_LDFLAGS = -s -w $(VERSION_FLAG)

dist: $(addprefix dist-,$(DIST_ARCHS))
	cd dist && sha256sum $(foreach a,$(DIST_ARCHS),out_mongodb-$(VERSION)-linux-$(a).so mongolog-$(VERSION)-linux-$(a)) > SHA256SUMS
	@ls -l dist
	@cat dist/SHA256SUMS

dist-%:
	@command -v $(CC_$*) >/dev/null 2>&1 || { echo "make dist: the C compiler for linux/$*, $(CC_$*), is not installed: the plugin is built with cgo. On Debian or Ubuntu: apt-get install $(DIST_PKG_$*) (or set CC_$*=... to another compiler)" >&2; exit 1; }
	@mkdir -p dist
	CGO_ENABLED=1 GOOS=linux GOARCH=$* CC=$(CC_$*) $(GO) build -buildmode=c-shared -trimpath -ldflags "$(DIST_LDFLAGS)" -o dist/out_mongodb-$(VERSION)-linux-$*.so ./plugin
	@rm -f dist/out_mongodb-$(VERSION)-linux-$*.h
	CGO_ENABLED=0 GOOS=linux GOARCH=$* $(GO) build -trimpath -ldflags "$(DIST_LDFLAGS)" -o dist/mongolog-$(VERSION)-linux-$* ./cmd/mongolog
	@sh tools/glibc-floor dist/out_mongodb-$(VERSION)-linux-$*.so linux/$* README.md $(GLIBC_MAX)

# The arm64 plugin and mongolog of make dist under user-mode emulation
# against the test server (native): an arm64 host harness (fbhost, built
# with the cross compiler) loads the .so and flushes a chunk twice, the
# arm64 mongolog reads it back, each record once. Needs the cross compiler
# and its C library (gcc-aarch64-linux-gnu, libc6-dev-arm64-cross) and
# qemu-aarch64 (qemu-user); it runs binaries as `qemu-aarch64 -L
# $(ARM64_SYSROOT) BIN`, so no binfmt set-up is needed.
QEMU_AARCH64 ?= qemu-aarch64
ARM64_SYSROOT ?= /usr/aarch64-linux-gnu
arm64-test: dist-arm64
	@command -v $(QEMU_AARCH64) >/dev/null 2>&1 || { echo "make arm64-test: $(QEMU_AARCH64) is not installed: apt-get install qemu-user" >&2; exit 1; }
	@test -d $(ARM64_SYSROOT)/lib || { echo "make arm64-test: no arm64 C library in $(ARM64_SYSROOT): apt-get install libc6-dev-arm64-cross" >&2; exit 1; }
	cd test && ARM64_SO=$(abspath dist/out_mongodb-$(VERSION)-linux-arm64.so) ARM64_MONGOLOG=$(abspath dist/mongolog-$(VERSION)-linux-arm64) \
		ARM64_CC=$(CC_arm64) QEMU_AARCH64=$(QEMU_AARCH64) ARM64_SYSROOT=$(ARM64_SYSROOT) \
		$(GO) test -count=1 -v -run '^TestArm64StoreAndReadBack$$' ./arm64/

# make test runs arm64-test when the cross compiler and qemu are there, and
# says why not otherwise.
arm64-test-if-tools:
	@if command -v $(CC_arm64) >/dev/null 2>&1 && command -v $(QEMU_AARCH64) >/dev/null 2>&1 && test -d $(ARM64_SYSROOT)/lib; then \
		$(MAKE) --no-print-directory arm64-test; \
	else \
		echo "SKIP arm64-test: $(CC_arm64), $(QEMU_AARCH64) or $(ARM64_SYSROOT) missing (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user; .ci/run does)"; \
	fi

# mongosh from npm, pinned, in build/mongosh, where the test of the README's
# mongosh snippets (TestReadmeMongoshSnippetsRun in test/e2e) finds it; it
# skips without one, and fails under CI=true (.ci/run installs it).
MONGOSH_VERSION ?= 2.12.0
mongosh: build/mongosh/.installed-$(MONGOSH_VERSION)

build/mongosh/.installed-%:
	@command -v npm >/dev/null 2>&1 || { echo "make mongosh: npm is not installed (on Debian or Ubuntu: apt-get install npm)" >&2; exit 1; }
	npm install --prefix build/mongosh --no-audit --no-fund --save-exact --loglevel=error mongosh@$*
	@build/mongosh/node_modules/.bin/mongosh --version
	@touch $@

# The delivery simulator for SEEDS seeded runs from seed FROM: runs/s,
# faults injected by kind, the oracle's counts, and the first broken
# promise with the command replaying it. make test runs its short budget
# (2000 seeds; a twentieth of them under the race detector).
SEEDS ?= 100000
FROM ?= 1
sim:
	$(GO) test -count=1 -timeout 0 -run '^TestSimulate$$' ./sim/ -v -sim.seeds=$(SEEDS) -sim.from=$(FROM) | grep -v '^=== '

# Each fuzz target for FUZZTIME (make fuzz runs them longer).
fuzz-short:
	@for p in $$(grep -l '^func Fuzz' $$(find . -path ./test -prune -o -name '*_test.go' -print) | xargs -n1 dirname | sort -u); do \
		for t in $$($(GO) test $$p -list 'Fuzz.*' | grep ^Fuzz); do \
			echo "fuzz $$p $$t for $(FUZZTIME)"; \
			out=$$($(GO) test $$p -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) 2>&1) || { echo "$$out"; exit 1; }; \
			echo "$$out" | tail -1; \
		done; \
	done

fuzz:
	$(MAKE) fuzz-short FUZZTIME=1000000x

# Builds the plugin, starts a local MongoDB-compatible server unless
# MONGO_URI is set, sends sample logs through the plugin (through fluent-bit
# when it is on PATH, else through the host harness) and prints what landed.
run: build
	cd test && $(GO) run ./cmd/demo -so $(abspath $(SO))

# The local test server (FerretDB on SQLite) on 127.0.0.1:$(PORT), its
# data kept in build/serve-data, until Ctrl-C: something to point a real
# Fluent Bit at.
PORT ?= 27017
serve:
	@mkdir -p build/serve-data
	cd test && $(GO) run ./cmd/serve -addr 127.0.0.1:$(PORT) -data $(abspath build/serve-data)

# Sustained chunks through the host harness for SOAK while the test server
# restarts and its connections are cut; prints records/s, faults, records
# lost and duplicated (both must be 0) and memory. Not part of make test.
SOAK ?= 2m
soak: build
	cd test && SOAK=$(SOAK) OUT_MONGODB_SO=$(abspath $(SO)) $(GO) test -count=1 -v -timeout 0 -run '^TestSoak$$' ./e2e/ | grep -v '^=== '

bench: build
	cd test && OUT_MONGODB_SO=$(abspath $(SO)) $(GO) run ./cmd/bench

clean:
	rm -rf build dist
