"""The batched-torch path of the engine (the one a GPU takes), run on the CPU against the default numpy path."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib import block_math
from socm_lib.checks import as_device


def ragged_clouds(seed: int, n_texts: int = 60, d: int = 24):
    """Texts of 1 to 45 tokens (one-token clouds included) around a shared direction."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 46, n_texts)
    lengths[:3] = 1
    base = rng.normal(size=d)
    return [base + 0.7 * rng.normal(size=(n, d)) for n in lengths]


def assert_same(a, b, rtol=1e-10):
    np.testing.assert_array_equal(a.i, b.i)
    np.testing.assert_array_equal(a.j, b.j)
    for col in ("d_mu", "d_sigma", "socm"):
        x, y = getattr(a, col), getattr(b, col)
        scale = np.abs(x).max()
        assert np.max(np.abs(x - y)) <= rtol * scale, col


def test_torch_backend_all_pairs_matches_numpy():
    clouds = ragged_clouds(0)
    assert_same(socm_lib.socm_pairs(clouds, device="cpu", backend="torch"), socm_lib.socm_pairs(clouds, device="cpu"))


def test_torch_backend_listed_pairs_matches_numpy():
    clouds = ragged_clouds(1)
    rng = np.random.default_rng(1)
    pairs = rng.integers(0, len(clouds), size=(500, 2))
    pairs[:5] = [(0, 1), (1, 0), (0, 0), (2, 40), (40, 2)]  # one-token clouds, both orders, a text with itself
    a = socm_lib.socm_pairs(clouds, pairs, device="cpu", backend="torch")
    b = socm_lib.socm_pairs(clouds, pairs, device="cpu", backend="numpy")
    assert_same(a, b)
    # one-token clouds: Sigma = 0, so d_sigma is the other text's tr(Sigma) / 4
    assert a.d_sigma[0] == 0.0


def test_torch_backend_small_svd_batches_and_blocks(monkeypatch):
    """Batches cut at a few matrices per SVD call, and tiny blocks, give the same numbers."""
    clouds = ragged_clouds(2, n_texts=40)
    ref = socm_lib.socm_pairs(clouds, device="cpu")
    monkeypatch.setattr(block_math, "SVD_BATCH", 3)
    monkeypatch.setattr(block_math, "SVD_BATCH_ELEMS", 3 * 32 * 32)
    assert block_math._svd_batch(4, 4) == 3 and block_math._svd_batch(40, 40) == 1
    assert_same(socm_lib.socm_pairs(clouds, device="cpu", backend="torch", block_elems=5000), ref)


def test_svd_batch_cap():
    assert block_math._svd_batch(8, 8) == block_math.SVD_BATCH
    assert block_math._svd_batch(32, 32) == block_math.SVD_BATCH
    assert block_math._svd_batch(64, 64) == block_math.SVD_BATCH // 4
    assert block_math._svd_batch(10_000, 10_000) == 1


def test_torch_backend_float32_is_close():
    clouds = ragged_clouds(3, n_texts=30)
    a = socm_lib.socm_pairs(clouds, device="cpu", backend="torch", dtype=torch.float32)
    b = socm_lib.socm_pairs(clouds, device="cpu")
    assert_same(a, b, rtol=1e-5)


def _matmul_settings_seen(monkeypatch) -> list:
    """``(allow_tf32, float32 matmul precision)`` at every product of the engine's blocks, appended as they run."""
    seen = []
    real = block_math._matmul_t

    def spy(left, right, use_torch):
        seen.append((torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()))
        return real(left, right, use_torch)

    monkeypatch.setattr(block_math, "_matmul_t", spy)
    return seen


@pytest.mark.parametrize("dtype,inside", [(torch.float32, (False, "highest")), (torch.float64, (True, "medium"))],
                         ids=["float32", "float64"])
def test_tf32_is_off_while_float32_products_run_and_restored(monkeypatch, dtype, inside):
    """Float32 products run with TF32 off; float64 products never use TF32, so a float64 run changes nothing."""
    seen = _matmul_settings_seen(monkeypatch)
    before = (torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision())
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.set_float32_matmul_precision("medium")
        socm_lib.socm_pairs(ragged_clouds(4, n_texts=10), device="cpu", backend="torch", dtype=dtype)
        assert seen and all(s == inside for s in seen)
        assert torch.backends.cuda.matmul.allow_tf32 is True
        assert torch.get_float32_matmul_precision() == "medium"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before[0]
        torch.set_float32_matmul_precision(before[1])


def test_bad_backend():
    clouds = ragged_clouds(5, n_texts=4)
    with pytest.raises(ValueError, match="backend must be one of 'auto', 'numpy', 'torch'"):
        socm_lib.socm_pairs(clouds, backend="cupy")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without a GPU")
@pytest.mark.parametrize("call", [
    lambda: socm_lib.socm_pairs(ragged_clouds(6, n_texts=4), device="cuda"),
    lambda: socm_lib.socm_summary(ragged_clouds(6, n_texts=4), device="cuda:0"),
    lambda: socm_lib.load_encoder("untrained-minilm-l6", device="cuda"),
    lambda: as_device(torch.device("cuda")),
])
def test_cuda_on_a_cpu_machine_is_refused_up_front(call):
    with pytest.raises(ValueError, match=r"asks for a CUDA GPU, but this machine has none.*device='cpu'"):
        call()


def test_as_device():
    assert as_device("cpu") == torch.device("cpu")
    assert as_device(None).type in ("cpu", "cuda")
    with pytest.raises(ValueError, match="not a device name"):
        as_device("gpu")
    with pytest.raises(ValueError, match="only 'cpu', 'cuda' and 'mps'"):
        as_device("meta")
    with pytest.raises(TypeError, match="device must be None, a string"):
        as_device(0.5)
