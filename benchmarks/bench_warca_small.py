"""WARCA's data-scaled defaults on small sets: chosen on *validation* data, then side by side
with scikit-learn's NCA.

``--select`` (the choice; the outer test halves are never read): each outer training half of
``StratifiedKFold(2, shuffle=True, random_state=0)`` is split again
(``StratifiedKFold(2, shuffle=True, random_state=1)``); every candidate rule is fitted on an
inner half and scored (k-NN, k = 3) on the other, next to NCA on the same inner halves
(WARCA without its held-out check, which does not change the model).

Default (the comparison): WARCA with its defaults and NCA fitted on each outer training half
(898 points on digits) and scored on the held-out half; process CPU time of ``fit``, median of
``--repeats`` fits per fold (alternating the sides), with one torch/BLAS thread and then the
default threads (run the script with ``OMP_NUM_THREADS=1`` for the one-thread row). WARCA's
default ``fit`` also runs the held-out check (``held_out_check="auto"``: up to three probe fits,
each on part of the classes, compared with the Euclidean distance on the others;
``docs/reliability.md``), which NCA does not:
the table gives WARCA's time with it and without it (``held_out_check=False``, the same model),
and the cube window that was measured and not adopted (without the check) for reference.

``--check`` (validation only, like ``--select``): the share of WARCA's default ``fit`` that
is its held-out check, and candidates that make the check cheaper or share its work with the
final fit -- the probes cut to a budget of steps, and the final fit warm-started from the
first probe's map -- with each candidate's check verdict (its ``t``, the paired difference in
the held-out classes' standard errors, and whether it warns -- below or not better -- as the
default check does).

``--sequential`` (validation only): the held-out check's folds one at a time, and what its
standard error counts. On the inner halves of the sets with six classes or more (at most 2,000
rows each), WARCA's check is run with every fold; each fold's comparison (z: the difference in
the held-out items' standard errors), the pooled t over the held-out classes, and two rules
replayed on the same folds: the items' standard error with normal O'Brien–Fleming bounds,
warning only when below (the check before it counted classes), and the classes' with Student's
t bounds, warning when below or not better (the check now); each with its agreement with the
same rule run on every fold (whether it warns), the probes it runs, and whether two seeds of
one inner split (other classes held out) give the same warning.

    OMP_NUM_THREADS=1 python benchmarks/bench_warca_small.py --select
    OMP_NUM_THREADS=1 python benchmarks/bench_warca_small.py --check --repeats 2
    OMP_NUM_THREADS=1 python benchmarks/bench_warca_small.py --sequential
``--before-src DIR`` (the comparison, two source trees): another source tree (an older commit's
``src``: ``git archive REV src | tar -x -C DIR``) and this one, each repeat running both
alternately in child processes (so both see the same load): process CPU time of WARCA's ``fit``
without and with the held-out check and of NCA's (the same code in both: a control for the load),
on each outer training half, medians; and whether the two trees fit bit-identical maps.

``--profile``: where a step's time goes, phase by phase (process CPU time per step over five
fits of WARCA without the check on digits' first outer training half; the phases nest).

    OMP_NUM_THREADS=1 python benchmarks/bench_warca_small.py --repeats 5
    python benchmarks/bench_warca_small.py --repeats 5 --threads default
    OMP_NUM_THREADS=1 python benchmarks/bench_warca_small.py --profile
    git archive REV src | tar -x -C /tmp/b
    OMP_NUM_THREADS=1 python benchmarks/bench_warca_small.py --repeats 5 --before-src /tmp/b/src
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import torch
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier, NeighborhoodComponentsAnalysis
from sklearn.preprocessing import StandardScaler

from rankmetric import WARCA
from rankmetric.datasets import load_dataset
from rankmetric.estimators.warca import auto_schedule
from rankmetric.training import (
    compare_with_reference,
    critical_value,
    holdout_folds,
    pooled,
    sample_retrieval_items,
    verdict,
)

SETS = ["digits", "wine", "wdbc"]
#: More sets for --select (the rule must hold beyond the three compared with NCA).
SELECT_SETS = SETS + ["iris", "ionosphere", "sonar"]
#: Candidate rules (WARCA parameters; the unset ones keep their defaults; ``"cube3"`` and
#: ``"cube5"``: the window ``clip(50 · (B/512)³, 3 or 5, 50)`` on the default batch B; the
#: default is the square window ``clip(50 · (B/512)², 10, 50)``).
SHORT = "window clip(50·(B/512)³, 5, 50) (not adopted)"
RULES = {
    "default: window clip(50·(B/512)², 10, 50)": {},
    "window clip(50·(B/512)³, 3, 50)": {"tol_window": "cube3"},
    SHORT: {"tol_window": "cube5"},
}


def resolve(params: dict, n_samples: int) -> dict:
    """The rule's WARCA parameters for ``n_samples`` training points."""
    out = dict(params)
    batch = auto_schedule(n_samples, None, None)[0]
    floor = {"cube3": 3, "cube5": 5}.get(out.get("tol_window"))
    if floor is not None:
        out["tol_window"] = int(np.clip(round(50 * (batch / 512) ** 3), floor, 50))
    return out


