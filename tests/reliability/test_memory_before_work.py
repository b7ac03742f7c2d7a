"""Memory checked before the work (issue #34 item 3): bounded paths or a refusal with the estimate.

Under an address-space limit (``RLIMIT_AS``, what ``prlimit --as`` and ``ulimit -v`` set) a fit
sized by its input either runs in bounded extra memory or refuses within seconds with the
estimate: never a ``MemoryError`` or the kernel's OOM killer. The subprocess tests use sizes that
separate the bounded path from the old one (which copied the whole input) in a few seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from rankmetric.resources import memory_limit

pytestmark = pytest.mark.timeout(300)

_PRELUDE = """
import re, resource
def limit_headroom(extra):
    vm = int(re.search(r"VmSize:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (vm + extra, vm + extra))
"""


def _run(script: str) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env["CUDA_VISIBLE_DEVICES"] = ""  # host memory is measured: the CPU path, also on a GPU host
    env.pop("RANKMETRIC_MEMORY_LIMIT", None)
    out = subprocess.run(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(script)],
        capture_output=True, text=True, timeout=240, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_tangent_space_fits_in_a_few_chunks_of_extra_memory():
    """8,000 matrices of 16 × 16 (16 MB) with 40 MB of address space to spare: the old
    Riemannian mean (symmetrised copy, two products, eigenvectors, scaled copy) needed about
    five copies of the stack; read in chunks it needs a few chunks."""
    out = _run("""
        import numpy as np
        from rankmetric.geometry import checks, means
        from rankmetric.preprocessing import TangentSpace
        means.MEAN_CHUNK_ELEMENTS = checks.CHECK_CHUNK_ELEMENTS = 1 << 16  # 256 matrices
        rng = np.random.default_rng(0)
        A = rng.normal(size=(8000, 16, 20))
        X = A @ A.transpose(0, 2, 1) / 20
        del A
        reference = TangentSpace().fit(X[:500]).reference_  # warm up the libraries first
        limit_headroom(40 * 2**20)
        print(TangentSpace().fit(X).reference_.shape)
    """)
    assert out.strip() == "(16, 16)"


def test_chunked_riemannian_mean_matches_the_whole_stack():
    import torch

    from rankmetric.geometry import means, riemannian_mean

    rng = np.random.default_rng(1)
    A = rng.normal(size=(300, 5, 8))
    X = torch.as_tensor(A @ A.transpose(0, 2, 1) / 8)
    w = torch.as_tensor(rng.random(300))
    whole = riemannian_mean(X, w)
    old = means.MEAN_CHUNK_ELEMENTS
    try:
        means.MEAN_CHUNK_ELEMENTS = 7 * 25  # 7 matrices a chunk
        chunked = riemannian_mean(X, w)
        chunked32 = riemannian_mean(X.float(), w.float())
    finally:
        means.MEAN_CHUNK_ELEMENTS = old
    torch.testing.assert_close(chunked, whole, rtol=1e-10, atol=1e-12)
    assert chunked32.dtype == torch.float32
    torch.testing.assert_close(chunked32.double(), whole, rtol=1e-5, atol=1e-6)


def test_pair_classifier_on_stacked_pairs_refuses_with_the_estimate():
    """300,000 stacked pairs of 64 features (290 MB) with 300 MB to spare: the old
    ``np.unique(axis=0)`` de-duplication and the learner's copies ran out of memory; now the fit
    refuses within seconds, with the estimate."""
    out = _run("""
        import time
        import numpy as np
        from rankmetric import PairClassifier
        rng = np.random.default_rng(0)
        P = rng.standard_normal(size=(300_000, 2, 64))
        y = np.where(rng.random(300_000) < 0.5, 1, -1)
        PairClassifier().fit(P[:2000], y[:2000])  # warm up the libraries first
        limit_headroom(300 * 2**20)
        start = time.perf_counter()
        try:
            PairClassifier().fit(P, y)
            print("fitted")
        except ValueError as exc:
            print(f"refused {time.perf_counter() - start:.1f}", exc)
    """)
    assert out.startswith("refused"), out
    assert float(out.split()[1]) < 10
    assert "300,000 pairs" in out and "would need about" in out


def test_distinct_rows_uses_a_few_bytes_a_row():
    """The de-duplication of stacked points hashes rows (8 bytes each) instead of sorting a
    copy of them: its peak is a small fraction of the input."""
    import tracemalloc

    from rankmetric._validation.points import distinct_rows

    rng = np.random.default_rng(0)
    pool = rng.normal(size=(500, 64))
    flat = pool[rng.integers(0, 500, size=200_000)]  # 102 MB, 500 distinct rows
    flat[7] = -0.0 * flat[7] + flat[7]  # same values
    tracemalloc.start()
    first, inverse = distinct_rows(flat)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < flat.nbytes / 4
    assert first.shape == (500,)
    np.testing.assert_array_equal(flat[first][inverse], flat)
    assert np.all(np.diff(first) > 0)  # in order of first appearance
    mixed = np.array([[0.0, 1.0], [-0.0, 1.0], [1.0, 0.0]])
    first, inverse = distinct_rows(mixed)
    assert first.tolist() == [0, 2] and inverse.tolist() == [0, 0, 1]


def test_verification_of_all_pairs_of_60k_items_refuses_at_once():
    from rankmetric.evaluate import labelled_pairs, labelled_verification_scores

    rng = np.random.default_rng(0)
    E = rng.normal(size=(60_000, 8))
    y = np.arange(60_000) % 1000
    start = time.perf_counter()
    with memory_limit("3G"), pytest.raises(ValueError, match="max_pairs=") as info:
        labelled_verification_scores(E, y)
    assert time.perf_counter() - start < 1
    assert "1,799,970,000 pairs" in str(info.value)
    with memory_limit("3G"), pytest.raises(ValueError, match="max_pairs="):
        labelled_pairs(E, y)
    with memory_limit("3G"):
        scores = labelled_verification_scores(E, y, max_pairs=200_000, random_state=0)
    assert scores["n_same"] + scores["n_different"] == 200_000


def test_all_pairs_without_a_square_mask():
    from rankmetric.evaluate.verification import _all_pairs

    for n in (2, 3, 10, 257):
        i, j = _all_pairs(n)
        a, b = np.triu_indices(n, 1)
        np.testing.assert_array_equal(i, a)
        np.testing.assert_array_equal(j, b)


def test_kernel_warca_checks_the_full_fit_before_the_held_out_fit():
    """The full fit's kernel (8,000² floats) does not fit the budget, the held-out probe's
    (6,400²) would: the refusal comes first, not after training the probe."""
    from rankmetric import KernelWARCA

    rng = np.random.default_rng(0)
    X = np.abs(rng.normal(size=(8000, 4))).astype(np.float32)
    y = np.arange(8000) % 800
    start = time.perf_counter()
    with memory_limit("400M"), pytest.raises(ValueError, match="8000 × 8000 kernel"):
        KernelWARCA(random_state=0).fit(X, y)
    assert time.perf_counter() - start < 5


def test_retrieval_scores_announces_its_work_up_front(capsys):
    from rankmetric.evaluate import retrieval_scores

    rng = np.random.default_rng(0)
    E, y = rng.normal(size=(500, 20)), np.arange(500) % 50
    quiet = retrieval_scores(E, y)
    assert capsys.readouterr().err == ""
    loud = retrieval_scores(E, y, verbose=True)
    err = capsys.readouterr().err
    assert "500 queries x 500 gallery items of 20 features (250,000 distances)" in err
    assert "ranked 9 deep" in err  # mAP@R: as deep as R = 9 (10 items a class, leave-one-out)
    assert loud == quiet
