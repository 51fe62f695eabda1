"""Hugging Face's tokenizer.json: writing ours (with transformers' config beside it, for
AutoTokenizer), and reading a byte-level BPE tokenizer.json into BPETokenizer's arguments.

The shared pieces (the byte alphabet, a vocabulary of alphabet strings and merges as
pairs of them) are in bpe.formats, which GPT-2's vocab.json and merges.txt use too.
What would change the ids and is not supported is refused by name.
"""
from collections.abc import Mapping, Sequence
import json
from pathlib import Path

from .core import Merges, PathArg
from .files import write_text, write_texts
from .formats import (ONIGURUMA_PATTERNS, _alphabet_vocabulary, _as_alphabet, _merges_from_vocab, is_huggingface,
                      pattern_regex)


def huggingface_json(merges: Merges, pattern: str = "default", special_tokens: Sequence[str] = (),
                     token_ids: Sequence[int] | None = None) -> str:
    """A Hugging Face tokenizer.json for a tokenizer: our split rule as a Split pre-
    tokenizer, then the byte alphabet, a BPE model with our ids (token_ids[i] for our
    token i, when given), and the special tokens as added tokens.

    The special tokens are in the model's vocabulary too: Hugging Face gives an added
    token the id the vocabulary has for it, and otherwise numbers it after the
    vocabulary, whatever id the file says.
    """
    alphabet, vocab_bytes, ids, vocab = _alphabet_vocabulary(merges, special_tokens, token_ids, "Hugging Face")
    n = len(vocab_bytes)
    special_ids = dict(zip(special_tokens, ids[n:]))
    for token, i in special_ids.items():
        if token in vocab:
            raise ValueError(f"the special token {token!r} is written like token {vocab[token]} in the byte alphabet: "
                             "Hugging Face would give both one id")
        vocab[token] = i
    hf_merges = [[_as_alphabet(vocab_bytes[a], alphabet), _as_alphabet(vocab_bytes[b], alphabet)] for a, b in merges]
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for s, i in special_ids.items()]
    document = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": pattern_regex(ONIGURUMA_PATTERNS, pattern)},
                 "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": vocab, "merges": hf_merges,
        },
    }
    return json.dumps(document, ensure_ascii=False)


def save_huggingface(path: PathArg, merges: Merges, pattern: str = "default", special_tokens: Sequence[str] = (),
                     token_ids: Sequence[int] | None = None) -> None:
    """Write a Hugging Face tokenizer.json (see huggingface_json), atomically."""
    write_text(path, huggingface_json(merges, pattern, special_tokens, token_ids))


def transformers_config(special_tokens: Sequence[str] = (), special_ids: Mapping[str, int] | None = None) -> tuple[dict, dict]:
    """(tokenizer_config.json, special_tokens_map.json) for transformers' AutoTokenizer,
    which transformers 4.x and 5.x both read: the class to build (4.x needs it named),
    each special token as an added token that is special, <|endoftext|> as the end and
    the start of text (this project's stories begin after one), <|pad|> as padding.
    Without a <|pad|>, pad_token is left unset, as GPT-2's is; transformers then asks
    for one before it pads (tok.pad_token = tok.eos_token is the usual answer)."""
    special_ids = dict(special_ids) if special_ids is not None else {}
    roles: dict[str, str] = {}
    if "<|endoftext|>" in special_tokens:
        roles.update(bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    if "<|pad|>" in special_tokens:
        roles["pad_token"] = "<|pad|>"
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **roles,
        "added_tokens_decoder": {str(special_ids[s]): {"content": s, "lstrip": False, "normalized": False,
                                                       "rstrip": False, "single_word": False, "special": True}
                                 for s in special_tokens},
        # Decoding gives the text back exactly: no spaces removed before punctuation.
        "clean_up_tokenization_spaces": False,
    }
    return config, roles


