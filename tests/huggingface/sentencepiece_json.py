"""SentencePiece BPE models trained here, and the tokenizer.json files that transformers'
own converter (transformers.convert_slow_tokenizer) makes of them: the shapes that Llama 2,
Mistral 7B and Gemma ship on the Hub.

transformers' converter reads a .model with protobuf, which this project does not need;
here a .model is read by the few protobuf fields the converter looks at (read_model), and
the converter's own code runs on that. Nothing here is written into the project's tree:
every file is made in a temporary folder when a test asks for it."""
import importlib
import os
import struct
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from protobuf_fields import fields

HERE = Path(__file__).resolve().parent


def training_text() -> str:
    """About 300 KB of stories (the shared sample where there is one, else made-up ones)
    and a few lines of other scripts, so that the models have some of their characters."""
    path = Path(os.environ.get("BPE_SHARED_DATA", "/nonexistent")) / "tinystories" / "valid-sample.txt"
    if path.exists():
        text = path.read_text(encoding="utf-8")[:300_000]
    else:
        sys.path.insert(0, str(HERE.parent))
        from sample_text import made_up_stories
        text = made_up_stories(300_000)
    other = ["Ça été très élevé. Hôtel à côté, où l'été dure.", "Straße und Äpfel, über alles.",
             "def main(argv):\n    return [x ** 2 for x in argv if x]  # squares",
             "Число и слово: привет, мир.", "数字与中文"] * 20
    return text + "\n" + "\n".join(other) + "\n"


# Each model trained here: sentencepiece's trainer options (model_type bpe, a small vocabulary).
MODELS = {
    # Llama 2's options: identity normalization, spaces kept as they are, byte fallback, digits apart.
    "llama": dict(normalization_rule_name="identity", remove_extra_whitespaces=False, byte_fallback=True,
                  split_digits=True, allow_whitespace_only_pieces=True),
    # The same without byte fallback: a character no piece covers is the unknown piece.
    "unk": dict(normalization_rule_name="identity", remove_extra_whitespaces=False, byte_fallback=False,
                split_digits=True),
    # No dummy prefix (Gemma's way).
    "nodummy": dict(normalization_rule_name="identity", remove_extra_whitespaces=False, byte_fallback=True,
                    add_dummy_prefix=False, allow_whitespace_only_pieces=True),
    # sentencepiece's default normalization (NFKC and its own rules, a precompiled character map).
    "nfkc": dict(normalization_rule_name="nmt_nfkc", remove_extra_whitespaces=False, byte_fallback=True),
    # ... with its default of removing extra whitespace too.
    "nfkc-rew": dict(normalization_rule_name="nmt_nfkc", remove_extra_whitespaces=True, byte_fallback=True),
    # Identity normalization with sentencepiece's default of removing extra whitespace.
    "rew": dict(normalization_rule_name="identity", remove_extra_whitespaces=True, byte_fallback=True),
    # User-defined symbols: pieces that are always whole.
    "user": dict(normalization_rule_name="identity", remove_extra_whitespaces=False, byte_fallback=True,
                 user_defined_symbols=["<sep>", "[MASK]", "@@"]),
}


def train(folder: Path, name: str, vocab_size: int = 1000) -> Path:
    """The .model of MODELS[name], trained in folder."""
    spm = pytest.importorskip("sentencepiece")
    corpus = folder / "corpus.txt"
    if not corpus.exists():
        corpus.write_text(training_text(), encoding="utf-8")
    prefix = folder / name
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(prefix), model_type="bpe",
                                   vocab_size=vocab_size, character_coverage=1.0, minloglevel=2,
                                   num_threads=1, **MODELS[name])
    return prefix.with_suffix(".model")


# --- a .model, read as the converter reads it -------------------------------------------------
# sentencepiece_model.proto's field numbers: ModelProto {pieces = 1, trainer_spec = 2,
# normalizer_spec = 3}; SentencePiece {piece = 1, score = 2, type = 3};
# TrainerSpec {model_type = 3, vocab_size = 4, byte_fallback = 35, unk_id = 40, bos_id = 41,
# eos_id = 42, pad_id = 43, unk_piece = 45, bos_piece = 46, eos_piece = 47, pad_piece = 48};
# NormalizerSpec {name = 1, precompiled_charsmap = 2, add_dummy_prefix = 3,
# remove_extra_whitespaces = 4, escape_whitespaces = 5}.

def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def read_model(path: Path) -> SimpleNamespace:
    """The .model as the objects transformers' converter reads (proto.pieces[i].piece,
    .score, .type; proto.trainer_spec; proto.normalizer_spec), sentencepiece's defaults
    where a field is absent."""
    pieces = []
    trainer = dict(model_type=1, vocab_size=8000, byte_fallback=False, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
                   unk_piece="<unk>", bos_piece="<s>", eos_piece="</s>", pad_piece="<pad>")
    normalizer = dict(name="", precompiled_charsmap=b"", add_dummy_prefix=True, remove_extra_whitespaces=True,
                      escape_whitespaces=True)
    trainer_fields = {3: "model_type", 4: "vocab_size", 35: "byte_fallback", 40: "unk_id", 41: "bos_id",
                      42: "eos_id", 43: "pad_id", 45: "unk_piece", 46: "bos_piece", 47: "eos_piece",
                      48: "pad_piece"}
    normalizer_fields = {1: "name", 2: "precompiled_charsmap", 3: "add_dummy_prefix", 4: "remove_extra_whitespaces",
                         5: "escape_whitespaces"}
    for number, value in fields(path.read_bytes()):
        if number == 1:
            piece = dict(piece="", score=0.0, type=1)
            for n, v in fields(value):
                if n == 1:
                    piece["piece"] = v.decode("utf-8")
                elif n == 2:
                    piece["score"] = struct.unpack("<f", v)[0]
                elif n == 3:
                    piece["type"] = v
            pieces.append(SimpleNamespace(**piece))
        for field, spec in ((2, trainer), (3, normalizer)):
            if number != field:
                continue
            names = trainer_fields if field == 2 else normalizer_fields
            for n, v in fields(value):
                if n not in names:
                    continue
                old = spec[names[n]]
                if isinstance(old, bool):
                    spec[names[n]] = bool(v)
                elif isinstance(old, int):
                    spec[names[n]] = _signed(v)
                elif isinstance(old, str):
                    spec[names[n]] = v.decode("utf-8")
                else:
                    spec[names[n]] = bytes(v)
    return SimpleNamespace(pieces=pieces, trainer_spec=SimpleNamespace(**trainer),
                           normalizer_spec=SimpleNamespace(**normalizer))


