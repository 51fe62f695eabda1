"""Added tokens matched as Hugging Face matches them (csrc/added_tokens.h, seen through
bpe._core.added_token_segments): leftmost-longest without overlap, lstrip and rstrip over
Rust's whitespace, single_word over Rust's word characters, a skipped special or a refused
single_word match read no more, and the two passes (tokens not normalized in the text as
given, then the normalized ones in the text between).

The oracle is Hugging Face's `tokenizers`: a WordLevel model that knows no word gives the
unknown id to every piece of text between added tokens, so its Encoding lists exactly the
segments, each with its character offsets: the added tokens with their ids, and the text
between with id 0.
"""
import random
import time

import pytest

from bpe import _core

tokenizers = pytest.importorskip("tokenizers")

UNK = 0
FLAGS = ("special", "normalized", "lstrip", "rstrip", "single_word")


def entry(content, **flags):
    """An "added_tokens" entry as the rules dict holds it (its id set by hugging_face)."""
    return {"content": content, "id": 0, **{flag: bool(flags.get(flag, False)) for flag in FLAGS}}


def hugging_face(tokens, vocab=None):
    """A Tokenizer whose model gives UNK to any text, with `tokens` added in order; the
    entries' ids are set to the ones Hugging Face gives them."""
    model = tokenizers.models.WordLevel({"[UNK]": UNK, **(vocab or {})}, unk_token="[UNK]")
    tok = tokenizers.Tokenizer(model)
    tok.add_tokens([tokenizers.AddedToken(t["content"], single_word=t["single_word"], lstrip=t["lstrip"],
                                          rstrip=t["rstrip"], normalized=t["normalized"], special=t["special"])
                    for t in tokens])
    ids = {token.content: k for k, token in tok.get_added_tokens_decoder().items()}
    for t in tokens:
        t["id"] = ids[t["content"]]
    return tok


def hf_segments(tok, text, specials):
    """Hugging Face's pieces of text: (begin, end, id) in characters, UNK for text."""
    tok.encode_special_tokens = not specials
    encoding = tok.encode(text, add_special_tokens=False)
    return [(begin, end, i) for i, (begin, end) in zip(encoding.ids, encoding.offsets)]


def ours(text, tokens, specials, vocab=None):
    """Both passes, as Hugging Face runs them without a normalizer: the tokens that are not
    normalized in the text, then the normalized ones in each piece of text between (a piece
    gets the oracle's id: UNK, or its vocab's id for a piece that is a word of it)."""
    allowed = "all" if specials else []
    out = []
    for begin, end, i in _core.added_token_segments(text, tokens, False, allowed):
        if i is not None:
            out.append((begin, end, i))
            continue
        for b, e, j in _core.added_token_segments(text[begin:end], tokens, True, allowed):
            piece = text[begin + b:begin + e]
            out.append((begin + b, begin + e, (vocab or {}).get(piece, UNK) if j is None else j))
    return out


def check(tokens, text, specials=True, vocab=None):
    tok = hugging_face(tokens, vocab)
    expected = hf_segments(tok, text, specials)
    assert ours(text, tokens, specials, vocab) == expected, (text, tokens, specials)
    return expected


# --- the hostile round's findings ------------------------------------------------------------


def test_single_word_after_a_line_end():
    # Rust's `\w$` does not match before a final newline, so "word\n" ends with no word.
    tokens = [entry("tok", single_word=True)]
    got = check(tokens, "word\ntok")
    assert got[-1] == (5, 8, tokens[0]["id"])
    check(tokens, "word\ntok\n")
    check(tokens, "wordtok")  # glued to a word: text


@pytest.mark.parametrize("control", ["\x1c", "\x1d", "\x1e", "\x1f"])
def test_strip_keeps_the_separators_that_rust_does_not_call_space(control):
    tokens = [entry("<a>", lstrip=True, rstrip=True)]
    got = check(tokens, f"x{control}<a>{control}y")
    assert got == [(0, 2, UNK), (2, 5, tokens[0]["id"]), (5, 7, UNK)]
    check(tokens, f"x {control} <a> {control} y")


