"""``rankmetric describe MODEL``: what a saved model is, before it is put into service.

The model file is read as ``load_model`` reads it (checked, nothing executed); the report says
what the model takes and gives (its input, the shape of one embedding), how it was fitted
(the data and hold-out ``rankmetric fit`` recorded, the held-out check's verdict, the steps),
the settings that differ from the class's defaults, and which rankmetric wrote it.
"""

from __future__ import annotations

import argparse
import inspect
import os

from ._report import held_out_report, print_report

SUMMARY = "what a saved model is: its input and output, what it was fitted on, its check"
DESCRIPTION = (
    "Describe a model file (`rankmetric fit --out`, save_model) before using or serving it: "
    "the input it takes and the embedding it gives, the data and hold-out it was fitted on, "
    "the verdict of its held-out check against the Euclidean distance, its settings and the "
    "rankmetric version that wrote it. The file is checked as load_model checks it."
)
EPILOG = """\
examples:
  rankmetric describe warca.npz
  rankmetric describe rpl.npz --json
"""


def _input(model) -> str:
    """What ``transform`` takes."""
    n = model.n_features_in_
    if hasattr(model, "weights_"):  # an SPD network
        estimator = (getattr(model, "fit_split_", None) or {}).get("covariance_estimator")
        source = f"; fitted on covariances of raw trials by {estimator!r}" if estimator else ""
        return f"SPD matrices {n} × {n} (samples × {n} × {n}){source}"
    if getattr(model, "kernel", None) == "precomputed":
        return f"kernel rows against the {n} training items"
    return f"{n} features (samples × {n})"


def _output(model) -> str:
    """The shape of one embedding, from a probe input (what ``load_model`` checked it with)."""
    from ..io import probe_input

    shape = tuple(model.transform(probe_input(model)).shape[1:])
    if len(shape) == 1:
        return f"{shape[0]} values per sample"
    return " × ".join(map(str, shape)) + " per sample"


def _settings(model) -> dict:
    """The hyper-parameters that differ from the class's defaults."""
    defaults = {name: p.default for name, p in inspect.signature(type(model)).parameters.items()}
    return {name: value for name, value in model.get_params(deep=False).items()
            if name in defaults and not _same(value, defaults[name])}  # fmt: skip


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays, estimators: shown
        return False


def _fitted_on(model) -> str:
    record = getattr(model, "fit_split_", None)
    if not isinstance(record, dict):
        return "not recorded (saved in Python, or by an earlier rankmetric fit)"
    return f"{record.get('data')}: {record.get('how')}"


def _training(model) -> str:
    steps = getattr(model, "n_iter_", None)
    best = getattr(model, "best_iter_", None)
    score = getattr(model, "validation_score_", None)
    parts = [f"{steps} steps" if steps is not None else "closed form (no steps)"]
    if best is not None:
        parts.append(f"kept step {best}")
    if isinstance(score, float):
        parts.append(f"validation score {score:.4f}")
    return ", ".join(parts)


def run_describe(args: argparse.Namespace) -> int:
    from ..io import load_model, model_file_version

    found = load_model(args.model)
    model = getattr(found, "best_estimator_", found)  # a tuned learner: the model it keeps
    report = {
        "model": type(found).__name__ + ("" if model is found else f" ({type(model).__name__})"),
        "written_by": model_file_version(args.model),
        "input": _input(model),
        "output": _output(model),
        "fitted_on": _fitted_on(found),
        **(held_out_report(found) or {"held_out_check": "not run (held_out_check=False)"}),
        "training": _training(model),
        "settings": {k: repr(v) for k, v in _settings(model).items()} or "the defaults",
        "file_bytes": os.path.getsize(args.model),
    }
    print_report(report, args.json)
    return 0


def register(parser: argparse.ArgumentParser, full: bool = True) -> None:
    """Add the options of ``describe``."""
    parser.add_argument("model", metavar="MODEL.npz", help="a saved rankmetric model")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=run_describe)
