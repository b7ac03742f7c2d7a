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

from .._progress import ProgressLines
from ._args import (
    add_feature_file_options,
    check_column_options,
    check_device,
    check_input_file,
    check_output_dir,
    check_output_file,
    check_random_state,
    feature_file_columns,
    junk_ids,
    parameter_type,
)
from ._pairs import add_fit_pairs_option, run_fit_pairs

# method name on the command line -> (module, class, input kind)
METHODS = {
    "warca": ("rankmetric.estimators.warca", "WARCA", "features"),
    "kernel-warca": ("rankmetric.estimators.kernel_warca", "KernelWARCA", "features"),
    "ssne": ("rankmetric.estimators.ssne", "SSNE", "features"),
    "lmnn": ("rankmetric.estimators.lmnn", "LMNN", "features"),
    "itml": ("rankmetric.estimators.itml", "ITML", "features"),
    "kissme": ("rankmetric.estimators.pair_covariance", "KISSME", "features"),
    "xqda": ("rankmetric.estimators.pair_covariance", "XQDA", "features"),
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
    return _plain(doc.split("\n\n")[0].replace("\n", " "))


def _parameter_help(cls) -> dict[str, str]:
    """One line of help per parameter, from the numpydoc docstrings of ``cls`` and its bases.

    The first sentence of the parameter's description, Sphinx markup removed, followed by its
    choices when the type line lists them (``{"a", "b"}``); a parameter described only as
    ``As <base class>`` takes its base class's help, one without a description its type line.
    """
    helps: dict[str, str] = {}
    for klass in reversed([k for k in cls.__mro__ if k is not object]):
        for name, (kind, text) in _numpydoc_parameters(klass).items():
            line = _first_sentence(_plain(text))
            if line.startswith("As ") and name in helps:
                continue  # "As SPDNetEmbedding": keep the base class's help
            choices = re.search(r"\{([^}]*)\}", kind)
            if choices and not line.startswith(("As ", "See ")):
                names = ", ".join(c.strip().strip("'\"") for c in choices.group(1).split(","))
                line = f"{line}; one of {names}" if line else f"one of {names}"
            helps[name] = line or _plain(kind)
    return helps


def _numpydoc_parameters(cls) -> dict[str, tuple[str, str]]:
    """``{name: (type line, description)}`` of the Parameters section of ``cls``'s own docstring.

    Understands grouped names (``a, b : float``) and name lists running over several lines.
    """
    lines = (cls.__doc__ and inspect.cleandoc(cls.__doc__) or "").splitlines()
    try:
        start = next(i for i, ln in enumerate(lines[:-1]) if ln.strip() == "Parameters"
                     and set(lines[i + 1].strip()) == {"-"}) + 2  # fmt: skip
    except StopIteration:
        return {}
    params: dict[str, tuple[str, str]] = {}
    names: list[str] = []
    kind, text, header = "", [], ""
    for i in range(start, len(lines)):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and set(lines[i + 1].strip()) == {"-"}:
            break  # the next section
        if line and not line.startswith(" "):
            if names and not text and header.rstrip().endswith(","):
                header += " " + line.strip()  # a name list running over the next line
            else:
                for name in names:
                    params[name] = (kind, " ".join(text))
                header, text = line.strip(), []
            parts = re.split(r"\s+:(?:\s+|$)", header, maxsplit=1)
            name_part, kind = parts[0], parts[1] if len(parts) > 1 else ""
            names = [n.strip() for n in name_part.split(",") if n.strip()]
        elif line.strip():
            text.append(line.strip())
    for name in names:
        params[name] = (kind, " ".join(text))
    return params


def _first_sentence(text: str) -> str:
    """Up to the first full stop outside brackets that is not an abbreviation ("et al.")."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1, "[": 1, "]": -1}.get(char, 0)
        if char == "." and depth <= 0 and text[i + 1 : i + 2] in ("", " "):
            word = text[:i].rsplit(" ", 1)[-1]
            if word not in ("al", "e.g", "i.e", "cf", "vs", "etc") and not word[-1:].isdigit():
                return text[:i]
    return text.rstrip(".")


#: LaTeX of the docstrings' ``:math:`` roles, as a terminal shows it.
_LATEX_TEXT = {
    r"\lVert": "‖", r"\rVert": "‖", r"\Vert": "‖", r"\top": "ᵀ", r"\cdot": "·",
    r"\epsilon": "ε", r"\lambda": "λ", r"\gamma": "γ", r"\mu": "μ", r"\sigma": "σ",
    r"\Sigma": "Σ", r"\sum": "Σ", r"\chi": "χ", r"\tfrac12": "½", r"\frac12": "½",
    r"\sqrt": "√", r"\exp": "exp", r"\log": "log", r"\le": "≤", r"\ge": "≥",
    r"\operatorname": "", r"\mathrm": "", r"\mathtt": "", r"\text": "", r"\,": " ",
}  # fmt: skip


def _math_text(latex: str) -> str:
    r"""A ``:math:`` role's LaTeX as plain text (``\lVert L(a - b) \rVert`` → ``‖L(a - b)‖``)."""
    for macro, text in _LATEX_TEXT.items():
        latex = re.sub(re.escape(macro) + r"(?![A-Za-z])", text, latex)
    latex = latex.replace("\\_", "_").replace("{", "").replace("}", "")
    latex = latex.replace("^ᵀ", "ᵀ").replace("^2", "²")
    return re.sub(r"‖\s+", "‖", re.sub(r"\s+‖", "‖", latex))


def _plain(text: str) -> str:
    """``text`` without Sphinx markup: roles (``:class:`~a.B``` → ``B``), maths as plain text,
    literals, backticks."""
    text = re.sub(r":math:`([^`]*)`", lambda m: _math_text(m.group(1)), text)
    text = re.sub(r":\w+:`~?([^`<]*?)\s*<[^`>]*>`", r"\1", text)  # :role:`title <target>`
    text = re.sub(r":\w+:`~([^`]*)`", lambda m: m.group(1).rsplit(".", 1)[-1], text)
    text = re.sub(r":\w+:`([^`]*)`", r"\1", text)
    return text.replace("``", "").replace("`", "")


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
    if kind == "features":  # every learner on feature vectors has a tuned learner
        parser.add_argument(
            "--tune", nargs="?", type=float, const=10.0, default=None, metavar="BUDGET",
            help="choose the decisive hyper-parameters on identities/classes held out of the "
            "training part (successive halving, rankmetric.tuning), within BUDGET default fits "
            "(default 10); the options below are the search's starting point",
        )  # fmt: skip
    group = parser.add_argument_group(f"{cls.__name__} parameters")
    helps = _parameter_help(cls)
    for name, default in cls().get_params(deep=False).items():
        group.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"param_{name}",
            default=default,
            metavar="VALUE",
            help=helps.get(name, " ").replace("%", "%%"),
            type=parameter_type(_parse_value, default),
        )
    add_fit_pairs_option(parser, cls)
    if kind == "spd":
        _add_spd_options(parser)
    else:
        add_feature_file_options(parser)
    parser.set_defaults(func=run_fit, method=method)


