"""bpe convert: a tokenizer from one library's files to another's."""
import argparse
import os
from pathlib import Path

from ..errors import library_call, note
from ..tokenizers import gpt2_paths, load_tokenizer
from ..tokens import tokens_after_merges


def run(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.input)
    out = Path(args.output)
    if args.to == "bpe":
        written = [library_call(lambda: tok.save(out))]  # a tokenizer.json's rules too
    elif args.to == "tiktoken":
        library_call(lambda: tok.save_tiktoken(out))
        written = [out]
        note(f"a .tiktoken file holds neither the split pattern ({tok.pattern!r}: "
             f"bpe.formats.TIKTOKEN_PATTERNS[{tok.pattern!r}]) nor the special tokens "
             f"({_listed(tok.special_ids)}): tiktoken.Encoding takes them "
             "apart; bpe reads a .tiktoken file with the pattern and special tokens of the OpenAI "
             "encoding its name is, else GPT-4's pattern and no special tokens")
    elif args.to == "gpt2":
        vocab, merges = gpt2_paths(out)
        vocab.parent.mkdir(parents=True, exist_ok=True)
        library_call(lambda: tok.save_gpt2(vocab, merges))
        written = [vocab, merges]
        if tok.pattern != "gpt2":
            note(f"GPT-2's files hold no split pattern and readers take GPT-2's; this tokenizer splits with "
                 f"{tok.pattern!r}, so they will split text differently (convert --to bpe or huggingface keeps it)")
    else:
        if out.is_dir() or str(out).endswith(("/", os.sep)):
            out = out / "tokenizer.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        library_call(lambda: tok.save_huggingface(out))
        written = [out]
    print(f"wrote {' and '.join(map(str, written))}: {256 + len(tok.merges) + tokens_after_merges(tok):,} tokens "
          f"({args.to})")
    return 0


def _listed(special_ids: dict[str, int], shown: int = 8) -> str:
    """The first few special tokens with their ids (a Tekken file has a thousand)."""
    items = [f"{t}={i}" for t, i in list(special_ids.items())[:shown]]
    more = len(special_ids) - shown
    return ", ".join(items + ([f"and {more} more"] if more > 0 else [])) or "none"
