"""DailyDialog-style files, split folders and (context, response) samples."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from overlap.pipeline.dialogue import (
    EOU,
    Samples,
    find_split_files,
    format_dialogue,
    make_samples,
    parse_dialogue,
    read_dialogues,
    read_splits,
    write_dialogues,
)

utterance = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1
).map(str.strip).filter(lambda u: u and EOU not in u and "\x85" not in u)
dialogue = st.lists(utterance, min_size=1, max_size=6)


@given(st.lists(dialogue, max_size=8))
def test_write_then_read_round_trips(tmp_path_factory, dialogues):
    p = tmp_path_factory.mktemp("rt") / "d.txt"
    write_dialogues(p, dialogues)
    assert read_dialogues(p) == dialogues


def test_parse_dialogue_drops_empty_and_strips():
    assert parse_dialogue(" a b __eou__  __eou__ c __eou__\n") == ["a b", "c"]


def test_read_dialogues_reports_file_and_line(tmp_path):
    p = tmp_path / "d.txt"
    p.write_text("hi __eou__ yo __eou__\n\n__eou__ __eou__\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"d\.txt:3: no utterance"):
        read_dialogues(p)
    p.write_bytes(b"ok __eou__\n\xff\xfe bad __eou__\n")
    with pytest.raises(ValueError, match=r"d\.txt:2: not UTF-8"):
        read_dialogues(p)
    with pytest.raises(TypeError, match="path"):
        read_dialogues(3)


def test_read_dialogues_ignores_bom_and_crlf(tmp_path):
    p = tmp_path / "d.txt"
    p.write_bytes("\ufeffa __eou__ b __eou__\r\nc __eou__\rd __eou__\n".encode())
    assert read_dialogues(p) == [["a", "b"], ["c"], ["d"]]
    p.write_bytes(b"a __eou__\rb __eou__\r\xff __eou__\n")
    with pytest.raises(ValueError, match=r"d\.txt:3: not UTF-8"):
        read_dialogues(p)


def test_format_dialogue_rejects_unwritable_utterances():
    with pytest.raises(ValueError, match=r"utterances\[1\]"):
        format_dialogue(["fine", "two\nlines"])
    with pytest.raises(ValueError, match=r"utterances\[0\]"):
        format_dialogue([f"has {EOU} inside"])
    with pytest.raises(TypeError, match=r"utterances\[0\]"):
        format_dialogue([3])


@pytest.mark.parametrize(
    "names",
    [
        ("dialogues_train.txt", "dialogues_validation.txt", "dialogues_test.txt"),
        ("train.txt", "valid.txt", "test.txt"),
    ],
)
def test_find_split_files_accepts_both_namings(tmp_path, names):
    for i, n in enumerate(names):
        write_dialogues(tmp_path / n, [[f"u{i}", "v"]])
    found = find_split_files(tmp_path)
    assert {k: v.rsplit("/", 1)[-1] for k, v in found.items()} == dict(
        zip(("train", "valid", "test"), names)
    )
    assert read_splits(tmp_path) == {"train": [["u0", "v"]], "valid": [["u1", "v"]],
                                     "test": [["u2", "v"]]}


def test_find_split_files_errors(tmp_path):
    with pytest.raises(ValueError, match="missing: no such folder"):
        find_split_files(tmp_path / "missing")
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="f: not a directory"):
        find_split_files(tmp_path / "f")
    write_dialogues(tmp_path / "test.txt", [["a"]])
    with pytest.raises(ValueError, match="no train file"):
        find_split_files(tmp_path)
    write_dialogues(tmp_path / "train.txt", [["a"]])
    write_dialogues(tmp_path / "dialogues_train.txt", [["a"]])
    with pytest.raises(ValueError, match="two files for the train split"):
        find_split_files(tmp_path)


def plain_samples(dialogues, k):
    out = []
    for d, utts in enumerate(dialogues):
        for t in range(1, len(utts)):
            out.append((" ".join(utts[max(0, t - k):t]), utts[t], d, t))
    return out


@given(st.lists(st.lists(st.sampled_from(["a", "b c", "d"]), max_size=5), max_size=6),
       st.integers(1, 4))
def test_make_samples_matches_definition(dialogues, k):
    s = make_samples(dialogues, k)
    got = list(zip(s.context, s.response, s.dialogue.tolist(), s.turn.tolist()))
    assert got == plain_samples(dialogues, k)


def test_samples_take_and_validation():
    s = make_samples([["a", "b", "c"], ["d", "e"]])
    t = s.take([2, 0])
    assert (t.context, t.response) == (["d", "a"], ["e", "b"])
    np.testing.assert_array_equal(t.dialogue, [1, 0])
    m = s.take(np.array([False, True, True]))
    assert m.response == ["c", "e"] and isinstance(m, Samples)
    with pytest.raises(IndexError):
        s.take([3])
    with pytest.raises(ValueError, match="mask"):
        s.take(np.array([True]))
    with pytest.raises(ValueError, match="turns"):
        make_samples([["a", "b"]], 0)
    with pytest.raises(TypeError, match=r"dialogues\[0\]\[1\]"):
        make_samples([["a", 2]])
