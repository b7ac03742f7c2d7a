"""The conventions of ``docs/architecture.md`` (section 4) that a reading of ``src/`` can check.

* **Threads**: thread pools are sized only in ``_threads`` (the estimators' fit context, the
  evaluation and search entry points' ``call_threads``, ``rankmetric.threads``) and by the
  commands (``cli``, ``bench``); below the estimators the one thread setting is
  ``single_blas_thread()`` (it pins BLAS to one thread around loops of tiny products; it sizes
  nothing).
* **Squared distances**: no squared-Euclidean kernel outside ``_distances`` (``cdist``, the Gram
  form ``addmm(..., alpha=-2)`` or ``-2 * (X @ Y)``, the difference form ``((a - b) ** 2).sum``).
* **Deprecations**: no ``warnings.warn(..., FutureWarning | DeprecationWarning)`` outside the one
  helper, ``_validation/compat.py``.
* **One home**: the label encoder, the thread and memory mechanisms, the distance kernels and the
  triplet selections are each defined in one module (``ONE_HOME``); no module is over 600 lines;
  only ``resources`` reads the machine's memory; every loss derives from ``MetricLoss`` and the
  batch losses share one ``forward``; transformers name their output; torch's determinism
  switch is set in ``_utils.deterministic_on`` only, which the fit context enters.

Each check lists its justified exceptions (``ALLOWED``, with the reason); every other module
keeps the convention (the restructuring of #39 moved the last ones onto it).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "rankmetric"


def _modules() -> dict[str, str]:
    """``{path relative to src/rankmetric: source}`` of every module of the package."""
    return {p.relative_to(PACKAGE).as_posix(): p.read_text() for p in PACKAGE.rglob("*.py")}


def _allowed(path: str, allowed: dict[str, str]) -> bool:
    """Whether ``path`` is an allowed file or lies in an allowed folder (a key ending in ``/``)."""
    return any(path == key or (key.endswith("/") and path.startswith(key)) for key in allowed)


def _check(found: dict[str, list[str]], allowed: dict[str, str]):
    """No violation outside ``allowed``."""
    new = {p: hits for p, hits in found.items() if not _allowed(p, allowed)}
    assert not new, "\n".join(f"{p}: {', '.join(hits)}" for p, hits in sorted(new.items()))


def _called_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


# --- threads ----------------------------------------------------------------------------------

#: Calls that set a thread count (torch's, BLAS/OpenMP's through threadpoolctl, faiss's).
THREAD_SETTERS = {
    "set_num_threads",
    "set_num_interop_threads",
    "omp_set_num_threads",
    "thread_limit",
    "threadpool_limits",
    "ThreadpoolController",
    "fit_threads",
}

THREADS_ALLOWED = {
    "_threads.py": "the mechanism itself: thread_limit, threads(n), fit_threads",
    "estimators/": "fit_context applies fit_threads to every fit method",
    "cli/": "the commands' --threads option",
    "bench/": "the benchmark grid runs each cell on the threads it is given",
}


def thread_settings(source: str) -> list[str]:
    """``name:line`` of each call in ``source`` that sets a thread count."""
    return [
        f"{_called_name(node)}:{node.lineno}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and _called_name(node) in THREAD_SETTERS
    ]


def test_only_the_fit_context_and_the_commands_set_threads():
    found = {p: hits for p, src in _modules().items() if (hits := thread_settings(src))}
    _check(found, THREADS_ALLOWED)


# --- squared distances ------------------------------------------------------------------------

_OPERAND = r"[\w.\[\]:, ]+"
#: The three ways of writing a squared Euclidean distance by hand.
DISTANCE_KERNELS = {
    "cdist": re.compile(r"\bcdist\("),
    # ``||x||² − 2 xᵀy + ||y||²``: a matrix product scaled by −2 (addmm's alpha, or written out)
    "Gram form": re.compile(r"\balpha\s*=.*-\s*2(\.0)?\b|-\s*2(\.0)?\s*\*\s*\(?\s*\w[\w.]*\s*@"),
    # ``Σ (x − y)²``: a difference (written out, or a variable named ``diff…``) squared and summed
    "difference form": re.compile(
        rf"(\(\s*{_OPERAND}\s-\s{_OPERAND}\)|\bdiff\w*(\[[^\]]*\])?(\s*@\s*[\w.\[\]]+\))?)"
        r"\s*(\*\*\s*2|\.square\(\)|\.pow\(2\))\s*\)?\s*\.sum\("
    ),
}

DISTANCES_ALLOWED = {
    "_distances.py": "the one home of the kernel",
    "losses/regularizers.py": "‖WᵀW − I‖²: an orthogonality penalty, not a distance of points",
    "estimators/pair_covariance/_covariances.py": (
        "sums of pair-difference outer products (covariances), not distances"
    ),
    "index/export.py": "the Gram form written as ONNX operators, for the exported graph",
    "geometry/flat_distances.py": "Frobenius norms of matrix differences (log-Euclidean metric)",
}


def distance_kernels(source: str) -> list[str]:
    """``kind:line`` of each hand-written squared distance in ``source`` (comments skipped)."""
    hits = []
    for number, line in enumerate(source.splitlines(), 1):
        code = line.split("#", 1)[0]
        hits += [f"{kind}:{number}" for kind, rx in DISTANCE_KERNELS.items() if rx.search(code)]
    return hits


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("d = torch.cdist(a, b)", "cdist"),
        ("d = torch.addmm(sq[None], X, Y.T, alpha=-2.0)", "Gram form"),
        ("d = x_sq - 2.0 * (X @ C.T) + c_sq", "Gram form"),
        ("d = ((a - b) ** 2).sum(1)", "difference form"),
        ("d = (a[i] - b[j]).square().sum(-1)", "difference form"),
        ("d = (x - y).pow(2).sum(dim=1)", "difference form"),
        ("sq = diff_ap.square().sum(-1)", "difference form"),
        ("d = ((diff[sel] @ L.T) ** 2).sum(1)", "difference form"),
        ("alpha = -1.0 if cosine else -2.0", "Gram form"),
        ("n = x.square().sum(1)", None),
        ("y = torch.addmm(bias, x, W.T)", None),
        ("d = squared_euclidean(a, b)  # not (a - b) ** 2).sum(", None),
    ],
)
def test_the_distance_check_finds_hand_written_kernels(line, kind):
    found = distance_kernels(line)
    assert found == ([] if kind is None else [f"{kind}:1"])


def test_every_squared_distance_is_in_distances():
    found = {p: hits for p, src in _modules().items() if (hits := distance_kernels(src))}
    _check(found, DISTANCES_ALLOWED)


# --- deprecations -----------------------------------------------------------------------------

_DEPRECATIONS = {"FutureWarning", "DeprecationWarning", "PendingDeprecationWarning"}


def deprecation_warnings(source: str) -> list[str]:
    """``line`` of each ``warn(...)`` call in ``source`` that names a deprecation category."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and _called_name(node) == "warn":
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            names |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            if names & _DEPRECATIONS:
                found.append(str(node.lineno))
    return found


