# socm-book: one virtual environment, pinned by requirements.txt.
#   make book   build the book from the committed notebooks, check it, and say where to open it
#   make test   every test: library, CLI, notebooks (strict nbval), the built book's HTML and browser checks, the student book and the PDF
#   make notebooks   re-execute every notebook in place (then commit the outputs)
#   make bench  rerun the benchmarks and rewrite benchmarks/results/*.json
#   make editions   the Colab/Jupyter edition of every notebook page (book markup resolved) in _build/colab/
#   make lab    JupyterLab on 127.0.0.1 with the editions, linked to the book built here, in _build/lab/ (PORT=, LAB_ARGS=)
#   make student   the student kit (editions without solutions or outputs) in _build/student/socm-book-student/, and zipped
#   make student-book   the HTML book without any solution, in _build/student-book/html (and its checks)
#   make pdf   the whole book for readers as one PDF, _build/pdf/socm-book.pdf (headless chromium + pypdf: links inside the PDF, bookmarks, page numbers), and its checks
#   make student-pdf   the student book as one PDF, _build/pdf/socm-book-student.pdf, and the checks of every student artifact
#   make assignments   graded assignments of every lab in _build/assignments/<lab>/ (student/, autograder/*.zip)
#   make rehearse   run notebooks 4-6 on stand-in BERT/GTE checkpoints (copies), record notebooks/rehearsal.json
#   make test-kernels   re-execute every notebook on another kernel family (OpenBLAS Prescott, torch baseline, one thread)
#   make test-floors   the library tests in .venv-floors, every dependency at its pyproject.toml floor
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg

.PHONY: venv book lab assignments build-book editions student build-student-book student-book build-pdf pdf build-student-pdf student-pdf test test-suite test-kernels test-floors notebooks bench rehearse clean

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt pyproject.toml setup.py socm_lib/_lanes.c socm_lib/_lanes_body.h socm_lib/_lanes_bidiag.h
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
	$(PY) scripts/editions.py --out _build/colab --downloads  # the .ipynb download button serves the edition

book: build-book
	$(PY) -m pytest -q tests/test_book_html.py tests/test_browser.py
	@echo "The book is built: open $(CURDIR)/_build/html/index.html in a browser."

# Colab and Jupyter editions: glue values, links, citations and macros resolved from the built book
editions: venv
	@test -f _build/html/objects.inv || { echo "build the book first: make build-book" >&2; exit 1; }
	rm -rf _build/colab
	$(PY) scripts/editions.py --out _build/colab --downloads

# JupyterLab on this machine only (127.0.0.1), in _build/lab/ (scripts/book_lab.py): the editions, whose links open
# the book built here (served by the lab at /book/), are copied there without replacing a notebook already there, so a
# reader's work survives; delete a notebook there to get the current edition. PORT sets the port, LAB_ARGS adds
# options of jupyter lab, e.g. make lab PORT=8890 LAB_ARGS=--no-browser
PORT ?= 8888
LAB_ARGS ?=
lab: venv
	@test -f _build/html/objects.inv || $(MAKE) build-book
	$(PY) scripts/book_lab.py --port $(PORT) $(LAB_ARGS)

# student edition: built from the editions, without solution cells and outputs, and the kit's zip to hand out
student: venv
	@test -f _build/html/objects.inv || { echo "build the book first: make build-book" >&2; exit 1; }
	rm -rf _build/student
	$(PY) scripts/student_edition.py --out _build/student notebooks/nb*.ipynb

# the student book: a copy of the sources without the chapters' solutions and the notebooks' solution cells
build-student-book: venv $(VENDOR)/.fetched
	$(PY) scripts/student_book.py --out _build/student-book

student-book: build-book build-student-book  # the checks compare with the main book, where the solutions are
	$(PY) -m pytest -q tests/test_student_book.py
	@echo "The student book is built: open $(CURDIR)/_build/student-book/html/index.html in a browser."

