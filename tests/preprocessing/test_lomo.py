import pickle

import numpy as np
import pytest
from sklearn.base import clone

from rankmetric.preprocessing import StripeHistograms
from rankmetric.preprocessing.lomo import lbp_codes, riu2_table, window_starts

NEIGHBOURS = ((-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1))


def _brute_lbp(img, threshold):
    H, W = img.shape
    codes = np.zeros((H, W), dtype=int)
    for i in range(H):
        for j in range(W):
            for bit, (dy, dx) in enumerate(NEIGHBOURS):
                v = img[min(max(i + dy, 0), H - 1), min(max(j + dx, 0), W - 1)]
                codes[i, j] |= int(v >= img[i, j] + threshold) << bit
    return codes


def _brute_riu2(code):
    bits = [(code >> k) & 1 for k in range(8)]
    transitions = sum(bits[k] != bits[k - 1] for k in range(8))
    return sum(bits) if transitions <= 2 else 9


def _brute_features(img, p):
    """Reference: explicit loops over stripes, windows and pixels of one (H, W) grey image."""
    H, W = img.shape
    low, high = np.percentile(img, [1.0, 99.0])
    s = np.clip((img - low) / max(high - low, 1e-12), 0.0, 1.0)
    lbp = _brute_lbp(s, p["lbp_threshold"])
    pad = np.pad(s, 1, mode="edge")
    blocks = {"int": [], "lbp": [], "ori": []}
    for r in window_starts(H, p["stripe_height"], p["stripe_step"]):
        per_window = {"int": [], "lbp": [], "ori": []}
        for c in window_starts(W, p["window_width"], p["window_step"]):
            h = {"int": np.zeros(p["n_intensity_bins"]), "lbp": np.zeros(10),
                 "ori": np.zeros(p["n_orientations"])}  # fmt: skip
            for i in range(r, r + p["stripe_height"]):
                for j in range(c, c + p["window_width"]):
                    n_int = p["n_intensity_bins"]
                    h["int"][min(int(s[i, j] * n_int), n_int - 1)] += 1
                    h["lbp"][_brute_riu2(lbp[i, j])] += 1
                    gy = 0.5 * (pad[i + 2, j + 1] - pad[i, j + 1])
                    gx = 0.5 * (pad[i + 1, j + 2] - pad[i + 1, j])
                    angle = np.arctan2(gy, gx) % np.pi
                    b = min(int(angle / np.pi * p["n_orientations"]), p["n_orientations"] - 1)
                    h["ori"][b] += np.hypot(gx, gy)
            for k in h:
                per_window[k].append(h[k] / h[k].sum() if h[k].sum() > 0 else h[k])
        for k in per_window:
            stack = np.array(per_window[k])
            blocks[k].append(stack.max(axis=0) if p["pooling"] == "max" else stack.ravel())
    out = []
    for k in ("int", "lbp", "ori"):
        v = np.sqrt(np.concatenate(blocks[k]))
        out.append(v / np.linalg.norm(v))
    return np.concatenate(out) / np.sqrt(3)


def test_riu2_table_matches_definition():
    table = riu2_table()
    assert table.shape == (256,)
    assert [int(table[c]) for c in range(256)] == [_brute_riu2(c) for c in range(256)]
    assert (table == 9).sum() == 256 - 58  # 58 uniform patterns of 8 bits


def test_lbp_codes_match_brute_force(rng):
    imgs = rng.random((3, 6, 7))
    codes = lbp_codes(imgs, 0.1)
    for img, code in zip(imgs, codes, strict=True):
        np.testing.assert_array_equal(code, _brute_lbp(img, 0.1))


@pytest.mark.parametrize("pooling", ["max", "concat"])
def test_features_match_brute_force(rng, pooling):
    params = dict(stripe_height=4, stripe_step=2, window_width=4, window_step=3,
                  n_intensity_bins=5, n_orientations=6, lbp_threshold=0.05,
                  pooling=pooling)  # fmt: skip
    X = rng.random((3, 10 * 9))
    out = StripeHistograms(image_shape=(10, 9), **params).fit_transform(X)
    expected = np.array([_brute_features(x.reshape(10, 9), params) for x in X])
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