def test_every_deprecation_goes_through_the_helper():
    found = {p: hits for p, src in _modules().items() if (hits := deprecation_warnings(src))}
    _check(found, {"_validation/compat.py": "the one deprecation helper"})


def test_the_deprecation_check_finds_a_hand_written_warning():
    source = "import warnings\nwarnings.warn('old', FutureWarning, stacklevel=2)\n"
    assert deprecation_warnings(source) == ["2"]
    assert deprecation_warnings("warnings.warn('slow', UserWarning)") == []


# --- module size, memory, losses --------------------------------------------------------------


def test_no_module_is_longer_than_600_lines():
    found = {p: [f"{n} lines"] for p, src in _modules().items() if (n := src.count("\n")) > 600}
    _check(found, {})


#: What reads the machine's memory: only ``resources`` (the one memory model) may.
_MEMORY_PROBES = re.compile(r"\bpsutil\b|os\.sysconf|/proc/meminfo|memory\.max|RLIMIT_")


def test_only_resources_reads_the_machines_memory():
    found = {
        p: [
            f"line {n}" for n, line in enumerate(src.splitlines(), 1) if _MEMORY_PROBES.search(line)
        ]
        for p, src in _modules().items()
    }
    found = {p: hits for p, hits in found.items() if hits}
    _check(found, {"resources.py": "the one memory model"})


#: torch's process-wide determinism switch, set by one helper that the fit context enters.
_DETERMINISM_SWITCH = re.compile(r"use_deterministic_algorithms\(")


def test_only_the_fit_context_sets_torchs_determinism():
    found = {
        p: [f"line {n}" for n, line in enumerate(src.splitlines(), 1)
            if _DETERMINISM_SWITCH.search(line) and not line.lstrip().startswith(("#", "``"))]
        for p, src in _modules().items()
    }  # fmt: skip
    found = {p: hits for p, hits in found.items() if hits}
    _check(found, {"_utils.py": "deterministic_on, entered by estimators/base.py's fit_context"})
    assert "deterministic_on(" in (PACKAGE / "estimators" / "base.py").read_text()


def test_every_loss_derives_from_the_base_and_batch_losses_share_one_forward():
    import torch

    from rankmetric import losses

    public = [getattr(losses, name) for name in losses.__all__]
    modules = [c for c in public if isinstance(c, type) and issubclass(c, torch.nn.Module)]
    not_losses = (losses.Miner, losses.CrossBatchMemory)
    assert all(issubclass(c, losses.MetricLoss) for c in modules if not issubclass(c, not_losses))
    batch = [c for c in modules if issubclass(c, losses.BatchMetricLoss)]
    assert len(batch) >= 6
    assert all(c.forward is losses.BatchMetricLoss.forward for c in batch)


def test_transformers_name_their_output_or_opt_out():
    """``_n_features_out`` (so ``set_output`` works), or ``auto_wrap_output_keys=None``."""
    from sklearn.base import TransformerMixin

    import rankmetric.estimators as estimators
    import rankmetric.preprocessing as preprocessing

    lacking = [
        name
        for module in (estimators, preprocessing)
        for name in module.__all__
        if isinstance(cls := getattr(module, name), type)
        and issubclass(cls, TransformerMixin)
        and not hasattr(cls, "_n_features_out")
        and getattr(cls, "_sklearn_auto_wrap_output_keys", {"transform"})
    ]
    assert not lacking, lacking


#: Formulas and mechanisms with one home: no other module defines a function of that name.
ONE_HOME = {
    "encode_labels": "_validation/checks.py",
    "as_label_array": "_validation/checks.py",
    "check_labels": "_validation/checks.py",
    "single_blas_thread": "_threads.py",
    "thread_limit": "_threads.py",
    "squared_euclidean": "_distances.py",
    "paired_squared_euclidean": "_distances.py",
    "memory_budget": "resources.py",
    "sorted_negatives": "losses/miners.py",
    "batch_hard_choice": "losses/miners.py",
    "facenet_semihard_choice": "losses/miners.py",
    "label_masks": "losses/pair_distances.py",
    "warn_deprecated": "_validation/compat.py",
}


def test_each_formula_and_mechanism_is_defined_once():
    defined: dict[str, list[str]] = {}
    for path, source in _modules().items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in ONE_HOME:
                defined.setdefault(node.name, []).append(path)
    assert defined == {name: [home] for name, home in ONE_HOME.items()}
