"""Sample tables (CSV, JSONL, Parquet, DataFrames) and histograms (PNG, text)."""

from __future__ import annotations

import csv
import sys

import numpy as np
import pytest

from overlap.pipeline.dialogue import write_dialogues
from overlap.pipeline.tables import MissingExtra, infer_format, read_fields, read_table, write_table
from overlap.pipeline.plot import histogram_counts, save_histogram, text_histogram

TABLE = {
    "context": ["hello , there", "naïve “quotes”, commas", 'a "b"\nnew line'],
    "response": ["hi", "", "ok"],
    "id": ["1", "2", "3"],
}


@pytest.mark.parametrize("ext", ["csv", "jsonl"])
def test_write_read_round_trip(tmp_path, ext):
    p = tmp_path / f"t.{ext}"
    write_table(p, TABLE)
    assert read_table(p) == TABLE
    cols, table = read_fields(p, "context,response")
    assert cols == [TABLE["context"], TABLE["response"]] and table == TABLE


def test_parquet_round_trip(tmp_path):
    pytest.importorskip("pyarrow", reason="Parquet needs the dataframe extra (pyarrow)")
    p = tmp_path / "t.parquet"
    write_table(p, TABLE)
    assert read_table(p) == TABLE
    assert read_fields(p, ["response"])[0] == [TABLE["response"]]


def test_dataframe_source():
    pd = pytest.importorskip("pandas", reason="DataFrames need the dataframe extra (pandas)")
    df = pd.DataFrame(TABLE)
    cols, _ = read_fields(df, ("context", "response"))
    assert cols == [TABLE["context"], TABLE["response"]]
    assert list(df.columns) == list(TABLE)  # caller's frame untouched
    with pytest.raises(ValueError, match="DataFrame: row 1: field 'context'"):
        read_fields(pd.DataFrame({"context": ["a", None], "response": ["b", "c"]}))


