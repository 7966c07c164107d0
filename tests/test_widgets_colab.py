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