# the book printed page by page with Debian's chromium (MathJax typeset offline) and joined by pypdf, its links
# made into links inside the PDF (or to the published book), with bookmarks and page numbers
build-pdf: build-book
	$(PY) scripts/book_pdf.py --out _build/pdf/socm-book.pdf

pdf: build-pdf  # the checks of the reader's PDF only: the student PDF is `make student-pdf`'s
	$(PY) -m pytest -q tests/test_pdf.py -k "not student"

# the student book printed the same way: the PDF to hand out
build-student-pdf: build-student-book
	$(PY) scripts/book_pdf.py --html _build/student-book/html --out _build/pdf/socm-book-student.pdf

student-pdf: build-book build-pdf build-student-pdf student  # the checks compare with the reader's book and PDF
	$(PY) -m pytest -q tests/test_student_artifacts.py
	$(PY) -m pytest -q tests/test_pdf.py -k student

# every test: the suite, then nbval of every notebook on another kernel family, then the floors
test: test-suite test-kernels test-floors

# Every notebook the book executes; nbval compares their outputs by the one rule of conftest.py.
NOTEBOOKS := $(sort $(wildcard notebooks/nb*.ipynb)) book/status.ipynb book/teaching.ipynb

# the library, CLI, grading, built-book, student-book, PDF and browser tests (the notebooks run in test-kernels)
test-suite: build-book build-student-book build-pdf build-student-pdf student
	$(PY) -m pytest --durations=15 tests

# Every notebook re-executed and compared with its committed outputs (nbval), on the kernels any x86-64 CPU runs:
# OpenBLAS (numpy, scipy) on its Prescott kernels, torch on its baseline (non-vectorised) kernels, one thread each.
# The committed outputs come from another family (AVX2 or AVX-512), so a number that depends on the kernels beyond
# the rule fails here, not on a reader's machine. Each notebook runs once in `make test`, here: one run checks both
# that the outputs are reproduced and that they hold on a second kernel family. Two notebooks run at a time
# (pytest-xdist, one worker per core), the longest first (notebooks/execution.json).
OTHER_KERNELS := OPENBLAS_CORETYPE=Prescott ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	OPENBLAS_NUM_THREADS=1
LONGEST_FIRST = $(shell $(PY) -c "import json, sys; s = json.load(open('notebooks/execution.json'))['notebooks']; \
	print(*sorted(sys.argv[1:], key=lambda p: -s.get(p, {}).get('seconds', 0)))" $(NOTEBOOKS))
test-kernels: venv
	$(OTHER_KERNELS) $(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder $(LONGEST_FIRST) $(NBVAL)

# The library's tests of the code that calls its dependencies, with every dependency at its floor
FLOORS := .venv-floors
FLOOR_TESTS := tests/test_extract.py tests/test_encoders_hub.py tests/test_data.py tests/test_errors.py \
	tests/test_distributed.py
$(FLOORS)/.installed: requirements-floors.txt pyproject.toml setup.py socm_lib/_lanes.c socm_lib/_lanes_body.h socm_lib/_lanes_bidiag.h
	rm -rf $(FLOORS)
	$(PYTHON) -m venv $(FLOORS)
	$(FLOORS)/bin/python -m pip install -q -r requirements-floors.txt
	$(FLOORS)/bin/python -m pip install -q --no-deps -e .
	touch $@
test-floors: $(FLOORS)/.installed
	$(FLOORS)/bin/python -m pytest -q $(FLOOR_TESTS)

# graded assignments, from the student edition: grade submissions with
#   $(PY) scripts/grade.py --key _build/assignments/<lab>/autograder/<lab>-autograder.zip --out <dir> --jobs <cores> -- <notebooks>   (--out outside the submissions)
assignments: venv
	@test -f _build/html/objects.inv || { echo "build the book first: make build-book" >&2; exit 1; }
	$(PY) scripts/assignments.py --out _build/assignments

notebooks: venv
	$(PY) scripts/run_notebooks.py

bench: venv
	$(PY) benchmarks/run_all.py

rehearse: venv
	$(PY) scripts/rehearse.py

clean:
	rm -rf _build
