# The two commands a newcomer needs (see README.md):
#   make demo   set up the host, build hartscope and the default guest image,
#               boot it on the in-order timing model, run the P87 console
#               workload and print its phase table and hot functions
#   make test   set up the host, build everything the tests need (the guest
#               images debian, debian-perf and custom), run every test
# Both are idempotent: the guest images are cached under $HARTSCOPE_CACHE
# (default ~/.cache/hartscope), keyed by a hash of their recipe.

CARGO ?= cargo
HARTSCOPE := target/release/hartscope
# the test suite's build (Cargo.toml's `ci` profile: no whole-program LTO)
HARTSCOPE_CI := target/ci/hartscope
HARTSCOPE_PGO := target/pgo/release/hartscope
OUT ?= out

.PHONY: setup build build-ci build-pgo images demo test bench fuzz clean

setup:
	bash scripts/setup-host.sh

build: setup
	$(CARGO) build --release -p hartscope

# the release build optimised with a profile of its own runs (PGO):
# target/pgo/release/hartscope, what `make bench` measures
build-pgo: setup
	bash scripts/build-pgo.sh

build-ci: setup
	$(CARGO) build --profile ci -p hartscope

images: build-ci
	$(HARTSCOPE_CI) guest build --image debian
	$(HARTSCOPE_CI) guest build --image debian-perf
	$(HARTSCOPE_CI) guest build --image custom

demo: build
	$(HARTSCOPE) guest build --image debian
	mkdir -p $(OUT)
	$(HARTSCOPE) boot --image debian --smp 2 --machine machines/inorder.toml \
		--workload guest/workloads/p87-shell --profile $(OUT)/profile \
		--profile-from "shell banner" --perf-script --stats-txt $(OUT)/stats.txt \
		--trace $(OUT)/trace.json
	@echo; head -n 40 $(OUT)/profile/hot.md
	@echo; sed -n '/^### By task/,/^### By hart/p' $(OUT)/profile/hot.md | head -n 16
	@echo; echo "More in $(OUT)/: profile/flamegraph.svg, profile/perf.script, stats.txt, trace.json (Perfetto)"

bench: build-pgo
	$(HARTSCOPE_PGO) guest build --image debian
	$(HARTSCOPE_PGO) bench

test: images
	$(CARGO) test --profile ci --workspace

# Coverage-guided fuzzing, every target for FUZZ_SECONDS (README: Fuzzing).
FUZZ_SECONDS ?= 60
fuzz: setup
	bash scripts/fuzz.sh $(FUZZ_SECONDS)

clean:
	$(CARGO) clean
