"""data.py: stories as text, token files, --source, and downloads from a server on 127.0.0.1.

The download tests start an HTTP server in a thread that serves made-up TinyStories files
with byte ranges, and can drop a connection part way, or ignore ranges, as real servers do.
No network beyond 127.0.0.1, and nothing from outside the repository.
"""
import http.server
import json
import random
import re
import shutil
import socket
import threading
from pathlib import Path

import numpy as np
import pytest

import bpe.encoding
import data
import story_sources
from bpe.token_files import fingerprint
from tokenizer import END_OF_TEXT, PAD, BPETokenizer, WordTokenizer

STORIES = [
    "Once upon a time, there was a little cat named Tom. Tom liked to play in the sun.",
    'One day, Tom saw a big dog. "Hello!" said Tom.\nThe dog was happy and they played.',
    "Lily had a red ball.\n\nShe didn't want to share it, but her mom said: \"Share it, Lily.\"",
    "Le café était fermé. 日本の猫は魚が好きです。",
    "The sun was warm. The end.",
]


def tinystories_file(stories) -> bytes:
    """Stories as TinyStories' own files hold them: a line <|endoftext|> after each."""
    return "".join(s + f"\n{END_OF_TEXT}\n" for s in stories).encode("utf-8")


def many_stories(n, seed=0):
    rng = np.random.default_rng(seed)
    words = ["the", "cat", "dog", "sun", "ran", "saw", "happy", "big", "Lily", "Tom", "played", "ball"]
    out = []
    for k in range(n):
        sentences = [" ".join(rng.choice(words, size=rng.integers(3, 9))).capitalize() + "." for _ in range(rng.integers(2, 6))]
        out.append(f"Story {k}. " + " ".join(sentences))
    return out


# ---------------------------------------------------------------------------------------
# Stories as text


def test_split_stories_on_end_of_text_strips_and_drops_empty_ones():
    text = tinystories_file(STORIES).decode() + f"\n{END_OF_TEXT}\n  \n"
    assert story_sources.split_stories(text, "eot") == STORIES
    assert story_sources.split_stories(f"a{END_OF_TEXT}b", "eot") == ["a", "b"]  # a marker anywhere separates


def test_split_stories_on_blank_lines_keeps_single_line_breaks():
    text = "First story.\nStill the first.\n\nSecond story.\n \n\n\nThird.\r\n\r\nFourth.\n"
    assert story_sources.split_stories(text, "blank") == ["First story.\nStill the first.", "Second story.", "Third.", "Fourth."]


def test_split_stories_on_single_line_breaks_keeps_paragraphs():
    # A TinyStories file with its <|endoftext|> lines taken out, as train-sample-lowercase.txt is.
    text = "one day, a cat.\n\nthe cat ran.\nonce upon a time, a dog.\n\nthe end.\n"
    assert story_sources.split_stories(text, "line") == ["one day, a cat.\n\nthe cat ran.", "once upon a time, a dog.\n\nthe end."]


def test_separator_detection_and_bad_separator():
    assert story_sources.detect_separator(f"a\n{END_OF_TEXT}\nb") == "eot"
    assert story_sources.detect_separator("a\n\nb") == "blank"
    assert story_sources.detect_separator("a story.\nanother story.\na third.\n") == "line"  # one story per line
    assert story_sources.detect_separator("just one line") == "blank"  # one story either way
    with pytest.raises(ValueError, match="separator"):
        story_sources.split_stories("a", "comma")


def paragraphs(story_number, rng):
    """A story of 2 to 5 paragraphs of made-up sentences."""
    return ["".join(f"story {story_number} part {k} sentence {j}. " for j in range(rng.randint(1, 4))).strip()
            for k in range(rng.randint(2, 5))]


def shaped_like_train_sample(n, seed=0):
    """As shared/data/tinystories/train-sample-lowercase.txt is: blank lines between a
    story's paragraphs, a single line break between stories."""
    rng = random.Random(seed)
    stories = ["\n\n".join(paragraphs(k, rng)) for k in range(n)]
    return stories, "\n".join(stories) + "\n"


def shaped_like_valid_sample(n, seed=0):
    """As shared/data/tinystories/valid-sample.txt is: blank lines between stories and between
    paragraphs alike (so its "stories" are paragraphs), and rarely a line break inside one."""
    rng = random.Random(seed)
    pieces = [p for k in range(n) for p in paragraphs(k, rng)]
    for k in range(0, len(pieces), 80):  # about 1 in 80, as in the sample (54 in 4,302)
        pieces[k] = pieces[k].replace(". ", ".\n", 1)
    return pieces, "\n\n".join(pieces) + "\n"


def test_separator_detection_on_files_shaped_like_the_samples():
    train, train_text = shaped_like_train_sample(300)
    assert story_sources.detect_separator(train_text) == "line"  # was "blank": paragraphs taken for stories
    assert story_sources.split_stories(train_text, "line") == train
    valid, valid_text = shaped_like_valid_sample(300)
    assert story_sources.detect_separator(valid_text) == "blank"
    assert story_sources.split_stories(valid_text, "blank") == valid


def test_end_of_text_ends_a_story_whatever_the_separator():
    assert story_sources.split_stories(f"a\n\nb{END_OF_TEXT}c", "blank") == ["a", "b", "c"]
    assert story_sources.split_stories(f"a\nb{END_OF_TEXT}c", "line") == ["a", "b", "c"]


