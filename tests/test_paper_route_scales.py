"""The paper's route at the edges of its arithmetic: never a zero it cannot stand behind.

At each scale of the clouds the route either agrees with the exact engine (to its known bias and float32 round-off)
or refuses with a ValueError that names the cause; the exact engine, scale-free, gives the same numbers at every
scale. Before, clouds scaled by >= 1e19 (float32), >= 1e155 (float64) or <= 1e-25 (both) came back as exact zeros,
and 1e200 in float32 as an eigh that failed to converge."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib.authors_route import MIN_MEAN_NORM

RNG = np.random.default_rng(19)
CLOUDS = [RNG.normal(size=(n, 8)) + 1.0 for n in (4, 6, 5)]
EXACT = socm_lib.socm_pairs(CLOUDS, progress=False)
#: The route's regulariser lowers d_sigma by about (d - r) sqrt(1e-9) / 2 <= 8e-5 here; float32 adds round-off.
TOLERANCE = 1e-3

OVER32, OVER64 = "overflows for a mean norm above about 1.8e\\+19", "overflows for a mean norm above about 1.3e\\+154"
FLOAT32 = {1e-30: "below 1e-10", 1e-25: "below 1e-10", 1e-8: None, 1.0: None, 1e18: None, 1e19: OVER32, 1e20: OVER32,
           1e200: "entries beyond float32's range"}
FLOAT64 = {1e-300: "below 1e-10", 1e-25: "below 1e-10", 1e-8: None, 1.0: None, 1e150: None, 1e155: OVER64,
           1e200: OVER64}


@pytest.mark.parametrize("dtype,scale,refusal", [(torch.float32, s, r) for s, r in FLOAT32.items()]
                         + [(torch.float64, s, r) for s, r in FLOAT64.items()],
                         ids=lambda v: str(v).removeprefix("torch."))
def test_the_route_agrees_with_the_engine_or_refuses(dtype, scale, refusal):
    clouds = [c * scale for c in CLOUDS]
    exact = socm_lib.socm_pairs(clouds, progress=False)
    np.testing.assert_allclose(exact.socm, EXACT.socm, rtol=1e-12)  # the engine: the same at every scale
    if refusal is None:
        route = socm_lib.paper_route(clouds, dtype=dtype)
        assert (route.socm > 0).all()
        np.testing.assert_allclose(route.socm, exact.socm, rtol=0, atol=TOLERANCE)
        np.testing.assert_allclose(route.d_mu, exact.d_mu, rtol=0, atol=TOLERANCE)
    else:
        with pytest.raises(ValueError, match=rf"clouds\[0\].*{refusal}"):
            socm_lib.paper_route(clouds, dtype=dtype)


def test_the_small_scale_shift_is_what_the_docstring_says():
    """Dividing by the norm plus 1e-12 lowers d_mu and d_sigma by about 2e-12 / ||mu|| relative (float64: no round-off
    hides it); refused below MIN_MEAN_NORM, where it would pass 2 %."""
    base = socm_lib.paper_route(CLOUDS, dtype=torch.float64)
    norms = np.array([np.linalg.norm(c.mean(axis=0)) for c in CLOUDS])
    for scale in (1e-6, 1e-8, 1e-9):
        route = socm_lib.paper_route([c * scale for c in CLOUDS], dtype=torch.float64)
        predicted = 2e-12 / (scale * norms)
        shift = 1 - route.d_sigma / base.d_sigma
        assert (shift > 0).all() and (predicted.min() * 0.5 < shift).all() and (shift < predicted.max() * 1.5).all()
    just_above = [c * (1.01 * MIN_MEAN_NORM / norms.min()) for c in CLOUDS]
    assert (socm_lib.paper_route(just_above, dtype=torch.float64).socm > 0).all()
    with pytest.raises(ValueError, match=r"clouds\[0\] has a mean norm of 9.9e-11, below 1e-10"):
        socm_lib.paper_route([c * (0.99 * MIN_MEAN_NORM / norms[0]) for c in CLOUDS], dtype=torch.float64)