# ----------------------------------------------------------------------------- SPD methods: trials


def _add_spd_options(parser: argparse.ArgumentParser) -> None:
    """``--covariance-estimator``, and ``--data`` accepting a ``.npz`` file of raw trials."""
    from ..preprocessing import Covariances

    for action in parser._actions:
        if action.dest == "data":
            action.help += (
                "; or a .npz file of raw trials: X of shape (n_trials, channels, time) and labels "
                "y, optionally X_test and y_test (else --test-size is held out) and domains "
                "(session or subject of each trial; domains_test beside X_test), which are "
                "passed to fit and transform: each domain is re-centred at its own mean"
            )
    choices = _parameter_help(Covariances).get("estimator", "")
    choices = choices[choices.find("one of") :] if "one of" in choices else ""
    parser.add_argument(
        "--covariance-estimator",
        metavar="NAME",
        default=None,
        help=(
            "covariance estimator of each trial, passed to "
            f"rankmetric.preprocessing.Covariances(estimator=NAME){'; ' if choices else ''}"
            f"{choices}. None: the data set's own (OAS for the bundled multichannel sets), "
            "Covariances' default for a trial file"
        ).replace("%", "%%"),
    )

    parser.add_argument(
        "--test-domain",
        metavar="VALUE",
        default=None,
        help="cross-session / cross-subject evaluation: hold out every trial of this domain "
        "(a value of the trial file's domains array) as the test part, train on the others; "
        "the held-out domain is re-centred at its own mean, unseen in training",
    )


