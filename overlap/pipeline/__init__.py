"""The application layer: dataset audits and cleaning built on the core.

Submodules (the core, ``overlap.tokensets``/``search``/``dedup``/``dask``, never
imports them):

- :mod:`overlap.pipeline.scanning` — step 1: every sample's best match, the
  summary at thresholds and per group;
- :mod:`overlap.pipeline.streaming` — step 1 against a training corpus
  bigger than memory, streamed from disk (:func:`scan_corpus`);
- :mod:`overlap.pipeline.steps` — the other steps of the published
  dialogue-cleaning pipeline, one function per step;
- :mod:`overlap.pipeline.cleaning` — :func:`clean`, all steps in one call, and
  the files it writes (re-splitting, for a corpus you own);
- :mod:`overlap.pipeline.decontamination` — :func:`decontaminate`, for a fixed
  benchmark: remove from train what overlaps the eval splits (never changed),
  then dedup train;
- :mod:`overlap.pipeline.report` — typed results: summaries at thresholds
  (``>=``), per group, and the clean report;
- :mod:`overlap.pipeline.output` — safe writing: never over an input, atomic
  files, all-or-nothing sets of files;
- :mod:`overlap.pipeline.tables` — readers and writers (CSV, TSV, JSONL,
  Parquet, DailyDialog text, pandas DataFrames, Hugging Face datasets);
- :mod:`overlap.pipeline.dialogue` — DailyDialog-style files and samples;
- :mod:`overlap.pipeline.plot` — histograms (PNG or text);
- :mod:`overlap.pipeline.demo` — a generated corpus with planted overlap.

``from overlap.pipeline import scan, clean`` keeps working as before; every
name below is importable from ``overlap.pipeline``.
"""

from .cleaning import CleanResult, clean, clean_layout, plan_clean_outputs, write_clean
from .decontamination import (DecontaminationReport, DecontaminationResult, decontaminate,
                              write_decontaminated)
from .dialogue import SPLIT_FILE_NAMES
from .output import OutputError, Outputs, atomic_write
from .report import (AT, CleanReport, GroupedSummary, OverlapSummary, summarize,
                     summarize_by)
from .scanning import ScanResult, scan, tokenize_fields
from .streaming import CorpusScanResult, scan_corpus
from .steps import (KEEP, Resplit, dedup_dialogues, dedup_first, flatten, remove_duplicates,
                    resplit)

#: Former name of :data:`AT` (the summary thresholds, now compared with ``>=``).
THRESHOLDS = AT

__all__ = [
    "AT",
    "KEEP",
    "THRESHOLDS",
    "GroupedSummary",
    "CleanReport",
    "summarize_by",
    "Outputs",
    "OutputError",
    "atomic_write",
    "plan_clean_outputs",
    "clean_layout",
    "OverlapSummary",
    "ScanResult",
    "Resplit",
    "CleanResult",
    "summarize",
    "tokenize_fields",
    "scan",
    "scan_corpus",
    "CorpusScanResult",
    "dedup_dialogues",
    "dedup_first",
    "resplit",
    "flatten",
    "remove_duplicates",
    "clean",
    "write_clean",
    "decontaminate",
    "write_decontaminated",
    "DecontaminationResult",
    "DecontaminationReport",
    "SPLIT_FILE_NAMES",
]
