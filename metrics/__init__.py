"""metrics: shared-task scorers (CCKS relation F1, correlation and agreement).

* Relation extraction (CCKS 2019 / IPRE): ``read_relation_ids``,
  ``read_sent_relations``, ``read_bag_relations``,
  ``read_relation_predictions``, ``relation_f1``,
  ``upper_bound``.
* Correlation (drop-in for ``scipy.stats``): ``pearson``, ``spearman``,
  ``kendall`` (module ``correlation``), ``grouped`` (per group + overall,
  module ``grouped``), ``bootstrap_ci`` (module ``bootstrap``).
* Agreement: ``krippendorff_alpha``, ``split_half``, ``trimmed_mean``.

Command line: ``python -m metrics ccks ...`` (relation F1), ``python -m metrics
corr ...`` (correlation of predicted with gold scores) and ``python -m metrics
alpha ...`` (Krippendorff's alpha of an annotation table); ``python -m metrics
--version``.
"""

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

# The version of the distribution (overlap-metrics): written once, as
# overlap.__version__, which pyproject.toml reads too; tests/metrics/test_metrics_cli.py
# checks that they agree.
import overlap as _overlap

__version__ = _overlap.__version__
del _overlap

# The public names are loaded on first use (PEP 562), as overlap's are: the
# correlation functions import scipy.stats and scipy.special (about half a
# second), which ``import metrics`` and ``python -m metrics ccks`` (relation
# F1, numpy only) need not pay.
_EXPORTS = {
    "SplitHalfResult": ".agreement",
    "krippendorff_alpha": ".agreement",
    "split_half": ".agreement",
    "trimmed_mean": ".agreement",
    "BootstrapResult": ".bootstrap",
    "bootstrap_ci": ".bootstrap",
    "ConfidenceInterval": ".correlation",
    "CorrelationResult": ".correlation",
    "PearsonResult": ".correlation",
    "RankCorrelationResult": ".correlation",
    "kendall": ".correlation",
    "pearson": ".correlation",
    "spearman": ".correlation",
    "GroupedResult": ".grouped",
    "grouped": ".grouped",
    "RelationF1": ".relation",
    "RelationLabels": ".relation",
    "RelationScore": ".relation",
    "read_bag_relations": ".relation",
    "read_relation_ids": ".relation",
    "read_relation_predictions": ".relation",
    "read_sent_relations": ".relation",
    "relation_f1": ".relation",
    "upper_bound": ".relation",
    # the public modules, attributes of the package as when it imported them
    # itself (``metrics.correlation.SmallSampleWarning``); ``metrics.grouped``
    # is the function
    "agreement": ".agreement",
    "bootstrap": ".bootstrap",
    "correlation": ".correlation",
    "relation": ".relation",
}
_MODULES = ("agreement", "bootstrap", "correlation", "relation")


class _Package(types.ModuleType):
    """The ``metrics`` module: the module ``metrics.grouped``, once imported,
    does not hide the function ``metrics.grouped`` (see ``overlap._Package``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS and name not in _MODULES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

if TYPE_CHECKING:  # what a type checker and an IDE see
    from . import agreement, bootstrap, correlation, relation
    from .agreement import SplitHalfResult, krippendorff_alpha, split_half, trimmed_mean
    from .bootstrap import BootstrapResult, bootstrap_ci
    from .correlation import (
        ConfidenceInterval,
        CorrelationResult,
        PearsonResult,
        RankCorrelationResult,
        kendall,
        pearson,
        spearman,
    )
    from .grouped import GroupedResult, grouped
    from .relation import (
        RelationF1,
        RelationLabels,
        RelationScore,
        read_bag_relations,
        read_relation_ids,
        read_relation_predictions,
        read_sent_relations,
        relation_f1,
        upper_bound,
    )

__all__ = [
    "BootstrapResult",
    "ConfidenceInterval",
    "CorrelationResult",
    "GroupedResult",
    "PearsonResult",
    "RankCorrelationResult",
    "RelationF1",
    "RelationLabels",
    "RelationScore",
    "SplitHalfResult",
    "bootstrap_ci",
    "grouped",
    "kendall",
    "krippendorff_alpha",
    "pearson",
    "read_bag_relations",
    "read_relation_ids",
    "read_relation_predictions",
    "read_sent_relations",
    "relation_f1",
    "spearman",
    "split_half",
    "trimmed_mean",
    "upper_bound",
]


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is not None:
        module = importlib.import_module(where, __name__)
        value = module if name in _MODULES else getattr(module, name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_MODULES))
