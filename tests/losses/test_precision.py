"""Every loss on float16 / bfloat16 / float32 / float64 input and under CPU autocast (bfloat16).

Half-precision inputs are computed in float32 (:mod:`rankmetric.losses.precision`): the value
and the gradient come back in the input's dtype, close to the float64 result of the same
(rounded) input; under autocast the loss is float32, as torch's own losses.
"""

from __future__ import annotations

import pytest
import torch

from rankmetric.losses import (
    LiftedStructureLoss,
    MultiSimilarityLoss,
    NPairLoss,
    ProxyNCALoss,
    RiemannianPotatoLoss,
    SimilarityRegressionLoss,
    TripletLoss,
    WARPLoss,
)

N_CLASSES, PER_CLASS, DIM = 3, 4, 5
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
TOLERANCE = {torch.float16: 2e-2, torch.bfloat16: 5e-2, torch.float32: 1e-5, torch.float64: 1e-12}


def _bits(dtype):
    return torch.finfo(dtype).bits


def _proxy_nca(dtype=torch.float32):
    gen = torch.Generator().manual_seed(0)
    return ProxyNCALoss(N_CLASSES, DIM, generator=gen, dtype=dtype)


LOSSES = {
    "warp": lambda dtype: WARPLoss(),
    "lifted": lambda dtype: LiftedStructureLoss(),
    "lifted-generalized": lambda dtype: LiftedStructureLoss(form="generalized"),
    "multi-similarity": lambda dtype: MultiSimilarityLoss(),
    "npair": lambda dtype: NPairLoss(),
    # float32 proxies serve half-precision embeddings; float64 embeddings need float64 proxies
    "proxy-nca": lambda dtype: _proxy_nca(max(dtype, torch.float32, key=_bits)),
    "potato": lambda dtype: RiemannianPotatoLoss(),
    "similarity": lambda dtype: SimilarityRegressionLoss(),
    "triplet-all": lambda dtype: TripletLoss(),
    "triplet-semihard": lambda dtype: TripletLoss(mining="semihard"),
}


def _batch(dtype):
    gen = torch.Generator().manual_seed(0)
    labels = torch.arange(N_CLASSES).repeat(PER_CLASS)
    emb = torch.randn(N_CLASSES * PER_CLASS, DIM, generator=gen, dtype=torch.float64)
    emb = torch.nn.functional.normalize(emb + 0.8 * torch.nn.functional.one_hot(labels, DIM), dim=1)
    return emb.to(dtype), labels


def _make(name, dtype):
    loss = LOSSES[name](dtype)
    return loss if not isinstance(loss, ProxyNCALoss) or dtype != torch.float64 else loss.double()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_in_every_floating_dtype(name, dtype):
    emb, labels = _batch(dtype)
    x = emb.clone().requires_grad_()
    value = _make(name, dtype)(x, labels)
    value.backward()
    assert value.dtype == dtype and x.grad.dtype == dtype
    assert torch.isfinite(value) and torch.isfinite(x.grad).all()
    reference = emb.double().requires_grad_()
    expected = _make(name, torch.float64)(reference, labels)
    expected.backward()
    tol = TOLERANCE[dtype]
    assert value.double().item() == pytest.approx(expected.item(), rel=tol, abs=tol)
    torch.testing.assert_close(x.grad.double(), reference.grad, rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_under_cpu_autocast_bfloat16(name):
    emb, labels = _batch(torch.float32)
    net = torch.nn.Linear(DIM, DIM)
    loss_fn = _make(name, torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = net(emb)
        assert out.dtype == torch.bfloat16
        value = loss_fn(out, labels)
    assert value.dtype == torch.float32 and torch.isfinite(value)
    value.backward()
    assert torch.isfinite(net.weight.grad).all() and net.weight.grad.abs().sum() > 0


def test_proxy_nca_under_autocast_trains_its_float32_proxies():
    """The dtype error of issue 24: bfloat16 embeddings against float32 proxies."""
    emb, labels = _batch(torch.float32)
    loss_fn = _proxy_nca()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        value = loss_fn(torch.nn.Linear(DIM, DIM)(emb), labels)
    value.backward()
    assert loss_fn.proxies.grad.dtype == torch.float32 and loss_fn.proxies.grad.abs().sum() > 0


def test_spd_potato_on_half_precision_matrices():
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(12, 3, 3, generator=gen, dtype=torch.float64)
    spd = a @ a.mT + torch.eye(3, dtype=torch.float64)
    labels = torch.arange(3).repeat(4)
    for dtype in (torch.float16, torch.bfloat16):
        x = spd.to(dtype).requires_grad_()
        value = RiemannianPotatoLoss()(x, labels)
        value.backward()
        assert value.dtype == dtype and torch.isfinite(x.grad.float()).all()


def test_float32_input_outside_autocast_is_untouched():
    emb, labels = _batch(torch.float32)
    loss = TripletLoss()
    assert loss(emb, labels).dtype == torch.float32
    assert torch.equal(loss(emb, labels), loss.forward.__wrapped__(loss, emb, labels))