@pytest.mark.parametrize("separator", ["eot", "blank", "line"])
def test_stories_read_block_by_block_are_the_stories_of_the_whole_text(tmp_path, monkeypatch, separator):
    """Every way a block boundary can fall: inside a separator, a marker, a "\r\n", a
    character of several bytes."""
    rng = random.Random(separator)
    parts = ["a", "b c", " ", "\t", "\n", "\n", "\r\n", "é", "日本", END_OF_TEXT, "<|", "\n\n"]
    path = tmp_path / "stories.txt"
    for trial in range(200):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 40)))
        path.write_bytes(text.encode("utf-8"))
        monkeypatch.setattr(story_sources, "READ_BYTES", rng.randint(1, 9))
        expected = story_sources.split_stories(text, separator)
        try:
            streamed = list(story_sources.iter_stories(path, separator))
        except data.DataError:
            streamed = []  # a file with no story
        assert streamed == expected, (trial, text)


def test_a_prefix_drops_the_last_story_and_a_cut_character(tmp_path, monkeypatch):
    monkeypatch.setattr(story_sources, "READ_BYTES", 3)
    path = tmp_path / "s.txt"
    path.write_bytes(f"un été\n{END_OF_TEXT}\nun café\n{END_OF_TEXT}\nla fin".encode("utf-8"))
    whole, marker = path.read_bytes(), END_OF_TEXT.encode()
    for limit in range(1, len(whole)):
        last = whole[:limit].rfind(marker)  # what comes after the last whole marker may be cut off
        if last < 0:
            with pytest.raises(data.DataError, match="found no complete story.*take a larger prefix"):
                list(story_sources.iter_stories(path, "eot", max_bytes=limit))
        else:
            expected = story_sources.split_stories(whole[:last].decode("utf-8"), "eot")
            assert list(story_sources.iter_stories(path, "eot", max_bytes=limit)) == expected, limit
    assert list(story_sources.iter_stories(path, "eot", max_bytes=len(whole))) == ["un été", "un café", "la fin"]


def test_stories_written_and_read_back(tmp_path):
    path = tmp_path / "valid.txt"
    story_sources.write_stories(path, STORIES)
    text = path.read_text(encoding="utf-8")
    assert f"\n{END_OF_TEXT}\n" in text and text.endswith("\n")
    assert data.read_stories(path) == STORIES
    assert [p.name for p in tmp_path.iterdir()] == ["valid.txt"]  # no temporary file left


def test_read_stories_limit_cuts_the_last_story_and_any_half_marker(tmp_path):
    path = tmp_path / "valid.txt"
    story_sources.write_stories(path, STORIES)
    text = path.read_text(encoding="utf-8")
    first_marker = text.index(END_OF_TEXT)
    for n in range(first_marker - 1, first_marker + len(END_OF_TEXT) + 1):
        stories = data.read_stories(path, max_chars=n)
        assert stories == [STORIES[0]], n  # never a piece of "<|endoftext|>" as story text
    assert data.read_stories(path, max_chars=20) == [STORIES[0][:20]]


def test_read_stories_missing_file_names_the_command(tmp_path):
    with pytest.raises(data.DataError, match=r"python data\.py"):
        data.read_stories(tmp_path / "valid.txt")


def test_writing_stories_that_hold_the_marker_is_refused(tmp_path):
    with pytest.raises(ValueError, match="endoftext"):
        story_sources.write_stories(tmp_path / "x.txt", [f"a{END_OF_TEXT}b"])


def test_token_text_and_character_count():
    assert data.token_text(["ab", "c"]) == f"{END_OF_TEXT}ab{END_OF_TEXT}c"
    assert data.count_chars(["ab", "c"]) == 5  # each end of text is one character


# ---------------------------------------------------------------------------------------
# Token files


def test_token_files_are_headerless_little_endian_uint16_with_a_sidecar(tmp_path):
    path = tmp_path / "train.bin"
    tok = WordTokenizer([f"w{i}" for i in range(65533)])  # 65,536 tokens: every 16-bit id
    ids = np.array([0, 1, 258, 65535], dtype=np.int64)
    assert data.write_tokens(path, [ids[:1], ids[1:]], tok, "train.txt") == 4  # appended piece by piece
    assert path.read_bytes() == b"\x00\x00\x01\x00\x02\x01\xff\xff"
    about = json.loads(data.sidecar_file(path).read_text())
    assert about["dtype"] == "<u2" and about["tokens"] == 4 and about["tokenizer"] == "vocab.json"
    assert about["tokenizer_sha256"] == fingerprint(tok) and about["text"] == "train.txt"
    back = data.load_tokens(path, tok)
    assert back.dtype == np.dtype("<u2") and back.tolist() == ids.tolist()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.bin", "train.bin.json"]  # no temporary left


def bpe_tokenizer(merges=((104, 101), (108, 108), (111, 32))):
    return BPETokenizer(list(merges), special_tokens=[PAD, END_OF_TEXT])


