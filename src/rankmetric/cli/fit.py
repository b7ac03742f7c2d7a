"""``rankmetric fit METHOD``: fit a metric learner on a data set, report its k-NN accuracy, save it.

The options of each method are generated from the estimator's own hyper-parameters, so the
command line and the Python API never disagree.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import re
import time

import numpy as np

from ._args import check_device, check_output_file, check_random_state

# method name on the command line -> (module, class, input kind)
METHODS = {
    "warca": ("rankmetric.estimators.warca", "WARCA", "features"),
    "kernel-warca": ("rankmetric.estimators.kernel_warca", "KernelWARCA", "features"),
    "ssne": ("rankmetric.estimators.ssne", "SSNE", "features"),
    "lmnn": ("rankmetric.estimators.lmnn", "LMNN", "features"),
    "itml": ("rankmetric.estimators.itml", "ITML", "features"),
    "kissme": ("rankmetric.estimators.kissme", "KISSME", "features"),
    "xqda": ("rankmetric.estimators.xqda", "XQDA", "features"),
    "rpl": ("rankmetric.estimators.rpl", "RPLEmbedding", "spd"),
    "spdnet": ("rankmetric.estimators.spdnet", "SPDNetEmbedding", "spd"),
}


def _estimator_class(method: str):
    module, cls, _ = METHODS[method]
    return getattr(importlib.import_module(module), cls)


def _parse_value(text: str, default):
    """Convert a command-line string to the type of the parameter's default."""
    lowered = text.lower()
    if lowered in ("none", "null"):
        return None
    if isinstance(default, bool):
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")
    if isinstance(default, (tuple, list)):
        return tuple(json.loads(f"[{text}]"))
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.startswith(("[", "{")):
        return json.loads(text)
    return text


def _summary(cls) -> str:
    doc = inspect.getdoc(cls) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def _parameter_help(cls) -> dict[str, str]:
    """First sentence of each parameter's description in the class's numpydoc docstring."""
    lines = (inspect.getdoc(cls) or "").splitlines()
    helps: dict[str, str] = {}
    current = None
    for line in lines:
        header = re.match(r"^(\w+)\s*:", line)
        if header and not line.startswith(" "):
            current = header.group(1)
            helps[current] = ""
        elif current and line.startswith("    ") and line.strip():
            helps[current] = f"{helps[current]} {line.strip()}".strip()
        elif not line.strip() and current and helps.get(current):
            current = None
    return {k: v.split(". ")[0].rstrip(".") for k, v in helps.items()}


