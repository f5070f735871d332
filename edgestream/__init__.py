"""edgestream: train, budget, export and run learning decision-tree models on microcontrollers."""

from .binning import BinMapper
from .forest import ForestClassifier
from .tree import TreeClassifier, TreeEnsemble

__version__ = "0.1.0"
__all__ = ["BinMapper", "ForestClassifier", "TreeClassifier", "TreeEnsemble", "__version__"]
