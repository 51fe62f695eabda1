"""The model's options in the engine (ModelOptions, csrc/vocabulary.h), against Hugging
Face's `tokenizers` on the same tokenizer.json: ranked merges (several merges making one
token, merges before their parts, as files converted from tiktoken's ranks have them),
ignore_merges, and tokens no merge makes. The engine is given what the C++ reader of a
tokenizer.json gives (bpe._core.huggingface_merges) and the rules dict's three keys."""
import json
import random

import numpy as np
import pytest

tokenizers = pytest.importorskip("tokenizers")

from bpe import _core, formats  # noqa: E402
from sample_text import SCRIPTS_AND_EMOJI, TRICKY_TEXT, made_up_stories  # noqa: E402

ALPHABET = formats.byte_alphabet()  # byte -> its character
NO_SPLIT = r"[\s\S]+"  # ByteLevel without its regex: the whole text is one chunk


def text_of(data: bytes) -> str:
    return "".join(ALPHABET[b] for b in data)


def document(vocab: dict, merges: list, ignore_merges: bool = False, use_regex: bool = True) -> str:
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": use_regex}
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": byte_level, "post_processor": None, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": ignore_merges, "vocab": vocab, "merges": merges}})


class Pair:
    """One tokenizer.json, loaded by Hugging Face and by the engine."""

    def __init__(self, vocab: dict, merges: list, ignore_merges: bool = False, use_regex: bool = True,
                 ranked: bool = True):
        self.hf = tokenizers.Tokenizer.from_str(document(vocab, merges, ignore_merges, use_regex))
        core_merges, token_ids, unmade, self.ranked_merges = _core.huggingface_merges(
            vocab, merges, "".join(ALPHABET.values()))
        assert -1 not in token_ids  # every byte is in these vocabularies
        rules = {"ignore_merges": ignore_merges, "ranked_merges": self.ranked_merges if ranked else None,
                 "unmade_tokens": {t: vocab[t] for t in unmade}}
        self.ours = _core.Encoder(core_merges, pattern="gpt2" if use_regex else NO_SPLIT, token_ids=token_ids,
                                  rules=rules)

    def check(self, text: str):
        want = self.hf.encode(text).ids
        got = self.ours.encode(text)
        assert got == want, f"{text[:60]!r}... ({len(text)} characters): first difference at " \
                            f"{next(i for i, (a, b) in enumerate(zip(got + [-1], want + [-2])) if a != b)}"
        assert self.ours.decode_bytes(got) == text.encode("utf-8")


# --- files -----------------------------------------------------------------------------

def trained_tokens(count: int) -> list:
    """The bytes of `count` tokens learned here, in the order learned."""
    import bpe
    merges = bpe.train((made_up_stories(60_000) + TRICKY_TEXT * 3).encode(), count, pattern="gpt2")
    return formats.token_bytes(merges)[256:]


def converted(ranked_tokens: list) -> tuple:
    """(vocab, merges) as a converter from tiktoken's ranks writes them (Llama 3's, GLM-4's):
    the bytes, then the tokens in rank order, and every_split's merges."""
    vocab = {text_of(bytes([b])): b for b in range(256)}
    for data in ranked_tokens:
        vocab.setdefault(text_of(data), len(vocab))
    return vocab, every_split(vocab)


def every_split(vocab: dict) -> list:
    """For each token every split into two tokens of the vocabulary, ordered by the rank
    (id) of the token made, then of the left part, then of the right one."""
    merges = []
    for token, rank in vocab.items():
        splits = [(token[:k], token[k:]) for k in range(1, len(token)) if token[:k] in vocab and token[k:] in vocab]
        merges += sorted(((rank, vocab[a], vocab[b]), [a, b]) for a, b in splits)
    return [m for _, m in sorted(merges)]


def shuffled_ranks(tokens: list, seed: int, swaps: int) -> list:
    """The tokens with some ranks swapped, so that a token may rank before its parts."""
    rng = random.Random(seed)
    tokens = list(tokens)
    for _ in range(swaps):
        i, j = rng.randrange(len(tokens)), rng.randrange(len(tokens))
        tokens[i], tokens[j] = tokens[j], tokens[i]
    return tokens


@pytest.fixture(scope="module")
def learned() -> list:
    return trained_tokens(400)


