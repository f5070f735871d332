"""edgestream: train, budget, export and run learning decision-tree models on microcontrollers."""

from .binning import BinMapper
from .learners import ForestClassifier, OnlineBLSClassifier, ShrubEnsemble, TreeClassifier
from .tree import TreeEnsemble

__version__ = "0.1.0"
__all__ = ["BinMapper", "ForestClassifier", "OnlineBLSClassifier", "ShrubEnsemble", "TreeClassifier", "TreeEnsemble", "__version__"]
