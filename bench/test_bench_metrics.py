"""Benchmarks of the metrics package against the usual peers.

Run: ``python -m pytest bench/test_bench_metrics.py --benchmark-only``
(peers: scipy, pandas, scikit-learn, krippendorff -- the ``bench`` extra).
Each group holds our function and the peer; results are asserted to agree.
No timing assertions.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import scipy.stats as ss

import metrics

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("OVERLAP_METRICS_DATA", REPO.parent / "shared" / "data"))
IPRE = DATA / "ipre"

N = 1_000_000


@pytest.fixture(scope="module")
def cont():
    r = np.random.default_rng(0)
    x = r.normal(size=N)
    return x, 0.5 * x + r.normal(size=N)


@pytest.fixture(scope="module")
def likert():
    r = np.random.default_rng(1)
    x = r.integers(1, 6, N).astype(float)
    return x, np.clip(x + r.integers(-1, 2, N), 1, 5).astype(float)


# ----------------------------------------------------------------- Pearson


@pytest.mark.benchmark(group="pearson-1e6")
def test_pearson_ours(benchmark, cont):
    res = benchmark(metrics.pearson, *cont)
    assert abs(res.statistic - ss.pearsonr(*cont).statistic) < 1e-12


@pytest.mark.benchmark(group="pearson-1e6")
def test_pearson_scipy(benchmark, cont):
    benchmark(ss.pearsonr, *cont)


@pytest.fixture(scope="module")
def offset_data():
    """Timestamps-like data: a common offset of 1e9, spread 1 (issue 11, section 1)."""
    r = np.random.default_rng(5)
    x = 1e9 + r.normal(size=N)
    return x, -3e8 + 0.5 * (x - 1e9) + r.normal(size=N)


def _exact_r(x, y):
    import sys

    sys.path.insert(0, str(REPO / "tests"))
    from reference.metrics import exact_pearson  # tests/reference/metrics.py

    return exact_pearson(x, y)


@pytest.mark.benchmark(group="pearson-offset-1e9-1e6")
def test_pearson_offset_ours(benchmark, offset_data):
    res = benchmark(metrics.pearson, *offset_data)
    exact = _exact_r(*offset_data)
    benchmark.extra_info["error_vs_exact"] = abs(res.statistic - exact)
    assert abs(res.statistic - exact) <= 1e-12 * abs(exact)


@pytest.mark.benchmark(group="pearson-offset-1e9-1e6")
def test_pearson_offset_scipy(benchmark, offset_data):
    res = benchmark(ss.pearsonr, *offset_data)
    benchmark.extra_info["error_vs_exact"] = abs(float(res.statistic) - _exact_r(*offset_data))


# ----------------------------------------------------------------- grouped


@pytest.fixture(scope="module")
def groups10():
    r = np.random.default_rng(2)
    n = 10 * 100_000
    x = r.normal(size=n)
    return x, x + r.normal(size=n), np.repeat(np.arange(10), n // 10)[r.permutation(n)]


@pytest.mark.benchmark(group="grouped-pearson-10x1e5")
def test_grouped_ours(benchmark, groups10):
    x, y, g = groups10
    res = benchmark(metrics.grouped, x, y, g)
    assert len(res) == 10


@pytest.mark.benchmark(group="grouped-pearson-10x1e5")
def test_grouped_pandas(benchmark, groups10):
    pd = pytest.importorskip("pandas")
    x, y, g = groups10
    df = pd.DataFrame({"x": x, "y": y, "g": g})
    out = benchmark(lambda: df.groupby("g")[["x", "y"]].apply(
        lambda d: ss.pearsonr(d["x"], d["y"]).statistic))
    ours = metrics.grouped(x, y, g)
    for k, v in out.items():
        assert abs(ours[k].statistic - v) < 1e-12


# ----------------------------------------------------------------- ranks


@pytest.mark.benchmark(group="spearman-likert-1e6")
def test_spearman_likert_ours(benchmark, likert):
    res = benchmark(metrics.spearman, *likert)
    assert abs(res.statistic - ss.spearmanr(*likert).statistic) < 1e-12


@pytest.mark.benchmark(group="spearman-likert-1e6")
def test_spearman_likert_scipy(benchmark, likert):
    benchmark.pedantic(ss.spearmanr, args=likert, rounds=3)


@pytest.mark.benchmark(group="kendall-likert-1e6")
def test_kendall_likert_ours(benchmark, likert):
    res = benchmark(metrics.kendall, *likert)
    assert abs(res.statistic - ss.kendalltau(*likert).statistic) < 1e-12


@pytest.mark.benchmark(group="kendall-likert-1e6")
def test_kendall_likert_scipy(benchmark, likert):
    benchmark.pedantic(ss.kendalltau, args=likert, rounds=3)


@pytest.mark.benchmark(group="spearman-continuous-1e6")
def test_spearman_cont_ours(benchmark, cont):
    res = benchmark.pedantic(metrics.spearman, args=cont, rounds=3)
    assert abs(res.statistic - ss.spearmanr(*cont).statistic) < 1e-12


@pytest.mark.benchmark(group="spearman-continuous-1e6")
def test_spearman_cont_scipy(benchmark, cont):
    benchmark.pedantic(ss.spearmanr, args=cont, rounds=3)


@pytest.mark.benchmark(group="kendall-continuous-1e6")
def test_kendall_cont_ours(benchmark, cont):
    res = benchmark.pedantic(metrics.kendall, args=cont, rounds=3)
    assert abs(res.statistic - ss.kendalltau(*cont).statistic) < 1e-12


@pytest.mark.benchmark(group="kendall-continuous-1e6")
def test_kendall_cont_scipy(benchmark, cont):
    benchmark.pedantic(ss.kendalltau, args=cont, rounds=3)


# ----------------------------------------------------------------- bootstrap


@pytest.fixture(scope="module")
def boot_data():
    r = np.random.default_rng(3)
    x = r.normal(size=10_000)
    return x, 0.5 * x + r.normal(size=10_000)


@pytest.mark.benchmark(group="bootstrap-bca-1e4")
def test_bootstrap_ours_9999(benchmark, boot_data):
    res = benchmark.pedantic(metrics.bootstrap_ci, args=boot_data,
                             kwargs={"n_resamples": 9999, "seed": 1}, rounds=3)
    benchmark.extra_info["n_resamples"] = 9999
    theirs = ss.pearsonr(*boot_data).confidence_interval()
    assert abs(res.confidence_interval.low - theirs.low) < 0.02


@pytest.mark.benchmark(group="bootstrap-bca-1e4")
def test_bootstrap_scipy_999(benchmark, boot_data):
    """scipy with 999 resamples (a tenth): multiply its time by ~10 to compare."""
    def run():
        return ss.bootstrap(boot_data, lambda a, b, axis: ss.pearsonr(a, b, axis=axis)[0],
                            paired=True, vectorized=True, n_resamples=999, method="BCa",
                            rng=1)
    res = benchmark.pedantic(run, rounds=1)
    benchmark.extra_info["n_resamples"] = 999
    ours = metrics.bootstrap_ci(*boot_data, n_resamples=9999, seed=1)
    assert abs(res.confidence_interval.low - ours.confidence_interval.low) < 0.02


@pytest.mark.benchmark(group="bootstrap-bca-rank-1e5")
@pytest.mark.parametrize("method", ["spearman", "kendall"])
def test_bootstrap_bca_rank_jackknife(benchmark, method):
    """BCa with the O(n log n) leave-one-out statistics (n = 1e5, 999 resamples)."""
    r = np.random.default_rng(6)
    x = r.normal(size=100_000)
    y = x + r.normal(size=100_000)
    res = benchmark.pedantic(metrics.bootstrap_ci, args=(x, y),
                             kwargs={"method": method, "n_resamples": 999, "seed": 2},
                             rounds=1)
    assert res.confidence_interval.low < res.statistic < res.confidence_interval.high


# ----------------------------------------------------------------- Krippendorff


@pytest.fixture(scope="module")
def ratings():
    r = np.random.default_rng(4)
    truth = r.uniform(1, 5, 100_000)
    m = np.clip(np.round((truth + r.normal(0, 0.7, (7, 100_000))) * 10) / 10, 1, 5)
    m[r.random(m.shape) < 0.2] = np.nan
    return m


@pytest.mark.benchmark(group="krippendorff-7x1e5")
def test_alpha_ours(benchmark, ratings):
    kp = pytest.importorskip("krippendorff")
    res = benchmark(metrics.krippendorff_alpha, ratings)
    want = kp.alpha(reliability_data=ratings[:, :5000], level_of_measurement="interval")
    assert abs(metrics.krippendorff_alpha(ratings[:, :5000]) - want) < 1e-9
    assert 0 < res < 1


@pytest.mark.benchmark(group="krippendorff-7x1e5")
def test_alpha_krippendorff_package(benchmark, ratings):
    kp = pytest.importorskip("krippendorff")
    res = benchmark.pedantic(kp.alpha, kwargs={"reliability_data": ratings,
                                               "level_of_measurement": "interval"}, rounds=1)
    assert abs(res - metrics.krippendorff_alpha(ratings)) < 1e-9


@pytest.fixture(scope="module")
def ratings67():
    """7 raters x 1e5 units on 67 distinct values (0.1 steps from 1.0 to 7.6),
    20% missing.  The package's coincidence step holds units x values x values
    arrays: about 11 GB at its peak here."""
    r = np.random.default_rng(4)
    values = np.round(np.linspace(1.0, 7.6, 67), 1)
    truth = r.integers(0, 67, 100_000)
    m = values[np.clip(truth + r.integers(-5, 6, (7, 100_000)), 0, 66)]
    m[r.random(m.shape) < 0.2] = np.nan
    return m


@pytest.mark.parametrize("threads", [None, 1], ids=["all-threads", "1-thread"])
@pytest.mark.parametrize("level", ["ordinal", "ratio"])
def test_alpha67_ours(benchmark, ratings67, level, threads):
    kp = pytest.importorskip("krippendorff")
    benchmark.group = f"krippendorff-{level}-7x1e5-67-values"
    res = benchmark(metrics.krippendorff_alpha, ratings67, level=level, n_threads=threads)
    part = ratings67[:, :5000]
    want = kp.alpha(reliability_data=part, level_of_measurement=level)
    assert abs(metrics.krippendorff_alpha(part, level=level) - want) < 1e-12
    assert 0 < res < 1


@pytest.mark.parametrize("level", ["ordinal", "ratio"])
def test_alpha67_krippendorff_package(benchmark, ratings67, level):
    kp = pytest.importorskip("krippendorff")
    benchmark.group = f"krippendorff-{level}-7x1e5-67-values"
    res = benchmark.pedantic(kp.alpha, kwargs={"reliability_data": ratings67,
                                               "level_of_measurement": level}, rounds=1)
    assert abs(res - metrics.krippendorff_alpha(ratings67, level=level)) < 1e-12


# ----------------------------------------------------------------- CCKS


needs_ipre = pytest.mark.skipif(not (IPRE / "sent_relation_dev.txt").exists(),
                                reason=f"IPRE data not found at {IPRE} "
                                       "(set OVERLAP_METRICS_DATA)")


@pytest.fixture(scope="module")
def ipre_pred_files(tmp_path_factory):
    """Perturbed predictions for both dev files, written once."""
    out = {}
    rng = np.random.default_rng(5)
    d = tmp_path_factory.mktemp("ipre")
    for track in ("sent", "bag"):
        lines = (IPRE / f"{track}_relation_dev.txt").read_text(encoding="utf-8").splitlines()
        rows = []
        for line in lines:
            if not line.strip():
                continue
            item, rels = line.split("\t")[0], line.split("\t")[-1]
            if rng.random() < 0.2:
                rels = str(int(rng.integers(0, 35)))
            rows.append(f"{item}\t{rels}")
        p = d / f"{track}_pred.txt"
        p.write_text("\n".join(rows) + "\n", encoding="utf-8")
        out[track] = p
    return out


def _ours(track, pred_path):
    gold_path = IPRE / f"{track}_relation_dev.txt"
    if track == "sent":
        gold = metrics.read_sent_relations(gold_path)
    else:
        gold = metrics.read_bag_relations(gold_path)
    pred = metrics.read_relation_predictions(pred_path, track)
    return metrics.relation_f1(gold, pred).f1


def _sklearn_route(track, pred_path):
    from sklearn.metrics import f1_score
    from sklearn.preprocessing import MultiLabelBinarizer

    def parse(path):
        d = {}
        with open(path, encoding="utf-8-sig") as fh:
            for line in fh:
                line = line.strip()
                if line:
                    parts = line.split("\t")
                    d[parts[0]] = [int(v) for v in parts[-1].split()]
        return d

    gold = parse(IPRE / f"{track}_relation_dev.txt")
    pred = parse(pred_path)
    keys = list(gold)
    mlb = MultiLabelBinarizer(classes=list(range(35)))
    g = mlb.fit_transform([gold[k] for k in keys])
    p = mlb.transform([pred.get(k, [0]) for k in keys])
    return f1_score(g, p, average="micro", labels=list(range(1, 35)), zero_division=0)


@needs_ipre
@pytest.mark.parametrize("track", ["sent", "bag"])
def test_ccks_ours(benchmark, ipre_pred_files, track):
    benchmark.group = f"ccks-{track}-dev"
    f1 = benchmark(_ours, track, ipre_pred_files[track])
    pytest.importorskip("sklearn")
    assert abs(f1 - _sklearn_route(track, ipre_pred_files[track])) < 1e-12


@needs_ipre
@pytest.mark.parametrize("track", ["sent", "bag"])
def test_ccks_sklearn(benchmark, ipre_pred_files, track):
    pytest.importorskip("sklearn")
    benchmark.group = f"ccks-{track}-dev"
    benchmark(_sklearn_route, track, ipre_pred_files[track])
