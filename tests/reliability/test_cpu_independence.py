"""Same seed, same model on any CPU: a last-bit change of the input moves no model beyond rounding.

Another CPU (other BLAS or LAPACK kernels, another summation order) changes results in their
last bits. A fit must not amplify that: every public estimator is fitted on its data and on the
data with every entry moved by one ulp (random signs; SPD matrices kept symmetric), and the two
models' transforms of the same data must agree to :data:`REL_TOL` of their largest magnitude,
the tolerance ``tests/test_fixed_seed_fits.py`` applies on a CPU other than the recording one
(``docs/reliability.md``, "Determinism across CPUs"). The causes found and removed (#32) each have
a test here: a head bias Adam drove with rounding noise, eigenvector signs, an exact tie of the
one-standard-error rule decided by rounding.

Run the suite under other kernels to emulate another CPU, e.g.
``ATEN_CPU_CAPABILITY=default``, ``MKL_CBWR=COMPATIBLE`` or ``OPENBLAS_CORETYPE=Sandybridge``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

#: Largest change of a fitted model's transform, relative to its largest magnitude, that a
#: one-ulp change of the input (or another CPU) may cause.
REL_TOL = 1e-4


def one_ulp(X: np.ndarray, seed: int = 1) -> np.ndarray:
    """``X`` with every entry moved by one ulp of its dtype, up or down at random (symmetric
    matrices stay symmetric)."""
    sign = np.random.default_rng(seed).choice(np.array([-1, 1], dtype=X.dtype), size=X.shape)
    if X.ndim == 3:
        upper = np.triu(sign)
        sign = upper + np.swapaxes(np.triu(sign, 1), 1, 2)
    return X + sign * np.spacing(X)


def _fit_transform(spec, X_fit, y, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few iterations: convergence warnings expected
        return np.asarray(spec.make().fit(X_fit, y).transform(X), dtype=np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_one_ulp_change_of_the_input_moves_the_model_within_tolerance(spec, dtype):
    X, y = spec.data()
    X = X.astype(dtype)
    X_moved = one_ulp(X)
    assert np.count_nonzero(X_moved != X) == X.size
    Z = _fit_transform(spec, X, y, X)
    Z_moved = _fit_transform(spec, X_moved, y, X)
    change = np.abs(Z_moved - Z).max() / np.abs(Z).max()
    assert change <= REL_TOL, f"{spec.name}: a one-ulp change of X moved the model by {change:.3g}"


# ---------------------------------------------------------------- the causes, one by one


def test_a_translation_invariant_loss_leaves_the_head_bias_at_zero():
    """The potato (and the Euclidean triplet and lifted losses) cannot see a head's bias: its
    gradient is rounding noise, which Adam scaled up to full steps (0.07 after 15 steps)."""
    from rankmetric import RPLEmbedding, SPDNetEmbedding
    from rankmetric.datasets import make_spd_clusters

    X, y = make_spd_clusters(36, n_channels=4, n_classes=3, random_state=0)
    params = {"hidden_sizes": 3, "max_iter": 10, "validation_fraction": 0.0, "random_state": 0}
    for model in (RPLEmbedding(**params), SPDNetEmbedding(loss="lifted", **params)):
        model.fit(X, y)
        assert np.array_equal(model.head_bias_, np.zeros_like(model.head_bias_))
    # a loss that sees the translation (cosine similarities) trains the bias
    model = SPDNetEmbedding(loss="multi-similarity", **params).fit(X, y)
    assert np.abs(model.head_bias_).max() > 0


def test_principal_axes_have_a_sign_independent_of_the_lapack():
    from rankmetric.geometry.eigen import orient_columns

    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    Q = torch.as_tensor(Q)
    flipped = Q * torch.as_tensor([1.0, -1.0, -1.0, 1.0, -1.0])  # another LAPACK's signs
    oriented = orient_columns(Q)
    assert torch.equal(orient_columns(flipped), oriented)
    largest = oriented.abs().argmax(dim=0)
    assert (oriented[largest, torch.arange(5)] > 0).all()
    # entries of equal magnitude up to rounding: the first decides, whichever rounding favours
    for v in ([0.5**0.5, -(0.5**0.5) * (1 + 1e-15)], [0.5**0.5 * (1 + 1e-15), -(0.5**0.5)]):
        column = torch.tensor(v, dtype=torch.float64)[:, None]
        assert orient_columns(column)[0, 0] > 0 and torch.equal(
            orient_columns(column), orient_columns(-column)
        )


@pytest.mark.parametrize(
    "n_queries, better, worse",
    [
        (n, b, w)
        for n in (5, 10, 13, 50, 100, 333)
        for b, w in ((1, 0), (3, 1), (6, 3))
        if b + w <= n
    ],
)
def test_the_one_standard_error_rule_breaks_an_exact_tie_the_same_way(n_queries, better, worse):
    """With 0/1 recall scores, ``better`` queries gained and ``worse`` lost with
    ``(better − worse)² = better + worse`` is a gain of exactly one standard error: the earlier
    candidate is kept (before, rounding decided, and it differed between sizes and CPUs)."""
    from rankmetric.model_selection import OneStandardErrorSelector

    start = torch.zeros(n_queries, dtype=torch.float64)
    start[better : better + worse] = 1.0
    trained = torch.zeros(n_queries, dtype=torch.float64)
    trained[:better] = 1.0
    rows = iter([start, trained])
    selector = OneStandardErrorSelector([torch.nn.Linear(1, 1)], lambda: next(rows))
    selector.validate(), selector.validate()
    chosen, (gain, noise) = selector.select(1.0)
    assert gain == pytest.approx(noise, rel=1e-12)
    assert chosen == 0