def _is_trial_file(data: str) -> bool:
    return str(data).lower().endswith(".npz")


def _covariances(estimator: str | None):
    """The ``Covariances`` transformer of ``--covariance-estimator`` (it checks the name)."""
    from sklearn.base import clone

    from ..preprocessing import Covariances

    cov = Covariances(estimator=estimator or "scm")  # Covariances' default, said here
    try:
        clone(cov).fit(np.zeros((1, 2, 4)))  # checks the parameters, before any data is read
    except ValueError as exc:
        raise ValueError(f"--covariance-estimator: {exc}") from None
    return cov


def _load_spd_data(args: argparse.Namespace):
    """The SPD matrices of ``--data``: a bundled set, or a ``.npz`` file of raw trials."""
    from ..datasets import Dataset, load_spd

    estimator = getattr(args, "covariance_estimator", None)
    if _is_trial_file(args.data):
        X, y, X_test, y_test = _read_trial_file(args.data)
        cov = _covariances(estimator)
        name = cov.get_params()["estimator"]
        return Dataset(
            X=cov.fit_transform(X),
            y=y,
            X_test=None if X_test is None else cov.transform(X_test),
            y_test=y_test,
            name=str(args.data),
            kind="spd",
            description=f"raw trials of {args.data}; Covariances(estimator={name!r})",
        )
    if estimator is None:
        return load_spd(args.data)
    cov = _covariances(estimator)
    from ..datasets._loaders import encode_labels, load_trials  # the original-length trials

    try:
        train, test = load_trials(args.data)
    except ValueError:
        raise ValueError(
            f"--covariance-estimator applies to multichannel trials; {args.data!r} is not a "
            "bundled multichannel set (derived SPD sets such as fmnist-regcov come as matrices)."
        ) from None
    _, y, y_test = encode_labels(train.labels, test.labels)
    return Dataset(
        X=cov.fit_transform(train.series),
        y=y.astype(np.int64),
        X_test=cov.transform(test.series),
        y_test=y_test.astype(np.int64),
        name=args.data,
        kind="spd",
    )


def _read_trial_file(path) -> tuple:
    """``(X, y, X_test, y_test)`` of a ``.npz`` trial file, checked (``ValueError`` naming it);
    the arrays may carry the aliases of :data:`rankmetric.datasets.user_trials.TRIAL_ALIASES`."""
    data = _trial_data(path)
    return data.X, data.y, data.X_test, data.y_test


def _trial_data(path):
    """:func:`~rankmetric.datasets.user_trials.read_trial_file`, its errors naming ``--data``."""
    from ..datasets.user_trials import read_trial_file

    check_input_file(path, "--data")
    try:
        return read_trial_file(path)
    except ValueError as exc:
        raise ValueError(f"--data {exc}") from None


def _trial_domains(path, n: int, n_test: int | None) -> tuple:
    """``(domains, domains_test)`` of a trial file (each None when absent), checked."""
    data = _trial_data(path)
    found = {"domains": data.domains, "domains_test": data.domains_test}
    for key, count in (("domains", n), ("domains_test", n_test)):
        value = found.get(key)
        if value is not None and (count is None or value.shape != (count,)):
            raise ValueError(
                f"--data {path}: {key} must hold one domain per trial of "
                f"{'X' if key == 'domains' else 'X_test'} ({count}), got shape {value.shape}."
            )
    return found["domains"], found["domains_test"]