@pytest.mark.parametrize("space", [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x85", "\u00a0", "\u2028", "\u3000",
                                   "\u200b", "\ufeff"])
def test_strip_takes_rusts_whitespace_only(space):
    tokens = [entry("<a>", lstrip=True, rstrip=True)]
    check(tokens, f"x{space}{space}<a>{space}y")


def test_an_lstrip_token_inside_the_spaces_an_rstrip_token_took_is_dropped():
    tokens = [entry("<a>", rstrip=True), entry("\n", lstrip=True)]
    got = check(tokens, "<a> \nx")
    assert got == [(0, 5, tokens[0]["id"]), (5, 6, UNK)]


def test_a_token_inside_the_spaces_an_rstrip_token_took_is_given_again():
    # Hugging Face finds the next match before it strips, and keeps it: offsets overlap.
    tokens = [entry("<a>", rstrip=True), entry(" ")]
    got = check(tokens, "<a>  \t x")
    space = tokens[1]["id"]
    assert got == [(0, 7, tokens[0]["id"]), (3, 4, space), (4, 5, space), (5, 6, UNK), (6, 7, space), (7, 8, UNK)]


def test_a_reversed_match_where_hugging_face_panics_is_dropped():
    # The "\n" token, lstrip, ends before the spaces "<a>" took: Hugging Face panics on the
    # reversed range; here it is dropped, as the empty one is, and "<a>" keeps its spaces.
    tokens = [entry("<a>", rstrip=True), entry("\n", lstrip=True)]
    tok = hugging_face(tokens)
    with pytest.raises(BaseException, match="bad split"):
        hf_segments(tok, "<a>\n x", True)
    assert ours("<a>\n x", tokens, True) == [(0, 5, tokens[0]["id"]), (5, 6, UNK)]


def test_a_special_token_that_is_also_a_vocabulary_token():
    tokens = [entry("e", special=True)]
    tok = hugging_face(tokens, vocab={"e": 1})
    assert tokens[0]["id"] == 1
    for specials in (True, False):
        for text in ("hello", "e", "eee", " e "):
            assert ours(text, tokens, specials, {"e": 1}) == hf_segments(tok, text, specials)
    assert ours("hello", tokens, True) == [(0, 1, UNK), (1, 2, 1), (2, 5, UNK)]
    assert ours("hello", tokens, False) == [(0, 5, UNK)]


# --- matching: leftmost-longest, and what a refused match leaves ----------------------------


def test_the_longest_token_at_the_leftmost_place_wins():
    tokens = [entry("<s"), entry("<s>"), entry("s><"), entry(">")]
    got = check(tokens, "a<s><s>>s><")
    assert [i for _, _, i in got].count(tokens[1]["id"]) == 2


def test_a_skipped_special_is_not_read_again_for_a_shorter_token():
    tokens = [entry("<s>", special=True), entry("<s")]
    got = check(tokens, "x<s>y", specials=False)
    assert got == [(0, 5, UNK)]
    check(tokens, "x<s>y", specials=True)


def test_a_refused_single_word_match_is_not_read_again():
    tokens = [entry("ab", single_word=True), entry("b")]
    assert check(tokens, "xab") == [(0, 3, UNK)]
    check(tokens, "x ab b")


def test_single_word_uses_rusts_word_characters():
    tokens = [entry("tok", single_word=True)]
    for glue in ["é", "\u0301", "_", "٣", "\u200d", "Ⅳ", "²", "-", "\u00a0", "\x1c", "中", "😀"]:
        check(tokens, f"{glue}tok")
        check(tokens, f"tok{glue}")


def test_lstrip_stops_at_the_token_before():
    tokens = [entry("<a>"), entry("<b>", lstrip=True)]
    check(tokens, "<a>   <b>")
    check(tokens, "x  <a>\t\t<b>  ")


