"""Time to refuse a hostile model file: about 1 MiB holding a 1 GiB deflated member of zeros.

Two files, built from a KISSME fitted on 60 × 4 standard-normal points (seed 0): ``unlisted``
adds the member without listing it in the metadata; ``listed`` also forges the metadata to list
it as a float32 array of 2²⁸ elements. Prints the seconds ``load_model`` takes to refuse each
and the error::

    python benchmarks/bench_model_file_bomb.py
"""

from __future__ import annotations

import io
import json
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from rankmetric.estimators.pair_covariance import KISSME
from rankmetric.io import load_model, save_model

SHAPE = (2**28,)  # float32: 1 GiB


def _add_zeros(path: Path, name: str, header: bytes = b"") -> None:
    chunk = bytes(1 << 24)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open(name, "w", force_zip64=True) as member:
            member.write(header)
            for _ in range(64):
                member.write(chunk)


def build(folder: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((60, 4)), np.repeat([0, 1, 2], 20)
    unlisted, listed = folder / "unlisted.npz", folder / "listed.npz"
    save_model(KISSME().fit(X, y), unlisted)
    _add_zeros(unlisted, "payload.npy")
    save_model(KISSME().fit(X, y), listed)
    with np.load(listed) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(arrays["__meta__"].tobytes())
    meta["digests"]["attr/extra_"] = "0" * 64 + f":<f4:{SHAPE}"
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(listed, **arrays)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": SHAPE}
    )
    _add_zeros(listed, "attr/extra_.npy", header.getvalue())
    return {"unlisted": unlisted, "listed": listed}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in build(Path(tmp)).items():
            start = time.perf_counter()
            try:
                load_model(path)
                outcome = "loaded"
            except ValueError as exc:
                outcome = str(exc).split(": ", 1)[1][:120]
            seconds = time.perf_counter() - start
            size = path.stat().st_size / 2**20
            print(f"{name:<9} {size:.2f} MiB file: refused in {seconds:.4f} s ({outcome})")


if __name__ == "__main__":
    main()
