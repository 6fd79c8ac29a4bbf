"""Utilities shared by all skuserdp estimators."""
