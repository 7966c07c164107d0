"""Misuse is refused with a message, never turned into something that looks like a result."""

from __future__ import annotations

import numpy as np
import pytest

import socm_lib
from socm_lib import downstream, layers, protocol
from socm_lib.viz import display, widgets

SINGLE = r"is a single string; pass a list of texts"


@pytest.mark.parametrize("call", [
    lambda: layers.layer_profile(None, "A single sentence."),
    lambda: widgets.compare("all-minilm-l6", "untrained-minilm-l6", "A single sentence."),
    lambda: protocol.measure(None, "A single sentence."),
    lambda: protocol.paper_protocol(None, "A single sentence.", n_texts=3),
    lambda: downstream.pair_frame(None, "first text", ["second text"]),
    lambda: downstream.pair_frame(None, ["first text"], "second text"),
], ids=["layer_profile", "compare", "measure", "paper_protocol", "pair_frame a", "pair_frame b"])
def test_a_bare_string_is_not_a_list_of_texts(call):
    with pytest.raises(TypeError, match=SINGLE):
        call()


@pytest.mark.parametrize("a, b", [(np.nan, 0.5), (0.5, float("nan")), (np.float64("nan"), np.nan)])
def test_direction_refuses_nan(a, b):
    with pytest.raises(ValueError, match="NaN"):
        display.direction(a, b)


def test_direction_still_reads_numbers():
    assert display.direction(0.3, 0.2) == "higher"
    assert display.direction(0.2, 0.3) == "lower"
    assert display.direction(0.2, 0.20000001) == "equal"


S = np.array([[1.0, 0.3], [0.3, 0.5]])


@pytest.mark.parametrize("mu, exc, msg", [
    (np.array([1.0, 2.0j]), TypeError, "complex"),
    (np.array([[1.0, 2.0]]), ValueError, r"shape \(1, 2\); a mean must be a non-empty 1-D"),
    (np.array([1.0, np.nan]), ValueError, "NaN or inf"),
    (np.array([1.0, 2.0, 3.0]), ValueError, "mu1 has 3 entries but mu2 has 2"),
    (["a", "b"], TypeError, "dtype"),
    (np.zeros(0), ValueError, "non-empty"),
])
def test_gaussian_w2_checks_its_means(mu, exc, msg):
    with pytest.raises(exc, match=msg):
        socm_lib.gaussian_w2_sq(mu, S, np.zeros(2), S)


def test_gaussian_w2_means_must_match_the_covariances():
    with pytest.raises(ValueError, match=r"the means have 3 entries but S1 is \(2, 2\)"):
        socm_lib.gaussian_w2_sq(np.zeros(3), S, np.ones(3), S)
    # lists and tensors of the right length are fine
    assert socm_lib.gaussian_w2_sq([0.0, 0.0], S, [2.0, 0.0], S) == pytest.approx(4.0, abs=1e-12)


def test_non_symmetric_covariance_is_refused():
    bad = np.array([[1.0, 0.3], [0.1, 0.5]])
    for call in (lambda: socm_lib.bures_wasserstein_sq(bad, S), lambda: socm_lib.psd_sqrt(bad),
                 lambda: socm_lib.fidelity(S, bad)):
        with pytest.raises(ValueError, match=r"not symmetric .*tolerance 1e-08"):
            call()


def test_indefinite_covariance_is_refused():
    bad = np.array([[1.0, 0.0], [0.0, -0.2]])
    with pytest.raises(ValueError, match=r"not positive semi-definite: its smallest eigenvalue is -0\.2"):
        socm_lib.bures_wasserstein_sq(S, bad)
    with pytest.raises(ValueError, match="not positive semi-definite"):
        socm_lib.gaussian_w2_sq(np.zeros(2), bad, np.zeros(2), S)


def test_round_off_is_still_clamped():
    u = np.array([0.6, 0.8])
    tiny = np.outer(u, u) - 1e-13 * np.eye(2)  # smallest eigenvalue -1e-13: round-off, accepted
    tiny[0, 1] += 1e-14  # and an asymmetry of round-off size
    v = socm_lib.bures_wasserstein_sq(tiny, np.outer(u, u))
    assert np.isfinite(v) and 0.0 <= v < 1e-6
    np.testing.assert_allclose(socm_lib.psd_sqrt(tiny).numpy(), np.outer(u, u), atol=1e-6)
