"""Command line: ``python -m metrics {ccks,corr} ...``.

Exit status: 0 success, 2 bad usage or bad input (one-line error on stderr
naming the file and line), 1 any other failure.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys

from . import correlation, relation

METHODS = ("pearson", "spearman", "kendall")


class InputError(ValueError):
    """Bad input file: reported on one line, exit status 2."""


def _build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m metrics",
                                 description="Shared-task scorers.")
    sub = ap.add_subparsers(dest="command", required=True)

    c = sub.add_parser("ccks", help="CCKS 2019 IPRE relation-extraction F1",
                       description="Score PRED against GOLD (CCKS 2019 IPRE format). "
                                   "Bag-track predictions may have all 5 gold columns "
                                   "or just bagID<TAB>relationIDs.")
    c.add_argument("--track", choices=("sent", "bag"), required=True)
    c.add_argument("gold")
    c.add_argument("pred")
    c.add_argument("--subset", metavar="IDS_FILE",
                   help="score only the item ids listed in this file (one per line)")
    c.add_argument("--relations", metavar="RELATION2ID",
                   help="relation2id.txt: reject unknown relation ids, name relations")
    c.add_argument("--per-relation", action="store_true",
                   help="also print P/R/F1 of every relation")

    r = sub.add_parser("corr", help="correlation of predicted and gold scores",
                       description="GOLD and PRED are CSV files with a header. Both have a "
                                   "'label' column (numbers). If both have an 'id' column, "
                                   "rows are joined by id (every gold id needs exactly one "
                                   "prediction); otherwise row k of PRED belongs to row k "
                                   "of GOLD. --by names a GOLD column to group by (e.g. "
                                   "language).")
    r.add_argument("gold")
    r.add_argument("pred")
    r.add_argument("--by", metavar="COLUMN", help="GOLD column to group by")
    r.add_argument("--method", choices=METHODS, default="pearson")
    r.add_argument("--label-column", default="label", metavar="NAME",
                   help="name of the score column in both files (default: label)")
    return ap


# ----------------------------------------------------------------- ccks


def _read_subset(path) -> list[str]:
    ids = []
    seen = set()
    with open(path, encoding="utf-8-sig", newline="") as fh:
        for no, line in enumerate(fh, 1):
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


def _run_ccks(args, out) -> int:
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
    res = relation.relation_f1(gold, pred, subset=subset)
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
    with open(path, encoding="utf-8-sig", newline="") as fh:
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
            try:
                v = float(row[li])
            except ValueError:
                raise InputError(f"{path}:{no}: {label_col} {row[li]!r} is not a number") from None
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


def _run_corr(args, out) -> int:
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
    print(f"group\tn\t{args.method}\tpvalue", file=out)
    if args.by:
        groups = [e[0] for e in gextra]
        res = correlation.grouped(x, y, groups, method=args.method)
        for label, r in res.groups.items():
            print(f"{label}\t{r.n}\t{r.statistic:.6f}\t{r.pvalue:.6g}", file=out)
        r = res.overall
    else:
        r = getattr(correlation, args.method)(x, y)
    print(f"overall\t{r.n}\t{r.statistic:.6f}\t{r.pvalue:.6g}", file=out)
    return 0


def main(argv=None, out=None) -> int:
    out = sys.stdout if out is None else out
    ap = _build_parser()
    args = ap.parse_args(argv)  # exits with status 2 on bad usage
    try:
        if args.command == "ccks":
            return _run_ccks(args, out)
        return _run_corr(args, out)
    except (InputError, ValueError, UnicodeDecodeError, OSError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, OSError) and getattr(exc, "filename", None):
            msg = f"{exc.filename}: {exc.strerror}"
        print(f"python -m metrics {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - report, don't dump a traceback
        print(f"python -m metrics {args.command}: failed: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
