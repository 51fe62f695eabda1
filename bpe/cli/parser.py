"""The command line: each subcommand's arguments, help and example, in argparse, with
its errors as the command's one line (UsageError); and the check that text arguments
are UTF-8."""
import argparse
import os
from typing import NoReturn

from .. import __version__, sources
from .colour import MARK
from .commands import convert, count, decode, encode, explain, info, show, train
from .errors import PROG, InputError, UsageError
from .tokenizers import TOKENIZER_ENV, default_tokenizer

# The arguments that are text (the rest are file names, which may be any bytes).
TEXT_ARGUMENTS = ("text", "word", "special")


class Parser(argparse.ArgumentParser):
    """argparse, with its errors in one line (and a pointer to --help) instead of the usage."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)", self.prog)


EXAMPLES = {
    "train": "bpe train stories/ --vocab-size 8192 --special '<|endoftext|>' -o tok.bpe\n"
             "  bpe train data.jsonl --field text --vocab-size 4096 -o tok.bpe",
    "encode": "echo 'Once upon a time' | bpe encode -t tok.bpe\n"
              "  bpe encode -t tok.bpe story.txt --format bin -o story.bin",
    "decode": "echo '46 1011 263 367' | bpe decode -t tok.bpe\n"
              "  bpe decode -t tok.bpe story.bin",
    "count": "bpe count -t cl100k *.txt",
    "show": "bpe show -t tok.bpe 'Once upon a time' --ids\n"
            "  bpe show -t tok.bpe -f story.txt | less -R",
    "explain": "bpe explain -t tok.bpe ' upon'",
    "info": "bpe info tok.bpe",
    "convert": "bpe convert tok.bpe tokenizer.json --to huggingface\n"
               "  bpe convert cl100k cl100k.bpe --to bpe",
}


def threads(value: str) -> int:
    """--threads: 0 (as many as the text's size pays for) up to bpe.MAX_THREADS."""
    from .. import MAX_THREADS

    if not (value.isascii() and value.isdigit()) or int(value) > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"expected 0 (as many as the size pays for) to {MAX_THREADS}, got {value!r}")
    return int(value)


