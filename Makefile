# mtlab — one Makefile for the whole project.
#
#   make run     install what is missing, build, open the workbench
#   make test    install what is missing, build (normal + ASan/UBSan), run every test
#   make         build ./mtlab
#   make deps    install missing Debian packages (apt-get; sudo when not root)
#   make data    build the Bible corpus under data/bible/
#   make gazetteer  rebuild scripts/data/gazetteer.*.txt (name substitution) from the word lists
#   make bench   benchmarks (printed ratios, never timed tests)
#   make bench-peers  mtlab's decoding vs CTranslate2, llama.cpp, transformers (pip-installs them)
#   make test-peers   every bench-peers peer decodes the same greedy tokens as mtlab (pip too)
#   make fuzz    build the libFuzzer targets (clang) and run each for FUZZ_SECONDS
#   make cuda    compile the CUDA objects (when nvcc exists)
#   make clean
#
# Sources are found by wildcard: a new engine/app/kernels file or tests/unit/test_*.c needs no
# edit here. BUILD and BIN may be overridden to build in a private directory.

BUILD ?= build
BIN   ?= mtlab
# `make V=1` shows the full compiler command lines.
Q := $(if $(V),,@)

# ---------------------------------------------------------------- Debian packages
DEB_PKGS := build-essential pkg-config \
            libncurses-dev libreadline-dev liblua5.4-dev lua5.4 \
            libsentencepiece-dev sentencepiece libpcre2-dev libutf8proc-dev \
            libopenblas-openmp-dev libblis-openmp-dev libjansson-dev libzip-dev libcmocka-dev libcairo2-dev tmux ncurses-term \
            sword-text-sparv sword-text-web libsword-utils \
            apertium apertium-eng-spa lua-busted wamerican wspanish \
            slurm-wlm munge libopenmpi-dev openmpi-bin libmecab-dev mecab-ipadic mecab-utils clang-format universal-ctags
FUZZ_PKGS := clang libclang-rt-14-dev

# ---------------------------------------------------------------- toolchain and flags
CC    := gcc
CXX   := g++
NVCC  ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
CUDA_HOME ?= $(if $(NVCC),$(patsubst %/bin/nvcc,%,$(NVCC)))

BLAS_DIR := /usr/lib/x86_64-linux-gnu/openblas-openmp
# BLIS, the second BLAS (engine/backend/cpu/cpu_blis.c): linked after OpenBLAS, so the CBLAS and
# Fortran names both export stay OpenBLAS's; only cpu_blis.c includes its header.
BLIS_DIR := /usr/lib/x86_64-linux-gnu/blis-openmp
BLIS_INC := /usr/include/x86_64-linux-gnu/blis-openmp
BLIS_LIBS := -L$(BLIS_DIR) -lblis -Wl,-rpath,$(BLIS_DIR)
PKGCONF  := PKG_CONFIG_PATH=$(BLAS_DIR)/pkgconfig pkg-config
comma    := ,
PC_LIBS  := ncursesw readline lua5.4 sentencepiece openblas jansson libpcre2-8 libutf8proc libzip cairo ompi-c
# Evaluated lazily (=) so that `make deps` can run before pkg-config knows the packages.
PC_CFLAGS = $(shell $(PKGCONF) --cflags $(PC_LIBS) 2>/dev/null)
PC_LDLIBS = $(shell $(PKGCONF) --libs $(PC_LIBS) 2>/dev/null)

WARN     := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wno-format-truncation
CPPFLAGS := -D_GNU_SOURCE -Iengine/include -Iengine -Iapp -Ikernels
# No math function's errno and no floating-point exception flag is ever read: without them,
# loops calling expf/log1pf, and loops selecting between floats (a clamp), can vectorise. Neither
# changes a result.
# Position-independent code, so the same objects make both the static library mtlab links and the
# shared one the unit tests link (below); -fno-semantic-interposition keeps calls within a file
# direct, and the linker relaxes the rest when it builds mtlab itself.
PIC_FLAGS := -fPIC -fno-semantic-interposition
CFLAGS_COMMON = -std=c11 -g -fopenmp -fno-math-errno -fno-trapping-math $(PIC_FLAGS) $(WARN) $(PC_CFLAGS)
CXXFLAGS_COMMON = -std=c++17 -g -fopenmp -fno-math-errno -fno-trapping-math $(PIC_FLAGS) -Wall -Wextra -Werror $(PC_CFLAGS)
LDLIBS_COMMON = $(PC_LDLIBS) $(BLIS_LIBS) -lmecab -Wl,-rpath,$(BLAS_DIR) -lstdc++ -lm -lpthread -fopenmp

