"""The benchmark (bpe_bench.py, bench/). Its texts: the pieces it hands to libraries
that take a list or refuse long texts must hold exactly the chunks of the whole text,
under every split rule, or a peer's ids would differ for a reason of the benchmark's
making. Its registry of peers: every loader loads, and gives our ids where it can. Its
table helper: what is printed is what is recorded."""
import importlib.util
import json
import os
import time
from pathlib import Path

import pytest

import bpe_bench
from bench import SPECIAL_TOKENS, encode, measure, peers, texts, worker
from sample_text import made_up_stories
from vocabularies import cl100k_path, gpt2_files

bpe = pytest.importorskip("bpe")

# Places where a careless cut would split a chunk: GPT-4's punctuation takes the new
# lines after it (".\n"), whitespace runs hold new lines, contractions, \r\n, digits.
TRICKY = ("Once upon a time.\nThe end.\n\nHe said: 'hi'\r\nit's 12345 o'clock  \n  x = f(1, 2)\n"
          "\tdef g():\n        return 3\n\n\nZoé, 東京 and 🙂.\nA\nb\n\n")


def chunks(text: str, pattern: str) -> list[bytes]:
    return bpe.pretokenize(text.encode("utf-8"), pattern)


@pytest.mark.parametrize("pattern", ["default", "gpt2", "gpt4"])
@pytest.mark.parametrize("size", [5, 40, 300])
def test_pieces_hold_the_chunks_of_the_whole_text(pattern, size):
    text = TRICKY * 3 + made_up_stories(3000) + bpe_bench.generated_words(2000, seed=1)
    parts = bpe_bench.pieces(text, size)
    assert "".join(parts) == text
    assert len(parts) > 5  # it did cut
    assert [c for part in parts for c in chunks(part, pattern)] == chunks(text, pattern)


@pytest.mark.parametrize("pattern", ["default", "gpt2", "gpt4"])
def test_cut_to_is_a_prefix_that_ends_between_chunks(pattern):
    text = TRICKY * 20
    for size in (30, 100, 333):
        head = bpe_bench.cut_to(text, size)
        assert text.startswith(head) and 0 < len(head.encode("utf-8")) <= size
        assert chunks(head, pattern) == chunks(text, pattern)[:len(chunks(head, pattern))]


def test_a_text_without_a_safe_place_is_not_cut():
    assert bpe_bench.last_safe_cut("12 three.\n") == 0  # a digit before the space, and nothing after the new line
    assert bpe_bench.last_safe_cut("said:\n\nOnce") == 0
    assert bpe_bench.last_safe_cut("Once upon") == len("Once")
    assert bpe_bench.pieces("x1 " * 30, 20) == ["x1 " * 30]


@pytest.mark.parametrize("pattern", ["default", "gpt2", "gpt4"])
def test_halves_hold_the_chunks_of_the_whole_text(pattern):
    text = TRICKY * 40 + made_up_stories(3000)
    first, second = texts.halves(text)
    assert first + second == text
    assert len(text) // 4 < len(first) <= len(text) // 2
    assert chunks(first, pattern) + chunks(second, pattern) == chunks(text, pattern)


def test_interleaved_takes_each_calls_cpu_time_beside_its_wall_time():
    def spin(_):
        start = time.process_time()
        while time.process_time() - start < 0.02:
            pass

    contenders = [measure.Contender("spin", "", lambda: None, spin),
                  measure.Contender("sleep", "", lambda: None, lambda _: time.sleep(0.02))]
    cpu = {}
    wall = measure.interleaved(contenders, 3, cpu=cpu)
    assert [len(cpu[c.name]) for c in contenders] == [3, 3]
    assert min(cpu["spin"]) >= 0.02 and max(cpu["sleep"]) < 0.01
    assert min(wall["sleep"]) >= 0.02


def test_generated_words_are_the_same_for_a_seed_and_mostly_new():
    a = bpe_bench.generated_words(20_000, seed=3)
    assert a == bpe_bench.generated_words(20_000, seed=3)
    assert a != bpe_bench.generated_words(20_000, seed=4)
    words = a.split()
    assert len(set(words)) > 0.5 * len(words)


