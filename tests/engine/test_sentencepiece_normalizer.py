"""sentencepiece's normalizer in the engine (csrc/normalizer.h, csrc/charsmap.h): the
precompiled character map of an nmt_nfkc model and the whitespace steps, against the
sentencepiece library (its `normalize` and its ids on a model trained here with
nmt_nfkc), and the map read from hostile blobs: a ValueError or a working map, never a
crash or a hang.

The charsmap is read from the .model file here by a few lines of protobuf (ModelProto's
field 3, NormalizerSpec, whose field 2 is the blob), so that the test needs no protobuf.
"""
import base64
import random
import struct
import sys
import time
from pathlib import Path

import pytest

core = pytest.importorskip("bpe._core", reason="the core is not built")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_char_merges import (MULTILINGUAL, PYTHON_SOURCE, encoder_args, engine_of,  # noqa: E402
                              same_as_sentencepiece, stories_text, train)
from protobuf_fields import fields  # noqa: E402

# Characters nmt_nfkc changes: full-width forms, ligatures, compatibility digits,
# decomposed accents, odd spaces and controls, CJK compatibility ideographs.
NFKC_TEXT = ("ＡＢＣ ｱｲｳ ﬁﬂ ① ¼ Å e\u0301 \u3000x\u00a0y\u2003z \t tab\u200b zero\ufeffwidth ㍻ ℡ ™ "
             "ﾊﾟ ｶﾞ \u1100\u1161 Ⅻ ｘ＝ｙ！ \u00ad soft 豈 \r\n line\x0bfeed")


def normalizer_spec(model_path):
    """(charsmap, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces) of a .model."""
    spec = next(v for f, v in fields(Path(model_path).read_bytes()) if f == 3)
    got = dict(fields(spec))
    return (got.get(2, b""), bool(got.get(3, 1)), bool(got.get(4, 1)), bool(got.get(5, 1)))


SP_STEP = {"type": "SentencePiece", "add_dummy_prefix": True, "remove_extra_whitespaces": True,
           "escape_whitespaces": True}


