"""Hugging Face's Metaspace pre-tokenizer and its Replace and Prepend normalizers on the
engine (csrc/encoder.h's add_metaspace_piece, csrc/normalizer.h), with merging from
characters, against Hugging Face's `tokenizers` on a BPE model with byte_fallback made
from a sentencepiece model trained here: the same pieces, and the merges in one order
for both."""
import sys
from pathlib import Path

import pytest

core = pytest.importorskip("bpe._core", reason="the core is not built")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_char_merges import MULTILINGUAL, PYTHON_SOURCE, SPACE, pieces_by_kind, stories_text, train  # noqa: E402

TEXTS = ["Hello world", " leading", "trailing ", "two  spaces   three", "", " ", "a\u2581b \u2581c",
         "Tom<sep>Lily said<sep> hi", "<sep>Hello", "Hi<sep>", "日本語 and 🐱 cats"]


@pytest.fixture(scope="module")
def hf():
    """Hugging Face's tokenizers, the oracle (a skip without it)."""
    return pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def sp(tmp_path_factory):
    return train(tmp_path_factory.mktemp("meta"), stories_text(100_000), "meta", vocab_size=600, byte_fallback=True)


def both(sp, pre_tokenizer, ours_pre_tokenizer, hf_normalizer=None, ours_normalizer=None, whole_runs=False,
         tokenizer=False):
    """Hugging Face's Tokenizer and our Encoder (a BPETokenizer with `tokenizer`) for sp's
    pieces, with "<sep>" an added token."""
    from tokenizers import AddedToken, Tokenizer, decoders, models
    n = sp.get_piece_size()
    vocab = {sp.id_to_piece(i): i for i in range(n)}
    normal = {p: i for p, i in vocab.items() if not (sp.is_byte(i) or sp.is_control(i) or sp.is_unknown(i))}
    made = sorted(normal, key=lambda p: (-sp.get_score(normal[p]), normal[p]))
    pairs = [(p[:k], p[k:], p) for p in made for k in range(1, len(p)) if p[:k] in normal and p[k:] in normal]
    sep = n  # an added token past the pieces
    tk = Tokenizer(models.BPE(vocab={**vocab, "<sep>": sep}, merges=[(a, b) for a, b, _ in pairs], unk_token="<unk>",
                              byte_fallback=True, fuse_unk=True))
    tk.pre_tokenizer = pre_tokenizer
    if hf_normalizer is not None:
        tk.normalizer = hf_normalizer
    tk.add_tokens([AddedToken("<sep>", normalized=False, special=False)])
    tk.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()])

    byte_ids, specials, special_ids, unmade = pieces_by_kind(sp)
    unmade["<sep>"] = sep
    ours = {p: 256 + len(specials) + k for k, p in enumerate(unmade)}
    rules = {"normalizer": ours_normalizer, "pre_tokenizer": ours_pre_tokenizer,
             "added_tokens": [{"content": "<sep>", "id": sep, "special": False, "normalized": False, "lstrip": False,
                               "rstrip": False, "single_word": False}],
             "char_merges": {"byte_fallback": True, "unk_id": sp.unk_id(), "fuse_unk": True},
             "unmade_tokens": unmade, "ranked_merges": [[ours[a], ours[b], ours[m]] for a, b, m in pairs],
             "decoder": {"replace": [SPACE, " "], "strip_start": 0, "unk_text": None, "whole_runs": whole_runs}}
    args = dict(special_tokens=specials, token_ids=[byte_ids[b] for b in range(256)] + special_ids, rules=rules)
    if tokenizer:
        from bpe import BPETokenizer
        return tk, BPETokenizer([], **args)
    return tk, core.Encoder([], **args)


def same_as_hugging_face(tk, enc, texts):
    for text in texts:
        want = tk.encode(text, add_special_tokens=False)
        assert enc.encode(text, (), ()) == want.ids, text
        ids, spans = enc.encode_with_offsets(text, (), ())
        assert [tuple(s) for s in spans.tolist()] == want.offsets, text
        assert enc.decode_bytes(ids).decode() == tk.decode(want.ids, skip_special_tokens=False), text


@pytest.mark.parametrize("scheme", ["always", "first", "never"])
@pytest.mark.parametrize("split", [True, False])
def test_metaspace_gives_hugging_face_ids_offsets_and_text(sp, hf, scheme, split):
    tk, enc = both(sp, hf.pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme=scheme, split=split),
                   [{"type": "Metaspace", "replacement": SPACE, "prepend_scheme": scheme, "split": split}])
    same_as_hugging_face(tk, enc, TEXTS + [stories_text(5000), PYTHON_SOURCE[:2000], MULTILINGUAL])


