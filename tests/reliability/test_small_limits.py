"""The smaller findings of issue #27, each a ValueError (or argparse error) naming the problem."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rankmetric.cli import main

pytestmark = pytest.mark.timeout(120)


def test_itml_refuses_an_infinite_slack_weight():
    from rankmetric import ITML

    X, y = np.random.default_rng(0).random((30, 3)), np.arange(30) % 3
    with pytest.raises(ValueError, match=r"slack_weight must be a number in \(0, inf\), got inf"):
        ITML(slack_weight=np.inf).fit(X, y)


@pytest.mark.parametrize("device", ["nosuch", "cuda:x", 5])
def test_an_unknown_device_names_itself_not_torchs_device_list(device):
    from rankmetric.evaluate import knn_accuracy

    X, y = np.random.default_rng(0).random((10, 2)), np.arange(10) % 2
    # torch reads an integer as a CUDA index: on a GPU host 5 is 'cuda:5', a device it lacks
    names = r"device=.* (is not a device; use None, 'auto'|was requested but this machine has)"
    with pytest.raises(ValueError, match=names) as info:
        knn_accuracy(X, y, X, y, device=device)
    assert "privateuseone" not in str(info.value)


def test_resolve_device_refuses_a_backend_this_torch_lacks():
    from rankmetric._utils import resolve_device

    assert resolve_device("cpu") == torch.device("cpu")
    if not torch.backends.mps.is_available():
        with pytest.raises(ValueError, match="'mps' is not available on this machine"):
            resolve_device("mps")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            resolve_device("cuda:1")


@pytest.mark.parametrize("smallest", [0.0, 1e-20, 1e-300])
def test_airm_distance_refuses_a_singular_matrix(smallest):
    from rankmetric.geometry import airm_distance, pairwise_airm

    A, B = np.eye(3), np.diag([1.0, 1.0, smallest])
    with pytest.raises(ValueError, match="not positive definite|singular to working precision"):
        airm_distance(A, B)
    with pytest.raises(ValueError, match="not positive definite|singular to working precision"):
        airm_distance(B, A)
    with pytest.raises(ValueError, match="not positive definite|singular to working precision"):
        pairwise_airm(B[None], A[None])


def test_airm_distance_refuses_a_rank_deficient_product():
    from rankmetric.geometry import airm_distance

    Q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(4, 4)))
    for tiny in (1e-17, 1e-30):  # rounding decides the sign of the zero eigenvalue: either error
        B = (Q * np.array([1.0, 2.0, 3.0, tiny])) @ Q.T
        with pytest.raises(ValueError, match="not positive definite|singular to working"):
            airm_distance(np.eye(4), B)


def test_airm_distance_still_accepts_ill_conditioned_full_rank_matrices():
    from rankmetric.geometry import airm_distance

    d = airm_distance(np.eye(3), np.diag([1.0, 1.0, 1e-12]))
    assert float(d) == pytest.approx(np.log(1e12))


def test_a_malformed_json_option_names_the_option_and_the_value(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "warca", "--data", "iris", "--sampling", "[1"])
    err = capsys.readouterr().err
    assert "<lambda>" not in err
    assert "argument --sampling: cannot read '[1'" in err


def test_an_uncreatable_checkpoint_dir_names_the_option(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code = main(["fit", "warca", "--data", "iris", "--checkpoint-dir", str(blocker / "ckpt")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("rankmetric: error: --checkpoint-dir") and "cannot create it" in err


def test_an_uncreatable_checkpoint_dir_names_the_parameter_in_python(tmp_path):
    from rankmetric import WARCA

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    X, y = np.random.default_rng(0).random((30, 3)), np.arange(30) % 3
    with pytest.raises(ValueError, match="checkpoint_dir=.*cannot create it"):
        WARCA(max_iter=2, checkpoint_dir=blocker / "ckpt").fit(X, y)
