r"""Token embeddings :math:`X \in \mathbb R^{n\times d}` of each text, from any encoder (notebook 3).

The paper's conventions are the defaults: final layer, special tokens ([CLS],
[SEP], ...) included, tokenizer defaults with truncation, batch size 64, no task
prefix (an encoder's ``prefix``, for example E5's ``"passage: "``, is put in front of
each text here and nowhere else; its tokens are then part of the cloud). Each cloud
is returned as a float32 array (the hidden states as the model computes them in float32; an encoder loaded
with ``dtype="float64"`` gives float64 arrays);
the library takes every statistic of it in float64. Texts are batched by token length (longest first, so memory peaks at
the start), padding never reaches a text's rows (rows are *selected* by the
attention mask, never multiplied by it: padded positions can hold NaN under some
attention kernels), and each batch leaves the GPU as soon as it is done.

Recent results are kept (:mod:`socm_lib.memo`; ``token_embeddings.cache_clear()``, and
``token_embeddings.cache_info()``, which counts one lookup per layer asked), layer by layer, so that an identical
later call (a lab's answer check after the notebook's own extraction) runs no forward pass. An entry is found only
for the same model and tokenizer *objects* (an encoder from a second :func:`~socm_lib.load_encoder` call with the
same arguments shares them; two encoders loaded separately never share an entry), in the same state (training flag,
and each parameter's and buffer's storage, dtype, device and version counter, which torch raises on every in-place
change: an optimiser step, ``load_state_dict``, ``.to(...)``), and for the same texts, layer, ``special_tokens``,
``batch_size``, truncation length, float16 setting and prefix (batching and padding change the last bits of a
float32 forward pass, so only an identical call is answered from the cache; ``progress`` does not count). A change
torch does not record (writing through ``param.data``, editing the tokenizer's settings) is not seen: call
``token_embeddings.cache_clear()`` after one. Every call returns fresh arrays (copies of the stored ones), so no
caller can alter what another receives. At most :data:`CLOUD_CACHE_SIZE` calls' layers and :data:`CLOUD_CACHE_BYTES`
bytes of clouds are kept, and none of an encoder whose model has been freed; ``cache=False`` computes afresh and
stores nothing (for timing).
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import warnings
import weakref

import numpy as np
import torch
from tqdm import tqdm

from .checks import as_bool, as_int, as_progress, as_texts, show_progress
from .encoders import Encoder
from .memo import LRUCache

#: At most this many (call, layer) results are kept by :func:`token_embeddings`, holding at most
#: :data:`CLOUD_CACHE_BYTES` bytes of clouds (a larger result is not stored).
CLOUD_CACHE_SIZE = 32
CLOUD_CACHE_BYTES = 512 * 2**20


def _live(entry) -> bool:
    """Whether the model and tokenizer an entry was computed with still exist."""
    return entry[0]() is not None and entry[1]() is not None


_CLOUDS = LRUCache(CLOUD_CACHE_SIZE, maxbytes=CLOUD_CACHE_BYTES, valid=_live,
                   sizeof=lambda entry: sum(c.nbytes for c in entry[2]))


def _model_state(model: torch.nn.Module) -> tuple:
    """What of a model's state its outputs depend on and torch records: its mode, each tensor's storage and version."""
    return (model.training, tuple((t.data_ptr(), str(t.device), t.dtype, t._version)
                                  for t in itertools.chain(model.parameters(), model.buffers())))

#: Above this many texts, ``progress=None`` shows a progress bar.
PROGRESS_TEXTS = 256


def layer_indices(layer, num_layers: int) -> tuple[list[int], bool]:
    """Non-negative hidden-state indices (0 = embedding output, L = last layer) and whether one was asked, for an
    encoder of ``num_layers`` layers; refuses an index out of range."""
    total = num_layers + 1
    if layer == "all":
        return list(range(total)), False
    single = isinstance(layer, (int, np.integer)) and not isinstance(layer, bool)
    layers = [layer] if single else layer
    if not isinstance(layers, (list, tuple)) or not all(
        isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in layers
    ):
        raise TypeError(f"layer must be an int, a list of ints or 'all', got {layer!r}.")
    if not layers:
        raise ValueError(f"layer is an empty {type(layer).__name__}: there is no hidden state to return; pass at least "
                         f"one index (0..{num_layers}, or -1 for the last layer) or 'all'.")
    out = []
    for x in layers:
        if not -total <= x < total:
            raise ValueError(
                f"layer {x} is out of range: this encoder has {num_layers} layers, so hidden states 0..{num_layers} "
                f"(0 = embeddings, {num_layers} or -1 = last) exist."
            )
        out.append(int(x) % total)
    return out, single


def token_embeddings(
    encoder: Encoder,
    texts,
    *,
    layer=-1,
    special_tokens: bool = True,
    batch_size: int = 64,
    max_length: int | None = None,
    half: bool = False,
    progress: bool | None = None,
    prefix: str | None = None,
    cache: bool = True,
):
    """One ``(n_i, d)`` float32 array of token embeddings per text, in input order.

    Parameters
    ----------
    layer
        ``-1`` (final layer, the default), any hidden-state index ``0..L`` (0 = embedding output), a list of
        them, or ``"all"``. With a list or ``"all"`` the result is a dict ``{layer index: list of arrays}``.
    special_tokens
        Keep [CLS]/[SEP]-type tokens (the paper's convention). ``False`` drops them: every token whose id is one of
        the tokenizer's special tokens (``[UNK]`` aside, which stands for text), wherever it is, so the string
        ``"[SEP]"`` inside a text, which the tokenizer reads as the special token, is dropped too. Either way a text
        with no token of its own raises ``ValueError``: one without a visible character
        (:func:`socm_lib.checks.as_texts`), or one the tokenizer maps to special tokens only (for MiniLM a lone
        combining accent, a private-use character, or the text ``"[CLS][SEP][PAD]"``).
    max_length
        Truncation length in tokens, from the tokenizer's special-token count plus the prefix's tokens plus one (a
        text keeps at least one token of its own) to the model's limit (the default). Texts longer than it are
        truncated, with one warning giving their count. A prefix that leaves no room for a token of the text
        within the model's limit is refused.
    half
        On a GPU, run the forward pass in float16 (the returned clouds are still float32 arrays, and the library computes every statistic from them in float64).
        ``special_tokens``, ``half`` and ``cache`` must be ``True`` or ``False`` (:func:`socm_lib.checks.as_bool`).
    progress
        Show a progress bar on stderr; ``None`` shows one for more than 256 texts when stderr is a terminal.
    prefix
        Text put in front of every text before tokenization; ``None`` (default) takes the encoder's own
        (:attr:`Encoder.prefix`, from its registry entry: ``""`` for every registered encoder).
    cache
        Answer an identical earlier call from the cache and store this one (see the module docstring);
        ``False`` runs the forward passes and stores nothing (for timing an extraction).
    """
    batch_size, progress = as_int(batch_size, "batch_size", minimum=1), as_progress(progress)
    special_tokens, half, cache = as_bool(special_tokens, "special_tokens"), as_bool(half, "half"), as_bool(cache, "cache")
    if not isinstance(encoder, Encoder):
        raise TypeError(f"encoder must come from socm_lib.load_encoder(), got {type(encoder).__name__}.")
    texts = as_texts(texts)
    if prefix is not None and not isinstance(prefix, str):
        raise TypeError(f"prefix must be a string (for example 'passage: ') or None, got {prefix!r}.")
    prefix = encoder.prefix if prefix is None else prefix
    layers, single = layer_indices(layer, encoder.num_layers)
    tok = encoder.tokenizer
    model_limit = min(int(tok.model_max_length), int(encoder.model.config.max_position_embeddings))
    specials = tok.num_special_tokens_to_add(pair=False)
    prefix_tokens = len(tok(prefix, add_special_tokens=False, verbose=False)["input_ids"]) if prefix else 0
    shortest = specials + prefix_tokens + 1  # the special tokens, the prefix and one token of text
    if shortest > model_limit:
        raise ValueError(f"prefix {prefix[:40]!r} takes {prefix_tokens} tokens: with the {specials} special tokens "
                         f"that leaves no token of a text within this model's limit of {model_limit}; pass a shorter "
                         "prefix.")
    where = f" and the prefix takes {prefix_tokens}" if prefix_tokens else ""
    limit = model_limit if max_length is None else as_int(
        max_length, "max_length", minimum=shortest, maximum=model_limit,
        advice=f"Pass an integer in that range (this tokenizer adds {specials} special tokens to every text{where}, "
               f"and {model_limit} is this model's position limit), or None for the limit.")
    fp16 = half and encoder.device.type == "cuda"
    if cache:
        key = (id(encoder.model), id(tok), _model_state(encoder.model), tuple(texts), special_tokens, batch_size,
               limit, fp16, prefix)
        found = [_CLOUDS.get(key + (lay,)) for lay in layers]
        if all(entry is not None for entry in found):  # live entries only: an id is not reused while its object lives
            if found[0][3]:
                warnings.warn(f"{found[0][3]} of {len(texts)} texts are longer than max_length = {limit} tokens and "
                              "were truncated to it.", stacklevel=2)
            out = {lay: [c.copy() for c in entry[2]] for lay, entry in zip(layers, found)}
            return out[layers[0]] if single else out
    out, cut = _extract(encoder, texts, layers, special_tokens, batch_size, limit, fp16, progress, prefix)
    if cache:
        for lay in layers:  # a stored result is handed out as copies; one too large to store, as computed
            if _CLOUDS.put(key + (lay,), (weakref.ref(encoder.model), weakref.ref(tok), out[lay], cut)):
                out[lay] = [c.copy() for c in out[lay]]
    return out[layers[0]] if single else out


token_embeddings.cache_info = _CLOUDS.info
token_embeddings.cache_clear = _CLOUDS.clear


def _extract(encoder: Encoder, texts: list[str], layers: list[int], special_tokens: bool, batch_size: int,
             limit: int, fp16: bool, progress, prefix: str) -> tuple[dict, int]:
    """``({layer: clouds}, number of texts truncated)`` by the forward passes :func:`token_embeddings` describes."""
    tok = encoder.tokenizer
    texts = [prefix + t for t in texts] if prefix else texts
    full = tok(texts, truncation=False, add_special_tokens=True, verbose=False)["input_ids"]
    cut = sum(len(ids) > limit for ids in full)
    if cut:
        warnings.warn(f"{cut} of {len(texts)} texts are longer than max_length = {limit} tokens and were "
                      "truncated to it.", stacklevel=3)
    enc = tok(texts, truncation=True, max_length=limit)
    special = torch.tensor(sorted(set(tok.all_special_ids) - {tok.unk_token_id}), dtype=torch.long)
    empty = next((i for i, ids in enumerate(enc["input_ids"])
                  if bool(torch.isin(torch.tensor(ids, dtype=torch.long), special).all())), None)
    if empty is not None:  # before any forward pass: a text with no content of its own is refused at the door
        raise ValueError(f"texts[{empty}] ({texts[empty][:40]!r}) has no token of its own: the tokenizer maps it to "
                         "special tokens only, so its cloud would hold [CLS]/[SEP]-type tokens and nothing of the "
                         "text; remove that text or replace it with real text.")
    lengths = np.array([len(ids) for ids in enc["input_ids"]])
    if lengths.max() > limit:  # a tokenizer that cannot truncate to this length keeps texts whole: never pass that on
        raise ValueError(f"max_length = {limit}: this tokenizer left a text of {lengths.max()} tokens; pass a larger "
                         "max_length.")
    order = np.argsort(-lengths, kind="stable")
    device = encoder.device
    out = {lay: [None] * len(texts) for lay in layers}
    need_hidden = layers != [encoder.num_layers]  # intermediate layers asked for: keep every hidden state
    show = show_progress(progress, len(texts), PROGRESS_TEXTS)
    with tqdm(total=len(texts), disable=not show, file=sys.stderr, unit="text", desc="tokens") as bar:
        for start in range(0, len(texts), batch_size):
            idx = order[start : start + batch_size]
            feats = [{k: enc[k][i] for k in enc.keys()} for i in idx]
            batch = tok.pad(feats, return_tensors="pt")
            mask = batch["attention_mask"].bool()
            rows = mask if special_tokens else mask & ~torch.isin(batch["input_ids"], special)
            precision = torch.autocast("cuda", dtype=torch.float16) if fp16 else contextlib.nullcontext()
            with torch.inference_mode(), precision:
                inputs = {k: v.to(device) for k, v in batch.items()}
                result = encoder.model(**inputs, output_hidden_states=need_hidden)
            hidden = list(result.hidden_states) if need_hidden else [None] * (encoder.num_layers + 1)
            hidden[-1] = result.last_hidden_state  # the paper's final layer, exactly
            for lay in layers:
                h = hidden[lay].cpu()
                h = h if h.dtype == torch.float64 else h.float()  # a float64 model's clouds stay float64
                for r, i in enumerate(idx):
                    out[lay][i] = h[r][rows[r]].numpy()
            del result, hidden, inputs
            bar.update(len(idx))
    return out, cut
