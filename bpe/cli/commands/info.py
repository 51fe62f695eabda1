"""bpe info: what a tokenizer holds."""
import argparse

from ... import formats, huggingface, token_files
from ..tokenizers import load_tokenizer
from ..tokens import is_whole_word, longest_tokens, merge_ids, tokens_after_merges

# How many of the longest tokens `bpe info` lists.
LONGEST = 10
# How many special tokens it lists by name before it says how many more there are.
SPECIALS = 40


def run(args: argparse.Namespace) -> int:
    name = args.tokenizer_file or args.tokenizer
    tok = load_tokenizer(name)
    merges = len(tok.merges)
    after = tokens_after_merges(tok)
    kind = "special" if tok.rules is None else f"added, {len(tok.special_tokens):,} of them special"
    print(f"tokenizer: {args.tokenizer_name}")
    print(f"tokens: {256 + merges + after:,} (256 bytes, {merges:,} merges, "
          f"{after:,} {kind}); ids 0 to {tok.n_vocab - 1:,}")
    rules = tok.rules  # a tokenizer.json's own split, added tokens and template
    if rules is None:
        regex = formats.pattern_regex(formats.TIKTOKEN_PATTERNS, tok.pattern)
        print(f"split pattern: {tok.pattern}" + (f" ({regex})" if regex != tok.pattern else " (a regex)"))
    else:
        print("\n".join(huggingface.describe(rules)))
    if rules is None:  # a tokenizer.json's are its added tokens, listed above
        listed = list(tok.special_ids.items())
        specials = ", ".join(f"{t} = {i}" for t, i in listed[:SPECIALS]) or "none"
        if len(listed) > SPECIALS:  # a Tekken file numbers 1,000, most of them placeholders
            (first, i), (last, j) = listed[SPECIALS], listed[-1]
            specials += f", and {len(listed) - SPECIALS:,} more ({first} = {i} to {last} = {j})"
        print(f"special tokens: {specials}")
    print("longest tokens:")
    for length, token in longest_tokens(tok, LONGEST):
        print(f"  {length:>4} bytes  {token!r}")
    words = sum(is_whole_word(tok.decode_single_token_bytes(i)) for i in merge_ids(tok))
    share = words / merges if merges else 0.0
    print(f"whole words: {words:,} of the {merges:,} merged tokens ({share:.1%}): a space and then letters only, "
          "as the split patterns begin a word (' once', ' upon')")
    print(f"sha256: {token_files.fingerprint(tok)}")
    return 0