@pytest.fixture(scope="module")
def nfkc_model(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nfkc")
    text = stories_text(150_000) + NFKC_TEXT * 20
    sp = train(tmp, text, "nfkc", vocab_size=700, byte_fallback=True, normalization_rule_name="nmt_nfkc")
    return sp, tmp / "nfkc.model"


def steps_of(model_path):
    charsmap, dummy, extra, escape = normalizer_spec(model_path)
    return [{"type": "Precompiled", "charsmap": base64.b64encode(charsmap).decode()},
            {"type": "SentencePiece", "add_dummy_prefix": dummy, "remove_extra_whitespaces": extra,
             "escape_whitespaces": escape}]


def test_the_model_has_a_charsmap(nfkc_model):
    charsmap = normalizer_spec(nfkc_model[1])[0]
    assert len(charsmap) > 1000


def texts():
    out = [NFKC_TEXT, MULTILINGUAL, PYTHON_SOURCE[:4000], "", "   ", "\u3000\u3000a\u3000\u3000", " ① ", "ﬁ"]
    out += [NFKC_TEXT[i:i + 7] for i in range(0, len(NFKC_TEXT), 3)]
    return out


def test_normalize_gives_sentencepiece_normalize(nfkc_model):
    sp, path = nfkc_model
    steps = steps_of(path)
    for text in texts():
        got, origin = core.normalize(text, steps)
        assert got == sp.normalize(text), text
        assert len(origin) == len(got.encode()) + 1


def test_the_map_alone_leaves_spaces_and_adds_no_prefix(nfkc_model):
    sp, path = nfkc_model
    alone = steps_of(path)[:1]
    plain = [{**SP_STEP, "add_dummy_prefix": False, "remove_extra_whitespaces": False, "escape_whitespaces": False}]
    for text in ["ＡＢＣ  ﬁ", "x\u3000y"]:
        # sentencepiece's whitespace steps doing nothing: the map's replacements alone.
        assert core.normalize(text, alone)[0] == core.normalize(text, steps_of(path)[:1] + plain)[0]
    assert core.normalize("ＡＢＣ ﬁ", alone)[0] == "ABC fi"


def test_nfkc_model_ids_are_sentencepiece_ids(nfkc_model):
    sp, path = nfkc_model
    charsmap, dummy, extra, escape = normalizer_spec(path)
    enc = engine_of(sp, dummy, extra, escape, charsmap=charsmap)
    for text in texts() + [stories_text(30_000)]:
        same_as_sentencepiece(enc, sp, text)


def test_offsets_through_the_map_stay_in_the_text(nfkc_model):
    sp, path = nfkc_model
    charsmap, dummy, extra, escape = normalizer_spec(path)
    enc = engine_of(sp, dummy, extra, escape, charsmap=charsmap)
    ids, spans = enc.encode_with_offsets(NFKC_TEXT, (), ())
    assert ids == sp.encode(NFKC_TEXT)
    starts = [int(s) for s, _ in spans]
    assert starts == sorted(starts) and all(0 <= s <= e <= len(NFKC_TEXT) for s, e in spans)



@pytest.mark.parametrize("text", ["e\u0301x", "a ｱﾞ b", "x e\u0301\u0323 y", "Å\u0301"])
def test_a_character_the_map_makes_of_several_spans_them_all(nfkc_model, text):
    """nmt_nfkc composes "e\u0301" into "é": its token spans both characters, (0, 2), as
    Hugging Face's offsets give a replacement, so that every character lies in a span
    (it was (0, 1), the combining mark in none)."""
    sp, path = nfkc_model
    charsmap, dummy, extra, escape = normalizer_spec(path)
    enc = engine_of(sp, dummy, extra, escape, charsmap=charsmap)
    ids, spans = enc.encode_with_offsets(text, (), ())
    assert ids == sp.encode(text)
    covered = {k for start, end in spans for k in range(start, end)}
    assert covered == set(range(len(text)))
    if text == "e\u0301x":
        assert (0, 2) in [tuple(s) for s in spans]


# --- hostile blobs ---------------------------------------------------------------------

def precompiled(blob):
    return [{"type": "Precompiled", "charsmap": base64.b64encode(blob).decode()}]


def unit(label=0, leaf=False, offset=0, value=None):
    """A darts-clone unit: a label, a leaf flag and an offset to the children (or a value)."""
    if value is not None:
        return struct.pack("<I", value | (1 << 31))
    return struct.pack("<I", label | (leaf << 8) | (offset << 10))


FILLER = unit(value=0)  # a unit no search steps onto: bit 31 is part of its label


def blob(units, replacements, whole_blocks=True):
    """The units (filled up to whole 1,024-byte blocks, as sentencepiece requires unless
    whole_blocks is False) and the replacements."""
    units = list(units)
    while whole_blocks and len(units) % 256:
        units.append(FILLER)
    trie = b"".join(units)
    return struct.pack("<I", len(trie)) + trie + replacements


def one_rule(replacement):
    """A map holding one key, 'a', replaced by `replacement`."""
    units = [FILLER] * 256
    units[0] = unit(label=255, offset=0)
    units[97] = unit(label=97, leaf=True, offset=97 ^ 200)  # 'a' -> base 200, its value there
    units[200] = unit(value=0)
    return blob(units, replacement + b"\x00")


def chain(depth):
    """A map that is one path of `depth` nodes labelled 'a' (no leaf): a search from every
    place of a text of 'a's would walk min(depth, the rest of the text) steps."""
    nodes = [j for j in range(1, depth + 2) if j != 97][:depth]  # node 0 is the root
    units = [FILLER] * (max(nodes) + 2)
    units[0] = unit(offset=nodes[0] ^ 97)  # label 0: no node's base is 0, so none steps back here
    for j, following in zip(nodes, nodes[1:] + [max(nodes) + 1]):
        units[j] = unit(label=97, offset=j ^ following ^ 97)
    return blob(units, b"\x00")


@pytest.mark.parametrize("data, says", [
    (b"", "too short"),
    (b"\x01\x00", "too short"),
    (struct.pack("<I", 400) + b"\x00" * 16, "cannot hold"),
    (struct.pack("<I", 0xFFFFFFFF) + b"\x00" * 16, "cannot hold"),
    (struct.pack("<I", 6) + b"\x00" * 16, "cannot hold"),
    (struct.pack("<I", 0) + b"abc\x00", "cannot hold"),
])
def test_a_blob_whose_sizes_do_not_fit_is_a_value_error(data, says):
    with pytest.raises(ValueError, match=says) as e:
        core.normalize("abc", precompiled(data))
    assert "['normalizer'][0]['charsmap']" in str(e.value)


def test_a_blob_that_is_not_base64_is_a_value_error():
    with pytest.raises(ValueError, match=r"\['charsmap'\] is not base64"):
        core.normalize("abc", [{"type": "Precompiled", "charsmap": "not base64!"}])


def small_map():
    """A handmade map: "a" -> "X", "ab" -> "YZ". The root (unit 0: base 0 ^ offset 0 = 0,
    its label one no search steps on) has its children at 0 ^ label: 'a' at 97, base
    97 ^ 64 = 33, a leaf below it (its value at 33 ^ 0); 'b' from there at 33 ^ 98 = 67, a
    leaf, base and value at 67 ^ 32 = 99."""
    units = [b"\x00" * 4] * 128
    units[0] = unit(label=255, offset=0)
    units[97] = unit(label=97, leaf=True, offset=64)  # 'a' -> base 33
    units[33] = unit(value=0)                           # "a" -> "X"
    units[33 ^ 98] = unit(label=98, leaf=True, offset=32)  # "ab" -> base 67 ^ 32 = 99
    units[99] = unit(value=2)                           # "ab" -> "YZ"
    return blob(units, b"X\x00YZ\x00")


def test_a_small_handmade_map_replaces_the_longest_prefix():
    assert core.normalize("aabca", precompiled(small_map()))[0] == "XYZcX"


def by_longest_prefix(text, keys):
    out, i = [], 0
    while i < len(text):
        key = max((k for k in keys if text.startswith(k, i)), key=len, default=None)
        out.append(keys[key] if key else text[i])
        i += len(key) if key else 1
    return "".join(out)


def deep_map():
    """"abc" -> "Y" and "abcd" -> "Z": a search from "abc" reads 4 or 5 bytes."""
    units = [FILLER] * 256
    units[0] = unit(label=255, offset=0)                    # the root, its children at 0 ^ label
    units[97] = unit(label=97, offset=97 ^ 128)             # 'a', children at 128 ^ label
    units[128 ^ 98] = unit(label=98, offset=(128 ^ 98) ^ 64)  # 'b', children at 64 ^ label
    units[64 ^ 99] = unit(label=99, leaf=True, offset=(64 ^ 99) ^ 16)  # 'c': "abc", its value at 16
    units[16] = unit(value=0)
    units[16 ^ 100] = unit(label=100, leaf=True, offset=(16 ^ 100) ^ 200)  # 'd': "abcd", its value at 200
    units[200] = unit(value=2)
    return blob(units, b"Y\x00Z\x00")


@pytest.mark.parametrize("seed", range(3))
def test_searches_kept_from_the_same_bytes_give_what_a_search_gives(seed):
    """A thread keeps its last searches by the bytes they read (Charsmap::PrefixMemo):
    places whose first bytes agree and whose next ones differ ("abcd" and "abce", "ab"
    and "ac"), in texts long enough for the memo, under three maps in turn."""
    rng = random.Random(seed)
    maps = [(deep_map(), {"abc": "Y", "abcd": "Z"}), (small_map(), {"a": "X", "ab": "YZ"}),
            (one_rule(b"Q"), {"a": "Q"})]
    parts = ["abcd", "abce", "abc", "ab", "a", "c", "e"]
    # sentencepiece's step after the map, writing nothing of its own: encode's loop
    # (no origins) tries the memo before it searches (Charsmap::remembered).
    plain = {"type": "SentencePiece", "add_dummy_prefix": False, "remove_extra_whitespaces": False,
             "escape_whitespaces": False}
    for _ in range(20):
        text = "".join(rng.choice(parts) for _ in range(rng.randrange(3, 200)))
        for data, keys in maps:
            expected = by_longest_prefix(text, keys)
            assert core.normalize(text, precompiled(data))[0] == expected, text
            for steps in (precompiled(data), precompiled(data) + [plain]):
                assert core.normalize(text, steps, origins=False) == (expected, None), text


def test_a_trie_with_a_cycle_is_refused_not_searched_forever():
    # From the root's base 0, 'a' steps onto unit 97 (base 97), whose 'a' steps onto unit
    # 0 (base 0), and so on: a search along "aaaa..." would read the whole text each time.
    units = [b"\x00" * 4] * 128
    units[0] = unit(label=97, offset=0)
    units[97] = unit(label=97, offset=0)
    data = blob(units, b"X\x00")
    with pytest.raises(ValueError, match="cycle"):
        core.normalize("a" * 100_000, precompiled(data))


def test_a_leaf_value_outside_the_replacements_is_refused():
    units = [b"\x00" * 4] * 128
    units[0] = unit(label=255, offset=0)
    units[97] = unit(label=97, leaf=True, offset=64)
    units[33] = unit(value=1000)
    with pytest.raises(ValueError, match="NUL-terminated"):
        core.normalize("a", precompiled(blob(units, b"X\x00")))
    units[33] = unit(value=0)
    with pytest.raises(ValueError, match="NUL-terminated"):
        core.normalize("a", precompiled(blob(units, b"XYZ")))  # no NUL after it


def test_random_and_mutated_blobs_are_refused_or_work(nfkc_model):
    """A blob cut, flipped or made up: a ValueError, or a map that normalizes a text in
    bounded time; never a crash."""
    real = normalizer_spec(nfkc_model[1])[0]
    rng = random.Random(7)
    candidates = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(4, 600))) for _ in range(200)]
    for _ in range(200):
        data = bytearray(real)
        for _ in range(rng.randrange(1, 20)):
            data[rng.randrange(4, len(data))] = rng.getrandbits(8)
        candidates.append(bytes(data))
    candidates += [real[:n] for n in (4, 5, 8, 100, len(real) // 2, len(real) - 1)]
    text = NFKC_TEXT * 20
    refused = 0
    for data in candidates:
        start = time.perf_counter()
        try:
            out, origin = core.normalize(text, precompiled(data) + [SP_STEP])
        except ValueError:
            refused += 1
            continue
        assert len(origin) == len(out.encode()) + 1
        assert time.perf_counter() - start < 2
    assert 0 < refused < len(candidates)


@pytest.mark.parametrize("rule, options", [
    ("nmt_nfkc", dict(byte_fallback=True, split_digits=True)),
    ("nmt_nfkc", dict(byte_fallback=False, add_dummy_prefix=False)),
    ("nmt_nfkc", dict(byte_fallback=True, remove_extra_whitespaces=False, allow_whitespace_only_pieces=True)),
    ("nmt_nfkc", dict(byte_fallback=True, user_defined_symbols=["<sep>", "ＡＢ"])),
    ("identity", dict(byte_fallback=True, user_defined_symbols=["<sep>", "ＡＢ"])),
    ("identity", dict(byte_fallback=False, remove_extra_whitespaces=False)),
    ("nmt_nfkc", dict(byte_fallback=True, add_dummy_prefix=False, remove_extra_whitespaces=False)),
])
def test_random_texts_give_sentencepiece_ids(tmp_path, rule, options):
    """Texts made of pieces of the stories, odd spaces, characters the map changes and
    characters no piece covers, at random, on models trained with several options."""
    sp = train(tmp_path, stories_text(60_000) + NFKC_TEXT * 5, "r", vocab_size=500,
               normalization_rule_name=rule, **options)
    charsmap, dummy, extra, escape = normalizer_spec(tmp_path / "r.model")
    enc = engine_of(sp, dummy, extra, escape, charsmap=charsmap or None,
                    user_defined=options.get("user_defined_symbols", ()))
    rng = random.Random(3)
    parts = stories_text(5000).split(" ") + list(NFKC_TEXT) + list(MULTILINGUAL) + \
        [" ", "  ", "\u3000", "\t", "\n", "12345", "<sep>", "ＡＢ", "\u0301", "\u00a0"]
    for _ in range(300):
        text = "".join(rng.choice(parts) + rng.choice(["", " "]) for _ in range(rng.randrange(0, 12)))
        same_as_sentencepiece(enc, sp, text)


# Characters that keys of nmt_nfkc begin and go on from (a letter, a kana, a jamo, an
# Arabic letter before the mark that joins it), those marks, characters the map replaces
# or leaves alone in planes 0 and 1 (emoji, mathematical letters), one past them (plane
# 2) and spaces: the map's run without a search (Charsmap::alone_run) stops exactly where
# a search would find a key.
JOINING = ["e", "a", "A", "u", "и", "е", "α", "カ", "ｶ", "ﾊ", "\u1100", "\u1161", "\u11a8", "\u0627", "ー",
           "\u0301", "\u0306", "\u030a", "\u0308", "\u3099", "\u309a", "\uff9e", "\uff9f", "\u0654", "\u0653",
           "😀", "👍", "\U0001f3fd", "\u200d", "𝐀", "\U0001d7d8", "\U00020000", "\U0002f800", "①", "ﬁ", "½",
           " ", "  ", "\u3000", "\n", "\t", "x", "1", "中", "\ufeff"]


@pytest.mark.parametrize("seed", range(3))
def test_characters_that_keys_go_on_from_read_as_a_search_reads_them(nfkc_model, seed):
    sp, path = nfkc_model
    charsmap, dummy, extra, escape = normalizer_spec(path)
    steps = steps_of(path)
    enc = engine_of(sp, dummy, extra, escape, charsmap=charsmap)
    rng = random.Random(seed)
    for _ in range(400):
        text = "".join(rng.choice(JOINING) for _ in range(rng.randrange(1, 16)))
        assert core.normalize(text, steps)[0] == sp.normalize(text), ascii(text)
        same_as_sentencepiece(enc, sp, text)


def test_a_step_that_grew_the_text_leaves_the_map_within_the_limit(nfkc_model):
    """A Replace before the map writes 32 bytes for each "a": room for every space made
    "▁" would pass the growth limit, though what the map's step writes (each run of
    spaces one "▁") does not, so encode goes on as encode_with_offsets does, each
    write checked."""
    sp, path = nfkc_model
    charsmap, dummy, extra, escape = normalizer_spec(path)
    assert extra
    args = encoder_args(sp, dummy, extra, escape, charsmap=charsmap)
    args["rules"]["normalizer"].insert(0, {"type": "Replace", "pattern": "a", "content": "a" + " " * 31})
    enc = core.Encoder([], **args)
    text = "a" * 5000
    assert enc.encode(text, (), ()) == enc.encode_with_offsets(text, (), ())[0]
    assert len(enc.encode(text, (), ())) >= 5000


def test_a_trie_not_in_whole_1024_byte_blocks_is_refused():
    units = [FILLER] * 128
    units[0] = unit(label=255, offset=0)
    assert core.normalize("abc", precompiled(blob(units, b"X\x00")))[0] == "abc"
    with pytest.raises(ValueError, match="not a multiple of 1,024"):
        core.normalize("abc", precompiled(blob(units, b"X\x00", whole_blocks=False)))


def test_a_deep_trie_is_refused_so_that_a_search_is_bounded():
    """One path of 20,000 'a' nodes: each place of a text of 'a's would walk 20,000 steps
    (16 s for 200,000 characters). A path longer than 256 bytes is refused by name; 256
    is searched."""
    assert core.normalize("a" * 1000, precompiled(chain(256)))[0] == "a" * 1000
    for depth in (257, 20_000):
        with pytest.raises(ValueError, match="path of over 256 bytes") as e:
            core.normalize("a" * 200_000, precompiled(chain(depth)))
        assert "['normalizer'][0]['charsmap']" in str(e.value)


def test_a_deep_path_through_shared_children_is_refused():
    """Two nodes with the same children: the second reaches them deeper than the first,
    so their depth is not the depth first met."""
    units = [FILLER] * 2048
    units[0] = unit(label=255, offset=0)
    # 'b' -> node 98 (base 300), then a path of 250 'a' nodes (depths 2-251);
    # 'c' -> node 99, then 10 'c' nodes (depths 2-11), the last with base 300 too: the
    # 'a' nodes again, at depths 12-261.
    units[98] = unit(label=98, offset=98 ^ 300)
    at = 300
    for k in range(250):
        node, following = at ^ 97, 400 + 2 * k
        units[node] = unit(label=97, offset=node ^ following)
        at = following
    units[99] = unit(label=99, offset=99 ^ 1200)
    at = 1200
    for k in range(10):
        node = at ^ 99
        following = 300 if k == 9 else 1202 + 2 * k
        units[node] = unit(label=99, offset=node ^ following)
        at = following
    data = precompiled(blob(units, b"\x00"))
    with pytest.raises(ValueError, match="path of over 256 bytes"):
        core.normalize("b" + "a" * 300, data)


def test_a_map_whose_characters_share_wide_children_is_read_in_bounded_time():
    """Every character of two bytes a path with no leaf, all their children one node
    base, under which characters of three and four bytes branch 64 ways at each byte:
    the characters that may follow a whole one (Charsmap's classes) would be billions of
    steps to list one node at a time. The map replaces nothing, so the text comes out as
    the whitespace step alone writes it."""
    units = [FILLER] * (7 * 256)
    units[0] = unit(label=255, offset=0)  # the root; its children at 0 ^ byte

    def children_at(index, label, base):
        units[index] = unit(label=label, offset=index ^ base)

    for lead in range(0xC2, 0xE0):
        children_at(lead, lead, 256)
    for c in range(0x80, 0xC0):
        children_at(256 + c, c, 512)  # every two-byte character: children at 512
    for lead in list(range(0xE0, 0xF0)) + list(range(0xF0, 0xF5)):
        children_at(512 + lead, lead, 768)
    for c in range(0x80, 0xC0):
        children_at(768 + c, c, 1024)
        children_at(1024 + c, c, 1280)
        children_at(1280 + c, c, 1536)
    steps = precompiled(blob(units, b"\x00")) + [SP_STEP]
    text = "é x\u0600\u07ff a\u0800 中 😀 ü" * 50
    start = time.perf_counter()
    got = core.normalize(text, steps)[0]
    assert time.perf_counter() - start < 2
    assert got == core.normalize(text, [SP_STEP])[0]


def test_a_long_replacement_is_refused():
    """'a' -> 1,000,000 bytes: 3,000 'a's would normalize to 3 GB."""
    assert core.normalize("aa", precompiled(one_rule(b"b" * 256)))[0] == "b" * 512
    with pytest.raises(ValueError, match="replacement of 257 bytes"):
        core.normalize("a", precompiled(one_rule(b"b" * 257)))
    with pytest.raises(ValueError, match="replacement of 1000000 bytes"):
        core.normalize("a" * 3000, precompiled(one_rule(b"b" * 1_000_000)) + [SP_STEP])


@pytest.mark.parametrize("replacement", [b"\xff\xfe", b"x\xc3", b"\xed\xa0\x80", b"\xc0\x80"])
def test_a_replacement_that_is_not_utf8_is_refused(replacement):
    """sentencepiece cuts the normalized text into characters by their lead bytes, which
    a text that is not UTF-8 does not have."""
    assert core.normalize("a", precompiled(one_rule("é".encode())))[0] == "é"
    with pytest.raises(ValueError, match="not valid UTF-8"):
        core.normalize("a", precompiled(one_rule(replacement)))


BOUNDED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from bpe import _core as core
try:
    core.normalize("a" * 3000, {steps})
except ValueError as e:
    print(e)
    sys.exit(0)
sys.exit(3)
"""


@pytest.mark.parametrize("steps", [
    '[{"type": "Replace", "pattern": "a", "content": "b" * 1_000_000}]',
    '[{"type": "Replace", "pattern": "a", "content": "a" * 20}] * 3',
    '[{"type": "Prepend", "prepend": "b" * 1_000_000}]',
])
def test_rules_that_grow_a_text_without_bound_are_a_value_error(steps):
    """A Replace of 'a' by 1 MB makes 3 KB of 'a's 3 GB (a crash under a 2 GB limit); the
    normalizer stops at 32 times the text and 64 KiB more, with a ValueError, in a child
    so that the crash it was fails the test, not the run."""
    import subprocess
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", BOUNDED.format(steps=steps)], cwd=root, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "32 times the text" in out.stdout
    grown = core.normalize("a" * 3000, [{"type": "Replace", "pattern": "a", "content": "b" * 20}])[0]
    assert grown == "b" * 60_000
