# The two commands a newcomer needs (see README.md):
#   make demo   set up the host, build hartscope and the default guest image,
#               boot it and run the P87 console workload with its phase table
#   make test   set up the host, build everything the tests need (both guest
#               images), run every test
# Both are idempotent: the guest images are cached under $HARTSCOPE_CACHE
# (default ~/.cache/hartscope), keyed by a hash of their recipe.

CARGO ?= cargo
HARTSCOPE := target/release/hartscope
OUT ?= out

.PHONY: setup build images demo test bench clean

setup:
	bash scripts/setup-host.sh

build: setup
	$(CARGO) build --release -p hartscope

images: build
	$(HARTSCOPE) guest build --image debian
	$(HARTSCOPE) guest build --image custom

demo: build
	$(HARTSCOPE) guest build --image debian
	mkdir -p $(OUT)
	$(HARTSCOPE) boot --image debian --smp 2 --workload guest/workloads/p87-shell \
		--stats-json $(OUT)/demo-stats.json

test: images
	$(CARGO) test --release --workspace

clean:
	$(CARGO) clean
