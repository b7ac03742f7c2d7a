"""A learned transform outside Python: a faiss index with the map baked in, or an ONNX graph.

=====================  ==================================================================
model                  ONNX graph of ``transform`` (input ``X`` float32 (n, n_features))
=====================  ==================================================================
WARCA, LMNN, ITML,     ``X @ components_.T`` (one ``MatMul``)
KISSME, XQDA
KernelWARCA            ``k(X, support_vectors_) @ components_.T``: the exact kernel map and the
                       Nyström map alike (Nyström's ``K_LL^{-1/2}`` is folded into
                       ``components_``); kernels ``linear``, ``rbf``, ``poly``, ``chi2_rbf``
                       (``precomputed``: the input is the kernel against the training rows)
SSNE                   ``H(x) = h / max(‖h‖, 1e-12)``, ``h = −tanh(½ (x̃ W + b))`` on the
                       standardised ``x̃ = (x − mean_) / scale_``, active units only
SPDNetEmbedding,       not exportable: their BiMap–ReEig–LogEig layers need a symmetric
RPLEmbedding           eigendecomposition, which ONNX has no operator for, and the
                       eigen-free series (Newton–Schulz, Padé) are not accurate to float32
                       tolerance over the spectra these networks produce; a ``ValueError``
                       says so
=====================  ==================================================================

The graphs are written with ``onnx.helper`` (opset 17, no exporter tracing), checked with
``onnx.checker`` and reproduce ``transform`` to float32 rounding (the tests compare with
onnxruntime at 1e-5 relative).
"""

from __future__ import annotations

import os

import numpy as np

from .._atomic import atomic_write
from .._docstrings import doc_filler
from ..estimators.base import MahalanobisMixin
from ..estimators.ssne import SSNE
from ..estimators.warca import KernelWARCA
from ._model import linear_map

__all__ = ["export_onnx", "onnx_graph", "to_faiss", "OPSET"]

#: The start both examples share: a linear model fitted on small random data.
_fill_doc = doc_filler(
    {
        "fitted_kissme_example": """\
Examples
--------
>>> import numpy as np
>>> from rankmetric import KISSME
>>> from rankmetric.index import onnx_graph, to_faiss
>>> rng = np.random.default_rng(0)
>>> X, y = rng.normal(size=(60, 5)), np.repeat(np.arange(6), 10)
>>> model = KISSME(n_components=3, held_out_check=False).fit(X, y)"""
    }
)

OPSET = 17
_NOT_EXPORTABLE = ("SPDNetEmbedding", "RPLEmbedding")


@_fill_doc
def to_faiss(model, factory: str = "Flat", *, dim: int | None = None, metric: str = "euclidean"):
    """An empty faiss index for ``model``'s embedding, its linear map as ``IndexPreTransform``.

    Parameters
    ----------
    model : fitted estimator or None
        A linear model (WARCA, LMNN, ITML, KISSME, XQDA) gets ``LinearTransform(components_)``
        in front, so the index takes raw rows; any other model (or None) gets the bare index
        over embeddings (of dimension ``dim``).
    factory : str, default="Flat"
        faiss index-factory string for the embedded space (``"IVF1024,Flat"``, ``"HNSW32"``...).
    dim : int, optional
        The embedding dimension, when ``model`` is not linear.
    metric : {"euclidean", "sqeuclidean", "cosine"}, default="euclidean"
        Cosine uses faiss's inner product; after a linear map a ``NormalizationTransform``
        makes the rows unit (without one, add and search unit rows).

    Returns
    -------
    faiss.Index
        Untrained if the factory needs training: train it on embeddings
        (``faiss.downcast_index(index.index).train(E)`` past the pre-transform).

    %(fitted_kissme_example)s
    >>> index = to_faiss(model)
    >>> index.d, index.index.d  # raw rows in, 3-d embeddings indexed
    (5, 3)
    """
    from ._ann import import_faiss, pre_transformed

    faiss = import_faiss()
    L = linear_map(model)
    d = L.shape[0] if L is not None else dim
    if d is None:
        raise ValueError("to_faiss needs dim= for a model without a linear map.")
    kind = faiss.METRIC_INNER_PRODUCT if metric == "cosine" else faiss.METRIC_L2
    try:
        sub = faiss.index_factory(int(d), factory, kind)
    except RuntimeError as exc:
        raise ValueError(f"faiss refused the factory string {factory!r}: {exc}") from exc
    return sub if L is None else pre_transformed(L, sub, metric)


def _check_exportable(model) -> None:
    name = type(model).__name__
    if name in _NOT_EXPORTABLE:
        raise ValueError(
            f"{name} cannot be exported to ONNX: its ReEig and LogEig layers need a symmetric "
            "eigendecomposition, which ONNX has no operator for, and no eigen-free "
            "approximation reproduces them to float32 tolerance. Serve it from Python (or "
            "export its embeddings of a catalogue with Index)."
        )
    if not hasattr(model, "transform"):
        raise ValueError(f"{name} has no transform to export.")


