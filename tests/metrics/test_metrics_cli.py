"""python -m metrics ccks / corr (metrics.cli)."""

from __future__ import annotations

import argparse
import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.stats as ss

import metrics as metrics_pkg
from metrics.__main__ import main

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("OVERLAP_METRICS_DATA", REPO.parent / "shared" / "data"))


def _env():
    """The environment for ``python -m metrics`` in a subprocess: the metrics
    package this session imported (installed, or built in place) first on the path."""
    import metrics

    root = str(Path(metrics.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return env


def run(argv):
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


def _kv(text):
    return dict(line.split(None, 1) for line in text.strip().splitlines()[:7])


def test_ccks_sent(tmp_path, capsys):
    gold = tmp_path / "gold.txt"
    pred = tmp_path / "pred.txt"
    gold.write_text("S1\t0\nS2\t3\nS3\t3 5\nS4\t7\n", encoding="utf-8")
    pred.write_text("S1\t2\nS2\t3\nS3\t5 9 0\n", encoding="utf-8")
    code, out = run(["ccks", "--track", "sent", str(gold), str(pred)])
    assert code == 0
    kv = _kv(out)
    assert kv["n_sys"] == "4" and kv["n_r"] == "2" and kv["n_std"] == "4"
    assert float(kv["f1"]) == 0.5
    subset = tmp_path / "half.txt"
    subset.write_text("S2\nS4\n\n", encoding="utf-8")
    code, out = run(["ccks", "--track", "sent", str(gold), str(pred), "--subset", str(subset),
                     "--per-relation"])
    assert code == 0 and _kv(out)["n_std"] == "2" and "relation\tn_sys" in out


def test_ccks_bag_two_column_predictions(tmp_path):
    gold = tmp_path / "bag.txt"
    gold.write_text("B1\tA\tB\tS1 S2\t4\nB2\tC\tD\tS3\t0\n", encoding="utf-8")
    pred = tmp_path / "pred.txt"
    pred.write_text("B1\t4\nB2\t1\n", encoding="utf-8")
    code, out = run(["ccks", "--track", "bag", str(gold), str(pred)])
    assert code == 0 and _kv(out)["n_r"] == "1" and _kv(out)["n_sys"] == "2"


def test_ccks_errors_exit_2_with_file_and_line(tmp_path, capsys):
    gold = tmp_path / "gold.txt"
    gold.write_text("S1\t0\nS2\t3\n", encoding="utf-8")
    pred = tmp_path / "pred.txt"
    pred.write_text("S1\t0\nS2\tthree\n", encoding="utf-8")
    code, _ = run(["ccks", "--track", "sent", str(gold), str(pred)])
    err = capsys.readouterr().err
    assert code == 2 and f"{pred}:2:" in err and len(err.strip().splitlines()) == 1
    pred.write_text("S9\t1\n", encoding="utf-8")
    code, _ = run(["ccks", "--track", "sent", str(gold), str(pred)])
    assert code == 2 and f"{pred}:1:" in capsys.readouterr().err
    code, _ = run(["ccks", "--track", "sent", str(gold), str(tmp_path / "missing.txt")])
    assert code == 2 and "missing.txt" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["ccks", "--track", "doc", str(gold), str(gold)])
    assert exc.value.code == 2


def _write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def test_corr_by_id_and_group(tmp_path):
    rng = np.random.default_rng(3)
    n = 60
    g = rng.normal(size=n)
    p = g + rng.normal(size=n)
    lang = np.array(["en", "fr", "zh"])[np.arange(n) % 3]
    ids = [f"t{i}" for i in range(n)]
    _write_csv(tmp_path / "gold.csv", ["id", "label", "language"],
               zip(ids, g, lang))
    order = rng.permutation(n)
    _write_csv(tmp_path / "pred.csv", ["id", "label"],
               [(ids[i], repr(float(p[i]))) for i in order])
    code, out = run(["corr", str(tmp_path / "gold.csv"), str(tmp_path / "pred.csv"),
                     "--by", "language"])
    assert code == 0
    rows = {r.split("\t")[0]: r.split("\t") for r in out.strip().splitlines()[1:]}
    for label in ("en", "fr", "zh"):
        m = lang == label
        assert float(rows[label][2]) == pytest.approx(ss.pearsonr(g[m], p[m])[0], abs=1e-6)
    assert float(rows["overall"][2]) == pytest.approx(ss.pearsonr(g, p)[0], abs=1e-6)
    code, out = run(["corr", str(tmp_path / "gold.csv"), str(tmp_path / "pred.csv"),
                     "--method", "kendall"])
    assert float(out.strip().splitlines()[-1].split("\t")[2]) == pytest.approx(
        ss.kendalltau(g, p)[0], abs=1e-6)


def test_corr_errors(tmp_path, capsys):
    _write_csv(tmp_path / "gold.csv", ["id", "label"], [("a", 1), ("b", 2), ("c", 3)])
    _write_csv(tmp_path / "pred.csv", ["id", "label"], [("a", 1), ("b", "high"), ("c", 3)])
    code, _ = run(["corr", str(tmp_path / "gold.csv"), str(tmp_path / "pred.csv")])
    assert code == 2 and "pred.csv:3:" in capsys.readouterr().err
    _write_csv(tmp_path / "pred.csv", ["id", "label"], [("a", 1), ("b", 2)])
    code, _ = run(["corr", str(tmp_path / "gold.csv"), str(tmp_path / "pred.csv")])
    assert code == 2 and "gold.csv:4: no prediction for id 'c'" in capsys.readouterr().err
    _write_csv(tmp_path / "pred.csv", ["label"], [(1,), (2,), (3,)])
    code, _ = run(["corr", str(tmp_path / "gold.csv"), str(tmp_path / "pred.csv")])
    assert code == 2 and "'id' column" in capsys.readouterr().err
    code, _ = run(["corr", str(tmp_path / "gold.csv"), str(tmp_path / "gold.csv"),
                   "--by", "language"])
    assert code == 2 and "no column 'language'" in capsys.readouterr().err


def test_module_entry_point_runs(tmp_path):
    gold = tmp_path / "g.txt"
    gold.write_text("S1\t1\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "metrics", "ccks", "--track", "sent",
                           str(gold), str(gold)], capture_output=True, text=True, cwd=tmp_path,
                          env=_env())
    assert proc.returncode == 0 and "f1         1.000000" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "metrics"], capture_output=True, text=True,
                          cwd=tmp_path, env=_env())
    assert proc.returncode == 2


