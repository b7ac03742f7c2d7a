"""Two gloo processes on loopback train exactly what one process trains on the global batch.

One module-scoped launch runs ``_worker.py`` three times at once: ranks 0 and 1 of a world of
two, and a single-process reference (``WORLD_SIZE=1``); the tests compare their outputs.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from rankmetric import distributed
from rankmetric.sampling import LabelIndex

# Fits here use deliberately tiny budgets and data: the convergence and untrained-model
# warnings they raise are expected (the tests that check a warning use pytest.warns).
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")]

WORKER = Path(__file__).with_name("_worker.py")
LAUNCH_TIMEOUT = 240


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _launch(out_dir: Path, rank: int, world: int, port: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": str(world),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "OMP_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(out_dir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _run_all(out_dir: Path) -> dict[str, tuple[int, str]]:
    """Launch the reference and both ranks at once; ``(returncode, output)`` of each."""
    port = _free_port()
    procs = {
        "single": _launch(out_dir, 0, 1, _free_port()),
        "rank0": _launch(out_dir, 0, 2, port),
        "rank1": _launch(out_dir, 1, 2, port),
    }
    done = {}
    for name, proc in procs.items():
        try:
            output, _ = proc.communicate(timeout=LAUNCH_TIMEOUT)
        except subprocess.TimeoutExpired:
            for other in procs.values():
                other.kill()
            pytest.fail(f"{name} did not finish in {LAUNCH_TIMEOUT} s")
        done[name] = (proc.returncode, output)
    return done


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, dict[str, np.ndarray]]:
    out_dir = tmp_path_factory.mktemp("distributed")
    done = _run_all(out_dir)
    # the free port may be taken by another program between its choice and the rendezvous
    if any("address already in use" in out.lower() for rc, out in done.values() if rc):
        done = _run_all(out_dir)
    for name, (returncode, output) in done.items():
        assert returncode == 0, f"{name} failed:\n{output[-3000:]}"
    files = {"single": "rank0_of1.npz", "rank0": "rank0_of2.npz", "rank1": "rank1_of2.npz"}
    return {name: dict(np.load(out_dir / file)) for name, file in files.items()}


# ---------------------------------------------------------------- primitives, two processes


def test_shards_cover_the_batch_in_rank_order(runs):
    assert runs["rank0"]["bounds"].tolist() == [0, 2]
    assert runs["rank1"]["bounds"].tolist() == [2, 5]
    assert runs["single"]["bounds"].tolist() == [0, 5]


def test_all_gather_with_grad_forward_and_gradient_equal_single_process(runs):
    single = runs["single"]
    for name in ("rank0", "rank1"):
        np.testing.assert_array_equal(runs[name]["gathered"], single["gathered"])
        np.testing.assert_allclose(runs[name]["coupled_value"], single["coupled_value"], rtol=1e-12)
    # each rank's rows get world_size x their part of the full gradient (the sum over the
    # ranks' identical losses), so the training loop's average over ranks is one process's
    grad0, grad1 = runs["rank0"]["coupled_grad_local"], runs["rank1"]["coupled_grad_local"]
    np.testing.assert_allclose(grad0 / 2, single["coupled_grad_local"][:2], rtol=1e-12)
    np.testing.assert_allclose(grad1 / 2, single["coupled_grad_local"][2:], rtol=1e-12)


def test_global_mean_value_and_gradient(runs):
    single = runs["single"]
    for name, rows in (("rank0", slice(0, 2)), ("rank1", slice(2, 5))):
        np.testing.assert_allclose(runs[name]["mean_value"], single["mean_value"], rtol=1e-12)
        # gradient world_size x (2 x / n): averaged over the ranks it is one process's gradient
        np.testing.assert_allclose(
            runs[name]["mean_grad"] / 2, single["mean_grad"][rows], rtol=1e-12
        )


def test_all_reduce_mean(runs):
    assert runs["rank0"]["reduced"].tolist() == [1.5]
    assert runs["rank1"]["reduced"].tolist() == [1.5]
    assert runs["single"]["reduced"].tolist() == [1.0]


# ---------------------------------------------------------------- a user's DDP loop


@pytest.mark.parametrize("name", ["ms", "triplet", "lifted"])
def test_gathered_loss_in_a_ddp_loop_has_the_single_process_gradient(runs, name):
    """DistributedDataParallel + GatheredLoss: the global batch's loss and gradient."""
    single = runs["single"]
    assert np.abs(single[f"ddp_{name}_grad"]).sum() > 0
    for rank in ("rank0", "rank1"):
        np.testing.assert_allclose(
            runs[rank][f"ddp_{name}_value"], single[f"ddp_{name}_value"], rtol=1e-12
        )
        np.testing.assert_allclose(
            runs[rank][f"ddp_{name}_grad"], single[f"ddp_{name}_grad"], rtol=1e-10, atol=1e-14
        )


