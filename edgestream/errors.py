"""Exceptions for bad user input. Both derive from ValueError so callers that catch ValueError keep working."""


class ModelFileError(ValueError):
    """A model file cannot be written, read or trusted (wrong magic, version, checksum or tables)."""


class DataError(ValueError):
    """A data file cannot be read as a table of numeric features and one label column."""
