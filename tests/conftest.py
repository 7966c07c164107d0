"""Fixtures shared by the tests: a Hugging Face cache of stand-in checkpoints (see ``tests/standins.py``)."""

import pytest

import standins


@pytest.fixture(scope="session")
def standin_cache(tmp_path_factory):
    """A session-wide cache holding the ``bert``, ``gte`` and (pytorch_model.bin only) ``simcse`` stand-ins."""
    return standins.write_cache(tmp_path_factory.mktemp("hf"), names=("bert", "gte", "simcse"))


@pytest.fixture
def standin_hub(standin_cache, monkeypatch):
    """Point this process (huggingface_hub reads its settings at import) and its children at the stand-in cache.

    Offline, as a Colab session would be after downloading; the widget caches are emptied before and after.
    """
    from huggingface_hub import constants

    from socm_lib.viz import widgets

    for key, value in standin_cache.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", standin_cache["HF_HUB_CACHE"])
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    # transformers 4.x copies both settings at import (5.x reads huggingface_hub's): patch its copies where present
    import transformers.utils.hub as transformers_hub

    for name, value in (("TRANSFORMERS_CACHE", standin_cache["HF_HUB_CACHE"]), ("_is_offline_mode", True)):
        if hasattr(transformers_hub, name):
            monkeypatch.setattr(transformers_hub, name, value)
    from socm_lib import load_encoder, token_embeddings

    caches = (widgets.cached_encoder, load_encoder, token_embeddings)
    for cached in caches:  # what another test loaded under the same name must not answer this one
        cached.cache_clear()
    yield standin_cache
    for cached in caches:
        cached.cache_clear()


@pytest.fixture(scope="session")
def built_assignments(tmp_path_factory):
    """The graded assignments of labs 1, 2 and 4 (scripts/assignments.py), built once for every grading test."""
    import grading_kit

    return grading_kit.build(tmp_path_factory.mktemp("assignments"))
