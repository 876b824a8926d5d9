"""overlap.contamination against the plain-Python definition (reference.contamination)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import overlap
from overlap import TokenSets, _tokenize
from overlap._kernels._ngram_table import NOT_FOUND, NgramTable, ngram_keys
from overlap.contamination import RULES, contamination, token_streams

from reference import contamination as ref
from reference import overlap as oref

# the module (the package's attribute of that name is the function)
cmod = sys.modules["overlap.contamination"]

WORDS = ["a", "b", "c", "dd", "Ee", "f,", "...", "é", "猫", "狗", "x-y"]


def texts_from(draw_ids, words=WORDS):
    return " ".join(words[i] for i in draw_ids)


text_st = st.lists(st.integers(0, len(WORDS) - 1), max_size=12).map(texts_from)


def assert_matches_reference(res, eval_texts, corpus_texts, ns, tokenizer="wordpunct"):
    for n in ns:
        want = ref.membership(eval_texts, corpus_texts, n, tokenizer)
        s = res.stats[n]
        for key in ("n_ngrams", "n_found", "covered", "longest_run", "first_row"):
            assert getattr(s, key).tolist() == [w[key] for w in want], (n, key)
        assert res.n_tokens.tolist() == [w["n_tokens"] for w in want]
        assert s.fraction.tolist() == [w["fraction"] for w in want]
        assert s.coverage.tolist() == [w["coverage"] for w in want]
    for r in res.rules:
        want = ref.membership(eval_texts, corpus_texts, ref.RULE_N[r], tokenizer)
        assert res.labels[r].tolist() == [ref.label(r, m) for m in want], r


@settings(max_examples=60, deadline=None)
@given(ev=st.lists(text_st, max_size=8), co=st.lists(text_st, min_size=1, max_size=10),
       ns=st.lists(st.integers(1, 5), min_size=1, max_size=3, unique=True),
       chunk=st.integers(1, 4))
def test_random_against_reference(ev, co, ns, chunk):
    res = contamination(ev, co, ngram=ns, chunk_rows=chunk)
    assert_matches_reference(res, ev, co, ns)


@settings(max_examples=25, deadline=None)
@given(ev=st.lists(text_st, max_size=6), co=st.lists(text_st, min_size=1, max_size=8),
       tok=st.sampled_from(["wordpunct", "whitespace", "char", "intl"]))
def test_every_preset_and_the_rules(ev, co, tok):
    res = contamination(ev, co, ngram=2, rules=["any", "palm", "llama2"], tokenizer=tok,
                        chunk_rows=3)
    assert_matches_reference(res, ev, co, [2, 8, 11, 13], tok)


def test_callable_tokenizer():
    ev = ["A b c", "c d"]
    co = ["x a b c y", "C D"]
    res = contamination(ev, co, ngram=2, tokenizer=str.split)
    assert_matches_reference(res, ev, co, [2], str.split)
    assert res.stats[2].n_found.tolist() == [1, 0]  # case kept: "c d" is not "C D"


def long_words(rng, k, vocab=200):
    return " ".join(f"w{int(i)}" for i in rng.integers(0, vocab, k))


def planted(rng, n_rows=60, n_eval=12):
    """A corpus with eval n-grams planted at chosen rows (first, last, every
    chunk boundary for chunk_rows=7), eval samples short, empty, repeated."""
    corpus = [long_words(rng, int(rng.integers(0, 30))) for _ in range(n_rows)]
    ev = []
    for k, row in enumerate([0, 6, 7, 13, 14, 20, 21, n_rows - 1]):
        sample = long_words(rng, 20 + k)
        toks = sample.split()
        piece = " ".join(toks[3:3 + 13])
        corpus[row] = f"{corpus[row]} {piece} zz{k}"
        ev.append(sample)
    ev += ["", "w1", "w1 w2 w1 w2 w1 w2 w1 w2 w1 w2 w1 w2 w1 w2 w1 w2",
           "日本語 テキスト " + corpus[33][:40]]
    return ev, corpus


@pytest.mark.parametrize("chunk_rows", [1, 7, 1000])
@pytest.mark.parametrize("n_threads", [1, 2, 4])
def test_planted_threads_and_chunks(rng, chunk_rows, n_threads):
    ev, corpus = planted(rng)
    res = contamination(ev, corpus, ngram=(8, 11, 13), rules=["any", "palm", "llama2"],
                        chunk_rows=chunk_rows, n_threads=n_threads, tokenizer="intl")
    assert_matches_reference(res, ev, corpus, [8, 11, 13], "intl")
    assert res.stats[13].first_row[:8].tolist() == [0, 6, 7, 13, 14, 20, 21, 59]
    for i, r in enumerate(res.stats[13].first_row.tolist()):
        assert res.match[13][i] == (corpus[r] if r >= 0 else None)


def test_equal_for_every_thread_count_and_chunk_size(rng):
    ev, corpus = planted(rng, n_rows=400, n_eval=12)
    base = contamination(ev, corpus, ngram=(1, 3, 13), n_threads=1, chunk_rows=400)
    for nt, cr in [(2, 1), (4, 5), (3, 64)]:
        other = contamination(ev, corpus, ngram=(1, 3, 13), n_threads=nt, chunk_rows=cr)
        for n in (1, 3, 13):
            for key in ("n_found", "covered", "longest_run", "first_row"):
                np.testing.assert_array_equal(getattr(other.stats[n], key),
                                              getattr(base.stats[n], key))
        assert other.match == base.match


@pytest.mark.parametrize("engine", ["arrow", "python"])
def test_shards_on_disk_locate_matches(rng, tmp_path, engine):
    if engine == "arrow":
        pytest.importorskip("pyarrow", reason="the arrow engine needs pyarrow")
    ev, corpus = planted(rng)
    cuts = [0, 5, 21, 22, 60]  # a one-row shard, boundaries next to planted rows
    for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        with open(tmp_path / f"part-{k}.jsonl", "w", encoding="utf-8") as f:
            for t in corpus[a:b]:
                f.write(json.dumps({"text": t, "id": 1}) + "\n")
    disk = contamination(ev, str(tmp_path), ngram=13, chunk_rows=4, engine=engine)
    mem = contamination(ev, corpus, ngram=13)
    np.testing.assert_array_equal(disk.stats[13].first_row, mem.stats[13].first_row)
    assert disk.match == mem.match and disk.n_rows == len(corpus)
    for r in disk.stats[13].first_row.tolist():
        if r >= 0:
            path, row = disk.locate(r)
            k = max(i for i, c in enumerate(cuts[:-1]) if c <= r)
            assert os.path.basename(path) == f"part-{k}.jsonl" and row == r - cuts[k]
    table = disk.to_table()
    assert table["shard_row_13"][0] == 0 and table["first_row_13"][1] == 6


def test_short_empty_and_repeated_samples():
    ev = ["", "...", "b c", "a b a b a b", "q"]
    co = ["a b a b", "x b c y"]
    res = contamination(ev, co, ngram=3, rules="any")
    s = res.stats[3]
    assert res.n_tokens.tolist() == [0, 1, 2, 6, 1]
    assert s.n_ngrams.tolist() == [0, 1, 1, 4, 1]
    # "..." is a token; the repeated 3-grams aba, bab each count twice; "q" is not found
    assert s.n_found.tolist() == [0, 0, 1, 4, 0]
    assert s.covered.tolist() == [0, 0, 2, 6, 0]
    assert s.longest_run.tolist() == [0, 0, 2, 6, 0]
    assert s.fraction[0] == 0.0 and s.coverage[0] == 0.0
    # "any" is about 13-grams: every sample here is shorter, its one n-gram its whole stream
    assert res.labels["any"].tolist() == ["clean", "clean", "dirty", "clean", "clean"]


def test_rule_thresholds_are_exact():
    # 10 tokens, 3 8-grams; llama2 coverage at exactly 20 % and 80 %
    toks = [f"t{i}" for i in range(10)]
    ev = [" ".join(toks[:10])]
    palm = contamination(ev, [" ".join(toks[:9])], rules="palm")   # 2 of 3 8-grams: 66 %
    assert palm.labels["palm"].tolist() == ["clean"]
    palm = contamination(ev, [" ".join(toks[:10])], rules="palm")
    assert palm.labels["palm"].tolist() == ["dirty"]
    ev = [" ".join(f"t{i}" for i in range(55))]                     # 55 tokens
    dirty = contamination(ev, [" ".join(ev[0].split()[:44])], rules="llama2")  # 80 %
    assert dirty.stats[11].covered.tolist() == [44] and dirty.labels["llama2"][0] == "dirty"
    below = contamination(ev, [" ".join(ev[0].split()[:43])], rules="llama2")
    assert below.stats[11].covered.tolist() == [43] and below.labels["llama2"][0] == "neither"
    clean = contamination(ev, [" ".join(ev[0].split()[:10])], rules="llama2")
    assert clean.stats[11].covered.tolist() == [0] and clean.labels["llama2"][0] == "clean"
    mid = contamination(ev, [" ".join(ev[0].split()[:11])], rules="llama2")
    assert mid.stats[11].covered.tolist() == [11] and mid.labels["llama2"][0] == "neither"


def test_groups_summary():
    ev = ["a b c", "d e f", "a b c", "g"]
    res = contamination(ev, ["a b c"], ngram=3, rules="any", groups=["x", "y", "x", "y"])
    s = res.summary()
    assert [r["group"] for r in s] == ["x", "y", "overall"]
    # 13-grams: each sample is shorter, so its whole stream must occur
    assert [r["any_dirty"] for r in s] == [2, 0, 2]
    res = contamination(ev, ["a b c d e f"], rules="any", groups=["x", "y", "x", "y"])
    assert [(r["samples"], r["any_dirty"], r["any_pct"]) for r in res.summary()] == [
        (2, 2, 100.0), (2, 1, 50.0), (4, 3, 75.0)]


def test_a_group_named_overall():
    res = contamination(["a b", "c d"], ["a b"], ngram=2, groups=["overall", 1])
    assert [r["group"] for r in res.summary()] == ["overall", "1", "(overall)"]
    assert [r["found_2"] for r in res.summary()] == [1, 0, 1]


# ----------------------------------------------------------- collisions
@pytest.mark.parametrize("mask", [0, 1, 3, 0xFF])
def test_colliding_keys_never_count(rng, monkeypatch, mask):
    """Every key narrowed to a few values: n-grams collide on the key all the
    time, and only the token comparison tells them apart."""
    ev, corpus = planted(rng)
    want = contamination(ev, corpus, ngram=(2, 13))
    monkeypatch.setattr(cmod, "KEY_MASK", mask)
    got = contamination(ev, corpus, ngram=(2, 13))
    for n in (2, 13):
        for key in ("n_found", "covered", "longest_run", "first_row"):
            np.testing.assert_array_equal(getattr(got.stats[n], key), getattr(want.stats[n], key))


def test_verification_path_directly():
    tok = np.array([1, 2, 3, 7, 8, 9], dtype=np.uint64)
    table = NgramTable(tok, 4, 3, key_mask=0)  # every key is 0
    uids = table.add(np.array([0, 3, 6], dtype=np.int64), 3)
    assert uids.tolist() == [0, 1] and table.n_unique == 2
    keys = ngram_keys(tok, np.array([0, 3], dtype=np.int64), 3, 0)
    assert keys.tolist() == [0, 0]  # the two eval n-grams share a key
    found = np.full(2, NOT_FOUND, dtype=np.int64)
    corpus = np.array([1, 2, 4, 7, 8, 9, 1, 2, 3], dtype=np.uint64)
    table.probe(np.array([0, 3, 6, 9], dtype=np.int64), corpus, 100, found, 2)
    # (1, 2, 4) has the same key as both but is neither
    assert found.tolist() == [102, 101]


# --------------------------------------------------------- token streams
@pytest.mark.parametrize("slots", [0, 1, 3])  # scan_utf8's batches: default, tiny
@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.text(max_size=30), max_size=8),
       tok=st.sampled_from(["wordpunct", "whitespace", "char", "intl"]))
def test_ordered_utf8_scan_equals_the_str_scan(slots, texts, tok):
    pa = pytest.importorskip("pyarrow", reason="the Arrow path needs pyarrow")
    mode = {"wordpunct": 0, "whitespace": 1, "char": 2, "intl": 4}[tok]
    ip, h = _tokenize.scan_texts([t.lower() for t in texts], mode, 7, 2)
    col = pa.array(texts, type=pa.string())
    before = _tokenize.batch_slots(slots)
    try:
        a_ip, a_h = token_streams(col, tok, 7, 2)
    finally:
        _tokenize.batch_slots(before)
    np.testing.assert_array_equal(a_ip, ip)
    np.testing.assert_array_equal(a_h, h)
    # the set path is untouched by the ordered flag
    np.testing.assert_array_equal(TokenSets.from_texts(col, tok, seed=7).hashes,
                                  TokenSets.from_texts(texts, tok, seed=7).hashes)


def test_token_streams_are_the_tokensets_hashes():
    texts = ["Hello, world... again", "", "猫 and 狗"]
    ip, h = token_streams(texts, "intl", 3, 1)
    for i, t in enumerate(texts):
        want = [oref.token_hash(x, 3) for x in ref.tokenize(t, "intl")]
        assert h[ip[i]:ip[i + 1]].tolist() == want


def test_arrow_inputs_equal_lists(rng):
    pa = pytest.importorskip("pyarrow", reason="Arrow inputs need pyarrow")
    ev, corpus = planted(rng)
    want = contamination(ev, corpus, ngram=(3, 13))
    got = contamination(pa.array(ev), pa.chunked_array([corpus[:10], corpus[10:]]),
                        ngram=(3, 13), chunk_rows=7)
    for n in (3, 13):
        np.testing.assert_array_equal(got.stats[n].first_row, want.stats[n].first_row)
        np.testing.assert_array_equal(got.stats[n].covered, want.stats[n].covered)
    assert got.match == want.match


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, err, msg", [
    (dict(ngram=0), ValueError, "ngram"),
    (dict(ngram=2000), ValueError, "ngram"),
    (dict(ngram="13"), TypeError, "ngram"),
    (dict(ngram=[]), ValueError, "ngram"),
    (dict(rules="gpt"), ValueError, "unknown rule 'gpt'"),
    (dict(tokenizer="bpe"), ValueError, "tokenizer"),
    (dict(groups=["a"]), ValueError, "groups has 1 labels for 2"),
    (dict(chunk_rows=0), ValueError, "chunk_rows"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(field=3), TypeError, "field"),
    (dict(engine="fast"), ValueError, "engine must be one of auto, arrow, python"),
])
def test_bad_arguments(kwargs, err, msg):
    with pytest.raises(err, match=msg):
        contamination(["a b", "c"], ["a b"], **kwargs)


def test_bad_texts_and_missing_field(tmp_path):
    with pytest.raises(TypeError, match=r"eval_texts\[1\]"):
        contamination(["a", 3], ["a"])
    with pytest.raises(TypeError, match=r"corpus\[0\]"):
        contamination(["a"], [None])
    p = tmp_path / "c.jsonl"
    p.write_text('{"body": "a b"}\n')
    with pytest.raises(ValueError, match="text"):
        contamination(["a b"], str(p))
    assert contamination(["a b"], str(p), field="body", ngram=2).stats[2].n_found.tolist() == [1]


def test_inputs_not_modified():
    ev = ["a b c", "d"]
    co = ["a b c"]
    contamination(ev, co, ngram=2)
    assert ev == ["a b c", "d"] and co == ["a b c"]


def test_the_package_exports_the_function():
    assert overlap.contamination is contamination and "contamination" in overlap.__all__


def test_rules_document_their_source():
    assert {r.n for r in RULES.values()} == {8, 11, 13}
    assert all(r.source and r.definition for r in RULES.values())


# ------------------------------------------------------------------- dask
def test_dask_equals_local(rng, tmp_path, dask_client):
    from overlap import dask as odask

    ev, corpus = planted(rng)
    cuts = [0, 7, 8, 30, 60]
    for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        with open(tmp_path / f"s{k}.jsonl", "w", encoding="utf-8") as f:
            for t in corpus[a:b]:
                f.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
    (tmp_path / "s2b-empty.jsonl").write_text("")  # an empty shard among them
    groups = [i % 3 for i in range(len(ev))]
    kw = dict(ngram=(2, 13), rules=["any", "palm", "llama2"], tokenizer="intl", chunk_rows=5)
    local = contamination(ev, str(tmp_path), groups=groups, **kw)
    remote = odask.contamination(ev, str(tmp_path), client=dask_client, groups=groups,
                                 n_threads=2, **kw)
    for n in (2, 8, 11, 13):
        for key in ("n_ngrams", "n_found", "covered", "longest_run", "first_row"):
            np.testing.assert_array_equal(getattr(remote.stats[n], key),
                                          getattr(local.stats[n], key))
    assert remote.match == local.match
    assert {r: v.tolist() for r, v in remote.labels.items()} == \
        {r: v.tolist() for r, v in local.labels.items()}
    assert remote.shards == local.shards and remote.n_rows == local.n_rows
    assert remote.summary() == local.summary()
    assert_matches_reference(remote, ev, corpus, [2, 13], "intl")


def test_reading_errors_surface_from_the_reading_thread(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "a b c"}\n' * 5)
    (tmp_path / "b.jsonl").write_text('{"text": "a b"}\n{"text": oops}\n')
    with pytest.raises(ValueError, match=r"b\.jsonl.*2"):
        contamination(["a b c"], str(tmp_path), ngram=2, chunk_rows=1)
    # an error of the consumer stops the reader too (and nothing hangs)
    with pytest.raises(ValueError, match="chunk_rows"):
        contamination(["a b c"], str(tmp_path), ngram=2, chunk_rows=-1)


def test_an_error_of_the_probe_stops_and_closes_the_reader(tmp_path, monkeypatch):
    """Chunks are read and tokenized on the prefetch thread: an error of the
    probe (on the caller's thread) closes the reader, and nothing hangs."""
    (tmp_path / "a.jsonl").write_text('{"text": "a b c"}\n' * 50)
    closed, made = [], []
    real = cmod.read_chunks

    def reader(*args, **kw):
        try:
            for chunk in real(*args, **kw):
                made.append(chunk.first_row)
                yield chunk
        finally:
            closed.append(True)

    calls = []

    def failing(self, *args, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("probe failed")
        return real_add(self, *args, **kw)

    real_add = cmod.ContaminationScanner.add_tokens
    monkeypatch.setattr(cmod, "read_chunks", reader)
    monkeypatch.setattr(cmod.ContaminationScanner, "add_tokens", failing)
    with pytest.raises(RuntimeError, match="probe failed"):
        contamination(["a b c"], str(tmp_path / "a.jsonl"), ngram=2, chunk_rows=5)
    assert closed == [True]
    assert made[:3] == [0, 5, 10] and len(made) < 10  # stopped early, in order


def test_a_corpus_row_without_text_is_named(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "a b"}\n{"text": "c"}\n{"text": null}\n')
    with pytest.raises(ValueError, match=r"a\.jsonl:3: field 'text'"):
        contamination(["a b"], str(tmp_path / "a.jsonl"), ngram=2, chunk_rows=2)
    # chunks handed in by a caller are checked too
    from overlap.stream_readers import Chunk

    bad = [Chunk({"text": ["a b", 5]}, 0, "mine", 0, 0)]
    with pytest.raises(ValueError, match="mine: row 2 of the shard has no text"):
        contamination(["a b"], iter(bad), ngram=2)


def test_slices_and_lone_surrogates(monkeypatch):
    """Texts cut into several tokenizer calls, one of them with a lone surrogate
    (the str scan): the same streams as one call of TokenSets' tokenizer."""
    texts = ["ab cd", "x\ud800y z", "é q", "", "w " * 5]
    monkeypatch.setattr(cmod, "TEXT_CHUNK", 6)
    ip, h = token_streams(texts, "wordpunct", 1, 2)
    want_ip, want_h = _tokenize.scan_texts([t.lower() for t in texts], 0, 1, 1)
    np.testing.assert_array_equal(ip, want_ip)
    np.testing.assert_array_equal(h, want_h)
