"""Menus that the keyboard drives in JupyterLab: a key pressed in a menu of a widget or of a chart stays with it.

JupyterLab runs its notebook shortcuts on any key pressed while a notebook in command mode holds the focus:
ArrowDown selects the next cell, "m" turns the cell into Markdown. A text box puts the notebook in edit mode, so
its keys are safe, but a ``<select>`` does not: ArrowDown in a menu of the comparator (ipywidgets) or of the
explorer (Vega-Lite bindings, drawn by JupyterLab's own Vega) moved to the next cell, and the focus left the menu.
Lumino, JupyterLab's toolkit, looks for a shortcut from the element that received the key up through its
ancestors, and stops at one that carries ``data-lm-suppress-shortcuts`` (JupyterLab marks its own shortcut editor
so). :data:`SCRIPT` marks the form control that is about to receive a key, when it belongs to a widget or a chart
output, before Lumino sees the key: one listener on the window, in the capture phase, which the notebook's outputs
run once (:func:`display_with_keyboard`).
"""

from __future__ import annotations

import sys

#: The JavaScript output that keeps the keys of widget and chart menus with them (idempotent: installs one listener
#: per page). JupyterLab runs it with the output's node as ``element``; elsewhere it does nothing.
SCRIPT = """\
if (typeof window !== "undefined" && !window.socmMenuKeys) {
  window.socmMenuKeys = true;
  window.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target && target.closest && target.matches("select, input")
        && target.closest(".jp-OutputArea-output .jupyter-widgets, .jp-OutputArea-output .vega-bindings")) {
      target.setAttribute("data-lm-suppress-shortcuts", "true");
    }
  }, true);
}
"""
#: The output's MIME type: JupyterLab runs it (trusted outputs: those of a cell run in the session, or of a notebook
#: it signed); the book leaves it out (socm_lib.viz.mystnb).
MIME = "application/javascript"


def display_with_keyboard(bundle: dict) -> None:
    """Display the MIME `bundle` (a widget's or a chart's) after the output that keeps its menus' keys (:data:`SCRIPT`);
    in Colab, whose outputs are sandboxed frames without JupyterLab's shortcuts, the bundle alone."""
    from IPython.display import display

    if "google.colab" not in sys.modules:
        display({MIME: SCRIPT}, raw=True)
    display(bundle, raw=True)