def _spd_train_test(args):
    """:func:`_train_test` of an SPD method, with the trial file's domains (or Nones):
    ``--test-domain`` holds one domain out whole (cross-session / cross-subject)."""
    if not _is_trial_file(args.data):
        if args.test_domain is not None:
            raise ValueError("--test-domain needs a trial file with a domains array.")
        return (*_train_test(args), (None, None))
    X, y, X_te, y_te, split = _train_test(args, keep_order=True)
    official = split == "official test split"
    domains, domains_test = _trial_domains(args.data, len(X), len(X_te) if official else None)
    if args.test_domain is not None:
        if domains is None or official:
            raise ValueError("--test-domain needs a trial file with domains and without X_test.")
        held = domains.astype(str) == str(args.test_domain)
        if not held.any() or held.all():
            names = sorted({str(d) for d in domains})
            raise ValueError(f"--test-domain {args.test_domain!r} must be one of {names}, "
                             "and not the only one.")  # fmt: skip
        how = f"domain {args.test_domain} held out (cross-domain), trained on the others"
        return X[~held], y[~held], X[held], y[held], how, (domains[~held], domains[held])
    if official:
        return X, y, X_te, y_te, split, (domains, domains_test)
    from sklearn.model_selection import train_test_split

    extra = [] if domains is None else [domains]  # the same split with or without domains
    parts = train_test_split(X, y, *extra, test_size=args.test_size, stratify=y, random_state=0)
    d_tr, d_te = (parts[4], parts[5]) if domains is not None else (None, None)
    how = f"stratified {args.test_size:.0%} hold-out, seed 0"
    return parts[0], parts[2], parts[1], parts[3], how, (d_tr, d_te)


def _train_test(args, keep_order: bool = False):
    from sklearn.model_selection import train_test_split

    from ..datasets import load_dataset

    kind = METHODS[args.method][2]
    data = _load_spd_data(args) if kind == "spd" else load_dataset(args.data)
    if kind == "features" and data.X.ndim != 2:
        raise ValueError(f"{args.data} is a multichannel set; use `rankmetric fit rpl` for it.")
    if data.X_test is not None:
        return data.X, data.y, data.X_test, data.y_test, "official test split"
    if keep_order:  # the caller splits: every trial, in the file's order
        return data.X, data.y, data.X[:0], data.y[:0], "file order"
    X_tr, X_te, y_tr, y_te = train_test_split(
        data.X, data.y, test_size=args.test_size, stratify=data.y, random_state=0
    )
    return X_tr, y_tr, X_te, y_te, f"stratified {args.test_size:.0%} hold-out, seed 0"


def user_file_rows(data, test_size: float, path) -> tuple[np.ndarray, np.ndarray, str]:
    """``(train rows, test rows, how)`` of a user's feature file, as ``rankmetric fit`` splits
    it: its ``split`` column, else an identity-disjoint hold-out when it has cameras
    (re-identification), else a stratified hold-out (seed 0 both). ``rankmetric evaluate
    --model`` splits a file without a ``split`` column the same way, so that it scores the rows
    the model was not trained on."""
    from sklearn.model_selection import train_test_split

    if data.split is not None:
        train, test = data.rows("train"), data.rows("test", "query", "gallery")
        if train.size == 0 or test.size == 0:
            raise ValueError(f"{path}: the split column needs 'train' rows and test rows.")
        return train, test, "the file's split column"
    if data.cameras is not None:
        identities = np.unique(data.y)
        rng = np.random.default_rng(0)
        held = rng.choice(identities, max(2, round(test_size * len(identities))), False)
        test_mask = np.isin(data.y, held)
        if test_mask.all():
            raise ValueError(f"{path}: too few identities to hold {test_size:.0%} out.")
        how = f"{test_size:.0%} of the identities held out, seed 0"
        return np.flatnonzero(~test_mask), np.flatnonzero(test_mask), how
    train, test = train_test_split(np.arange(len(data.y)), test_size=test_size,
                                   stratify=data.y, random_state=0)  # fmt: skip
    return train, test, f"stratified {test_size:.0%} hold-out, seed 0"


def _user_train_test(args):
    """Parts of a user's feature file (:func:`user_file_rows`) and the test cameras."""
    from ..datasets import load_features

    data = load_features(args.data, **feature_file_columns(args))
    train, test, how = user_file_rows(data, args.test_size, args.data)
    cams = None if data.cameras is None else data.cameras[test]
    train_cams = None if data.cameras is None else data.cameras[train]
    split = None if data.split is None else data.split[test]
    parts = (data.X[train], data.y[train], data.X[test], data.y[test], how)
    return parts, (cams, split, train_cams)