def hostile_texts(seed: int = 0) -> list:
    """Chunks of every length the merge loops take apart (up to 32 bytes, a few hundred,
    thousands), repeated characters, and random strings: of the stories' characters, of
    any code point, and of random bytes read as Latin-1."""
    rng = random.Random(seed)
    stories = made_up_stories(20_000, seed=seed + 1)
    letters = sorted(set(stories))
    texts = [stories, TRICKY_TEXT, SCRIPTS_AND_EMOJI,
             "a" * 1000, " " * 700, "ab" * 400, "aaab" * 150, "\n" * 300 + "x", "!" * 90,
             "the" * 300, " the" * 200, "e" * 33, "ee" * 16, "." * 2049]
    for length in (5, 31, 32, 33, 64, 300, 2000, 9000):
        texts.append("".join(rng.choice(letters) for _ in range(length)))
        texts.append("".join(rng.choice("aeht ns") for _ in range(length)))
        texts.append(bytes(rng.randrange(256) for _ in range(length)).decode("latin-1"))
        texts.append("".join(chr(rng.choice([rng.randrange(0x20, 0x250), rng.randrange(0x3040, 0x30ff),
                                             rng.randrange(0x1f300, 0x1f600)])) for _ in range(length)))
    return texts


# --- ranked merges ---------------------------------------------------------------------

def test_a_file_with_every_split_of_a_token_encodes_as_hugging_face_does(learned):
    vocab, merges = converted(shuffled_ranks(learned, seed=1, swaps=60))
    assert len(merges) > len(vocab) - 256, "every split of a token: several merges make one token"
    for use_regex in (True, False):
        pair = Pair(vocab, merges, use_regex=use_regex)
        assert pair.ranked_merges is not None
        for text in hostile_texts():
            pair.check(text)


def test_the_core_merges_alone_would_not_do(learned):
    """The file of the tests above is one where ranking matters: without the ranked merges
    the engine gives other ids (so the tests above can fail)."""
    vocab, merges = converted(shuffled_ranks(learned, seed=1, swaps=60))
    for use_regex in (True, False):
        pair = Pair(vocab, merges, use_regex=use_regex, ranked=False)
        assert any(pair.ours.encode(t) != pair.hf.encode(t).ids for t in hostile_texts())


