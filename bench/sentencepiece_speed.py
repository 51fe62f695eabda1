"""Encoding with SentencePiece BPE models (.model files): BPETokenizer.from_sentencepiece
against gigatoken's Tokenizer.from_sentencepiece and the sentencepiece library itself,
on one core, warm.

    python bpe_bench.py sentencepiece-speed [--repeats 5] [--out docs/results] [MODEL ...]

The models: one trained here with SentencePieceTrainer (8,000 pieces, byte fallback,
nmt_nfkc, on the training stories and Python source), the real ones in --models
(default /tmp/spmodels: docs/library.md says which package ships each and how to fetch
it), and any named. The texts: the held-out stories, about 1 MB of Python source and
multilingual text (scripts, emoji, accents that no piece covers whole). Before anything
is timed, each contender's ids are compared with sentencepiece's encode, line by line
(a line's ids that differ are a mismatch); a contender that differs is still timed, and
its mismatches are in its row. Each round runs every contender once, in turn, in this
process pinned to one CPU; the table gives the medians of the wall-clock seconds as
MB/s. Saved as OUT/bench-sentencepiece-speed.json and .txt.
"""
import argparse
import io
import os
import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import SHARED_DATA  # noqa: E402
from bench.measure import Contender, Report, import_bpe, interleaved, median, timing  # noqa: E402
from bench.texts import cut_to, held_out_and_warm_up_source, stories  # noqa: E402

REAL_MODELS = Path(os.environ.get("BPE_SPMODELS", "/tmp/spmodels"))
# The trained model's options: as Llama 2's and Mistral's were trained (BPE, byte fallback),
# but with sentencepiece's default normalization (nmt_nfkc), which theirs leave out.
TRAINED_OPTIONS = dict(model_type="bpe", vocab_size=8000, byte_fallback=True, character_coverage=0.9995)
MULTILINGUAL = ["数字与中文混合，还有标点。日本語のテキストとカタカナ。", "Привет, мир! Съешь же ещё этих мягких французских булок.",
                "مرحبا بالعالم، هذه جملة عربية للاختبار.", "Ça été très élevé. Hôtel à côté, naïve façade.",
                unicodedata.normalize("NFD", "Ame\u0301lie café crème brûlée Ångström"), "한국어 텍스트와 숫자 42",
                "Ελληνικά γράμματα και αριθμοί 3.14", "emoji 😀👍🏽 👨‍👩‍👧 🇫🇷  ｆｕｌｌｗｉｄｔｈ ﬁ ½ \u00a0 tabs\tand  spaces"]


def multilingual(size: int) -> str:
    lines, k = [], 0
    while sum(map(len, lines)) < size:
        lines.append(MULTILINGUAL[k % len(MULTILINGUAL)] + f" {k}\n")
        k += 1
    return "".join(lines)


def train_model(spm, lines: list[str], folder: Path) -> Path:
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=out, minloglevel=2, **TRAINED_OPTIONS)
    path = folder / "stories-8000.model"
    path.write_bytes(out.getvalue())
    return path


