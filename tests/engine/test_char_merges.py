"""Merging that starts from characters (the rules' "char_merges") against the
sentencepiece library, the oracle for SentencePiece BPE: small models are trained here
with it, the rules dict, merges, token ids and special tokens are built in the test from
the trained model's pieces (sentencepiece's own accessors), and `Encoder.encode` must
give `sp.encode`'s ids, `Encoder.decode_bytes` `sp.decode`'s text.

What sentencepiece does, and these tests hold us to:
  - a character that is no piece becomes its UTF-8 bytes as byte pieces (byte_fallback),
    else the unknown piece, one for a run of such characters;
  - of the pairs that join into a piece, the one whose piece scores highest merges, the
    leftmost of equal scores first;
  - decode turns "▁" into spaces and drops the one space add_dummy_prefix put first, gives
    " ⁇ " for the unknown piece, and U+FFFD for each byte of a byte-piece run that starts
    no valid character.
"""
import base64
import os
import random
from pathlib import Path

import pytest

core = pytest.importorskip("bpe._core", reason="the core is not built")

import sys  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from sample_text import SCRIPTS_AND_EMOJI, TRICKY_TEXT, made_up_stories  # noqa: E402

SPACE = "\u2581"


def stories_text(limit=200_000):
    """The held-out stories where the shared data is, else stories made here."""
    root = os.environ.get("BPE_SHARED_DATA")
    path = Path(root) / "tinystories" / "valid-sample.txt" if root else None
    if path is not None and path.exists():
        return path.read_text(encoding="utf-8")[:limit]
    return made_up_stories(limit)


PYTHON_SOURCE = Path(__file__).read_text(encoding="utf-8")
# Characters no small model trained on English has a piece for.
MULTILINGUAL = ("Ελληνικά και русский текст, العربية, עברית, हिन्दी, 日本語のテキスト、한국어 문장, "
                "emoji 🐱👩\u200d👩\u200d👧 and ∮ E⋅da = Q, n → ∞, ∑ f(i) = ∏ g(i)\n" + SCRIPTS_AND_EMOJI + TRICKY_TEXT)


def train(tmp_path, text, name="m", vocab_size=600, **options):
    """A sentencepiece BPE model trained on text; its processor (a skip without sentencepiece)."""
    spm = pytest.importorskip("sentencepiece")
    corpus = tmp_path / f"{name}.txt"
    corpus.write_text(text, encoding="utf-8")
    args = dict(input=str(corpus), model_prefix=str(tmp_path / name), vocab_size=vocab_size, model_type="bpe",
                character_coverage=1.0, normalization_rule_name="identity", minloglevel=2)
    args.update(options)
    spm.SentencePieceTrainer.train(**args)
    return spm.SentencePieceProcessor(model_file=str(tmp_path / f"{name}.model"))


def engine_of(sp, *args, **kwargs):
    """The Encoder for a sentencepiece BPE model (encoder_args says how)."""
    return core.Encoder([], **encoder_args(sp, *args, **kwargs))


def pieces_by_kind(sp):
    """sp's pieces as the engine numbers them: ({byte: id} of the byte pieces, the control
    and unknown pieces and their ids (the special tokens), {piece: id} of every other)."""
    byte_ids, specials, special_ids, unmade = {}, [], [], {}
    for i in range(sp.get_piece_size()):
        piece = sp.id_to_piece(i)
        if sp.is_byte(i):
            byte_ids[int(piece[3:5], 16)] = i
        elif sp.is_control(i) or sp.is_unknown(i):
            specials.append(piece)
            special_ids.append(i)
        elif sp.is_unused(i):
            raise AssertionError("no unused pieces in these models")
        else:
            unmade[piece] = i
    return byte_ids, specials, special_ids, unmade


