"""The d_mu-d_sigma scatter coloured by point density, and the side-by-side grid of such panels."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from socm_lib.pairs import PairResult  # noqa: E402
from socm_lib.viz import plots  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def fake(n, seed=0):
    rng = np.random.default_rng(seed)
    dm = np.concatenate([rng.normal(0.3, 0.02, n // 2), rng.uniform(0, 1, n - n // 2)])
    ds = np.concatenate([rng.normal(0.6, 0.02, n // 2), rng.uniform(0, 1.4, n - n // 2)])
    i, j = np.triu_indices(200, k=1)
    return PairResult(i=i[:n], j=j[:n], d_mu=dm, d_sigma=ds, socm=(1 - dm) * ds)


def test_point_density_counts_points_in_the_same_cell():
    rng = np.random.default_rng(3)
    x, y = rng.random(500), rng.random(500)
    dens = plots.point_density(x, y, bins=7)
    xe = np.linspace(x.min(), x.max(), 8)
    ye = np.linspace(y.min(), y.max(), 8)
    cell = lambda v, e: np.minimum(np.searchsorted(e, v, side="right") - 1, 6)  # noqa: E731
    cx, cy = cell(x, xe), cell(y, ye)
    brute = np.array([np.sum((cx == cx[k]) & (cy == cy[k])) for k in range(500)])
    assert np.array_equal(dens, brute) and dens.sum() == np.sum(brute)


def test_density_colouring_marks_the_crowded_region():
    res = fake(4000)
    fig = plots.scatter_dmu_dsigma(res, title="enc", density=True)
    main = fig.axes[0]
    assert len(fig.axes) == 4 and any("pairs per cell" in ax.get_ylabel() for ax in fig.axes)
    coll = main.collections[0]
    values, pts = coll.get_array(), coll.get_offsets()
    assert np.all(np.diff(values) >= 0)  # drawn from sparse to dense
    crowded = (np.abs(pts[:, 0] - 0.3) < 0.02) & (np.abs(pts[:, 1] - 0.6) < 0.02)
    assert values[crowded].mean() > 10 * np.median(values[~crowded])
    plain = plots.scatter_dmu_dsigma(res)
    assert any(ax.get_ylabel() == "SOCM" for ax in plain.axes)


def test_grid_has_one_panel_per_run():
    fig = plots.scatter_dmu_dsigma_grid({"a": fake(300), "b": fake(500, 1)})
    assert len(fig.axes) == 8
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["a\n300 pairs", "b\n500 pairs"]
    with pytest.raises(ValueError, match="non-empty mapping"):
        plots.scatter_dmu_dsigma_grid({})
    with pytest.raises(TypeError, match="PairResult"):
        plots.scatter_dmu_dsigma_grid({"a": [1, 2]})
