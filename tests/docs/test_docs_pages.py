"""The documentation's promises that code can check: every public name of bpe has a
docstring and a place in the API reference (docs/api.md), the training animation is
drawn from what bpe.train does, and the BPE page's table of the paper's example is in
the order the code merges."""
import inspect
import re
from pathlib import Path

import pytest

import bpe
import bpe_reference as ref
from bpe.encoding import BPETokenizer, StreamDecoder
from bpe.hf_face import FaceEncoding, TransformersFace

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def public_members(cls) -> list:
    """The names of cls that are its API: the public ones it defines, and the dunders
    that mean something to a caller (the constructor, len)."""
    return [n for n in vars(cls) if not n.startswith("_") or n in ("__init__", "__len__")]


@pytest.mark.parametrize("cls", [BPETokenizer, StreamDecoder, TransformersFace, FaceEncoding])
def test_every_public_member_has_its_own_docstring(cls):
    missing = []
    for name in public_members(cls):
        member = vars(cls)[name]
        function = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
        if not (getattr(function, "__doc__", None) or "").strip():
            missing.append(name)
    assert not missing, f"{cls.__name__}: no docstring for {', '.join(missing)}"


def test_the_api_reference_names_every_public_name_of_bpe():
    page = (DOCS / "api.md").read_text(encoding="utf-8")
    missing = [n for n in bpe.__all__ if not re.search(rf"(::: bpe(\._core|\.encoding)?\.|`bpe\.){re.escape(n)}\b", page)]
    assert not missing, f"docs/api.md does not document {', '.join(missing)}"
    assert "::: bpe.encoding.StreamDecoder" in page
    # a model's tokenizer.json loads as the one class: the page says so, and names no other
    assert "HuggingFaceTokenizer" not in page and "gives a `BPETokenizer` for every byte-level BPE" in page
    # tok.as_hf()'s face, which users get without naming it
    assert "::: bpe.hf_face.TransformersFace" in page and "::: bpe.hf_face.FaceEncoding" in page


def test_the_api_reference_is_built_by_mkdocstrings_pinned_for_the_docs():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "- mkdocstrings:" in config and "api.md" in config
    pins = (ROOT / "requirements-docs.txt").read_text(encoding="utf-8")
    assert re.search(r"^mkdocstrings==\d", pins, re.M) and re.search(r"^mkdocstrings-python==\d", pins, re.M)


def test_the_training_animation_is_drawn_from_bpe_train():
    figures = pytest.importorskip("figures")
    words = b"\n".join(w.encode() + b"\xb7" for w, n in figures.PAPER_WORDS.items() for _ in range(n))
    merges, chunks, steps = figures.training_steps(words, 10)
    assert merges == ref.train(words, 10) == bpe.train(words, 10)
    assert [s["pair"] for s in steps] == [tuple(m) for m in merges]
    # Each step's top count is the pair merged, and the words after it are the
    # reference's encoding of each chunk with the merges so far.
    for k, step in enumerate(steps):
        assert step["counts"][0][0] == tuple(merges[k])
        for chunk, ids in step["words"].items():
            assert ids == ref.encode(chunk, merges[:k + 1])


def test_the_paper_example_table_is_in_the_order_the_code_merges():
    page = (DOCS / "bpe.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d) \| .*? \| `([^`]+)` → `([^`]+)` \|", page, re.M)
    assert [int(k) for k, _, _ in rows] == [0, 1, 2, 3]
    words = b"low\xb7\nlowest\xb7\nnewer\xb7\nwider\xb7"
    merges = bpe.train(words, 4)
    vocab = ref.token_bytes(merges)
    want = [(f"{vocab[a].decode('latin-1')} {vocab[b].decode('latin-1')}", vocab[256 + k].decode("latin-1"))
            for k, (a, b) in enumerate(merges)]
    assert [(pair, token) for _, pair, token in rows] == want


