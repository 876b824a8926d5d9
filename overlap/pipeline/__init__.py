"""The application layer: dataset audits and cleaning built on the core.

Submodules (the core, ``overlap.tokensets``/``search``/``dedup``/``dask``, never
imports them):

- :mod:`overlap.pipeline.steps` — the published dialogue-cleaning pipeline,
  one function per step, and :func:`clean` that runs them all;
- :mod:`overlap.pipeline.report` — typed results: summaries at thresholds
  (``>=``), per group, and the clean report;
- :mod:`overlap.pipeline.output` — safe writing: never over an input, atomic
  files, all-or-nothing sets of files;
- :mod:`overlap.pipeline.tables` — readers and writers (CSV, TSV, JSONL,
  Parquet, DailyDialog text, pandas DataFrames, Hugging Face datasets);
- :mod:`overlap.pipeline.dialogue` — DailyDialog-style files and samples;
- :mod:`overlap.pipeline.plot` — histograms (PNG or text);
- :mod:`overlap.pipeline.demo` — a generated corpus with planted overlap.

``from overlap.pipeline import scan, clean`` keeps working as before.
"""

from .output import OutputError, Outputs, atomic_write
from .report import AT, CleanReport, GroupedSummary, summarize_by
from .steps import (
    KEEP,
    SPLIT_FILE_NAMES,
    THRESHOLDS,
    CleanResult,
    OverlapSummary,
    Resplit,
    ScanResult,
    clean,
    dedup_dialogues,
    dedup_first,
    flatten,
    remove_duplicates,
    resplit,
    scan,
    summarize,
    tokenize_fields,
    plan_clean_outputs,
    write_clean,
)

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
    "OverlapSummary",
    "ScanResult",
    "Resplit",
    "CleanResult",
    "summarize",
    "tokenize_fields",
    "scan",
    "dedup_dialogues",
    "dedup_first",
    "resplit",
    "flatten",
    "remove_duplicates",
    "clean",
    "write_clean",
    "SPLIT_FILE_NAMES",
]