def test_no_token_first_byte_means_one_text_segment():
    tokens = [entry("<|a|>"), entry("<|bb|>", special=True)]
    text = "plain text " * 1000
    assert _core.added_token_segments(text, tokens, False) == [(0, len(text), None)]
    assert _core.added_token_segments("", tokens, False) == []
    assert _core.added_token_segments("x<|a|>", tokens, True) == [(0, 6, None)]  # the other pass's tokens


def test_many_tokens_sharing_first_bytes():
    tokens = [entry(f"<|t{k}|>", special=k % 3 == 0) for k in range(300)] + [entry(f"[{k}]") for k in range(50)]
    rng = random.Random(5)
    tok = hugging_face(tokens)
    for _ in range(20):
        text = "".join(rng.choice([rng.choice(tokens)["content"], "<|t", "x ", "[", "|>", "é"]) for _ in range(40))
        for specials in (True, False):
            assert ours(text, tokens, specials) == hf_segments(tok, text, specials)


@pytest.mark.parametrize("flags", [{"rstrip": True}, {"lstrip": True}, {"lstrip": True, "rstrip": True}])
def test_space_tokens_that_strip_cost_the_text_once(flags):
    # Every space starts a match inside the spaces the match before took: Hugging Face
    # strips from each again (its time grows with the square of the run); here a run is
    # read once, with the same segments.
    tokens = [entry(" ", **flags), entry("<a>", rstrip=True)]
    for text in (" " * 50, "x" + " " * 30 + "<a>" + " " * 40 + "y", "<a>" + " \t" * 20 + "<a>"):
        try:
            check(tokens, text)
        except BaseException as e:  # Hugging Face's panic on a reversed split (lstrip after "<a>")
            if "bad split" not in str(e):
                raise
    text = " " * 200_000
    start = time.perf_counter()
    got = _core.added_token_segments(text, tokens, False)
    elapsed = time.perf_counter() - start
    assert got[0][0] == 0 and max(end for _, end, _ in got) == len(text)
    assert elapsed < 1.0, f"{elapsed:.2f} s for {len(text)} spaces"


@pytest.mark.parametrize("firsts", [["<a>"], ["<a>", "é!"], ["<a>", "é!", "中x", "[b]"], ["<a>", "é!", "中x", "[b]", "1", "?"]])
def test_tokens_found_at_every_place_of_a_long_text(firsts):
    # One first byte, a few, or many: each way of finding where a token may begin,
    # with the token at every place of a text longer than a block of 16 bytes.
    tokens = [entry(content) for content in firsts]
    tok = hugging_face(tokens)
    for token in tokens:
        for before in range(40):
            text = "y" * before + token["content"] + "z" * (40 - before) + token["content"]
            assert ours(text, tokens, True) == hf_segments(tok, text, True)


# --- the entries' checks ----------------------------------------------------------------------


@pytest.mark.parametrize("field", FLAGS)
def test_a_flag_written_as_a_str_is_refused_by_name(field):
    token = entry("<a>")
    token[field] = "false"
    with pytest.raises(ValueError, match=rf"tokens\[0\]\['{field}'\] must be True or False, not str 'false'"):
        _core.added_token_segments("x<a>", [token], False)


@pytest.mark.parametrize("change, error, words", [
    ({"content": ""}, ValueError, r"\['content'\] is empty"),
    ({"content": 5}, ValueError, r"\['content'\] must be a str"),
    ({"id": -1}, ValueError, r"\['id'\]"),
    ({"id": "3"}, ValueError, r"\['id'\] must be an int"),
    ({"id": True}, ValueError, r"\['id'\] must be an int"),
    ({"id": 2**40}, ValueError, r"\['id'\]"),
    ({"rstip": True}, ValueError, "rstip"),
])
def test_a_bad_entry_is_refused_by_name(change, error, words):
    with pytest.raises(error, match=words):
        _core.added_token_segments("x", [{**entry("<a>"), **change}], False)


