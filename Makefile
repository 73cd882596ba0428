# rdma-rs: the Linux RDMA stack (ib_core, mlx5_core, mlx5_ib) in Rust-for-Linux.
#
#   make run      set up, build, boot a VM with the Rust stack on the emulated ConnectX, show it
#   make test     set up, build, run every test (host, KUnit, VM scenarios on both stacks)
#
#   make bench    Rust vs C on the same model, as ratios, on a production-like kernel and on the
#                 test kernel: probe-to-ready time of mlx5_core, the data path (post_send,
#                 poll_cq, SEND message rate), user verbs
#   make kasan    a second kernel with KASAN, and the Rust stack's scenarios on it
#   make vm-test SCENARIO=<name> STACK=rust|c     one VM scenario
#   make vm-shell STACK=rust|c                    interactive guest
#   make series   the repository as a patch series for Linux 7.3.4 (the in-tree route), in out/series
#   make setup | kernel | modules | verbs-twin | cx-model | verbs-tools | intree | build | list-scenarios | clean
#
# Everything fetched or built outside the clone goes to $(CACHE), keyed by version.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

REPO := $(CURDIR)
CACHE ?= $(HOME)/.cache/rdma-rs
SHARED ?= $(abspath $(REPO)/../shared)
OUT ?= $(REPO)/out
STACK ?= rust
SCENARIO ?=

KERNEL_VERSION := 7.3.4
PRISTINE = $(shell cat $(CACHE)/kernel-pristine.path 2>/dev/null)
KTREE := $(CACHE)/build/linux-$(KERNEL_VERSION)
BZIMAGE := $(KTREE)/arch/x86/boot/bzImage
BINDGEN := $(CACHE)/bindgen-0.73.2/bin/bindgen
QEMU := $(CACHE)/qemu-10.2.2+ds-1/build/qemu-system-x86_64
CARGO_TARGET := $(CACHE)/cargo-target
CX_MODEL := $(CARGO_TARGET)/release/cx-model
RUST_MODULES := $(OUT)/modules
# The LLVM toolchain the kernel trees are built with (its version suffix): clang-22, rustc 1.95's
# LLVM, so that CONFIG_RUST_INLINE_HELPERS can inline C's helpers into Rust (docs/build.md).
KLLVM ?= -22
export KERNEL_LLVM := $(KLLVM)
# bindgen (in the kernel's builds) loads the newest libclang on the machine unless told: the one
# of the same LLVM as the compiler.
export LIBCLANG_PATH := /usr/lib/llvm$(KLLVM)/lib
KMAKE := $(MAKE) -C $(KTREE) -s LLVM=$(KLLVM) BINDGEN=$(BINDGEN)
# Our crates build two at a time where their dependencies allow (ib_core beside mlx5_core, ...).
NPROC := $(shell nproc)
# Guest-side test programs built from this repository (libibverbs consumers).
VERBS_TOOLS := $(OUT)/tools/verbs_errors $(OUT)/tools/rdma_nl_tester $(OUT)/tools/load_once \
	$(OUT)/tools/unload_once $(OUT)/tools/umad_badinput \
	$(OUT)/tools/uverbs_badinput $(OUT)/tools/uverbs_holder $(OUT)/tools/uverbs_bench \
	$(OUT)/tools/verbs_hostile
# The C twin of the Rust sample consumer ib_verbs_client (tools/verbs-twin), for STACK=c.
VERBS_TWIN := $(OUT)/verbs-twin/ib_verbs_client.ko

# The in-tree route's build (make intree): the series on 7.3.4, built by the kernel's build.
INTREE_TREE := $(CACHE)/build/linux-$(KERNEL_VERSION)-intree

HARNESS_ARGS = --kernel $(BZIMAGE) --kernel-tree $(KTREE) --rust-modules $(RUST_MODULES) \
	--intree-tree $(INTREE_TREE) \
	--qemu $(QEMU) --cx-model $(CX_MODEL) --workdir $(OUT)/vm --verbs-twin $(VERBS_TWIN) \
	$(foreach t,$(VERBS_TOOLS),--guest-tool $(t))

export CI ?=
export DEBIAN_FRONTEND := noninteractive