@_fill_doc
def onnx_graph(model):
    """The ONNX model (``onnx.ModelProto``) of a fitted model's ``transform``.

    Parameters
    ----------
    model : fitted estimator
        WARCA, KernelWARCA (exact or Nyström), SSNE, LMNN, ITML, KISSME or XQDA.

    Returns
    -------
    onnx.ModelProto
        Input ``X`` (float32, (n, n_features)), output ``embedding`` (float32, (n, dim)).

    %(fitted_kissme_example)s
    >>> graph = onnx_graph(model)
    >>> [n.op_type for n in graph.graph.node]
    ['MatMul']
    """
    _check_exportable(model)
    try:
        from onnx import TensorProto, checker, helper, numpy_helper
    except ImportError:  # pragma: no cover - onnx is in the test extra
        raise ImportError("ONNX export needs onnx: pip install 'rankmetric[onnx]'.") from None
    nodes, inits = [], []

    def const(name: str, value, dtype=np.float32) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(kind: str, inputs: list[str], out: str, **attrs) -> str:
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    if isinstance(model, KernelWARCA):
        out, n_in = _kernel_graph(model, const, op)
    elif isinstance(model, SSNE):
        out, n_in = _ssne_graph(model, const, op)
    elif isinstance(model, MahalanobisMixin):
        L = linear_map(model)
        out, n_in = op("MatMul", ["X", const("LT", L.T)], "embedding"), L.shape[1]
    else:
        raise ValueError(
            f"{type(model).__name__} has no ONNX export (see rankmetric.index.export)."
        )
    graph = helper.make_graph(
        nodes,
        f"rankmetric_{type(model).__name__}",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n", n_in])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["n", None])],
        inits,
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    proto.ir_version = 8
    checker.check_model(proto)
    return proto


def _kernel_graph(model, const, op) -> tuple[str, int]:
    """``k(X, S) @ C.T`` for KernelWARCA's kernels."""
    C = np.asarray(model.components_, dtype=np.float64)
    if model.kernel == "precomputed":
        return op("MatMul", ["X", const("CT", C.T)], "embedding"), C.shape[1]
    S = np.asarray(model.support_vectors_, dtype=np.float64)
    gamma = float(model.gamma_) if getattr(model, "gamma_", None) is not None else 1.0
    if model.kernel == "linear":
        K = op("MatMul", ["X", const("ST", S.T)], "K")
    elif model.kernel == "poly":
        G = op("MatMul", ["X", const("ST", S.T)], "G")
        G = op("Add", [op("Mul", [G, const("gamma", gamma)], "gG"), const("c0", model.coef0)], "gc")
        K = op("Pow", [G, const("degree", float(model.degree))], "K")
    elif model.kernel == "rbf":
        xx = op("ReduceSumSquare", ["X"], "xx", axes=[1], keepdims=1)
        xs = op("MatMul", ["X", const("ST2", -2.0 * S.T)], "xs")
        d2 = op("Add", [op("Add", [xs, xx], "xs_xx"), const("ss", (S**2).sum(1)[None])], "d2")
        d2 = op("Max", [d2, const("zero", 0.0)], "d2_pos")
        K = op("Exp", [op("Mul", [d2, const("neg_gamma", -gamma)], "gd2")], "K")
    else:  # chi2_rbf: Σ (a − b)² / (a + b), 0/0 := 0, on (n, m, d) broadcasts
        a = op("Unsqueeze", ["X", const("axis1", [1], np.int64)], "a")
        Sb = const("S3", S[None])
        diff, total = op("Sub", [a, Sb], "diff"), op("Add", [a, Sb], "sum")
        safe = op("Max", [total, const("tiny", np.finfo(np.float32).tiny)], "safe")
        terms = op("Div", [op("Mul", [diff, diff], "sq"), safe], "terms")
        chi2 = op("ReduceSum", [terms, const("axis2", [2], np.int64)], "chi2", keepdims=0)
        K = op("Exp", [op("Mul", [chi2, const("neg_gamma", -gamma)], "gchi")], "K")
    return op("MatMul", [K, const("CT", C.T)], "embedding"), S.shape[1]


def _ssne_graph(model, const, op) -> tuple[str, int]:
    """``normalize(−tanh(½ ((x − mean) / scale) W + ½ b))`` on SSNE's active units."""
    W = np.asarray(model.weight_, dtype=np.float64)[:, model.active_components_]
    x = op(
        "Div",
        [op("Sub", ["X", const("mean", model.mean_)], "xc"), const("scale", model.scale_)],
        "xs",
    )
    pre = op(
        "Add",
        [op("MatMul", [x, const("W_half", 0.5 * W[:-1])], "xw"), const("b_half", 0.5 * W[-1])],
        "pre",
    )
    h = op("Neg", [op("Tanh", [pre], "t")], "h")
    norm = op("ReduceL2", [h], "norm", axes=[1], keepdims=1)
    norm = op("Max", [norm, const("eps", 1e-12)], "norm_eps")
    return op("Div", [h, norm], "embedding"), W.shape[0] - 1


def export_onnx(model, path: str | os.PathLike) -> None:
    """Write ``model``'s transform to ``path`` as an ONNX file (atomically).

    Parameters
    ----------
    model : fitted estimator
        See :func:`onnx_graph` for the models that can be exported (and which cannot, why).
    path : str or path-like
        The ``.onnx`` file to write.

    Returns
    -------
    None
        Run it with onnxruntime: ``InferenceSession(path).run(None, {"X": X32})[0]``.

    Examples
    --------
    >>> import numpy as np, tempfile, pathlib
    >>> from rankmetric import KISSME
    >>> from rankmetric.index import export_onnx
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(60, 5)), np.repeat(np.arange(6), 10)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "kissme.onnx"
    >>> export_onnx(KISSME(n_components=3, held_out_check=False).fit(X, y), path)
    >>> path.stat().st_size > 0
    True
    """
    proto = onnx_graph(model)
    atomic_write(path, lambda fh: fh.write(proto.SerializeToString()))
