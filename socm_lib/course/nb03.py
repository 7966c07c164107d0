r"""Tasks of notebook 3 (extraction): the length of a token cloud and a concentration ratio under all-minilm-l6."""

from __future__ import annotations

from functools import cache

from . import Task, register

#: The sentence of both tasks.
SENTENCE = "Unbelievably, the tokenizer splits uncommon words into several pieces."


@cache  # both tasks read the same cloud
def _cloud(special_tokens: bool = True):
    """The final-layer token cloud of :data:`SENTENCE` under all-minilm-l6, shape ``(n, 384)``."""
    from ..encoders import load_encoder
    from ..extract import token_embeddings

    return token_embeddings(load_encoder("all-minilm-l6"), [SENTENCE], special_tokens=special_tokens,
                            progress=False)[0]


def _concentration() -> float:
    from ..stats import concentration_ratio

    return concentration_ratio(_cloud())


register(
    Task(
        id="nb03.1",
        question="How many rows n has the token cloud of SENTENCE under all-minilm-l6 (special tokens kept)?",
        expected=lambda: int(_cloud().shape[0]),
        kind="integer",
        hint="Count the WordPiece pieces, not the words, and remember [CLS] and [SEP].",
        wrong_example=len(SENTENCE.split()),  # the number of words
    ),
    Task(
        id="nb03.2",
        question="The concentration ratio c = S / |m|^2 of SENTENCE under all-minilm-l6 (final layer, special tokens kept).",
        expected=_concentration,
        kind="number",
        rtol=1e-4,  # float32 extraction
        atol=0.0,
        close_rtol=1e-3,  # dropping the special tokens moves c by only 0.25 %
        hint="Use the final layer with the special tokens kept, the population spread S (divide by n) and the raw mean.",
        wrong_example=2.6892,  # the ratio with the special tokens dropped
    ),
)
