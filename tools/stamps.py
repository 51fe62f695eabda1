"""The stamp of a results file, which every figure and generated table carries, so that a
test can tell when one is older than the data it was drawn from.

A stamp is "sha256:" and the first 12 hex digits of the SHA-256 of the files' bytes (and
their names, when there are several): any rerun that changes a number changes it. A
benchmark's JSON also records its run (when it started, the commit, the machine), which
`run_line` puts in words under a table.

    figures.py            writes it into each PNG's text chunks (Source, Stamp, Command)
    tools/bench_tables.py writes it into each table's <!-- drawn from ... --> comment
    tests/docs/test_docs_site.py compares both with the files as they are now
"""
import hashlib
import json
import struct
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def relative(path: Path) -> str:
    path = Path(path).resolve()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def stamp(*paths: Path) -> str:
    """"sha256:0123456789ab" over the files' bytes, in the order given."""
    digest = hashlib.sha256()
    for path in paths:
        if len(paths) > 1:
            digest.update(Path(path).name.encode() + b"\0")
        digest.update(Path(path).read_bytes())
    return "sha256:" + digest.hexdigest()[:12]


def run_of(path: Path) -> dict:
    """What a benchmark's JSON records of its run: command, started, commit, machine,
    load; {} for a file that records none."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return {}
    if not isinstance(data, dict) or "started" not in data:
        return {}
    machine = data.get("machine", {})
    cpu = (machine.get("cpu_model") or "machine").replace("(R)", "").replace(" Processor", "").strip()
    return {"command": data.get("command"), "started": data["started"],
            "commit": data.get("versions", {}).get("bpe_commit"),
            "machine": f"{machine.get('cores', '?')}-core {cpu}",
            "load": (data.get("load_average_start") or [None])[0],
            "load_end": (data.get("load_average_end") or [None])[0]}


def run_line(path: Path) -> str:
    """The run of a benchmark's JSON in words, for the line under a table."""
    run = run_of(path)
    if not run:
        return f"From `{relative(path)}`, which records no run."
    when = run["started"][:16].replace("T", " ")
    commit = run["commit"] or "unrecorded"
    if commit.endswith("-dirty"):  # bench/measure.py's mark of changed files beside the commit
        commit = commit[:-len("-dirty")] + " with uncommitted changes"
    load = "" if run["load"] is None else f"; load average {run['load']:.2f} at its start, {run['load_end']:.2f} at its end"
    return (f"Run: `{run['command']}`, {when} UTC, commit {commit}, "
            f"on a {run['machine']}{load}.")


def marker(paths: list, command: str) -> str:
    """The comment a generated table ends with: what it was drawn from, and how."""
    runs = "; ".join(f"{relative(p)} run {run_of(p).get('started', 'unrecorded')}" for p in paths)
    return f"<!-- drawn from {runs} ({stamp(*paths)}) by {command} -->"


def png_text(path: Path) -> dict:
    """A PNG's tEXt chunks, {keyword: text}."""
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    out, at = {}, 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, value = body.partition(b"\0")
            out[key.decode("latin-1")] = zlib.decompress(value[1:]).decode("latin-1")
        elif kind == b"IEND":
            break
        at += 12 + length
    return out
