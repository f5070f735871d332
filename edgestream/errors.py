"""Exceptions for bad user input. Both derive from ValueError so callers that catch ValueError keep working."""

import sklearn.exceptions


class ModelFileError(ValueError):
    """A model file cannot be written, read or trusted (wrong magic, version, checksum or tables)."""


class DataError(ValueError):
    """A data file cannot be read as a table of numeric features and one label column."""


class NotFittedError(sklearn.exceptions.NotFittedError, RuntimeError):
    """A model is used before it is fitted: scikit-learn's error (a ValueError and an AttributeError) and a
    RuntimeError."""