def encoder_args(sp, add_dummy_prefix=True, remove_extra_whitespaces=True, escape_whitespaces=True,
                 unk_text=" \u2047 ", user_defined=(), charsmap=None):
    """The Encoder's arguments for a sentencepiece BPE model, from its pieces as the library gives
    them: bytes are ids 0-255 (their file ids by token_ids; free ids past the vocabulary
    where the model has no byte pieces), the control and unknown pieces are the special
    tokens, every other piece an unmade token, and each pair of pieces that joins into a
    normal piece a ranked merge, ranked by that piece's score (highest first, equal scores
    one rank). user_defined: the model's user-defined symbols, which are added tokens
    (matched whole in the normalized text) and in no merge. charsmap: the model's
    precompiled_charsmap (bytes), a Precompiled step before sentencepiece's own."""
    n = sp.get_piece_size()
    byte_ids, specials, special_ids, unmade = pieces_by_kind(sp)
    free = iter(range(n, n + 256))
    token_ids = [byte_ids[b] if b in byte_ids else next(free) for b in range(256)] + special_ids
    ours = {piece: 256 + len(specials) + k for k, piece in enumerate(unmade)}
    normal = {piece: i for piece, i in unmade.items() if piece not in user_defined}
    scores = sorted({sp.get_score(i) for i in normal.values()}, reverse=True)
    rank_of = {s: r for r, s in enumerate(scores)}
    merges = []
    for piece, i in normal.items():
        for k in range(1, len(piece)):
            left, right = piece[:k], piece[k:]
            if left in normal and right in normal:
                merges.append([ours[left], ours[right], ours[piece], rank_of[sp.get_score(i)]])
    merges.sort(key=lambda m: m[3])
    added = [{"content": piece, "id": unmade[piece], "special": False, "normalized": True, "lstrip": False,
              "rstrip": False, "single_word": False} for piece in user_defined]
    unk = next((i for i in special_ids if sp.is_unknown(i)), None)
    precompiled = [{"type": "Precompiled", "charsmap": base64.b64encode(charsmap).decode()}] if charsmap else []
    rules = {
        "normalizer": precompiled + [{"type": "SentencePiece", "add_dummy_prefix": add_dummy_prefix,
                        "remove_extra_whitespaces": remove_extra_whitespaces,
                        "escape_whitespaces": escape_whitespaces}],
        "pre_tokenizer": [],
        "added_tokens": added or None,
        "char_merges": {"byte_fallback": bool(byte_ids), "unk_id": unk, "fuse_unk": True},
        "unmade_tokens": unmade,
        "ranked_merges": merges,
        "decoder": {"replace": [SPACE, " "], "strip_start": 1 if add_dummy_prefix else 0, "unk_text": unk_text,
                    "drop_special": True},
    }
    return {"special_tokens": specials, "token_ids": token_ids, "rules": rules}


def same_as_sentencepiece(enc, sp, text):
    """Our ids of text are sentencepiece's, and decoding them gives its decode."""
    want = sp.encode(text)
    got = enc.encode(text, (), ())
    if got != want:
        at = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        raise AssertionError(f"ids differ at {at}: ours {[sp.id_to_piece(i) for i in got[at:at + 8]]}, "
                             f"sentencepiece's {[sp.id_to_piece(i) for i in want[at:at + 8]]}")
    assert enc.decode_bytes(got).decode("utf-8") == sp.decode(want)


@pytest.fixture(scope="module")
def stories():
    return stories_text()


@pytest.fixture(scope="module")
def byte_model(tmp_path_factory, stories):
    tmp = tmp_path_factory.mktemp("sp")
    return train(tmp, stories, "bytes", vocab_size=800, byte_fallback=True)


def pieces_of(text, size):
    """text cut into pieces of about `size` characters (lines kept whole where short)."""
    out, at = [], 0
    while at < len(text):
        out.append(text[at:at + size])
        at += size
    return out


def test_byte_fallback_model_gives_sentencepiece_ids_on_stories_source_and_multilingual_text(byte_model, stories):
    enc = engine_of(byte_model)
    for text in [stories[:50_000], PYTHON_SOURCE, MULTILINGUAL]:
        same_as_sentencepiece(enc, byte_model, text)
        for piece in pieces_of(text, 97)[:300]:
            same_as_sentencepiece(enc, byte_model, piece)


def test_a_model_without_byte_fallback_gives_one_unknown_id_for_a_run_of_unknown_characters(tmp_path, stories):
    sp = train(tmp_path, stories[:100_000], "unk", vocab_size=500, byte_fallback=False)
    enc = engine_of(sp)
    text = "Tom saw 日本語 and Ελληνικά, then 🐱🐱 left."
    ids = sp.encode(text)
    assert sum(1 for i in ids if sp.is_unknown(i)) == 3  # a run of unknown characters is one id
    for t in [text, MULTILINGUAL, PYTHON_SOURCE, stories[:20_000]]:
        same_as_sentencepiece(enc, sp, t)


