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
    if tok.rules is not None and tok.rules.get("char_merges") is not None:
        print(f"tokenizer: {args.tokenizer_name}")
        print("\n".join(describe_characters(tok)))
        print(f"sha256: {token_files.fingerprint(tok)}")
        return 0
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


def describe_characters(tok) -> list[str]:
    """`bpe info` of a tokenizer whose merging starts from characters (a SentencePiece
    model's, or a tokenizer.json's of that kind): its pieces, how characters no piece
    covers are read, the normalizer, the split, the decoder and the added tokens."""
    rules = tok.rules
    pieces = rules["unmade_tokens"] or {}
    added = rules["added_tokens"] or []
    char = rules["char_merges"]
    lines = [f"tokens: {len(pieces) + len(added) + (256 if char['byte_fallback'] else 0):,} ({len(pieces):,} pieces, "
             f"{len(added):,} added, {sum(t['special'] for t in added):,} of them special"
             + (", 256 byte pieces" if char["byte_fallback"] else "") + f"); ids 0 to {tok.n_vocab - 1:,}",
             f"merging: from characters (SentencePiece BPE), {len(rules['ranked_merges'] or []):,} merges of two "
             "pieces, the best-ranked pair first",
             "a character no piece covers: " + ("its UTF-8 bytes as byte pieces" if char["byte_fallback"] else
                                                f"the unknown token {char['unk_id']}"
                                                + (" (a run of them one)" if char["fuse_unk"] else ""))]
    lines.append("normalizer: " + huggingface.normalizer_text(rules["normalizer"]))
    lines.append("split: " + (", ".join(step["type"] for step in rules["pre_tokenizer"] or [])
                              or "none (the normalized text is one piece)"))
    decoder = rules.get("decoder") or {}
    lines.append(f"decoder: {decoder.get('replace')!r} replaced, up to {decoder.get('strip_start', 0)} space(s) "
                 f"dropped at the start, the unknown token as {decoder.get('unk_text')!r}")
    lines.append(f"added tokens: {len(added):,} ({sum(t['special'] for t in added):,} special)")
    for t in added[:SPECIALS]:
        lines.append(f"  {t['id']:>8}  {t['content']!r}  {'special' if t['special'] else 'ordinary text'}")
    if len(added) > SPECIALS:
        lines.append(f"  ... and {len(added) - SPECIALS:,} more")
    longest = sorted(pieces, key=lambda text: (-len(text.encode("utf-8")), pieces[text]))[:LONGEST]
    lines.append("longest pieces:")
    lines += [f"  {len(text.encode('utf-8')):>4} bytes  {text!r}" for text in longest]
    return lines
