"""`python -m bpe`: the bpe command (bpe.cli), which `pip install` also puts on the path
as `bpe`."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