def _add_method_parser(sub, method: str) -> None:
    cls = _estimator_class(method)
    parser = sub.add_parser(
        method,
        help=_summary(cls),
        description=(
            f"{_summary(cls)}  Every option below is a parameter of rankmetric.{cls.__name__}."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    kind = METHODS[method][2]
    parser.add_argument(
        "--data",
        required=True,
        metavar="NAME|PATH",
        help="data set name (see `rankmetric data list`) or your own feature file "
        "(.npz/.csv/.parquet/.mat with X, y, optional cameras and split; docs/datasets.md)"
        + ("; multichannel sets are turned into SPD covariance matrices" if kind == "spd" else ""),
    )
    parser.add_argument("--out", metavar="PATH", help="save the fitted model to this .npz file")
    parser.add_argument(
        "--test-size",
        type=float,
        default=0.3,
        help="held-out fraction when the data set has no official test split",
    )
    parser.add_argument("-k", type=int, default=3, help="neighbours for the k-NN evaluation")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    group = parser.add_argument_group(f"{cls.__name__} parameters")
    helps = _parameter_help(cls)
    for name, default in cls().get_params(deep=False).items():
        group.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"param_{name}",
            default=default,
            metavar="VALUE",
            help=helps.get(name, " ").replace("%", "%%"),
            type=lambda text, d=default: _parse_value(text, d),
        )
    parser.set_defaults(func=run_fit, method=method)


def _train_test(args):
    from sklearn.model_selection import train_test_split

    from ..datasets import load_dataset, load_spd

    kind = METHODS[args.method][2]
    data = load_spd(args.data) if kind == "spd" else load_dataset(args.data)
    if kind == "features" and data.X.ndim != 2:
        raise ValueError(f"{args.data} is a multichannel set; use `rankmetric fit rpl` for it.")
    if data.X_test is not None:
        return data.X, data.y, data.X_test, data.y_test, "official test split"
    X_tr, X_te, y_tr, y_te = train_test_split(
        data.X, data.y, test_size=args.test_size, stratify=data.y, random_state=0
    )
    return X_tr, y_tr, X_te, y_te, f"stratified {args.test_size:.0%} hold-out, seed 0"


def _user_train_test(args):
    """Parts of a user's feature file: its ``split`` column, else an identity-disjoint hold-out
    when it has cameras (re-identification), else a stratified hold-out; and the test cameras."""
    from sklearn.model_selection import train_test_split

    from ..datasets import load_features

    data = load_features(args.data)
    if data.split is not None:
        train, test = data.rows("train"), data.rows("test", "query", "gallery")
        if train.size == 0 or test.size == 0:
            raise ValueError(f"{args.data}: the split column needs 'train' rows and test rows.")
        how = "the file's split column"
    elif data.cameras is not None:
        identities = np.unique(data.y)
        rng = np.random.default_rng(0)
        held = rng.choice(identities, max(2, round(args.test_size * len(identities))), False)
        test_mask = np.isin(data.y, held)
        if test_mask.all():
            raise ValueError(f"{args.data}: too few identities to hold {args.test_size:.0%} out.")
        train, test = np.flatnonzero(~test_mask), np.flatnonzero(test_mask)
        how = f"{args.test_size:.0%} of the identities held out, seed 0"
    else:
        train, test = train_test_split(np.arange(len(data.y)), test_size=args.test_size,
                                       stratify=data.y, random_state=0)  # fmt: skip
        how = f"stratified {args.test_size:.0%} hold-out, seed 0"
    cams = None if data.cameras is None else data.cameras[test]
    split = None if data.split is None else data.split[test]
    parts = (data.X[train], data.y[train], data.X[test], data.y[test], how)
    return parts, (cams, split)


def reid_report(embed, X, y, cameras, split, metric: str = "euclidean") -> dict:
    """Re-id scores (Market-1501 protocol) of the raw and the embedded test part: queries and
    gallery from the ``split`` column, else one query per (identity, camera) track."""
    from ..evaluate import query_gallery_split, reid_scores

    if split is not None and np.isin(split, ("query", "gallery")).any():
        query, gallery = np.flatnonzero(split == "query"), np.flatnonzero(split != "query")
    else:
        query, gallery = query_gallery_split(y, cameras)
    ranks = tuple(r for r in (1, 5, 10, 20) if r <= len(gallery))
    report = {}
    for name, Z in (("euclidean", X), ("learned", embed(X))):
        Z = _flatten(np.asarray(Z))
        s = reid_scores(Z[query], y[query], cameras[query], Z[gallery], y[gallery],
                        cameras[gallery], ranks=ranks, metric=metric, device="cpu")  # fmt: skip
        report.update({f"reid_rank{r}_{name}": v for r, v in s["cmc"].items()})
        report.update({f"reid_mAP_{name}": s["mAP"], f"reid_mINP_{name}": s["mINP"]})
        report.update(reid_queries_valid=s["n_valid"], reid_queries_skipped=s["n_skipped"])
    return report


def _flatten(X):
    return X.reshape(len(X), -1)


def _check_arguments(args: argparse.Namespace, params: dict) -> None:
    """Every option that can be checked before loading data and fitting (nothing is lost)."""
    if args.k < 1:
        raise ValueError(f"-k must be at least 1, got {args.k}.")
    if not 0 < args.test_size < 1:
        raise ValueError(f"--test-size must be between 0 and 1, got {args.test_size}.")
    if args.out:
        check_output_file(args.out)
    if "random_state" in params:
        check_random_state(params["random_state"])
    if "device" in params:
        check_device(params["device"])


def run_fit(args: argparse.Namespace) -> int:
    from ..distributed import rank
    from ..evaluate import knn_accuracy

    cls = _estimator_class(args.method)
    params = {k[len("param_") :]: v for k, v in vars(args).items() if k.startswith("param_")}
    _check_arguments(args, params)
    est = cls(**params)
    from ..datasets.user_features import is_feature_file

    test_cams = test_split = None
    if is_feature_file(args.data):
        (X_tr, y_tr, X_te, y_te, split), (test_cams, test_split) = _user_train_test(args)
    else:
        X_tr, y_tr, X_te, y_te, split = _train_test(args)
    if args.k > len(X_tr):
        raise ValueError(f"-k {args.k} exceeds the {len(X_tr)} training samples of {args.data}.")
    start = time.perf_counter()
    est.fit(X_tr, y_tr)
    fit_time = time.perf_counter() - start
    if rank() != 0:  # under torchrun every rank holds the same model: one report, one file
        return 0
    if args.out:  # saved before the report: a failing evaluation cannot lose the model
        est.save(args.out)
    report = {
        "method": cls.__name__,
        "data": args.data,
        "split": split,
        "n_train": int(len(X_tr)),
        "n_test": int(len(X_te)),
        "fit_seconds": round(fit_time, 3),
    }
    if np.isin(y_te, y_tr).all():  # k-NN accuracy needs the test classes in training
        report[f"knn{args.k}_accuracy_euclidean"] = knn_accuracy(
            _flatten(X_tr), y_tr, _flatten(X_te), y_te, k=args.k
        )
        report[f"knn{args.k}_accuracy_learned"] = knn_accuracy(
            _flatten(est.transform(X_tr)), y_tr, _flatten(est.transform(X_te)), y_te, k=args.k
        )
    if test_cams is not None:
        report.update(reid_report(est.transform, X_te, y_te, test_cams, test_split))
    if args.out:
        report["saved_to"] = args.out
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        width = max(len(k) for k in report)
        for key, value in report.items():
            scored = "accuracy" in key or key.startswith("reid_")
            shown = f"{value:.4f}" if isinstance(value, float) and scored else value
            print(f"{key:<{width}}  {shown}")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "fit",
        help="fit a metric learner on a data set and save it",
        description=(
            "Fit a metric learner on a data set's training part, print k-NN accuracy on its test "
            "part (learned metric vs Euclidean) and optionally save the model. "
            "`rankmetric fit METHOD --help` lists the method's parameters."
        ),
    )
    sub = parser.add_subparsers(dest="method_name", metavar="METHOD", required=True)
    for method in METHODS:
        _add_method_parser(sub, method)
