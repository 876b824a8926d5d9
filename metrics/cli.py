"""Command line of the metrics package: ``python -m metrics {ccks,corr,alpha} ...``.

Exit status: 0 success, 2 bad usage or bad input (one-line error on stderr
naming the file and line), 1 any other failure.  Input files are UTF-8 (a
BOM is fine); anything else is bad input, reported with the file and line.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import re
import sys
import warnings

from . import agreement, relation

PROG = "python -m metrics"

METHODS = ("pearson", "spearman", "kendall")


class InputError(ValueError):
    """Bad input file: reported on one line, exit status 2."""


class _HelpFormatter(argparse.HelpFormatter):
    """Appends "(default: X)" to an option's help when it has a real default;
    options without one say in their help what happens when they are left out."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (action.default not in (None, False, argparse.SUPPRESS) and action.option_strings
                and "%(default)" not in text):
            text += " (default: %(default)s)"
        return text


def _version() -> str:
    from . import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=PROG, formatter_class=_HelpFormatter,
        description="Shared-task scorers: CCKS 2019 IPRE relation-extraction F1 (ccks), "
                    "correlation of predicted with gold scores (corr), and Krippendorff's "
                    "alpha of an annotation table (alpha).",
        epilog="Exit status: 0 success, 2 bad usage or bad input (one line on stderr naming "
               "the file and line), 1 any other failure.")
    ap.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                    help="print the version and exit")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND",
                            title="commands")

    c = sub.add_parser(
        "ccks", help="CCKS 2019 IPRE relation-extraction F1", formatter_class=_HelpFormatter,
        description="Score PRED against GOLD (CCKS 2019 IPRE format, tab-separated UTF-8): "
                    "micro P/R/F1 over non-NA relations (id 0 is NA). A gold item missing "
                    "from PRED counts as predicted NA (with a warning giving the count); "
                    "a PRED item not in GOLD is an error.")
    c.add_argument("--track", choices=("sent", "bag"), required=True,
                   help="sentence track (sentID<TAB>relationIDs) or bag track "
                        "(bagID<TAB>e_h<TAB>e_t<TAB>sentIDs<TAB>relationIDs); required, "
                        "no default")
    c.add_argument("gold", metavar="GOLD", help="gold label file of the track")
    c.add_argument("pred", metavar="PRED",
                   help="system output: the gold format, or for the bag track also just "
                        "bagID<TAB>relationIDs")
    c.add_argument("--subset", metavar="IDS_FILE", default=None,
                   help="score only the item ids listed in this file, one per line (e.g. the "
                        "leaderboard's fixed half); default: every gold item")
    c.add_argument("--relations", metavar="RELATION2ID", default=None,
                   help="relation2id.txt (name<TAB>id): reject unknown relation ids, print "
                        "relation names, and list every relation in --per-relation; "
                        "default: ids 0..63 accepted")
    c.add_argument("--per-relation", action="store_true",
                   help="also print P/R/F1 and counts of every relation; default: totals only")

    r = sub.add_parser(
        "corr", help="correlation of predicted and gold scores", formatter_class=_HelpFormatter,
        description="GOLD and PRED are UTF-8 CSV files with a header. Both have a score "
                    "column (--label-column). If both have an 'id' column, rows are joined "
                    "by id (every gold id needs exactly one prediction); otherwise row k of "
                    "PRED belongs to row k of GOLD. Prints tab-separated group, n, statistic "
                    "and p-value rows, 'overall' last.")
    r.add_argument("gold", metavar="GOLD", help="CSV file with the gold scores")
    r.add_argument("pred", metavar="PRED", help="CSV file with the predicted scores")
    r.add_argument("--by", metavar="COLUMN", default=None,
                   help="GOLD column to group by (e.g. language): one row per group; "
                        "default: no groups")
    r.add_argument("--method", choices=METHODS, default="pearson",
                   help="correlation coefficient (kendall is tau-b)")
    r.add_argument("--label-column", default="label", metavar="NAME",
                   help="name of the score column in both files")
    r.add_argument("--ci", metavar="LEVEL", type=_ci_level, default=None,
                   help="also print a confidence interval at this level, e.g. 0.95, as two "
                        "columns named after --ci-method and the level (fisher95_low, "
                        "fisher95_high); default: no interval")
    r.add_argument("--ci-method", choices=("fisher", "bootstrap"), default="fisher",
                   help="interval of --ci: Fisher's z (Pearson: 1/(n-3); Spearman: "
                        "(1 + r^2/2)/(n-3), Bonett-Wright; Kendall: 0.437/(n-4), Fieller), "
                        "or a paired BCa bootstrap (metrics.bootstrap_ci)")
    r.add_argument("--n-resamples", type=int, default=9999, metavar="B",
                   help="resamples of --ci-method bootstrap")
    r.add_argument("--seed", type=int, default=0,
                   help="seed of --ci-method bootstrap (the same seed gives the same "
                        "interval)")

    k = sub.add_parser(
        "alpha", help="Krippendorff's alpha of an annotation table",
        formatter_class=_HelpFormatter,
        description="RATINGS is a UTF-8 CSV file with a header: one row per unit (item), "
                    "one column per rater; an empty cell (or NA, nan) is a missing value. "
                    "The id column, if present, is not a rater. Cells are numbers, or labels "
                    "for the nominal and ordinal levels. Prints units, raters, level and "
                    "alpha ('nan' with a warning when alpha is undefined).")
    k.add_argument("ratings", metavar="RATINGS", help="CSV file: units x raters")
    k.add_argument("--level", choices=agreement.LEVELS, default="interval",
                   help="level of measurement, which sets the difference metric")
    k.add_argument("--id-column", default="id", metavar="NAME",
                   help="column holding the unit ids, left out of the raters (ignored when "
                        "the header has no such column)")
    k.add_argument("--value-domain", metavar="V1,V2,...", default=None,
                   help="comma-separated possible values, in order: the order of the "
                        "ordinal scale (needed for ordinal labels); every cell must be one "
                        "of them; default: the values that occur, in sorted order")
    return ap