RUST_SOURCES = $(shell find drivers rust samples -name '*.rs' 2>/dev/null)
RUSTFMT_KERNEL = rustfmt --edition 2021 --config-path $(KTREE)/.rustfmt.toml

.PHONY: kasan kasan-run bench bench-run insn-plugin help setup qemu kernel build-parts build-test test-parts modules intree series verbs-twin cx-model verbs-tools build test run vm-test vm-shell list-scenarios clean fmt fmt-check layers \
	record-c-bringup

help:
	@sed -n '1,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

## Set-up: host packages, kernel source, Rust pieces. Idempotent; cheap when done.
setup: $(CACHE)/.setup-done

$(CACHE)/.host-deps-done: tools/setup/host-deps.sh
	@mkdir -p $(CACHE)
	tools/setup/host-deps.sh
	@touch $@

# The kernel's download and unpacking (mostly waiting on the network and one core) beside the
# build of bindgen (cargo, both cores): on a fresh machine the kernel build waits for both.
$(CACHE)/.setup-done: $(CACHE)/.host-deps-done tools/setup/fetch-kernel.sh tools/setup/rust-toolchain.sh
	tools/setup/rust-toolchain.sh $(CACHE) >/dev/null & rt=$$!; \
	tools/setup/fetch-kernel.sh $(CACHE) > $(CACHE)/fetch-kernel.out; fk=$$?; \
	wait $$rt && [ $$fk = 0 ] && tail -n 1 $(CACHE)/fetch-kernel.out > $(CACHE)/kernel-pristine.path
	@touch $@

## QEMU with the vfio-user client (built once; cheap when done). At the lowest priority: `build`
## runs it beside the rest, where it takes only the CPU time the rest leaves idle (downloads,
## the kernel build's single-threaded steps: its Rust crates, the vmlinux links).
qemu: $(CACHE)/.host-deps-done
	nice -n 19 tools/setup/build-qemu.sh $(CACHE) $(SHARED)/cache/qemu >/dev/null

## The test kernel (with rust/ overlaid) and the upstream C modules.
# SKIP_KERNEL=1 uses the kernel tree as it is (e.g. several work trees sharing one kernel build).
kernel: setup
ifneq ($(SKIP_KERNEL),1)
	tools/kernel/build-kernel.sh $(REPO) "$(PRISTINE)" $(KTREE) $(BINDGEN)
endif