def test_missing_extra_has_a_clear_message(tmp_path, monkeypatch):
    for mod in ("pyarrow", "pyarrow.parquet", "matplotlib", "matplotlib.figure",
                "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, mod, None)  # makes the import fail
    (tmp_path / "t.parquet").write_bytes(b"PAR1")
    with pytest.raises(MissingExtra, match=r"pip install 'overlap-metrics\[dataframe\]'"):
        read_table(tmp_path / "t.parquet")
    with pytest.raises(MissingExtra, match=r"pip install 'overlap-metrics\[plot\]'"):
        save_histogram(tmp_path / "h.png", [0.5])
    assert isinstance(MissingExtra("x"), ImportError)


def test_read_errors_name_file_and_line(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("context,response\nx,y\nonly one\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"a\.csv:3: 1 fields, the header has 2"):
        read_table(p)
    j = tmp_path / "a.jsonl"
    j.write_text('{"context": "x", "response": "y"}\n\n{"context": "x"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"a\.jsonl:3: no field 'response'"):
        read_fields(j)
    j.write_text('{"context": "x", "response": "y"}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"a\.jsonl:2: each line must be a JSON object"):
        read_table(j)
    with pytest.raises(ValueError, match=r"no column 'text' \(columns: context, response\)"):
        read_fields(_ok_csv(tmp_path), ["text"])
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        read_table(tmp_path / "nope.csv")
    with pytest.raises(ValueError, match="extension"):
        infer_format("data.xlsx")
    with pytest.raises(ValueError, match="format must be one of"):
        infer_format("x.csv", "excel")


def _ok_csv(tmp_path):
    p = tmp_path / "ok.csv"
    with open(p, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["context", "response"], ["a", "b"]])
    return p


def test_read_fields_dailydialog(tmp_path):
    p = tmp_path / "d.txt"
    write_dialogues(p, [["a", "b", "c"], ["d", "e"]])
    cols, table = read_fields(p, "context,response", turns=2)
    assert cols == [["a", "a b", "d"], ["b", "c", "e"]]
    assert table["turn"] == [1, 2, 1]
    with pytest.raises(ValueError, match="fields context and response"):
        read_fields(p, "text")


def test_write_table_checks(tmp_path):
    with pytest.raises(ValueError, match="equally long"):
        write_table(tmp_path / "x.csv", {"a": [1], "b": []})
    with pytest.raises(TypeError, match="table"):
        write_table(tmp_path / "x.csv", [[1]])


# ---------------------------------------------------------------- histograms
def test_histogram_counts_match_plain_python(rng):
    s = np.concatenate([rng.random(300), [0.0, 1.0, 0.5, 0.1]])
    counts, edges = histogram_counts(s, bins=10)
    plain = [0] * 10
    for x in s:
        plain[min(int(x * 10), 9)] += 1
    assert counts.sum() == len(s) and counts.tolist() == plain
    assert edges[0] == 0.0 and edges[-1] == 1.0


def test_text_histogram_lines():
    text = text_histogram({"before": [0.0, 0.95, 1.0, 1.0], "after": [0.1]}, bins=4, width=8)
    lines = text.splitlines()
    assert lines[0] == "before (n=4)" and lines[5] == "after (n=1)"
    last = lines[4]
    assert last.startswith("  [0.75, 1.00]") and "########" in last and " 75.00%)" in last
    assert "100.00%)" in lines[6]


def test_save_histogram_png(tmp_path):
    pytest.importorskip("matplotlib", reason="PNG histograms need the plot extra (matplotlib)")
    import matplotlib

    backend = matplotlib.get_backend()
    p = save_histogram(tmp_path / "h.png", {"a": [0.1, 0.2], "b": np.array([0.9])})
    with open(p, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    assert "matplotlib.pyplot" not in sys.modules or matplotlib.get_backend() == backend
    with pytest.raises(ValueError, match="series"):
        save_histogram(tmp_path / "x.png", {"a": [2.0]})


def test_csv_field_longer_than_the_csv_module_default_reads_back(tmp_path):
    """The csv module stops at 131,072 characters; the tool writes longer texts."""
    import csv as _csv

    long = "word " * 40_000  # 200,000 characters
    p = tmp_path / "long.csv"
    write_table(p, {"text": [long, "short"]})
    limit = _csv.field_size_limit()
    assert read_table(p) == {"text": [long, "short"]}
    assert _csv.field_size_limit() == limit  # the module's global is restored


def test_jsonl_column_named_line_is_kept(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"text": "a", "__line__": 7}\n{"text": "b", "__line__": 9}\n')
    assert read_table(p) == {"text": ["a", "b"], "__line__": [7, 9]}
    cols, table = read_fields(p, "text")
    assert table["__line__"] == [7, 9]
    p.write_text('{"text": "a"}\n\n{"text": 5}\n')
    with pytest.raises(ValueError, match=r"t.jsonl:3:"):  # line numbers still right
        read_fields(p, "text")


def test_tsv_round_trip(tmp_path):
    p = tmp_path / "t.tsv"
    write_table(p, TABLE)
    assert infer_format(p) == "tsv" and "\t" in p.read_text().splitlines()[0]
    assert read_table(p) == TABLE


def test_hf_dataset_and_dict_sources():
    from overlap.pipeline import scan

    datasets = pytest.importorskip("datasets", reason="needs the optional datasets package")
    ds = datasets.Dataset.from_dict({"text": ["the cat sat", "a dog", "the cat sat down"],
                                     "lang": ["en", "en", "fr"], "id": [10, 11, 12]})
    cols, table = read_fields(ds, "text")
    assert cols == [["the cat sat", "a dog", "the cat sat down"]] and table["id"] == [10, 11, 12]
    res = scan(ds, {"text": ["the cat sat", "zzz"], "id": ["x", "y"]}, fields="text", by="lang")
    out = res.to_table()
    assert out["id"] == [10, 11, 12] and out["train_id"] == ["x", None, "x"]
    assert out["score"][0] == 1.0 and res.groups.groups["en"].n == 2


def test_dataframe_columns_travel_through():
    pd = pytest.importorskip("pandas", reason="DataFrames need the dataframe extra (pandas)")
    from overlap.pipeline import scan

    df = pd.DataFrame({"text": ["a b c d e", "f g"], "language": ["English", "Chinese"],
                       "label": [1.5, 2.0]})
    train = pd.DataFrame({"text": ["a b c d x"]})
    res = scan(df, train, fields=["text"], by="language", at=[0.8])
    assert res.score[0] == 0.8 and res.summary.count(0.8) == 1  # exactly 0.8 counts (>=)
    t = res.to_table()
    assert t["label"] == [1.5, 2.0] and t["language"] == ["English", "Chinese"]
    assert res.groups.rows()[-1]["language"] == "overall"
