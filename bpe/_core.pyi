"""
The compiled core of bpe: byte-level BPE in C++. Texts in (bytes, or str read in place), ints out; see bpe.BPETokenizer for tiktoken's API on str.
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['BYTES_PER_THREAD', 'ChunkCounter', 'Encoder', 'MAX_ID', 'MAX_THREADS', 'added_token_segments', 'count_chunks', 'huggingface_merges', 'is_nfc', 'lower_rank_splits', 'nfc', 'normalize', 'num_merges_for', 'pretokenize', 'safe_cut', 'simd_tier', 'split_rules', 'threads_for', 'threads_kept', 'threads_lent', 'train']
class ChunkCounter:
    """
    Counts the distinct chunks of texts as they stream in, for training: memory grows with the distinct chunks, not with the texts. No chunk crosses two texts or a special token.
    """
    def __getstate__(self) -> tuple:
        ...
    def __init__(self, pattern: str = 'default', special_tokens: collections.abc.Iterable[str] | None = None, max_memory: typing.SupportsIndex | None = None) -> None:
        """
        pattern: the split rule, as for pretokenize. special_tokens: a list of str, cut out of the texts and never counted. max_memory: a budget in bytes for the whole training run (None: none, and training is exact). Past it, add drops the rarest chunks, with a bpe.PruningWarning that says how many and below what count: the merges may then differ from exact training.
        """
    def __len__(self) -> int:
        """
        How many distinct chunks have been counted.
        """
    def __setstate__(self, arg0: tuple) -> None:
        ...
    def add(self, texts: str | bytes | collections.abc.Sequence[str] | collections.abc.Sequence[bytes], threads: typing.SupportsIndex = 0) -> None:
        """
        Count the chunks of texts (one bytes object or str, or a list of them, each counted on its own), on `threads` threads (0: as many as its size pays for). A str is read in place: an ASCII one with no copy; one other str is encoded to UTF-8 by the counting threads, a piece of at most about 256 K characters at a time, cut where a chunk must end; a list's other strs are encoded for the call only.
        """
    def add_counts(self, chunks: bytes | bytearray | memoryview, offsets: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], counts: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], threads: typing.SupportsIndex = 0) -> None:
        """
        Add counts in the form counts() gives them (from a counter of the same pattern and special tokens: the buffers do not say which), on `threads` threads; then keep to max_memory as add does. ValueError for offsets that do not fit the bytes or a count below 1, and then nothing is added.
        """
    def counts(self) -> tuple[bytes, numpy.ndarray, numpy.ndarray]:
        """
        The distinct chunks and their counts, as (chunks, offsets, counts): the bytes of every chunk end to end, a numpy int64 array of offsets (one more than the chunks: chunk k is chunks[offsets[k]:offsets[k + 1]]) and a numpy int64 array of counts. The order is the counter's own. The counter keeps its counts.
        """
    def merge(self, other: ChunkCounter, threads: typing.SupportsIndex = 0) -> None:
        """
        Add another counter's counts to this one's (the other keeps its own), then keep to max_memory as add does; what the other dropped is added to pruned. ValueError if the two differ in pattern or special tokens.
        """
    def train(self, num_merges: typing.SupportsIndex, progress: collections.abc.Callable[[int], object] | None = None) -> list[tuple[int, int]]:
        """
        Learn up to num_merges merges from the chunks counted; merge k makes token 256 + k. Stops early when no pair is left. The counts are used up: the counter is empty afterwards. progress, if given, is called with the number of merges made so far every few hundred merges.
        """
    @property
    def estimated_memory(self) -> int:
        """
        What training on the counts so far would take at its peak, in bytes, from B (the bytes of the distinct chunks), C (their number) and T (the count tables as allocated): max(T + 4 (B + C), 20 B + 4 C).
        """
    @property
    def max_memory(self) -> int | None:
        ...
    @property
    def pattern(self) -> str:
        """
        The split rule's name.
        """
    @property
    def pruned(self) -> tuple[int, int]:
        """
        (distinct chunks dropped to keep to max_memory, the largest count of one dropped): (0, 0) when none was, and training is exact.
        """
    @property
    def special_tokens(self) -> list[str]:
        """
        The special tokens (str) the texts are cut at.
        """
class Encoder:
    """
    Encodes text (str or bytes) with merges and special tokens, keeping a cache of chunks already encoded, and decodes ids back to bytes. Safe to use from several threads at once.
    """
    def __init__(self, merges: collections.abc.Iterable[tuple[typing.SupportsIndex, typing.SupportsIndex]] | numpy.typing.ArrayLike, pattern: str = 'default', special_tokens: collections.abc.Iterable[str] | None = None, token_ids: collections.abc.Iterable[typing.SupportsIndex] | None = None, rules: dict[str, object] | None = None) -> None:
        """
        merges: (a, b) pairs of ids (ints or numpy integers); merge k makes token 256 + k. pattern: the split rule, as for pretokenize. special_tokens: a list of str, numbered after the merges in that order. token_ids: the id of each token (the 256 bytes, the merges, the specials), when the vocabulary numbers them its own way (GPT-2 and GPT-4 shuffle the bytes); ids at most MAX_ID, all different, gaps allowed. rules: None, or a tokenizer.json's rules as a dict (normalizer, pre_tokenizer, added_tokens, ...), which then split the text and match the added tokens in it; of it, the model's options: ignore_merges (a chunk that is a token is that token), ranked_merges (None, or [left, right, made] in Hugging Face's rank order: the pair of lowest rank merges first), unmade_tokens ({text in the byte alphabet: id}, tokens no merge makes).
        """
    def count(self, text: str | bytes, allowed_special: typing.Literal['all'] | collections.abc.Collection[str] = (), disallowed_special: typing.Literal['all'] | collections.abc.Collection[str] = 'all', threads: typing.SupportsIndex = 0) -> int:
        """
        How many ids encode gives for text, on `threads` threads (0: as many as its size pays for), with no Python int or list made for them.
        """
    def count_batch(self, texts: collections.abc.Sequence[str] | collections.abc.Sequence[bytes], allowed_special: typing.Literal['all'] | collections.abc.Collection[str] = (), disallowed_special: typing.Literal['all'] | collections.abc.Collection[str] = 'all', threads: typing.SupportsIndex = 0) -> numpy.ndarray:
        """
        How many ids encode gives for each text of a list, as a numpy int64 array, on `threads` threads (0: as many as their bytes pay for), with no text's ids kept.
        """
    def decode_bytes(self, ids: collections.abc.Sequence[typing.SupportsIndex] | numpy.typing.NDArray[numpy.integer], start: bool = True) -> bytes:
        """
        The bytes that ids (a list of ints or a numpy array) stand for, joined; a special token gives its text. With the rules' decoder, the UTF-8 of the text it makes of them; start: whether the ids begin the text (its strip_start applies), False for a streaming decoder's later calls. ValueError names an id that is no token's.
        """
    def decode_single_token_bytes(self, id: typing.SupportsIndex) -> bytes:
        """
        The bytes of one token.
        """
    def decode_stream(self, ids: collections.abc.Sequence[typing.SupportsIndex] | numpy.typing.NDArray[numpy.integer], start: bool = True) -> tuple:
        """
        A streaming decoder's step under the rules' decoder: (the UTF-8 of the first `used` ids, used), where the ids left are byte tokens at the end that may begin a character later ones finish; start as decode_bytes's. Without a decoder, their bytes.
        """
    def encode(self, text: str | bytes, allowed_special: typing.Literal['all'] | collections.abc.Collection[str] = (), disallowed_special: typing.Literal['all'] | collections.abc.Collection[str] = 'all') -> list[int]:
        """
        The token ids of text (a str, or bytes), as a list of ints. A str is read in place: an ASCII one with no copy, any other encoded to UTF-8 for the call only, leaving no copy on the str. As in tiktoken, a special token in the text becomes its id if allowed_special ("all" or a set of str) holds it, and raises ValueError if disallowed_special ("all": every one not allowed) does; otherwise it is ordinary text.
        """
    def encode_array(self, text: str | bytes, allowed_special: typing.Literal['all'] | collections.abc.Collection[str] = (), disallowed_special: typing.Literal['all'] | collections.abc.Collection[str] = 'all', threads: typing.SupportsIndex = 0, dtype: numpy.typing.DTypeLike | None = None) -> numpy.ndarray:
        """
        As encode, as a numpy array, encoded on `threads` threads (0: as many as its size pays for). dtype: None for uint16 when n_vocab is 65,536 or less, else uint32; or an integer type of 16, 32 or 64 bits that holds every id.
        """
    def encode_batch(self, texts: collections.abc.Sequence[str] | collections.abc.Sequence[bytes], allowed_special: typing.Literal['all'] | collections.abc.Collection[str] = (), disallowed_special: typing.Literal['all'] | collections.abc.Collection[str] = 'all', threads: typing.SupportsIndex = 0) -> list[list[int]]:
        """
        The token ids of each text of a list (all str, or all bytes), as encode gives them, encoded on `threads` threads (0: as many as its size pays for), each a run of consecutive texts of about equal bytes.
        """
    def encode_batch_flat(self, texts: collections.abc.Sequence[str] | collections.abc.Sequence[bytes], allowed_special: typing.Literal['all'] | collections.abc.Collection[str] = (), disallowed_special: typing.Literal['all'] | collections.abc.Collection[str] = 'all', threads: typing.SupportsIndex = 0) -> tuple[numpy.ndarray, numpy.ndarray]:
        """
        As encode_batch, flat: (ids, offsets), every text's ids end to end in one numpy array (uint16 when n_vocab is 65,536 or less, else uint32) and len(texts) + 1 int64 offsets, text i's ids being ids[offsets[i]:offsets[i + 1]].
        """
    def encode_batch_padded(self, texts: collections.abc.Sequence[str] | collections.abc.Sequence[bytes], pad_id: typing.SupportsIndex, max_length: typing.SupportsIndex | None = None, pad_to_max_length: bool = False, truncate: bool = False, pad_left: bool = False, truncate_left: bool = False, prefix: collections.abc.Iterable[typing.SupportsIndex] | None = None, suffix: collections.abc.Iterable[typing.SupportsIndex] | None = None, allowed_special: typing.Literal['all'] | collections.abc.Collection[str] = (), disallowed_special: typing.Literal['all'] | collections.abc.Collection[str] = 'all', threads: typing.SupportsIndex = 0, dtype: numpy.typing.DTypeLike | None = None) -> tuple[numpy.ndarray, numpy.ndarray]:
        """
        As encode_batch, as one padded matrix and each row's length: (matrix, lengths), a numpy array of len(texts) rows (dtype: the narrowest of uint16 and uint32 that holds every id, pad_id, prefix and suffix, unless given) and int64 lengths. Row i is prefix, text i's ids, suffix, then pad_id up to the width (before them with pad_left). With truncate, a row keeps at most max_length - len(prefix) - len(suffix) of its text's ids, the first (the last with truncate_left); the width is max_length with pad_to_max_length, else the longest row's length.
        """
    def encode_with_offsets(self, text: str, allowed_special: typing.Literal['all'] | collections.abc.Collection[str] = (), disallowed_special: typing.Literal['all'] | collections.abc.Collection[str] = 'all') -> tuple[list[int], numpy.ndarray]:
        """
        As encode, for a str, and each token's span in its characters, as a numpy array of shape (n, 2) of int64 (start, end): a token that begins or ends inside a character gets that whole character (Hugging Face's offsets).
        """
    @property
    def merges(self) -> list[tuple[int, int]]:
        """
        The merges, as a list of (a, b) tuples of ints.
        """
    @property
    def n_vocab(self) -> int:
        """
        One more than the largest id (more than the number of tokens if ids have gaps).
        """
    @property
    def num_merges(self) -> int:
        ...
    @property
    def pattern(self) -> str:
        ...
    @property
    def special_tokens(self) -> dict[str, int]:
        """
        Each special token's id, in the order given.
        """
    @property
    def token_ids(self) -> list[int] | None:
        """
        The id of every token, as a list of ints, or None when token i has id i.
        """
def added_token_segments(text: str, tokens: collections.abc.Sequence[dict[str, str | int | bool]], normalized: bool, allowed: typing.Literal['all'] | collections.abc.Collection[str] = 'all') -> list[tuple[int, int, int | None]]:
    """
    One pass of Hugging Face's added-token matching over text, with the tokens ("added_tokens" entries) whose normalized flag is `normalized`: (begin, end, id or None for text) in characters.
    """
def count_chunks(text: bytes | bytearray | memoryview, pattern: str = 'default', dialect: str = 'python') -> int:
    """
    How many chunks pretokenize(text, pattern) would give, without making them: the split alone.
    """
def huggingface_merges(vocab: dict[str, int], merges: list[str] | list[list[str]], alphabet: str) -> tuple[list[tuple[int, int]], list[int], list[str], list[list[int]] | None]:
    """
    A tokenizer.json's vocab ({str: id}) and merges ("a b" or [a, b]) in the core's numbering, read through alphabet (a str of 256 characters, byte b's at b): (merges as (left, right), the file's id of each byte and merge token, the tokens no byte or merge makes, and None, or where the core's merges are not the file's in its order the ranked merges [[left, right, made], ...] in Hugging Face's rank order, as Encoder's rules["ranked_merges"]). ValueError names a bad merge (csrc/py_huggingface.h).
    """
def is_nfc(text: str | bytes) -> bool:
    """
    Whether text (str, or bytes of UTF-8) is in NFC, as Hugging Face's tokenizers normalizes it.
    """
def lower_rank_splits(ranks: dict[bytes, int], tokens: list[bytes]) -> list[int]:
    """
    For each token (bytes, a key of ranks), its bytes byte-pair encoded as tiktoken does with the ranks below its own: the length of the first part when that ends as two parts (the pair that made the token), else 0. O(n log n) for a token of n bytes (csrc/ranks.h).
    """
def nfc(text: str | bytes) -> tuple[str | bytes, list[int]]:
    """
    NFC of text (str, or bytes of UTF-8), as Hugging Face's tokenizers normalizes it, and the origin of each byte of the result's UTF-8: the byte offset in text's UTF-8 of the start of the input character that the output byte came from, and one entry more at the end, the input's length in bytes. A token spanning output bytes [b, e) has Hugging Face's offsets from origin[b] to the end of the input character at origin[e - 1].
    """
def normalize(text: str, normalizer: str | list[dict[str, object]] | None, origins: bool = True) -> tuple[str, list[int] | None]:
    """
    text through a rules normalizer (the rules dict's 'normalizer': 'NFC' or a list of steps), and the origin of each byte of the result's UTF-8, as nfc gives it. ValueError names a step that is wrong. origins=False: None for the origins, the text made as encode makes it (without them).
    """
def num_merges_for(vocab_size: typing.SupportsIndex, num_special_tokens: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    The merges that make a vocabulary of vocab_size tokens (an int: the 256 bytes, the merges and the special tokens); ValueError if it is out of range.
    """
def pretokenize(text: bytes | bytearray | memoryview, pattern: str = 'default', dialect: str = 'python') -> list[bytes]:
    """
    Split text (bytes) into the chunks that merges never cross. pattern: 'default' (this project's rule, any bytes), 'gpt2', 'gpt4', 'qwen2' or 'o200k' (GPT-2's, GPT-4's, Qwen2's and GPT-4o's rules; valid UTF-8 only), or a regex (split_rules() has the rules' own). dialect: the regex's, 'python' (Python's regex module, as tiktoken's) or 'oniguruma' (as a Hugging Face Split's).
    """
def safe_cut(text: str, special_tokens: collections.abc.Iterable[str] | None = None, start: typing.SupportsInt | typing.SupportsIndex = 0, end: typing.SupportsInt | typing.SupportsIndex | None = None, last: bool = True, pattern: str = 'default') -> int:
    """
    Where a str may be cut so that its two pieces split into exactly the chunks of the whole, under every named split pattern (csrc/split.h, is_safe_cut, says why): the last such place p with start <= p < end (or, with last=False, the first with start <= p), never inside one of special_tokens (a list of str). 0 when there is none: p is never 0, and always 0 for a pattern given as a regex, which no place is certain for.
    """
def simd_tier() -> str:
    """
    The SIMD tier the split runs in: 'portable' (a chunk at a time), 'sse2', 'avx2' or 'avx512' (64 bytes at a time). The best this CPU has, unless the environment variable BPE_SIMD named another at import.
    """
def split_rules() -> list[tuple[str, str, str, list[str]]]:
    """
    The named split rules, as (name, regex, oniguruma, texts): the rule's published regex (tiktoken's dialect, which Python's regex module reads), the same in Oniguruma's syntax (Hugging Face tokenizers), and the regex texts that pattern= takes as this rule (it then runs on the rule's splitter).
    """
def threads_for(bytes: typing.SupportsIndex, threads: typing.SupportsIndex = 0) -> int:
    """
    How many threads a call on a text of this many bytes (a batch's all together) runs on when asked for `threads`: that many, or for 0 as many as its size pays for, one per BYTES_PER_THREAD bytes and at most one per core, so a short text runs on the caller's thread alone. Every call that encodes or counts takes this rule.
    """
def threads_kept() -> int:
    """
    How many threads the process keeps for its calls: started as calls first ask for them, then woken for each call, and sleeping between calls (a child after fork() starts with none).
    """
def threads_lent() -> int:
    """
    How many threads the calls of this process have been lent so far, besides their own: n - 1 for a call on n threads, none for a short call.
    """
def train(text: bytes | bytearray | memoryview, num_merges: typing.SupportsIndex, pattern: str = 'default', special_tokens: collections.abc.Iterable[str] | None = None, threads: typing.SupportsIndex = 0) -> list[tuple[int, int]]:
    """
    Learn up to num_merges merges from text (bytes); merge k makes token 256 + k. Stops early when no pair is left. pattern: the split rule, as for pretokenize. special_tokens (a list of str) are cut out of the text first, so that no merge crosses or contains one. threads=0 counts chunks on as many threads as the text's size pays for. The same as ChunkCounter(pattern, special_tokens).add(text) and then .train(num_merges).
    """
BYTES_PER_THREAD: int = 65536
MAX_ID: int = 16777215
MAX_THREADS: int = 256