def test_a_missing_key_a_repeated_content_and_bad_arguments_are_refused():
    token = entry("<a>")
    del token["lstrip"]
    with pytest.raises(ValueError, match=r"tokens\[0\] has no 'lstrip'"):
        _core.added_token_segments("x", [token], False)
    with pytest.raises(ValueError, match="twice"):
        _core.added_token_segments("x", [entry("<a>"), entry("<a>", special=True)], False)
    # the same content in the two passes is two tokens, one a pass
    _core.added_token_segments("x", [entry("<a>"), entry("<a>", normalized=True)], False)
    with pytest.raises(ValueError, match=r"tokens\[0\] must be a dict"):
        _core.added_token_segments("x", ["<a>"], False)
    with pytest.raises(ValueError, match="special"):
        _core.added_token_segments("x", [entry("<a>")], False, ["<a>"])
    with pytest.raises(ValueError, match="all"):
        _core.added_token_segments("x", [entry("<a>")], False, "none")
    with pytest.raises(ValueError, match="surrogate"):
        _core.added_token_segments("x\ud800", [entry("<a>")], False)


# --- a random comparison with Hugging Face -----------------------------------------------------

SPACES = [" ", " ", "\n", "\t", "\x1c", "\x1d", "\x1e", "\x1f", "\u00a0", "\u3000", "\r\n"]
OTHERS = ["a", "b", "e", "é", "\u0301", "_", "1", "٣", "<", ">", "|", "-", ".", "中", "😀"]


def random_tokens(rng, most=6, longest=4):
    """A few tokens over a small alphabet, so that they overlap, hold each other as
    prefixes and contain spaces; flags at random."""
    contents = set()
    for _ in range(rng.randint(1, most)):
        kind = rng.random()
        if kind < 0.15:
            content = rng.choice(SPACES) * rng.randint(1, 2)
        elif kind < 0.3 and contents:
            base = rng.choice(sorted(contents))
            content = base + "".join(rng.choice(OTHERS[:8]) for _ in range(rng.randint(1, 2)))
        elif kind < 0.4:
            content = "".join(rng.choice(OTHERS) for _ in range(rng.randint(1, longest)))
        else:
            content = "".join(rng.choice(OTHERS[:10] + [" "]) for _ in range(rng.randint(1, longest)))
        contents.add(content)
    return [entry(c, **{flag: rng.random() < 0.35 for flag in FLAGS}) for c in sorted(contents, key=lambda _: rng.random())]


def random_text(rng, tokens, pieces=14):
    out = []
    for _ in range(rng.randint(0, pieces)):
        kind = rng.random()
        if kind < 0.4:
            out.append(rng.choice(tokens)["content"])
        elif kind < 0.7:
            out.append(rng.choice(SPACES) * rng.randint(1, 3))
        else:
            out.append(rng.choice(OTHERS))
    return "".join(out)


def compare_random(rng, rounds: int, make_tokens, make_text) -> tuple[int, int]:
    """rounds sets of tokens, five texts each, matched by us and by Hugging Face (the
    special ones in 60% of them): (texts compared, texts where Hugging Face panics,
    which we match without an error)."""
    compared = refused = 0
    for _ in range(rounds):
        tokens = make_tokens()
        tok = hugging_face(tokens)
        for _ in range(5):
            text = make_text(tokens)
            specials = rng.random() < 0.6
            try:
                expected = hf_segments(tok, text, specials)
            except BaseException as e:  # Hugging Face's panic on a reversed split
                if "bad split" not in str(e):
                    raise
                refused += 1
                ours(text, tokens, specials)  # no error here
                continue
            assert ours(text, tokens, specials) == expected, (text, tokens, specials)
            compared += 1
    return compared, refused


@pytest.mark.parametrize("seed, most, longest, pieces", [(seed, 6, 4, 14) for seed in range(6)] +
                         [(seed, 16, 6, 40) for seed in range(100, 103)])
def test_random_tokens_and_texts_match_hugging_face(seed, most, longest, pieces):
    rng = random.Random(seed)
    compared, refused = compare_random(rng, 100, lambda: random_tokens(rng, most, longest),
                                       lambda tokens: random_text(rng, tokens, pieces))
    print(f"seed {seed}: {compared} compared, {refused} where Hugging Face panics")
    assert compared >= 450 and refused <= 50, (compared, refused)


