"""JupyterLab over the editions of the book's notebooks, whose links open the book built on this machine: `make lab`.

    python scripts/book_lab.py [--port 8888] [any option of jupyter lab, e.g. --no-browser]

`prepare` fills the lab's folder (_build/lab): the edition of every notebook page (scripts/editions.py) with its
references, citations and chapter links pointing at `BOOK_PATH` of the lab's own server, and the files the notebooks
read. A notebook already there is kept, so a reader's work survives; delete it to get its current edition. `main`
then starts JupyterLab on 127.0.0.1 (this machine only, behind a token) with this module as a server extension
(`_load_jupyter_server_extension`), which serves the built book, _build/html, at `BOOK_PATH`: a link in a notebook
opens the page in a new browser tab, offline. (JupyterLab's own /files/ route serves a file as a sandboxed page,
which can neither load the book's scripts nor keep its settings, and a browser refuses file:// links from a served
page.)
"""

import argparse
import os
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import editions  # noqa: E402  (scripts/editions.py, beside this file)

LAB = editions.ROOT / "_build" / "lab"
BOOK_PATH = "/book/"  # where the lab's server serves the built book


def prepare(folder: Path = LAB, book: editions.Book | None = None) -> list[Path]:
    """Write the editions (links to `BOOK_PATH`) into `folder`, keeping any notebook already there, and the data
    files; return the notebooks written."""
    book = book or editions.Book(book_url=BOOK_PATH)
    written = []
    for docname in book.notebook_pages():
        target = folder / f"{docname}.ipynb"
        if not target.exists():  # a reader's notebook is never replaced
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(editions.plain_edition(docname, book), target)
            written.append(target)
    editions.copy_data_files(book.root, folder)
    return written


def _load_jupyter_server_extension(serverapp):
    """Serve the built book at `BOOK_PATH` of the server (static files; the server listens on this machine only)."""
    from jupyter_server.utils import url_path_join
    from tornado.web import StaticFileHandler

    route = url_path_join(serverapp.base_url, BOOK_PATH, "(.*)")
    serverapp.web_app.add_handlers(".*$", [(route, StaticFileHandler, {"path": str(editions.HTML),
                                                                        "default_filename": "index.html"})])


def server(folder: Path, port: int, options=()) -> tuple[list[str], dict]:
    """The command line and environment of a JupyterLab over `folder` on 127.0.0.1:`port` that serves the book at
    `BOOK_PATH` (this module as its server extension), with more `options` of jupyter lab."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent),
                                                                      os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "jupyterlab", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
               f"--ServerApp.root_dir={folder}", "--ServerApp.jpserver_extensions={'book_lab': True}",
               *(["--allow-root"] if os.geteuid() == 0 else []), *options]
    return command, env


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8888, help="the server's port (default 8888; the next free one "
                                                                "if it is taken)")
    args, options = parser.parse_known_args(argv)
    if not (editions.HTML / "objects.inv").exists():
        parser.error(f"{editions.HTML} holds no built book: run make build-book first")
    book = editions.Book(book_url=BOOK_PATH)
    written = prepare(LAB, book)
    print(f"{len(written)} new editions in {LAB}/ (notebooks already there kept); {book.install_note()}; "
          f"the lab serves the book at {BOOK_PATH}")
    command, env = server(LAB, args.port, options)
    os.execve(sys.executable, command, env)


if __name__ == "__main__":
    main()