@pytest.mark.parametrize("add_dummy_prefix", [True, False])
@pytest.mark.parametrize("remove_extra_whitespaces", [True, False])
def test_the_normalizer_options_as_sentencepiece_reads_them(tmp_path, stories, add_dummy_prefix,
                                                            remove_extra_whitespaces):
    sp = train(tmp_path, stories[:100_000], "opts", vocab_size=500, byte_fallback=True,
               add_dummy_prefix=add_dummy_prefix, remove_extra_whitespaces=remove_extra_whitespaces)
    enc = engine_of(sp, add_dummy_prefix=add_dummy_prefix, remove_extra_whitespaces=remove_extra_whitespaces)
    for text in ["  Two  spaces   and  more   ", " x", "x ", "   ", "", "a\tb\n\nc  d", "Once upon a time.",
                 PYTHON_SOURCE[:3000], MULTILINGUAL, stories[:5000]]:
        same_as_sentencepiece(enc, sp, text)


def test_user_defined_symbols_are_matched_whole(tmp_path, stories):
    symbols = ["<sep>", "Lily", "[CODE]"]
    sp = train(tmp_path, stories[:100_000], "user", vocab_size=500, byte_fallback=True,
               user_defined_symbols=symbols)
    enc = engine_of(sp, user_defined=symbols)
    for text in ["Lily<sep>Tom[CODE] said Lily's <sep><sep>", "<sep>", "x<sep>", stories[:5000], MULTILINGUAL]:
        same_as_sentencepiece(enc, sp, text)
    assert sp.piece_to_id("<sep>") in enc.encode("a<sep>b", (), ())


def test_equal_scores_merge_leftmost_first(tmp_path):
    """Two pieces of one score: the pair further left merges first, as sentencepiece's
    agenda orders them. Built by hand: "ab" and "bc" share a rank, so in "abc" "ab" wins,
    and with "bc" given the lower rank, "bc"."""
    unmade = {SPACE: 3, "a": 4, "b": 5, "c": 6, "ab": 7, "bc": 8}
    def enc(bc_rank):
        ours = {p: 256 + 1 + k for k, p in enumerate(unmade)}
        merges = sorted([[ours["a"], ours["b"], ours["ab"], 1], [ours["b"], ours["c"], ours["bc"], bc_rank]],
                        key=lambda m: m[3])
        rules = {"normalizer": None, "pre_tokenizer": [], "unmade_tokens": unmade, "ranked_merges": merges,
                 "char_merges": {"byte_fallback": False, "unk_id": 0, "fuse_unk": True}}
        return core.Encoder([], special_tokens=["<unk>"], token_ids=list(range(300, 556)) + [0], rules=rules)
    assert enc(1).encode("abc", (), ()) == [7, 6]
    assert enc(1).encode("bcab", (), ()) == [8, 7]
    assert enc(0).encode("abc", (), ()) == [4, 8]


def test_decode_of_invalid_byte_runs_and_unknown_ids_as_sentencepiece(byte_model):
    enc = engine_of(byte_model)
    sp = byte_model
    byte = {int(sp.id_to_piece(i)[3:5], 16): i for i in range(sp.get_piece_size()) if sp.is_byte(i)}
    the = sp.piece_to_id(SPACE + "the")
    cases = [[byte[0xE2], byte[0x96]], [byte[0xE2], byte[0x96], byte[0x81], byte[0xE2]], [byte[0xFF], the],
             [the, byte[0xC3], the, byte[0xA9]], [byte[0x20], the], [the, the], [sp.unk_id(), the], [the, sp.unk_id()],
             [sp.bos_id(), the, sp.eos_id()], [byte[0xE2], sp.eos_id(), byte[0x96], byte[0x81]], [sp.bos_id(), the]]
    for ids in cases:
        assert enc.decode_bytes(ids).decode("utf-8") == sp.decode(ids), ids
    # A streaming decoder's later call strips nothing.
    assert enc.decode_bytes([the], start=False).decode() == " the"


def test_offsets_map_to_the_text_as_given(byte_model):
    enc = engine_of(byte_model)
    text = "  Lily   saw a 🐱 cat."
    ids, spans = enc.encode_with_offsets(text, (), ())
    assert ids == byte_model.encode(text)
    for (start, end) in spans:
        assert 0 <= start <= end <= len(text)


def small_rules(**changes):
    """A tiny char_merges rules dict, with `changes` made to it."""
    unmade = {SPACE: 3, "a": 4, "b": 5, "ab": 6}
    rules = {"normalizer": [{"type": "SentencePiece", "add_dummy_prefix": True, "remove_extra_whitespaces": True,
                             "escape_whitespaces": True}],
             "pre_tokenizer": [], "unmade_tokens": unmade, "ranked_merges": [[258, 259, 260, 0]],
             "char_merges": {"byte_fallback": False, "unk_id": 0, "fuse_unk": True},
             "decoder": {"replace": [SPACE, " "], "strip_start": 1, "unk_text": None}}
    rules.update(changes)
    return rules


