"""Tasks of notebook 6 (the concentration ratio through the layers): the "Your turn" section."""

from __future__ import annotations

from functools import cache

from . import Task, register

SAMPLE = 60  # texts of the task sample
SAMPLE_SEED = 1


@cache
def _profile(name: str):
    from ..data import corpus, sample_texts
    from ..encoders import load_encoder
    from ..layers import layer_profile

    texts = sample_texts(list(corpus()["text"]), SAMPLE, SAMPLE_SEED)
    return layer_profile(load_encoder(name), texts, progress=False)


def _drop_layer() -> int:
    from ..layers import largest_drop

    return int(largest_drop(_profile("all-minilm-l6")))


def _shrink() -> float:
    c = _profile("all-minilm-l6").sort_values("layer")["concentration_ratio"]
    return float(c.iloc[-1] / c.iloc[0])


register(
    Task(
        id="nb06.1",
        question=f"On {SAMPLE} corpus texts (seed {SAMPLE_SEED}), the layer at which the mean concentration ratio "
                 "of all-minilm-l6 falls by the largest amount from the layer before.",
        expected=_drop_layer,
        kind="integer",
        hint="Run socm_lib.layers.layer_profile on the sample and pass it to socm_lib.layers.largest_drop; layers "
             "count from 0 (the embedding output).",
        wrong_example=6,
    ),
    Task(
        id="nb06.2",
        question="On the same texts, all-minilm-l6's mean concentration ratio at the final layer divided by its "
                 "mean concentration ratio at the embedding output.",
        expected=_shrink,
        kind="number", rtol=1e-3, atol=1e-4,
        hint="Divide the 'concentration_ratio' column at the last layer by the one at layer 0 (a number below 1 if "
             "the concentration ratio falls).",
        wrong_example=1.0,
    ),
)