def test_check_examples_reports_every_failure_and_a_summary(tmp_path):
    """One example that raises does not hide the others: each failure is named by its line,
    and the last line counts them."""
    import subprocess
    import sys
    mark = "<!-- example: checked by tools/check_examples.py -->"
    example = lambda code, out: f"{mark}\n```python\n{code}\n```\n\n```text\n{out}```\n\n"  # noqa: E731
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n" + example("raise SystemExit('first broken')", "")
                    + example("print(1 + 1)", "2\n") + example("print('other')", "what the page says\n")
                    + example("import no_such_module_here", ""), encoding="utf-8")
    run = subprocess.run([sys.executable, str(ROOT / "tools/check_examples.py"), str(page)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1
    assert "page.md:3:" in run.stdout and "first broken" in run.stdout
    assert "page.md:29:" in run.stdout and "no_such_module_here" in run.stdout
    assert "page.md:20:" in run.stdout and "+other" in run.stdout
    assert run.stdout.strip().splitlines()[-1] == "4 examples: 1 as its page says, 2 failed to run, 1 printing something else"


def test_from_huggingface_given_a_hub_id_says_it_takes_a_local_file_and_how_to_get_one(tmp_path, monkeypatch):
    """The library page's promise: a hub id is not fetched, and the error says what to do."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as caught:
        BPETokenizer.from_huggingface("Qwen/Qwen2.5-7B")
    message = str(caught.value)
    assert "'Qwen/Qwen2.5-7B'" in message and "local" in message
    assert 'hf_hub_download("Qwen/Qwen2.5-7B", "tokenizer.json")' in message
    with pytest.raises(FileNotFoundError, match=r"no such file or folder: .*missing\.json"):
        BPETokenizer.from_huggingface(tmp_path / "missing.json")


# --- every figure a page quotes from a results file is that file's ------------------------

import json  # noqa: E402

RESULTS = DOCS / "results"


def flat(text: str) -> str:
    """Text with every run of whitespace one space, so that a quote may break across lines."""
    return " ".join(text.split())


def split_tier(pattern: str, tier: str, text: str = "held-out stories") -> str:
    lines = (RESULTS / "split-tiers.txt").read_text().splitlines()
    header = lines[1].split()
    for line in lines[2:]:
        if line.startswith(text) and line[len(text):].split()[0] == pattern:
            return line[len(text):].split()[header.index(tier) - 1]
    raise KeyError((pattern, tier, text))


def floor(vocabulary: str, name: str) -> str:
    rows = json.loads((RESULTS / "bench-encode.json").read_text())["floors"]
    return f"{next(r['ratio'] for r in rows if r['vocabulary'] == vocabulary and r['floor'] == name):.2f}x"


def floors(vocabulary: str, name: str) -> list[str]:
    """A floor's ratios for one vocabulary, in the order of the bench's tables (the
    stories, then Python source)."""
    rows = json.loads((RESULTS / "bench-encode.json").read_text())["floors"]
    return [f"{r['ratio']:.2f}x" for r in rows if r["vocabulary"] == vocabulary and r["floor"] == name]


def extreme_rounds(rounds: list, prefix: str) -> dict:
    """The slowest and the fastest round of a threads comparison, with their CPU ratios."""
    slow, fast = min(rounds, key=lambda r: r["ratio"]), max(rounds, key=lambda r: r["ratio"])
    return {f"{prefix}slow": f"{slow['ratio']:.2f}", f"{prefix}slow_cpu": f"{slow['cpu_ratio']:.2f}",
            f"{prefix}fast": f"{fast['ratio']:.2f}", f"{prefix}fast_cpu": f"{fast['cpu_ratio']:.2f}"}


def threads() -> dict:
    data = json.loads((RESULTS / "bench-threads.json").read_text())
    fresh = sorted(p["ratio"] for p in data["fresh_processes"])
    return {"ratio": f"{data['ratio']:.2f}", "low": f"{fresh[0]:.2f}", "high": f"{fresh[-1]:.2f}",
            "ceiling": f"{data['ceiling']['ratio']:.2f}", "n": ["one", "two", "three", "four"][len(fresh) - 1],
            "cpu": f"{data['cpu_ratio']:.2f}", "processes": f"{data['processes']['ratio']:.2f}",
            "rounds": f"{data['rounds_ratio']:.2f}", **extreme_rounds(data["rounds"], ""),
            **extreme_rounds(data["warm"]["rounds"], "warm_")}


def hf(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def import_speed() -> list:
    line = next(x for x in (RESULTS / "import-speed.txt").read_text().splitlines() if x.startswith("cl100k_base"))
    return line.split()[-2:]


def tekken_speed() -> dict:
    """The ranges that docs/library.md quotes from bpe_bench.py tekken-speed's run."""
    rows = json.loads((RESULTS / "bench-tekken-speed.json").read_text())["rows"]
    speeds = {name: [r["mb_per_s"] for r in rows if r["contender"] == name] for name in {r["contender"] for r in rows}}
    ours, theirs = speeds["bpe encode_ordinary"], speeds["mistral-common Tekkenizer.encode"]
    ratios = [a / b for a, b in zip(ours, theirs)]  # the rows come in the same order for each contender
    return {"ours": f"{min(ours):.0f} to {max(ours):.0f}", "theirs": f"{min(theirs):.1f} to {max(theirs):.1f}",
            "ratio": f"{min(ratios):.0f} to {max(ratios):.0f}",
            "tiktoken": "{0:.0f} to {1:.0f}".format(*sorted(speeds["tiktoken encode_ordinary (under it)"])[::3])}


def sentencepiece_speed() -> dict:
    """The ranges that docs/library.md quotes from bpe_bench.py sentencepiece-speed's run."""
    rows = json.loads((RESULTS / "bench-sentencepiece-speed.json").read_text())["rows"]
    speeds: dict = {}
    for r in rows:
        speeds.setdefault(r["contender"], []).append(r["mb_per_s"])
    cells: dict = {}
    for r in rows:
        cells.setdefault((r["model"], r["text"]), {})[r["contender"]] = r["mb_per_s"]
    array, lists = "bpe encode_array(threads=1)", "bpe encode_ordinary"
    to_sp = {name: [c[name] / c["sentencepiece encode"] for c in cells.values()] for name in (array, lists)}
    lists_to_giga = [c[lists] / c["gigatoken encode"] for c in cells.values()]

    def span(values, digits=0):
        return f"{min(values):.{digits}f} to {max(values):.{digits}f}"
    return {"ordinary": span(speeds[lists]), "array": span(speeds[array]),
            "giga": span(speeds["gigatoken encode"]), "sp": span(speeds["sentencepiece encode"], 1),
            "lists_to_sp": span(to_sp[lists], 1), "array_to_sp": span(to_sp[array], 1),
            "lists_to_giga": span(lists_to_giga, 1), "rows": len(cells),
            "mismatches": sum(r["mismatched_lines"] for r in rows)}


def pipeline_load() -> str:
    return re.search(r"load before: (\S+)", (RESULTS / "pipeline-run.txt").read_text().splitlines()[0])[1]


# (page, the quote as the page writes it, built from the file it cites)
QUOTES = [
    ("docs/engine.md", lambda: f"the gpt2 rule, {split_tier('gpt2', 'sse2')} GB/s in SSE2, {split_tier('gpt2', 'avx2')} "
                               f"in AVX2 and {split_tier('gpt2', 'avx512')} in AVX-512, against "
                               f"{split_tier('gpt2', 'portable')} GB/s a chunk at a time"),
    ("docs/engine.md", lambda: "In the saved run 2 threads did {ratio}x the work of one ({low}-{high}x in {n} fresh "
                               "processes) while the ceiling was {ceiling}x".format(**threads())),
    ("docs/engine.md", lambda: "the same work in two processes that share nothing did {processes}x".format(**threads())),
    ("docs/engine.md", lambda: "also takes, was {rounds}x".format(**threads())),
    ("docs/engine.md", lambda: "time that one does, and in the saved run they took {cpu}x".format(**threads())),
    ("docs/engine.md", lambda: "together: {fast}x with {fast_cpu}x the CPU time, {slow}x with {slow_cpu}x".format(
        **threads())),
    ("docs/engine.md", lambda: "in the same rounds, from {warm_slow}x with {warm_slow_cpu}x the CPU time to "
                               "{warm_fast}x with {warm_fast_cpu}x".format(**threads())),
    ("README.md", lambda: f"gigatoken's `encode_batch`: {floor('gpt2', 'warm batch: ours >= 1x gigatoken' + chr(39) + 's batch call')} "
                          f"on GPT-2, {floor('cl100k', 'warm batch: ours >= 1x gigatoken' + chr(39) + 's batch call')} on cl100k"),
    ("README.md", lambda: "({0} and {1} on GPT-2's stories and source, {2} and {3} on cl100k's)".format(
        *floors("gpt2", "warm (new str) arrays: ours >= 1x gigatoken"),
        *floors("cl100k", "warm (new str) arrays: ours >= 1x gigatoken"))),
    ("docs/library.md", lambda: "a 150,000-token file loads in {0:.1f} to {1:.1f} times Hugging Face's".format(
        *sorted(hf(f)["ratio_ours_to_hf"] for f in ("hf-load-time.json", "hf-load-time-pairs.json",
                                                     "hf-load-time-llama.json"))[::2])),
    ("docs/library.md", lambda: "({0} s against tiktoken's {1} s in".format(*import_speed())),
    ("docs/index.md", lambda: f"gives a load of {pipeline_load()} at its start"),
    ("docs/library.md", lambda: "our `encode_ordinary` ran {ours} MB/s and mistral-common's `Tekkenizer.encode` {theirs} "
                                "MB/s, {ratio} times as fast (the tiktoken `Encoding` under it, without mistral-common's "
                                "step that adds 1,000 to every id, {tiktoken} MB/s)".format(**tekken_speed())),
    ("docs/library.md", lambda: "{mismatches} lines differed from sentencepiece's, ours or gigatoken's, in its "
                                "{rows} rows; our `encode_ordinary` ran {ordinary} MB/s, `encode_array(threads=1)` "
                                "{array} MB/s, gigatoken's `Tokenizer.from_sentencepiece` {giga} MB/s and "
                                "sentencepiece's `encode` {sp} MB/s. sentencepiece's `encode` returns a list, so "
                                "lists are set against it: our `encode_ordinary` ran {lists_to_sp} times its speed (our "
                                "arrays {array_to_sp} times), and {lists_to_giga} times gigatoken's arrays".format(
                                    **sentencepiece_speed())),
    ("README.md", lambda: "without a GPU** at {0} UTC (the transcript's first line".format(
        (RESULTS / "pipeline-run.txt").read_text().split(" UTC", 1)[0].lstrip("# "))),
]


@pytest.mark.parametrize("page, quote", QUOTES, ids=[f"{p}-{k}" for k, (p, _) in enumerate(QUOTES)])
def test_a_figure_the_page_quotes_is_its_results_files(page, quote):
    expected = quote()
    assert flat(expected) in flat((ROOT / page).read_text(encoding="utf-8")), \
        f"{page} should say, from its results file: {expected}"


# (page, where the section starts, where it ends, the files it quotes, numbers it may hold that they do not)
SECTIONS = [
    ("README.md", "What each step prints", "For the episode's full-size run",
     ["pipeline-run.txt", "samples.txt"], {"13.8", "3.0"}),  # the model size (model.py); 1.3325 / 1.2934 - 1 as a percentage
    ("docs/library.md", "$ python bpe_bench.py train-memory", "- `threads=0` counts", ["train-memory.txt"], set()),
]


@pytest.mark.parametrize("page, start, end, files, allowed", SECTIONS, ids=[s[0] for s in SECTIONS])
def test_every_number_of_a_quoting_section_is_in_its_results_files(page, start, end, files, allowed):
    text = (ROOT / page).read_text(encoding="utf-8")
    section = text[text.index(start):text.index(end, text.index(start))]
    source = "".join((RESULTS / f).read_text(encoding="utf-8") for f in files)
    numbers = set(re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?", section)) - allowed
    # A whole number of the file, not a part of a longer one ("90" is not in "1905").
    missing = sorted(n for n in numbers if len(n.strip(",")) > 1
                     and not re.search(rf"(?<![\d.]){re.escape(n.strip(','))}(?![\d])", source))
    assert not missing, f"{page}: {missing} are in no file of {files}"


def test_the_package_readme_reads_on_a_package_index():
    """pyproject's readme is shown by a package index, where a relative link goes nowhere."""
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    name = re.search(r'^readme = "([^"]+)"', config, re.M)[1]
    text = (ROOT / name).read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)]+)\)|<img [^>]*src=\"([^\"]+)\"", text)
    relative = [a or b for a, b in links if not re.match(r"https?://", a or b)]
    assert not relative, f"{name} has links that break on a package index: {relative}"
    assert name in (ROOT / "MANIFEST.in").read_text(encoding="utf-8")
    # it installs as the README does
    assert "pip install ." in text and "pip install heapbpe" in text and "once wheels are published" in text