def small_encoder(**changes):
    return core.Encoder([], special_tokens=["<unk>"], token_ids=list(range(300, 556)) + [0],
                        rules=small_rules(**changes))


def test_the_small_rules_work():
    enc = small_encoder()
    assert enc.encode("ab a", (), ()) == [3, 6, 3, 4]
    assert enc.encode("ab日本a", (), ()) == [3, 6, 0, 4]  # one unknown id for the run
    assert enc.decode_bytes([3, 6, 3, 4]) == b"ab a"


SP_STEP = {"type": "SentencePiece", "add_dummy_prefix": True, "remove_extra_whitespaces": True,
           "escape_whitespaces": True}


@pytest.mark.parametrize("changes, where", [
    ({"char_merges": "yes"}, "['char_merges']"),
    ({"char_merges": {"byte_fallback": "false", "unk_id": 0, "fuse_unk": True}}, "['char_merges']['byte_fallback']"),
    ({"char_merges": {"byte_fallback": False, "unk_id": "0", "fuse_unk": True}}, "['char_merges']['unk_id']"),
    ({"char_merges": {"byte_fallback": False, "unk_id": -1, "fuse_unk": True}}, "['char_merges']['unk_id']"),
    ({"char_merges": {"byte_fallback": False, "unk_id": 0, "fuse_unk": 1}}, "['char_merges']['fuse_unk']"),
    ({"char_merges": {"byte_fallback": False, "unk_id": 0}}, "['char_merges']"),
    ({"char_merges": {"byte_fallback": False, "unk_id": 0, "fuse_unk": True, "x": 1}}, "['char_merges']"),
    ({"decoder": "strip"}, "['decoder']"),
    ({"decoder": {"replace": SPACE, "strip_start": 1, "unk_text": None}}, "['decoder']['replace']"),
    ({"decoder": {"replace": [SPACE], "strip_start": 1, "unk_text": None}}, "['decoder']['replace']"),
    ({"decoder": {"replace": [SPACE, 1], "strip_start": 1, "unk_text": None}}, "['decoder']['replace'][1]"),
    ({"decoder": {"replace": ["", " "], "strip_start": 1, "unk_text": None}}, "['decoder']['replace'][0]"),
    ({"decoder": {"replace": None, "strip_start": "1", "unk_text": None}}, "['decoder']['strip_start']"),
    ({"decoder": {"replace": None, "strip_start": True, "unk_text": None}}, "['decoder']['strip_start']"),
    ({"decoder": {"replace": None, "strip_start": -1, "unk_text": None}}, "['decoder']['strip_start']"),
    ({"decoder": {"replace": None, "strip_start": 0, "unk_text": 5}}, "['decoder']['unk_text']"),
    ({"decoder": {"replace": None, "strip_start": 0, "unk_text": None, "drop_special": 0}},
     "['decoder']['drop_special']"),
    ({"decoder": {"replace": None, "strip_start": 0, "unk_text": None, "strip_each": "yes"}},
     "['decoder']['strip_each']"),
    ({"normalizer": "NFKC"}, "['normalizer']"),
    ({"normalizer": {"type": "NFC"}}, "['normalizer']"),
    ({"normalizer": [{"type": "NFKD"}]}, "['normalizer'][0]['type']"),
    ({"normalizer": ["NFC"]}, "['normalizer'][0]"),
    ({"normalizer": [{**SP_STEP, "add_dummy_prefix": "true"}]}, "['normalizer'][0]['add_dummy_prefix']"),
    ({"normalizer": [{"type": "SentencePiece"}]}, "['normalizer'][0]"),
    ({"normalizer": [{"type": "NFC", "x": 1}]}, "['normalizer'][0]"),
    ({"normalizer": [{"type": "Replace", "pattern": 1, "content": " "}]}, "['normalizer'][0]['pattern']"),
    ({"normalizer": [{"type": "Replace", "pattern": "", "content": " "}]}, "['normalizer'][0]['pattern']"),
    ({"normalizer": [{"type": "Prepend", "prepend": None}]}, "['normalizer'][0]['prepend']"),
    ({"pre_tokenizer": [{"type": "ByteLevel", "use_regex": False, "add_prefix_space": False, "trim_offsets": False}]},
     "['pre_tokenizer']"),
    ({"ranked_merges": [[258, 259, 260, "0"]]}, "rules[\"ranked_merges\"][0][3]"),
    ({"ranked_merges": [[258, 259, 260, 1 << 24]]}, "rules[\"ranked_merges\"][0][3]"),
    ({"ranked_merges": [[258, 259, 260, 0], [259, 258, 260]]}, "rules[\"ranked_merges\"][1]"),
])
def test_a_wrong_value_of_a_new_key_is_a_value_error_naming_where(changes, where):
    with pytest.raises(ValueError) as e:
        small_encoder(**changes)
    assert where in str(e.value)