def test_load_tokens_checks_the_file(tmp_path):
    tok = bpe_tokenizer()
    path = tmp_path / "train-bpe.bin"
    with pytest.raises(data.DataError, match=r"no .*train-bpe\.bin: make it with `python data\.py --bpe`"):
        data.load_tokens(path, tok)
    path.write_bytes(b"\x01\x00\x02")
    with pytest.raises(data.DataError, match=r"not a whole number of 16-bit ids.*python data\.py --bpe`$"):
        data.load_tokens(path, tok)
    path.write_bytes(b"")
    with pytest.raises(data.DataError, match="not a token file"):
        data.load_tokens(path, tok)
    data.write_tokens(path, [np.array([5, len(tok)])], tok)
    with pytest.raises(data.DataError, match=rf"id {len(tok)}, outside the tokenizer's {len(tok):,} ids"):
        data.load_tokens(path, tok)
    word = WordTokenizer(["a", "b"])
    word_file = tmp_path / "valid.bin"
    data.write_tokens(word_file, [np.array([1, 2, 3])], word)
    word_file.write_bytes(np.array([1, 2], dtype="<u2").tobytes())  # changed after its sidecar was written
    with pytest.raises(data.DataError, match=r"holds 2 ids, its valid\.bin\.json says 3.*make it again with `python data\.py`$"):
        data.load_tokens(word_file, word)
    data.sidecar_file(word_file).write_text("{not json")
    with pytest.raises(data.DataError, match=r"valid\.bin\.json is not readable JSON.*make it again with `python data\.py`$"):
        data.load_tokens(word_file, word)


def test_a_token_file_without_its_sidecar_is_refused(tmp_path):
    tok = bpe_tokenizer()
    path = tmp_path / "train-bpe.bin"
    np.array([1, 2, 3], dtype="<u2").tofile(path)  # as data.py wrote token files before sidecars
    with pytest.raises(data.DataError) as e:
        data.load_tokens(path, tok)
    message = str(e.value)
    assert "\n" not in message and "train-bpe.bin has no train-bpe.bin.json" in message
    assert message.endswith("make it again with `python data.py --bpe`")


def test_token_files_of_another_tokenizer_are_refused(tmp_path):
    """BPE token files copied over the word-level ones, with their sidecar or without it."""
    word, bpe = WordTokenizer([f"w{i}" for i in range(600)]), bpe_tokenizer()
    data.write_tokens(tmp_path / "train.bin", [np.array([600, 3, 4, 5])], word)
    data.write_tokens(tmp_path / "train-bpe.bin", [np.array([258, 104, 256, 32, 257])], bpe)
    shutil.copy(tmp_path / "train-bpe.bin", tmp_path / "train.bin")  # the old sidecar stays
    with pytest.raises(data.DataError, match=r"holds 5 ids, its train\.bin\.json says 4.*`python data\.py`$"):
        data.load_tokens(tmp_path / "train.bin", word)
    shutil.copy(tmp_path / "train-bpe.bin.json", tmp_path / "train.bin.json")  # and its sidecar too
    with pytest.raises(data.DataError, match=r"train\.bin was written by another tokenizer \(tokenizer\.bpe, sha256 "
                                             r".*than the one given.*`python data\.py`$"):
        data.load_tokens(tmp_path / "train.bin", word)


def test_a_tokenizer_with_two_merges_swapped_is_refused(tmp_path):
    """The two merges make different tokens, neither from the other: the swapped tokenizer
    loads without complaint, and encodes other ids."""
    tok = bpe_tokenizer()
    path = tmp_path / "train-bpe.bin"
    data.write_tokens(path, [tok.encode_array("hello hello", allowed_special="all")], tok)
    swapped = bpe_tokenizer([(108, 108), (104, 101), (111, 32)])
    assert len(swapped) == len(tok) and swapped.encode("hello") != tok.encode("hello")
    with pytest.raises(data.DataError, match=r"written by another tokenizer.*make it again with `python data\.py --bpe`$"):
        data.load_tokens(path, swapped)
    assert data.load_tokens(path, tok).tolist() == tok.encode("hello hello")


def test_load_tokenizer_names_the_command(tmp_path):
    with pytest.raises(data.DataError, match=r"tokenizer\.bpe: make it with `python data\.py --bpe`"):
        data.load_tokenizer(tmp_path, bpe=True)
    with pytest.raises(data.DataError, match=r"vocab\.json: make it with `python data\.py`"):
        data.load_tokenizer(tmp_path, bpe=False)
    (tmp_path / "merges.txt").write_text("1 2\n")  # what data.py wrote before tokenizer.bpe
    with pytest.raises(data.DataError, match=r"merges\.txt is from an earlier version.*make it with `python data\.py --bpe`"):
        data.load_tokenizer(tmp_path, bpe=True)
    (tmp_path / "tokenizer.bpe").write_text('{"format": "bpe-tokenizer", "version": 1')
    with pytest.raises(data.DataError, match=r"tokenizer\.bpe is not a readable.*make it again"):
        data.load_tokenizer(tmp_path, bpe=True)
    (tmp_path / "vocab.json").write_text('{"kind": "word", "words": 5}')  # was a TypeError traceback
    with pytest.raises(data.DataError, match=r"vocab\.json is not a word vocabulary.*make it again"):
        data.load_tokenizer(tmp_path, bpe=False)


# ---------------------------------------------------------------------------------------
# --source


def sample_like_source(folder: Path):
    """Files named and laid out as the samples in shared/data/tinystories/ are: no end-of-text
    markers; the training stories lowercased, a story per line, blank lines between their
    paragraphs; blank lines between the held-out stories and their paragraphs alike."""
    folder.mkdir()
    train, text = shaped_like_train_sample(60, seed=1)
    (folder / "train-sample-lowercase.txt").write_text(text, encoding="utf-8")
    valid = many_stories(20, seed=2)
    (folder / "valid-sample.txt").write_text("\n\n".join(valid) + "\n\n", encoding="utf-8")
    (folder / "README.md").write_text("not a story file")
    return train, valid