@pytest.mark.parametrize("seed", range(4))
def test_random_rankings_of_learned_tokens(learned, seed):
    vocab, merges = converted(shuffled_ranks(learned[:150], seed=seed + 10, swaps=40 * (seed + 1)))
    pair = Pair(vocab, merges, use_regex=False)
    rng = random.Random(seed)
    characters = sorted({c for t in vocab for c in t}) + [" ", "\n"]
    for length in (3, 20, 40, 200, 1500):
        for _ in range(5):
            data = "".join(rng.choice(characters) for _ in range(length)).encode("utf-8")
            pair.check(data.decode("utf-8"))
            # the text the tokens are made of: a mix of their bytes, read as Latin-1 where not UTF-8
            joined = b"".join(rng.choice(learned[:150]) for _ in range(length // 3 + 1))
            pair.check(joined.decode("utf-8", errors="replace"))


def test_a_long_chunk_under_ranked_merges(learned):
    """One chunk of 60,000 bytes: the tree of minima over thousands of blocks."""
    vocab, merges = converted(shuffled_ranks(learned, seed=5, swaps=60))
    pair = Pair(vocab, merges, use_regex=False)
    rng = random.Random(5)
    pair.check("".join(rng.choice(learned).decode("utf-8", errors="replace") for _ in range(20_000))[:60_000])
    pair.check("ab" * 30_000)


def test_cl100k_written_as_a_llama_3_file():
    """GPT-4's ranks as Llama 3's converter writes them (233,378 merges for 100,256
    tokens): ids as Hugging Face's, and as tiktoken's ranks give them."""
    from vocabularies import cl100k_path
    ranks = formats.read_tiktoken(cl100k_path())
    vocab = {text_of(token): rank for token, rank in ranks.items()}
    pair = Pair(vocab, every_split(vocab))
    assert len(pair.ranked_merges) > 2 * len(vocab)
    texts = hostile_texts(seed=7)
    for text in texts:
        pair.check(text)
    tiktoken_merges, token_ids = formats.merges_from_ranks(ranks)
    plain = _core.Encoder(tiktoken_merges, pattern="gpt2", token_ids=token_ids)
    assert pair.ours.encode(texts[0]) == plain.encode(texts[0])


def test_merge_before_its_parts():
    """Llama 3's second merge is "Ġ ĠĠĠ": its right part is made by a later merge."""
    vocab = {text_of(bytes([b])): b for b in range(256)}
    for token in ["ĠĠĠĠ", "ĠĠ", "ĠĠĠ"]:
        vocab[token] = len(vocab)
    merges = ["Ġ ĠĠĠ", "ĠĠ ĠĠ", "Ġ Ġ", "ĠĠ Ġ", "Ġ ĠĠ"]
    for use_regex in (True, False):
        pair = Pair(vocab, merges, use_regex=use_regex)
        for n in range(1, 80):
            pair.check(" " * n + "x")
            pair.check("x" + " " * n)


def test_a_pair_written_twice_ranks_at_its_last_place():
    vocab = {text_of(bytes([b])): b for b in range(256)}
    vocab.update({"ab": 256, "bc": 257})
    pair = Pair(vocab, ["a b", "b c", "a b"], use_regex=False)
    assert pair.ranked_merges.tolist() == [[ord("b"), ord("c"), 257], [ord("a"), ord("b"), 256]]
    for text in ["abc", "ababc", "abcabc" * 20, "abbc" * 50]:
        pair.check(text)


def test_a_file_in_order_gives_no_ranked_merges(learned):
    vocab = {text_of(bytes([b])): b for b in range(256)}
    merges = []
    for data in learned[:100]:  # one merge a token, after its parts: as learned
        token = text_of(data)
        if token in vocab:
            continue
        a, b = next((token[:k], token[k:]) for k in range(1, len(token)) if token[:k] in vocab and token[k:] in vocab)
        vocab[token] = len(vocab)
        merges.append(f"{a} {b}")
    for ignore in (False, True):  # the plain loops, encode_long and encode_buckets too, under ignore_merges
        for use_regex in (True, False):
            pair = Pair(vocab, merges, ignore_merges=ignore, use_regex=use_regex)
            assert pair.ranked_merges is None
            for text in hostile_texts(seed=4):
                pair.check(text)


# --- ignore_merges ---------------------------------------------------------------------

def test_ignore_merges_makes_a_chunk_that_is_a_token_that_token():
    vocab = {text_of(bytes([b])): b for b in range(256)}
    vocab.update({"bc": 256, "ab": 257, "abc": 258, "Ġabc": 259})
    merges = ["b c", "a b", "ab c", "Ġ abc"]  # "abc" merges as a, bc: never into abc
    for ignore in (False, True):
        pair = Pair(vocab, merges, ignore_merges=ignore)
        for text in ["abc", " abc", "abc abc abcabc", "xabc"]:
            pair.check(text)
    assert Pair(vocab, merges, ignore_merges=True).ours.encode("abc") == [258]


def test_ignore_merges_on_a_converted_file(learned):
    vocab, merges = converted(shuffled_ranks(learned, seed=3, swaps=80))
    for use_regex in (True, False):
        pair = Pair(vocab, merges, ignore_merges=True, use_regex=use_regex)
        texts = hostile_texts(seed=2) + [text_of(data).replace("Ġ", " ") for data in learned[:100]]
        texts += [bytes(data).decode("utf-8", errors="replace") for data in learned]
        for text in texts:
            pair.check(text)
    # a chunk that is a long token (past what the table is seeded with) is found whole
    long = "abcdefgh" * 12
    vocab = {text_of(bytes([b])): b for b in range(256)}
    vocab[long] = len(vocab)
    pair = Pair(vocab, [], ignore_merges=True)
    assert pair.ours.encode(long) == [256] == pair.hf.encode(long).ids


# --- tokens no merge makes -------------------------------------------------------------

def unmade_vocabulary() -> tuple:
    vocab = {text_of(bytes([b])): b for b in range(256)}
    # zzq: no merge makes it; zzqz: a merge does, of zzq, which never applies
    vocab.update({"zz": 256, "zzq": 257, "zzqz": 258})
    reserved = {"<|reserved_0|>": 300, text_of(b"\xff\xfe\x80"): 301, text_of(b" not utf-8 \xc3"): 302,
                "中文": 303}  # the last written outside the byte alphabet: no chunk is it
    vocab.update(reserved)
    return vocab, ["z z", "zzq z"], reserved


def test_unmade_tokens_decode_to_their_bytes():
    vocab, merges, reserved = unmade_vocabulary()
    pair = Pair(vocab, merges)
    assert sorted(_core.huggingface_merges(vocab, merges, "".join(ALPHABET.values()))[2]) == sorted(
        ["zzq", "zzqz", *reserved])
    assert pair.ours.decode_bytes([301]) == b"\xff\xfe\x80"
    assert pair.ours.decode_bytes([302, 257]) == b" not utf-8 \xc3zzq"
    assert pair.ours.decode_bytes([303]) == "中文".encode()  # as Hugging Face's decoder reads it
    for ids in ([300], [301], [302, 257], [303], [256, 300, 303]):
        assert pair.ours.decode_bytes(ids).decode("utf-8", errors="replace") == pair.hf.decode(ids), ids


@pytest.mark.parametrize("ignore", [False, True])
def test_unmade_tokens_are_found_whole_only_under_ignore_merges(ignore):
    vocab, merges, reserved = unmade_vocabulary()
    for use_regex in (True, False):
        pair = Pair(vocab, merges, ignore_merges=ignore, use_regex=use_regex)
        for text in ["zzq", "zzq zzq", "zzqz", "zzqzzqz", "<|reserved_0|>", "\xff\xfe\x80", " not utf-8 \xc3", "中文", "zzzzq",
                     "x<|reserved_0|>x", "<|reserved_0|>" * 3]:
            pair.check(text)
    no_split = Pair(vocab, merges, ignore_merges=ignore, use_regex=False)
    assert (no_split.ours.encode("<|reserved_0|>") == [300]) == ignore
    assert (no_split.ours.encode("zzqz") == [258]) == ignore
    assert no_split.ours.encode("中文") != [303]


def test_an_unmade_token_that_is_a_special_token():
    """GPT-2's "<|endoftext|>" is in its vocab and a special token, with one id: the
    engine takes it as both, and finds it whole under ignore_merges."""
    merges = []
    encoder = _core.Encoder(merges, pattern=NO_SPLIT, special_tokens=["<|endoftext|>"],
                            rules={"ignore_merges": True, "unmade_tokens": {"<|endoftext|>": 256}})
    assert encoder.encode("<|endoftext|>", disallowed_special=()) == [256]
    assert encoder.decode_bytes([256]) == b"<|endoftext|>"
    with pytest.raises(ValueError, match="other bytes"):
        _core.Encoder(merges, special_tokens=["<|endoftext|>"], rules={"unmade_tokens": {"<|other|>": 256}})


# --- the rules' three keys, refused when wrong -------------------------------------------

@pytest.mark.parametrize("rules, error, match", [
    ({"ignore_merges": "false"}, TypeError, r'rules\["ignore_merges"\] must be True or False, not str'),
    ({"ranked_merges": [[97, 98]]}, TypeError, r"ranked_merges\"\]\[0\]"),
    ({"ranked_merges": [[97, 98, "x"]]}, TypeError, "must be an int"),
    ({"ranked_merges": [[97, 98, 300]]}, ValueError, "below 257"),
    ({"ranked_merges": [[97, 99, 256]]}, ValueError, "not its two parts joined"),
    ({"ranked_merges": [[97, 98, 256], [97, 98, 256]]}, ValueError, "repeats ranked merge 0"),
    ({"ranked_merges": [[-1, 98, 256]]}, ValueError, "between 0 and"),
    ({"unmade_tokens": ["x"]}, TypeError, r'rules\["unmade_tokens"\] must be None or a dict'),
    ({"unmade_tokens": {"x": 97}}, ValueError, "two tokens have the id 97"),
    ({"unmade_tokens": {"x": 2 ** 40}}, ValueError, "between 0 and"),
    ("ignore_merges", TypeError, "rules must be a dict"),
])
def test_bad_rules_are_refused_by_name(rules, error, match):
    with pytest.raises(error, match=match):
        _core.Encoder([(97, 98)], rules=rules)


@pytest.mark.parametrize("ranked, error, match", [
    (np.array([[97, 98, 256]], dtype=np.int64), TypeError, r"\(n, 3\), C-ordered, of uint32, not int64"),
    (np.array([97, 98, 256], dtype=np.uint32), TypeError, r"of shape \(3,\)"),
    (np.array([[97, 98, 256, 0]], dtype=np.uint32), TypeError, r"of shape \(1, 4\)"),
    (np.array([[97, 98, 256]] * 2, dtype=np.uint32).T.copy().T, TypeError, "C-ordered"),
    (np.array([[97, 98, 2 ** 31]], dtype=np.uint32), ValueError, r"\[0\]\[2\] is 2147483648: ids must be between"),
    (np.array([[97, 99, 256]], dtype=np.uint32), ValueError, "not its two parts joined"),
])
def test_ranked_merges_as_an_array_are_checked_as_lists_are(ranked, error, match):
    with pytest.raises(error, match=match):
        _core.Encoder([(97, 98)], rules={"ranked_merges": ranked})
    good = np.array([[97, 98, 256]], dtype=np.uint32)
    assert _core.Encoder([(97, 98)], rules={"ranked_merges": good}).encode("abab") == [256, 256]


def test_no_rules_and_empty_rules_are_the_plain_engine(learned):
    import bpe
    merges = bpe.train(made_up_stories(30_000).encode(), 200, pattern="gpt2")
    plain = _core.Encoder(merges, pattern="gpt2")
    for rules in (None, {}, {"ignore_merges": False, "ranked_merges": None, "unmade_tokens": None}):
        encoder = _core.Encoder(merges, pattern="gpt2", rules=rules)
        for text in hostile_texts()[:12]:
            assert encoder.encode(text) == plain.encode(text)
