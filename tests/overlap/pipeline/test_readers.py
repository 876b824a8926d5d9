"""What the readers read (issue 31, items 2-4 and the reading bullets of 5, 7, 8).

Plain text files, inferred fields, the default tokenizer on CJK text,
DataFrame/Dataset round trips, and bad input caught at read time (lone
surrogates, deep JSON, over-long lines, non-UTF-8 shard names).  CLI cases run
through subprocess.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import overlap as _overlap_pkg
from overlap import TokenSets, max_overlap
from overlap.pipeline import scan
from overlap.pipeline.tables import read_fields, read_table
from overlap.stream_readers import read_chunks

PKG_ROOT = str(Path(_overlap_pkg.__file__).resolve().parent.parent)


def run(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    return subprocess.run([sys.executable, "-m", "overlap", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


SENTS = ["the cat sat on the mat", "hello world", "the cat sat on the mat",
         "a completely different sentence"]


@pytest.fixture
def sents(tmp_path) -> Path:
    p = tmp_path / "sents.txt"
    p.write_text("".join(s + "\n" for s in SENTS), encoding="utf-8")
    return p


# ------------------------------------------------------------ 2. plain text
def test_scan_plain_text_is_one_sample_a_line(sents, tmp_path):
    r = run("scan", "sents.txt", "--out", "o.csv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "eval: 4 samples" in r.stdout and "(fields: text;" in r.stdout
    with open(tmp_path / "o.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [x["eval_text"] for x in rows] == SENTS
    assert [x["match_index"] for x in rows] == ["2", "-1", "0", "-1"]


def test_dedup_plain_text_writes_lines_back(sents, tmp_path):
    r = run("dedup", "sents.txt", "--out", "s2.txt", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = (tmp_path / "s2.txt").read_text(encoding="utf-8")
    assert "__eou__" not in out
    assert sorted(out.splitlines()) == sorted(set(SENTS))


def test_train_and_train_stream_read_a_text_file_alike(sents, tmp_path):
    (tmp_path / "ev.txt").write_text("the cat sat on a mat\nhello there world\n",
                                     encoding="utf-8")
    a = run("scan", "--train", "sents.txt", "--eval", "ev.txt", "--out", "a.csv", cwd=tmp_path)
    b = run("scan", "--train-stream", "sents.txt", "--eval", "ev.txt", "--out", "b.csv",
            cwd=tmp_path)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    ra = list(csv.DictReader(open(tmp_path / "a.csv", encoding="utf-8")))
    rb = list(csv.DictReader(open(tmp_path / "b.csv", encoding="utf-8")))
    assert [(x["score"], x["train_index"], x["train_text"]) for x in ra] == \
        [(x["score"], x["train_index"], x["train_text"]) for x in rb]
    assert ra[0]["train_index"] == "0"


def test_dailydialog_txt_is_still_dailydialog_also_streamed(tmp_path):
    (tmp_path / "d.txt").write_text("hi there __eou__ hello __eou__ how are you __eou__\n"
                                    "good morning __eou__ morning to you __eou__\n")
    a = run("scan", "--train", "d.txt", "--eval", "d.txt", "--out", "a.csv", cwd=tmp_path)
    b = run("scan", "--train-stream", "d.txt", "--eval", "d.txt", "--out", "b.csv",
            cwd=tmp_path)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert "eval: 3 samples" in a.stdout and "(fields: context, response;" in a.stdout
    ra = list(csv.DictReader(open(tmp_path / "a.csv", encoding="utf-8")))
    rb = list(csv.DictReader(open(tmp_path / "b.csv", encoding="utf-8")))
    assert [(x["score"], x["train_index"]) for x in ra] == \
        [(x["score"], x["train_index"]) for x in rb]


def test_format_text_forces_lines(tmp_path):
    (tmp_path / "d.txt").write_text("a __eou__ b __eou__\nc __eou__ d __eou__\n")
    r = run("scan", "d.txt", "--format", "text", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "eval: 2 samples" in r.stdout
    assert read_table(tmp_path / "d.txt", "text") == {
        "text": ["a __eou__ b __eou__", "c __eou__ d __eou__"]}


@pytest.mark.parametrize("content, what", [
    ("", "no rows"),
    ("one __eou__\ntwo __eou__\n", "no (context, response) sample"),
])
def test_zero_samples_is_an_error_naming_the_file(tmp_path, content, what):
    (tmp_path / "e.txt").write_text(content)
    cmds = [["scan", "e.txt"], ["scan", "--train-stream", "e.txt", "--eval", "e.txt"]]
    if content == "":  # dedup's units are dialogues: one-utterance ones count
        cmds.append(["dedup", "e.txt", "--out", "o.txt"])
    for args in cmds:
        r = run(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "e.txt: " in r.stderr and "0 samples read" in r.stderr, (args, r.stderr)
    if content == "":
        with pytest.raises(ValueError, match="no rows"):
            list(read_chunks(tmp_path / "e.txt"))


# ------------------------------------------------------------- 2. fields
def _write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


TWEETS = [["good morning everyone", "1.8", "English"], ["good morning every one", "1.6", "English"],
          ["今天天气真好", "2.0", "Chinese"], ["今天天气很好", "2.2", "Chinese"],
          ["bonjour à tous", "1.0", "French"], ["bonjour a tous", "1.0", "French"]]


def test_one_text_like_column_is_used_without_fields(tmp_path):
    _write_csv(tmp_path / "t.csv", ["tweet", "label", "language"], TWEETS)
    r = run("scan", "t.csv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "(fields: tweet;" in r.stdout and "eval: 6 samples" in r.stdout
    _write_csv(tmp_path / "u.csv", ["text", "label", "language"], TWEETS)
    r = run("scan", "u.csv", cwd=tmp_path)
    assert r.returncode == 0 and "(fields: text;" in r.stdout, r.stderr


def test_several_text_like_columns_name_fields_in_the_error(tmp_path):
    _write_csv(tmp_path / "t.csv", ["question", "answer", "language"],
               [[a, a + " !", c] for a, _, c in TWEETS])
    r = run("scan", "t.csv", cwd=tmp_path)
    assert r.returncode == 2
    assert "--fields" in r.stderr and "question, answer" in r.stderr, r.stderr
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"question": ["a b", "c d", "e f", "g h"], "answer": ["x", "y", "z", "w"]})
    with pytest.raises(ValueError, match="--fields.*question, answer"):
        scan(df)
    from overlap.pipeline.tables import infer_fields

    assert infer_fields({"id": ["1", "2"], "body": ["x y", "z"]}) == ["body"]


def test_empty_fields_is_refused(tmp_path):
    _write_csv(tmp_path / "t.csv", ["text"], [["a"], ["b"]])
    for cmd in (["scan", "t.csv"], ["dedup", "t.csv", "--out", "o.csv"]):
        r = run(*cmd, "--fields", "", cwd=tmp_path)
        assert r.returncode == 2 and "--fields" in r.stderr, r.stderr


def test_dataframe_fields_are_inferred_in_python():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(TWEETS, columns=["tweet", "label", "language"])
    res = scan(df)
    assert res.fields == ("tweet",)


# ------------------------------------------------------------ 3. tokenizer
def test_default_tokenizer_splits_cjk(tmp_path):
    a, b = "@user 冬服着てみたいフェナァァー！！！！", "@user 喔喔蘋果派！！！！"
    wp = max_overlap(TokenSets.from_texts([a]), TokenSets.from_texts([b])).score[0]
    assert round(wp, 3) == 0.667  # the false match under wordpunct
    res = scan([a], [b])
    assert res.score[0] < 0.5
    assert scan([a], [b], tokenizer="wordpunct").score[0] == wp
    (tmp_path / "t.txt").write_text(f"{a}\n{b}\n", encoding="utf-8")
    r = run("scan", "t.txt", "--out", "o.csv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(tmp_path / "o.csv", encoding="utf-8")))
    assert float(rows[0]["score"]) == res.score[0]
    r = run("scan", "t.txt", "--tokenizer", "wordpunct", "--out", "w.csv", cwd=tmp_path)
    rows = list(csv.DictReader(open(tmp_path / "w.csv", encoding="utf-8")))
    assert float(rows[0]["score"]) == wp


# -------------------------------------------------------- 4. pandas / datasets
def test_dataframe_round_trip_keeps_the_index():
    pd = pytest.importorskip("pandas")
    train = pd.DataFrame({"text": [t for t, _, _ in TWEETS]})
    test = pd.DataFrame({"text": ["今天天气真好啊", "good morning all", "今天天气不好"],
                         "language": ["Chinese", "English", "Chinese"]},
                        index=[10, 20, 30])
    zh = test[test.language == "Chinese"]
    res = scan(zh, train)
    assert res.to_table()["eval_index"] == [10, 30]
    joined = zh.join(res.to_pandas())
    direct = scan(list(zh.text), list(train.text))
    assert joined["score"].tolist() == direct.score.tolist()
    assert joined["train_text"].tolist() == [train.text[j] for j in direct.index]
    full = test.join(res.to_pandas())
    assert full["score"].isna().tolist() == [False, True, False]
    assert list(res.to_pandas(input_columns=True).columns)[:2] == ["language", "score"]


def test_dataset_rows_keep_their_ids():
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"text": ["a b", "c d", "a b c", "c d e"],
                                     "k": [0, 1, 0, 1]})
    sub = ds.filter(lambda r: r["k"] == 1)
    res = scan(sub, ds)
    assert res.to_table()["eval_index"] == [1, 3]
    assert "train_label" not in res.to_table()  # the unfiltered dataset: positions
    assert res.to_table()["train_index"] == [1, 3]


# --------------------------------------------------------- 5/7/8. bad input
def test_lone_surrogate_in_json_is_a_read_error(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"text": "fine \\ud83d\\ude00"}\n{"text": "bad \\ud800"}\n')
    with pytest.raises(ValueError, match=r"s\.jsonl:2: .*lone surrogate"):
        read_fields(p, "text")
    with pytest.raises(ValueError, match=r"s\.jsonl:2: .*lone surrogate"):
        list(read_chunks(p))
    r = run("scan", "s.jsonl", "--out", "o.csv", cwd=tmp_path)
    assert r.returncode == 2 and "s.jsonl:2:" in r.stderr, r.stderr
    assert not (tmp_path / "o.csv").exists()
    with pytest.raises(ValueError, match="row 1.*lone surrogate"):
        scan({"text": ["ok", "x\ud800"]})


def test_deep_json_is_a_bad_input_error(tmp_path):
    p = tmp_path / "deep.jsonl"
    p.write_text('{"text": "a"}\n' + '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    for args in (["scan", "deep.jsonl"], ["scan", "--train-stream", "deep.jsonl",
                                          "--eval", "deep.jsonl"]):
        r = run(*args, cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        assert "deep.jsonl:2: JSON nested too deeply" in r.stderr


def test_overlong_line_is_refused_with_file_and_line(tmp_path):
    p = tmp_path / "big.txt.gz"
    with gzip.open(p, "wb") as fh:
        fh.write(b"short\n" + b"x" * 100_000 + b"\nafter\n")
    with pytest.raises(ValueError, match=r"big\.txt\.gz:2: line longer than 1,000 bytes"):
        list(read_chunks(p, max_line_bytes=1000))
    assert sum(c.n_rows for c in read_chunks(p, max_line_bytes=100_000)) == 3
    q = tmp_path / "big.txt"
    q.write_bytes(b"short\n" + b"x" * 100_000 + b"\nafter\n")
    with pytest.raises(ValueError, match=r"big\.txt:2: line longer than 1,000 bytes"):
        read_fields(q, max_line_bytes=1000)
    (tmp_path / "ev.txt").write_text("short\n")
    r = run("scan", "--train-stream", "big.txt.gz", "--eval", "ev.txt",
            "--max-line-bytes", "1000", cwd=tmp_path)
    assert r.returncode == 2 and "big.txt.gz:2: line longer than 1,000 bytes" in r.stderr
    r = run("scan", "big.txt", "--max-line-bytes", "1000", cwd=tmp_path)
    assert r.returncode == 2 and "big.txt:2: line longer" in r.stderr
    j = tmp_path / "big.jsonl"
    j.write_text('{"text": "a"}\n' + json.dumps({"text": "y" * 5000}) + "\n")
    r = run("dedup", "big.jsonl", "--out", "o.jsonl", "--max-line-bytes", "1000",
            cwd=tmp_path)
    assert r.returncode == 2 and "big.jsonl:2: line longer" in r.stderr
    r = run("scan", "big.txt", cwd=tmp_path)  # the default limit is 64 MiB
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="byte file names")
def test_non_utf8_shard_name_is_refused_before_reading(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    try:
        with open(os.path.join(os.fsencode(d), b"part-\xff.txt"), "w") as fh:
            fh.write("hello world\n")
    except OSError:
        pytest.skip("the file system refuses non-UTF-8 names")
    (tmp_path / "ev.txt").write_text("hello world\n")
    r = run("scan", "--train-stream", "corpus", "--eval", "ev.txt", "--out", "o.csv",
            cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "not valid UTF-8" in r.stderr and "part-" in r.stderr


@pytest.mark.data
def test_intl_is_wordpunct_on_dailydialog(dailydialog_dir):
    """The default tokenizer leaves the published DailyDialog figures unchanged."""
    from overlap.pipeline.dialogue import make_samples, read_dialogues

    s = make_samples(read_dialogues(dailydialog_dir / "dialogues_train.txt"))
    texts = s.context + s.response
    assert len(texts) == 152_106
    a, b = TokenSets.from_texts(texts, "wordpunct"), TokenSets.from_texts(texts, "intl")
    assert (a.indptr == b.indptr).all() and (a.hashes == b.hashes).all()


@pytest.mark.data
def test_mint_chinese_self_scan_figures(shared_data):
    """The figures docs/tokenizers.md quotes: MINT train against itself, Chinese rows >= 0.5."""
    train = shared_data / "mint" / "train.csv"
    if not train.is_file():
        pytest.skip("needs mint/train.csv in ../shared/data")
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(train, keep_default_na=False)
    zh = (df.language == "Chinese").to_numpy()
    got = {tok: int((scan(df, tokenizer=tok).score[zh] >= 0.5).sum())
           for tok in ("wordpunct", "intl")}
    assert zh.sum() == 1596 and got == {"wordpunct": 688, "intl": 163}


# ------------------------------------------- one reading layer, one set of errors
BAD_FILES = {
    "ragged.csv": (b"context,response\nx,y\nonly one\n", ["context"], r"ragged\.csv:3: 1 fields"),
    "noheader.csv": (b"", ["text"], r"noheader\.csv:1: empty file"),
    "nocol.tsv": (b"a\tb\nx\ty\n", ["text"], r"nocol\.tsv:1: no column 'text'"),
    "list.jsonl": (b'{"text": "a"}\n[1]\n', ["text"], r"list\.jsonl:2: each line must be"),
    "gap.jsonl": (b'{"text": "a"}\n\n{"other": "b"}\n', ["text"], r"gap\.jsonl:3: no field 'text'"),
    "int.jsonl": (b'{"text": "a"}\n{"text": 5}\n', ["text"], r"int\.jsonl:2: field 'text' must be"),
    "json.jsonl": (b'{"text": "a"}\n{"text": \n', ["text"], r"json\.jsonl:2: invalid JSON"),
    "utf8.txt": (b"fine\n\xff\n", ["text"], r"utf8\.txt:2: not UTF-8"),
    "fields.txt": (b"one\ntwo\n", ["body"], r"fields\.txt: a text file has one field"),
    "dd.txt": (b"a __eou__ b __eou__\n__eou__\n", ["context"], r"dd\.txt:2: no utterance"),
    "ddf.txt": (b"a __eou__ b __eou__\n", ["label"], r"ddf\.txt: a DailyDialog file has"),
}


def _error(call) -> str:
    with pytest.raises(ValueError) as err:
        call()
    return str(err.value)


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_bad_file_gets_one_error_whichever_reader_reads_it(tmp_path, name):
    data, fields, pattern = BAD_FILES[name]
    p = tmp_path / name
    p.write_bytes(data)
    whole = _error(lambda: read_fields(p, fields))
    streamed = _error(lambda: list(read_chunks(p, fields, chunk_rows=1)))
    assert whole == streamed
    assert re.search(pattern, whole), whole
    if name in ("gap.jsonl", "int.jsonl"):  # inferred fields get the errors of named ones
        assert _error(lambda: read_fields(p)) == whole


def test_a_bad_parquet_file_gets_one_error_whichever_reader_reads_it(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"text": ["a", None, "c"], "n": [1, 2, 3]}), p)
    whole = _error(lambda: read_fields(p, "text"))
    assert whole == _error(lambda: list(read_chunks(p, "text", chunk_rows=1)))
    assert re.search(r"t\.parquet: row 1: field 'text' must be a string, got NoneType", whole)
    whole = _error(lambda: read_fields(p, "body"))
    assert whole == _error(lambda: list(read_chunks(p, "body")))
    assert "t.parquet: no column 'body' (columns: text, n)" in whole


def test_long_csv_fields_and_a_bom_read_the_same_both_ways(tmp_path):
    p = tmp_path / "long.csv"
    long = "w " * 100_000  # longer than the csv module's default field limit
    p.write_bytes(("\ufefftext,id\n" + f"{long},1\nshort,2\n").encode())
    cols, _ = read_fields(p, "text")
    # the arrow reader (the default with pyarrow) gives Arrow columns
    streamed = [t for c in read_chunks(p, "text", chunk_rows=1)
                for t in (c.columns["text"] if isinstance(c.columns["text"], list)
                          else c.columns["text"].to_pylist())]
    assert cols == [streamed] == [[long, "short"]]
