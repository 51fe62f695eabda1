"""The tests' shared helpers (sample_text, vocabularies, torch_threads, protobuf_fields) live here, in
tests/, and the test files in the folders below, one a part of the project, import
them by name: this puts tests/ on the path for all of them."""
import sys
from pathlib import Path

HELPERS = str(Path(__file__).resolve().parent)
if HELPERS not in sys.path:
    sys.path.insert(0, HELPERS)