_build_parser = build_parser  # older name


def _ci_level(text: str) -> float:
    """--ci: a decimal number in (0, 1)."""
    v = parse_number(text)
    if v is None or not 0.0 < v < 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), e.g. 0.95; got {text!r}")
    return v


# A decimal number as people write it in a CSV file: optional sign, digits with
# an optional fraction (or a fraction alone), optional exponent.  Python's
# float() also takes "1_0" (= 10), "inf", "nan" and surrounding whitespace.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NON_FINITE = frozenset({"inf", "+inf", "-inf", "infinity", "+infinity", "-infinity", "nan",
                         "+nan", "-nan"})


def parse_number(text: str) -> float | None:
    """The value of a decimal number (surrounding spaces allowed), or None.

    Strict: ``1_0``, ``0x10``, ``inf`` and ``nan`` are not numbers here
    (``float`` accepts them).  A number too large for float64 gives inf.
    """
    t = text.strip()
    return float(t) if _NUMBER.fullmatch(t) else None


def _read_text(path) -> str:
    """A whole UTF-8 text file (BOM stripped); bad bytes are a ValueError
    naming the file and line."""
    name = os.fspath(path)
    with open(path, "rb") as fh:
        data = fh.read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return relation.decode_utf8(data, name)


# ----------------------------------------------------------------- ccks


def _read_subset(path) -> list[str]:
    ids = []
    seen = set()
    for no, line in enumerate(_read_text(path).split("\n"), 1):
        item = line.strip()
        if not item:
            continue
        if "\t" in item:
            item = item.split("\t", 1)[0].strip()
        if item in seen:
            raise InputError(f"{path}:{no}: duplicate id {item!r}")
        seen.add(item)
        ids.append(item)
    return ids


def _run_ccks(args, out, err) -> int:
    rel_names = None
    relations = None
    if args.relations:
        relations = relation.read_relation_ids(args.relations)
        rel_names = {v: k for k, v in relations.items()}
    if args.track == "sent":
        gold = relation.read_sent_relations(args.gold, relations)
    else:
        gold = relation.read_bag_relations(args.gold, relations)
    pred = relation.read_relation_predictions(args.pred, args.track, relations)
    subset = _read_subset(args.subset) if args.subset else None
    res = relation.relation_f1(gold, pred, subset=subset, relations=relations)
    if res.n_missing:
        print(f"{PROG} ccks: warning: {args.pred} has no prediction for {res.n_missing} of "
              f"{res.n_items} scored gold items (counted as predicted NA)", file=err)
    print(f"items      {res.n_items}", file=out)
    print(f"n_sys      {res.n_sys}", file=out)
    print(f"n_r        {res.n_r}", file=out)
    print(f"n_std      {res.n_std}", file=out)
    print(f"precision  {res.precision:.6f}", file=out)
    print(f"recall     {res.recall:.6f}", file=out)
    print(f"f1         {res.f1:.6f}", file=out)
    if args.per_relation:
        print("relation\tn_sys\tn_r\tn_std\tprecision\trecall\tf1", file=out)
        for rid, s in sorted(res.per_relation.items()):
            name = rel_names.get(rid, str(rid)) if rel_names else str(rid)
            print(f"{name}\t{s.n_sys}\t{s.n_r}\t{s.n_std}\t{s.precision:.6f}\t"
                  f"{s.recall:.6f}\t{s.f1:.6f}", file=out)
    return 0