def fit_score(est, X, y, fit_idx, val_idx) -> tuple[float, float]:
    """Process CPU seconds of ``fit`` and k-NN (k = 3) accuracy % on ``val_idx``."""
    scaler = StandardScaler().fit(X[fit_idx])
    X_fit, X_val = scaler.transform(X[fit_idx]), scaler.transform(X[val_idx])
    start = time.process_time()
    est.fit(X_fit, y[fit_idx])
    seconds = time.process_time() - start
    knn = KNeighborsClassifier(3).fit(est.transform(X_fit), y[fit_idx])
    return seconds, 100 * knn.score(est.transform(X_val), y[val_idx])


def inner_splits(X, y):
    outer = StratifiedKFold(2, shuffle=True, random_state=0).split(X, y)
    for train, _ in outer:  # the outer test half is never used here
        inner = StratifiedKFold(2, shuffle=True, random_state=1).split(X[train], y[train])
        for fit_idx, val_idx in inner:
            yield train[fit_idx], train[val_idx]


def select(sets) -> None:
    print("| data | rule | validation acc % | fit CPU s | × NCA |")
    print("|---|---|---|---|---|")
    for name in sets:
        data = load_dataset(name)
        X, y = data.X.astype(np.float64), data.y
        splits = list(inner_splits(X, y))
        nca = [
            fit_score(NeighborhoodComponentsAnalysis(random_state=0), X, y, f, v) for f, v in splits
        ]
        base = np.mean([s for s, _ in nca])
        print(f"| {name} | NCA | {np.mean([a for _, a in nca]):.2f} | {base:.3f} | 1.00 |")
        for rule, params in RULES.items():
            runs = [
                fit_score(
                    WARCA(random_state=i, held_out_check=False, **resolve(params, len(f))),
                    X,
                    y,
                    f,
                    v,
                )
                for i, (f, v) in enumerate(splits)
            ]
            sec, acc = np.mean([s for s, _ in runs]), np.mean([a for _, a in runs])
            print(f"| {name} | {rule} | {acc:.2f} | {sec:.3f} | {sec / base:.2f} |", flush=True)


SIDES = ("WARCA", "WARCA, no check", "NCA", "short")


