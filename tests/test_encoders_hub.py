"""Loading Hub models as Colab would after a download, using a cache of stand-in checkpoints (tests/standins.py)."""

import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import standins
from socm_lib import encoders
from socm_lib.encoders import STAND_IN_NOTE, ModelUnavailableError, load_encoder, loaded_provenance, provenance


def test_standin_cache_has_the_hub_layout(standin_cache):
    hub = Path(standin_cache["HF_HUB_CACHE"])
    for name in ("bert", "gte", "simcse"):
        repo = hub / ("models--" + standins.STANDINS[name].hf_id.replace("/", "--"))
        rev = (repo / "refs" / "main").read_text()
        assert rev == standins.revision(name) and len(rev) == 40
        snap = repo / "snapshots" / rev
        config = json.loads((snap / "config.json").read_text())
        assert config["socm_stand_in"] is True and config["model_type"] == "bert"
        assert (config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"],
                config["intermediate_size"], config["vocab_size"], config["max_position_embeddings"]) == (
                   768, 12, 12, 3072, 30522, 512)
        assert (snap / "vocab.txt").read_text().splitlines()[:1] == ["[PAD]"]
        assert len((snap / "vocab.txt").read_text().splitlines()) == 30522
    simcse = standins.snapshot_folder(hub, "simcse")
    assert (simcse / "pytorch_model.bin").exists() and not list(simcse.glob("*.safetensors"))


def test_small_standins_have_the_published_sizes(tmp_path):
    config = standins.STANDINS["gte-small"].sizes
    assert config == dict(hidden_size=384, num_hidden_layers=12, num_attention_heads=12, intermediate_size=1536)
    assert standins.STANDINS["e5-small"].sizes == config and standins.STANDINS["e5"].sizes == standins.BASE


def test_bert_and_gte_resolve_from_the_cache(standin_hub, monkeypatch):
    monkeypatch.setattr(encoders, "_warned_stand_ins", set())
    with pytest.warns(UserWarning, match=STAND_IN_NOTE):
        bert = load_encoder("bert", device="cpu")
    gte = load_encoder("gte", device="cpu")
    for enc, name in ((bert, "bert"), (gte, "gte")):
        assert (enc.dim, enc.num_layers, enc.model.config.vocab_size) == (768, 12, 30522)
        assert enc.stand_in and enc.label == f"{name} [stand-in]" and "[stand-in]" in repr(enc)
        assert enc.commit == standins.revision(name)
        assert provenance(enc) == {"name": name, "id": standins.STANDINS[name].hf_id, "commit": enc.commit,
                                   "source": standins.STANDINS[name].hf_id, "stand_in": True, "dtype": "float32"}
        assert provenance(enc) in loaded_provenance()
    # same seed, same architecture: the two stand-ins hold the same weights (they differ only in name)
    assert torch.equal(bert.model.embeddings.word_embeddings.weight, gte.model.embeddings.word_embeddings.weight)
    ids = bert.tokenizer("Mean pooling works.")["input_ids"]
    assert ids[0] == 101 and ids[-1] == 102  # [CLS] ... [SEP] of the bert-base-uncased vocabulary


def test_offline_encoders_have_no_commit():
    enc = load_encoder("untrained-minilm-l6", device="cpu")
    p = provenance(enc)
    assert p["commit"] is None and p["stand_in"] is False and p["id"] is None and not enc.stand_in
    assert enc.label == "untrained-minilm-l6"
    with pytest.raises(TypeError, match="load_encoder"):
        provenance("bert")


def test_bin_only_repository_loads_through_the_weights_only_loader(standin_hub, monkeypatch):
    calls = []
    real_load = torch.load

    def spy(*args, **kwargs):
        calls.append(kwargs.get("weights_only"))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    enc = load_encoder("simcse", device="cpu")
    assert calls and all(flag is True for flag in calls)
    assert enc.commit == standins.revision("simcse") and enc.dim == 768
    state = real_load(standins.snapshot_folder(standin_hub["HF_HUB_CACHE"], "simcse") / "pytorch_model.bin",
                      map_location="cpu", weights_only=True)
    assert torch.equal(enc.model.encoder.layer[3].attention.self.query.weight,
                       state["encoder.layer.3.attention.self.query.weight"])


class _Payload:
    """An object whose unpickling would run code (here: create a file)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def test_a_pickle_with_arbitrary_objects_is_refused(tmp_path):
    folder = tmp_path / "evil-model"
    folder.mkdir()
    tiny = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    from transformers import BertConfig, BertModel

    config = BertConfig(**{**standins.BERT_COMMON, **tiny})
    config.save_pretrained(folder)
    for f in standins.TOKENIZER_FILES:
        (folder / f).write_bytes((encoders.packaged_minilm_path() / f).read_bytes())
    state = dict(BertModel(config).state_dict())
    marker = tmp_path / "payload-ran"
    state["payload"] = _Payload(marker)
    torch.save(state, folder / "pytorch_model.bin")
    with pytest.raises(ModelUnavailableError, match="Refused to load"):
        load_encoder(str(folder), device="cpu")
    assert not marker.exists()
    # the same file without the payload loads: the refusal is about the object, not the format
    del state["payload"]
    torch.save(state, folder / "pytorch_model.bin")
    assert load_encoder(str(folder), device="cpu").dim == 32


@pytest.mark.parametrize("name", ["socm-book-tests/no-such-model", "e5-small"])
def test_a_model_neither_cached_nor_reachable_fails_fast(name, tmp_path, monkeypatch):
    """No forced offline mode: the library alone must give up quickly, with its clear message."""
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    probes, probe = [], encoders.hub_reachable
    monkeypatch.setattr(encoders, "hub_reachable", lambda *a, **k: probes.append(probe(*a, **k)) or probes[-1])
    with pytest.raises(ModelUnavailableError, match="cannot be reached.*Colab"):
        load_encoder(name, device="cpu")
    assert probes == [False]  # one probe, bounded by its own timeout, then the error: no download tried


def test_hub_probe_is_bounded_even_when_the_name_lookup_stalls(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    def stalled_lookup(*args, **kwargs):
        time.sleep(30)
        raise OSError("name lookup timed out")  # what the stalled lookup ends in, after the test is over

    monkeypatch.setattr(encoders.socket, "create_connection", stalled_lookup)
    start = time.perf_counter()
    assert encoders.hub_reachable(timeout=0.5) is False
    assert time.perf_counter() - start < 15  # the caller did not wait out the 30 s stall (a guard, not a speed)


def test_stand_in_clouds_are_finite_at_d768(standin_hub):
    from socm_lib import token_embeddings

    clouds = token_embeddings(load_encoder("gte", device="cpu"), ["One short text.", "Another, longer text here."])
    assert [c.shape[1] for c in clouds] == [768, 768] and all(np.isfinite(c).all() for c in clouds)