@pytest.mark.parametrize("merges, says", [
    ([[258, 259, 258, 0]], "not its two parts joined"),
    ([[258, 259, 260, 1], [259, 258, 260, 0]], "rank"),
    ([[97, 98, 260, 0]], "unmade tokens"),
    ([[258, 259, 260, 0], [258, 259, 260, 1]], "repeats"),
])
def test_ranked_merges_that_cannot_be_are_refused(merges, says):
    with pytest.raises(ValueError, match=says):
        small_encoder(ranked_merges=merges)


def test_equal_ranks_without_char_merges_are_refused():
    rules = {"normalizer": None, "pre_tokenizer": None, "ranked_merges": [[97, 98, 256, 0], [98, 99, 257, 0]]}
    with pytest.raises(ValueError, match="equal ranks need char_merges"):
        core.Encoder([(97, 98), (98, 99)], rules=rules)


def test_an_unknown_id_that_is_no_token_is_refused():
    with pytest.raises(ValueError, match="unk_id"):
        small_encoder(char_merges={"byte_fallback": False, "unk_id": 12345, "fuse_unk": True})


def test_a_text_of_only_unknown_characters_without_unk_or_bytes_gives_no_ids():
    enc = small_encoder(char_merges={"byte_fallback": False, "unk_id": None, "fuse_unk": False})
    assert enc.encode("日本", (), ()) == [3]  # the dummy prefix's piece alone, as Hugging Face drops them


def test_a_piece_that_holds_a_space_after_a_character_keeps_the_text_whole():
    """Words are cut before "▁" only where no piece can span the cut: here "a▁b" does, and
    "a b" is two ids, not four."""
    unmade = {SPACE: 3, "a": 4, "b": 5, "a" + SPACE: 6, "a" + SPACE + "b": 7}
    ours = {p: 257 + k for k, p in enumerate(unmade)}
    merges = [[ours["a"], ours[SPACE], ours["a" + SPACE], 0],
              [ours["a" + SPACE], ours["b"], ours["a" + SPACE + "b"], 1]]
    enc = small_encoder(unmade_tokens=unmade, ranked_merges=merges)
    assert enc.encode("a b", (), ()) == [3, 7]
    assert enc.encode("a b a b", (), ()) == [3, 7, 3, 7]


def test_a_model_trained_without_splitting_by_whitespace_gives_sentencepiece_ids(tmp_path, stories):
    sp = train(tmp_path, stories[:100_000], "nosplit", vocab_size=700, byte_fallback=True, split_by_whitespace=False)
    assert any(SPACE in sp.id_to_piece(i)[1:].lstrip(SPACE) for i in range(sp.get_piece_size()))
    enc = engine_of(sp)
    for text in [stories[:20_000], MULTILINGUAL, PYTHON_SOURCE[:3000]]:
        same_as_sentencepiece(enc, sp, text)


def test_runs_of_spaces_and_whitespace_only_pieces(tmp_path, stories):
    code = PYTHON_SOURCE * 3
    sp = train(tmp_path, code + stories[:50_000], "ws", vocab_size=700, byte_fallback=True,
               allow_whitespace_only_pieces=True, remove_extra_whitespaces=False)
    assert any(sp.id_to_piece(i) == SPACE * 4 for i in range(sp.get_piece_size()))
    enc = engine_of(sp, remove_extra_whitespaces=False)
    for text in [PYTHON_SOURCE, "a    b", "    x", "x    ", stories[:5000]]:
        same_as_sentencepiece(enc, sp, text)


