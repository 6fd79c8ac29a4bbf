"""User-level differentially private mean estimators."""

from ._clip_noise import ClipNoiseMeanEstimator, clip_noise_mean

__all__ = ["ClipNoiseMeanEstimator", "clip_noise_mean"]
