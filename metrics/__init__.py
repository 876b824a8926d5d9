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

# The version of the distribution (overlap-metrics): written once, as
# overlap.__version__, which pyproject.toml reads too; tests/metrics/test_metrics_cli.py
# checks that they agree.
import overlap as _overlap

__version__ = _overlap.__version__
del _overlap

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
