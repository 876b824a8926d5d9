"""The ``overlap`` command line: demo, scan, dedup, clean.

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

__all__ = ["main", "build_parser"]

PROG = "overlap"


class UsageError(Exception):
    """Bad usage or input found by the CLI itself (exit code 2)."""


# ----------------------------------------------------------------- terminal
class Console:
    """Where the CLI writes: results to stdout (unless quiet), progress to stderr."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.step = "working"
        self._bar: Any = None
        self._last = (-1, -1)

    def out(self, text: str = "") -> None:
        if not self.quiet:
            print(text, flush=True)

    def log(self, text: str) -> None:
        """A pipeline step starts: name the next progress bar after it."""
        self.close_bar()
        self.step = text.split(":")[0]

    @property
    def progress(self) -> Any:
        """What to hand to the library's ``progress=``: False when quiet."""
        return False if self.quiet else self._update

    def _update(self, done: int, total: int) -> None:
        if self._bar is not None and (total != self._last[1] or done < self._last[0]):
            self.close_bar()
        if self._bar is None:
            self._bar = _make_bar(total, self.step)
        self._bar.update(done - max(self._last[0], 0))
        self._last = (done, total)
        if done >= total:
            self.close_bar()

    def close_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar = None
        self._last = (-1, -1)


class _DelayedTextBar:
    """A stderr progress line that appears only once a step has run for a second."""

    def __init__(self, total: int, desc: str) -> None:
        self.total, self.desc, self.done = total, desc, 0
        self.start = time.monotonic()
        self.shown = False

    def update(self, n: int) -> None:
        self.done += n
        elapsed = time.monotonic() - self.start
        if elapsed >= 1.0:
            self.shown = True
            pct = 100.0 * self.done / max(self.total, 1)
            sys.stderr.write(f"\r{self.desc}: {self.done:,}/{self.total:,} ({pct:5.1f}%) "
                             f"{elapsed:5.1f}s")
            sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _make_bar(total: int, desc: str) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _DelayedTextBar(total, desc)
    kwargs = dict(total=total, desc=desc, leave=False, unit="sample", dynamic_ncols=True,
                  file=sys.stderr)
    try:
        return tqdm(delay=1.0, **kwargs)  # shown only once a step has run for a second
    except TypeError:  # tqdm older than 4.60 has no delay
        return _DelayedTextBar(total, desc)