def mismatches(lines: list[str], ours: list[list[int]], theirs: list[list[int]]) -> tuple[int, str | None]:
    """(how many lines' ids differ, the first such line, shortened)."""
    differ = [k for k, (a, b) in enumerate(zip(ours, theirs)) if list(a) != list(b)]
    return len(differ), (lines[differ[0]][:80] if differ else None)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path, help="more .model files to time")
    parser.add_argument("--models", type=Path, default=REAL_MODELS, help=f"a folder of real .model files "
                        f"(default: {REAL_MODELS}; none there: the trained one only)")
    parser.add_argument("--repeats", type=int, default=5, help="rounds; the table gives medians (default: 5)")
    parser.add_argument("--source-mb", type=float, default=1.0, help="megabytes of Python source (default: 1)")
    parser.add_argument("--multilingual-mb", type=float, default=0.3, help="megabytes of multilingual text "
                        "(default: 0.3)")
    parser.add_argument("--data", type=Path, default=SHARED_DATA,
                        help=f"the shared data folder (default: {SHARED_DATA})")
    parser.add_argument("--out", type=Path, default=None, help="where bench-sentencepiece-speed.json and .txt go "
                        "(default: print only)")
    args = parser.parse_args(argv)
    if args.repeats < 3:
        parser.error("--repeats must be at least 3")
    bpe = import_bpe()
    try:
        from importlib import metadata

        import sentencepiece as spm
    except ImportError as error:
        sys.exit(f"bpe_bench.py sentencepiece-speed needs sentencepiece (requirements-bench.txt): {error}")
    try:
        import gigatoken
    except ImportError:
        gigatoken = None
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    report = Report("sentencepiece-speed", args)
    report.data["versions"]["sentencepiece"] = metadata.version("sentencepiece")
    if gigatoken is None:
        report.note("gigatoken is not installed, so its rows are left out (pip install -r requirements-bench.txt)")
    story_texts = stories(args.data)
    source, warm_source, facts = held_out_and_warm_up_source(int(args.source_mb * 1e6), 500_000)
    texts = {"held-out stories": story_texts["valid"], "Python source": source,
             "multilingual": multilingual(int(args.multilingual_mb * 1e6))}
    report.data["texts"] = {name: {"mb": len(t.encode("utf-8")) / 1e6} for name, t in texts.items()}
    report.data["texts"]["Python source"].update(facts)

    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="sentencepiece-speed-"))
    corpus = cut_to(story_texts["train"], 2_000_000) + "\n" + warm_source + "\n" + multilingual(50_000)
    trained = train_model(spm, [line for line in corpus.splitlines() if line.strip()], folder)
    models = [(trained, "trained here: SentencePieceTrainer " + ", ".join(f"{k}={v}" for k, v in
                                                                           TRAINED_OPTIONS.items()))]
    real = sorted(p for p in args.models.glob("*") if p.is_file()) if args.models.is_dir() else []
    models += [(p, f"real: {p.name} (docs/library.md: where it comes from)") for p in real]
    models += [(p, "given") for p in args.files]
    report.data["rows"] = []
    for path, where in models:
        processor = spm.SentencePieceProcessor(model_file=str(path))
        try:
            ours = bpe.BPETokenizer.from_sentencepiece(path)
        except ValueError as error:
            report.say(f"{path.name} ({where}): ours refuses it: {error}")
            report.data["rows"].append({"model": path.name, "source": where, "refused": str(error)})
            continue
        giga = gigatoken.Tokenizer.from_sentencepiece(path) if gigatoken is not None else None
        for text_name, text in texts.items():
            lines = text.splitlines(keepends=True)
            expected = processor.encode(lines)
            found = {"bpe encode_ordinary": mismatches(lines, ours.encode_ordinary_batch(lines, threads=1), expected)}
            if giga is not None:
                found["gigatoken encode"] = mismatches(lines, [giga.encode(line).tolist() for line in lines], expected)
            whole = processor.encode(text)
            same_whole = {"bpe encode_ordinary": ours.encode_ordinary(text) == whole,
                          "bpe encode_array(threads=1)": ours.encode_array(text, disallowed_special=(),
                                                                           threads=1).tolist() == whole}
            found["bpe encode_array(threads=1)"] = found["bpe encode_ordinary"]
            if giga is not None:
                same_whole["gigatoken encode"] = giga.encode(text).tolist() == whole
            contenders = [
                Contender("bpe encode_ordinary", "bpe", lambda: ours, lambda t, x=text: t.encode_ordinary(x)),
                Contender("bpe encode_array(threads=1)", "bpe", lambda: ours,
                          lambda t, x=text: t.encode_array(x, disallowed_special=(), threads=1)),
                Contender("sentencepiece encode", "sentencepiece", lambda: processor, lambda t, x=text: t.encode(x)),
            ]
            if giga is not None:
                contenders.insert(2, Contender("gigatoken encode", "gigatoken", lambda: giga,
                                               lambda t, x=text: t.encode(x)))
            samples = interleaved(contenders, args.repeats)
            mb = len(text.encode("utf-8")) / 1e6
            report.say(f"{path.name} ({where}), {text_name} ({mb:.2f} MB, {len(whole):,} tokens): median MB/s of "
                       f"{args.repeats} interleaved rounds, one core, warm; mismatches = lines of {len(lines):,} "
                       "whose ids differ from sentencepiece's")
            base = median(samples["sentencepiece encode"])
            for c in contenders:
                m = median(samples[c.name])
                count, first = found.get(c.name, (0, None))
                same = same_whole.get(c.name, True)
                report.say(f"  {c.name:<30} {mb / m:8.1f} MB/s  {base / m:6.1f}x sentencepiece  mismatches {count:>5}"
                           + ("" if same else "  (the whole text's ids differ)")
                           + (f"  first: {first!r}" if first else ""))
                report.data["rows"].append({"model": path.name, "source": where, "text": text_name,
                                            "contender": c.name, "mb": mb, "tokens": len(whole),
                                            "mismatched_lines": count, "lines": len(lines), "first_mismatch": first,
                                            "whole_text_ids_equal": same, "mb_per_s": mb / m,
                                            **timing(samples[c.name])})
    report.save(args.out)


if __name__ == "__main__":
    main()
