"""Small helpers: devices, seeds, progress bars."""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Mapping

import numpy as np
import torch
from tqdm.auto import tqdm

__all__ = [
    "resolve_device",
    "deterministic_on",
    "make_rng",
    "torch_generator",
    "progress",
    "to_tensor",
    "store_parameters",
]


def resolve_device(device: str | torch.device | None) -> torch.device:
    """Turn ``None``/"auto"/"cpu"/"cuda[:k]" into a ``torch.device``.

    ``None`` and ``"auto"`` pick CUDA when it is available, else the CPU. Anything else that
    torch does not know, or that this machine does not have, raises a ``ValueError`` naming
    ``device`` (torch's own message lists every device type torch was ever built for).
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    forms = "None, 'auto', 'cpu', 'cuda', 'cuda:<index>' or a torch.device"
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"device={device!r} is not a device; use {forms}.") from None
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device={str(resolved)!r} was requested but CUDA is not available.")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise ValueError(
                f"device={str(resolved)!r} was requested but this machine has "
                f"{torch.cuda.device_count()} CUDA device(s)."
            )
    elif resolved.type != "cpu":
        try:
            torch.empty(0, device=resolved)
        except Exception:  # noqa: BLE001 - torch raises several kinds for a missing backend
            raise ValueError(
                f"device={str(resolved)!r} is not available on this machine or torch build; "
                f"use {forms}."
            ) from None
    return resolved


@contextlib.contextmanager
def deterministic_on(device):
    """Torch's deterministic kernels while the block runs on a CUDA ``device``.

    On CUDA, torch's scatter-adds (the backward of an indexing, ``index_add_``) add in the
    order the threads arrive, so two fits with one seed differ in the last bits and then drift
    apart. Inside the block ``torch.use_deterministic_algorithms(True, warn_only=True)`` picks
    the order-fixed kernels; the state before is restored after. cuBLAS's products are
    reproducible on one stream (NVIDIA's documentation), so torch's note about
    ``CUBLAS_WORKSPACE_CONFIG`` is not shown. On the CPU (and for a device that is not one)
    nothing changes.

    Parameters
    ----------
    device : str, torch.device or None
        As :func:`resolve_device` takes it.

    Examples
    --------
    >>> with deterministic_on("cpu"):
    ...     torch.are_deterministic_algorithms_enabled()
    False
    """
    try:
        on_cuda = resolve_device(device).type == "cuda"
    except ValueError:  # the fit names the bad device itself
        on_cuda = False
    if not on_cuda or torch.are_deterministic_algorithms_enabled():
        yield
        return
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", ".*CUBLAS_WORKSPACE_CONFIG", UserWarning)
            yield
    finally:
        torch.use_deterministic_algorithms(False)


def make_rng(random_state) -> np.random.Generator:
    """A NumPy ``Generator`` from ``None``, an int, a ``RandomState`` or a ``Generator``."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    return np.random.default_rng(random_state)


def torch_generator(
    rng: np.random.Generator, device: torch.device | str = "cpu"
) -> torch.Generator:
    """A torch ``Generator`` on ``device`` seeded from ``rng`` (so one seed drives both)."""
    gen = torch.Generator(device=device)
    gen.manual_seed(int(rng.integers(0, 2**62)))
    return gen


def progress(iterable=None, *, total=None, desc=None, verbose: bool | int = False, **kwargs):
    """A tqdm bar that shows only when ``verbose`` and stderr is a terminal."""
    disable = not verbose or not sys.stderr.isatty()
    return tqdm(iterable, total=total, desc=desc, disable=disable, leave=False, **kwargs)


def to_tensor(
    X, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """Copy an array to a contiguous tensor of ``dtype`` on ``device``."""
    if isinstance(X, torch.Tensor):
        return X.to(device=device, dtype=dtype).contiguous()
    return torch.as_tensor(np.ascontiguousarray(X), dtype=dtype, device=device)


def store_parameters(estimator, values: Mapping[str, object]) -> None:
    """Set every constructor parameter of ``estimator`` from ``values``, as given.

    Call it as the whole body of ``__init__``: ``store_parameters(self, locals())``. The names
    are those of the ``__init__`` signature (scikit-learn's ``_get_param_names``, which reads
    through ``deprecate_positional_args``), so the stored attributes are exactly what
    ``get_params`` returns and ``clone`` copies, and a signature of several dozen keywords is not
    repeated as as many assignments in every estimator.

    Parameters
    ----------
    estimator : scikit-learn estimator
    values : mapping
        The ``__init__``'s ``locals()``.
    """
    for name in type(estimator)._get_param_names():
        setattr(estimator, name, values[name])