def build_parser() -> Parser:
    parser = Parser(prog=PROG, description="Byte-level BPE: train a tokenizer, encode and decode, and look at "
                    "how text splits. `bpe COMMAND --help` shows each command with an example.",
                    epilog="examples:\n  " + "\n  ".join(e.split("\n")[0] for e in EXAMPLES.values()),
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"bpe {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    def command(name, help, description=None):
        sub = commands.add_parser(name, help=help, description=description or help,
                                  epilog=f"example:\n  {EXAMPLES[name]}",
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        return sub

    def tokenizer_option(sub):
        sub.add_argument("-t", "--tokenizer", default=default_tokenizer(), metavar="FILE",
                         help="the tokenizer: a .bpe, .tiktoken, vocab.json, tokenizer.json, tekken.json or "
                              "SentencePiece .model file, or cl100k "
                              f"(default: ${TOKENIZER_ENV})")

    def special_option(sub):
        sub.add_argument("--allow-special", action="store_true",
                         help="special-token text (<|endoftext|>) becomes the special token's id (default: it is "
                              "ordinary text)")

    sub = command("train", "learn a tokenizer from text files, JSON Lines or Parquet",
                  "Learn a tokenizer from your own text: plain text files, JSON Lines (a field of each "
                  "object) and Parquet (a text column), and folders of them, read as a stream and counted "
                  "on every core.")
    sub.add_argument("files", nargs="+", metavar="FILE", help="text, .jsonl or .parquet files, or folders of them")
    sub.add_argument("--vocab-size", type=int, required=True, metavar="N",
                     help="tokens in all: the 256 bytes, the merges and the special tokens")
    sub.add_argument("--pattern", default="default", metavar="NAME|REGEX",
                     help="the split rule: this project's (default), GPT-2's (gpt2), GPT-4's (gpt4), or a regex "
                          "in tiktoken's dialect (\\p{L}, (?i:...), \\s+(?!\\S), ...)")
    sub.add_argument("--special", action="append", default=[], metavar="TOKEN",
                     help="a special token, numbered after the merges (repeat for more)")
    sub.add_argument("--field", default=None, metavar="NAME",
                     help='the JSON field or Parquet column that holds the text (default: "text")')
    sub.add_argument("--input-format", choices=sources.KINDS, default=None,
                     help="read every file as this kind (default: by its name: .jsonl, .ndjson, .parquet, else text)")
    sub.add_argument("--threads", type=threads, default=0, help="threads for counting (default: as many as the size pays for)")
    sub.add_argument("--max-memory", default=None, metavar="SIZE",
                     help="a memory budget for training, such as 2GB: past it the rarest chunks are dropped, with a "
                          "warning, and the merges may differ from exact training (default: none, exact)")
    sub.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the tokenizer (.bpe)")
    sub.set_defaults(run=train.run)

    sub = command("encode", "text to token ids",
                  "Encode UTF-8 text (the files named, or stdin) to token ids: one line per input (text, json), "
                  "or a token file with its sidecar (bin).")
    sub.add_argument("files", nargs="*", metavar="FILE", help="text files (default: stdin)")
    tokenizer_option(sub)
    sub.add_argument("--format", choices=("text", "json", "bin"), default="text",
                     help="ids separated by spaces (text), a JSON list (json), or a token file: little-endian "
                          "uint16/uint32 with its FILE.json sidecar (bin, needs -o)")
    sub.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    special_option(sub)
    sub.set_defaults(run=encode.run)

    sub = command("decode", "token ids to text",
                  "Decode token ids back to the exact bytes of the text. Reads ids separated by white space, "
                  "JSON lists, or a token file (.bin with its sidecar, which must name this tokenizer).")
    sub.add_argument("files", nargs="*", metavar="FILE", help="files of ids (default: stdin)")
    tokenizer_option(sub)
    sub.add_argument("--format", choices=("text", "json", "bin"), default=None,
                     help="how the ids are written (default: bin for a .bin file, json if it starts with [, "
                          "else text)")
    sub.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    sub.set_defaults(run=decode.run)

    sub = command("count", "tokens per file and in total",
                  "Count the tokens of each file (or stdin) and in total, encoding on every core without "
                  "keeping the ids. .jsonl and .parquet files count the texts of --field.")
    sub.add_argument("files", nargs="*", metavar="FILE", help="text, .jsonl or .parquet files (default: stdin)")
    tokenizer_option(sub)
    special_option(sub)
    sub.add_argument("--field", default=None, metavar="NAME", help='the JSON field or Parquet column (default: "text")')
    sub.add_argument("--input-format", choices=sources.KINDS, default=None, help="read every file as this kind")
    sub.add_argument("--threads", type=threads, default=0, help="threads for encoding (default: as many as the size pays for)")
    sub.set_defaults(run=count.run)

    sub = command("show", "the text with each token coloured in turn",
                  f"Show how a text splits: each token on a background colour of its own in turn, or, where "
                  f"there is no colour (a pipe, NO_COLOR), followed by {MARK}. A line break shows as ↵, bytes "
                  "that are part of a character as \\xNN.")
    sub.add_argument("text", nargs="?", metavar="TEXT", help="the text (or -f FILE, or stdin)")
    sub.add_argument("-f", "--file", metavar="FILE", help="show the text of this file")
    tokenizer_option(sub)
    sub.add_argument("--ids", action="store_true", help="print each token's id under it")
    sub.add_argument("--color", "--colour", choices=("auto", "always", "never"), default="auto",
                     help="auto: on a terminal, unless NO_COLOR is set")
    special_option(sub)
    sub.set_defaults(run=show.run)

    sub = command("explain", "why a word splits the way it does",
                  "The merges that make a word's tokens, step by step in the order encoding applies them (the "
                  "lowest rank first), with each merge's rank and the pair it joins. Text of several chunks "
                  "(several words, punctuation) is explained chunk by chunk, since no merge crosses two.")
    sub.add_argument("word", nargs="+", metavar="WORD", help="the word or text (several are joined by spaces)")
    tokenizer_option(sub)
    sub.set_defaults(run=explain.run)

    sub = command("info", "what a tokenizer holds",
                  "A tokenizer's size, split pattern and special tokens, its longest tokens, and the share of "
                  "its merged tokens that are whole words (a space and then letters only, as ' once').")
    sub.add_argument("tokenizer_file", nargs="?", metavar="TOKENIZER", help="the tokenizer (or -t)")
    tokenizer_option(sub)
    sub.set_defaults(run=info.run)

    sub = command("convert", "a tokenizer from one library's files to another's",
                  "Convert between this library's .bpe file, tiktoken's .tiktoken, GPT-2's vocab.json + "
                  "merges.txt, and a Hugging Face tokenizer.json. IN is anything -t takes.")
    sub.add_argument("input", metavar="IN", help="the tokenizer to read (anything -t takes)")
    sub.add_argument("output", metavar="OUT", help="the file to write (for gpt2: vocab.json, with merges.txt "
                                                     "beside it, or a folder for both)")
    sub.add_argument("--to", required=True, choices=("bpe", "tiktoken", "gpt2", "huggingface"),
                     help="the format to write")
    sub.set_defaults(run=convert.run)
    return parser


def check_text_arguments(args):
    """Text arguments (bpe show's text, explain's words, train's --special) must be UTF-8;
    Python hands bytes that are not as lone surrogates, which no encoder takes."""
    for key in TEXT_ARGUMENTS:
        values = getattr(args, key, None)
        for value in values if isinstance(values, list) else [values]:
            if not isinstance(value, str):
                continue
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as e:
                raw = os.fsencode(value)
                raise InputError(f"the argument {raw.decode('utf-8', 'backslashreplace')!r} is not UTF-8 text (byte "
                                 f"{e.start:,}): give text as UTF-8, or in a file with -f") from None
