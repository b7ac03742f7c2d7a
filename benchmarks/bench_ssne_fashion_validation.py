"""SSNE settings against the Euclidean k-NN on Fashion-MNIST, on a validation third of the
60,000 training images only (the 10,000 test images are never loaded into the comparison).

Protocol: the bench's Table 2 preprocessing (pixels / 255, ``rankmetric.bench.ssne.image_split``)
on the official training part; a stratified third held out with
``rankmetric.bench.ssne.stratified_holdout(y, 0)``; PCA-64 fitted on the other two thirds;
Euclidean k-NN on the PCA features, SSNE on the standardised PCA features (``random_state=0``);
k-NN accuracy (k = 3 and 5) on the held-out third. Each setting is a Python dict literal:

    python benchmarks/bench_ssne_fashion_validation.py "{}" "dict(neg_target=-1.0, solver='full')"
"""

from __future__ import annotations

import ast
import sys
import time

import torch
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

from rankmetric.bench.ssne import image_split, stratified_holdout
from rankmetric.estimators.ssne import SSNE
from rankmetric.evaluate import knn_accuracy


def _setting(text: str) -> dict:
    """``"{}"`` or ``"dict(a=1, b='x')"`` -> a dict, without ``eval``."""
    node = ast.parse(text, mode="eval").body
    if isinstance(node, ast.Call):
        return {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
    return ast.literal_eval(node)


def main(argv: list[str]) -> None:
    torch.set_num_threads(1)
    X, y, _, _ = image_split("fashion-mnist", None)  # the test part is discarded
    inner, val = stratified_holdout(y, 0)
    pca = PCA(64, random_state=0).fit(X[inner])
    Xi, Xv = pca.transform(X[inner]), pca.transform(X[val])
    for k in (3, 5):
        acc = knn_accuracy(Xi, y[inner], Xv, y[val], k=k, device="cpu")
        print(f"Euclidean (PCA-64), k={k}: {100 * acc:.2f}", flush=True)
    scaler = StandardScaler().fit(Xi)
    Si, Sv = scaler.transform(Xi), scaler.transform(Xv)
    for text in argv:
        params = _setting(text)
        start = time.perf_counter()
        model = SSNE(random_state=0, device="cpu", **params).fit(Si, y[inner])
        Zi, Zv = model.transform(Si), model.transform(Sv)
        accs = [100 * knn_accuracy(Zi, y[inner], Zv, y[val], k=k, device="cpu") for k in (3, 5)]
        print(
            f"SSNE {params}: k=3 {accs[0]:.2f}, k=5 {accs[1]:.2f} "
            f"({time.perf_counter() - start:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
