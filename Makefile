# OpenPIM — top-level commands.
#   make demo   fresh machine: installs what it needs, builds, runs the demo on the emulator
#   make test   everything: module graph (no cycles), unit tests, header checks, conformance, report tests,
#               the study's workloads against their CPU references, the quick scalability study
#   make bench  the benchmarks (tables on stdout)
#   make fidelity  the fidelity suite: emulated vs published UPMEM measurements (bench/fidelity),
#                  both PrIM real-hardware tables with their targets (vPIM's: about 25 minutes),
#                  and the launch's fixed cost derived from published launches (launch_cost.py)
#   make test-programs  every published program (PrIM x {1,4,64} DPUs, SimplePIM, dpu_demo, PID-Comm),
#                       each on both DPU engines, compared launch by launch
#                       then PrIM at 4 DPUs, SimplePIM and dpu_demo under the checkers (docs/checking.md)
#   make test-collectives  the collectives' full matrix at 64, 256 and 1,024 DPUs
#   make study-collectives|study-sharing|study-tiers|study-allocation  a seed's full study (docs/study.md)
#   make study-all  every study, full sizes, into study-all/ with an index REPORT.md
#   make fuzz-smoke  builds the fuzz targets (fuzz/), replays their regressions, runs each 60 s
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo

.PHONY: all setup build demo test test-mpi test-rust test-conformance test-programs test-collectives bench fidelity lint clean fuzz-smoke test-memory-huge bench-memory fuzz-remote study-collectives study-sharing study-tiers study-allocation study-all

all: build

setup:
	@scripts/setup.sh

# The MPI backend (openpim run --mpi N) is built when OpenMPI is there (scripts/setup.sh installs it;
# `=`: looked up when a recipe runs, after setup).
MPI_FEATURES = $(shell command -v mpicc >/dev/null 2>&1 && echo --features openpim-cli/mpi)

build: setup
	$(CARGO) build --release --workspace $(MPI_FEATURES)
	$(MAKE) -s -C sdk/dpu
	$(MAKE) -s $(VCLOCK)
	$(MAKE) -s $(RELOCATE)

# The collectives' relocation program (PIM-assisted reordering), run on the emulated DPUs; rebuilt
# when the DPU runtime it links (headers, sources) changes.
RELOCATE := build/collectives/relocate
$(RELOCATE): crates/collectives/dpu/relocate.c $(wildcard sdk/dpu/include/*.h sdk/dpu/src/*.c sdk/dpu/crt0.S)
	@mkdir -p $(@D)
	sdk/bin/dpu-upmem-dpurte-clang -O2 -DNR_TASKLETS=16 -Wall -Wextra -Werror -o $@ $<

# The host program's virtual clock (sdk/host/vclock.c), linked by `dpu-pkg-config --libs dpu`.
VCLOCK := build/host/libopenpim_vclock.so
$(VCLOCK): sdk/host/vclock.c sdk/host/vclock.map
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -fPIC -shared -Wall -Wextra -Werror \
		-Wl,--version-script=sdk/host/vclock.map -Wl,-soname,libopenpim_vclock.so \
		-o $@ sdk/host/vclock.c -ldl

demo: build
	target/release/openpim demo

test: build
	scripts/module_graph.py >/dev/null
	$(CARGO) test --release --workspace $(MPI_FEATURES)
	sdk/dpu/test/check.sh
	tests/headers/check.sh
	tests/conformance/run.sh
	OPENPIM_JIT_HOT_SLOTS=0 tests/conformance/run.sh
	tests/sanitizers/run.sh
	tests/report/run.sh
	tests/debug/run.sh
	tests/profile/run.sh
	tests/check/run.py
	tests/memory/run.sh
	tests/remote/run.sh
	$(if $(MPI_FEATURES),tests/mpi/run.py,@echo "SKIP tests/mpi (no OpenMPI: scripts/setup.sh installs it)")
	$(if $(MPI_FEATURES),tests/mpi/hosts.py,@echo "SKIP tests/mpi/hosts.py (no OpenMPI)")
	$(if $(MPI_FEATURES),tests/mpi/cluster.py --if-root,@echo "SKIP tests/mpi/cluster.py (no OpenMPI)")
	python3 -m pytest -q python/tests
	tests/programs/run.py
	tests/workloads/run.py
	tests/study/run.py
	tests/study/seeds.py

# MRAM data larger than the host's memory (32.5 GiB over 40 ranks) under a budget, when the
# disk has room (says SKIP otherwise); see docs/memory.md.
test-memory-huge: build
	tests/memory/run.sh huge

# The daemon protocol's decoder on random and mutated messages (FUZZ_SECONDS, default 600).
fuzz-remote:
	FUZZ_SECONDS=$${FUZZ_SECONDS:-600} $(CARGO) test --release -p openpim-daemon --test daemon decoders_never_panic -- --nocapture

# The MPI backend's bigger matrix: PrIM's 16 at 256 DPUs on 1, 2 and 4 workers against the
# local run (docs/scale-out.md).
test-mpi: build
	tests/mpi/run.py --all
	tests/mpi/hosts.py
	tests/mpi/cluster.py

test-programs: build
	tests/programs/run.py --all
	tests/programs/run.py --check

# The collectives' full matrix (1,024 DPUs, every shape, communicator, type and path): minutes.
test-collectives: build
	$(CARGO) test --release -p openpim-collectives -- --include-ignored

bench: build
	bench/run.sh
	bench/check/run.py

# MRAM backing stores: STREAM per store and persistence horizon, dedup, the big-data run
# (bench/memory/run.py; a table and build/bench/memory.png).
bench-memory: build
	bench/memory/run.py

fidelity: build
	bench/fidelity/run.py
	bench/fidelity/run.py --prim-only --no-plots --table vpim
	bench/fidelity/launch_cost.py
	bench/fidelity/transfer_floor.py --check

# The fuzz targets (fuzz/README.md): cargo-fuzz installed when missing, every target built,
# its regression inputs replayed and a 60-second run from the committed corpus (which it
# does not modify). FUZZ_SECONDS changes the time per target.
FUZZ_SECONDS ?= 60
fuzz-smoke:
	fuzz/smoke.sh $(FUZZ_SECONDS)

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets $(MPI_FEATURES) -- -D warnings

clean:
	$(CARGO) clean
	rm -rf build
	find tests examples workloads -name bin -type d -prune -exec rm -rf {} +

# The seeds' full studies (docs/study.md): figures, CSVs and REPORT.md into study-NAME/.
study-collectives study-sharing study-tiers study-allocation study-all: build
	target/release/openpim study $(@:study-%=%) --out $@