def test_source_like_the_samples_writes_stories_and_word_tokens(tmp_path, capsys):
    train, valid = sample_like_source(tmp_path / "src")
    d = tmp_path / "data"
    data.main(["--source", str(tmp_path / "src"), "--data-dir", str(d)])
    out = capsys.readouterr().out
    assert data.read_stories(d / "train.txt") == train
    assert data.read_stories(d / "valid.txt") == valid
    assert not (d / "instruct.txt").exists() and "no instruction file" in out
    assert "train.txt: 60 stories separated by single line breaks (auto)" in out
    assert "valid.txt: 20 stories separated by one or more blank lines (auto)" in out
    tok = WordTokenizer.load(d / "vocab.json")
    ids = data.load_tokens(d / "train.bin", tok)
    assert ids[0] == tok.eot_token and int(np.count_nonzero(ids == tok.eot_token)) == 60
    first = tok.decode(ids[1:list(ids[1:]).index(tok.eot_token) + 1])
    assert first == " ".join(train[0].split())  # the word level drops line breaks
    # The statistics it prints: tokens, unknown share, characters per token, seconds.
    assert re.search(r"valid\.bin: [\d,]+ tokens from 20 stories, [\d.]+ characters per token, unknown [\d,]+ \([\d.]+%\), "
                     r"encoded in [\d.]+ s", out)
    assert '"Once upon a time, a cat said hello"' in out


def test_source_lowercase_makes_the_held_out_stories_like_the_training_ones(tmp_path):
    train, valid = sample_like_source(tmp_path / "src")
    d = tmp_path / "data"
    data.main(["--source", str(tmp_path / "src"), "--data-dir", str(d), "--lowercase"])
    assert data.read_stories(d / "valid.txt") == [s.lower() for s in valid] != valid
    assert data.read_stories(d / "train.txt") == train  # lowercase already
    with pytest.raises(SystemExit):
        data.main(["--data-dir", str(d), "--lowercase"])  # only with --source


