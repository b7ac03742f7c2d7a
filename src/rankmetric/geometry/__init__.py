"""SPD geometry in batched, differentiable torch.

Matrix functions with a Daleckii–Krein backward (exact at repeated eigenvalues), the
affine-invariant and log-Euclidean distances, geodesics, Riemannian means, and the logarithmic /
exponential maps at a reference point in pyRiemann's tangent-space coordinates.
See ``docs/geometry.md``.
"""

from .aliases import METRIC_ALIASES, canonical_metric
from .checks import check_spd
from .distances import airm_distance, log_euclidean_distance, pairwise_airm, pairwise_log_euclidean
from .matrix_functions import (
    spd_clamp,
    spd_exp,
    spd_inv_sqrt,
    spd_log,
    spd_power,
    spd_sqrt,
    sym_function,
    sym_to_vec,
    symmetrize,
    vec_to_sym,
)
from .means import geodesic, log_euclidean_mean, riemannian_mean, spd_mean
from .tangent import exp_map, log_map, whiten

__all__ = [
    "METRIC_ALIASES",
    "canonical_metric",
    "check_spd",
    "sym_function",
    "symmetrize",
    "sym_to_vec",
    "vec_to_sym",
    "spd_log",
    "spd_exp",
    "spd_sqrt",
    "spd_inv_sqrt",
    "spd_power",
    "spd_clamp",
    "airm_distance",
    "pairwise_airm",
    "log_euclidean_distance",
    "pairwise_log_euclidean",
    "riemannian_mean",
    "log_euclidean_mean",
    "spd_mean",
    "geodesic",
    "log_map",
    "exp_map",
    "whiten",
]