def save_huggingface_folder(folder: PathArg, merges: Merges, pattern: str = "default", special_tokens: Sequence[str] = (),
                            token_ids: Sequence[int] | None = None) -> None:
    """Write a folder that transformers.AutoTokenizer.from_pretrained loads:
    tokenizer.json (see huggingface_json) and the two files of transformers_config."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file: save_huggingface writes a folder there (or a path ending in "
                         ".json for a single tokenizer.json)")
    tokenizer = huggingface_json(merges, pattern, special_tokens, token_ids)
    n = 256 + len(merges)
    ids = list(token_ids) if token_ids is not None else list(range(n + len(special_tokens)))
    config, roles = transformers_config(special_tokens, dict(zip(special_tokens, ids[n:])))
    # All three new, or all three as they were; tokenizer.json, which the others
    # describe, last.
    write_texts({folder / "tokenizer_config.json": json.dumps(config, indent=2) + "\n",
                 folder / "special_tokens_map.json": json.dumps(roles, indent=2) + "\n",
                 folder / "tokenizer.json": tokenizer})


def load_huggingface(path: PathArg) -> dict:
    """A Hugging Face tokenizer.json of a byte-level BPE, as BPETokenizer's arguments.

    It must split text as one of our patterns does: a ByteLevel pre-tokenizer with its
    own regex (GPT-2's pattern) and no prefix space, or a Split by one of our patterns'
    regexes followed by a ByteLevel without regex (what save_huggingface writes). No
    unknown token, no prefix or suffix on subwords. Every other part of the file that
    would make Hugging Face's ids differ from ours is refused by name (see
    _refuse_what_changes_the_ids); what changes no id (a ByteLevel post-processor, which
    only moves offsets; "normalized" on an added token, with no normalizer) is fine.
    The special tokens are the added tokens, all of them marked special.
    """
    where = str(path)
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{where} is not JSON: {e}") from None
    if not is_huggingface(document):
        raise ValueError(f"{where} is not a Hugging Face tokenizer.json (no \"model\" and \"added_tokens\")")
    model = document["model"]
    if model.get("type") != "BPE":
        raise ValueError(f"{where}: the model is {model.get('type')!r}, not a BPE")
    for key in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix", "dropout"):
        if model.get(key) not in (None, ""):
            raise ValueError(f"{where}: the model sets {key}={model[key]!r}, which byte-level BPE here does not have")
    _refuse_what_changes_the_ids(document, where)
    pattern = _huggingface_pattern(document.get("pre_tokenizer"), where)

    def pairs():
        for k, merge in enumerate(model.get("merges") or []):
            at = f"{where}, merge {k}"
            parts = merge.split(" ") if isinstance(merge, str) else merge
            if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) for p in parts):
                raise ValueError(f"{at}: expected two tokens, got {merge!r}")
            yield at, parts[0], parts[1]

    vocab = model.get("vocab") or {}
    if not isinstance(vocab, dict):
        raise ValueError(f"{where}: the model's \"vocab\" is not a dict from token strings to ids")
    vocab, specials = dict(vocab), []
    for added in document.get("added_tokens") or []:
        if not isinstance(added, dict) or not isinstance(added.get("content"), str) or \
                isinstance(added.get("id"), bool) or not isinstance(added.get("id"), int):
            raise ValueError(f"{where}: an added token is not {{\"id\": int, \"content\": str, ...}}: {added!r}")
        vocab.setdefault(added["content"], added["id"])  # Hugging Face gives it the vocabulary's id, if it has one
        if added["content"] not in specials:
            specials.append(added["content"])
    hint = (f"a truncated \"merges\" list in {where}? (Hugging Face's special tokens are its added_tokens with "
            "\"special\": true)")
    return {**_merges_from_vocab(vocab, pairs(), where, specials, hint), "pattern": pattern}


def _refuse_what_changes_the_ids(document: dict, where: str):
    """Refuse, naming the field, each part of a tokenizer.json that makes Hugging Face's
    ids differ from what the merges, the split rule and the special tokens give:
    something added to the ids or cut from them, text changed before it is split, and
    added tokens that are matched other than as their exact text, or in every text
    (ours are special: matched only where encode allows them)."""
    for key, does in (("truncation", "cuts the ids to a length"), ("padding", "pads the ids to a length")):
        if document.get(key) is not None:
            raise ValueError(f"{where}: \"{key}\" is set: Hugging Face {does}, which encode here does not")
    normalizer = document.get("normalizer")
    if normalizer is not None and normalizer != {"type": "Sequence", "normalizers": []}:
        step_type = normalizer.get("type") if isinstance(normalizer, dict) else normalizer
        raise ValueError(f"{where}: its \"normalizer\" ({step_type}) changes the text before it is split, which encode "
                         "here does not")
    processor = document.get("post_processor")
    steps = processor.get("processors") if isinstance(processor, dict) and processor.get("type") == "Sequence" \
        else [processor]
    for step in steps or []:
        # ByteLevel only moves the offsets; anything else (TemplateProcessing, Roberta,
        # Bert) adds tokens such as a start token to every text.
        if step is not None and not (isinstance(step, dict) and step.get("type") == "ByteLevel"):
            step_type = step.get("type") if isinstance(step, dict) else step
            raise ValueError(f"{where}: its \"post_processor\" ({step_type}) adds tokens to the ids (a start or end "
                             "token), which encode here does not")
    if document["model"].get("ignore_merges"):
        raise ValueError(f"{where}: the model sets \"ignore_merges\": a word in the vocabulary becomes its token "
                         "whatever the merges say, which encode here does not do")
    for added in document.get("added_tokens") or []:
        if not isinstance(added, dict):
            continue  # load_huggingface names it
        for flag, does in (("lstrip", "takes the spaces before it into it"),
                           ("rstrip", "takes the spaces after it into it"),
                           ("single_word", "is matched only as a whole word")):
            if added.get(flag):
                raise ValueError(f"{where}: the added token {added.get('content')!r} has \"{flag}\": true: it {does} "
                                 "in Hugging Face, but not here")
        if not added.get("special", False):
            raise ValueError(f"{where}: the added token {added.get('content')!r} has \"special\": false: Hugging Face "
                             "matches it in every text, but here only special tokens are matched, and only where "
                             "encode allows them")


def _huggingface_pattern(pre_tokenizer, where: str) -> str:
    """Which of our split patterns a Hugging Face pre-tokenizer is."""
    steps = pre_tokenizer.get("pretokenizers", []) if isinstance(pre_tokenizer, dict) and \
        pre_tokenizer.get("type") == "Sequence" else [pre_tokenizer]
    step_types = [step.get("type") if isinstance(step, dict) else None for step in steps]
    if step_types == ["ByteLevel"] and steps[0].get("use_regex", True) and not steps[0].get("add_prefix_space", False):
        return "gpt2"  # ByteLevel's own regex is GPT-2's pattern
    if step_types == ["Split", "ByteLevel"] and not steps[1].get("use_regex", True) \
            and not steps[1].get("add_prefix_space", False) and steps[0].get("behavior") == "Isolated" \
            and not steps[0].get("invert", False):
        regex = (steps[0].get("pattern") or {}).get("Regex")
        for name, ours in ONIGURUMA_PATTERNS.items():
            if regex == ours:
                return name
    raise ValueError(f"{where}: its pre-tokenizer ({pre_tokenizer!r:.200}) does not split text as any of our "
                     "patterns ('default', 'gpt2', 'gpt4') does")
