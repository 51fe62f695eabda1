"""Mistral's Tekken files (tekken.json, bpe/tekken.py): BPETokenizer.from_tekken gives
mistral-common's ids on the two files it ships, over stories, Python source and text in
many scripts, with and without its control tokens in the text; every method of the
class works on it; the generic loaders pick the file by what it holds; and a file that
would give other ids is refused by name.

The shipped files come with mistral-common (requirements-tekken.txt says how to install
it, as .ci/run does): they are found in the installed package without importing it, and the
tests that call its Tekkenizer import it. Small Tekken files made here test the rest
without it.
"""
import base64
import functools
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import bpe
from bpe import BPETokenizer, formats, tekken
from sample_text import SCRIPTS_AND_EMOJI, SPECIAL_CORNERS, SPLIT_CORNERS, TRICKY_TEXT, made_up_stories
from vocabularies import SHARED_DATA

ROOT = Path(__file__).resolve().parents[2]
STORIES = SHARED_DATA / "tinystories" / "valid-sample.txt"
SHIPPED = ["tekken_240718.json", "tekken_240911.json"]
NEEDS_MISTRAL = "pip install -r requirements-tekken.txt, then pip install --no-deps mistral-common==1.13.1, to check it"

# Text in many scripts: accents composed and decomposed, Cyrillic, Greek, Arabic and
# Hebrew (right to left), Devanagari, Thai, CJK, Hangul (syllables and jamo), emoji with
# joiners and skin tones, digits of other scripts, odd spaces and line breaks.
MULTILINGUAL = [
    SCRIPTS_AND_EMOJI, SPLIT_CORNERS, TRICKY_TEXT, SPECIAL_CORNERS,
    "Café crème brûlée, naïve façade, Ångström, Œuvre, straße, ÆØÅ æøå.",
    "Cafe\u0301 cre\u0300me bru\u0302le\u0301e, nai\u0308ve, A\u030angstro\u0308m, \u1e9b\u0323 q\u0307\u0323.",
    "Привет, мир! Съешь же ещё этих мягких французских булок, да выпей чаю. ЁЖИК в тумане.",
    "Ελληνικά: Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. ΑΒΓ αβγ.",
    "مرحبا بالعالم! هذه جملة عربية مع أرقام ١٢٣٤٥ وعلامات ترقيم؟ שלום עולם.",
    "नमस्ते दुनिया, यह हिंदी का वाक्य है। ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "你好，世界！我们一起学习自然语言处理。日本語の文章、カタカナとひらがな。한국어 문장입니다. \u1100\u1161\u11a8",
    "emoji: 👩\u200d💻 👨\u200d👩\u200d👧\u200d👦 👍🏿 🏳️\u200d🌈 🇺🇳 ❤️\u200d🔥 🫠 and text🙂between",
    "tabs\tand  spaces   \n\n\r\n  \u00a0\u2003\u3000 lines\u2028\u2029end \ufeffBOM\ufffd U+FFFD",
    "CamelCaseWords HTTPServer getHTTPResponse iPhone McDonald's DON'T we'll 1,234,567.89 3.14e-10",
]
# Mistral's control tokens written in text.
CONTROL_TEXT = ("<s>[INST] Hello [/INST] Hi!</s> [IMG][IMG_BREAK][IMG_END] <unk><pad> [TOOL_CALLS]"
                "[AVAILABLE_TOOLS][/AVAILABLE_TOOLS] <SPECIAL_20> <SPECIAL_999> [SYSTEM_PROMPT]x[/SYSTEM_PROMPT] "
                "[INST[INST]] </s</s>> <s>a</s>")


def shipped_path(name: str) -> Path | None:
    """A Tekken file that mistral-common ships, found without importing the package
    (find_spec of a top-level package runs none of its code), or None."""
    spec = importlib.util.find_spec("mistral_common")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "data" / name
        if path.is_file():
            return path
    return None


@pytest.fixture(scope="module", params=SHIPPED)
def shipped(request):
    """(path, our tokenizer) for each shipped file."""
    path = shipped_path(request.param)
    if path is None:
        pytest.skip(NEEDS_MISTRAL)
    return path, BPETokenizer.from_tekken(path)


