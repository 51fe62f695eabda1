"""The bpe command: train a tokenizer on your own text, and look at what it does.

    bpe train stories/ --vocab-size 8192 --special '<|endoftext|>' -o tok.bpe
    bpe count -t tok.bpe story.txt             # tokens per file, and in total
    bpe show -t tok.bpe "Once upon a time"     # each token coloured in turn
    bpe explain -t tok.bpe " upon"             # the merges that make the word's tokens
    echo hello | bpe encode -t cl100k | bpe decode -t cl100k

`python -m bpe` runs it (bpe/__main__.py), and `pip install` puts it on the path as `bpe`. Each
subcommand's --help shows an example. Conventions, the same for every subcommand:
- A tokenizer is named with -t FILE (or $BPE_TOKENIZER): this library's .bpe file, a
  tiktoken .tiktoken file, GPT-2's vocab.json (with its merges.txt beside it), a Hugging
  Face tokenizer.json, Mistral's tekken.json (JSON told apart by what it holds), a
  SentencePiece BPE model (a .model file, or one that begins as one), a folder that holds
  one of them, or the name of one of OpenAI's
  published encodings (cl100k_base, or cl100k; o200k_base; bpe.registry), taken from a
  package that ships it or else downloaded once into the cache, as bpe.get_encoding does.
  There is no default: the repository's stories.bpe is not installed with the package.
- Text is UTF-8, read from the files named or from standard input, in pieces, so files of
  any size go through in the same memory. Bytes that are not UTF-8 are an error that
  names the byte. Special-token text (<|endoftext|>) is ordinary text unless
  --allow-special is given.
- Errors are one line on stderr, no traceback: exit status 2 for bad usage (a missing or
  malformed argument), 1 for bad input (a file that is missing or not what it should be).
- Progress bars go to stderr, and only to a terminal. Colour only goes to a terminal, and
  not when NO_COLOR is set (--color always|never overrides both).

The package holds a module per concern: parser (the arguments, their help and
examples), commands/ (a module a subcommand, each a run(args) -> exit status),
tokenizers (what -t names, a file told apart by its name and what it holds), streams
(inputs, outputs, progress bars), ids (decode's input), colour and tokens (how show,
explain and info print tokens), and errors (the exit statuses, and the library's errors
in the command's words). main, here, parses the arguments, runs the subcommand, and
turns what went wrong into one line and an exit status.
"""
import os
import sys
from collections.abc import Sequence

from .errors import PROG, InputError, UsageError, os_error
from .parser import build_parser, check_text_arguments
from .streams import open_streams
from .tokenizers import shown_name


def main(argv: Sequence[str] | None = None) -> int:
    open_streams()
    parser = build_parser()
    prog = PROG
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        prog = f"{PROG} {args.command}"
        args.tokenizer_name = shown_name(getattr(args, "tokenizer_file", None) or getattr(args, "tokenizer", None)
                                         or getattr(args, "input", None))
        check_text_arguments(args)
        return args.run(args)
    except UsageError as e:
        print(f"{e.prog or prog}: error: {e}", file=sys.stderr)
        return 2
    except InputError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # before OSError, of which it is one
        # The reader went away (bpe encode big.txt | head): stop quietly, as cat does,
        # and keep Python from complaining again when it flushes stdout on the way out.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as e:  # writing: a folder that is not there, a full disk
        print(f"{prog}: error: {os_error(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130