# ------------------------------------------------------------------ parsing
def _threads(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if n == 0:
        raise argparse.ArgumentTypeError("must not be 0 (negative counts back from all cores)")
    return n


def _unit(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= x <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return x


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {n}")
    return n


def _positive(text: str) -> int:
    n = _count(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``overlap`` command."""
    from . import __version__
    from .pipeline.tables import FORMATS

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true",
                        help="print nothing but errors; no progress bars")
    common.add_argument("--threads", type=_threads, default=None, metavar="N",
                        help="threads for the kernels (default: all cores; -1 = all)")
    tok = argparse.ArgumentParser(add_help=False)
    tok.add_argument("--tokenizer", choices=["wordpunct", "whitespace", "char"],
                     default="wordpunct", help="tokenizer preset (default: wordpunct)")
    tok.add_argument("--ngram", type=_positive, default=1, metavar="K",
                     help="token n-grams (default: 1)")

    p = argparse.ArgumentParser(
        prog=PROG,
        description="Exact train/test overlap, near-duplicate removal and re-splitting "
                    "of dialogue (and other text) datasets.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    d = sub.add_parser("demo", parents=[common],
                       help="run the whole pipeline on a generated corpus (no download)",
                       description="Generate a small dialogue corpus with planted "
                                   "near-duplicates and train/test overlap, clean it, "
                                   "and show what happened.")
    d.add_argument("--out", default="overlap-demo-output", metavar="DIR",
                   help="output folder (default: ./overlap-demo-output)")
    d.add_argument("--dialogues", type=_positive, default=2000, metavar="N",
                   help="train dialogues to generate (default: 2000; valid and test get N/10)")
    d.add_argument("--seed", type=_count, default=0, help="corpus and split seed (default: 0)")
    d.set_defaults(func=cmd_demo)

    s = sub.add_parser("scan", parents=[common, tok],
                       help="max overlap of every eval sample against train",
                       description="For every eval sample, its best-matching train sample "
                                   "and their overlap ratio (minimum over fields).")
    s.add_argument("--train", required=True, metavar="FILE", help="training samples")
    s.add_argument("--eval", required=True, metavar="FILE", dest="eval_",
                   help="eval samples (e.g. the test split)")
    s.add_argument("--format", choices=FORMATS, default=None,
                   help="input format (default: from the extension; .txt = dailydialog)")
    s.add_argument("--fields", default="context,response",
                   help="comma-separated columns compared (default: context,response)")
    s.add_argument("--turns", type=_positive, default=1, metavar="K",
                   help="context turns for DailyDialog files (default: 1)")
    s.add_argument("--out", metavar="FILE", help="per-sample scores (.csv, .jsonl or .parquet)")
    s.add_argument("--plot", metavar="PNG", help="histogram of the scores as a PNG")
    s.set_defaults(func=cmd_scan)

    u = sub.add_parser("dedup", parents=[common, tok],
                       help="iterative near-duplicate removal of a file's units",
                       description="Remove near-duplicate units (dialogues of a DailyDialog "
                                   "file, or rows of a table) with the iterative method.")
    u.add_argument("input", metavar="INPUT", help="DailyDialog .txt, .csv, .jsonl or .parquet")
    u.add_argument("--threshold", type=_unit, default=0.8,
                   help="remove units whose ratio to a kept one exceeds this (default: 0.8)")
    u.add_argument("--out", required=True, metavar="OUTPUT",
                   help="the kept units, in the format of its extension")
    u.add_argument("--report", metavar="JSON", help="write a JSON report here")
    u.add_argument("--format", choices=FORMATS, default=None,
                   help="input format (default: from the extension)")
    u.add_argument("--fields", default="context,response",
                   help="columns compared for tables (default: context,response)")
    u.set_defaults(func=cmd_dedup)

    c = sub.add_parser("clean", parents=[common, tok],
                       help="the whole pipeline on a DailyDialog-style folder",
                       description="scan, dedup, re-split, flatten, remove exact duplicates, "
                                   "write the new split and a report.")
    c.add_argument("directory", metavar="DIR",
                   help="folder with dialogues_{train,validation,test}.txt or "
                        "{train,valid,test}.txt")
    c.add_argument("--out", required=True, metavar="DIR2", help="output folder")
    c.add_argument("--test-size", type=_count, default=None, metavar="N",
                   help="dialogues in the new test split (default: as in the input)")
    c.add_argument("--valid-size", type=_count, default=None, metavar="N",
                   help="dialogues in the new validation split (default: as in the input)")
    c.add_argument("--turns", type=_positive, default=1, metavar="K",
                   help="context turns of the samples (default: 1)")
    c.add_argument("--threshold", type=_unit, default=0.8,
                   help="dedup threshold (default: 0.8)")
    c.add_argument("--seed", type=_count, default=0, help="re-split seed (default: 0)")
    c.set_defaults(func=cmd_clean)
    return p


# ----------------------------------------------------------------- commands
def _plot_or_text(con: Console, path: str | None, series: dict, title: str) -> str | None:
    """Save a PNG histogram; print a text one when matplotlib is missing."""
    from .pipeline.tables import MissingExtra
    from .pipeline.plot import save_histogram, text_histogram

    if not series:  # no eval split: nothing to draw
        return None
    if path is not None:
        try:
            return save_histogram(path, series, title=title)
        except MissingExtra as e:
            con.out(f"({e}; a text histogram instead)")
    con.out(text_histogram(series))
    return None


def _fmt_s(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 0.01 else f"{1000 * seconds:.1f} ms"


def _print_clean(con: Console, res: Any, out_dir: str, total_s: float, nt: int,
                 png: str | None) -> None:
    rep = res.report
    con.out("")
    con.out("Overlap of the ORIGINAL split (each eval sample's best match in train, "
            "min over context and response):")
    for k, r in res.before.items():
        con.out("  " + r.summary.format(k))
    if not res.before:
        con.out("  (the input has no valid or test split)")
    d = rep["dedup"]
    by = ", ".join(f"{v:,} {k}" for k, v in d["removed_by_original_split"].items())
    con.out("")
    con.out(f"Dedup (threshold {rep['settings']['threshold']:g}): removed {d['removed']:,} of "
            f"{d['dialogues']:,} dialogues ({by}) in {d['passes']} passes; "
            f"{d['pairs_above_threshold']:,} pairs above the threshold")
    rs = rep["resplit"]
    con.out(f"Re-split: train {rs['train']:,} / valid {rs['valid']:,} / test {rs['test']:,} "
            "dialogues (the least-overlapping dialogues went to valid and test)")
    parts = []
    for k, c in rep["samples"].items():
        extra = f", {c['in_train']:,} also in train" if k != "train" else ""
        parts.append(f"{k} {c['before']:,} -> {c['after']:,} "
                     f"({c['duplicates_within']:,} duplicates{extra})")
    con.out("Samples: " + "; ".join(parts))
    con.out("")
    con.out("Overlap of the NEW split:")
    for k, r in res.after.items():
        con.out("  " + r.summary.format(k))
    t = rep["timing_s"]
    steps = ", ".join(f"{k} {_fmt_s(v)}" for k, v in t.items())
    con.out("")
    con.out(f"Time: {_fmt_s(total_s)} on {nt} thread(s) ({steps})")
    con.out(f"Files in {out_dir}{os.sep}: " + ", ".join(os.path.basename(f) for f in res.files)
            + (f", {os.path.basename(png)}" if png else ""))


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
    from .pipeline.demo import generate_corpus, write_corpus
    from .pipeline import clean

    nt = effective_n_threads(args.threads, "--threads")
    t_start = time.perf_counter()
    n = args.dialogues
    corpus = generate_corpus(n, max(1, n // 10), max(1, n // 10), seed=args.seed)
    corpus_dir = os.path.join(args.out, "corpus")
    write_corpus(corpus_dir, corpus)
    sp = corpus.splits
    con.out(f"overlap demo: a generated corpus of {len(sp['train']):,} train, "
            f"{len(sp['valid']):,} valid and {len(sp['test']):,} test dialogues "
            f"(written to {corpus_dir}{os.sep})")
    con.out(f"  planted: {corpus.near_duplicates:,} near-duplicate train dialogues; "
            f"{corpus.leaked['valid']:,} valid and {corpus.leaked['test']:,} test dialogues "
            "copied from train with small edits")
    t0 = time.perf_counter()
    res = clean(corpus_dir, args.out, seed=args.seed, n_threads=nt,
                progress=con.progress, log=con.log)
    total = time.perf_counter() - t0
    png = _plot_or_text(con, os.path.join(args.out, "overlap_hist.png"),
                        _histogram_series(res), "Max overlap against train: before / after")
    _print_clean(con, res, args.out, total, nt, png)
    con.out(f"Done in {_fmt_s(time.perf_counter() - t_start)}. Next: "
            f"overlap clean YOUR_DIR --out CLEAN_DIR  (see overlap --help)")
    return 0


def cmd_clean(args: argparse.Namespace, con: Console) -> int:
    from ._threads import effective_n_threads
    from .pipeline import clean

    nt = effective_n_threads(args.threads, "--threads")
    if not os.path.isdir(args.directory):
        raise UsageError(f"{args.directory}: not a directory")
    t0 = time.perf_counter()
    res = clean(args.directory, args.out, threshold=args.threshold, test_size=args.test_size,
                valid_size=args.valid_size, turns=args.turns, seed=args.seed,
                tokenizer=args.tokenizer, ngram=args.ngram, n_threads=nt,
                progress=con.progress, log=con.log)
    total = time.perf_counter() - t0
    png = _plot_or_text(con, os.path.join(args.out, "overlap_hist.png"),
                        _histogram_series(res), "Max overlap against train: before / after")
    _print_clean(con, res, args.out, total, nt, png)
    return 0


def cmd_scan(args: argparse.Namespace, con: Console) -> int:
    from ._threads import effective_n_threads
    from .pipeline.tables import infer_format, read_fields, write_table
    from .pipeline import scan

    nt = effective_n_threads(args.threads, "--threads")
    fields = [f.strip() for f in args.fields.split(",")]
    if args.out:
        infer_format(args.out)
    t0 = time.perf_counter()
    train_cols, train_tab = read_fields(args.train, fields, args.format, turns=args.turns)
    eval_cols, eval_tab = read_fields(args.eval_, fields, args.format, turns=args.turns)
    con.log("scan")
    res = scan(eval_cols, train_cols, tokenizer=args.tokenizer, ngram=args.ngram,
               n_threads=nt, progress=con.progress)
    elapsed = time.perf_counter() - t0
    con.out(f"{args.eval_} against {args.train} (fields: {', '.join(fields)})")
    con.out("  " + res.summary.format("eval"))
    con.out(f"  train: {len(train_cols[0]):,} samples; time {_fmt_s(elapsed)} on {nt} thread(s)")
    if args.out:
        table: dict[str, list] = {"eval_index": list(range(len(res))),
                                  "score": res.score.tolist(),
                                  "train_index": res.index.tolist()}
        idx = res.index.tolist()
        for f, ec, tc in zip(fields, eval_cols, train_cols):
            table[f"eval_{f}"] = ec
            table[f"train_{f}"] = [tc[j] if j >= 0 else "" for j in idx]
        write_table(args.out, table)
        con.out(f"  scores written to {args.out}")
    if args.plot:
        png = _plot_or_text(con, args.plot, {"eval": res.score},
                            "Max overlap of eval samples against train")
        if png:
            con.out(f"  histogram written to {png}")
    else:
        con.out(_indent(_text_hist(res.score)))
    return 0


def _text_hist(scores: Any) -> str:
    from .pipeline.plot import text_histogram

    return text_histogram(scores)


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def cmd_dedup(args: argparse.Namespace, con: Console) -> int:
    from ._threads import effective_n_threads
    from .pipeline.dialogue import read_dialogues, write_dialogues
    from .pipeline.tables import infer_format, read_fields, write_table
    from .pipeline import dedup_dialogues, tokenize_fields
    from .dedup import dedup

    nt = effective_n_threads(args.threads, "--threads")
    in_fmt = infer_format(args.input, args.format)
    out_fmt = infer_format(args.out, None) if os.path.splitext(args.out)[1] else in_fmt
    if (in_fmt == "dailydialog") != (out_fmt == "dailydialog"):
        raise UsageError(f"{args.out}: a {in_fmt} input must be written as {in_fmt} "
                         f"(got {out_fmt})")
    t0 = time.perf_counter()
    con.log("dedup")
    if in_fmt == "dailydialog":
        if not os.path.isfile(args.input):
            raise FileNotFoundError(f"{args.input}: no such file")
        units = read_dialogues(args.input)
        res = dedup_dialogues(units, threshold=args.threshold, tokenizer=args.tokenizer,
                              ngram=args.ngram, n_threads=nt, progress=con.progress)
        write_dialogues(args.out, [u for u, k in zip(units, res.keep) if k])
        what = "dialogues"
    else:
        fields = [f.strip() for f in args.fields.split(",")]
        cols, table = read_fields(args.input, fields, in_fmt)
        ts = tokenize_fields(cols, "fields", tokenizer=args.tokenizer, ngram=args.ngram,
                             n_threads=nt)
        res = dedup(ts, threshold=args.threshold, n_threads=nt, progress=con.progress)
        keep = res.keep.tolist()
        write_table(args.out, {k: [v for v, m in zip(col, keep) if m]
                               for k, col in table.items()}, out_fmt)
        what = "rows"
    elapsed = time.perf_counter() - t0
    n = res.keep.shape[0]
    con.out(f"{args.input}: removed {res.n_removed:,} of {n:,} {what} "
            f"(threshold {args.threshold:g}, {res.passes} passes, "
            f"{res.n_edges:,} pairs above the threshold) in {_fmt_s(elapsed)}")
    con.out(f"  kept {n - res.n_removed:,} {what} -> {args.out}")
    if args.report:
        removed = [int(i) for i in (~res.keep).nonzero()[0]]
        report = {
            "input": args.input, "output": args.out, "threshold": args.threshold,
            "units": int(n), "removed": res.n_removed, "kept": int(n - res.n_removed),
            "passes": res.passes, "pairs_above_threshold": res.n_edges,
            "seconds": round(elapsed, 4),
            "removed_units": [{"index": i, "kept_for": int(res.kept_for[i]),
                               "cluster": int(res.cluster[i])} for i in removed],
        }
        with open(args.report, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
            fh.write("\n")
        con.out(f"  report -> {args.report}")
    return 0


# --------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``overlap`` command; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help / --version (0) or bad usage (2)
        return int(e.code or 0)
    con = Console(quiet=args.quiet)
    try:
        return int(args.func(args, con))
    except KeyboardInterrupt:
        con.close_bar()
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # one line, never a traceback
        con.close_bar()
        code = _exit_code(e)
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if code == 1 and not isinstance(e, ImportError):
            msg = f"{type(e).__name__}: {msg}"
        print(f"{PROG}: error: {msg}", file=sys.stderr)
        if os.environ.get("OVERLAP_DEBUG"):
            raise
        return code


def _exit_code(e: BaseException) -> int:
    if isinstance(e, (UsageError, ValueError, TypeError, FileNotFoundError,
                      IsADirectoryError, NotADirectoryError)):
        return 2
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