@pytest.fixture(scope="module")
def theirs(shipped):
    """mistral-common's Tekkenizer on the same file."""
    module = pytest.importorskip("mistral_common.tokens.tokenizers.tekken", reason=NEEDS_MISTRAL)
    return module.Tekkenizer.from_file(shipped[0])


def stories() -> str:
    if not STORIES.is_file():
        pytest.skip(f"no held-out stories at {STORIES} (the shared data folder: set BPE_SHARED_DATA)")
    return STORIES.read_text(encoding="utf-8")


def python_source() -> list[str]:
    return [path.read_text(encoding="utf-8") for path in sorted(ROOT.glob("*.py")) + sorted((ROOT / "bpe").rglob("*.py"))]


def spliced(theirs, tok, text: str) -> list[int]:
    """mistral-common's ids for text whose control-token text stands for the tokens, as a
    chat template lays them out: each special as its id, the text between encoded."""
    ids, rest = [], text
    while rest:
        found = [(rest.find(s), -len(s), s) for s in tok.special_tokens if s in rest]
        if not found:
            return ids + theirs.encode(rest, bos=False, eos=False)
        at, _, special = min(found)
        ids += theirs.encode(rest[:at], bos=False, eos=False) + [tok.special_ids[special]]
        rest = rest[at + len(special):]
    return ids


# --- mistral-common's ids ------------------------------------------------------------------

def test_the_ids_are_mistral_commons_on_the_stories(shipped, theirs):
    _, tok = shipped
    text = stories()
    documents = [d for d in text.split("\n\n") if d]
    assert tok.encode_ordinary(text) == theirs.encode(text, bos=False, eos=False)
    assert tok.encode_ordinary_batch(documents[:2000]) == [theirs.encode(d, bos=False, eos=False)
                                                           for d in documents[:2000]]


def test_the_ids_are_mistral_commons_on_python_source(shipped, theirs):
    _, tok = shipped
    sources = python_source()
    assert len(sources) > 20
    assert tok.encode_ordinary_batch(sources) == [theirs.encode(s, bos=False, eos=False) for s in sources]


@pytest.mark.parametrize("k", range(len(MULTILINGUAL)))
def test_the_ids_are_mistral_commons_in_many_scripts(shipped, theirs, k):
    _, tok = shipped
    text = MULTILINGUAL[k]
    assert tok.encode_ordinary(text) == theirs.encode(text, bos=False, eos=False)
    assert tok.decode(tok.encode_ordinary(text)) == text