# ---------------------------------------------------------------------------------------
# The registry of peers (bench/peers.py), its workers (bench/worker.py) and the table
# helper (bench/measure.py).

TINY = ("Once upon a time, a little dog said: 'it's 12 o'clock!'\nThe cat  sat.\n\tdef f(x):\n"
        "        return x + 1\n\nZoé, 東京 and 🙂.\n")


def tiny_vocabulary(name: str, tmp_path: Path):
    """The benchmark's Vocabulary for `name`, and the files its loaders read (skips
    what this machine lacks)."""
    if name == "ours":
        train = made_up_stories(60_000)
        tok = bpe.BPETokenizer.train(train, 600, special_tokens=SPECIAL_TOKENS, progress=False)
        vocab = encode.Vocabulary("ours", "ours", tok, {})
    elif name == "gpt2":
        files = gpt2_files()
        vocab = encode.Vocabulary("gpt2", "GPT-2's", bpe.BPETokenizer.from_gpt2(*files),
                                  {"files": [str(f) for f in files]})
    else:
        path = cl100k_path()
        vocab = encode.Vocabulary("cl100k", "cl100k", bpe.BPETokenizer.from_tiktoken(path), {"file": str(path)})
    train_text = tmp_path / "train.txt"
    train_text.write_text(made_up_stories(60_000), encoding="utf-8")
    texts = {"tiny": tmp_path / "tiny.txt", "tiny (warm-up)": tmp_path / "warm.txt"}
    texts["tiny"].write_text(TINY * 3, encoding="utf-8")
    texts["tiny (warm-up)"].write_text(made_up_stories(5000, seed=7), encoding="utf-8")
    files = encode.vocabulary_files(vocab, tmp_path, {k: str(v) for k, v in texts.items()}, train_text)
    return vocab, files


@pytest.mark.parametrize("vocabulary", ["ours", "gpt2", "cl100k"])
def test_every_registry_loader_loads_and_gives_checked_ids(vocabulary, tmp_path):
    vocab, files = tiny_vocabulary(vocabulary, tmp_path)
    expected = worker.as_uint32(vocab.tokenizer.encode_ordinary(TINY * 3))
    tried = 0
    for peer in peers.PEERS:
        if vocabulary not in peer.loaders or importlib.util.find_spec(peer.module) is None:
            continue
        w = worker.Worker(peer.library, files, cpu=None)
        try:
            for kind in ("lists", "arrays"):
                if peer.call(kind) is None:
                    continue
                got = w.ask("check", "tiny", kind)
                tried += 1
                if vocabulary in peer.differs:
                    assert got != expected, f"{peer.library} {kind}: said to differ, but gives our ids"
                else:
                    assert got == expected, f"{peer.library} {kind} ({peer.loaders[vocabulary].how})"
                timed = w.ask("time", "tiny", kind, "warm", "tiny (warm-up)")
                assert timed["tokens"] == len(got) // 4 and timed["wall_s"] > 0 and timed["load_s"] >= 0
                assert w.ask("time", "tiny", kind, "warm_new", "tiny (warm-up)")["tokens"] == timed["tokens"]
        finally:
            w.close()
        assert w.process.returncode == 0
    assert tried >= 2  # ours, lists and arrays, at least


def test_the_registry_has_one_entry_per_library_and_ours_first():
    assert peers.PEERS[0] is peers.OURS and peers.OURS.library == "bpe"
    assert len(peers.REGISTRY) == len(peers.PEERS)
    for peer in peers.PEERS:
        assert peer.loaders and (peer.lists or peer.arrays), peer.library
        assert set(peer.differs) <= set(peer.loaders), peer.library
        assert peer.colour.startswith("#") and peers.COLOURS[peer.library] == peer.colour
    assert len(set(peers.COLOURS.values())) == len(peers.COLOURS)  # no two libraries look alike


