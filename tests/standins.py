"""Stand-in checkpoints: the registry's BERT-family architectures with random weights, in a Hugging Face cache.

The paper's BERT-base models (``bert``, ``gte``, ``simcse``, ``e5``) and their small siblings (``gte-small``,
``e5-small``) cannot be downloaded here. A stand-in has the published configuration of its model (BertModel,
hidden size, layers, heads, intermediate size, 30,522-token vocabulary, 512 positions), the bert-base-uncased
WordPiece vocabulary (the one the packaged all-MiniLM-L6-v2 tokenizer uses) and weights drawn from a fixed seed,
written where ``transformers`` looks with ``HF_HUB_OFFLINE=1``::

    <HF_HUB_CACHE>/models--org--name/refs/main                  (holds <rev>)
    <HF_HUB_CACHE>/models--org--name/snapshots/<rev>/config.json, model.safetensors, tokenizer files

So ``load_encoder("bert")`` resolves exactly as it would in Colab after a download. Each config carries
``"socm_stand_in": true``; ``load_encoder`` then sets ``Encoder.stand_in`` and warns with
``socm_lib.encoders.STAND_IN_NOTE``: *stand-in weights: checks the code path, not the science*. Stand-in
weights never feed a published number. ``simcse`` is written with ``pytorch_model.bin`` only (as some SimCSE
repositories are), to exercise the safe ``weights_only=True`` loading path.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

SEED = 0
BASE = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
SMALL = dict(hidden_size=384, num_hidden_layers=12, num_attention_heads=12, intermediate_size=1536)
BERT_COMMON = dict(vocab_size=30522, max_position_embeddings=512, type_vocab_size=2, hidden_act="gelu",
                   hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, initializer_range=0.02,
                   layer_norm_eps=1e-12, pad_token_id=0, position_embedding_type="absolute")
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


@dataclass(frozen=True)
class StandIn:
    hf_id: str
    sizes: dict
    weights: str = "safetensors"  # or "bin": pytorch_model.bin only


STANDINS: dict[str, StandIn] = {
    "bert": StandIn("google-bert/bert-base-uncased", BASE),
    "gte": StandIn("thenlper/gte-base", BASE),
    "simcse": StandIn("h-tomo/unsup-simcse-bert-base-uncased-mean", BASE, weights="bin"),
    "e5": StandIn("intfloat/e5-base-v2", BASE),
    "gte-small": StandIn("thenlper/gte-small", SMALL),
    "e5-small": StandIn("intfloat/e5-small-v2", SMALL),
}


def revision(name: str, seed: int = SEED) -> str:
    """The (fake, deterministic) 40-hex commit under which a stand-in's snapshot is written."""
    return hashlib.sha1(f"socm stand-in {STANDINS[name].hf_id} seed {seed}".encode()).hexdigest()


def repo_folder(hub_cache: Path, name: str) -> Path:
    """``<hub_cache>/models--org--name``, named by huggingface_hub's own rule."""
    from huggingface_hub.file_download import repo_folder_name

    return Path(hub_cache) / repo_folder_name(repo_id=STANDINS[name].hf_id, repo_type="model")


def snapshot_folder(hub_cache: Path, name: str, seed: int = SEED) -> Path:
    return repo_folder(hub_cache, name) / "snapshots" / revision(name, seed)


def write_standin(hub_cache: Path, name: str, seed: int = SEED) -> Path:
    """Write one stand-in (config, seeded weights, tokenizer, ``refs/main``) and return its snapshot folder.

    Does nothing when that snapshot is already complete.
    """
    from transformers import BertConfig, BertModel

    from socm_lib.encoders import packaged_minilm_path

    if name not in STANDINS:
        raise ValueError(f"No stand-in for {name!r}; choose from {list(STANDINS)}.")
    spec = STANDINS[name]
    snap = snapshot_folder(hub_cache, name, seed)
    weights = snap / ("model.safetensors" if spec.weights == "safetensors" else "pytorch_model.bin")
    if weights.exists() and (snap / "config.json").exists():
        return snap
    snap.mkdir(parents=True, exist_ok=True)
    config = BertConfig(**BERT_COMMON, **spec.sizes, architectures=["BertModel"], socm_stand_in=True,
                        socm_stand_in_of=spec.hf_id, socm_stand_in_seed=seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertModel(config).eval()
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    config.save_pretrained(snap)
    if spec.weights == "safetensors":
        from safetensors.torch import save_file

        save_file(state, str(weights), metadata={"format": "pt"})
    else:
        torch.save(state, weights)
    tokenizer = packaged_minilm_path()
    for f in TOKENIZER_FILES:
        if (tokenizer / f).exists():
            shutil.copyfile(tokenizer / f, snap / f)
    refs = repo_folder(hub_cache, name) / "refs"
    refs.mkdir(exist_ok=True)
    (refs / "main").write_text(revision(name, seed))
    return snap


def cache_env(root: Path) -> dict:
    """``{"HF_HOME": root, "HF_HUB_CACHE": root/hub, "HF_HUB_OFFLINE": "1"}``: the environment that makes
    transformers read the stand-ins written by :func:`write_cache` under ``root``. huggingface_hub reads these
    variables when it is imported: set them before that (or in a notebook kernel's environment)."""
    root = Path(root)
    return {"HF_HOME": str(root), "HF_HUB_CACHE": str(root / "hub"), "HF_HUB_OFFLINE": "1"}


def write_cache(root: Path, names=("bert", "gte"), seed: int = SEED) -> dict:
    """Write stand-ins under ``root/hub`` and return :func:`cache_env` of ``root``."""
    env = cache_env(root)
    for name in names:
        write_standin(Path(env["HF_HUB_CACHE"]), name, seed)
    return env