@settings(max_examples=150, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_the_ids_are_mistral_commons_on_any_text(shipped, theirs, text):
    _, tok = shipped
    assert tok.encode_ordinary(text) == theirs.encode(text, bos=False, eos=False)


def test_control_token_text(shipped, theirs):
    """mistral-common's encode reads no control token in text: encode_ordinary gives its
    ids. encode(allowed_special="all") gives each its id, as a chat template puts it;
    encode with the defaults refuses the text, as tiktoken does."""
    _, tok = shipped
    assert tok.encode_ordinary(CONTROL_TEXT) == theirs.encode(CONTROL_TEXT, bos=False, eos=False)
    assert tok.encode(CONTROL_TEXT, disallowed_special=()) == theirs.encode(CONTROL_TEXT, bos=False, eos=False)
    ids = tok.encode(CONTROL_TEXT, allowed_special="all")
    assert ids == spliced(theirs, tok, CONTROL_TEXT)
    assert ids[:2] == [theirs.bos_id, tok.special_ids["[INST]"]] and tok.special_ids["<SPECIAL_999>"] in ids
    assert tok.encode("[INST]", allowed_special={"[INST]"}) == [3]
    with pytest.raises(ValueError, match=r"\[INST\]"):
        tok.encode("a [INST] b")


def test_a_chat_laid_out_by_mistral_common_encodes_back_to_its_ids(shipped):
    """A chat as mistral-common's template encodes it, decoded with its specials kept,
    gives the same ids back through encode(allowed_special="all")."""
    pytest.importorskip("mistral_common.tokens.tokenizers.mistral", reason=NEEDS_MISTRAL)
    from mistral_common.protocol.instruct.messages import AssistantMessage, SystemMessage, UserMessage
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    path, tok = shipped
    chat = MistralTokenizer.from_file(str(path)).encode_chat_completion(ChatCompletionRequest(messages=[
        SystemMessage(content="Be brief."), UserMessage(content="Hello there, 你好!"),
        AssistantMessage(content="Hi! Привет."), UserMessage(content="Bye\n\n  now")]))
    theirs = MistralTokenizer.from_file(str(path)).instruct_tokenizer.tokenizer
    text = theirs.decode(chat.tokens, special_token_policy=SpecialTokenPolicy.KEEP)
    assert tok.decode(chat.tokens) == text
    assert tok.encode(text, allowed_special="all") == chat.tokens


def test_decode_keeps_the_specials_as_mistral_commons_keep_policy(shipped, theirs):
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy

    _, tok = shipped
    for text in [CONTROL_TEXT, *MULTILINGUAL]:
        ids = tok.encode(text, allowed_special="all")
        assert tok.decode(ids) == theirs.decode(ids, special_token_policy=SpecialTokenPolicy.KEEP) == text
        ordinary = [i for i in ids if not tok.is_special_token(i)]  # their default, IGNORE, drops the specials
        assert tok.decode(ordinary) == theirs.decode(ids)
    assert [tok.decode_single_token_bytes(i) for i in (0, 1, 2, 999)] == \
        [theirs.id_to_byte_piece(i, SpecialTokenPolicy.KEEP) for i in (0, 1, 2, 999)]


def test_the_split_is_the_files_pattern(shipped):
    """The file's regex splits the text, as Python's regex module reads it. (The ids
    alone would hardly tell: this vocabulary has no token across the places where
    GPT-4o's rule, say, cuts otherwise, its contractions and runs of digits.)"""
    regex = pytest.importorskip("regex")
    path, tok = shipped
    pattern = json.loads(path.read_text(encoding="utf-8"))["config"]["pattern"]
    assert tok.pattern == pattern
    for text in [*MULTILINGUAL, "It's 12345 DON'T you're HTTPServer", CONTROL_TEXT]:
        assert [c.decode() for c in bpe.pretokenize(text.encode(), tok.pattern)] == regex.findall(pattern, text)


def test_the_numbering(shipped, theirs):
    """Special tokens first, the vocabulary cut at default_vocab_size after them."""
    _, tok = shipped
    assert tok.n_vocab == theirs.n_words == 131072
    assert len(tok.special_tokens) == theirs.num_special_tokens == 1000
    assert tok.special_ids["<s>"] == theirs.bos_id and tok.special_ids["</s>"] == theirs.eos_id
    assert list(tok.special_ids.values()) == list(range(1000))
    for i in (1000, 1001, 1255, 1256, 5000, 131071):
        assert tok.decode_single_token_bytes(i) == theirs.id_to_byte_piece(i)


def test_the_cut_vocabulary_is_not_used(shipped):
    """A rank past the cut is no token: its bytes encode as the tokens below the cut."""
    path, tok = shipped
    vocab = json.loads(path.read_text(encoding="utf-8"))["vocab"]
    assert len(vocab) > 131072 - 1000
    past = [base64.b64decode(vocab[r]["token_bytes"]) for r in range(140000, 140050)]
    for data in past:
        text = data.decode("utf-8", errors="ignore")
        assert max(tok.encode_ordinary(text), default=0) < 131072
        assert tok.token_to_id(data) is None


# --- every method ---------------------------------------------------------------------------

def test_every_method_agrees(shipped):
    _, tok = shipped
    texts = [CONTROL_TEXT, *MULTILINGUAL, made_up_stories(20_000)]
    for text in texts:
        ids = tok.encode(text, allowed_special="all")
        assert tok.encode_array(text, allowed_special="all").tolist() == ids
        assert tok.encode_array(text, allowed_special="all", threads=2).tolist() == ids
        assert tok.count(text, allowed_special="all") == len(ids)
        got, offsets = tok.encode_with_offsets(text, allowed_special="all")
        assert got == ids and offsets.shape == (len(ids), 2)
        decoder = tok.decoder()
        assert "".join(decoder.add(i) for i in ids) + decoder.flush() == text
    assert tok.encode_batch(texts, allowed_special="all", threads=2) == [tok.encode(t, allowed_special="all")
                                                                         for t in texts]
    flat, offsets = tok.encode_ordinary_batch_flat(texts)
    assert flat.dtype == np.uint32
    assert [flat[offsets[k]:offsets[k + 1]].tolist() for k in range(len(texts))] == \
        tok.encode_ordinary_batch(texts)
    assert tok.decode_batch(tok.encode_batch(texts, allowed_special="all")) == texts


def test_offsets_cover_the_text(shipped):
    _, tok = shipped
    text = "Hello, мир! 你好 [INST]x"
    ids, offsets = tok.encode_with_offsets(text, allowed_special="all")
    assert "".join(text[a:b] for a, b in offsets) == text
    assert text[slice(*offsets[ids.index(3)])] == "[INST]"


def test_save_and_load_give_the_same_ids(shipped, tmp_path):
    path, tok = shipped
    back = BPETokenizer.load(tok.save(tmp_path / "tekken.bpe"))
    assert back == tok and back.name == path.stem
    text = CONTROL_TEXT + "".join(MULTILINGUAL)
    assert back.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")
    assert back.special_ids == tok.special_ids


def test_save_tiktoken_writes_the_ids_as_ranks(shipped, tmp_path):
    """A .tiktoken file holds each ordinary token's id as its rank; with the pattern and
    special ids given, tiktoken and from_tiktoken give our ids from it."""
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    _, tok = shipped
    out = tmp_path / "tekken.tiktoken"
    tok.save_tiktoken(out)
    ranks = load_tiktoken_bpe(str(out))
    assert min(ranks.values()) == 1000 and max(ranks.values()) == 131071
    theirs = tiktoken.Encoding("tekken", pat_str=tok.pattern, mergeable_ranks=ranks, special_tokens=tok.special_ids)
    text = CONTROL_TEXT + "".join(MULTILINGUAL)
    assert theirs.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")
    assert BPETokenizer.from_tiktoken(out, pattern=tok.pattern, special_ids=tok.special_ids) == tok


def test_save_huggingface(shipped, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    _, tok = shipped
    out = tok.save_huggingface(tmp_path / "tokenizer.json")
    theirs = tokenizers.Tokenizer.from_file(str(out))
    for text in MULTILINGUAL:
        assert theirs.encode(text, add_special_tokens=False).ids == tok.encode_ordinary(text)


# --- loading by content -----------------------------------------------------------------------

def test_the_command_takes_it(shipped, tmp_path):
    path, tok = shipped
    info = subprocess.run([sys.executable, "-m", "bpe", "info", "-t", str(path)], capture_output=True, cwd=ROOT,
                          timeout=300)
    out = info.stdout.decode()
    assert info.returncode == 0, info.stderr.decode()
    assert f"tokenizer: {path.name}" in out and "1,000 special" in out and "ids 0 to 131,071" in out
    assert "<s> = 1" in out and "and 960 more (<SPECIAL_40> = 40 to <SPECIAL_999> = 999)" in out
    encoded = subprocess.run([sys.executable, "-m", "bpe", "encode", "-t", str(path)], input="Hello, мир!".encode(),
                             capture_output=True, cwd=ROOT, timeout=300)
    assert encoded.returncode == 0, encoded.stderr.decode()
    assert [int(i) for i in encoded.stdout.split()] == tok.encode("Hello, мир!")


def test_a_folder_and_the_other_loaders(shipped, tmp_path):
    path, tok = shipped
    folder = tmp_path / "Mistral-Nemo"
    folder.mkdir()
    (folder / "tekken.json").symlink_to(path)
    from_folder = BPETokenizer.from_tekken(folder)
    assert from_folder == tok and from_folder.name == "Mistral-Nemo"
    with pytest.raises(ValueError, match=r"Tekken file: load it with BPETokenizer.from_tekken"):
        BPETokenizer.load(path)
    with pytest.raises(ValueError, match="not a Tekken file"):
        BPETokenizer.from_tekken(ROOT / "stories.bpe")


# --- small files made here: the format, and what is refused -----------------------------------

def small_file(tmp_path, name="tekken.json", n_special=5, extra=0, **changes) -> Path:
    """A Tekken file of a small trained vocabulary: `extra` more ranks than the cut keeps."""
    ordered = formats.token_bytes(small_trained().merges)
    document = {
        "config": {"pattern": trained_pattern(), "num_vocab_tokens": len(ordered),
                   "default_vocab_size": len(ordered) - extra + n_special,
                   "default_num_special_tokens": n_special, "version": "v7"},
        "vocab": [{"rank": r, "token_bytes": base64.b64encode(data).decode(), "token_str": None}
                  for r, data in enumerate(ordered)],
        "special_tokens": [{"rank": 0, "token_str": "<unk>", "is_control": True},
                           {"rank": 1, "token_str": "<s>", "is_control": True},
                           {"rank": 2, "token_str": "</s>", "is_control": True}],
        "audio": {"sampling_rate": 16000},
    }
    for key, value in changes.items():
        where, _, field = key.partition("__")
        if field:
            document[where][field] = value
        elif value is None:
            document.pop(where)
        else:
            document[where] = value
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def trained_pattern() -> str:
    return formats.TIKTOKEN_PATTERNS["gpt4"]


@functools.lru_cache(maxsize=1)
def small_trained() -> BPETokenizer:
    return BPETokenizer.train(made_up_stories(30_000), vocab_size=400, pattern="gpt4")


def test_a_small_file(tmp_path):
    path = small_file(tmp_path, extra=10)
    tok = BPETokenizer.from_tekken(path)
    trained = small_trained()
    assert tok.special_tokens == ("<unk>", "<s>", "</s>", "<SPECIAL_3>", "<SPECIAL_4>")
    assert tok.n_vocab == 400 - 10 + 5 and len(tok.merges) == 400 - 10 - 256
    assert tok.pattern == "gpt4"  # a named rule's text runs as that rule
    text = made_up_stories(2_000, seed=5)
    # Ranks are the trained ids; the cut drops the last ten merges; ids move up by five.
    expected = BPETokenizer(trained.merges[:-10], pattern="gpt4")
    assert tok.encode(text) == [i + 5 for i in expected.encode(text)]
    assert tok.encode("<s>hi</s>", allowed_special="all")[0] == 1
    assert tok.name == tmp_path.name  # tekken.json is named by its folder


def test_a_file_of_v7_or_before_without_special_tokens(tmp_path):
    tok = BPETokenizer.from_tekken(small_file(tmp_path, "tekken_old.json", n_special=25, special_tokens=None))
    assert tok.special_tokens[:20] == tekken.TEKKEN_LEGACY_SPECIAL_TOKENS
    assert tok.special_tokens[20:] == tuple(f"<SPECIAL_{k}>" for k in range(20, 25))
    assert tok.name == "tekken_old"


@pytest.mark.parametrize("version, listed", [("v11", True), ("v13", True), ("v7", False), ("v3", True)])
def test_small_files_give_mistral_commons_ids(tmp_path, version, listed):
    """Files of other shapes than the shipped two: specials listed (and fewer than
    numbered), or the legacy ones; the vocabulary cut."""
    module = pytest.importorskip("mistral_common.tokens.tokenizers.tekken", reason=NEEDS_MISTRAL)
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy

    changes = {"config__version": version, "audio": None, "image": {"image_patch_size": 16, "max_image_size": 1024}}
    if not listed:
        changes["special_tokens"] = None
    path = small_file(tmp_path, n_special=30, extra=7, **changes)
    tok, theirs = BPETokenizer.from_tekken(path), module.Tekkenizer.from_file(path)
    assert tok.n_vocab == theirs.n_words and len(tok.special_tokens) == theirs.num_special_tokens
    text = made_up_stories(5_000, seed=9) + CONTROL_TEXT + "".join(MULTILINGUAL)
    assert tok.encode_ordinary(text) == theirs.encode(text, bos=False, eos=False)
    ids = tok.encode(text, allowed_special="all")
    assert ids == spliced(theirs, tok, text)
    assert tok.decode(ids) == theirs.decode(ids, special_token_policy=SpecialTokenPolicy.KEEP) == text
    assert [tok.special_ids[s] for s in ("<s>", "</s>", "<unk>")] == [theirs.bos_id, theirs.eos_id, theirs.unk_id]


REFUSED = {
    "an unknown version": ({"config__version": "v99"}, r"config.version is 'v99'.*does not know"),
    "no version": ({"config__version": None}, r"config.version is None"),
    "no special tokens after v7": ({"config__version": "v11", "special_tokens": None},
                                   r"version v11 must list its special tokens"),
    "more specials than numbered": ({"config__default_num_special_tokens": 2},
                                    r"3 special tokens, but config.default_num_special_tokens is 2"),
    "a special out of place": ({"special_tokens": [{"rank": 1, "token_str": "<s>", "is_control": True}]},
                               r"special_tokens\[0\] \('<s>'\) has rank 1"),
    "a special twice": ({"special_tokens": [{"rank": 0, "token_str": "<s>"}, {"rank": 1, "token_str": "<s>"}]},
                        r"special tokens 0 and 1 are both '<s>'"),
    "a special named like a filler": ({"special_tokens": [{"rank": 0, "token_str": "<SPECIAL_4>"}]},
                                      r"special tokens 0 and 4 are both '<SPECIAL_4>'"),
    "an empty special": ({"special_tokens": [{"rank": 0, "token_str": ""}]}, r"special_tokens\[0\] must have"),
    "a vocabulary shorter than the cut": ({"config__default_vocab_size": 10_000}, r"needs 9,995 ranks"),
    "too few ids for the bytes": ({"config__default_vocab_size": 200}, r"the 256 bytes need one each"),
    "a huge size": ({"config__default_num_special_tokens": 10**12}, r"default_num_special_tokens must be"),
    "millions of specials from a small file": ({"config__default_num_special_tokens": 10**7,
                                                "config__default_vocab_size": 10**7 + 400}, r"at most 65,536 special"),
    "a size that is no number": ({"config__default_vocab_size": "400"}, r"default_vocab_size must be"),
    "a pattern the engine does not read": ({"config__pattern": r"(?<=a)b|\p{L}+"}, r"pattern|look"),
    "no pattern": ({"config__pattern": ""}, r"config.pattern must be"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_refused_by_name(tmp_path, case):
    changes, message = REFUSED[case]
    path = small_file(tmp_path, **changes)
    with pytest.raises(ValueError, match=message) as error:
        BPETokenizer.from_tekken(path)
    assert str(path) in str(error.value)


def test_a_bad_vocabulary_is_refused_by_name(tmp_path):
    path = small_file(tmp_path)
    document = json.loads(path.read_text(encoding="utf-8"))
    for k, entry, message in [(300, {"rank": 301, "token_bytes": "YWI=", "token_str": None}, r"vocab\[300\] has rank 301"),
                              (300, {"rank": 300, "token_bytes": "!!", "token_str": None}, r"vocab\[300\].*not base64"),
                              (65, {"rank": 65, "token_bytes": "Qg==", "token_str": "B"}, r"vocab\[65\] is b'B'"),
                              (300, {**document["vocab"][299], "rank": 300}, r"vocab\[300\] is .* as vocab\[299\] is"),
                              (300, "YWI=", r"vocab\[300\] must have \"token_bytes\"")]:
        bad = json.loads(json.dumps(document))
        bad["vocab"][k] = entry
        path.write_text(json.dumps(bad), encoding="utf-8")
        with pytest.raises(ValueError, match=message):
            BPETokenizer.from_tekken(path)


def test_what_is_not_a_tekken_file(tmp_path):
    for content, message in [(b"\xff\xfe", "not UTF-8"), (b"{", "not readable JSON"), (b"[]", "not a Tekken file"),
                             (b'{"vocab": [], "config": {}}', "not a Tekken file"), (b"[" * 100_000, "nests")]:
        path = tmp_path / "tekken.json"
        path.write_bytes(content)
        with pytest.raises(ValueError, match=message):
            BPETokenizer.from_tekken(path)
    with pytest.raises(FileNotFoundError):
        BPETokenizer.from_tekken(tmp_path / "missing.json")


def test_the_command_picks_a_small_file_by_content(tmp_path):
    path = small_file(tmp_path, "mistral-small.json")
    tok = BPETokenizer.from_tekken(path)
    for name in (path, tmp_path):
        if name == tmp_path:
            path.rename(tmp_path / "tekken.json")
        result = subprocess.run([sys.executable, "-m", "bpe", "encode", "-t", str(name if name == tmp_path else path),
                                 "--allow-special"], input=b"<s>Once upon a time", capture_output=True, cwd=ROOT,
                                timeout=300)
        assert result.returncode == 0, result.stderr.decode()
        assert [int(i) for i in result.stdout.split()] == tok.encode("<s>Once upon a time", allowed_special="all")