def test_a_bpe_tokenizer_with_these_rules_gives_sentencepiece_ids_by_every_method(byte_model, stories):
    from bpe import BPETokenizer
    tok = BPETokenizer([], **encoder_args(byte_model))
    sp = byte_model
    texts = [stories[:3000], MULTILINGUAL, "  Two  spaces ", ""]
    want = [sp.encode(t) for t in texts]
    assert [tok.encode(t) for t in texts] == want
    assert tok.encode_batch(texts, threads=2) == want
    assert [list(tok.encode_array(t, threads=2)) for t in texts] == want
    assert [tok.decode(ids) for ids in want] == [sp.decode(ids) for ids in want]
    assert tok.count(texts[0]) == len(want[0])


def test_the_streaming_decoder_gives_what_decode_gives(byte_model, stories):
    """A char_merges model's streaming decoder (BPETokenizer.decoder()) runs the rules'
    decoder: its pieces, joined, are decode's text, byte runs that end inside a character
    held back until the character is whole, invalid ones U+FFFD as decode gives them."""
    from bpe import BPETokenizer
    sp = byte_model
    tok = BPETokenizer([], **encoder_args(sp))
    byte = {int(sp.id_to_piece(i)[3:5], 16): i for i in range(sp.get_piece_size()) if sp.is_byte(i)}
    the = sp.piece_to_id(SPACE + "the")
    rng = random.Random(5)
    cases = [sp.encode(t) for t in [MULTILINGUAL, stories[:2000], "  x", "日本"]]
    cases += [[byte[0xE6], byte[0x97]], [byte[0xE6], the, byte[0x97], byte[0xA5]], [the, byte[0xF0], byte[0x9F]],
              [byte[0xC3], byte[0xA9], byte[0xFF], byte[0x80]], [sp.unk_id(), the]]
    pool = list(byte.values()) + [the, sp.unk_id(), sp.piece_to_id("a")]
    cases += [[rng.choice(pool) for _ in range(rng.randrange(1, 12))] for _ in range(300)]
    for ids in cases:
        d = tok.decoder()
        pieces = [d.add(i) for i in ids]
        assert "".join(pieces) + d.flush() == tok.decode(ids) == sp.decode(ids), ids
    d = tok.decoder()
    assert [d.add(i) for i in [byte[0xE6], byte[0x97], byte[0xA5]]] == ["", "", "日"]


@pytest.mark.parametrize("fuse_unk", [True, False])
def test_the_unknown_token_spans_the_characters_it_stands_for(fuse_unk):
    """Its span is the unknown character (or the fused run), not its own text's five
    bytes: two unknown characters side by side raised a RuntimeError."""
    enc = small_encoder(char_merges={"byte_fallback": False, "unk_id": 0, "fuse_unk": fuse_unk})
    for text in ["日本", "a日本b", "ab 日 本", "日"]:
        ids, spans = enc.encode_with_offsets(text, (), ())
        assert ids == enc.encode(text, (), ())
        unknown = [text[start:end] for i, (start, end) in zip(ids, spans) if i == 0]
        assert unknown and all(run and set(run) <= set("日本") for run in unknown)
    ids, spans = enc.encode_with_offsets("a日本b", (), ())
    # The dummy prefix's "▁" from the first character, "a", the unknown, "b".
    unknown = [(1, 3)] if fuse_unk else [(1, 2), (2, 3)]
    assert [tuple(s) for s in spans] == [(0, 1), (0, 1), *unknown, (3, 4)]


def test_without_an_unknown_token_the_characters_left_out_are_in_no_span():
    """Left out, they are in no token's span, unless their neighbours merge across them
    (as Hugging Face's BPE merges them): "a日本b" is "▁" and "ab", over all four."""
    enc = small_encoder(char_merges={"byte_fallback": False, "unk_id": None, "fuse_unk": False})
    for text, want in [("a日本b", [(0, 1), (0, 4)]), ("a日本 b", [(0, 1), (0, 1), (3, 4), (4, 5)]),
                       ("日本", [(0, 1)])]:
        ids, spans = enc.encode_with_offsets(text, (), ())
        assert ids == enc.encode(text, (), ())
        assert [tuple(s) for s in spans] == want


def test_offsets_of_unknown_characters_without_byte_fallback_match_sentencepiece_ids(tmp_path, stories):
    sp = train(tmp_path, stories[:100_000], "unk", vocab_size=500, byte_fallback=False)
    enc = engine_of(sp)
    for text in ["\U0001F600\U0001F600", "猫猫", "the 😀😀 cat", "Tom saw 日本語 and Ελληνικά, then 🐱🐱 left."]:
        ids, spans = enc.encode_with_offsets(text, (), ())
        assert list(ids) == sp.encode(text)
        assert spans[-1][1] == len(text)