def test_source_prefix_is_cut_after_the_last_whole_story(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    stories = many_stories(50)
    content = tinystories_file(stories)
    (src / "TinyStories-train.txt").write_bytes(content)
    (src / "TinyStories-valid.txt").write_bytes(tinystories_file(STORIES))
    (src / "TinyStories-Instruct-train.txt").write_bytes(tinystories_file(["Words: cat\nStory: A cat sat."] * 3))
    limit = content.index(b"Story 20.") + 5  # in the middle of story 20
    d = tmp_path / "data"
    data.main(["--source", str(src), "--data-dir", str(d), "--train-mb", str(limit / 1e6)])
    assert data.read_stories(d / "train.txt") == stories[:20]
    assert data.read_stories(d / "valid.txt") == STORIES  # no limit on the held-out stories
    assert data.read_stories(d / "instruct.txt") == ["Words: cat\nStory: A cat sat."] * 3
    assert "cut after the last whole story" in capsys.readouterr().out


def test_source_separator_flag(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.txt").write_text("a cat.\n\nit ran.\na dog.\n\nit sat.\n")
    (src / "valid.txt").write_text("x.\ny.\n")
    d = tmp_path / "data"
    data.main(["--source", str(src), "--data-dir", str(d), "--separator", "line"])
    assert data.read_stories(d / "train.txt") == ["a cat.\n\nit ran.", "a dog.\n\nit sat."]
    assert data.read_stories(d / "valid.txt") == ["x.", "y."]


@pytest.mark.parametrize("names, message", [
    (["valid.txt"], r"no \.txt file whose name contains 'train'"),
    (["train.txt"], r"no \.txt file whose name contains 'valid'"),
    (["train-a.txt", "train-b.txt", "valid.txt"], "several files could be the train stories"),
])
def test_source_file_names_are_checked(tmp_path, capsys, names, message):
    for n in names:
        (tmp_path / n).write_text("A story.\n")
    with pytest.raises(SystemExit) as e:
        data.main(["--source", str(tmp_path), "--data-dir", str(tmp_path / "data")])
    assert e.value.code == 1
    assert re.search(message, capsys.readouterr().err)


# ---------------------------------------------------------------------------------------
# --source with JSON Lines and Parquet shards


def write_shards(folder: Path, shards: dict, column="text"):
    """shards: {file name: stories}, each written as .jsonl or .parquet by its name; a
    test that writes Parquet skips without pyarrow, which JSON Lines does not need."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, stories in shards.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".parquet"):
            pa = pytest.importorskip("pyarrow", reason="Parquet shards need pyarrow (requirements-bench.txt)")
            pq = pytest.importorskip("pyarrow.parquet", reason="Parquet shards need pyarrow")
            pq.write_table(pa.table({"id": list(range(len(stories))), column: stories}), path)
        else:
            path.write_text("".join(json.dumps({column: s, "id": k}) + "\n" for k, s in enumerate(stories)),
                            encoding="utf-8")


def test_source_shards_jsonl_and_parquet(tmp_path, capsys):
    stories = many_stories(90, seed=11)
    # A record may hold several stories between markers, and whitespace around them.
    stories[5] = "Le café était fermé. 日本の猫は魚が好きです。"
    records = stories[:10] + [f"  {stories[10]}\r\n{END_OF_TEXT}{stories[11]}\n", ""] + stories[12:30]
    write_shards(tmp_path / "src", {
        "train-000.jsonl": records,
        "part/train-001.parquet": stories[30:60],     # any depth, in name order
        "train-002.parquet": stories[60:70],
        "validation-000.jsonl": stories[70:80],
        "instruct-000.parquet": [f"Words: cat\nStory: {s}" for s in stories[80:]],
    })
    (tmp_path / "src" / "README.md").write_text("not a story")  # not a shard: left alone
    d = tmp_path / "data"
    data.main(["--source", str(tmp_path / "src"), "--data-dir", str(d), "--bpe", "--vocab-size", "300",
               "--no-progress"])
    out = capsys.readouterr().out
    # part/train-001.parquet sorts before train-000.jsonl by its path
    assert data.read_stories(d / "train.txt") == stories[30:60] + stories[:30] + stories[60:70]
    assert data.read_stories(d / "valid.txt") == stories[70:80]
    assert data.read_stories(d / "instruct.txt") == [f"Words: cat\nStory: {s}" for s in stories[80:]]
    assert "train.txt: 70 stories" in out and "from 3 shard(s)" in out and "validation-000.jsonl" in out
    tok = data.load_tokenizer(d, True)
    ids = data.load_tokens(d / "train-bpe.bin", tok)
    assert np.array_equal(ids, tok.encode_array(data.token_text(stories[30:60] + stories[:30] + stories[60:70]),
                                                allowed_special="all"))

    # The same stories as text files give the same tokenizer.
    text_src = tmp_path / "text"
    text_src.mkdir()
    (text_src / "train.txt").write_bytes(tinystories_file(stories[30:60] + stories[:30] + stories[60:70]))
    (text_src / "valid.txt").write_bytes(tinystories_file(stories[70:80]))
    (text_src / "instruct.txt").write_bytes(tinystories_file([f"Words: cat\nStory: {s}" for s in stories[80:]]))
    data.main(["--source", str(text_src), "--data-dir", str(tmp_path / "text-data"), "--bpe", "--vocab-size",
               "300", "--no-progress"])
    assert data.load_tokenizer(tmp_path / "text-data", True) == tok


def test_source_shards_held_out_by_count_field_lowercase_and_prefix(tmp_path, capsys):
    stories = many_stories(40, seed=12)
    write_shards(tmp_path / "src", {f"{k:05d}.parquet": stories[10 * k:10 * k + 10] for k in range(4)},
                 column="story")
    d = tmp_path / "data"
    common = ["--source", str(tmp_path / "src"), "--data-dir", str(d), "--no-progress", "--field", "story"]
    data.main(common + ["--valid-shards", "1", "--lowercase"])
    assert data.read_stories(d / "train.txt") == [s.lower() for s in stories[:30]]
    assert data.read_stories(d / "valid.txt") == [s.lower() for s in stories[30:]]
    # --train-mb takes the whole stories within its first bytes
    limit = sum(len(s) + 1 for s in stories[:12]) + 5
    data.main(common + ["--valid-shards", "2", "--train-mb", str(limit / 1e6)])
    assert data.read_stories(d / "train.txt") == stories[:12]
    assert data.read_stories(d / "valid.txt") == stories[20:]
    assert "the whole stories of their first" in capsys.readouterr().out


@pytest.mark.parametrize("shards, flags, message", [
    ({"a.jsonl": ["x"], "b.jsonl": ["y"]}, [],
     r"no shard whose name contains 'valid'.*among a\.jsonl, b\.jsonl.*--valid-shards N"),
    ({"a.jsonl": ["x"], "valid.jsonl": ["y"]}, ["--valid-shards", "1"],
     r"valid\.jsonl already say by their names that they are held out"),
    ({"a.jsonl": ["x"], "b.jsonl": ["y"]}, ["--valid-shards", "2"], r"--valid-shards 2 leaves no training shard"),
    ({"valid.jsonl": ["y"]}, [], r"every shard is held out"),
    ({"train.parquet": ["x"], "valid.jsonl": ["y"]}, ["--field", "story"],
     r"train\.parquet has no column 'story' \(its string columns: 'text'\): name the text's with --field"),
    ({"train.jsonl": ["x"], "valid.jsonl": ["y"]}, ["--field", "story"],
     r"train\.jsonl, line 1 has no field 'story'"),
    ({"train.jsonl": [""], "valid.jsonl": ["y"]}, [], r"train\.jsonl: found no story in 1 shard"),
])
def test_source_shard_errors_name_the_shard(tmp_path, capsys, shards, flags, message):
    write_shards(tmp_path / "src", shards)
    with pytest.raises(SystemExit) as e:
        data.main(["--source", str(tmp_path / "src"), "--data-dir", str(tmp_path / "data"), "--no-progress", *flags])
    err = capsys.readouterr().err
    assert e.value.code == 1 and re.search(message, err), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_source_shards_that_cannot_be_read_are_named(tmp_path, capsys, monkeypatch):
    pa = pytest.importorskip("pyarrow", reason="this test writes Parquet shards: needs pyarrow")
    pq = pytest.importorskip("pyarrow.parquet", reason="needs pyarrow")

    src = tmp_path / "src"
    write_shards(src, {"train-0.jsonl": ["A story."], "valid.jsonl": ["Held out."]})

    def error():
        with pytest.raises(SystemExit) as e:
            data.main(["--source", str(src), "--data-dir", str(tmp_path / "data"), "--no-progress"])
        assert e.value.code == 1
        return capsys.readouterr().err

    (src / "train-1.parquet").write_bytes(b"PAR1 not really")
    assert re.search(r"train-1\.parquet is not a Parquet file", error())
    pq.write_table(pa.table({"text": [1, 2]}), src / "train-1.parquet")
    assert re.search(r"train-1\.parquet: the column 'text' holds int64, not strings", error())
    (src / "train-1.parquet").unlink()
    (src / "train-1.jsonl").write_text('{"text": "fine"}\nnot json\n')
    assert re.search(r"train-1\.jsonl, line 2 is not JSON", error())
    (src / "train-1.jsonl").write_bytes(b'{"text": "caf\xe9"}\n')
    assert re.search(r"train-1\.jsonl, line 1 is not UTF-8 text", error())
    (src / "train-1.jsonl").unlink()
    (src / "train.txt").write_text("A story.\n")
    assert re.search(r"holds both text files \(train\.txt\) and JSON Lines or Parquet shards", error())
    (src / "train.txt").unlink()
    (src / "train-0.jsonl").write_text(json.dumps({"text": "word " * 300}) + "\n")
    monkeypatch.setattr(story_sources, "MAX_STORY_CHARS", 1000)
    assert re.search(r"train-0\.jsonl: its text 1 holds a story of 1,499 characters, longer than the 1,000", error())


def test_shard_flags_go_with_shards(tmp_path, capsys):
    (tmp_path / "train.txt").write_text("A story.\n")
    (tmp_path / "valid.txt").write_text("A story.\n")
    for flags in (["--field", "story"], ["--valid-shards", "1"]):
        with pytest.raises(SystemExit) as e:
            data.main(["--source", str(tmp_path), "--data-dir", str(tmp_path / "data"), "--no-progress", *flags])
        assert e.value.code == 1 and f"{flags[0]} goes with JSON Lines or Parquet shards" in capsys.readouterr().err
    for flags in (["--field", "story"], ["--valid-shards", "1"]):
        with pytest.raises(SystemExit) as e:
            data.main(["--data-dir", str(tmp_path / "data"), *flags])
        assert e.value.code == 2 and "go with --source" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        data.main(["--source", str(tmp_path), "--valid-shards", "0"])
    assert e.value.code == 2 and "--valid-shards must be at least 1" in capsys.readouterr().err


def test_source_that_is_not_utf8_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "train.txt").write_bytes(b"A story \xff here.\n")
    (tmp_path / "valid.txt").write_text("A story.\n")
    with pytest.raises(SystemExit):
        data.main(["--source", str(tmp_path), "--data-dir", str(tmp_path / "data")])
    assert "train.txt is not UTF-8 text (byte 8" in capsys.readouterr().err


def test_help_documents_every_flag(capsys):
    parser = data.build_parser()
    for action in parser._actions:
        assert action.help, action.option_strings
    with pytest.raises(SystemExit):
        data.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for action in parser._actions:
        for flag in action.option_strings:
            assert flag in out
    assert "uint16 ids" in out and "no network: use --source DIR" in out


# ---------------------------------------------------------------------------------------
# Streaming: files of any size in bounded memory


def mixed_source(folder: Path):
    """Training stories with markers, Windows line ends and accents; held-out stories one per
    line; instructions with markers."""
    folder.mkdir()
    train = [s.replace("saw", "vit l'été") for s in many_stories(300, seed=5)]
    (folder / "train.txt").write_bytes(tinystories_file(train).replace(b"\n", b"\r\n"))
    (folder / "valid.txt").write_text("\n".join(many_stories(40, seed=6)) + "\n", encoding="utf-8")
    (folder / "instruct-train.txt").write_bytes(tinystories_file(
        [f"Words: cat, 日本\nStory: {s}" for s in many_stories(50, seed=7)]))


@pytest.mark.parametrize("flags", [["--bpe", "--vocab-size", "400"], ["--words", "40"]])
def test_streamed_files_equal_the_one_piece_files_byte_for_byte(tmp_path, monkeypatch, flags):
    """Read 7 bytes at a time, encoded 100 characters at a time, trained 50 bytes at a time,
    and all at once: the same stories, tokenizer, token files and sidecars."""
    mixed_source(tmp_path / "src")
    folders = {}
    for name, (read, piece, batch) in {"small": (7, 100, 50), "whole": (1 << 24, 1 << 24, 1 << 24)}.items():
        monkeypatch.setattr(story_sources, "READ_BYTES", read)
        monkeypatch.setattr(story_sources, "BATCH_CHARS", piece)
        monkeypatch.setattr(bpe.encoding, "TRAIN_BATCH_BYTES", batch)
        folders[name] = tmp_path / name
        data.main(["--source", str(tmp_path / "src"), "--data-dir", str(folders[name]), "--no-progress", *flags])
    names = sorted(p.name for p in folders["small"].iterdir())
    made = ["tokenizer.bpe", "train-bpe.bin", "valid-bpe.bin"] if "--bpe" in flags else ["vocab.json", "train.bin", "valid.bin"]
    made += [name + ".json" for name in made if name.endswith(".bin")]
    assert names == sorted(p.name for p in folders["whole"].iterdir()) == sorted(["train.txt", "valid.txt", "instruct.txt", *made])
    for name in names:
        assert (folders["small"] / name).read_bytes() == (folders["whole"] / name).read_bytes(), name
    assert len(data.read_stories(folders["small"] / "valid.txt")) == 40  # one per line, detected


def test_the_streamed_word_vocabulary_is_the_one_text_vocabulary(tmp_path):
    stories = many_stories(200, seed=8) + ["Un café, s'il vous plaît... l'été!"]
    for size in (5, 30, 1000):
        assert WordTokenizer.build(iter(stories), size).words == WordTokenizer.build(data.token_text(stories), size).words


# ---------------------------------------------------------------------------------------
# Errors name the file, without a traceback


def data_folder(folder: Path, train: bytes):
    """A data folder that data.py made, but for train.txt: no download needed."""
    folder.mkdir()
    (folder / "train.txt").write_bytes(train)
    for name in ("valid.txt", "instruct.txt"):
        (folder / name).write_bytes(tinystories_file(STORIES))


@pytest.mark.parametrize("flags", [[], ["--bpe"]])
def test_a_data_file_that_is_not_utf8_is_named(tmp_path, capsys, monkeypatch, flags):
    # The bad byte in a later block: its offset counts from the start. (raising=False: the
    # test runs against the data.py of before streaming too, to see it fail there.)
    monkeypatch.setattr(story_sources, "READ_BYTES", 5, raising=False)
    data_folder(tmp_path / "d", tinystories_file(STORIES[:2]) + b"caf\xe9\n")
    with pytest.raises(SystemExit) as e:
        data.main(["--data-dir", str(tmp_path / "d"), "--no-progress", *flags])
    err = capsys.readouterr().err
    offset = len(tinystories_file(STORIES[:2])) + 3
    assert e.value.code == 1 and f"train.txt is not UTF-8 text (byte {offset}: invalid continuation byte)" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("content, message", [
    (b"", r"train\.txt: found no story"),
    (b" \n\n \n", r"train\.txt: found no story"),
])
def test_an_empty_source_file_is_named(tmp_path, capsys, content, message):
    (tmp_path / "train.txt").write_bytes(content)
    (tmp_path / "valid.txt").write_text("A story.\n")
    with pytest.raises(SystemExit) as e:
        data.main(["--source", str(tmp_path), "--data-dir", str(tmp_path / "data"), "--no-progress"])
    assert e.value.code == 1 and re.search(message, capsys.readouterr().err)


def test_a_story_too_long_for_memory_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(story_sources, "MAX_STORY_CHARS", 1000, raising=False)
    monkeypatch.setattr(story_sources, "READ_BYTES", 256, raising=False)
    (tmp_path / "train.txt").write_text("word " * 2000 + f"\n{END_OF_TEXT}\n")
    (tmp_path / "valid.txt").write_text("A story.\n")
    with pytest.raises(SystemExit):
        data.main(["--source", str(tmp_path), "--data-dir", str(tmp_path / "data"), "--no-progress"])
    assert re.search(r"train\.txt: a story longer than 1,000 characters: are its stories separated by the text "
                     r"<\|endoftext\|>\? \(see --separator\)", capsys.readouterr().err)


def test_a_data_file_that_cannot_be_read_is_named(tmp_path, capsys):
    data_folder(tmp_path / "d", b"")
    (tmp_path / "d" / "train.txt").unlink()
    (tmp_path / "d" / "train.txt").mkdir()  # exists, and is no file
    with pytest.raises(SystemExit):
        data.main(["--data-dir", str(tmp_path / "d"), "--no-progress"])
    err = capsys.readouterr().err
    assert "cannot read" in err and "train.txt" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------
# Downloads from a server on 127.0.0.1


class StoryServer(http.server.ThreadingHTTPServer):
    """Serves files from a dict, honouring "Range: bytes=a-b" (206) unless ignore_range;
    drop_after[path] = n sends only n bytes the first time path is asked for, then closes
    the connection mid-response."""

    daemon_threads = True

    def __init__(self, files):
        super().__init__(("127.0.0.1", 0), RangeHandler)
        self.files, self.drop_after, self.ignore_range, self.requests = files, {}, False, []

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


class RangeHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        srv = self.server
        srv.requests.append((self.path, self.headers.get("Range")))
        body = srv.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start, end, status = 0, len(body) - 1, 200
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range") or "")
        if m and not srv.ignore_range:
            start = int(m.group(1))
            end = min(int(m.group(2)), end) if m.group(2) else end
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        self.send_response(status)
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(body)}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        chunk = body[start:end + 1]
        drop = srv.drop_after.pop(self.path, None)
        if drop is not None:
            self.wfile.write(chunk[:drop])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)  # the client sees the stream end early
            return
        self.wfile.write(chunk)


@pytest.fixture
def server():
    train = tinystories_file(many_stories(200, seed=3))
    valid = tinystories_file(many_stories(30, seed=4))
    instruct = tinystories_file([f"Features: Dialogue\nWords: cat, sun\nSummary: A cat.\nStory: Story {k}." for k in range(100)])
    srv = StoryServer({
        "/" + story_sources.TRAIN_URL: train,
        "/" + story_sources.VALID_URL: valid,
        "/" + story_sources.INSTRUCT_URL: instruct,
    })
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_download_of_a_prefix_then_cut_at_a_story_boundary(server, tmp_path, capsys):
    train = server.files["/" + story_sources.TRAIN_URL]
    limit = train.index(b"Story 57.") + 3  # in the middle of story 57
    d = tmp_path / "data"
    data.main(["--base-url", server.url, "--data-dir", str(d), "--train-mb", str(limit / 1e6),
               "--instruct-mb", "1", "--no-progress"])
    stories = story_sources.split_stories(train.decode(), "eot")
    assert data.read_stories(d / "train.txt") == stories[:57]
    # Only the prefix travelled: a range request for its bytes.
    assert ("/" + story_sources.TRAIN_URL, f"bytes=0-{limit - 1}") in server.requests
    # The instruction file is shorter than its 1 MB prefix: all of it, last story included.
    assert len(data.read_stories(d / "instruct.txt")) == 100
    assert data.read_stories(d / "valid.txt") == story_sources.split_stories(server.files["/" + story_sources.VALID_URL].decode())
    assert (d / "train.bin").exists() and (d / "vocab.json").exists()
    assert not any((d / "downloads").iterdir())  # the raw downloads are gone once written as stories
    # A second run keeps what is there and downloads nothing.
    server.requests.clear()
    data.main(["--base-url", server.url, "--data-dir", str(d), "--no-progress"])
    assert server.requests == []
    assert "already there" in capsys.readouterr().out


def test_download_resumes_after_an_interrupted_transfer(server, tmp_path):
    path = "/" + story_sources.VALID_URL
    body = server.files[path]
    server.drop_after[path] = 1000
    dest = tmp_path / "TinyStories-valid.txt"
    with pytest.raises(story_sources.DownloadError, match="interrupted with 1,000 bytes.*run data.py again"):
        story_sources.download(server.url + path, dest, retries=0, progress=False)
    part = tmp_path / "TinyStories-valid.txt.part"
    assert not dest.exists() and part.read_bytes() == body[:1000]  # nothing that looks complete
    story_sources.download(server.url + path, dest, retries=0, progress=False)
    assert dest.read_bytes() == body and not part.exists()
    assert server.requests[-1] == (path, "bytes=1000-")


def test_download_resumes_within_one_run(server, tmp_path):
    path = "/" + story_sources.TRAIN_URL
    server.drop_after[path] = 777
    dest = tmp_path / "prefix.txt"
    story_sources.download(server.url + path, dest, max_bytes=5000, progress=False)
    assert dest.read_bytes() == server.files[path][:5000]
    assert [r for p, r in server.requests] == ["bytes=0-4999", "bytes=777-4999"]


def test_download_from_a_server_that_ignores_ranges_starts_again(server, tmp_path):
    path = "/" + story_sources.VALID_URL
    server.drop_after[path] = 500
    server.ignore_range = True
    dest = tmp_path / "valid.txt"
    story_sources.download(server.url + path, dest, progress=False)
    assert dest.read_bytes() == server.files[path]


def test_prefix_download_from_a_server_that_ignores_ranges_stops_at_the_prefix(server, tmp_path):
    server.ignore_range = True
    path = "/" + story_sources.TRAIN_URL
    story_sources.download(server.url + path, tmp_path / "p.txt", max_bytes=3000, progress=False)
    assert (tmp_path / "p.txt").read_bytes() == server.files[path][:3000]


def test_unreachable_server_says_to_use_source(tmp_path, capsys):
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(SystemExit) as e:
        data.main(["--base-url", f"http://127.0.0.1:{port}", "--data-dir", str(tmp_path), "--no-progress"])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert "could not reach http://127.0.0.1" in err and "no network: use --source DIR, see --help" in err
    assert "Traceback" not in err
    assert not (tmp_path / "train.txt").exists()


def test_missing_file_on_the_server_is_a_clear_error(server, tmp_path, capsys):
    with pytest.raises(SystemExit):
        data.main(["--base-url", server.url + "/elsewhere", "--data-dir", str(tmp_path), "--no-progress"])
    assert "HTTP 404" in capsys.readouterr().err


def test_base_url_from_the_environment(server, tmp_path, monkeypatch):
    monkeypatch.setenv("TINYSTORIES_BASE_URL", server.url)
    args = data.build_parser().parse_args([])
    assert args.base_url == server.url


def test_data_py_removes_its_stale_temporary_files(tmp_path, capsys):
    sample_like_source(tmp_path / "src")
    d = tmp_path / "data"
    d.mkdir()
    stale = [d / ".train.txt.k3j2l9xa.tmp", d / ".train-bpe.bin.0a1b2c3d.tmp", d / ".tokenizer.bpe.zz12yy34.tmp"]
    for path in stale:
        path.write_bytes(b"\0" * 100_000)
    mine = [d / ".notes.txt.k3j2l9xa.tmp", d / "train.txt.tmp", d / ".train.txt.tmp"]
    for path in mine:
        path.write_text("not data.py's")
    data.main(["--source", str(tmp_path / "src"), "--data-dir", str(d), "--no-progress"])
    out = capsys.readouterr().out
    assert [p for p in stale if p.exists()] == []
    assert all(p.read_text() == "not data.py's" for p in mine)
    lines = [line for line in out.splitlines() if "temporary" in line]
    assert len(lines) == 1 and "3 temporary files" in lines[0] and "0.3 MB" in lines[0], out
    data.main(["--source", str(tmp_path / "src"), "--data-dir", str(d), "--no-progress"])
    assert "temporary" not in capsys.readouterr().out  # nothing left, nothing said