OPT_FLAGS := -O2 -march=x86-64-v2
SAN_FLAGS := -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

# ---------------------------------------------------------------- sources
rwildcard = $(foreach d,$(wildcard $(1:=/*)),$(call rwildcard,$d,$2) $(filter $(subst *,%,$2),$d))
ENGINE_C   := $(call rwildcard,engine,*.c)
ENGINE_CC  := $(call rwildcard,engine,*.cc)
APP_C      := $(filter-out app/main.c,$(call rwildcard,app,*.c))
KERNELS_CU := $(wildcard kernels/*.cu)
TEST_C     := $(wildcard tests/unit/test_*.c)
TEST_SUPPORT_C := $(filter-out $(TEST_C),$(wildcard tests/unit/*.c))
FUZZ_C     := $(wildcard tests/fuzz/fuzz_*.c)

# Two builds of the same sources: rel (optimised, with CUDA when nvcc exists) and san
# (ASan + UBSan, CPU only: the CUDA runtime and ASan's shadow memory do not mix).
REL := $(BUILD)/rel
SAN := $(BUILD)/san

objs = $(patsubst %.c,$(1)/%.o,$(2)) $(patsubst %.cc,$(1)/%.o,$(3))

REL_LIB_OBJS := $(call objs,$(REL),$(ENGINE_C) $(APP_C),$(ENGINE_CC))
SAN_LIB_OBJS := $(call objs,$(SAN),$(ENGINE_C) $(APP_C),$(ENGINE_CC))
CUDA_OBJS    := $(if $(NVCC),$(patsubst %.cu,$(REL)/%.o,$(KERNELS_CU)))
NVCCFLAGS    := -std=c++17 -O2 -g -Iengine/include -Iengine -Ikernels \
                -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
                -Xcompiler -Wall,-Wextra,-Werror,-fPIC
# The CUDA backend is a shared object that engine/core/device.c loads (dlopen) on the first
# call asking for a CUDA device, so the CPU-only path maps no cudart or cuBLAS. It calls back
# into the executable (mt_error), which therefore exports its symbols (-rdynamic).
CUDA_SO      := $(if $(NVCC),$(REL)/libmtlab-cuda.so)
CUDA_SO_LIBS := -L$(CUDA_HOME)/lib64 -Wl$(comma)-rpath$(comma)$(CUDA_HOME)/lib64 -lcublas -lcublasLt -lcudart
CUDA_LDLIBS  := $(if $(NVCC),-rdynamic)
REL_DEFS     := $(if $(NVCC),-DMTLAB_HAVE_CUDA=1 -DMTLAB_CUDA_SO='"$(abspath $(CUDA_SO))"',-DMTLAB_HAVE_CUDA=0)

REL_TESTS := $(patsubst tests/unit/%.c,$(REL)/tests/%,$(TEST_C))
SAN_TESTS := $(patsubst tests/unit/%.c,$(SAN)/tests/%,$(TEST_C))
E2E_TOOLS := $(REL)/e2e/make_bundles

.PHONY: format test-cuda bench-cuda all run test test-build test-lua deps data bench bench-ports bench-rows bench-peers test-peers fuzz cuda clean gazetteer
.DEFAULT_GOAL := all
# Keep intermediate objects (test support files) so a second make does not relink everything.
.SECONDARY:

all: $(BIN)

# ---------------------------------------------------------------- the two README commands
run: deps
	@$(MAKE) --no-print-directory all
	@test -s data/bible/manifest.json || ./$(BIN) data bible
	./$(BIN)

test: deps
	@tests/check_layers.sh
	@tests/check_archs.sh
	@tests/check_docs.sh
	@tests/check_paths.sh
	@tests/check_format.sh
	@tests/check_params.sh
	@$(MAKE) --no-print-directory test-build
	@# the shipped training configs name dataset = "data/bible" (its manifest.json): a fresh
	@# clone builds it from Debian's SWORD modules (a few seconds), as `make run` does
	@test -s data/bible/manifest.json || ./$(BIN) data bible
	@# the gazetteer is checked against that corpus, so after it is built
	@tests/check_gazetteer.sh
	@tests/check_cycles.sh $(REL)/libmtlab.a
	@tests/run.sh $(REL)/tests $(SAN)/tests
	@$(MAKE) --no-print-directory test-lua
	@tests/jobs/run.sh ./$(BIN)
	@tests/e2e/run.sh ./$(BIN) $(E2E_TOOLS)
	@tests/e2e/cli.sh ./$(BIN) $(E2E_TOOLS) $(SAN)/$(BIN)
	@tests/e2e/attribute.sh ./$(BIN) $(E2E_TOOLS)
	@tests/e2e/dataset.sh ./$(BIN)
	@tests/e2e/heatmap.sh ./$(BIN)
	@tests/e2e/console.sh ./$(BIN) $(E2E_TOOLS)
	@tests/e2e/improvise.sh ./$(BIN) $(E2E_TOOLS)
	@tests/e2e/jobs.sh ./$(BIN)
	@tests/e2e/keymash.sh $(SAN)/$(BIN)

test-build: $(BIN) $(SAN)/$(BIN) $(REL_TESTS) $(SAN_TESTS) $(E2E_TOOLS)

# The Lua specs (tests/lua/*_spec.lua, busted) run inside `mtlab run`, in the optimised build
# and again under ASan/UBSan (handles closed while a decode runs must not touch freed memory),
# there without the specs tagged #slow (whole test sets through two models).
test-lua: $(BIN) $(SAN)/$(BIN)
	@echo "== Lua specs (busted), ./$(BIN)"
	@MTLAB=./$(BIN) ./$(BIN) run tests/lua/busted.lua tests/lua/
	@echo "== Lua specs (busted), $(SAN)/$(BIN) (ASan/UBSan)"
	@MTLAB=$(SAN)/$(BIN) ASAN_OPTIONS=detect_leaks=0 $(SAN)/$(BIN) run tests/lua/busted.lua --exclude-tags=slow tests/lua/

# ---------------------------------------------------------------- dependencies
# `dpkg-query` tells what is installed; only the missing packages go to apt-get.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "mtlab: installing missing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEB_PKGS))

# ---------------------------------------------------------------- objects and binaries
$(REL)/engine/backend/cpu/cpu_blis.o $(SAN)/engine/backend/cpu/cpu_blis.o: CPPFLAGS += -isystem $(BLIS_INC)
$(BUILD)/fuzz/obj/engine/backend/cpu/cpu_blis.o: FUZZ_CPPFLAGS += -isystem $(BLIS_INC)
$(REL)/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(REL_DEFS) $(CFLAGS_COMMON) $(OPT_FLAGS) -MMD -MP -c $< -o $@
$(REL)/%.o: %.cc
	@mkdir -p $(@D)
	@$(if $(V),,echo "  CXX     $<")
	$(Q)$(CXX) $(CPPFLAGS) $(REL_DEFS) $(CXXFLAGS_COMMON) $(OPT_FLAGS) -MMD -MP -c $< -o $@
$(REL)/%.o: %.cu
	@mkdir -p $(@D)
	@$(if $(V),,echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@
$(SAN)/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(V),,echo "  CC san  $<")
	$(Q)$(CC) $(CPPFLAGS) -DMTLAB_HAVE_CUDA=0 $(CFLAGS_COMMON) $(SAN_FLAGS) -MMD -MP -c $< -o $@
$(SAN)/%.o: %.cc
	@mkdir -p $(@D)
	@$(if $(V),,echo "  CXX san $<")
	$(Q)$(CXX) $(CPPFLAGS) -DMTLAB_HAVE_CUDA=0 $(CXXFLAGS_COMMON) $(SAN_FLAGS) -MMD -MP -c $< -o $@

# The selective scan's inner loops are chains of multiply-adds (its inlined exp above all):
# fused, they take 30% less time in forward and 8% less in backward on an AVX2 EPYC (one
# mamba-small layer of a training batch: 31.6 -> 23 ms, 58 -> 53 ms). Only the AVX2 and
# AVX-512 clones have FMA; the decoding step and the forward share the code, so they still
# agree bit for bit, and the tests hold the scan to the naive one within float rounding.
$(REL)/engine/backend/cpu/cpu_scan.o $(SAN)/engine/backend/cpu/cpu_scan.o: CFLAGS_COMMON += -ffp-contract=fast

# sacreBLEU's ja-mecab dictionary (scripts/data/mecab_ipadic.sh), found by the binaries at its
# absolute path (or MTLAB_MECAB_DIC); linked programs wait for it, so tests find it built.
MECAB_DIC := $(BUILD)/mecab-ipadic
$(MECAB_DIC)/sys.dic: scripts/data/mecab_ipadic.sh
	@$(if $(V),,echo "  DICT    $(MECAB_DIC)")
	$(Q)scripts/data/mecab_ipadic.sh $(MECAB_DIC)
$(REL)/engine/eval/tok_mecab.o $(SAN)/engine/eval/tok_mecab.o: \
    CPPFLAGS += -DMTLAB_MECAB_DIC='"$(abspath $(MECAB_DIC))"'

$(REL)/libmtlab.a: $(REL_LIB_OBJS) | $(CUDA_SO) $(MECAB_DIC)/sys.dic
	@rm -f $@; ar rcs $@ $^
$(CUDA_SO): $(CUDA_OBJS)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CXX) -shared -o $@ $^ $(CUDA_SO_LIBS)
$(SAN)/libmtlab.a: $(SAN_LIB_OBJS) | $(MECAB_DIC)/sys.dic
	@rm -f $@; ar rcs $@ $^
# The unit tests link the library as a shared object, found beside their folder ($ORIGIN/..):
# ninety-odd programs each holding a static copy of it took 2 GB of disk (the ASan ones 15-23 MB
# each), and a CI machine ran out of space linking them.
$(REL)/libmtlab.so: $(REL_LIB_OBJS) | $(CUDA_SO) $(MECAB_DIC)/sys.dic
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) -shared -Wl,-soname,libmtlab.so -o $@ $^ $(LDLIBS_COMMON)
$(SAN)/libmtlab.so: $(SAN_LIB_OBJS) | $(MECAB_DIC)/sys.dic
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(SAN_FLAGS) -shared -Wl,-soname,libmtlab.so -o $@ $^ $(LDLIBS_COMMON)
TEST_LINK := -Wl,-rpath,'$$ORIGIN/..'

$(BIN): $(REL)/app/main.o $(REL)/libmtlab.a
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) -o $@ $^ $(LDLIBS_COMMON) $(CUDA_LDLIBS)
$(SAN)/$(BIN): $(SAN)/app/main.o $(SAN)/libmtlab.a
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS_COMMON)

$(REL)/tests/%: tests/unit/%.c $(patsubst %.c,$(REL)/%.o,$(TEST_SUPPORT_C)) $(REL)/libmtlab.so
	@mkdir -p $(@D)
	@$(if $(V),,echo "  TEST    $@")
	$(Q)$(CC) $(CPPFLAGS) $(REL_DEFS) -Itests/unit $(CFLAGS_COMMON) $(OPT_FLAGS) -o $@ $^ $(TEST_LINK) -lcmocka $(LDLIBS_COMMON) $(CUDA_LDLIBS)
$(REL)/bench_rows: tests/bench/rows_kernels.c $(REL)/libmtlab.so
	@$(if $(V),,echo "  BENCH   $@")
	$(Q)$(CC) $(CPPFLAGS) $(REL_DEFS) $(CFLAGS_COMMON) $(OPT_FLAGS) -o $@ $^ -Wl,-rpath,'$$ORIGIN' $(LDLIBS_COMMON) $(CUDA_LDLIBS)
$(SAN)/tests/%: tests/unit/%.c $(patsubst %.c,$(SAN)/%.o,$(TEST_SUPPORT_C)) $(SAN)/libmtlab.so
	@mkdir -p $(@D)
	@$(if $(V),,echo "  TEST    $@")
	$(Q)$(CC) $(CPPFLAGS) -DMTLAB_HAVE_CUDA=0 -Itests/unit $(CFLAGS_COMMON) $(SAN_FLAGS) -o $@ $^ $(TEST_LINK) -lcmocka $(LDLIBS_COMMON)

# The tool the workbench's tmux end-to-end tests (tests/e2e/run.sh) make their bundles with.
$(REL)/e2e/%: tests/e2e/%.c $(REL)/libmtlab.a
	@mkdir -p $(@D)
	@$(if $(V),,echo "  E2E     $@")
	$(Q)$(CC) $(CPPFLAGS) $(REL_DEFS) $(CFLAGS_COMMON) $(OPT_FLAGS) -o $@ $^ $(LDLIBS_COMMON) $(CUDA_LDLIBS)

cuda: $(CUDA_SO)
	@$(if $(NVCC),echo "mtlab: CUDA objects built with $(NVCC)",echo "mtlab: no nvcc found; CUDA backend not built")

# ---------------------------------------------------------------- data, bench, fuzz
data: deps $(BIN)
	./$(BIN) data bible

# The name-substitution gazetteer, from the wamerican/wspanish word lists minus the corpus
# (docs/data.md §7); tests/check_gazetteer.sh checks the stored files against it.
gazetteer: deps
	@test -s data/bible/train.es || $(MAKE) --no-print-directory data
	scripts/data/gazetteer.sh data/bible scripts/data

bench: deps
	@$(MAKE) --no-print-directory all
	./$(BIN) bench

# The AVX2 core's cycles per 64 multiply-adds in each form of an 8-bit product (docs/quantization.md §2)
bench-ports: $(BUILD)/int8_ports
	$(BUILD)/int8_ports
$(BUILD)/int8_ports: tests/bench/int8_ports.c
	@mkdir -p $(@D)
	$(CC) -O2 -std=c11 -Wall -Wextra -Werror $< -o $@

# The fp32 kernels of decoding's few-row products side by side, GFLOP/s (docs/decoding.md §9.5)
bench-rows: deps
	@$(MAKE) --no-print-directory $(REL)/bench_rows
	OMP_NUM_THREADS=$(or $(THREADS),1) $(REL)/bench_rows

# On a GPU machine: the CUDA tests must run there (a missing device fails instead of skipping).
CUDA_TESTS := test_device test_cuda_ops test_cuda_seq_ops test_cuda_models test_collective_nccl
test-cuda: deps
	@test -n "$(NVCC)" || { echo "mtlab: test-cuda needs nvcc (the CUDA toolkit)"; exit 1; }
	@$(MAKE) --no-print-directory $(patsubst %,$(REL)/tests/%,$(CUDA_TESTS))
	@MTLAB_REQUIRE_CUDA=1 tests/run.sh $(REL)/tests --only "$(CUDA_TESTS)"

# The GPU report (app/bench/bench_cuda.c); PyTorch's training figures come first when torch is
# importable (the GPU machines have it; mtlab itself never needs it).
bench-cuda: deps
	@test -n "$(NVCC)" || { echo "mtlab: bench-cuda needs nvcc (the CUDA toolkit)"; exit 1; }
	@$(MAKE) --no-print-directory all
	@if python3 -c 'import torch' 2>/dev/null; then \
	  python3 tests/bench/torch_train.py --out $(BUILD)/torch_train.json && \
	  ./$(BIN) bench --device $(or $(DEVICE),cuda:0) --torch-json $(BUILD)/torch_train.json; \
	else \
	  echo "mtlab: no PyTorch here: the GPU report without the PyTorch training ratios"; \
	  ./$(BIN) bench --device $(or $(DEVICE),cuda:0); \
	fi

# Not part of `make test` or CI: both install their peers from PyPI (README, "Peer benchmark").
# BENCH_PEERS_ARGS passes options on, e.g. BENCH_PEERS_ARGS="--rounds 5 --models transformer".
bench-peers: deps
	@$(MAKE) --no-print-directory all
	@# the deployed shapes' vocabularies are trained on the Bible's text (tests/bench/peer_bundles.py)
	@test -s data/bible/train.es || $(MAKE) --no-print-directory data
	python3 tests/bench/bench_peers.py --mtlab ./$(BIN) --work $(BUILD)/bench-peers $(BENCH_PEERS_ARGS)
	python3 tests/bench/torch_train.py --device cpu --mtlab ./$(BIN) --rounds 3

test-peers: deps
	@$(MAKE) --no-print-directory all
	@test -s data/bible/train.es || $(MAKE) --no-print-directory data
	python3 tests/bench/bench_peers.py --check --mtlab ./$(BIN) --work $(BUILD)/test-peers

FUZZ_SECONDS ?= 300
FUZZ_SAN := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_CPPFLAGS := -D_GNU_SOURCE -Iengine/include -Iengine -Iapp
FUZZ_FLAGS := -std=c11 $(FUZZ_SAN) -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
FUZZ_CXXFLAGS := -std=c++17 $(FUZZ_SAN) -Wall -Wextra -Werror
# Each target links the sources of the parser it drives, FUZZ_SRC_<target> (FUZZ_LIB_C, the
# model-bundle readers, when it names none), and the pkg-config packages FUZZ_PC_<target>
# (jansson when it names none) and libzip (engine/io/torch_zip.c); a C++ source among them
# links the target with clang++.
FUZZ_LIB_C := $(wildcard engine/io/*.c) engine/core/error.c
HF_BPE_C := engine/tokenizer/hf_bpe.c engine/tokenizer/hf_bpe_load.c engine/data/strmap.c
FUZZ_SRC_fuzz_tokenizer := engine/tokenizer/spm.cc engine/tokenizer/marian_vocab.cc engine/tokenizer/token_label.c \
    $(HF_BPE_C) engine/text/utf8.c $(FUZZ_LIB_C)
FUZZ_PC_fuzz_tokenizer := sentencepiece jansson libpcre2-8 libutf8proc
FUZZ_SRC_fuzz_marian_vocab := $(FUZZ_SRC_fuzz_tokenizer)
FUZZ_PC_fuzz_marian_vocab := $(FUZZ_PC_fuzz_tokenizer)
FUZZ_SRC_fuzz_tokenizer_json := $(HF_BPE_C) engine/text/utf8.c engine/core/error.c
FUZZ_PC_fuzz_tokenizer_json := jansson libpcre2-8 libutf8proc
FUZZ_SRC_fuzz_entity_lexicon := engine/eval/entity_lexicon.c engine/eval/entities_words.c \
    engine/eval/tsv_file.c engine/eval/lowercase.c engine/eval/unicode_case_tables.c \
    engine/eval/codepoints.c engine/data/strmap.c engine/text/utf8.c $(FUZZ_LIB_C)
FUZZ_SRC_fuzz_job_file := app/jobs/job_file.c $(FUZZ_LIB_C)
FUZZ_SRC_fuzz_theme := app/common/theme.c engine/io/user_file.c engine/core/error.c
FUZZ_SRC_fuzz_keys := app/tui/editor.c app/common/columns.c engine/text/utf8.c engine/core/error.c
# The training config: its reader, the Lua runner, and the engine it checks presets, datasets and
# languages against; the kernels with OpenMP pragmas are compiled with -fopenmp (LLVM's runtime).
FUZZ_SRC_fuzz_train_config := app/common/train_config.c app/common/lua_run.c $(ENGINE_C) $(ENGINE_CC)
FUZZ_PC_fuzz_train_config := lua5.4 openblas ompi-c sentencepiece jansson libpcre2-8 libutf8proc
FUZZ_LIBS_fuzz_train_config := -fopenmp -ldl -lmecab $(BLIS_LIBS)
# `mtlab data import`: the engine as above (its objects are shared).
FUZZ_SRC_fuzz_import := $(ENGINE_C) $(ENGINE_CC)
FUZZ_PC_fuzz_import := $(FUZZ_PC_fuzz_train_config)
FUZZ_LIBS_fuzz_import := $(FUZZ_LIBS_fuzz_train_config)
# The console's line editor (readline's callback interface) with what it writes and queues to.
FUZZ_SRC_fuzz_console := $(addprefix app/tui/console/console_,readline.c io.c scrollback.c chunk.c complete.c) \
    app/tui/queue.c app/tui/keys.c $(ENGINE_C) $(ENGINE_CC)
FUZZ_PC_fuzz_console := readline ncursesw $(FUZZ_PC_fuzz_train_config)
FUZZ_LIBS_fuzz_console := $(FUZZ_LIBS_fuzz_train_config)
$(BUILD)/fuzz/obj/engine/backend/%.o $(BUILD)/fuzz/obj/engine/probe/%.o: FUZZ_FLAGS += -fopenmp -Wno-pass-failed
FUZZ_NAMES := $(patsubst tests/fuzz/%.c,%,$(FUZZ_C))
FUZZ_BINS := $(patsubst %,$(BUILD)/fuzz/%,$(FUZZ_NAMES))
fuzz_objs = $(patsubst %,$(BUILD)/fuzz/obj/%.o,$(basename tests/fuzz/$(1).c $(or $(FUZZ_SRC_$(1)),$(FUZZ_LIB_C))))
$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(V),,echo "  FUZZCC  $<")
	$(Q)clang $(FUZZ_FLAGS) $(FUZZ_CPPFLAGS) $(shell $(PKGCONF) --cflags jansson lua5.4 openblas ompi-c) -MMD -MP -c -o $@ $<
$(BUILD)/fuzz/obj/%.o: %.cc
	@mkdir -p $(@D)
	@$(if $(V),,echo "  FUZZCXX $<")
	$(Q)clang++ $(FUZZ_CXXFLAGS) $(FUZZ_CPPFLAGS) $(shell $(PKGCONF) --cflags sentencepiece) -MMD -MP -c -o $@ $<
define fuzz_target
$(BUILD)/fuzz/$(1): $(call fuzz_objs,$(1))
	@$$(if $$(V),,echo "  FUZZ    $$@")
	$$(Q)$(if $(filter %.cc,$(FUZZ_SRC_$(1))),clang++,clang) $(FUZZ_SAN) -o $$@ $$^ \
	    $$(shell $$(PKGCONF) --libs $(or $(FUZZ_PC_$(1)),jansson) libzip) $(FUZZ_LIBS_$(1)) -lm
endef
$(foreach t,$(FUZZ_NAMES),$(eval $(call fuzz_target,$(t))))

fuzz:
	$(call install_missing,$(DEB_PKGS) $(FUZZ_PKGS))
	@$(MAKE) --no-print-directory $(FUZZ_BINS)
	@for f in $(FUZZ_BINS); do \
	  name=$$(basename $$f); mkdir -p fuzz-corpus/$$name fuzz-corpus/crashes; \
	  cp -n tests/fuzz/seeds/$$name/* fuzz-corpus/$$name/ 2>/dev/null || true; \
	  dict=tests/fuzz/$$name.dict; [ -f $$dict ] && dict_arg=-dict=$$dict || dict_arg=; \
	  echo "== $$name for $(FUZZ_SECONDS) s"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$dict_arg \
	      -artifact_prefix=fuzz-corpus/crashes/$$name- fuzz-corpus/$$name || exit 1; \
	done

clean:
	rm -rf $(BUILD) $(BIN)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---------------------------------------------------------------- source layout
# Rewrites the tracked C, C++ and CUDA sources in .clang-format's layout (tests/check_format.sh
# checks it in `make test`).
format:
	git ls-files '*.c' '*.h' '*.cu' '*.cuh' '*.cc' '*.cpp' | xargs clang-format -i