# --- transformers' converter, on that --------------------------------------------------------

def _converter(kind, path: Path, proto, **original):
    """An instance of transformers' converter class `kind` for the model at path, made
    without protobuf: its proto is read_model's, its original tokenizer the attributes
    the converter asks of one."""
    from transformers.tokenization_utils_base import generate_merges

    class Extractor:
        # What SpmConverter.tokenizer asks of its extractor: the vocabulary and the merges,
        # ordered by the made piece's score (transformers' generate_merges).
        def __init__(self, vocab_file):
            self.vocab_file = vocab_file

        def extract(self, vocab_scores=None):
            vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
            return vocab, generate_merges(vocab, vocab_scores)

    cls = type(kind.__name__, (kind,), {"SpmExtractor": Extractor})
    converter = cls.__new__(cls)
    pieces = [p.piece for p in proto.pieces]
    converter.original_tokenizer = SimpleNamespace(vocab_file=str(path), convert_ids_to_tokens=pieces.__getitem__,
                                                   **original)
    converter.proto = proto
    return converter


def convert(path: Path, shape: str):
    """A tokenizers.Tokenizer of the model at path in the named shape:
    - "legacy": LlamaConverter, legacy (Llama 2's and Mistral 7B v0.1's files): a Prepend
      and a Replace normalizer, no pre-tokenizer, <s> before the text;
    - "metaspace": LlamaConverter, not legacy (Mistral 7B v0.3's): a Metaspace
      pre-tokenizer, prepend_scheme "first";
    - "noprefix": LlamaConverter, legacy, add_prefix_space false: Replace alone, no Strip;
    - "metaspace-never": not legacy, add_prefix_space false: Metaspace with prepend_scheme "never";
    - "metaspace-split": Metaspace as older files have it ("always", split true);
    - "gemma": Gemma's file (as transformers' GemmaConverter writes it): a Replace normalizer,
      a Split on " " (which then finds none), no Strip in the decoder;
    - "spm-legacy" / "spm": SpmConverter.build_tokenizer_from_spm_proto (what transformers
      builds from a .model for a tokenizer class without a converter of its own), legacy
      or not: the precompiled map and the model's own normalizer options;
    - "spm-metaspace-decoder": "spm" with the Metaspace decoder;
    - "precompiled-legacy": "legacy" with a Precompiled normalizer (the model's map) first."""
    pytest.importorskip("transformers")
    from tokenizers import AddedToken, decoders, normalizers, pre_tokenizers, processors
    # The module by its full name: transformers' top level has a function of that name.
    convert_module = importlib.import_module("transformers.convert_slow_tokenizer")
    proto = read_model(path)
    if shape == "precompiled-legacy":  # "legacy" with the model's character map first
        tk = convert(path, "legacy")
        tk.normalizer = normalizers.Sequence([normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
                                              normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        return tk
    if shape in ("legacy", "metaspace", "noprefix", "gemma", "metaspace-never", "metaspace-split"):
        llama = _converter(convert_module.LlamaConverter, path, proto, legacy=shape in ("legacy", "noprefix", "gemma"),
                           add_prefix_space=shape not in ("noprefix", "gemma", "metaspace-never"))
        tk = llama.converted()
        if shape == "metaspace-split":  # the Metaspace of older files: "always", split at each replacement
            tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
        if shape == "gemma":
            tk.normalizer = normalizers.Replace(" ", "\u2581")
            tk.pre_tokenizer = pre_tokenizers.Split(" ", "merged_with_previous")  # as GemmaConverter writes it
            tk.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
        bos = proto.trainer_spec.bos_piece
        if bos in tk.get_vocab():
            # What LlamaTokenizerFast puts around the text: <s> first.
            tk.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                              special_tokens=[(bos, tk.token_to_id(bos))])
        return tk
    if shape in ("spm", "spm-legacy"):
        vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
        tk = convert_module.SpmConverter.build_tokenizer_from_spm_proto(proto, vocab, legacy=shape == "spm-legacy")
        # transformers adds the control pieces as special tokens (and the unknown piece).
        tk.add_special_tokens([AddedToken(p.piece, normalized=False, special=True) for p in proto.pieces
                               if p.type in (2, 3)])
        return tk
    if shape == "spm-metaspace-decoder":  # the decoder of transformers' generic SpmConverter
        tk = convert(path, "spm")
        tk.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="first")
        return tk
    raise KeyError(shape)