def compare(sets, repeats: int) -> None:
    print(
        "| data | N train | WARCA 3-NN % | NCA 3-NN % | WARCA CPU s (no check) | NCA CPU s "
        "| NCA ÷ WARCA (no check) | WARCA, cube window (not adopted): CPU s (3-NN %) "
        "| check: probes run / planned (fits warned) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in sets:
        data = load_dataset(name)
        X, y = data.X.astype(np.float64), data.y
        times = {side: [] for side in SIDES}
        accs = {side: [] for side in SIDES}
        folds = list(StratifiedKFold(2, shuffle=True, random_state=0).split(X, y))
        checks = []  # the default fits' held-out checks (run and planned folds, verdict)
        for train, test in folds:
            per_fold = {side: [] for side in SIDES}
            short = resolve(RULES[SHORT], len(train))
            for r in range(repeats):  # alternate the sides
                for side, est in zip(
                    SIDES,
                    (
                        WARCA(random_state=r),
                        WARCA(random_state=r, held_out_check=False),
                        NeighborhoodComponentsAnalysis(random_state=r),
                        WARCA(random_state=r, held_out_check=False, **short),
                    ),
                    strict=True,
                ):
                    sec, acc = fit_score(est, X, y, train, test)
                    per_fold[side].append(sec)
                    accs[side].append(acc)
                    check = est.get_params().get("held_out_check") and est.held_out_check_
                    if check and check["status"] == "done":
                        n = check["n_folds"]
                        warned = check.get("verdict", "below" if check["below"] else "") in WARNS
                        checks.append((n, check.get("folds_planned", n), warned))
            for side in SIDES:
                times[side].append(np.median(per_fold[side]))
        w, bare, n = (np.mean(times[side]) for side in ("WARCA", "WARCA, no check", "NCA"))
        print(
            f"| {name} | {len(folds[0][0])} | {np.mean(accs['WARCA']):.2f} | "
            f"{np.mean(accs['NCA']):.2f} | {w:.3f} ({bare:.3f}) | {n:.3f} | "
            f"{n / w:.2f} ({n / bare:.2f}) | "
            f"{np.mean(times['short']):.3f} ({np.mean(accs['short']):.2f}) | "
            + (
                f"{sum(c[0] for c in checks)} / {sum(c[1] for c in checks)} "
                f"({sum(c[2] for c in checks)} of {len(checks)}) |"
                if checks
                else "skipped |"
            ),
            flush=True,
        )


#: ``--check`` candidates: (steps of each probe (None: the default stopping), warm start of the
#: final fit from the first probe's map, one fold only (two classes held out once, as a
#: ``validation_split="groups"`` would, instead of the check's six over up to three folds)).
DEFAULT_FIT = "default fit (check: up to 3 probes, one at a time)"
CHECK_CANDIDATES = {
    DEFAULT_FIT: (None, False, False),
    "probes cut to 30 steps": (30, False, False),
    "probes cut to 20 steps": (20, False, False),
    "probes cut to 14 steps": (14, False, False),
    "final warm-started from probe 1": (None, True, False),
    "probes cut to 14 steps, final warm-started": (14, True, False),
    "one fold (2 of 10 classes), final warm-started": (None, True, True),
}
#: The held-out check's convention for labels (``rankmetric.estimators`` documents it:
#: ``docs/reliability.md``): a fifth of the classes per fold, six held out over at most three
#: folds, at most 2,000 items ranked, mAP against the Euclidean distance.
CHECK_FOLDS = {"min_groups": 6, "min_held": 6, "max_folds": 3}
#: The check's one-sided threshold (``rankmetric.estimators._held_out.Z_BELOW``): about 5 %.
Z_BELOW = 1.645


def emulated_check(
    X, y, seed: int, max_iter: int | None = None, one_fold: bool = False, all_folds: bool = False
):
    """WARCA's held-out check on ``(X, y)`` redone from the public pieces, with each probe cut
    to ``max_iter`` steps (None: the default stopping) and, with ``one_fold``, the first fold
    only: ``(result, probes)``, ``result`` as ``held_out_check_`` (None when the check skips:
    fewer than six classes with two items), with ``folds``, each fold's own comparison. The
    folds run one at a time until the pooled difference is beyond the sequential bound
    (:func:`sequential_bounds`); ``all_folds`` runs every fold (the verdict is still the last
    look's). Equal to ``WARCA(random_state=seed)``'s own check with the defaults
    (``tests/bench/test_bench_warca_small.py``)."""
    codes = np.unique(y, return_inverse=True)[1].ravel()
    if (np.bincount(codes) >= 2).sum() < CHECK_FOLDS["min_groups"]:
        return None, []
    folds = holdout_folds(
        codes, 0.2, np.random.default_rng(seed), **CHECK_FOLDS, what="the held-out check"
    )
    folds = folds[:1] if one_fold else folds
    rng, results, probes = np.random.default_rng(seed), [], []
    for (train, held), z_bound in zip(folds, sequential_bounds(len(folds)), strict=True):
        probe = WARCA(random_state=seed, held_out_check=False)
        if max_iter is not None:
            probe.set_params(max_iter=max_iter)
        probes.append(probe.fit(X[train], y[train]))
        items = held[sample_retrieval_items(codes[held], rng, 2000)]
        results.append(
            compare_with_reference(probe.transform(X[items]), X[items], codes[items], metric="map")
        )
        result = pooled(results)
        bound = critical_value(z_bound, result["dof"])
        if not all_folds and abs(result["difference"]) > bound * result["standard_error"]:
            break
    result["verdict"] = verdict(result, bound)
    result["below"] = result["verdict"] == "below"
    result["folds"] = results
    return result, probes


def check_candidate(max_iter, warm, one_fold, X, y, fit_idx, val_idx, seed):
    """CPU s of the default ``fit`` done the candidate's way, 3-NN accuracy % on ``val_idx`` of
    the model it returns, its check's ``(t, warns)`` (``nan, None`` when skipped), and the steps
    of the final fit and of its probes (an empty list when they are the library's own)."""
    scaler = StandardScaler().fit(X[fit_idx])
    X_fit, X_val, y_fit = scaler.transform(X[fit_idx]), scaler.transform(X[val_idx]), y[fit_idx]
    start = time.process_time()
    if (max_iter, warm, one_fold) == CHECK_CANDIDATES[DEFAULT_FIT]:  # the library's own fit
        est = WARCA(random_state=seed).fit(X_fit, y_fit)
        check = est.held_out_check_ if est.held_out_check_["status"] == "done" else None
        probes = []
    else:  # the check first (its probes), then the final fit, from the first probe's map
        check, probes = emulated_check(X_fit, y_fit, seed, max_iter, one_fold)
        init = probes[0].components_ if warm and probes else "random"
        est = WARCA(random_state=seed, held_out_check=False, init=init).fit(X_fit, y_fit)
    seconds = time.process_time() - start
    knn = KNeighborsClassifier(3).fit(est.transform(X_fit), y_fit)
    acc = 100 * knn.score(est.transform(X_val), y[val_idx])
    steps = (est.n_iter_, [probe.n_iter_ for probe in probes])
    if check is None:
        return seconds, acc, float("nan"), None, *steps
    warns = check["verdict"] in WARNS
    return seconds, acc, check["difference"] / check["standard_error"], warns, *steps


def spread(values) -> str:
    """``median (min–max)`` of integers."""
    return f"{np.median(values):.0f} ({min(values)}–{max(values)})"


def check_share(sets, repeats: int) -> None:
    print(
        "| data | candidate | validation acc % | fit CPU s | × NCA (NCA ÷ WARCA) "
        "| check t (fits warned) | warns as default | steps: final fit; probes |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in sets:
        data = load_dataset(name)
        X, y = data.X.astype(np.float64), data.y
        splits = list(inner_splits(X, y))
        nca = []
        runs = {c: [] for c in CHECK_CANDIDATES}
        for i, (f, v) in enumerate(splits):
            for r in range(repeats):  # alternate the sides
                seed = i * repeats + r
                nca.append(fit_score(NeighborhoodComponentsAnalysis(random_state=seed), X, y, f, v))
                for c, candidate in CHECK_CANDIDATES.items():
                    runs[c].append(check_candidate(*candidate, X, y, f, v, seed))
        base = np.median([s for s, _ in nca])
        bare = [fit_score(WARCA(random_state=i, held_out_check=False), X, y, f, v)
                for i, (f, v) in enumerate(splits)]  # fmt: skip
        bare_s = np.median([s for s, _ in bare])
        print(f"| {name} | NCA | {np.mean([a for _, a in nca]):.2f} | {base:.3f} | 1.00 | | | |")
        print(
            f"| {name} | WARCA fit alone (held_out_check=False) | "
            f"{np.mean([a for _, a in bare]):.2f} | {bare_s:.3f} | {base / bare_s:.2f} | | | |"
        )
        default = [row[3] for row in runs[DEFAULT_FIT]]
        for c, rows in runs.items():
            sec = np.median([row[0] for row in rows])
            acc = np.mean([row[1] for row in rows])
            z = np.nanmean([row[2] for row in rows])
            same = np.mean([row[3] == d for row, d in zip(rows, default, strict=True)])
            warned = sum(bool(row[3]) for row in rows)
            final = [row[4] for row in rows]
            probe_steps = [n for row in rows for n in row[5]]
            steps = spread(final) + (f"; probes {spread(probe_steps)}" if probe_steps else "")
            print(
                f"| {name} | {c} | {acc:.2f} | {sec:.3f} | {base / sec:.2f} | {z:+.2f} "
                f"({warned}/{len(rows)}) | {100 * same:.0f} % | {steps} |",
                flush=True,
            )


#: ``--sequential``: the sets with six classes or more (the check runs), at most this many rows
#: each (a stratified draw, seed 0; fashion-mnist's 784 pixels left out: 2–4 s a fit).
SEQUENTIAL_SETS = ["digits", "vowel", "glass", "satellite", "letter"]
SEQUENTIAL_ROWS = 2000


@functools.cache
def sequential_bounds(n_folds: int, z: float = Z_BELOW, step: float = 0.01) -> tuple[float, ...]:
    """O'Brien–Fleming boundaries for looking after each of ``n_folds`` equal folds.

    The pooled statistic after fold ``k`` is ``Z_k = S_k / sqrt(k)``, ``S`` a random walk of
    standard normal steps when the learned and the reference distance are level; the boundaries
    ``c · sqrt(K / k)`` are crossed (``Z_k < -c · sqrt(K / k)`` at any look) with probability
    ``norm.sf(z)``, the one-look test's false-alarm rate. In the sum's scale the boundary is the
    constant ``-c · sqrt(K)``: ``c`` solves ``P(S_1..S_K all above it) = 1 - norm.sf(z)``, each
    probability by convolving the walk's density on a grid of ``step``.
    """
    from scipy.optimize import brentq
    from scipy.stats import norm

    if n_folds == 1:
        return (z,)

    def stays_above(level: float) -> float:
        x = np.arange(-level, 12.0 * np.sqrt(n_folds), step) + step / 2
        density = norm.pdf(x) * step
        kernel = norm.pdf(np.arange(1 - len(x), len(x)) * step) * step
        for _ in range(n_folds - 1):
            density = np.convolve(density, kernel)[len(x) - 1 : 2 * len(x) - 1]
        return float(density.sum())

    c = brentq(lambda c: stays_above(c * np.sqrt(n_folds)) - norm.cdf(z), 0.5, 5.0, xtol=1e-8)
    return tuple(float(b) for b in c * np.sqrt(n_folds / np.arange(1, n_folds + 1)))


#: ``--sequential``'s two rules: the standard error over the held-out items with normal
#: bounds, warning only when below (the check before it counted classes), and over the
#: held-out classes with Student's t bounds, warning when below or not better (the check now).
RULES_SEEN = ("items", "classes")


def sequential_verdict(folds: list[dict], scale: str, sequential: bool = True) -> tuple[str, int]:
    """``(verdict, folds run)`` of the check's rule on its per-fold comparisons.

    After each fold, stop when the pooled difference is beyond the O'Brien–Fleming boundary
    either way; the last fold's boundary decides (``sequential=False``: every fold, then one
    look at ``Z_BELOW``). ``scale="items"``: the queries' standard error and the normal bound,
    and the verdict is ``"below"`` or ``"-"`` (the old rule warned only when below);
    ``"classes"``: the check's own (:func:`rankmetric.training.verdict`).
    """
    last = (Z_BELOW,)
    bounds = sequential_bounds(len(folds)) if sequential else (np.inf,) * (len(folds) - 1) + last
    for k in range(1, len(folds) + 1):
        r = dict(pooled(folds[:k]))
        bound = bounds[k - 1]
        if scale == "items":
            r["standard_error"] = r["item_standard_error"]
        else:
            bound = critical_value(bound, r["dof"])
        if k == len(folds) or abs(r["difference"]) > bound * r["standard_error"]:
            said = verdict(r, bound)
            return (said if scale == "classes" or said == "below" else "-"), k
    raise AssertionError("unreachable")


WARNS = ("below", "not better")


def sequential(sets, seeds: int) -> None:
    """The check's two rules (:data:`RULES_SEEN`) on the same inner fits' folds: what each says,
    the probes each runs, and whether two seeds of one inner split (other classes held out) say
    the same."""
    bounds = "; ".join(f"{k} folds {np.round(sequential_bounds(k), 3).tolist()}" for k in (2, 3))
    print(f"O'Brien–Fleming bounds (one-sided, {Z_BELOW} at one look, normal): {bounds}")
    print(
        "| data | fits | fold z per fit (items' SE) | pooled t, all folds (classes' SE, dof) "
        "| items rule: warned, agree, probes | classes rule: below, not better, agree, probes "
        "| same warning on two seeds: items, classes | CPU s: fit alone, one probe |"
    )
    print("|---|---|---|---|---|---|---|---|")
    total = {"fits": 0, "pairs": 0, "planned": 0}
    for name in sets:
        data = load_dataset(name)
        X, y = data.X.astype(np.float64), data.y
        if len(y) > SEQUENTIAL_ROWS:
            keep, _ = next(
                StratifiedKFold(
                    int(np.ceil(len(y) / (len(y) - SEQUENTIAL_ROWS))), shuffle=True, random_state=0
                ).split(X, y)
            )
            keep = keep[:SEQUENTIAL_ROWS]
            X, y = X[keep], y[keep]
        fits = []
        for i, (f, _) in enumerate(inner_splits(X, y)):
            Xf, yf = StandardScaler().fit_transform(X[f]), y[f]
            for r in range(seeds):
                seed = i * seeds + r
                start = time.process_time()
                WARCA(random_state=seed, held_out_check=False).fit(Xf, yf)
                fit_s = time.process_time() - start
                start = time.process_time()
                result, probes = emulated_check(Xf, yf, seed, all_folds=True)
                if result is None:
                    break
                probe_s = (time.process_time() - start) / len(probes)
                folds = result["folds"]
                z = [fo["difference"] / fo["item_standard_error"] for fo in folds]
                full = pooled(folds)
                said = {ru: sequential_verdict(folds, ru) for ru in RULES_SEEN}
                once = {ru: sequential_verdict(folds, ru, sequential=False)[0] for ru in RULES_SEEN}
                t_all = (full["difference"] / full["standard_error"], full["dof"])
                fits.append((i, z, t_all, said, once, fit_s, probe_s))
        if not fits:
            print(f"| {name} | 0 (check skipped) | | | | | | |")
            continue
        planned = sum(len(fit[1]) for fit in fits)
        cells = []
        for ru in RULES_SEEN:
            agree = sum((fit[3][ru][0] in WARNS) == (fit[4][ru] in WARNS) for fit in fits)
            run = sum(fit[3][ru][1] for fit in fits)
            counts = [sum(fit[3][ru][0] == v for fit in fits) for v in WARNS]
            shown = f"{counts[0] + counts[1]}" if ru == "items" else f"{counts[0]}, {counts[1]}"
            cells.append(f"{shown}, {agree}/{len(fits)}, {run}/{planned}")
            for key, value in ((f"{ru}_agree", agree), (f"{ru}_folds", run)):
                total[key] = total.get(key, 0) + value
            for v, c in zip(WARNS, counts, strict=True):
                total[f"{ru}_{v}"] = total.get(f"{ru}_{v}", 0) + c
        by_split = {}  # the first two seeds of each inner split: the check redone on new draws
        for fit in fits:
            by_split.setdefault(fit[0], []).append(fit)
        pairs = [same[:2] for same in by_split.values() if len(same) >= 2]
        same_warning = {
            ru: sum((a[3][ru][0] in WARNS) == (b[3][ru][0] in WARNS) for a, b in pairs)
            for ru in RULES_SEEN
        }
        for ru in RULES_SEEN:
            total[f"rep_{ru}"] = total.get(f"rep_{ru}", 0) + same_warning[ru]
        total.update(
            fits=total["fits"] + len(fits), pairs=total["pairs"] + len(pairs),
            planned=total["planned"] + planned,
        )  # fmt: skip
        zs = "; ".join(" ".join(f"{v:+.1f}" for v in fit[1]) for fit in fits)
        ts = "; ".join(f"{fit[2][0]:+.1f}" for fit in fits)
        print(
            f"| {name} | {len(fits)} | {zs} | {ts} (dof {fits[0][2][1]}) | {cells[0]} | "
            f"{cells[1]} | {same_warning['items']}/{len(pairs)}, "
            f"{same_warning['classes']}/{len(pairs)} | "
            f"{np.median([fit[5] for fit in fits]):.3f}, "
            f"{np.median([fit[6] for fit in fits]):.3f} |",
            flush=True,
        )
    t = total
    if not t["fits"]:
        return
    print(
        f"| all | {t['fits']} | | "
        f"| {t['items_below']}, {t['items_agree']}/{t['fits']}, {t['items_folds']}/{t['planned']} "
        f"| {t['classes_below']}, {t['classes_not better']}, {t['classes_agree']}/{t['fits']}, "
        f"{t['classes_folds']}/{t['planned']} "
        f"| {t['rep_items']}/{t['pairs']}, {t['rep_classes']}/{t['pairs']} | |"
    )


def worker(name: str, seed: int) -> None:
    """One repeat of ``--before-src`` in this process's tree: per outer training half, CPU s of
    WARCA without and with the check and of NCA, steps, and a digest of the map (JSON)."""
    data = load_dataset(name)
    X, y = data.X.astype(np.float64), data.y
    out = {"bare": [], "check": [], "nca": [], "steps": [], "digest": []}
    for train, _ in StratifiedKFold(2, shuffle=True, random_state=0).split(X, y):
        X_fit, y_fit = StandardScaler().fit_transform(X[train]), y[train]
        for key, est in (
            ("bare", WARCA(random_state=seed, held_out_check=False)),
            ("check", WARCA(random_state=seed)),
            ("nca", NeighborhoodComponentsAnalysis(random_state=seed)),
        ):
            start = time.process_time()
            est.fit(X_fit, y_fit)
            out[key].append(time.process_time() - start)
            if key == "bare":
                out["steps"].append(est.n_iter_)
                out["digest"].append(hashlib.sha1(est.components_.tobytes()).hexdigest())
    print(json.dumps(out))


def compare_trees(sets, repeats: int, before: str, threads: str) -> None:
    """``--before-src``: the two trees alternately, in child processes."""
    here = os.path.dirname(os.path.dirname(__import__("rankmetric").__file__))
    trees = {"before": before, "after": here}
    print(f"# before: {trees['before']}; after: {trees['after']}")
    print(
        "| data | WARCA fit, no check: before / after CPU s (after ÷ before) "
        "| default fit (check): before / after (after ÷ before) | NCA CPU s: before / after "
        "| NCA ÷ WARCA no check: before / after | NCA ÷ WARCA default: before / after "
        "| steps (median) | same maps |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in sets:
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for r in range(repeats):
            order = list(trees.items()) if r % 2 == 0 else list(trees.items())[::-1]
            for tree, src in order:
                command = [sys.executable, __file__, "--worker", name, "--seed", str(r)]
                command += ["--threads", threads]
                env = {**os.environ, "PYTHONPATH": src}
                done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                runs[tree].append(json.loads(done.stdout.strip().splitlines()[-1]))
        med = {
            tree: {k: float(np.median([v for run in rs for v in run[k]])) for k in rs[0]
                   if k != "digest"}
            for tree, rs in runs.items()
        }  # fmt: skip
        b, a = med["before"], med["after"]
        same = all(
            rb["digest"] == ra["digest"]
            for rb, ra in zip(runs["before"], runs["after"], strict=True)
        )
        print(
            f"| {name} | {b['bare']:.3f} / {a['bare']:.3f} ({a['bare'] / b['bare']:.2f}) "
            f"| {b['check']:.3f} / {a['check']:.3f} ({a['check'] / b['check']:.2f}) "
            f"| {b['nca']:.3f} / {a['nca']:.3f} "
            f"| {b['nca'] / b['bare']:.2f} / {a['nca'] / a['bare']:.2f} "
            f"| {b['nca'] / b['check']:.2f} / {a['nca'] / a['check']:.2f} "
            f"| {a['steps']:.0f} | {'yes' if same else 'NO'} |",
            flush=True,
        )


#: ``--profile``'s phases: (label, module, attribute), timed by wrapping the attribute.
PHASES = (
    ("optimisation step (all below)", "rankmetric.training._loop", "optimisation_step"),
    ("  WARP loss (sampled_warp_loss)", "rankmetric.estimators.warca.solver", "sampled_warp_loss"),
    ("    positive pairs (NumPy draws)", "rankmetric.sampling", "LabelIndex.positive_pairs"),
    ("    violator detection", "rankmetric.losses._warp_sampling", "_detect_batched"),
    ("      negatives (NumPy draws)", "rankmetric.sampling", "LabelIndex.negatives"),
    ("    loss on the violators", "rankmetric.losses._warp_sampling", "_loss_on_violators"),
    ("  AON penalty", "rankmetric.estimators.warca.solver", "aon_penalty"),
    ("  backward", "torch", "Tensor.backward"),
    ("  Adam step", "torch.optim", "Adam.step"),
)


def profile_steps(fits: int = 5) -> None:
    """``--profile``: process CPU time per step of each phase in :data:`PHASES`."""
    import importlib

    spent = dict.fromkeys([label for label, _, _ in PHASES], 0.0)

    def timed(label, function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += time.process_time() - start

        return run

    originals = []
    for label, module, attribute in PHASES:
        owner = importlib.import_module(module)
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        originals.append((owner, name, getattr(owner, name)))
        setattr(owner, name, timed(label, getattr(owner, name)))
    data = load_dataset("digits")
    X, y = data.X.astype(np.float64), data.y
    train, _ = next(StratifiedKFold(2, shuffle=True, random_state=0).split(X, y))
    X_fit, y_fit = StandardScaler().fit_transform(X[train]), y[train]
    steps, start = 0, time.process_time()
    try:
        for seed in range(fits):
            steps += WARCA(random_state=seed, held_out_check=False).fit(X_fit, y_fit).n_iter_
    finally:
        for owner, name, original in originals[::-1]:  # the wrapped functions put back
            setattr(owner, name, original)
    total = time.process_time() - start
    print(f"digits, {len(train)} training rows, {fits} fits, {steps} steps (CPU time per step)")
    print("| phase | ms per step | share of the fit |")
    print("|---|--:|--:|")
    print(f"| whole fit (set-up and loop included) | {total / steps * 1e3:.3f} | 100 % |")
    for label, seconds in spent.items():
        name = label.strip().replace("|", "/")
        indent = "· " * ((len(label) - len(label.lstrip())) // 2)
        print(f"| {indent}{name} | {seconds / steps * 1e3:.3f} | {100 * seconds / total:.0f} % |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=None)
    parser.add_argument("--select", action="store_true", help="choose on validation splits")
    parser.add_argument("--check", action="store_true", help="the held-out check's share")
    parser.add_argument(
        "--sequential", action="store_true", help="sequential folds for the check (validation)"
    )
    parser.add_argument("--seeds", type=int, default=2, help="--sequential: seeds per split")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", choices=["one", "default"], default="one")
    parser.add_argument("--before-src", help="another source tree to time side by side")
    parser.add_argument("--profile", action="store_true", help="where a step's time goes")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads == "one":
        torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    if args.worker:
        warm = load_dataset("iris")  # one-off start-up costs, not timed
        WARCA(max_iter=5, random_state=0).fit(warm.X, warm.y)
        return worker(args.worker, args.seed)
    print(f"torch threads: {torch.get_num_threads()}")
    warm = load_dataset("iris")  # the first torch fit pays one-off start-up costs: not timed
    WARCA(max_iter=5, random_state=0).fit(warm.X, warm.y)
    if args.select:
        select(args.sets or SELECT_SETS)
    elif args.check:
        check_share(args.sets or SELECT_SETS, args.repeats)
    elif args.sequential:
        sequential(args.sets or SEQUENTIAL_SETS, args.seeds)
    elif args.profile:
        profile_steps()
    elif args.before_src:
        compare_trees(args.sets or SETS, args.repeats, args.before_src, args.threads)
    else:
        compare(args.sets or SETS, args.repeats)
    print(f"load average (1, 5, 15 min): {os.getloadavg()}")


if __name__ == "__main__":
    main()