def test_the_readmes_first_install_line_is_one_that_works_today():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"^```\n(pip install[^\n]*)", readme, re.M)[1]
    assert first.strip() == "pip install .", first


def test_what_the_pages_say_a_models_tokenizer_json_gives_is_what_it_does(tmp_path):
    """The library page's account of a model's tokenizer.json and the front pages' rows, against
    the class on a tokenizer.json of Qwen's shape (as tests/huggingface/test_huggingface_models.py builds it)."""
    pytest.importorskip("tokenizers")
    models = pytest.importorskip("test_huggingface_models")
    path = tmp_path / "tokenizer.json"
    models.shape("qwen2").save(str(path))
    tok = BPETokenizer.from_huggingface(path)
    assert type(tok) is BPETokenizer and tok.rules is not None
    library = flat((DOCS / "library.md").read_text(encoding="utf-8"))
    front = [flat((ROOT / p).read_text(encoding="utf-8")) for p in ("README.md", "docs/index.md")]
    assert "the result is a `BPETokenizer`" in library

    ids, offsets = tok.encode_with_offsets("a cat")
    assert ids == tok.encode("a cat") and offsets.shape == (len(ids), 2)
    assert BPETokenizer.load(tok.save(tmp_path / "x.bpe")) == tok
    assert BPETokenizer.from_huggingface(tok.save_huggingface(tmp_path / "back.json")) == tok
    for save in (lambda: tok.save_tiktoken(tmp_path / "x.tiktoken"),
                 lambda: tok.save_gpt2(tmp_path / "v.json", tmp_path / "m.txt")):
        with pytest.raises(ValueError, match="normalizer"):  # NFC: neither format holds it
            save()
    assert "otherwise refuse in one line naming what the format cannot hold" in library
    assert all("(a model's `tokenizer.json`: `save_tiktoken` and `save_gpt2` only where its rules fit them)" in page
               for page in front)

    # threads are the core's: a count it refuses is refused here too
    with pytest.raises(ValueError):
        tok.encode_batch(["a cat"], threads=bpe.MAX_THREADS + 1)
    assert "taken and not used" not in library

    dtype = tok.encode_to_numpy("a cat").dtype
    assert ("| `encode_to_numpy` | `encode_array`'s compact dtype" in library) == (dtype != "uint32")