def test_prepend_and_replace_normalizers_give_hugging_face_ids(sp, hf):
    """Llama 2's tokenizer.json shape: no pre-tokenizer, the spaces made "▁" and one put
    first by the normalizer."""
    tk, enc = both(sp, None, [],
                   hf.normalizers.Sequence([hf.normalizers.Prepend(SPACE), hf.normalizers.Replace(" ", SPACE)]),
                   [{"type": "Prepend", "prepend": SPACE}, {"type": "Replace", "pattern": " ", "content": SPACE}])
    for text in TEXTS + [stories_text(5000), PYTHON_SOURCE[:2000], MULTILINGUAL]:
        assert enc.encode(text, (), ()) == tk.encode(text, add_special_tokens=False).ids, text


def test_replace_of_a_longer_text_left_to_right(sp, hf):
    tk, enc = both(sp, None, [], hf.normalizers.Replace("aa", "b"),
                   [{"type": "Replace", "pattern": "aa", "content": "b"}])
    for text in ["aaa", "aaaa", "baaab", " aa aa"]:
        assert enc.encode(text, (), ()) == tk.encode(text, add_special_tokens=False).ids, text


@pytest.mark.parametrize("step, where", [
    ({"type": "Metaspace", "replacement": 1, "prepend_scheme": "always", "split": True}, "['replacement']"),
    ({"type": "Metaspace", "replacement": "", "prepend_scheme": "always", "split": True}, "['replacement']"),
    ({"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "sometimes", "split": True}, "['prepend_scheme']"),
    ({"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "always", "split": "true"}, "['split']"),
    ({"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "always"}, "['pre_tokenizer'][0]"),
    ({"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "always", "split": True, "x": 0},
     "['pre_tokenizer'][0]"),
])
def test_a_wrong_metaspace_is_a_value_error_naming_where(step, where):
    rules = {"pre_tokenizer": [step], "unmade_tokens": {SPACE: 3, "a": 4},
             "char_merges": {"byte_fallback": True, "unk_id": None, "fuse_unk": False}}
    with pytest.raises(ValueError) as e:
        core.Encoder([], rules=rules)
    assert where in str(e.value)


def test_metaspace_needs_char_merges_and_to_be_alone():
    step = {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "always", "split": True}
    with pytest.raises(ValueError, match="needs char_merges"):
        core.Encoder([], rules={"pre_tokenizer": [step]})
    with pytest.raises(ValueError, match="only step"):
        core.Encoder([], rules={"pre_tokenizer": [step, step], "unmade_tokens": {"a": 300},
                                "char_merges": {"byte_fallback": True, "unk_id": None, "fuse_unk": False}})


def test_whole_runs_decode_byte_runs_as_hugging_face_s_byte_fallback(sp, hf):
    """Hugging Face's ByteFallback decoder makes a run of byte tokens that is not UTF-8
    as a whole one U+FFFD per byte (sentencepiece: per byte that starts no character);
    whole_runs says which. The streaming decoder holds a run back until it ends."""
    import random
    tk, enc = both(sp, hf.pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always", split=True),
                   [{"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "always", "split": True}],
                   whole_runs=True)
    byte = {int(sp.id_to_piece(i)[3:5], 16): i for i in range(sp.get_piece_size()) if sp.is_byte(i)}
    the = sp.piece_to_id(SPACE + "the")
    rng = random.Random(9)
    pool = list(byte.values()) + [the, sp.piece_to_id("a")]
    cases = [[byte[0xE2], byte[0x96], byte[0x81], byte[0xE2]], [byte[0xC3], byte[0xA9], the, byte[0xFF]]]
    cases += [[rng.choice(pool) for _ in range(rng.randrange(1, 10))] for _ in range(300)]
    assert enc.decode_bytes(cases[0]).decode() == "\ufffd" * 4 == tk.decode(cases[0])
    for ids in cases:
        assert enc.decode_bytes(ids).decode() == tk.decode(ids), ids
    _, tok = both(sp, hf.pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always", split=True),
                  [{"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "always", "split": True}],
                  whole_runs=True, tokenizer=True)
    for ids in cases:
        d = tok.decoder()
        assert "".join(d.add(i) for i in ids) + d.flush() == tk.decode(ids), ids
    with pytest.raises(ValueError, match=r"\['decoder'\]\['whole_runs'\]"):
        core.Encoder([], rules={"pre_tokenizer": [], "unmade_tokens": {"a": 300},
                                "char_merges": {"byte_fallback": True, "unk_id": None, "fuse_unk": False},
                                "decoder": {"replace": None, "strip_start": 0, "unk_text": None, "whole_runs": 1}})


@pytest.mark.parametrize("scheme", ["always", "first", "never"])
def test_random_texts_give_hugging_face_ids_and_offsets(sp, hf, scheme):
    import random
    rng = random.Random(11)
    parts = stories_text(3000).split(" ") + ["", " ", "  ", "<sep>", "日本", "🐱", "\u2581", "\n", "é"]
    for split in (True, False):
        tk, enc = both(sp, hf.pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme=scheme, split=split),
                       [{"type": "Metaspace", "replacement": SPACE, "prepend_scheme": scheme, "split": split}])
        texts = ["".join(rng.choice(parts) + rng.choice(["", " "]) for _ in range(rng.randrange(0, 10)))
                 for _ in range(150)]
        same_as_hugging_face(tk, enc, texts)