def test_version_and_help_describe_every_argument(capsys):
    import metrics
    from metrics.cli import build_parser

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"python -m metrics {metrics.__version__}"
    ap = build_parser()
    subs = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subs.choices) == {"ccks", "corr", "alpha"}
    for name, parser in [("top", ap), *subs.choices.items()]:
        assert parser.description, name
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help and len(action.help) > 10, (name, action.dest)
            if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
                if action.dest not in ("help", "version"):
                    assert f"(default: {action.default})" in parser.format_help().replace(
                        "\n                        ", " "), (name, action.dest)
        if name != "top":
            text = parser.format_help()
            assert "(default: None)" not in text and "(default: False)" not in text


@pytest.mark.parametrize("which", ["gold", "pred", "subset", "relations"])
def test_ccks_non_utf8_input_is_one_line_error_with_file_and_line(tmp_path, capsys, which):
    files = {
        "gold": "S1\t0\nS2\t3\n",
        "pred": "S1\t0\nS2\t3\n",
        "subset": "S1\nS2\n",
        "relations": "NA\t0\nr\t3\n",
    }
    paths = {}
    for k, text in files.items():
        data = text.encode("utf-8")
        if k == which:  # a Latin-1 byte on line 2
            data = data.replace(b"S2" if k != "relations" else b"r\t", b"S\xe92"
                                if k != "relations" else b"r\xe9\t")
        paths[k] = tmp_path / f"{k}.txt"
        paths[k].write_bytes(data)
    code, _ = run(["ccks", "--track", "sent", str(paths["gold"]), str(paths["pred"]),
                   "--subset", str(paths["subset"]), "--relations", str(paths["relations"])])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1
    assert f"{paths[which]}:2:" in err and "UTF-8" in err
    assert "Traceback" not in err and "codec" not in err


