"""A griffe extension for docs/api.md: pybind11 writes a compiled function's signature
as the first line of its docstring ("train(text: object, ...) -> list"), which
mkdocstrings would show as prose, with __init__ read as bold Markdown. This puts such a
line in a code block, so the reference shows the signature as the core declares it.
(mkdocs.yml names it; it changes only what the documentation shows.)"""
import re

import griffe

# "name(...)" or "name(...) -> type" alone on the docstring's first line.
SIGNATURE = re.compile(r"^(__init__|\w+)\(.*\)( -> .+)?$")


class PybindSignatures(griffe.Extension):
    def on_instance(self, *, obj, **kwargs):
        if not obj.path.startswith("bpe._core") or obj.docstring is None:
            return
        lines = obj.docstring.value.split("\n")
        signatures = []
        while lines and SIGNATURE.match(lines[0].strip()):
            signatures.append(lines.pop(0).strip())
            while lines and not lines[0].strip():
                lines.pop(0)
        if signatures:
            block = "```python\n" + "\n".join(signatures) + "\n```\n\n"
            obj.docstring.value = block + "\n".join(lines)
