# The two commands: `make demo` and `make test`. Each creates .venv when missing and installs into it.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
RUN    ?= runs/demo
# make test spreads the suite over this many pytest-xdist processes (tests/conftest.py groups them)
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile

.PHONY: demo test test-all install clean gpu-bundle

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

# The whole pipeline on a Dask LocalCluster (one worker process per core; docs/PIPELINE.md); the demo
# config's shard sizes make its 60 documents several Dask tasks per stage. SCHEDULER=tcp://host:8786
# (or DASK_SCHEDULER_ADDRESS) uses an existing cluster, SCHEDULER=synchronous none.
demo: $(STAMP)
	$(BIN)/graphmert run --config configs/demo.yaml --run-dir $(RUN) $(if $(SCHEDULER),--scheduler $(SCHEDULER))

test: $(STAMP)
	$(PYTEST)

# the default suite and the slow tests it leaves out (pyproject.toml: addopts)
test-all: $(STAMP)
	$(PYTEST) -m 'slow or not slow'

# what a GPU machine that reaches no package registry needs for GPU_CONFIG's stages: the packages it
# lacks, as wheels for its Python, and the config's ../shared data (scripts/gpu_bundle.py, docs/PIPELINE.md)
GPU_CONFIG ?= configs/biored-gpu.yaml
gpu-bundle: $(STAMP)
	$(BIN)/python scripts/gpu_bundle.py --config $(GPU_CONFIG)

clean:
	rm -rf $(VENV) runs .pytest_cache