def model_preprocessing(est):
    """``(preprocess, description)``: the fixed preprocessing ``est`` applies before its learned
    part — the per-feature standardisation ``(x − mean_) / scale_`` of WARCA and SSNE (with
    ``standardize=True``) — or ``(None, "none")``. The Euclidean baseline of a report is scored
    on these features, so that the gain printed is the learned part's alone."""
    mean, scale = getattr(est, "mean_", None), getattr(est, "scale_", None)
    if mean is None or scale is None or np.ndim(scale) != 1:
        return None, "none"
    if np.all(scale == 1) and np.all(mean == 0):  # standardize=False
        return None, "none"
    return (lambda X: (np.asarray(X) - mean) / scale), "standardised (the model's mean_, scale_)"


def reid_report(embed, X, y, cameras, split, metric: str = "euclidean", *,
                preprocess=None, rerank: bool = False, junk_ids=(-1,)) -> dict:  # fmt: skip
    """Re-id scores (Market-1501 protocol) of the test part under plain Euclidean distance (on
    the features after the model's ``preprocess`` when given, and on the raw ones) and embedded:
    queries and gallery from the ``split`` column, else one query per (identity, camera)
    track; ``rerank`` re-ranks each ranking (k-reciprocal), ``junk_ids`` are ignored in the
    gallery (:func:`rankmetric.evaluate.reid_scores`)."""
    from ..evaluate import query_gallery_split, reid_scores, rerank_k_reciprocal

    if split is not None and np.isin(split, ("query", "gallery")).any():
        query, gallery = np.flatnonzero(split == "query"), np.flatnonzero(split != "query")
    else:
        query, gallery = query_gallery_split(y, cameras)
    ranks = tuple(r for r in (1, 5, 10, 20) if r <= len(gallery))
    report = {}
    spaces = [("euclidean", X), ("learned", embed(X))]
    if preprocess is not None:
        spaces = [("euclidean", preprocess(X)), ("euclidean_raw", X), spaces[1]]
    for name, Z in spaces:
        Z = _flatten(np.asarray(Z))
        if rerank:
            D = rerank_k_reciprocal(Z[query], Z[gallery], metric=metric, device="cpu")
            q_in, g_in, how = D, None, "precomputed"
        else:
            q_in, g_in, how = Z[query], Z[gallery], metric
        s = reid_scores(q_in, y[query], cameras[query], g_in, y[gallery], cameras[gallery],
                        ranks=ranks, metric=how, device="cpu", junk_ids=junk_ids)  # fmt: skip
        report.update({f"reid_rank{r}_{name}": v for r, v in s["cmc"].items()})
        report.update({f"reid_mAP_{name}": s["mAP"], f"reid_mINP_{name}": s["mINP"]})
        report.update(reid_queries_valid=s["n_valid"], reid_queries_skipped=s["n_skipped"])
    return report


def _transform(est, X, domains):
    """``est.transform(X)``, with the domains of ``X`` when the model was fitted with them (a
    test file without domains_test is one new domain, re-centred at its own mean)."""
    if getattr(est, "domains_", None) is None:
        return est.transform(X)
    return est.transform(X, domains=domains)


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
    if params.get("checkpoint_dir") is not None:
        check_output_dir(params["checkpoint_dir"], "--checkpoint-dir")


def _maybe_tuned(args: argparse.Namespace, est):
    """``est``, or its tuned learner with ``--tune`` (rankmetric.tuning)."""
    if getattr(args, "tune", None) is None:
        return est
    from ..tuning import tuned_learner

    return tuned_learner(args.method, est, args.tune)


