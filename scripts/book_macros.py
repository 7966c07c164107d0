"""Sphinx extension: the LaTeX preamble's macros generated from the MathJax macros, so one list serves both.

`_config.yml` defines the book's macros once, under `sphinx.config.mathjax3_config.tex.macros` (MathJax's form:
``name: body`` or ``name: [body, number of arguments]``). When Sphinx reads its configuration, this extension
appends a ``\\newcommand`` for each of them to ``latex_elements["preamble"]``, which the LaTeX builder
(``jupyter-book build --builder latex|pdflatex``) writes into the .tex file.
"""


def latex_preamble(macros: dict) -> str:
    """One ``\\newcommand{\\name}[n]{body}`` line per MathJax macro, in the order given."""
    lines = []
    for name, definition in macros.items():
        if isinstance(definition, str):
            body, n_args = definition, 0
        elif isinstance(definition, (list, tuple)) and len(definition) == 2 and isinstance(definition[1], int):
            body, n_args = definition
        else:
            raise ValueError(f"MathJax macro {name!r}: expected a string or [body, number of arguments], "
                             f"got {definition!r}")
        args = f"[{n_args}]" if n_args else ""
        lines.append(f"\\newcommand{{\\{name}}}{args}{{{body}}}")
    return "\n".join(lines) + "\n"


def _add_preamble(app, config):
    macros = (config.mathjax3_config or {}).get("tex", {}).get("macros", {})
    elements = dict(config.latex_elements or {})
    elements["preamble"] = elements.get("preamble", "") + latex_preamble(macros)
    config.latex_elements = elements


def setup(app):
    app.connect("config-inited", _add_preamble)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
