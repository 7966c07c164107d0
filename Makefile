# socm-book: one virtual environment, pinned by requirements.txt.
#   make book   build the book from the committed notebooks, check it, and say where to open it
#   make test   every test: library, CLI, notebooks (strict nbval), the built book's HTML and browser checks
#   make notebooks   re-execute every notebook in place (then commit the outputs)
#   make bench  rerun the benchmarks and rewrite benchmarks/results/*.json
#   make student   student notebooks (no solutions, no outputs) and their zip in _build/student/
#   make rehearse   run notebooks 4-6 on stand-in BERT/GTE checkpoints (copies), record notebooks/rehearsal.json
#   make test-kernels   re-execute the float32 notebooks with torch on its baseline kernels, one thread (nbval-approx)
#   make test-floors   the library tests in .venv-floors, every dependency at its pyproject.toml floor
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg

.PHONY: venv book build-book student test test-kernels test-floors notebooks bench rehearse clean

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

# MathJax, RequireJS and the widgets' HTML manager at pinned versions (npm), served by the book itself
VENDOR := _build/vendor
$(VENDOR)/.fetched: scripts/fetch_assets.sh
	scripts/fetch_assets.sh $(VENDOR)

build-book: venv $(VENDOR)/.fetched
	rm -rf _build/html _build/.doctrees  # cross-page glue is read from the notebooks: never reuse stale doctrees
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

book: build-book
	$(PY) -m pytest -q tests/test_book_html.py tests/test_browser.py
	@echo "The book is built: open $(CURDIR)/_build/html/index.html in a browser."

# student edition: every notebook without its solution cells and outputs, and a zip to hand out
student: venv
	rm -rf _build/student
	$(PY) scripts/student_edition.py --out _build/student notebooks/nb*.ipynb

test: build-book
	$(PY) -m pytest tests notebooks book/status.ipynb book/teaching.ipynb $(NBVAL)

# The notebooks whose committed outputs come from torch's float32 kernels, re-executed with torch dispatching to
# its baseline (non-vectorised) CPU kernels on one thread, compared by the nbval-approx rule of conftest.py.
KERNEL_NOTEBOOKS := notebooks/nb03_extraction.ipynb notebooks/nb10_paper_route.ipynb
OTHER_KERNELS := ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
test-kernels: venv
	$(OTHER_KERNELS) $(PY) -m pytest -q $(KERNEL_NOTEBOOKS) $(NBVAL)

# The library's tests of the code that calls its dependencies, with every dependency at its floor
FLOORS := .venv-floors
FLOOR_TESTS := tests/test_extract.py tests/test_encoders_hub.py tests/test_authors_route.py tests/test_reference.py \
	tests/test_data.py tests/test_downstream_stats.py tests/test_layers.py tests/test_errors.py
$(FLOORS)/.installed: requirements-floors.txt pyproject.toml
	rm -rf $(FLOORS)
	$(PYTHON) -m venv $(FLOORS)
	$(FLOORS)/bin/python -m pip install -q -r requirements-floors.txt
	$(FLOORS)/bin/python -m pip install -q --no-deps -e .
	touch $@
test-floors: $(FLOORS)/.installed
	$(FLOORS)/bin/python -m pytest -q $(FLOOR_TESTS)

notebooks: venv
	$(PY) scripts/run_notebooks.py

bench: venv
	$(PY) benchmarks/run_all.py

rehearse: venv
	$(PY) scripts/rehearse.py

clean:
	rm -rf _build