def test_the_differences_from_tiktoken_are_what_the_code_does():
    import inspect
    import numpy as np
    section = flat((DOCS / "library.md").read_text(encoding="utf-8").split("### Differences from tiktoken", 1)[1]
                   .split("\n#", 1)[0])
    tok = BPETokenizer.train(["the cat sat on the mat"] * 20, vocab_size=270)
    for name in ("encode_batch", "encode_ordinary_batch", "encode_array", "count"):
        assert inspect.signature(getattr(BPETokenizer, name)).parameters["threads"].default == 0, name
    assert "`threads=0` (and `num_threads=0`) means as many threads as the text's size pays for" in section
    assert bpe._core.threads_for(127 * 1024, 0) == 1 and "one below 128 KB" in section
    assert bpe._core.BYTES_PER_THREAD == 64 * 1024
    assert tok.encode_to_numpy("the cat").dtype == np.uint32 and tok.encode_array("the cat").dtype == np.uint16
    assert "`encode_to_numpy` returns uint32" in section and "returns uint16 when `n_vocab` is 65,536 or less" in section
    assert tok.eot_token is None and "`eot_token`** is `None`" in section
    assert isinstance(tok.special_tokens, tuple) and tok.count("the cat") == len(tok.encode("the cat"))
    from bpe import registry
    assert "tiktoken" not in str(registry.cache_dir()) and "`~/.cache/bpe` (`$BPE_CACHE_DIR`)" in section
