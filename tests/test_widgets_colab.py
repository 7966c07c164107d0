"""In Colab the comparator switches on Colab's custom widget manager, once, before any of its widgets exists."""

import sys
import types

from socm_lib.viz import widgets


def fake_colab(monkeypatch, log):
    """A stand-in for the google.colab package whose output.enable_custom_widget_manager records its calls."""
    import ipywidgets

    def enable():
        log.append(len(ipywidgets.widgets.widget._instances))  # widgets alive at the moment of the call

    colab = types.ModuleType("google.colab")
    colab.output = types.SimpleNamespace(enable_custom_widget_manager=enable)
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab.output", colab.output)


def test_colab_widget_manager_enabled_once_before_the_widgets(monkeypatch):
    import ipywidgets

    log = []
    fake_colab(monkeypatch, log)
    alive = len(ipywidgets.widgets.widget._instances)
    w = widgets.Comparator(n_texts=10, show_figures=False)
    assert log == [alive]  # called exactly once, before the comparator created any widget
    assert len(ipywidgets.widgets.widget._instances) > alive
    w._repr_mimebundle_()  # displaying it does not call it again
    w.pair.value = 2
    assert len(log) == 1


def test_no_colab_no_call(monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    assert widgets.enable_colab_widgets() is False


def test_enable_colab_widgets_in_colab(monkeypatch):
    log = []
    fake_colab(monkeypatch, log)
    assert widgets.enable_colab_widgets() is True and len(log) == 1


def test_the_plain_text_form_is_a_one_line_hint_not_the_widget_tree():
    """Where no widget can be drawn (a saved notebook before its kernel runs, nbconvert), the comparator reads as
    one line saying what to do, not as ``VBox(children=(HBox(...``; the widget view itself is unchanged."""
    w = widgets.Comparator(n_texts=10, show_figures=False)
    bundle = w._repr_mimebundle_()
    text = bundle["text/plain"]
    assert "\n" not in text and "run this cell" in text and "VBox" not in text and repr(w) == text
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == w.widget.model_id


def test_every_committed_widget_output_has_the_plain_text_hint():
    from notebook_cells import NOTEBOOKS, ROOT, read

    found = 0
    for path in [*NOTEBOOKS, *sorted((ROOT / "book").glob("*.ipynb"))]:
        for cell in read(path).cells:
            for out in cell.get("outputs", []):
                if "application/vnd.jupyter.widget-view+json" in out.get("data", {}):
                    found += 1
                    text = "".join(out["data"].get("text/plain", ""))
                    assert text == widgets.Comparator.PLAIN_TEXT, f"{path.name}: a widget shows {text[:80]!r} as text"
    assert found >= 1