def run_fit(args: argparse.Namespace) -> int:
    from ..distributed import rank

    cls = _estimator_class(args.method)
    params = {k[len("param_") :]: v for k, v in vars(args).items() if k.startswith("param_")}
    _check_arguments(args, params)
    est = cls(**params)
    if getattr(args, "pairs", None):
        return run_fit_pairs(args, est)
    est = _maybe_tuned(args, est)
    if not args.data:
        raise ValueError("--data NAME is required (or --pairs PAIRS.npz for a pair learner).")
    from ..datasets.user_features import is_feature_file

    progress = ProgressLines("fit", enabled=rank() == 0)
    test_cams = test_split = train_cams = None
    domains_tr = domains_te = None
    check_column_options(args, is_feature_file(args.data))
    if METHODS[args.method][2] == "spd":
        X_tr, y_tr, X_te, y_te, split, (domains_tr, domains_te) = _spd_train_test(args)
    elif is_feature_file(args.data):
        parts, (test_cams, test_split, train_cams) = _user_train_test(args)
        X_tr, y_tr, X_te, y_te, split = parts
    else:
        X_tr, y_tr, X_te, y_te, split = _train_test(args)
    if args.k > len(X_tr):
        raise ValueError(f"-k {args.k} exceeds the {len(X_tr)} training samples of {args.data}.")
    progress(f"{args.data}: {len(X_tr)} training and {len(X_te)} test items ({split}); "
             f"fitting {cls.__name__}")  # fmt: skip
    start = time.perf_counter()
    fit_params = {}
    if train_cams is not None and "cameras" in inspect.signature(est.fit).parameters:
        fit_params["cameras"] = train_cams  # the file's cameras (positives="cross_camera")
    if domains_tr is not None:
        fit_params["domains"] = domains_tr  # each session / subject at its own mean
    est.fit(X_tr, y_tr, **fit_params)
    fit_time = time.perf_counter() - start
    progress(f"{cls.__name__} fitted", start)
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
    preprocess, report["preprocessing"] = model_preprocessing(est)
    report.update(_knn_report(est, args.k, (X_tr, y_tr, domains_tr), (X_te, y_te, domains_te),
                              preprocess))  # fmt: skip
    if test_cams is not None:
        report.update(reid_report(est.transform, X_te, y_te, test_cams, test_split,
                                  preprocess=preprocess, rerank=args.rerank,
                                  junk_ids=junk_ids(getattr(args, "junk_id", None))))  # fmt: skip
    report.update({"tuned_params": est.best_params_} if hasattr(est, "best_params_") else {})
    progress("scored")
    if args.out:
        report["saved_to"] = args.out
    _print_report(report, args.json)
    return 0


def _knn_report(est, k: int, train: tuple, test: tuple, preprocess) -> dict:
    """k-NN accuracy of the learned metric and of Euclidean distance on the same features
    (after the model's ``preprocess``; then on the raw ones too, ``..._euclidean_raw``)."""
    from ..evaluate import knn_accuracy

    (X_tr, y_tr, d_tr), (X_te, y_te, d_te) = train, test
    if not np.isin(y_te, y_tr).all():  # k-NN accuracy needs the test classes in training
        return {}
    knn = lambda A, B: knn_accuracy(_flatten(A), y_tr, _flatten(B), y_te, k=k)  # noqa: E731
    report = {}
    if preprocess is not None:  # the learned part's gain: Euclidean on the same features
        report[f"knn{k}_accuracy_euclidean"] = knn(preprocess(X_tr), preprocess(X_te))
        report[f"knn{k}_accuracy_euclidean_raw"] = knn(X_tr, X_te)
    else:
        report[f"knn{k}_accuracy_euclidean"] = knn(X_tr, X_te)
    Z_tr = _transform(est, X_tr, d_tr)
    Z_te = _transform(est, X_te, d_te if d_tr is not None else None)
    report[f"knn{k}_accuracy_learned"] = knn(Z_tr, Z_te)
    return report


def _print_report(report: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, indent=2))
        return
    width = max(len(k) for k in report)
    for key, value in report.items():
        scored = "accuracy" in key or key.startswith("reid_")
        shown = f"{value:.4f}" if isinstance(value, float) and scored else value
        print(f"{key:<{width}}  {shown}")


def register(subparsers, full: bool = True) -> None:
    """Add ``fit``; its methods' options (which import every estimator) only when ``full``."""
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
    if not full:
        return
    for method in METHODS:
        _add_method_parser(sub, method)
