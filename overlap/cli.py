"""The ``overlap`` command line: demo, scan, dedup, clean, decontaminate.

Exit codes: 0 ok, 2 bad usage or input, 1 other failure, 130 interrupted
(Ctrl-C, honoured between kernel chunks).  Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from ._progress import format_bytes, make_progress

__all__ = ["main", "build_parser"]

PROG = "overlap"

#: formats --out-format names (a DailyDialog output keeps its input's form)
OUT_FORMATS = ("csv", "tsv", "jsonl", "parquet", "text")

FIELDS_HELP = ("comma-separated columns compared; the ratio of two samples is the minimum "
               "over them (default: context,response when the table has both, else text, "
               "else its one text-like column; DailyDialog: context,response)")


class UsageError(Exception):
    """Bad usage or input found by the CLI itself (exit code 2)."""


# ----------------------------------------------------------------- terminal
def _write(stream: Any, text: str) -> None:
    """Write ``text`` to a terminal or file: control characters from the data
    escaped, symbols the stream's encoding lacks spelled out; then flush."""
    from ._terminal import encodable, escape_controls

    stream.write(encodable(escape_controls(text), getattr(stream, "encoding", None)))
    stream.flush()


class Console:
    """Where the CLI writes: results to stdout, step lines and progress to stderr.

    Every step (reading, tokenizing, scanning, each pipeline step) gets one
    stderr line with the time since the start, so a log shows where time went;
    :meth:`timing_line` sums it up.  Progress bars: tqdm (or a ``\\r`` line)
    when stderr is a terminal; in a log, a plain line at most every 5 seconds.
    ``quiet`` prints nothing but results to stdout... and not even those.
    """

    def __init__(self, quiet: bool = False, stream: Any = None) -> None:
        self.quiet = quiet
        self.err = stream if stream is not None else sys.stderr
        self._held: list[str] | None = None  # stdout lines held back (hold_output)
        self._report: Any = None  # where out() lines go: stdout unless data goes there
        self._data: Any = None  # writes the command's data to stdout (--out -), last
        self.tty = bool(getattr(self.err, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self.step = "working"
        self._step_start: float | None = None
        self.steps: dict[str, float] = {}
        self._bar: Any = None
        self._last = (-1, -1)

    def out(self, text: str = "") -> None:
        """A line of results for stdout (held back while :meth:`hold_output` is on)."""
        if self.quiet:
            return
        if self._held is not None:
            self._held.append(text)
        else:
            _write(self._report or sys.stdout, text + "\n")

    def report_to_stderr(self) -> None:
        """Stdout carries data (``--out -``): the report lines go to stderr."""
        self._report = self.err

    def data_to_stdout(self, write: Any) -> None:
        """Stdout is the data's (``--out -``): ``write(stream)`` runs last, after
        the files, and the report lines go to stderr."""
        self._report = self.err
        self._data = write

    def hold_output(self) -> None:
        """Keep stdout lines until :meth:`release_output`: a command writes its
        files first, so a closed or failing stdout never costs them."""
        if self._held is None:
            self._held = []

    def release_output(self) -> None:
        """Print the lines held back (may raise BrokenPipeError: stdout closed)."""
        held, self._held = self._held, None
        if held:
            _write(self._report or sys.stdout, "".join(line + "\n" for line in held))
        if self._data is not None:
            import io

            # UTF-8 whatever the console's encoding: this is data for a program
            stream = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="",
                                      write_through=True)
            try:
                self._data(stream)
                stream.flush()
            finally:
                stream.detach()

    def log(self, text: str) -> None:
        """A step starts: close the previous one, print a stderr line, name the next bar."""
        self.end_step()
        self.step = text.split(":")[0]
        self._step_start = time.perf_counter()
        if not self.quiet:
            _write(self.err, f"[{self._step_start - self.start:7.2f}s] {text}\n")

    def end_step(self) -> None:
        self.close_bar()
        if self._step_start is not None:
            took = time.perf_counter() - self._step_start
            self.steps[self.step] = self.steps.get(self.step, 0.0) + took
            self._step_start = None

    def timing_line(self, n_threads: int) -> str:
        """``Time: T on N thread(s) (step t, ...)`` for every step logged so far."""
        self.end_step()
        total = time.perf_counter() - self.start
        steps = ", ".join(f"{k} {_fmt_s(v)}" for k, v in self.steps.items())
        return f"Time: {_fmt_s(total)} on {n_threads} thread(s)" + (f" ({steps})" if steps else "")

    @property
    def progress(self) -> Any:
        """What to hand to the library's ``progress=``: False when quiet."""
        return False if self.quiet else self._update

    @property
    def byte_progress(self) -> Any:
        """``progress=`` for a count of bytes read (shown as kB, MB, GB and MB/s)."""
        return False if self.quiet else self._update_bytes

    def _update_bytes(self, done: int, total: int) -> None:
        self._update(done, total, unit="B")

    def _update(self, done: int, total: int, unit: str = "sample") -> None:
        if self._bar is not None and (total != self._last[1] or done < self._last[0]):
            self.close_bar()
        if self._bar is None:
            # shown once the step (not the bar) has run for a second: a step
            # whose first update comes late still gets its bar
            ran = 0.0 if self._step_start is None else time.perf_counter() - self._step_start
            self._bar = make_progress(True, total, self.step, unit, stream=self.err,
                                      tty=self.tty, delay=max(0.0, SHOW_AFTER - ran))
        self._bar.update(done - max(self._last[0], 0))
        self._last = (done, total)
        if done >= total:
            self.close_bar()

    def close_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar = None
        self._last = (-1, -1)


#: Seconds a step runs before its progress bar appears.
SHOW_AFTER = 1.0


def _counted(n: int, noun: str) -> str:
    """``1 pair``, ``2 pairs``, ``1 pass``, ``3 passes`` (thousands separated)."""
    plural = noun + ("es" if noun.endswith(("s", "sh", "ch", "x")) else "s")
    return f"{n:,} {noun if n == 1 else plural}"


def _fmt_s(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 0.01 else f"{1000 * seconds:.1f} ms"

# ------------------------------------------------------------------ parsing
def _int_arg(text: str) -> int:
    from ._validation import parse_int_text

    try:
        return parse_int_text(text, "argument")
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _threads(text: str) -> int:
    n = _int_arg(text)
    if n == 0:
        raise argparse.ArgumentTypeError("must not be 0 (negative counts back from all cores)")
    return n


def _unit(text: str) -> float:
    from ._validation import parse_float_text

    try:
        x = parse_float_text(text, "argument")
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= x <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return x


def _count(text: str) -> int:
    n = _int_arg(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {n}")
    return n


def _positive(text: str) -> int:
    n = _count(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def _thresholds(text: str) -> tuple:
    from .pipeline.report import parse_thresholds

    try:
        return parse_thresholds(text, "--at")
    except (TypeError, ValueError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _fields(text: str) -> list[str]:
    names = [f.strip() for f in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated column names, got {text!r}")
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"a column is named twice in {text!r}")
    return names


def _ngram_list(text: str) -> tuple:
    from .contamination import MAX_NGRAM

    out = []
    for part in text.split(","):
        try:
            n = _int_arg(part.strip()) if part.strip() else None
        except argparse.ArgumentTypeError:
            n = None
        if n is None or not 1 <= n <= MAX_NGRAM:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated n-gram lengths in [1, {MAX_NGRAM}], got {text!r}")
        out.append(n)
    return tuple(out)


def _rule_list(text: str) -> list[str]:
    from .contamination import RULES

    names = [r.strip() for r in text.split(",")]
    for r in names:
        if r not in RULES:
            raise argparse.ArgumentTypeError(
                f"unknown rule {r!r} (choose from {', '.join(RULES)})")
    return names


def _tokenizer_names() -> list[str]:
    from . import TOKENIZERS

    return list(TOKENIZERS)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``overlap`` command."""
    from . import __version__
    from ._lines import MAX_LINE_BYTES
    from ._validation import MEASURES
    from .pipeline.report import AT
    from .pipeline.scanning import DEFAULT_TOKENIZER
    from .pipeline.steps import KEEP
    from .pipeline.tables import FORMATS
    from .stream_readers import STREAM_FORMATS

    at_default = ",".join(f"{t:g}" for t in AT)
    from ._batches import ENGINE_VARIABLE, ENGINES
    ENGINE_HELP = (f"how input files are read: arrow = pyarrow in C++ (JSONL, CSV, TSV, text, "
                   f"Parquet; needs pyarrow), python = the standard library (every format but "
                   f"Parquet); both give the same rows and errors (default: auto = arrow when "
                   f"pyarrow is installed, or ${ENGINE_VARIABLE})")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true",
                        help="print nothing but errors: no results, step lines or progress bars")
    common.add_argument("--threads", type=_threads, default=None, metavar="N",
                        help="threads for the kernels (default: all usable cores; -1 = all, "
                             "-2 = all but one); results never depend on it")
    writes = argparse.ArgumentParser(add_help=False)
    writes.add_argument("--overwrite", action="store_true",
                        help="replace existing output files / write into a non-empty output "
                             "folder (default: refuse). Inputs are never overwritten")
    writes.add_argument("--parents", action="store_true",
                        help="create missing folders above the outputs (default: refuse an "
                             "output whose folder does not exist)")
    tok = argparse.ArgumentParser(add_help=False)
    tok.add_argument("--tokenizer", choices=_tokenizer_names(), default=DEFAULT_TOKENIZER,
                     help=f"tokenizer preset (default: {DEFAULT_TOKENIZER}: wordpunct, except "
                          "that every CJK ideograph, kana and Hangul syllable is a token; "
                          "wordpunct = the published study's rule, same on other text)")
    tok.add_argument("--max-line-bytes", type=_positive, default=None, metavar="N",
                     dest="max_line_bytes",
                     help="longest line read from any input file, after .gz/.zst inflation; a "
                          f"longer one is an error naming file and line (default: "
                          f"{MAX_LINE_BYTES:,} = 64 MiB)")
    tok.add_argument("--engine", choices=ENGINES, default=None, help=ENGINE_HELP)
    tok.add_argument("--ngram", type=_positive, default=1, metavar="K",
                     help="compare token K-grams (default: 1, single tokens)")
    table = argparse.ArgumentParser(add_help=False)
    table.add_argument("--format", choices=FORMATS, default=None,
                       help="input format (default: from the extension: .txt = dailydialog "
                            "when its first non-empty line holds __eou__, else text, one "
                            "sample a line; .csv, .tsv, .jsonl/.ndjson, .parquet)")
    table.add_argument("--fields", type=_fields, default=None, metavar="COLS",
                       help=FIELDS_HELP)
    table.add_argument("--turns", type=_positive, default=1, metavar="K",
                       help="context turns when DailyDialog files are cut into (context, "
                            "response) samples (default: 1)")
    meas = argparse.ArgumentParser(add_help=False)
    meas.add_argument("--measure", choices=MEASURES, default="dice",
                      help="score of two samples, the minimum over the fields "
                           "(docs/measures.md); with i = |A & B|: dice 2i/(|A|+|B|) (default), "
                           "jaccard i/|A | B|, cosine i/sqrt(|A||B|), overlap i/min(|A|,|B|), "
                           "containment i/|A| (how much of the eval sample A lies inside the "
                           "train sample B; not for dedup)")
    at = argparse.ArgumentParser(add_help=False)
    at.add_argument("--at", type=_thresholds, default=AT, metavar="T1,T2,...",
                    help="thresholds of the summary: counts and percentages of samples whose "
                         f"best match scores >= each (default: {at_default})")

    p = argparse.ArgumentParser(
        prog=PROG,
        description="Exact train/test overlap, near-duplicate removal and re-splitting "
                    "of dialogue and other text datasets.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}",
                   help="print the version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    d = sub.add_parser("demo", parents=[common, writes],
                       help="run the whole pipeline on a generated corpus (no download)",
                       description="Generate a small dialogue corpus with planted "
                                   "near-duplicates and train/test overlap, clean it, "
                                   "and show what happened.")
    d.add_argument("--out", default="overlap-demo-output", metavar="DIR",
                   help="output folder, must be empty or new unless --overwrite "
                        "(default: ./overlap-demo-output)")
    d.add_argument("--dialogues", type=_positive, default=2000, metavar="N",
                   help="train dialogues to generate (default: 2000; valid and test get N/10)")
    d.add_argument("--seed", type=_count, default=0, metavar="S",
                   help="corpus and re-split seed (default: 0)")
    d.set_defaults(func=cmd_demo)

    s = sub.add_parser("scan", parents=[common, writes, tok, table, meas, at],
                       help="max overlap of every eval sample against train (or within a file)",
                       description="For every eval sample, its best-matching train sample "
                                   "and their overlap ratio (minimum over fields). Without "
                                   "--train, every sample of the file against all the others "
                                   "(duplicates within one split). With --train-stream, the "
                                   "training corpus (a file or a folder of shards, bigger "
                                   "than memory) is read chunk by chunk; same result as "
                                   "--train.")
    s.add_argument("file", nargs="?", metavar="FILE",
                   help="the eval samples (same as --eval)")
    s.add_argument("--eval", metavar="FILE", dest="eval_",
                   help="eval samples (e.g. the test split)")
    train = s.add_mutually_exclusive_group()
    train.add_argument("--train", metavar="FILE",
                       help="training samples (default: none, scan FILE against itself)")
    train.add_argument("--train-stream", metavar="PATH", dest="train_stream",
                       help="a training corpus bigger than memory: a file or a folder of shard "
                            "files (read in name order), streamed --chunk-rows rows at a time; "
                            "the result equals --train on the same rows")
    s.add_argument("--stream-format", metavar="FMT", dest="stream_format",
                   help="format of the --train-stream files: " + ", ".join(STREAM_FORMATS)
                        + " (default: from each extension: .jsonl/.ndjson, .csv, .tsv, "
                          ".parquet/.pq, .txt/.text = one sample a line, field text; "
                          ".gz or .zst ok)")
    s.add_argument("--chunk-rows", type=_positive, default=None, metavar="N",
                   dest="chunk_rows",
                   help="corpus rows held in memory at a time with --train-stream "
                        "(default: 65536)")
    s.add_argument("--min-score", type=_unit, default=None, metavar="S", dest="min_score",
                   help="with --train-stream: best matches scoring below S are reported as "
                        "score 0 and no match; 0.5 or more also runs faster (default: 0)")
    s.add_argument("--by", metavar="COLUMN",
                   help="also summarise per value of this eval column (e.g. language)")
    s.add_argument("--out", metavar="FILE",
                   help="per-sample output (.csv, .tsv, .jsonl or .parquet; - = stdout, the "
                        "summary then goes to stderr): every eval column, score, the match's "
                        "index and both texts (with --train-stream also the match's shard "
                        "file and row in it)")
    s.add_argument("--out-format", choices=OUT_FORMATS, default=None, dest="out_format",
                   help="format of --out (default: from its extension; csv for stdout)")
    s.add_argument("--summary", metavar="FILE",
                   help="write the summary (per group and overall with --by) as .csv, .tsv, "
                        ".jsonl or .json")
    s.add_argument("--plot", metavar="PNG", help="histogram of the scores as a PNG "
                                                 "(default: a text histogram on stdout)")
    s.set_defaults(func=cmd_scan)

    u = sub.add_parser("dedup", parents=[common, writes, tok, meas],
                       help="iterative near-duplicate removal of a file's units",
                       description="Remove near-duplicate units (dialogues of a DailyDialog "
                                   "file, or rows of a table) with the iterative method.")
    u.add_argument("input", metavar="INPUT", help="DailyDialog .txt, .csv, .tsv, .jsonl or "
                                                  ".parquet")
    u.add_argument("--out", required=True, metavar="OUTPUT",
                   help="the kept units, in the format of its extension (required; never an "
                        "input; - = stdout, in the input's format unless --out-format)")
    u.add_argument("--out-format", choices=OUT_FORMATS, default=None, dest="out_format",
                   help="format of --out for a table (default: from its extension, or the "
                        "input's)")
    u.add_argument("--threshold", type=_unit, default=0.8,
                   help="remove units whose ratio to a kept one exceeds this (default: 0.8)")
    u.add_argument("--keep", choices=KEEP, default="most-overlapped",
                   help="which unit of near-duplicates stays: most-overlapped = the published "
                        "method (a removed unit's best match stays), first = the earliest "
                        "(default: most-overlapped)")
    u.add_argument("--report", metavar="JSON",
                   help="write a JSON report: counts and every removed unit with its text "
                        "and the kept unit's")
    u.add_argument("--format", choices=FORMATS, default=None,
                   help="input format (default: from the extension; a .txt is dailydialog "
                        "when its first non-empty line holds __eou__, else text)")
    u.add_argument("--fields", type=_fields, default=None, metavar="COLS",
                   help=FIELDS_HELP)
    u.set_defaults(func=cmd_dedup)

    c = sub.add_parser("clean", parents=[common, writes, tok, meas, at],
                       help="clean a dataset: fixed eval (train decontaminated) or re-split",
                       description="Two modes, named on the first line of the output. "
                                   "FIXED EVAL (the default with explicit --valid/--test "
                                   "files; --fixed-eval): the eval files are never changed; "
                                   "train rows whose best eval match scores >= --threshold "
                                   "are removed, then train is deduplicated (same as overlap "
                                   "decontaminate). RE-SPLIT (the default for a folder DIR "
                                   "or --train alone; --resplit): scan, dedup all splits "
                                   "pooled, re-split so the least-overlapping units form "
                                   "valid and test, flatten, remove exact duplicates, write "
                                   "the new split and a report; for a corpus you own, not a "
                                   "published benchmark.")
    c.add_argument("directory", nargs="?", metavar="DIR",
                   help="folder with dialogues_{train,validation,test}.txt or "
                        "{train,valid,test}.txt")
    c.add_argument("--train", metavar="FILE", help="train split file (instead of DIR)")
    c.add_argument("--valid", metavar="FILE", help="validation split file (optional)")
    c.add_argument("--test", metavar="FILE", help="test split file (optional)")
    mode = c.add_mutually_exclusive_group()
    mode.add_argument("--fixed-eval", action="store_true", dest="fixed_eval",
                      help="fixed-eval mode: never change valid/test, remove from train what "
                           "overlaps them, dedup train (default when --valid or --test is "
                           "given)")
    mode.add_argument("--resplit", action="store_true",
                      help="re-split mode: pool the splits, dedup, deal them again (default "
                           "for a folder DIR or --train alone)")
    c.add_argument("--format", choices=FORMATS, default=None,
                   help="format of the split files (default: from each extension; a .txt is "
                        "dailydialog when its first non-empty line holds __eou__, else text)")
    c.add_argument("--fields", type=_fields, default=None, metavar="COLS",
                   help=FIELDS_HELP)
    c.add_argument("--out", required=True, metavar="DIR2",
                   help="output folder (required; new or empty unless --overwrite; never "
                        "inside an input folder)")
    c.add_argument("--test-size", type=_count, default=None, metavar="N",
                   help="re-split: units in the new test split (default: as in the input; "
                        "never shrunk)")
    c.add_argument("--valid-size", type=_count, default=None, metavar="N",
                   help="re-split: units in the new validation split (default: as in the "
                        "input; never shrunk)")
    c.add_argument("--turns", type=_positive, default=None, metavar="K",
                   help="re-split: context turns of the samples (default: 1)")
    c.add_argument("--threshold", type=_unit, default=0.8,
                   help="re-split: dedup threshold, remove units above it; fixed eval: "
                        "remove train units whose best eval match scores >= it and train "
                        "near-duplicates above it (default: 0.8)")
    c.add_argument("--keep", choices=KEEP, default="most-overlapped",
                   help="which unit of near-duplicates stays (default: most-overlapped, the "
                        "published method; first = the earliest, train before valid/test)")
    c.add_argument("--seed", type=_count, default=None, metavar="S",
                   help="re-split: seed (default: 0)")
    c.add_argument("--dedup-measure", choices=MEASURES, default=None, dest="dedup_measure",
                   help="fixed eval: measure of the train dedup (default: --measure; "
                        "dedup scores each pair once, so not containment: with --measure "
                        "containment give a symmetric one, overlap the closest, or use "
                        "overlap decontaminate --no-dedup)")
    c.add_argument("--allow-unlabelled-move", action="store_true",
                   dest="allow_unlabelled_move",
                   help="re-split: go ahead even when the split tables have different "
                        "columns (e.g. test has no label), moving rows into splits that "
                        "lack their columns (default: refuse)")
    c.set_defaults(func=cmd_clean)

    x = sub.add_parser("decontaminate", parents=[common, writes, tok, meas, at],
                       help="fixed benchmark: remove from train what overlaps valid/test, "
                            "dedup train; eval files never change",
                       description="For a benchmark whose eval splits are fixed: train "
                                   "units whose best match in --valid or --test scores >= "
                                   "--threshold are removed, then train is deduplicated "
                                   "(units above --dedup-threshold). Writes DIR/train.EXT "
                                   "(every column, original order) and DIR/report.json "
                                   "(every removed train unit, why, and what it matched). "
                                   "The eval files are read, never written.")
    x.add_argument("--train", required=True, metavar="FILE",
                   help="train split file: .csv, .tsv, .jsonl, .parquet (rows) or "
                        "DailyDialog .txt (dialogues) (required)")
    x.add_argument("--valid", metavar="FILE", help="validation split file (never changed)")
    x.add_argument("--test", metavar="FILE", help="test split file (never changed)")
    x.add_argument("--format", choices=FORMATS, default=None,
                   help="format of the files (default: from each extension)")
    x.add_argument("--fields", default="context,response", metavar="COLS",
                   help="columns compared for tables; the ratio is the minimum over them "
                        "(default: context,response)")
    x.add_argument("--out", required=True, metavar="DIR",
                   help="output folder (required; new or empty unless --overwrite; never "
                        "inside an input folder)")
    x.add_argument("--threshold", type=_unit, default=0.8,
                   help="remove train units whose best eval match scores >= this "
                        "(default: 0.8)")
    x.add_argument("--dedup-threshold", type=_unit, default=None, metavar="T",
                   dest="dedup_threshold",
                   help="dedup train: remove units whose ratio to one still present "
                        "exceeds T (default: --threshold)")
    x.add_argument("--no-dedup", action="store_false", dest="dedup_train",
                   help="do not deduplicate train, only remove the eval overlap (default: deduplicate)")
    x.add_argument("--dedup-measure", choices=MEASURES, default=None, dest="dedup_measure",
                   help="measure of the train dedup (default: --measure; "
                        "dedup scores each pair once, so not containment: with --measure "
                        "containment give a symmetric one, overlap the closest, or --no-dedup)")
    x.add_argument("--keep", choices=KEEP, default="most-overlapped",
                   help="which train unit of near-duplicates stays (default: "
                        "most-overlapped, the published method; first = the earliest)")
    x.set_defaults(func=cmd_decontaminate)

    k = sub.add_parser("contamination", parents=[common, writes],
                       help="n-gram contamination of eval samples by a corpus (GPT-3, PaLM, "
                            "Llama 2 rules)",
                       description="For every eval sample: how many of its n-grams occur in "
                                   "the corpus (a file or a folder of shards, read chunk by "
                                   "chunk), their fraction, the longest run of sample tokens "
                                   "they cover, the token coverage, the first corpus row "
                                   "holding one, and a label per rule: any = a 13-gram found "
                                   "(GPT-3, lm-evaluation-harness), palm = >= 70%% of the "
                                   "8-grams found, llama2 = >= 80%% of the tokens covered by "
                                   "found 11-grams (clean below 20%%). See docs/contamination.md.")
    k.add_argument("--eval", required=True, metavar="FILE", dest="eval_",
                   help="eval samples: .csv, .tsv, .jsonl, .parquet or .txt (one a line)")
    k.add_argument("--corpus", required=True, metavar="PATH",
                   help="the corpus: a file or a folder of shard files (read in name order, "
                        "--chunk-rows rows at a time)")
    k.add_argument("--ngram", type=_ngram_list, default=None, metavar="N[,N...]",
                   help="n-gram lengths to report besides those the rules need "
                        "(default: none; with no --rule either, the rule any)")
    k.add_argument("--rule", type=_rule_list, action="append", default=None, metavar="RULE",
                   help="any, palm or llama2 (repeat or comma-separate; default: any unless "
                        "--ngram is given)")
    k.add_argument("--by", metavar="COLUMN",
                   help="summarise per value of this eval column (e.g. language)")
    k.add_argument("--field", default="text", metavar="COLUMN",
                   help="the text column of the eval file and of the corpus (default: text)")
    k.add_argument("--format", choices=FORMATS, default=None,
                   help="format of the eval file (default: from its extension)")
    k.add_argument("--corpus-format", metavar="FMT", dest="corpus_format", default=None,
                   help="format of the corpus files: " + ", ".join(STREAM_FORMATS)
                        + " (default: from each extension)")
    k.add_argument("--chunk-rows", type=_positive, default=65536, metavar="N",
                   dest="chunk_rows",
                   help="corpus rows held in memory at a time (default: 65536); the result "
                        "does not depend on it")
    k.add_argument("--tokenizer", choices=_tokenizer_names(), default=DEFAULT_TOKENIZER,
                   help=f"tokenizer preset (default: {DEFAULT_TOKENIZER}; n-grams are over "
                        "its tokens)")
    k.add_argument("--seed", type=_count, default=0, metavar="S",
                   help="hash seed (default: 0)")
    k.add_argument("--max-line-bytes", type=_positive, default=None, metavar="N",
                   dest="max_line_bytes",
                   help=f"longest line read, after .gz/.zst inflation "
                        f"(default: {MAX_LINE_BYTES:,})")
    k.add_argument("--engine", choices=ENGINES, default=None, help=ENGINE_HELP)
    k.add_argument("--out", metavar="FILE",
                   help="per-sample report, .csv or .jsonl (also .tsv, .parquet): group, "
                        "sample, n-gram counts, fraction, longest run, coverage, the first "
                        "matching corpus row (global, shard file, row in it) and its text, "
                        "a label per rule")
    k.set_defaults(func=cmd_contamination)
    return p


# ----------------------------------------------------------------- commands
def _plot(con: Console, outs: Any, path: str | None, series: dict, title: str,
          measure: str = "dice") -> str | None:
    """Stage a PNG histogram; print a text one when matplotlib is missing."""
    from ._optional import MissingExtra
    from .pipeline.plot import save_histogram, text_histogram

    if not series:  # no eval split: nothing to draw
        return None
    if path is not None:
        try:
            save_histogram(outs.stage(path), series, title=title, measure=measure)
            return path
        except MissingExtra as e:
            con.out(f"({e}; a text histogram instead)")
    con.out(text_histogram(series))
    return None


def _print_clean(con: Console, res: Any, out_dir: str, nt: int, png: str | None) -> None:
    rep = res.report
    what = "dialogues" if rep.unit == "dialogue" else "rows"
    fields = "context and response" if rep.unit == "dialogue" else "the fields"
    con.out("")
    by = _by_measure(rep.settings.measure)
    con.out(f"Overlap of the ORIGINAL split (each eval sample's best match in train{by}, "
            f"min over {fields}; counts of scores >= each threshold):")
    for k, r in res.before.items():
        con.out("  " + r.summary.format(k))
    if not res.before:
        con.out("  (the input has no valid or test split)")
    d = rep.dedup
    split_counts = ", ".join(f"{v:,} {k}" for k, v in d.removed_by_split.items())
    con.out("")
    con.out(f"Dedup (threshold {rep.settings.threshold:g}{by}, keep {rep.settings.keep}): removed "
            f"{d.removed:,} of {d.units:,} {what} ({split_counts}) in "
            f"{_counted(d.passes, 'pass')}; "
            f"{_counted(d.pairs_above_threshold, 'pair')} above the threshold")
    rs = rep.resplit
    con.out(f"Re-split: train {rs['train']:,} / valid {rs['valid']:,} / test {rs['test']:,} "
            f"{what} (the least-overlapping {what} went to valid and test)")
    moved = getattr(rep, "moved", {})
    if any("without_column" in e or "with_column" in e for e in moved.values()):
        parts = []
        for k, e in moved.items():
            src = ", ".join(f"{c:,} from {s[5:]}" for s, c in e.items() if s.startswith("from_"))
            cols = [f"{c:,} without {col!r}" for col, c in e.get("without_column", {}).items()]
            cols += [f"{c:,} with {col!r}" for col, c in e.get("with_column", {}).items()]
            parts.append(f"new {k}: {src}" + (f" ({', '.join(cols)})" if cols else ""))
        con.out("WARNING: the splits have different columns and re-split moved rows between "
                "them (--allow-unlabelled-move): " + "; ".join(parts))
    parts = []
    for k, c in rep.samples.items():
        extra = f", {c.in_train:,} also in train" if k != "train" else ""
        parts.append(f"{k} {c.before:,} -> {c.after:,} ({c.duplicates_within:,} duplicates{extra})")
    con.out("Samples: " + "; ".join(parts))
    con.out("")
    con.out("Overlap of the NEW split:")
    for k, r in res.after.items():
        con.out("  " + r.summary.format(k))
    con.out("")
    con.out(con.timing_line(nt))
    con.out(f"Files in {out_dir}{os.sep}: " + ", ".join(os.path.basename(f) for f in res.files)
            + (f", {os.path.basename(png)}" if png else "")
            + (" (report.json lists every removed unit with its text)" if d.removed else ""))


def _histogram_series(res: Any) -> dict:
    for k in ("test", "valid"):
        series = {}
        if k in res.before:
            series[f"{k}, original"] = res.before[k].score
        if k in res.after:
            series[f"{k}, cleaned"] = res.after[k].score
        if series:
            return series
    return {}


def cmd_demo(args: argparse.Namespace, con: Console) -> int:
    from ._threads import effective_n_threads
    from .pipeline.demo import generate_corpus
    from .pipeline.dialogue import write_dialogues
    from .pipeline.output import Outputs
    from .pipeline.cleaning import SPLIT_FILE_NAMES, clean, plan_clean_outputs, write_clean

    nt = effective_n_threads(args.threads, "--threads")
    outs = Outputs(overwrite=args.overwrite, make_parents=args.parents)
    plan_clean_outputs(outs, args.out, "dialogue", {})
    corpus_dir = os.path.join(args.out, "corpus")
    corpus_files = {k: outs.file_in(corpus_dir, v) for k, v in SPLIT_FILE_NAMES.items()}
    png = outs.file_in(args.out, "overlap_hist.png")
    outs.check()
    n = args.dialogues
    con.log("generate: a dialogue corpus with planted overlap")
    corpus = generate_corpus(n, max(1, n // 10), max(1, n // 10), seed=args.seed)
    sp = corpus.splits
    con.out(f"overlap demo: a generated corpus of {len(sp['train']):,} train, "
            f"{len(sp['valid']):,} valid and {len(sp['test']):,} test dialogues "
            f"(written to {corpus_dir}{os.sep})")
    con.out(f"  planted: {corpus.near_duplicates:,} near-duplicate train dialogues; "
            f"{corpus.leaked['valid']:,} valid and {corpus.leaked['test']:,} test dialogues "
            "copied from train with small edits")
    with outs:
        for k, path in corpus_files.items():
            write_dialogues(outs.stage(path), sp[k])
        res = clean(sp, seed=args.seed, n_threads=nt, progress=con.progress, log=con.log)
        con.log("write: the new split, the report and the histogram")
        write_clean(args.out, res, outputs=outs)
        shown = _plot(con, outs, png, _histogram_series(res),
                      "Max overlap against train: before / after")
    _print_clean(con, res, args.out, nt, shown)
    con.out("Next: overlap clean YOUR_DIR --out CLEAN_DIR  (see overlap clean --help)")
    return 0


def _clean_source(args: argparse.Namespace) -> Any:
    files = {k: getattr(args, k) for k in ("train", "valid", "test") if getattr(args, k)}
    if args.directory and files:
        raise UsageError("give either DIR or --train/--valid/--test files, not both")
    if args.directory:
        if not os.path.exists(args.directory):
            raise UsageError(f"{args.directory}: no such folder")
        if not os.path.isdir(args.directory):
            raise UsageError(f"{args.directory}: not a directory")
        return args.directory
    if not files:
        raise UsageError("give a folder DIR or at least --train FILE")
    if "train" not in files:
        raise UsageError("--train FILE is required with --valid/--test")
    for k, f in files.items():
        if not os.path.isfile(f):
            raise FileNotFoundError(f"{f}: no such file (--{k})")
    return files


def _clean_mode(args: argparse.Namespace) -> str:
    """``fixed-eval`` or ``resplit``: named by a flag, else fixed eval when eval files are given."""
    if args.resplit:
        return "resplit"
    if args.fixed_eval or (args.directory is None and (args.valid or args.test)):
        return "fixed-eval"
    return "resplit"


def _mode_line(mode: str, evals: Sequence[str] = ()) -> str:
    if mode == "fixed-eval":
        ev = " and ".join(evals) or "the eval splits"
        verb, it = ("is", "it") if len(evals) == 1 else ("are", "them")
        return (f"mode: fixed eval ({ev} {verb} never changed; train rows that overlap {it} "
                "are removed, then train is deduplicated)")
    return ("mode: re-split (all splits pooled, deduplicated and dealt again; for a corpus "
            "you own, not a fixed benchmark)")


def cmd_clean(args: argparse.Namespace, con: Console) -> int:
    from ._threads import effective_n_threads
    from .pipeline.output import Outputs
    from .pipeline._splits import input_paths
    from .pipeline.cleaning import clean, clean_layout, plan_clean_outputs, write_clean
    from ._validation import check_measure

    source = _clean_source(args)
    mode = _clean_mode(args)
    if mode == "fixed-eval":
        for opt, value in (("--test-size", args.test_size), ("--valid-size", args.valid_size),
                           ("--seed", args.seed), ("--turns", args.turns),
                           ("--allow-unlabelled-move", args.allow_unlabelled_move or None)):
            if value is not None:
                raise UsageError(f"{opt} applies to re-splitting; the eval files are fixed "
                                 "here (give --resplit to re-split)")
        if isinstance(source, str):
            from .pipeline.dialogue import find_split_files

            source = find_split_files(source)
        files = {k: v for k, v in source.items() if k != "train"}
        if not files:
            raise UsageError("--fixed-eval needs an eval split (--valid or --test)")
        return _decontaminate(args, con, source["train"], files, True, None)
    if args.dedup_measure is not None:
        raise UsageError("--dedup-measure applies to fixed-eval mode; re-split deduplicates "
                         "the pooled splits with --measure")
    check_measure(args.measure, self_join=True, call="clean's dedup of the pooled splits")
    nt = effective_n_threads(args.threads, "--threads")
    outs = Outputs(input_paths(source), overwrite=args.overwrite,
                   make_parents=args.parents)
    unit, formats = clean_layout(source, args.format)
    plan_clean_outputs(outs, args.out, unit, formats)
    png = outs.file_in(args.out, "overlap_hist.png")
    outs.check()
    con.out(_mode_line("resplit"))
    res = clean(source, fields=args.fields, fmt=args.format,
                threshold=args.threshold, keep=args.keep, measure=args.measure,
                test_size=args.test_size,
                valid_size=args.valid_size, turns=args.turns or 1, seed=args.seed or 0,
                at=args.at, tokenizer=args.tokenizer, ngram=args.ngram, n_threads=nt,
                progress=con.progress, log=con.log,
                allow_unlabelled_move=args.allow_unlabelled_move)
    with outs:
        con.log("write: the new split, the report and the histogram")
        write_clean(args.out, res, outputs=outs)
        shown = _plot(con, outs, png, _histogram_series(res),
                      "Max overlap against train: before / after" + _by_measure(args.measure),
                      args.measure)
    _print_clean(con, res, args.out, nt, shown)
    return 0


def cmd_decontaminate(args: argparse.Namespace, con: Console) -> int:
    files = {k: getattr(args, k) for k in ("valid", "test") if getattr(args, k)}
    if not files:
        raise UsageError("give the fixed eval split(s): --test FILE and/or --valid FILE")
    for k, f in {"train": args.train, **files}.items():
        if not os.path.isfile(f):
            raise FileNotFoundError(f"{f}: no such file (--{k})")
    return _decontaminate(args, con, args.train, files, args.dedup_train,
                          args.dedup_threshold)


def _decontaminate(args: argparse.Namespace, con: Console, train: str, evals: dict,
                   dedup_train: bool, dedup_threshold: float | None) -> int:
    """Fixed-eval mode (``overlap decontaminate``, and ``overlap clean`` with eval files)."""
    from ._threads import effective_n_threads
    from .pipeline.decontamination import (check_decontaminate_measures, decontaminate,
                                           decontaminate_layout, plan_decontaminate_outputs,
                                           write_decontaminated)
    from .pipeline.output import Outputs

    skip = ("--no-dedup" if args.command == "decontaminate"
            else "overlap decontaminate with --no-dedup")
    check_decontaminate_measures(args.measure, args.dedup_measure, dedup_train, args.threshold,
                                 ("--measure", "--dedup-measure", skip))
    nt = effective_n_threads(args.threads, "--threads")
    outs = Outputs([train, *evals.values()], overwrite=args.overwrite,
                   make_parents=args.parents)
    unit, fmt = decontaminate_layout(train, args.format)
    plan_decontaminate_outputs(outs, args.out, unit, fmt)
    outs.check()
    con.out(_mode_line("fixed-eval", list(evals)))
    res = decontaminate(train, evals, fields=args.fields, fmt=args.format,
                        threshold=args.threshold, dedup_train=dedup_train,
                        dedup_threshold=dedup_threshold, keep=args.keep,
                        measure=args.measure, dedup_measure=args.dedup_measure, at=args.at,
                        tokenizer=args.tokenizer, ngram=args.ngram, n_threads=nt,
                        progress=con.progress, log=con.log)
    with outs:
        con.log("write: the cleaned train and the report")
        write_decontaminated(args.out, res, outputs=outs)
    rep = res.report
    what = "dialogues" if rep.unit == "dialogue" else "rows"
    unit = "dialogue" if rep.unit == "dialogue" else "row"
    fields = "" if rep.unit == "dialogue" else ", min over the fields"
    n = rep.inputs["train"]["units"]
    rm = rep.removed
    con.out("")
    st = rep.settings
    con.out(f"Overlap with the ORIGINAL train (each eval {unit}'s best match in train"
            f"{_by_measure(st.measure)}{fields}; counts of scores >= each threshold):")
    for k, v in rep.before.items():
        con.out("  " + v.format(k))
    con.out("")
    con.out(f"Removed from train: {rm['total']:,} of {n:,} {what}, kept {rep.kept:,}")
    by = ", ".join(f"{k} {v:,}" for k, v in rm["by_eval_split"].items())
    inside = (f"containment of an eval {unit} in the train {unit}"
              if st.measure == "containment" else f"best eval match{_by_measure(st.measure)}")
    con.out(f"  eval-overlap: {rm['eval-overlap']:,} ({inside} >= {st.threshold:g}; {by})")
    if rep.settings.dedup_threshold is None:
        con.out("  train-duplicate: not run (--no-dedup)")
    else:
        con.out(f"  train-duplicate: {rm['train-duplicate']:,} (near-duplicates of other train "
                f"{what}, > {st.dedup_threshold:g}{_by_measure(st.dedup_measure)}, keep "
                f"{st.keep}, "
                f"{_counted(rep.dedup['passes'], 'pass')})")
    con.out("")
    con.out("Overlap with the CLEANED train:")
    for k, v in rep.after.items():
        con.out("  " + v.format(k))
    con.out("")
    con.out(con.timing_line(nt))
    con.out(f"Files in {args.out}{os.sep}: " + ", ".join(os.path.basename(f) for f in res.files)
            + " (report.json lists every removed train unit, its reason and what it matched;"
              " the eval files are unchanged)")
    return 0


def cmd_scan(args: argparse.Namespace, con: Console) -> int:
    from ._threads import effective_n_threads
    from .pipeline.scanning import scan

    nt = effective_n_threads(args.threads, "--threads")
    if args.file and args.eval_:
        raise UsageError("give the eval file once: FILE or --eval FILE")
    evalf = args.file or args.eval_
    if not evalf:
        raise UsageError("give the eval file: overlap scan FILE (or --eval FILE) [--train TRAIN]")
    if args.train_stream is not None:
        return _scan_stream(args, con, evalf, nt)
    for opt, value in (("--stream-format", args.stream_format), ("--chunk-rows", args.chunk_rows),
                       ("--min-score", args.min_score)):
        if value is not None:
            raise UsageError(f"{opt} applies to --train-stream only")
    inputs = [evalf] + ([args.train] if args.train else [])
    outs = _scan_outputs(args, con, inputs)
    res = scan(evalf, args.train, fields=args.fields, at=args.at, by=args.by, turns=args.turns,
               fmt=args.format, tokenizer=args.tokenizer, ngram=args.ngram,
               measure=args.measure, n_threads=nt, progress=con.progress,
               read_progress=con.byte_progress, log=con.log, _arrow=True)
    con.end_step()
    against = f"against {args.train}" if args.train else "against the rest of the file"
    con.out(f"{evalf} {against} (fields: {', '.join(res.fields)}; each sample's best match"
            f"{_by_measure(args.measure)}; counts of scores >= each threshold)")
    con.out("  " + res.summary.format("eval"))
    if args.train:
        con.out(f"  train: {len(res.train_texts[0]):,} samples")
    if res.groups is not None:
        con.out(f"  by {args.by} (counts of scores >= each threshold):")
        con.out(_indent(_indent(res.groups.format())))
    return _finish_scan(args, con, outs, res, nt, "Max overlap of eval samples against " +
                        ("train" if args.train else "the rest") + _by_measure(args.measure))


def _by_measure(measure: str) -> str:
    """`` by Jaccard`` (any measure but the default Dice, which goes unnamed)."""
    from ._validation import MEASURE_LABELS

    return "" if measure == "dice" else f" by {MEASURE_LABELS[measure]}"


def _check_stdout_format(args: argparse.Namespace, con: Console, default: str) -> None:
    """``--out -``: a text format, and the report moves to stderr."""
    fmt = args.out_format or default
    if fmt == "parquet":
        raise UsageError("--out -: Parquet is binary; write it to a file (or give "
                         "--out-format csv, tsv, jsonl or text)")
    con.report_to_stderr()


def _scan_outputs(args: argparse.Namespace, con: Console, inputs: list) -> Any:
    """Plan and check ``--out``, ``--summary`` and ``--plot`` of a scan reading ``inputs``."""
    from .pipeline.output import Outputs
    from .pipeline.tables import infer_format

    outs = Outputs(inputs, overwrite=args.overwrite, make_parents=args.parents)
    if args.summary == "-" or args.plot == "-":
        raise UsageError("only --out can be - (stdout)")
    if args.out == "-":
        _check_stdout_format(args, con, "csv")
    elif args.out:
        infer_format(args.out, args.out_format, sniff=False)
        outs.file(args.out)
    elif args.out_format:
        raise UsageError("--out-format applies to --out")
    for path in (args.summary,):
        if path:
            if not path.lower().endswith(".json"):
                infer_format(path, sniff=False)
            outs.file(path)
    if args.plot:
        outs.file(args.plot)
    outs.check()
    return outs


def _scan_stream(args: argparse.Namespace, con: Console, evalf: str, nt: int) -> int:
    """``overlap scan --train-stream PATH --eval E``: the corpus read chunk by chunk."""
    from .pipeline.streaming import scan_corpus
    from .stream_readers import STREAM_FORMATS, shard_paths

    if args.stream_format is not None and args.stream_format not in STREAM_FORMATS:
        raise UsageError(f"--stream-format must be one of {', '.join(STREAM_FORMATS)}, "
                         f"got {args.stream_format!r}")
    corpus = args.train_stream
    if not os.path.exists(corpus):
        raise FileNotFoundError(f"{corpus}: no such file or folder (--train-stream)")
    try:
        shards = shard_paths(corpus, args.stream_format)
    except ValueError as e:  # say it in the command's words
        raise UsageError(str(e).replace("pass fmt=", "give --stream-format")) from None
    outs = _scan_outputs(args, con, [evalf, corpus, *shards])
    chunk_rows = args.chunk_rows or 65536
    res = scan_corpus(evalf, corpus, fields=args.fields, at=args.at, by=args.by, turns=args.turns,
                      fmt=args.format, corpus_format=args.stream_format, chunk_rows=chunk_rows,
                      min_score=args.min_score or 0.0, tokenizer=args.tokenizer,
                      ngram=args.ngram, measure=args.measure, n_threads=nt,
                      progress=con.byte_progress, log=con.log)
    con.end_step()
    st = res.stream
    con.out(f"{evalf} against the stream {corpus} (fields: {', '.join(res.fields)}; each sample's "
            f"best match{_by_measure(args.measure)}; counts of scores >= each threshold)")
    con.out("  " + res.summary.format("eval"))
    con.out(f"  train: {st.n_references:,} samples")
    con.out(f"  streamed: {len(st.shards):,} shard file(s), {format_bytes(st.nbytes)}, "
            f"{chunk_rows:,} row{'' if chunk_rows == 1 else 's'} at a time"
            + (f"; matches below {args.min_score:g} not reported" if args.min_score else ""))
    if res.groups is not None:
        con.out(f"  by {args.by} (counts of scores >= each threshold):")
        con.out(_indent(_indent(res.groups.format())))
    return _finish_scan(args, con, outs, res, nt,
                        "Max overlap of eval samples against the training corpus"
                        + _by_measure(args.measure))


def _finish_scan(args: argparse.Namespace, con: Console, outs: Any, res: Any, nt: int,
                 title: str) -> int:
    """Write a scan's files (``--out``, ``--summary``, ``--plot``) and end its report."""
    from .pipeline.tables import write_rows, write_table

    table = res.to_table() if args.out else None
    with outs:
        if args.out and args.out != "-":
            con.log("write: per-sample scores")
            write_table(outs.stage(args.out), table, args.out_format)
        if args.summary:
            _write_summary(outs.stage(args.summary), args.summary, res)
        shown = None
        if args.plot:
            shown = _plot(con, outs, args.plot, {"eval": res.score}, title, args.measure)
        else:
            con.out(_indent(_text_hist(res.score)))
    con.out("  " + con.timing_line(nt))
    for label, path in (("scores", args.out), ("summary", args.summary), ("histogram", shown)):
        if path and path != "-":
            con.out(f"  {label} written to {path}")
    if args.out == "-":
        fmt = args.out_format or "csv"
        con.out(f"  scores written to stdout ({fmt})")
        con.data_to_stdout(lambda fh: write_rows(fh, table, fmt, "stdout"))
    return 0


def _write_summary(tmp: str, final: str, res: Any) -> None:
    from .pipeline.tables import write_table

    if res.groups is not None:
        table = res.groups.table()
    else:
        table = {k: [v] for k, v in {"group": "overall", **res.summary.as_dict()}.items()}
    if final.lower().endswith(".json"):
        rows = [dict(zip(table, vals)) for vals in zip(*table.values())]
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
    else:
        write_table(tmp, table, None if not final.lower().endswith(".json") else "jsonl")


def _text_hist(scores: Any) -> str:
    from .pipeline.plot import text_histogram

    return text_histogram(scores)


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def cmd_dedup(args: argparse.Namespace, con: Console) -> int:
    from ._fields import Handover, as_fields
    from ._threads import effective_n_threads
    from .dedup import dedup_fields
    from .pipeline.dialogue import EOU, format_dialogue, read_dialogues, write_dialogues
    from .pipeline.output import Outputs
    from .pipeline.scanning import tokenize_fields
    from .pipeline.steps import dedup_first_fields
    from ._columns import keep_rows
    from .pipeline.reread import FileStamp, TableAgain, held_by_arrow
    from .pipeline.tables import infer_format, read_named_columns, write_rows, write_table
    from .search import ratio
    from .tokensets import TokenSets

    from ._validation import check_measure, check_unit_interval

    nt = effective_n_threads(args.threads, "--threads")
    check_measure(args.measure, self_join=True, call="dedup")
    threshold = check_unit_interval(args.threshold, "--threshold")
    in_fmt = infer_format(args.input, args.format)
    to_stdout = args.out == "-"
    ext = "" if to_stdout else os.path.splitext(args.out)[1].lower()
    # a .txt output is written in the input's own .txt form (dialogues or lines)
    if args.out_format is not None:
        out_fmt = args.out_format
    elif not ext or (ext == ".txt" and in_fmt in ("dailydialog", "text")):
        out_fmt = in_fmt
    else:
        out_fmt = infer_format(args.out, None, sniff=False)
    if (in_fmt == "dailydialog") != (out_fmt == "dailydialog"):
        raise UsageError(f"{args.out}: a {in_fmt} input must be written as {in_fmt} "
                         f"(got {out_fmt})")
    outs = Outputs([args.input], overwrite=args.overwrite, make_parents=args.parents)
    if to_stdout:
        _check_stdout_format(args, con, out_fmt)
    else:
        outs.file(args.out)
    if args.report:
        outs.file(args.report)
    outs.check()
    con.log(f"read: {args.input}")
    again: TableAgain | None = None
    if in_fmt == "dailydialog":
        if not os.path.isfile(args.input):
            raise FileNotFoundError(f"{args.input}: no such file")
        units = read_dialogues(args.input, progress=con.byte_progress)
        if not units:
            raise UsageError(f"{args.input}: no dialogue (0 samples read)")
        con.log("tokenize: dialogues")
        ts: tuple = (TokenSets.from_texts([" ".join(u) for u in units], args.tokenizer,
                                          args.ngram, n_threads=nt, progress=con.progress),)
        what = "dialogues"
    else:
        # with pyarrow, the columns of a JSONL or text file stay in Arrow buffers
        # (taken before the read: a file that changes after it is not read again)
        stamp = FileStamp(args.input) if os.path.isfile(args.input) else None
        _, cols, table = read_named_columns(args.input, args.fields, in_fmt,
                                            progress=con.byte_progress, arrow=True)
        con.log("tokenize: the fields")
        ts = tokenize_fields(cols, "fields", tokenizer=args.tokenizer, ngram=args.ngram,
                             n_threads=nt, progress=con.progress)
        what = "rows"
        if stamp is not None and not args.report and held_by_arrow(table):
            # Arrow columns go during the search and are read again to be
            # written (the report reads the texts of the removed rows: kept)
            again = TableAgain(stamp, args.fields, in_fmt, len(ts[0]))
            del cols, table
            again.let_go()
    # the index build, the join (with a bar) and the passes each get a step line
    con.log(f"dedup: at threshold {args.threshold:g}{_by_measure(args.measure)}, keep "
            f"{args.keep}: indexing {len(ts[0]):,} {what}")
    # only the report reads the token sets after the dedup: without it they
    # are handed over, and freed once the index holds its own copy of them
    fields = as_fields(ts, "fields")
    report_ts = ts if args.report else ()
    held = fields if args.report else Handover(fields, lean=True)
    del ts, fields
    run = dedup_first_fields if args.keep == "first" else dedup_fields
    res = run(held, threshold, nt, con.progress, con.log, args.measure)
    if again is not None:
        # no step of its own: it happens only where pyarrow read the table,
        # and the step lines are the same with either reader
        _, _, table = again.read()
    with outs:
        if in_fmt == "dailydialog":
            kept_units = [u for u, k in zip(units, res.keep.tolist()) if k]
            if to_stdout:
                con.data_to_stdout(lambda fh: fh.writelines(
                    format_dialogue(u) + "\n" for u in kept_units if len(u)))
            else:
                con.log(f"write: {args.out}")
                write_dialogues(outs.stage(args.out), kept_units)
        else:
            kept_table = {k: keep_rows(col, res.keep) for k, col in table.items()}
            if to_stdout:
                con.data_to_stdout(lambda fh: write_rows(fh, kept_table, out_fmt, "stdout"))
            else:
                con.log(f"write: {args.out}")
                write_table(outs.stage(args.out), kept_table, out_fmt, progress=con.progress)
        if args.report:
            con.log(f"write: {args.report}")

            def text(i: int) -> str:  # only the removed units and theirs are reported
                if in_fmt == "dailydialog":
                    return f" {EOU} ".join(units[i])
                return " | ".join(c[i] for c in cols)

            import numpy as np

            removed = np.flatnonzero(~res.keep)
            kept_for = res.kept_for[removed]
            scores = (ratio(tuple(t.take(removed) for t in report_ts),
                            tuple(t.take(kept_for) for t in report_ts), measure=args.measure,
                            n_threads=nt)
                      if removed.size else np.zeros(0))
            n = res.keep.shape[0]
            report = {
                "input": args.input, "output": args.out, "threshold": args.threshold,
                "measure": args.measure, "keep": args.keep, "units": int(n),
                "removed": res.n_removed, "kept": int(n - res.n_removed), "passes": res.passes,
                "pairs_above_threshold": res.n_edges,
                "removed_units": [{"index": int(i), "kept_for": int(j), "score": float(s),
                                   "cluster": int(res.cluster[i]), "text": text(i),
                                   "kept_text": text(j)}
                                  for i, j, s in zip(removed.tolist(), kept_for.tolist(),
                                                     scores.tolist())],
            }
            with open(outs.stage(args.report), "w", encoding="utf-8") as fh:
                json.dump(report, fh, indent=2, ensure_ascii=False)
                fh.write("\n")
    n = res.keep.shape[0]
    con.out(f"{args.input}: removed {res.n_removed:,} of {n:,} {what} "
            f"(threshold {args.threshold:g}{_by_measure(args.measure)}, keep {args.keep}, "
            f"{_counted(res.passes, 'pass')}, {_counted(res.n_edges, 'pair')} above the "
            "threshold)")
    con.out(f"  kept {n - res.n_removed:,} {what} -> "
            + ("stdout" if to_stdout else args.out))
    if args.report:
        con.out(f"  report (every removed unit with its text) -> {args.report}")
    con.out("  " + con.timing_line(nt))
    return 0

def cmd_contamination(args: argparse.Namespace, con: Console) -> int:
    from ._threads import effective_n_threads
    from .contamination import RULES, contamination, resolve_ngrams
    from .pipeline.output import Outputs
    from .pipeline.tables import infer_format, read_table, write_table
    from .stream_readers import STREAM_FORMATS, shard_paths

    nt = effective_n_threads(args.threads, "--threads")
    rules = None if args.rule is None else [r for group in args.rule for r in group]
    ns, rules = resolve_ngrams(args.ngram, rules)
    if args.corpus_format is not None and args.corpus_format not in STREAM_FORMATS:
        raise UsageError(f"--corpus-format must be one of {', '.join(STREAM_FORMATS)}, "
                         f"got {args.corpus_format!r}")
    if not os.path.isfile(args.eval_):
        raise FileNotFoundError(f"{args.eval_}: no such file (--eval)")
    if not os.path.exists(args.corpus):
        raise FileNotFoundError(f"{args.corpus}: no such file or folder (--corpus)")
    try:
        shards = shard_paths(args.corpus, args.corpus_format)
    except ValueError as e:
        raise UsageError(str(e).replace("pass fmt=", "give --corpus-format")) from None
    outs = Outputs([args.eval_, args.corpus, *shards], overwrite=args.overwrite,
                   make_parents=args.parents)
    if args.out:
        if args.out == "-":
            raise UsageError("--out -: the report is written to a file (.csv, .jsonl, .tsv "
                             "or .parquet), not to stdout")
        if infer_format(args.out, None, sniff=False) not in ("csv", "tsv", "jsonl", "parquet"):
            raise UsageError(f"--out {args.out}: give a .csv, .jsonl, .tsv or .parquet file")
        outs.file(args.out)
    outs.check()
    con.log(f"read: {args.eval_}")
    table = read_table(args.eval_, args.format, progress=con.byte_progress)
    for col in [args.field] + ([args.by] if args.by else []):
        if col not in table:
            raise UsageError(f"{args.eval_}: no column {col!r} (has {', '.join(table)})"
                             + ("" if col != args.field else "; choose one with --field"))
    texts = table[args.field]
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise UsageError(f"{args.eval_}: row {i + 1} has no text in column {args.field!r} "
                             f"(got {type(t).__name__})")
    groups = None
    if args.by:
        groups = ["" if v is None else str(v) for v in table[args.by]]
    con.log(f"scan: {args.corpus} ({len(shards):,} shard file{'s' if len(shards) > 1 else ''}), "
            f"{len(texts):,} eval samples, n = {', '.join(map(str, ns))}")
    res = contamination(texts, args.corpus, ngram=ns, rules=rules, groups=groups,
                        field=args.field, fmt=args.corpus_format, tokenizer=args.tokenizer,
                        seed=args.seed, chunk_rows=args.chunk_rows, n_threads=nt,
                        progress=con.byte_progress)
    con.end_step()
    with outs:
        if args.out:
            con.log(f"write: {args.out}")
            write_table(outs.stage(args.out), res.to_table(args.by or "group"))
    con.out(f"{args.eval_} against {args.corpus}: {len(res):,} eval samples, "
            f"{res.n_rows:,} corpus rows ({format_bytes(res.nbytes)}), n = "
            + ", ".join(map(str, ns)))
    empty = int((res.n_tokens == 0).sum())
    if empty:
        con.out(f"  {empty:,} eval sample(s) without a token: no n-gram, never contaminated")
    for r in rules:
        con.out(f"  rule {r}: {RULES[r].definition}")
    if args.by:
        con.out(f"  by {args.by} (dirty = contaminated under the rule):")
    for row in res.summary():
        parts = [f"{row['samples']:,} samples"]
        parts += [f"{r} {row[f'{r}_dirty']:,} dirty ({row[f'{r}_pct']:.2f}%)" for r in rules]
        parts += [f"{row[f'found_{n}']:,} with a found {n}-gram" for n in ns
                  if n not in {RULES[r].n for r in rules}]
        name = row["group"] if args.by else "eval"
        con.out(("    " if args.by else "  ") + f"{name}: " + ", ".join(parts))
    con.out("  " + con.timing_line(nt))
    if args.out:
        con.out(f"  per-sample report written to {args.out}")
    return 0


# --------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``overlap`` command; returns the exit code."""
    try:
        return _run(argv)
    except KeyboardInterrupt:  # e.g. while numpy and the kernels are imported
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help / --version (0) or bad usage (2)
        return int(e.code or 0)
    con = Console(quiet=args.quiet)
    con.hold_output()
    from ._batches import reader_engine
    from ._lines import line_limit

    try:
        with line_limit(getattr(args, "max_line_bytes", None)), \
                reader_engine(getattr(args, "engine", None)):
            code = int(args.func(args, con))
    except KeyboardInterrupt:
        con.close_bar()
        _write(sys.stderr, f"{PROG}: interrupted\n")
        return 130
    except Exception as e:  # one line, never a traceback
        con.close_bar()
        code = _exit_code(e)
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if code == 1 and not isinstance(e, ImportError) and not _names_itself(e):
            msg = f"{type(e).__name__}: {msg}"
        _write(sys.stderr, f"{PROG}: error: {msg}\n")
        if os.environ.get("OVERLAP_DEBUG"):
            raise
        return code
    # the command's files are complete: now its report, which may fail alone
    try:
        con.release_output()
    except BrokenPipeError:  # stdout closed early (| head): the files stand
        _silence_stdout()
        return 141
    return code


def _silence_stdout() -> None:
    """Point stdout at the null device, so that the interpreter's own flush at
    exit does not fail again on the closed pipe."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError):
        pass


def _names_itself(e: BaseException) -> bool:
    """An error whose message says what failed without its class name (a failed write)."""
    from .pipeline.output import OutputWriteError

    return isinstance(e, OutputWriteError)


def _exit_code(e: BaseException) -> int:
    if isinstance(e, (UsageError, ValueError, TypeError, FileNotFoundError,
                      IsADirectoryError, NotADirectoryError)):
        return 2
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