# ---------------------------------------------------------------- estimators, two processes

ESTIMATOR_OUTPUTS = [
    "warca_batched",
    "warca_sequential",
    "warca_exact",
    "kernel_warca",
    "ssne",
    "ssne_bcd",
    "rpl",
    "rpl_log_mu",
    "rpl_log_sigma",
]


@pytest.mark.parametrize("key", ESTIMATOR_OUTPUTS)
def test_two_processes_fit_the_parameters_of_one(runs, key):
    single = runs["single"][key]
    assert np.all(np.isfinite(single))
    for name in ("rank0", "rank1"):
        np.testing.assert_allclose(runs[name][key], single, rtol=1e-5, atol=1e-6, err_msg=name)
    # the ranks hold identical parameters (the averaged gradient is applied everywhere)
    np.testing.assert_array_equal(runs["rank0"][key], runs["rank1"][key])


@pytest.mark.parametrize("key", ["warca_batched_loss", "ssne_loss", "rpl_loss"])
def test_logged_loss_is_the_global_loss_on_every_rank(runs, key):
    for name in ("rank0", "rank1"):
        np.testing.assert_allclose(runs[name][key], runs["single"][key], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("key", "shared"),
    [
        ("warca_batched", True),
        ("warca_exact", True),
        ("warca_sequential", False),
        ("kernel_warca", True),
        ("ssne", True),
        ("rpl", True),
    ],
)
def test_each_rank_computes_its_slice_only(runs, key, shared):
    """Guards against an equality that holds because every rank does all the work."""
    share0, share1 = runs["rank0"][f"{key}_share"], runs["rank1"][f"{key}_share"]
    if not shared:  # the sequential sampler runs unsharded
        assert share0 == share1 == 0 or share0 == share1 == 1
        return
    assert 0.4 < share0 < 0.6 and 0.4 < share1 < 0.6


def test_training_moved_the_parameters(runs):
    """Guards the comparison above against a fit that took no step."""
    assert runs["single"]["warca_batched_loss"].shape == (15,)
    assert runs["single"]["rpl_loss"].shape[0] >= 4
    assert np.ptp(runs["single"]["ssne_loss"]) > 0


# ---------------------------------------------------------------- one process


def test_helpers_without_a_process_group():
    assert not distributed.is_distributed()
    assert (distributed.rank(), distributed.world_size()) == (0, 1)
    x = torch.arange(4.0, requires_grad=True)
    assert distributed.all_gather_with_grad(x) is x
    np.testing.assert_array_equal(distributed.shard(np.arange(7)), np.arange(7))
    mean = distributed.global_mean(x.sum(), 4)
    mean.backward()
    assert float(mean.detach()) == 1.5
    np.testing.assert_allclose(x.grad.numpy(), 0.25)
    y = torch.ones(3)
    out = distributed.all_reduce_mean(y)
    assert out is not y and torch.equal(out, y)


@pytest.mark.parametrize("world", [1, 2, 3, 7])
@pytest.mark.parametrize("n", [0, 1, 5, 64, 65])
def test_shard_bounds_partition(n, world):
    bounds = [distributed.shard_bounds(n, r, world) for r in range(world)]
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(bounds[:-1], bounds[1:], strict=True))
    sizes = [stop - start for start, stop in bounds]
    assert max(sizes) - min(sizes) <= 1


def test_shard_bounds_rejects_bad_rank():
    with pytest.raises(ValueError, match="rank"):
        distributed.shard_bounds(4, 2, 2)