## Our Rust modules, against the test kernel; clippy runs as part of the build. Which ones: the
## symbols of Kconfig, evaluated against the kernel into $(RDMA_RS_CONFIG) (RDMA_RS_SET="CONFIG_...=n"
## changes one; the choice is kept there).
RDMA_RS_CONFIG := $(OUT)/rdma-rs.config
RDMA_RS_SET ?=
## Its output is kept in $(OUT)/modules-build.log, and $(OUT)/modules-build.kind says whether
## it built everything (`full`: the output directory was empty) or only what changed: make
## test's style step reads the warnings of a full build instead of building again.
modules: kernel
	@mkdir -p $(RUST_MODULES)
	tools/kernel/rdma-rs-config.sh $(REPO) $(KTREE) $(RDMA_RS_CONFIG) $(BINDGEN) $(RDMA_RS_SET)
	@if [ -z "$$(ls -A $(RUST_MODULES))" ]; then echo full; else echo incremental; fi >$(OUT)/modules-build.kind
	+@{ $(KMAKE) -j$(NPROC) M=$(REPO) MO=$(RUST_MODULES) RDMA_RS_CONFIG=$(RDMA_RS_CONFIG) CLIPPY=1 modules 2>&1; \
		echo $$? >$(OUT)/modules-build.rc; } | tee $(OUT)/modules-build.log; exit $$(cat $(OUT)/modules-build.rc)
	python3 tools/kernel/check-frames.py $(FRAME_LIMIT) $(RUST_MODULES)/*.ko

## Largest stack frame a function of our modules may have (bytes): a probe nests deep on a
## 16 KiB stack (tools/kernel/check-frames.py). C's CONFIG_FRAME_WARN is 2048; two functions are
## between the two today (mlx5_core's Hca::bring_up, the bench sample's poll).
FRAME_LIMIT ?= 3072

## The C twin of ib_verbs_client: an external C module against the test kernel's C ib_core.
# After our modules (order only): two external-module builds in one kernel tree at once are
# not something kbuild promises to support.
verbs-twin: kernel | modules
	@mkdir -p $(OUT)/verbs-twin
	+$(KMAKE) M=$(REPO)/tools/verbs-twin MO=$(OUT)/verbs-twin modules

## The in-tree route: the repository as a patch series (`make series` writes it to out/series),
## applied to 7.3.4 in a copy of the test kernel's tree and built by the kernel's own build
## (tools/kernel/build-intree.sh). Last: it reuses the test kernel's objects, and runs after the
## other builds so that two kernel builds never share the cores.
intree: kernel | modules verbs-twin cx-model verbs-tools
	tools/kernel/build-intree.sh $(REPO) "$(PRISTINE)" $(KTREE) $(INTREE_TREE) $(BINDGEN)

series: setup
	tools/kernel/intree-series.sh $(REPO) "$(PRISTINE)" $(OUT)/series

cx-model: setup
	cd tools/cx-model && CARGO_TARGET_DIR=$(CARGO_TARGET) cargo build -q --release

## Guest-side verbs programs, against the host's libibverbs (copied into the guest with it).
verbs-tools: $(VERBS_TOOLS)

$(OUT)/tools/verbs_errors: tools/verbs-errors/verbs_errors.c | $(CACHE)/.setup-done
	@mkdir -p $(@D)
	gcc -O2 -g -Wall -Wextra -Werror -o $@ $< -libverbs

# Raw NETLINK_RDMA requests, no library: static, so the guest needs nothing else.
$(OUT)/tools/rdma_nl_tester: tools/rdma-nl-tester/rdma_nl_tester.c | $(CACHE)/.setup-done
	@mkdir -p $(@D)
	gcc -O2 -g -fno-strict-aliasing -Wall -Wextra -Werror -static -o $@ $<

# Malformed requests on a uverbs node, checked against C's errnos: static.
$(OUT)/tools/uverbs_badinput: tools/uverbs-badinput/uverbs_badinput.c | $(CACHE)/.setup-done
	@mkdir -p $(@D)
	gcc -O2 -g -Wall -Wextra -Werror -static -pthread -o $@ $<

# A process holding a user context while its device goes away (libibverbs).
$(OUT)/tools/uverbs_holder: tools/uverbs-holder/uverbs_holder.c | $(CACHE)/.setup-done
	@mkdir -p $(@D)
	gcc -O2 -g -Wall -Wextra -Werror -o $@ $< -libverbs

# What a user (or a fabric node) can do to the stack: event pile-ups, short MADs, rereg (libibverbs).
$(OUT)/tools/verbs_hostile: tools/verbs-hostile/verbs_hostile.c | $(CACHE)/.setup-done
	@mkdir -p $(@D)
	gcc -O2 -g -Wall -Wextra -Werror -o $@ $< -libverbs

# Control-path costs of user verbs for `make bench` (libibverbs).
$(OUT)/tools/uverbs_bench: tools/uverbs-bench/uverbs_bench.c | $(CACHE)/.setup-done
	@mkdir -p $(@D)
	gcc -O2 -g -Wall -Wextra -Werror -o $@ $< -libverbs

# One finit_module() call, no fallback (busybox insmod retries with init_module): static.
$(OUT)/tools/load_once: tools/load-once/load_once.c | $(CACHE)/.setup-done
	@mkdir -p $(@D)
	gcc -O2 -g -Wall -Wextra -Werror -static -o $@ $<

# Malformed and edge-case use of a umad node, checked against C's errnos: static.
$(OUT)/tools/umad_badinput: tools/umad-badinput/umad_badinput.c | $(CACHE)/.setup-done
	@mkdir -p $(@D)
	gcc -O2 -g -Wall -Wextra -Werror -static -o $@ $<

# One delete_module() call, its N-th allocation failing (hardening-failslab's teardown): static.
$(OUT)/tools/unload_once: tools/unload-once/unload_once.c | $(CACHE)/.setup-done
	@mkdir -p $(@D)
	gcc -O2 -g -Wall -Wextra -Werror -static -o $@ $<

## Everything the VMs need: QEMU (niced) beside the rest, which is built one part after the
## other (each part uses both cores itself, and QEMU needs the idle moments between them; a
## third job made the cold build slower: docs/build.md).
build:
	+$(MAKE) --no-print-directory -j2 qemu build-parts

build-parts: kernel modules verbs-twin cx-model verbs-tools intree

## What `make test` builds before its runs: all but the in-tree kernel, which it builds niced
## beside the VM runs (run_all.py --deferred-build; the `intree` scenario waits for it), in the
## CPU time the guests leave idle.
build-test:
	+$(MAKE) --no-print-directory -j2 qemu test-parts

test-parts: kernel modules verbs-twin cx-model verbs-tools

## `make bench`: both stacks on the same model, first on a production-like kernel (the test kernel
## without its debug options: tools/kernel/config-bench.fragment; its own tree, built and cached
## only here), then on the test kernel. Both with clang-22 and CONFIG_RUST_INLINE_HELPERS. Each
## kernel gets its own modules (out/bench/).
BENCH_KTREE := $(CACHE)/build/linux-$(KERNEL_VERSION)-bench
BENCH_LABEL ?= test kernel: lockdep, kmemleak, list debugging
bench: setup
	EXTRA_FRAGMENT=$(REPO)/tools/kernel/config-bench.fragment \
		tools/kernel/build-kernel.sh $(REPO) "$(PRISTINE)" $(BENCH_KTREE) $(BINDGEN)
	$(MAKE) --no-print-directory bench-run KTREE=$(BENCH_KTREE) OUT=$(OUT)/bench SKIP_KERNEL=1 \
		BENCH_LABEL="bench kernel: no debug options"
	$(MAKE) --no-print-directory bench-run

## One kernel's comparison (KTREE, OUT): only what the bench scenarios use is built.
bench-run: qemu modules verbs-twin cx-model verbs-tools insn-plugin
	python3 tools/bench/probe.py --label "$(BENCH_LABEL)" -- $(HARNESS_ARGS)
	python3 tools/bench/verbs.py --label "$(BENCH_LABEL)" --plugin $(INSN_PLUGIN) -- $(HARNESS_ARGS)

## The QEMU plugin that counts guest instructions between the bench modules' markers.
INSN_PLUGIN := $(OUT)/tools/libinsn_marks.so
insn-plugin: qemu
	@mkdir -p $(dir $(INSN_PLUGIN))
	gcc -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden $$(pkg-config --cflags glib-2.0) \
		-I$(dir $(QEMU))../src/include/qemu -o $(INSN_PLUGIN) tools/bench/insn_marks.c

list-scenarios:
	@python3 tools/vm/harness.py list

vm-test: build
	@test -n "$(SCENARIO)" || { echo "vm-test: set SCENARIO=<name>; one of: $$(python3 tools/vm/harness.py list | cut -d: -f1 | tr '\n' ' ')"; exit 2; }
	python3 tools/vm/harness.py run --scenario $(SCENARIO) --stack $(STACK) \
		$(if $(VM_STACKS),--vm-stacks "$(VM_STACKS)") $(HARNESS_ARGS)

vm-shell: build
	python3 tools/vm/harness.py shell --stack $(STACK) $(HARNESS_ARGS)

## Every test; ends with "N passed, N failed".
test: build-test
	python3 tools/test/run_all.py --cargo-target $(CARGO_TARGET) --ktree $(KTREE) --bindgen $(BINDGEN) \
		--deferred-build 'tools/kernel/build-intree.sh $(REPO) "$(PRISTINE)" $(KTREE) $(INTREE_TREE) $(BINDGEN)' \
		-- $(HARNESS_ARGS)

## `make kasan`: a second kernel, the test kernel with the generic KASAN (its own tree), and the
## Rust stack's scenarios on it; any KASAN report fails a run. Not part of `make test`: a second
## cold kernel build and guests about twice as slow would break its time budget.
KASAN_KTREE := $(CACHE)/build/linux-$(KERNEL_VERSION)-kasan
KASAN_SCENARIOS ?= kunit rust-bringup rust-events rust-faults rust-health rust-removal \
	rust-cmd-concurrency mlx5-auxbus mlx5-comp-vectors mlx5ib-device mlx5ib-kverbs mlx5ib-verbs \
	mlx5ib-verbs-faults mlx5ib-verbs-removal ibcore-devices ibcore-netlink ibcore-sysfs ibcore-verbs ibcore-badinput \
	hardening-eqes hardening-device hardening-cmdq hardening-failslab hardening-churn modules \
	hardening-user hardening-mad-wire uverbs-fuzz c-abi-clients c-abi-load-orders
kasan: setup
	EXTRA_FRAGMENT=$(REPO)/tools/kernel/config-kasan.fragment \
		tools/kernel/build-kernel.sh $(REPO) "$(PRISTINE)" $(KASAN_KTREE) $(BINDGEN)
	$(MAKE) --no-print-directory kasan-run KTREE=$(KASAN_KTREE) OUT=$(OUT)/kasan SKIP_KERNEL=1 \
		FRAME_LIMIT=6144

kasan-run: build
	python3 tools/test/run_all.py --cargo-target $(CARGO_TARGET) --ktree $(KTREE) --bindgen $(BINDGEN) \
		--only "$$(echo $(KASAN_SCENARIOS) | tr ' ' ',')" --stack rust -- $(HARNESS_ARGS)

## Re-record docs/c-bringup-commands.md: what the C stack asks of the device, from cx-model's log.
record-c-bringup: build
	python3 tools/vm/harness.py run --scenario c-bringup --stack c $(HARNESS_ARGS)
	{ echo "# Commands the upstream C stack issues to bring up a ConnectX-5 IB port"; echo; \
	  echo "Recorded by \`make record-c-bringup\` from cx-model's log of the \`c-bringup\` scenario:"; \
	  echo "load dimlib, ib_core, ib_uverbs_support, ib_uverbs, ib_umad, mlx5_core, mlx5_ib (Linux"; \
	  echo "$(KERNEL_VERSION)); run rdma and ibv_devinfo; unload everything. Do not edit by hand."; echo; \
	  echo "## Counts (by opcode)"; echo; echo '```'; cat $(OUT)/vm/c-bringup-c/commands.txt; echo '```'; echo; \
	  echo "## Order (runs of the same command folded)"; echo; echo '```'; \
	  cat $(OUT)/vm/c-bringup-c/trace.txt; echo '```'; } > docs/c-bringup-commands.md

## The main job: boot the Rust stack on the emulated ConnectX and show what is there.
run: build
	python3 tools/vm/harness.py run --scenario showcase --stack rust $(HARNESS_ARGS) --show-console

## rustfmt with the kernel's configuration (kernel code) and cargo fmt (cx-model).
fmt: setup
	$(RUSTFMT_KERNEL) $(RUST_SOURCES)
	cd tools/cx-model && cargo fmt

fmt-check: setup
	$(RUSTFMT_KERNEL) --check $(RUST_SOURCES)
	cd tools/cx-model && cargo fmt --check

## The layering of each crate (a module imports only modules below it): any import cycle
## fails, with the cycle (tools/dev/import_graph.py); so does a crate diagram of
## docs/architecture.md that misses a module or draws one below a module it imports
## (tools/dev/check_arch_diagrams.py). Part of make test's style step.
LAYERED_CRATES := drivers/infiniband/core drivers/infiniband/core/uverbs \
	drivers/infiniband/core/umad drivers/infiniband/hw/mlx5 drivers/net/mlx5_core
layers:
	@fail=0; for d in $(LAYERED_CRATES); do \
	  out=$$(python3 tools/dev/import_graph.py $$d) || { fail=1; echo "$$d:"; echo "$$out" | grep '^cycle'; }; \
	done; [ $$fail = 0 ] && echo "no import cycle in $(words $(LAYERED_CRATES)) crates"
	@python3 tools/dev/check_arch_diagrams.py docs/architecture.md $(LAYERED_CRATES)

clean:
	rm -rf $(OUT)
	-$(KMAKE) M=$(REPO) MO=$(RUST_MODULES) clean 2>/dev/null
