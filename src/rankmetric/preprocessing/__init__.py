"""Preprocessing transformers that turn raw data into SPD matrices."""

from .region_covariance import RegionCovariances, region_covariances

__all__ = ["RegionCovariances", "region_covariances"]
