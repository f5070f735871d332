"""edgestream: train, budget, export and run learning decision-tree models on microcontrollers."""

from .binning import BinMapper
from .importers import convert
from .learners import (ForestClassifier, HoeffdingTreeClassifier, IncrementalRandomForest, OnlineBLSClassifier,
                       OnlineGBDTClassifier, ShrubEnsemble, TreeClassifier)
from .modelfile import load_model, save_model
from .tree import TreeEnsemble

__version__ = "0.1.0"
__all__ = ["BinMapper", "convert", "ForestClassifier", "HoeffdingTreeClassifier", "IncrementalRandomForest", "OnlineBLSClassifier", "OnlineGBDTClassifier", "ShrubEnsemble",
           "TreeClassifier", "TreeEnsemble", "__version__", "load_model", "save_model"]