# ----------------------------------------------------------------- corr


def _read_csv(path, label_col, extra_cols=()):
    with io.StringIO(_read_text(path), newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise InputError(f"{path}:1: empty file (expected a header line)") from None
        header = [h.strip() for h in header]
        for col in (label_col, *extra_cols):
            if col not in header:
                raise InputError(f"{path}:1: no column {col!r} in header {header}")
        has_id = "id" in header
        li = header.index(label_col)
        ii = header.index("id") if has_id else None
        xi = [header.index(c) for c in extra_cols]
        ids, labels, extra, lines = [], [], [], []
        for row in reader:
            no = reader.line_num
            if not row or all(not f.strip() for f in row):
                continue
            if len(row) != len(header):
                raise InputError(
                    f"{path}:{no}: expected {len(header)} fields, found {len(row)}")
            v = parse_number(row[li])
            if v is None and row[li].strip().lower() in _NON_FINITE:
                v = math.nan
            if v is None:
                raise InputError(f"{path}:{no}: {label_col} {row[li]!r} is not a number")
            if math.isnan(v) or math.isinf(v):
                raise InputError(f"{path}:{no}: {label_col} must be finite, got {row[li]!r}")
            labels.append(v)
            lines.append(no)
            if has_id:
                ids.append(row[ii].strip())
            extra.append(tuple(row[i] for i in xi))
    if not labels:
        raise InputError(f"{path}: no data rows")
    return (ids if has_id else None), labels, extra, lines


def _run_corr(args, out, err) -> int:
    extra = (args.by,) if args.by else ()
    gids, gold, gextra, glines = _read_csv(args.gold, args.label_column, extra)
    pids, pred, _, plines = _read_csv(args.pred, args.label_column)
    if (gids is None) != (pids is None):
        raise InputError(f"{args.gold if gids is None else args.pred}:1: both files need an "
                         "'id' column to join by id, or neither (join by row order)")
    if gids is None:
        if len(gold) != len(pred):
            raise InputError(f"{args.pred}: {len(pred)} data rows, but {args.gold} has "
                             f"{len(gold)} (rows are matched by position)")
        y = pred
    else:
        first = {}
        for k, (i, no) in enumerate(zip(gids, glines)):
            if i in first:
                raise InputError(f"{args.gold}:{no}: duplicate id {i!r}")
            first[i] = k
        y = [math.nan] * len(gold)
        seen = {}
        for i, v, no in zip(pids, pred, plines):
            k = first.get(i)
            if k is None:
                raise InputError(f"{args.pred}:{no}: id {i!r} is not in {args.gold}")
            if i in seen:
                raise InputError(f"{args.pred}:{no}: duplicate id {i!r}")
            seen[i] = no
            y[k] = v
        missing = [i for i in gids if i not in seen]
        if missing:
            k = first[missing[0]]
            raise InputError(f"{args.gold}:{glines[k]}: no prediction for id {missing[0]!r} "
                             f"({len(missing)} missing)")
    x = gold
    if len(x) < 2:
        raise InputError(f"{args.gold}: {len(x)} data row; a correlation needs at least 2")
    ci = args.ci
    if ci is not None and args.ci_method == "bootstrap" and args.n_resamples < 1:
        raise InputError(f"--n-resamples must be >= 1, got {args.n_resamples}")
    # the package's public names (they stay importable from ``metrics``
    # whichever module implements them), imported here: scipy is for corr only
    from . import grouped, kendall, pearson, spearman

    funcs = {"pearson": pearson, "spearman": spearman, "kendall": kendall}
    rows = []
    # the statistics' warnings (constant input, too few rows, a degenerate
    # bootstrap) become one line each on stderr, after the table
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        if args.by:
            groups = [e[0] for e in gextra]
            res = grouped(x, y, groups, method=args.method)
            where: dict = {}
            for i, g in enumerate(groups):
                where.setdefault(g, []).append(i)
            for label, r in res.groups.items():
                rows.append((label, r, where[label]))
            rows.append(("overall", res.overall, None))
        else:
            rows.append(("overall", funcs[args.method](x, y), None))
        lines = [_corr_line(args, label, r, x, y, idx) for label, r, idx in rows]
    header = f"group\tn\t{args.method}\tpvalue"
    if ci is not None:
        name = f"{args.ci_method}{ci * 100:g}"
        header += f"\t{name}_low\t{name}_high"
    # every number is known before anything is printed: an error leaves no output
    print(header, file=out)
    for line in lines:
        print(line, file=out)
    notes = []
    for w in caught:
        if not issubclass(w.category, RuntimeWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            continue
        note = str(w.message).splitlines()[0] if str(w.message) else type(w.message).__name__
        if note not in notes:
            notes.append(note)
    for note in notes:
        print(f"{PROG} corr: warning: {note}", file=err)
    return 0


def _corr_line(args, label, r, x, y, idx) -> str:
    line = f"{label}\t{r.n}\t{r.statistic:.6f}\t{r.pvalue:.6g}"
    if args.ci is None:
        return line
    if math.isnan(r.statistic):
        lo = hi = math.nan
    elif args.ci_method == "fisher":
        lo, hi = r.confidence_interval(args.ci)
    else:
        from .bootstrap import bootstrap_ci

        xs, ys = (x, y) if idx is None else ([x[i] for i in idx], [y[i] for i in idx])
        lo, hi = bootstrap_ci(xs, ys, method=args.method, n_resamples=args.n_resamples,
                              confidence_level=args.ci, seed=args.seed).confidence_interval
    return f"{line}\t{lo:.6f}\t{hi:.6f}"


# ----------------------------------------------------------------- alpha

_MISSING_CELLS = frozenset({"", "na", "nan", "n/a"})


def _read_ratings(path, id_column):
    """(raters x units nested list of str or None, rater names, line of every
    unit) from a units x raters CSV file."""
    with io.StringIO(_read_text(path), newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise InputError(f"{path}:1: empty file (expected a header line)") from None
        keep = [i for i, h in enumerate(header) if h != id_column]
        if not keep:
            raise InputError(f"{path}:1: no rater columns in header {header}")
        rows, lines = [], []
        for row in reader:
            no = reader.line_num
            if not row or all(not f.strip() for f in row):
                continue
            if len(row) != len(header):
                raise InputError(f"{path}:{no}: expected {len(header)} fields, found {len(row)}")
            rows.append([None if row[i].strip().lower() in _MISSING_CELLS else row[i].strip()
                         for i in keep])
            lines.append(no)
    if not rows:
        raise InputError(f"{path}: no data rows")
    return [list(col) for col in zip(*rows)], [header[i] for i in keep], lines


def _first_non_number(cells):
    """(unit index, cell) of the first cell that is not a finite number, or None."""
    for u, unit in enumerate(zip(*cells)):
        for v in unit:
            if v is None:
                continue
            number = parse_number(v)
            if number is not None and math.isfinite(number):
                continue
            return u, v
    return None


def _run_alpha(args, out, err) -> int:
    import warnings

    cells, raters, lines = _read_ratings(args.ratings, args.id_column)
    bad = _first_non_number(cells)
    if bad is not None and (args.level in ("interval", "ratio")
                            or bad[1].lower() in ("inf", "-inf", "+inf", "infinity")):
        u, v = bad
        raise InputError(f"{args.ratings}:{lines[u]}: {v!r} is not a finite number (the "
                         f"{args.level} level needs numbers)")
    data = cells
    domain = None
    if args.value_domain is not None:
        domain = [v.strip() for v in args.value_domain.split(",")]
    if bad is None:
        data = [[math.nan if v is None else parse_number(v) for v in row] for row in cells]
        if domain is not None:
            domain = [parse_number(v) for v in domain]
            if any(v is None for v in domain):
                raise InputError(f"--value-domain: {args.value_domain!r} is not a list of "
                                 "numbers, but the ratings are numbers")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        value = agreement.krippendorff_alpha(data, level=args.level, value_domain=domain)
    for w in caught:
        print(f"{PROG} alpha: warning: {w.message}", file=err)
    print(f"units      {len(cells[0])}", file=out)
    print(f"raters     {len(raters)}", file=out)
    print(f"level      {args.level}", file=out)
    print(f"alpha      {value:.6f}", file=out)
    return 0


def main(argv=None, out=None, err=None) -> int:
    """Run the command line; returns the exit status (argparse exits by itself
    with 0 for --help/--version and 2 for bad usage)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        if args.command == "ccks":
            return _run_ccks(args, out, err)
        if args.command == "alpha":
            return _run_alpha(args, out, err)
        return _run_corr(args, out, err)
    except (InputError, ValueError, UnicodeDecodeError, OSError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, OSError) and getattr(exc, "filename", None):
            msg = f"{exc.filename}: {exc.strerror}"
        print(f"{PROG} {args.command}: error: {msg}", file=err)
        return 2
    except Exception as exc:  # noqa: BLE001 - report, don't dump a traceback
        print(f"{PROG} {args.command}: failed: {type(exc).__name__}: {exc}", file=err)
        return 1
