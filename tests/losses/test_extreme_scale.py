"""Every loss at extreme scales (issue #27, item 3): a finite value with finite gradients, or an
error; never a silent inf or nan.

Embeddings of a small labelled batch are scaled by 1e-20 … 1e20 in float32 and float64. A loss
may raise (a ``ValueError`` naming the scale, or ``FloatingPointError``/``OverflowError``), but
when it returns, the value and the gradient with respect to the embeddings must be finite — and
right: the float32 result agrees with the float64 one at the same scale. A float32 refusal is
only allowed where the loss itself is beyond float32's range (its float64 value is larger than
the largest float32).

The distances are computed on embeddings divided by a power of two (exact), so they are finite
wherever the distance is; :func:`rankmetric.losses.base.finite_loss` refuses the rest.
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
    paired_distance,
    pairwise_distance,
    pairwise_similarity,
)
from rankmetric.losses.pair_distances import power_of_two_scale, unit_rows

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

N_CLASSES, PER_CLASS, DIM = 3, 4, 5
SCALES = [1e-20, 1e-10, 1e10, 1e15, 1e20]
DTYPES = {"float32": torch.float32, "float64": torch.float64}
ERRORS = (ValueError, FloatingPointError, OverflowError)
FLOAT32_MAX = torch.finfo(torch.float32).max


def _proxy_nca(dtype):
    gen = torch.Generator().manual_seed(0)
    return ProxyNCALoss(N_CLASSES, DIM, generator=gen, dtype=dtype)


LOSSES = {
    "warp": lambda dtype: WARPLoss(),
    "lifted-original": lambda dtype: LiftedStructureLoss(),
    "lifted-generalized": lambda dtype: LiftedStructureLoss(form="generalized"),
    "multi-similarity": lambda dtype: MultiSimilarityLoss(),
    "npair": lambda dtype: NPairLoss(),
    "proxy-nca": _proxy_nca,
    "potato": lambda dtype: RiemannianPotatoLoss(),
    "similarity": lambda dtype: SimilarityRegressionLoss(),
    "triplet-all": lambda dtype: TripletLoss(),
    "triplet-hard": lambda dtype: TripletLoss(mining="hard"),
    "triplet-semihard": lambda dtype: TripletLoss(mining="semihard"),
}

#: (loss, scale) whose float32 value overflows float32 (the loss grows like the scale squared,
#: or to the fourth power for the similarity regression): they must raise in float32.
OVERFLOWING_FLOAT32 = {
    ("lifted-original", 1e20),  # ½ [J]₊² with J ≈ a distance: about 3e39
    ("npair", 1e20),  # inner-product logits: about 5e39
    ("similarity", 1e10),  # squared residuals of inner products: about 2e39
    ("similarity", 1e15),
    ("similarity", 1e20),
}


def _batch(dtype, scale):
    gen = torch.Generator().manual_seed(0)
    labels = torch.arange(N_CLASSES).repeat(PER_CLASS)
    emb = torch.randn(N_CLASSES * PER_CLASS, DIM, generator=gen, dtype=torch.float64)
    emb = emb + 0.8 * torch.nn.functional.one_hot(labels, DIM)
    emb = torch.nn.functional.normalize(emb, dim=1) * scale
    return emb.to(dtype).requires_grad_(True), labels


def _value_and_grad(name, dtype, scale):
    """``(value, gradient)`` of a loss at a scale, or the error it raised."""
    emb, labels = _batch(DTYPES[dtype], scale)
    try:
        value = LOSSES[name](DTYPES[dtype])(emb, labels)
    except ERRORS as error:
        return error
    (grad,) = torch.autograd.grad(value.sum(), emb, allow_unused=True)
    return value, grad


def _cases():
    for name in LOSSES:
        for dtype in DTYPES:
            for scale in SCALES:
                yield pytest.param(name, dtype, scale, id=f"{name}-{dtype}-{scale:g}")


@pytest.mark.parametrize(("name", "dtype", "scale"), list(_cases()))
def test_finite_value_and_gradient_or_an_error(name, dtype, scale):
    result = _value_and_grad(name, dtype, scale)
    if isinstance(result, Exception):
        return  # refusing is allowed; a silent non-finite value is not
    value, grad = result
    assert torch.isfinite(value).all(), f"{name} returned {value} at scale {scale:g} ({dtype})"
    assert grad is None or torch.isfinite(grad).all(), f"{name}: non-finite gradient"


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", list(LOSSES))
def test_float32_is_right_and_refuses_only_what_overflows(name, scale):
    """float32 agrees with float64 wherever the loss fits in float32, and raises elsewhere."""
    exact = _value_and_grad(name, "float64", scale)
    assert not isinstance(exact, Exception), f"{name} raised in float64 at {scale:g}: {exact}"
    result = _value_and_grad(name, "float32", scale)
    if (name, scale) in OVERFLOWING_FLOAT32:
        assert (
            float(exact[0].detach().abs()) > FLOAT32_MAX
        )  # the float64 value does not fit in float32
        assert isinstance(result, ValueError), f"{name} returned {result} at {scale:g}"
        message = str(result)
        assert "magnitude up to" in message and "Normalise the embeddings" in message
        assert f"{float(_batch(torch.float32, scale)[0].detach().abs().max()):.3g}" in message
        return
    assert not isinstance(result, Exception), f"{name} refused a representable loss: {result}"
    (value, grad), (value64, grad64) = result, exact
    torch.testing.assert_close(value.double(), value64, rtol=1e-4, atol=0)
    assert float((grad.double() - grad64).norm()) <= 1e-4 * float(grad64.norm()) + 1e-300


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_distances_are_exactly_homogeneous_over_powers_of_two(dtype):
    """``d(2^k x) = 2^k d(x)`` bit for bit, from 2^-60 to 2^100 (the squares of the latter
    overflow float32): the rescaled form is the plain one at every scale."""
    gen = torch.Generator().manual_seed(1)
    x, y = (
        torch.randn(7, 4, generator=gen, dtype=dtype),
        torch.randn(5, 4, generator=gen, dtype=dtype),
    )
    base = pairwise_distance(x, "euclidean", y)
    base_self = pairwise_distance(x, "euclidean")
    base_paired = paired_distance(x, y[:1].expand_as(x), "euclidean")
    for k in (-60, -30, 30, 66, 100):
        s = 2.0**k
        assert torch.equal(pairwise_distance(x * s, "euclidean", y * s), base * s)
        assert torch.equal(pairwise_distance(x * s, "euclidean"), base_self * s)
        assert torch.equal(paired_distance(x * s, (y[:1] * s).expand_as(x)), base_paired * s)
        assert torch.equal(
            pairwise_similarity(x * s, "cosine", y * s), pairwise_similarity(x, "cosine", y)
        )


def test_distances_at_1e20_in_float32_match_float64():
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(6, 3, generator=gen, dtype=torch.float64) * 1e20
    reference = torch.cdist(x, x)
    for metric, expected in (("euclidean", reference), ("cosine", 1 - pairwise_similarity(x))):
        got = pairwise_distance(x.float(), metric)
        assert torch.isfinite(got).all()
        torch.testing.assert_close(
            got.double(), expected, rtol=1e-5, atol=1e-5 * float(expected.max())
        )
    # the squared distance is about 1e40 here: beyond float32, so inf is its true value
    assert torch.isinf(pairwise_distance(x.float(), "sqeuclidean")[0, 1])
    assert pairwise_distance(x.float(), "sqeuclidean").diagonal().eq(0).all()  # no inf · 0 = nan


def test_unit_rows_normalise_at_any_scale_with_finite_gradients():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(4, 6, generator=gen)
    expected = torch.nn.functional.normalize(x.double(), dim=1)
    for scale in (1e-30, 1e-20, 1.0, 1e20, 1e38):
        emb = (x * scale).requires_grad_(True)
        unit = unit_rows(emb)
        torch.testing.assert_close(unit.double(), expected, rtol=1e-6, atol=1e-6)
        (grad,) = torch.autograd.grad((unit * torch.arange(6.0)).sum(), emb)
        assert torch.isfinite(grad).all()
    zero = torch.zeros(2, 3, requires_grad=True)
    assert torch.equal(unit_rows(zero), torch.zeros(2, 3))
    # a subnormal row is floored (as normalize's eps does), so its gradient stays finite
    tiny = torch.full((1, 3), 1e-42, requires_grad=True)
    (grad,) = torch.autograd.grad(unit_rows(tiny).sum(), tiny)
    assert torch.isfinite(grad).all()


def test_power_of_two_scale():
    x = torch.tensor([[3.0, -5.0], [0.25, 0.0]])
    assert float(power_of_two_scale(x)) == 4.0  # 4 <= 5 < 8
    assert float(power_of_two_scale(x, torch.tensor([9.0]))) == 8.0
    assert power_of_two_scale(x, dim=1).flatten().tolist() == [4.0, 0.25]
    assert float(power_of_two_scale(torch.zeros(3))) == 0.5  # any power of two would do
    assert float(power_of_two_scale(torch.tensor([3.4e38]))) == 2.0**127  # no overflow
    assert float(power_of_two_scale(torch.tensor([1e-45]))) == 2.0**-149  # subnormal: exact
    assert not power_of_two_scale(x.requires_grad_()).requires_grad


def test_a_non_finite_result_of_finite_embeddings_raises():
    """The guard also catches an injected distance or a half-precision result that overflows."""
    emb, labels = _batch(torch.float32, 1.0)

    def infinite(x, y):
        return torch.cdist(x, y) * torch.inf

    with pytest.raises(ValueError, match=r"TripletLoss is (inf|NaN) for finite embeddings"):
        TripletLoss(distance=infinite)(emb, labels)
    with pytest.raises(ValueError, match="overflows float16"):  # about 1e5 > 65504
        NPairLoss()((emb * 1000).half(), labels)
    for reduction in ("sum", "none"):
        with pytest.raises(ValueError, match="magnitude up to"):
            SimilarityRegressionLoss(reduction=reduction)(emb * 1e12, labels)
    with pytest.raises(ValueError, match="magnitude up to"):
        SimilarityRegressionLoss().pairs(emb * 1e12, emb * 1e12, torch.ones(emb.shape[0]))


def test_compiled_loss_is_finite_at_extreme_scale():
    """The rescaled distances trace into a full graph and agree with eager mode at 1e20."""
    torch._dynamo.reset()
    try:
        loss = TripletLoss(mining="hard")
        compiled = torch.compile(TripletLoss(mining="hard"), fullgraph=True, backend="aot_eager")
        emb, labels = _batch(torch.float32, 1e20)
        emb2 = emb.detach().clone().requires_grad_(True)
        expected, value = loss(emb, labels), compiled(emb2, labels)
        expected.backward()
        value.backward()
        assert torch.isfinite(value) and torch.isfinite(emb2.grad).all()
        torch.testing.assert_close(value, expected)
        torch.testing.assert_close(emb2.grad, emb.grad)
    finally:
        torch._dynamo.reset()
