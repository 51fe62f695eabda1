"""A griffe extension for docs/api.md: one signature per method of the compiled core,
with real types.

pybind11 writes a compiled function's signature as the first line of its docstring
("train(text: object, ...) -> list"); griffe, inspecting a builtin, sees no parameters.
This reads that line into the function's parameters and return type, so that the page
shows one signature per method (not a bare name and then the line as prose), and puts
the Python types in place of pybind11's `object`, which it writes for every argument
the bindings take as a Python object and check themselves (csrc/py_args.h, py_text.h).
TYPES holds them, by argument name: one name, one meaning across the core. Where
the typed stub bpe/_core.pyi (tools/make_stub.py) is there, griffe reads the types from
it and this only lifts the line out of the docstring.
(mkdocs.yml names this file; it changes only what the documentation shows.)"""
import re

import griffe

# "name(...)" or "name(...) -> type" alone on the docstring's first line.
SIGNATURE = re.compile(r"^(?P<name>__init__|\w+)\((?P<params>.*)\)(?: -> (?P<returns>.+))?$")

# What each argument the core takes as `object` accepts (its docstrings say the same).
TYPES = {
    "text": "str | bytes",
    "texts": "Iterable[str | bytes]",
    "pattern": "str",
    "num_merges": "int",
    "threads": "int",
    "special_tokens": "Sequence[str] | None",
    "max_memory": "int | None",
    "progress": "Callable[[int, int], None] | None",
    "merges": "Sequence[tuple[int, int]]",
    "token_ids": "Sequence[int] | None",
    "allowed_special": "Collection[str] | Literal['all']",
    "disallowed_special": "Collection[str] | Literal['all']",
    "ids": "Sequence[int]",
    "id": "int",
    "chunks": "Sequence[bytes]",
}
# What each function returns where pybind11 says only "list" or "tuple".
RETURNS = {
    "pretokenize": "list[bytes]",
    "encode": "list[int]",
    "encode_batch": "list[list[int]]",
    "encode_with_offsets": "tuple[list[int], list[int]]",
    "counts": "tuple[list[bytes], numpy.ndarray]",
    "encode_array": "numpy.ndarray",
}


def split_parameters(text: str) -> list[str]:
    """The parameters of a signature, split at the commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def parameters(text: str, function: str) -> griffe.Parameters:
    found = []
    for part in split_parameters(text):
        head, _, default = part.partition(" = ")
        name, _, annotation = head.partition(": ")
        if name == "self":
            continue
        if annotation == "object":  # only what pybind11 left untyped; bpe/_core.pyi, where griffe reads it, wins
            annotation = TYPES.get(name, annotation)
        annotation = re.sub(r"typing\.Annotated\[numpy\.typing\.ArrayLike, numpy\.(\w+)\]",
                            r"numpy.ndarray[\1]", annotation).replace("bpe._core.", "")
        found.append(griffe.Parameter(name, annotation=annotation or None, default=default or None,
                                      kind=griffe.ParameterKind.positional_or_keyword))
    return griffe.Parameters(*found)


class PybindSignatures(griffe.Extension):
    def on_instance(self, *, obj, **kwargs):
        if not obj.path.startswith("bpe._core") or obj.docstring is None:
            return
        lines = obj.docstring.value.split("\n")
        match = SIGNATURE.match(lines[0].strip()) if lines else None
        if match is None:
            return
        lines.pop(0)
        while lines and not lines[0].strip():
            lines.pop(0)
        obj.docstring.value = "\n".join(lines)
        name = match["name"]
        if isinstance(obj, griffe.Function):
            obj.parameters = parameters(match["params"], name)
            obj.returns = RETURNS.get(name, match["returns"])
        elif isinstance(obj, griffe.Class) and name == "__init__":
            init = obj.members.get("__init__")
            if isinstance(init, griffe.Function):
                init.parameters = parameters(match["params"], name)
                init.returns = None