@pytest.mark.parametrize("which", ["gold", "pred"])
def test_corr_non_utf8_input_is_one_line_error(tmp_path, capsys, which):
    good = "id,label\na,1\nb,2\nc,4\n".encode("utf-8")
    bad = good.replace(b"b,2", b"b\xff,2")
    (tmp_path / "gold.csv").write_bytes(bad if which == "gold" else good)
    (tmp_path / "pred.csv").write_bytes(bad if which == "pred" else good)
    code, _ = run(["corr", str(tmp_path / "gold.csv"), str(tmp_path / "pred.csv")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == (f"python -m metrics corr: error: {tmp_path / (which + '.csv')}:3: "
                           "not valid UTF-8 (byte 0xff at byte 2 of the line)")


def test_non_utf8_through_the_real_entry_point(tmp_path):
    gold = tmp_path / "g.csv"
    gold.write_bytes(b"label\n1\n\xe9\n")
    proc = subprocess.run([sys.executable, "-m", "metrics", "corr", str(gold), str(gold)],
                          capture_output=True, text=True, cwd=tmp_path, env=_env())
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith(f"{gold}:3: not valid UTF-8 (byte 0xe9 at byte 1 of "
                                        "the line)")


def test_ccks_warns_about_gold_items_without_prediction(tmp_path, capsys):
    gold = tmp_path / "gold.txt"
    gold.write_text("S1\t0\nS2\t3\nS3\t5\nS4\t7\n", encoding="utf-8")
    pred = tmp_path / "pred.txt"
    pred.write_text("S2\t3\n", encoding="utf-8")
    code, out = run(["ccks", "--track", "sent", str(gold), str(pred)])
    err = capsys.readouterr().err
    assert code == 0 and _kv(out)["n_std"] == "3"
    assert err.strip() == (f"python -m metrics ccks: warning: {pred} has no prediction for 3 "
                           "of 4 scored gold items (counted as predicted NA)")
    subset = tmp_path / "half.txt"
    subset.write_text("S2\nS3\n", encoding="utf-8")
    run(["ccks", "--track", "sent", str(gold), str(pred), "--subset", str(subset)])
    assert "for 1 of 2 scored gold items" in capsys.readouterr().err
    run(["ccks", "--track", "sent", str(gold), str(gold)])
    assert capsys.readouterr().err == ""


def test_ccks_per_relation_lists_every_relation_of_relation2id(tmp_path, capsys):
    gold = tmp_path / "gold.txt"
    gold.write_text("S1\t0\nS2\t3\nS3\t1\n", encoding="utf-8")
    rel = tmp_path / "relation2id.txt"
    rel.write_text("NA\t0\nparent\t1\nfriend\t2\nspouse\t3\n", encoding="utf-8")
    code, out = run(["ccks", "--track", "sent", str(gold), str(gold), "--relations", str(rel),
                     "--per-relation"])
    assert code == 0
    rows = out.strip().splitlines()
    table = rows[rows.index("relation\tn_sys\tn_r\tn_std\tprecision\trecall\tf1") + 1:]
    assert [r.split("\t")[0] for r in table] == ["parent", "friend", "spouse"]
    assert table[1].split("\t")[1:4] == ["0", "0", "0"]


# Krippendorff (2011): 4 observers x 12 units, one row per unit
K2011_CSV = """unit,A,B,C,D
1,1,1,,1
2,2,2,3,2
3,3,3,3,3
4,3,3,3,3
5,2,2,2,2
6,1,2,3,4
7,4,4,4,4
8,1,1,2,1
9,2,2,2,2
10,,5,5,5
11,,,1,1
12,,3,,
"""


@pytest.mark.parametrize("level,published", [("nominal", 0.743), ("ordinal", 0.815),
                                              ("interval", 0.849), ("ratio", 0.797)])
def test_alpha_command_on_the_published_example(tmp_path, level, published):
    import metrics

    path = tmp_path / "k2011.csv"
    path.write_text(K2011_CSV, encoding="utf-8")
    code, out = run(["alpha", str(path), "--level", level, "--id-column", "unit"])
    assert code == 0
    kv = dict(line.split(None, 1) for line in out.strip().splitlines())
    assert kv["units"] == "12" and kv["raters"] == "4" and kv["level"] == level
    assert round(float(kv["alpha"]), 3) == published
    rows = [r.split(",")[1:] for r in K2011_CSV.strip().splitlines()[1:]]
    m = np.array([[float(v) if v else np.nan for v in row] for row in rows]).T
    assert kv["alpha"] == f"{metrics.krippendorff_alpha(m, level=level):.6f}"


def test_alpha_command_labels_domain_and_errors(tmp_path, capsys):
    names = {"1": "very low", "2": "low", "3": "mid", "4": "high", "5": "very high"}
    lines = K2011_CSV.strip().splitlines()
    body = [",".join([r.split(",")[0]] + [names.get(v, v) for v in r.split(",")[1:]])
            for r in lines[1:]]
    labels = tmp_path / "labels.csv"
    labels.write_text("\n".join(["id,A,B,C,D", *body]) + "\n", encoding="utf-8")
    domain = "very low,low,mid,high,very high"
    code, out = run(["alpha", str(labels), "--level", "ordinal", "--value-domain", domain])
    assert code == 0 and out.strip().endswith("alpha      0.815388")
    code, _ = run(["alpha", str(labels), "--level", "ordinal"])
    assert code == 2 and "needs value_domain" in capsys.readouterr().err
    code, _ = run(["alpha", str(labels), "--level", "interval"])
    assert capsys.readouterr().err.strip() == (
        f"python -m metrics alpha: error: {labels}:2: 'very low' is not a finite number "
        "(the interval level needs numbers)")
    assert code == 2
    numeric = tmp_path / "k.csv"
    numeric.write_text(K2011_CSV, encoding="utf-8")
    code, _ = run(["alpha", str(numeric), "--id-column", "unit", "--value-domain", "a,b"])
    assert code == 2 and "--value-domain" in capsys.readouterr().err
    code, _ = run(["alpha", str(numeric), "--id-column", "unit", "--value-domain", "1,2,3"])
    assert code == 2 and "4.0, which is not in value_domain" in capsys.readouterr().err
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("A,B\n1,2\n3\n", encoding="utf-8")
    code, _ = run(["alpha", str(ragged)])
    assert code == 2 and f"{ragged}:3: expected 2 fields, found 1" in capsys.readouterr().err
    same = tmp_path / "same.csv"
    same.write_text("A,B\n3,3\n3,NA\n", encoding="utf-8")
    code, out = run(["alpha", str(same)])
    err = capsys.readouterr().err
    assert code == 0 and out.strip().endswith("alpha      nan")
    assert err.strip() == ("python -m metrics alpha: warning: Krippendorff's alpha is "
                           "undefined: all pairable values are equal")


@pytest.mark.skipif(not (DATA / "mint" / "train.csv").exists(),
                    reason=f"MINT data not found at {DATA / 'mint'} (set OVERLAP_METRICS_DATA)")
def test_corr_on_mint_positional(tmp_path):
    with open(DATA / "mint" / "train.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    gold = np.array([float(r["label"]) for r in rows])
    lang = np.array([r["language"] for r in rows])
    pred = gold + np.random.default_rng(0).normal(0, 0.5, gold.size)
    _write_csv(tmp_path / "pred.csv", ["label"], [(repr(float(v)),) for v in pred])
    code, out = run(["corr", str(DATA / "mint" / "train.csv"), str(tmp_path / "pred.csv"),
                     "--by", "language"])
    assert code == 0
    rows_out = {r.split("\t")[0]: r.split("\t") for r in out.strip().splitlines()[1:]}
    assert set(rows_out) == set(lang) | {"overall"}
    m = lang == "English"
    assert float(rows_out["English"][2]) == pytest.approx(ss.pearsonr(gold[m], pred[m])[0],
                                                          abs=1e-6)


def test_metrics_version_is_the_distributions():
    # the version is written once, as overlap.__version__; pyproject.toml reads
    # it ([tool.setuptools.dynamic]) and metrics.__version__ is the same string
    import re

    import metrics
    import overlap

    root = Path(__file__).resolve().parents[2]
    text = (root / "pyproject.toml").read_text()
    assert not re.search(r'^version\s*=\s*"', text, re.M), "a second, static version"
    assert re.search(r'^dynamic\s*=\s*\[[^]]*"version"', text, re.M)
    assert re.search(r'^version\s*=\s*\{\s*attr\s*=\s*"overlap.__version__"\s*\}', text,
                     re.M)
    written = re.findall(r'^__version__\s*=\s*"([^"]+)"',
                         (root / "overlap" / "__init__.py").read_text(), re.M)
    assert written == [overlap.__version__]
    assert metrics.__version__ == overlap.__version__ == "0.2.0.dev0"
    assert "__version__ = \"" not in (root / "metrics" / "__init__.py").read_text()


def test_both_command_lines_print_the_same_version(tmp_path):
    import overlap

    outs = [subprocess.run([sys.executable, "-m", pkg, "--version"], capture_output=True,
                           text=True, cwd=tmp_path, env=_env()) for pkg in ("overlap", "metrics")]
    assert [p.returncode for p in outs] == [0, 0]
    assert [p.stdout.split()[-1] for p in outs] == [overlap.__version__] * 2


# ------------------------------------------------------------ issue 31

def _scores(path, values, header="label"):
    path.write_text(header + "\n" + "".join(f"{v}\n" for v in values), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("cell", ["1_0", "0x10", "1e", "--1", "1.2.3", "½"])
def test_corr_parses_numbers_strictly(tmp_path, capsys, cell):
    gold = _scores(tmp_path / "gold.csv", [1, 2, 3, 4])
    pred = _scores(tmp_path / "pred.csv", [1, cell, 3, 5])
    code, out = run(["corr", gold, pred])
    assert code == 2 and out == ""
    assert capsys.readouterr().err.strip() == (
        f"python -m metrics corr: error: {pred}:3: label {cell!r} is not a number")


def test_corr_accepts_ordinary_decimal_notation(tmp_path):
    gold = _scores(tmp_path / "gold.csv", [1, 2, 3, 4, 5, 6])
    pred = _scores(tmp_path / "pred.csv", ["+1", " 2.0 ", ".5e1", "4.", "-3e-1", "6E0"])
    code, out = run(["corr", gold, pred])
    assert code == 0
    r = ss.pearsonr([1, 2, 3, 4, 5, 6], [1, 2, 5, 4, -0.3, 6]).statistic
    assert float(out.splitlines()[1].split("\t")[2]) == pytest.approx(r, abs=1e-6)


def test_alpha_parses_numbers_strictly(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("id,a,b\nu1,1,1_0\nu2,2,2\n", encoding="utf-8")
    code, _ = run(["alpha", str(path)])
    assert code == 2
    assert "r.csv:2: '1_0' is not a finite number" in capsys.readouterr().err


def test_corr_constant_predictions_give_a_one_line_note(tmp_path):
    gold = _scores(tmp_path / "gold.csv", [1, 2, 3, 4, 5])
    pred = _scores(tmp_path / "pred.csv", [3, 3, 3, 3, 3])
    proc = subprocess.run([sys.executable, "-m", "metrics", "corr", gold, pred],
                          capture_output=True, text=True, cwd=tmp_path, env=_env())
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == ["group\tn\tpearson\tpvalue", "overall\t5\tnan\tnan"]
    assert proc.stderr.splitlines() == [
        "python -m metrics corr: warning: An input array is constant; the correlation "
        "coefficient is not defined."]


def test_corr_one_row_is_an_error_before_any_output(tmp_path):
    gold = _scores(tmp_path / "gold.csv", [1])
    proc = subprocess.run([sys.executable, "-m", "metrics", "corr", gold, gold],
                          capture_output=True, text=True, cwd=tmp_path, env=_env())
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip() == (f"python -m metrics corr: error: {gold}: 1 data row; a "
                                   "correlation needs at least 2")


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_corr_confidence_interval_columns(tmp_path, method):
    rng = np.random.default_rng(8)
    g = rng.normal(size=90)
    p = g + rng.normal(size=90)
    lang = np.array(["en", "fr"])[np.arange(90) % 2]
    _write_csv(tmp_path / "gold.csv", ["label", "language"], zip(g, lang))
    _write_csv(tmp_path / "pred.csv", ["label"], [(repr(float(v)),) for v in p])
    args = ["corr", str(tmp_path / "gold.csv"), str(tmp_path / "pred.csv"), "--method", method,
            "--by", "language"]
    code, out = run(args + ["--ci", "0.9"])
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"group\tn\t{method}\tpvalue\tfisher90_low\tfisher90_high"
    func = {"pearson": metrics_pkg.pearson, "spearman": metrics_pkg.spearman,
            "kendall": metrics_pkg.kendall}[method]
    for line in lines[1:]:
        label, _, _, _, lo, hi = line.split("\t")
        m = slice(None) if label == "overall" else lang == label
        ref = func(g[m], p[m]).confidence_interval(0.9)
        assert (float(lo), float(hi)) == pytest.approx(tuple(ref), abs=1e-6)
    code, out = run(args + ["--ci", "0.95", "--ci-method", "bootstrap", "--n-resamples",
                            "300", "--seed", "4"])
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"group\tn\t{method}\tpvalue\tbootstrap95_low\tbootstrap95_high"
    label, _, _, _, lo, hi = lines[-1].split("\t")
    ref = metrics_pkg.bootstrap_ci(g, p, method=method, n_resamples=300, seed=4)
    assert (float(lo), float(hi)) == pytest.approx(tuple(ref.confidence_interval), abs=1e-6)


def test_corr_ci_level_is_checked(tmp_path, capsys):
    gold = _scores(tmp_path / "gold.csv", [1, 2, 3, 4])
    for bad in ("1.5", "0", "1_0", "x"):
        with pytest.raises(SystemExit) as exc:
            run(["corr", gold, gold, "--ci", bad])
        assert exc.value.code == 2
        assert "--ci: must be a number in (0, 1)" in capsys.readouterr().err


def test_the_relation_scorer_loads_no_scipy(tmp_path):
    # ``import metrics`` loads its names on first use, and the relation scorer
    # needs numpy only: scipy.stats and scipy.special (half a second) are
    # loaded by the correlation functions, which are scipy's own then
    code = (
        "import sys, warnings\n"
        "import metrics\n"
        "from metrics.cli import build_parser\n"
        "build_parser()\n"
        "metrics.relation_f1, metrics.read_sent_relations, metrics.krippendorff_alpha\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n"
        "import scipy.stats\n"
        "x, y = [1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 5.0]\n"
        "assert metrics.pearson(x, y).statistic == scipy.stats.pearsonr(x, y).statistic\n"
        "assert metrics.correlation.ConstantInputWarning is scipy.stats.ConstantInputWarning\n"
        "assert metrics.grouped.__name__ == 'grouped'\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=tmp_path, env=_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[]", "ok"], r.stdout