def test_init_from_env_is_a_noop_without_torchrun(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert distributed.init_from_env() is False
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert distributed.init_from_env() is False


def test_init_from_env_names_missing_variables(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    for name in ("RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="RANK, MASTER_ADDR, MASTER_PORT"):
        distributed.init_from_env()


def test_init_from_env_rejects_unknown_backend():
    with pytest.raises(ValueError, match="backend"):
        distributed.init_from_env("mpi")


def test_sharded_label_index_draws_like_one_process():
    codes = np.repeat(np.arange(4), 6)
    index, rng_a, rng_b = (
        LabelIndex.from_codes(codes),
        np.random.default_rng(1),
        np.random.default_rng(1),
    )
    first, second = index.positive_pairs(9, rng_a)
    negatives = index.negatives(first, 5, rng_a)
    sharded = distributed.ShardedLabelIndex(index)
    f, s = sharded.positive_pairs(9, rng_b)  # one process: the shard is everything
    np.testing.assert_array_equal(f, first)
    np.testing.assert_array_equal(s, second)
    np.testing.assert_array_equal(sharded.negatives(f, 5, rng_b), negatives)
    assert sharded.n_samples == index.n_samples
    with pytest.raises(ValueError, match="anchors of the last positive_pairs"):
        sharded.negatives(f[:3], 5, rng_b)


@pytest.mark.slow
def test_rankmetric_fit_runs_unchanged_under_torchrun(tmp_path):
    """``torchrun --nproc_per_node 2 rankmetric fit warca`` fits what one process fits."""
    from sklearn.model_selection import train_test_split

    from rankmetric.datasets import load_dataset
    from rankmetric.estimators.warca import WARCA
    from rankmetric.evaluate import knn_accuracy

    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    command = shutil.which("rankmetric", path=str(Path(sys.executable).parent))
    assert torchrun and command, "torchrun and rankmetric are installed with the package"
    options = ["--data", "wine", "--max-iter", "40", "--random-state", "0", "--device", "cpu"]
    done = subprocess.run(
        [
            torchrun,
            "--standalone",
            "--nproc_per_node",
            "2",
            command,
            "fit",
            "warca",
            *options,
            "--json",
            "--out",
            "model.npz",
        ],
        capture_output=True,
        text=True,
        timeout=LAUNCH_TIMEOUT,
        cwd=tmp_path,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = re.findall(r'"knn3_accuracy_learned": ([0-9.]+)', done.stdout)
    assert len(found) == 1  # rank 0 alone reports and saves
    assert (tmp_path / "model.npz").exists()

    data = load_dataset("wine")
    X_tr, X_te, y_tr, y_te = train_test_split(
        data.X, data.y, test_size=0.3, stratify=data.y, random_state=0
    )
    single = WARCA(max_iter=40, random_state=0, device="cpu").fit(X_tr, y_tr)
    expected = knn_accuracy(single.transform(X_tr), y_tr, single.transform(X_te), y_te, k=3)
    assert [float(a) for a in found] == pytest.approx([expected], abs=1e-12)


def test_the_collective_primitives_have_one_home():
    """Only ``rankmetric._distributed`` all-reduces; the loop, the losses and ``distributed``
    call it."""
    import rankmetric

    package = Path(rankmetric.__file__).parent
    callers = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if re.search(r"\ball_reduce\(", path.read_text()) and path.name != "_distributed.py"
    )
    assert callers == []
    from rankmetric import _distributed

    assert distributed.all_reduce_mean is _distributed.all_reduce_mean


def test_the_primitives_are_no_ops_in_one_process():
    from rankmetric import _distributed

    t = torch.arange(3.0)
    assert _distributed.all_reduce_sum_(t) is t and torch.equal(t, torch.arange(3.0))
    assert _distributed.all_reduce_max(4, t.device) == 4
    assert _distributed.is_main_process() and _distributed.world_size() == 1
    p = torch.nn.Parameter(torch.ones(2))
    p.grad = torch.full((2,), 3.0)
    _distributed.average_gradients([p])
    assert torch.equal(p.grad, torch.full((2,), 3.0))