def test_window_starts_cover_the_edges():
    np.testing.assert_array_equal(window_starts(28, 8, 4), [0, 4, 8, 12, 16, 20])
    np.testing.assert_array_equal(window_starts(10, 4, 4), [0, 4, 6])
    np.testing.assert_array_equal(window_starts(3, 8, 4), [0])


def test_output_shape_norm_and_sign(rng):
    X = rng.random((7, 28 * 28)).astype(np.float32)
    t = StripeHistograms().fit(X)
    Z = t.transform(X)
    assert Z.shape == (7, t.n_features_out_) == (7, 6 * (8 + 10 + 8))
    assert Z.dtype == np.float32 and np.all(Z >= 0)
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-5)


def test_colour_channels_get_their_own_intensity_histograms(rng):
    X = rng.random((4, 12 * 8 * 3))
    t = StripeHistograms(image_shape=(12, 8, 3), n_orientations=0, lbp=False).fit(X)
    n_stripes = window_starts(12, 8, 4).shape[0]
    assert t.transform(X).shape == (4, n_stripes * 3 * 8)


def test_invariant_to_gain_and_offset(rng):
    """The per-image contrast stretch removes a camera's gain and brightness."""
    X = rng.random((5, 16 * 16))
    t = StripeHistograms().fit(X)
    np.testing.assert_allclose(t.transform(1.7 * X - 0.3), t.transform(X), atol=1e-10)


def test_max_pooling_absorbs_a_horizontal_shift():
    """A blob shifted by one window step keeps the same max-pooled stripe histograms."""
    img = np.zeros((16, 24))
    img[4:12, 3:7] = np.linspace(0.2, 1.0, 4)  # its gradients stay inside columns 2..7
    shifted = np.roll(img, 8, axis=1)
    t = StripeHistograms((16, 24), window_width=8, window_step=8).fit(img.reshape(1, -1))
    a, b = t.transform(img.reshape(1, -1)), t.transform(shifted.reshape(1, -1))
    np.testing.assert_allclose(a, b, atol=1e-12)
    concat = StripeHistograms((16, 24), window_width=8, window_step=8, pooling="concat")
    c = concat.fit_transform(np.vstack([img.ravel(), shifted.ravel()]))
    assert not np.allclose(c[0], c[1])


def test_sklearn_api(rng):
    X = rng.random((4, 64))
    t = StripeHistograms(stripe_height=4)
    np.testing.assert_array_equal(clone(t).fit(X).transform(X), t.fit_transform(X))
    again = pickle.loads(pickle.dumps(t))
    np.testing.assert_array_equal(again.transform(X), t.transform(X))
    with pytest.raises(ValueError, match="features"):
        t.transform(rng.random((2, 81)))


@pytest.mark.parametrize(
    "params, match",
    [({"image_shape": None}, "square"), ({"image_shape": (5, 5)}, "holds"),
     ({"image_shape": (6, 0)}, "image_shape"), ({"stripe_height": 0}, "stripe_height"),
     ({"n_orientations": -1}, "n_orientations"), ({"pooling": "mean"}, "pooling"),
     ({"lbp": "yes"}, "lbp"), ({"lbp_threshold": np.nan}, "lbp_threshold")],
)  # fmt: skip
def test_bad_parameters(params, match, rng):
    X = rng.random((2, 30))
    params = {"image_shape": (6, 5), **params}
    with pytest.raises(ValueError, match=match):
        StripeHistograms(**params).fit(X)


def test_rejects_non_finite(rng):
    X = rng.random((2, 16))
    X[0, 0] = np.nan
    with pytest.raises(ValueError):
        StripeHistograms().fit(X)


def test_feeds_a_chi2_kernel_warca_pipeline(rng):
    """The histograms are valid χ²-RBF input: a pipeline fits and embeds raw crops."""
    from sklearn.pipeline import make_pipeline

    from rankmetric import KernelWARCA

    X = rng.random((24, 16 * 12))
    y = np.repeat(np.arange(8), 3)
    model = make_pipeline(
        StripeHistograms((16, 12)),
        KernelWARCA(
            n_components=4,
            kernel="chi2_rbf",
            max_iter=5,
            tol=None,
            random_state=0,
            held_out_check=False,  # random crops: nothing to learn, the check would warn
        ),
    )
    Z = model.fit(X, y).transform(X)
    assert Z.shape == (24, 4) and np.all(np.isfinite(Z))