# --- long tokens: the text read once, whatever the tokens' length ------------------------------


def timed_segments(text, tokens):
    start = time.perf_counter()
    got = _core.added_token_segments(text, tokens, False)
    return got, time.perf_counter() - start


def as_chars(text, segments):
    """Our segments (byte offsets of the UTF-8 text, None for text) as hf_segments gives
    them (character offsets, UNK for text); the texts here are ASCII."""
    assert text.isascii()
    return [(b, e, UNK if i is None else i) for b, e, i in segments]


@pytest.mark.parametrize("length, repeats", [(30_000, 33), (200_000, 10)])
def test_a_long_token_over_near_misses_costs_the_text_once(length, repeats):
    # Each place of a run one byte shorter than the token begins a path through all of it
    # that fails at the end: read from every place, the text costs its length times the token's.
    tokens = [entry("a" * length)]
    tok = hugging_face(tokens)
    text = ("a" * (length - 1) + " ") * repeats + "a" * length
    got, elapsed = timed_segments(text, tokens)
    assert as_chars(text, got) == hf_segments(tok, text, True)
    assert elapsed < 2.0, f"{elapsed:.2f} s for {len(text)} bytes and a token of {length}"


def test_a_short_token_inside_a_long_one_that_never_matches():
    # "a" matches at every place, and at every place the long token is followed almost to
    # its end first: the leftmost-longest choice must not cost the long token at each place.
    # (Hugging Face's own time grows with the square here: it is compared on a short text.)
    for length, run in ((2_000, 10_000), (200_000, 1_000_000)):
        tokens = [entry("a" * length + "b"), entry("a"), entry("b" * 3)]
        tok = hugging_face(tokens)
        text = "a" * run + "cbbb" + "a" * length + "b"
        got, elapsed = timed_segments(text, tokens)
        ids = {t["content"]: t["id"] for t in tokens}
        if run <= 10_000:
            assert as_chars(text, got) == hf_segments(tok, text, True)
        assert got[:run] == [(p, p + 1, ids["a"]) for p in range(run)]
        assert got[run:] == [(run, run + 1, None), (run + 1, run + 4, ids["bbb"]), (run + 4, len(text), ids[tokens[0]["content"]])]
        assert elapsed < 2.0, f"{elapsed:.2f} s for {len(text)} bytes"


def periodic_tokens(rng):
    """Tokens that are prefixes, suffixes and infixes of each other ("ab" repeated, cut at
    either end, with a byte changed or added): matches that end inside longer ones."""
    contents = set()
    for _ in range(rng.randint(1, 8)):
        k = rng.randint(1, 12)
        content = rng.choice(["ab", "aab", "a", "ba"]) * k
        cut = rng.random()
        if cut < 0.25:
            content = content[1:] or content
        elif cut < 0.5:
            content = content[:-1] or content
        elif cut < 0.6:
            content += rng.choice("abc ")
        elif cut < 0.7:
            place = rng.randrange(len(content))
            content = content[:place] + rng.choice("abc") + content[place + 1:]
        contents.add(content)
    return [entry(c, **{flag: rng.random() < 0.2 for flag in FLAGS}) for c in sorted(contents, key=lambda _: rng.random())]


def periodic_text(rng, tokens):
    out = []
    for _ in range(rng.randint(0, 12)):
        kind = rng.random()
        if kind < 0.4:
            content = rng.choice(tokens)["content"]
            out.append(content[:rng.randint(1, len(content))])
        elif kind < 0.7:
            out.append(rng.choice(["ab", "a", "b", "ba"]) * rng.randint(1, 10))
        else:
            out.append(rng.choice([" ", "c", "x", "  "]))
    return "".join(out)


@pytest.mark.parametrize("seed", range(6))
def test_random_periodic_tokens_match_hugging_face(seed):
    rng = random.Random(1000 + seed)
    compared, _ = compare_random(rng, 150, lambda: periodic_tokens(rng), lambda tokens: periodic_text(rng, tokens))
    assert compared >= 600, compared