def test_a_loader_that_fails_is_an_error_with_its_message_not_a_hang(tmp_path):
    files = tmp_path / "files.json"
    files.write_text(json.dumps({"name": "ours", "bpe": str(tmp_path / "missing.bpe"), "texts": {}}), encoding="utf-8")
    w = worker.Worker("bpe", files, cpu=None)
    try:
        with pytest.raises(worker.WorkerError, match="missing.bpe"):
            w.ask("check", "tiny", "lists")
    finally:
        w.close()


def test_a_worker_is_pinned_from_its_start(tmp_path):
    if not measure.affinity_supported():
        pytest.skip("no sched_setaffinity here")
    _, files = tiny_vocabulary("ours", tmp_path)
    cpu = max(os.sched_getaffinity(0))
    w = worker.Worker("bpe", files, cpu=cpu)
    try:
        assert w.hello["cpus"] == [cpu]
        assert w.ask("split", "tiny", "default")["chunks"] == len(bpe.pretokenize((TINY * 3).encode(), "default"))
    finally:
        w.close()


class Said:
    def __init__(self):
        self.lines, self.data = [], {}

    def say(self, line=""):
        self.lines.append(line)


def test_a_table_row_is_printed_and_recorded_in_one_call():
    report = Said()
    columns = [measure.Column("name", "", -8), measure.Column("mb_per_s", "MB/s", 7),
               measure.Column("ratio", "x", 5, ".2f"), measure.Column("ids", "ids", -1)]
    table = measure.Table(report, "A title", columns, kind="lists")
    row = table.row(name="ours", mb_per_s=218.04, ratio=1.0, ids="(ours)", samples_s=[0.1, 0.2])
    table.row(name="peer", ids="failed")  # nothing timed: dashes
    table.line("a note")
    data = table.done()
    assert report.lines == ["A title", "            MB/s     x ids", "ours       218.0  1.00 (ours)",
                            "peer           -     - failed", "a note", ""]
    assert report.data["tables"] == [data]
    assert data["rows"][0] is row and data["rows"][0]["samples_s"] == [0.1, 0.2]
    assert data["kind"] == "lists" and data["lines"] == ["a note"]
    assert json.loads(json.dumps(data)) == data  # what is recorded is JSON


def test_warm_with_a_new_str_each_call_gets_an_equal_str_of_its_own():
    text = "Ünïcode text, " * 1000
    made = worker.new_str(text)
    assert made == text and made is not text
    assert set(worker.MODES) >= {"warm", "warm_new", "cold"}
    assert "same str" in worker.MODES["warm"] and "new str" in worker.MODES["warm_new"]


def test_the_floors_say_met_and_not_met():
    # Warm by both definitions (the same str each round, and a new str each call), each
    # against its own floor in bench/encode.py, and cold.
    def row(library, warm, new, cold):
        return {"library": library, "warm": {}, "warm_mb_per_s": warm, "warm_new_mb_per_s": new, "cold_mb_per_s": cold}
    table = {"vocabulary": "gpt2", "kind": "arrays", "rows": [row("bpe", 300, 240, 200), row("gigatoken", 320, 260, 260),
                                                              row("tiktoken", 20, 20, 20)]}
    verdicts = {v["floor"]: v["met"] for v in encode.floor_verdicts(table)}
    assert verdicts == {"warm (same str) arrays: ours >= 0.9x gigatoken": True,
                        "warm (new str) arrays: ours >= 1x gigatoken": False,
                        "cold arrays: ours >= 0.8x gigatoken": False, "cold arrays: ours >= 0.8x tiktoken": True}
    lists = {"vocabulary": "cl100k", "kind": "lists", "rows": [row("bpe", 300, 240, 200), row("fastokens", 290, 250, 200)]}
    assert {v["floor"]: v["met"] for v in encode.floor_verdicts(lists)} == {
        "warm (same str) lists: ours >= 1x fastokens": True, "cold lists: ours >= 0.8x fastokens": True}
    assert encode.floor_verdicts(dict(table, vocabulary="ours")) == []


def test_figures_take_their_colours_from_the_registry():
    import figures
    assert figures.COLOURS is peers.COLOURS  # one copy, the registry's
