"""Truncated files (issue #51, deliverable 5): a model checkpoint, a SPARQL store, an entity-linker
file or a recognizer cut short on disk is refused with one line that names the file and says what is
wrong (the project's own error, a :class:`GraphmertError`), never a traceback from safetensors,
RocksDB, gzip or spaCy — and never read as a smaller, or empty, store."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, models

from graphmert.config import ModelConfig
from graphmert.errors import GraphmertError

V = 40
CFG = ModelConfig(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32)


def truncate(path: Path, keep: float = 0.5) -> Path:
    """Cut ``path`` to ``keep`` of its bytes (at least one byte goes)."""
    data = path.read_bytes()
    path.write_bytes(data[:min(int(len(data) * keep), len(data) - 1)])
    return path


def assert_one_line_naming(err: BaseException, path: Path) -> None:
    assert isinstance(err, GraphmertError), f"{type(err).__mro__}: {err}"
    msg = str(err)
    assert "\n" not in msg and msg.startswith(str(path)), msg


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    from graphmert.model import build_model, save_checkpoint

    d = tmp_path_factory.mktemp("ckpt")
    tok = d / "tok.json"
    Tokenizer(models.WordPiece({f"tok{i}": i for i in range(V)}, unk_token="tok0")).save(str(tok))
    torch.manual_seed(0)
    return save_checkpoint(d / "ckpt", build_model(CFG, V, 2), CFG, tok, {"a": 0, "b": 1})


@pytest.mark.parametrize("name", ["model.safetensors", "config.json", "relation_map.json"])
def test_truncated_checkpoint_file_is_named(checkpoint, tmp_path, name):
    from graphmert.model import CheckpointError, load_checkpoint

    ckpt = Path(shutil.copytree(checkpoint, tmp_path / "ckpt"))
    load_checkpoint(ckpt)                                    # whole: it loads
    truncate(ckpt / name)
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(ckpt)
    assert_one_line_naming(e.value, ckpt / name)


def test_truncated_checkpoint_tokenizer_is_named(checkpoint, tmp_path):
    from graphmert.corpus.tokenizer import TokenizerError, load_tokenizer

    path = truncate(Path(shutil.copy(checkpoint / "tokenizer.json", tmp_path / "tokenizer.json")))
    with pytest.raises(TokenizerError) as e:
        load_tokenizer(path)
    assert_one_line_naming(e.value, path)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    from graphmert.export.store import build_store

    d = tmp_path_factory.mktemp("store")
    nt = d / "kg.nt"
    nt.write_text("".join(f'<http://x.org/e{i}> <http://x.org/p> "v{i}" .\n' for i in range(2000)),
                  encoding="utf-8")
    build_store(nt, d / "store")
    return d / "store"


def _count(path: Path) -> str:
    from graphmert.export.store import open_store, run_query

    return run_query(open_store(path), "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").rows[0][0]


def _data_files(store: Path) -> list[str]:
    from graphmert.export.store import _runtime_file

    return sorted(p.name for p in store.iterdir() if p.is_file() and p.stat().st_size > 1
                  and not _runtime_file(p.name))


def test_every_truncated_store_file_is_named(store, tmp_path):
    """Each database file of a real store cut in half in turn: open_store names it. Without the
    store's file record a truncated MANIFEST opened as an empty store (0 triples, no error)."""
    from graphmert.export.store import StoreError

    assert _count(store) == "2000"
    names = _data_files(store)
    assert any(n.startswith("MANIFEST") for n in names) and any(n.endswith(".sst") for n in names)
    for name in names:
        copy = Path(shutil.copytree(store, tmp_path / name))
        truncate(copy / name)
        with pytest.raises(StoreError, match="truncated or changed") as e:
            _count(copy)
        assert_one_line_naming(e.value, copy / name)


def test_store_corruption_that_rocksdb_finds_is_a_store_error(store, tmp_path):
    """A store without the file record (built by an older version) whose table file is truncated:
    RocksDB's own "Corruption" (a RuntimeError) becomes a StoreError naming the store."""
    from graphmert.export.store import FILES_RECORD, StoreError

    copy = Path(shutil.copytree(store, tmp_path / "old"))
    (copy / FILES_RECORD).unlink()
    truncate(copy / next(n for n in _data_files(copy) if n.endswith(".sst")))
    with pytest.raises(StoreError, match="cannot open the SPARQL store .*Corruption") as e:
        _count(copy)
    assert_one_line_naming(e.value, copy)


def test_truncated_linker_file_is_named(tmp_path):
    from graphmert.corpus.document import Document, Mention
    from graphmert.ner.linking import EntityLinker, LinkerError

    docs = [Document(id=str(i), text=f"aspirin {i}", mentions=[
        Mention(start=0, end=7, text="aspirin", type="Chemical", ids=[f"MESH:D{i:06d}"])]) for i in range(200)]
    path = EntityLinker.build(docs, None).save(tmp_path / "linker.json.gz")
    EntityLinker.load(path)
    truncate(path, keep=0.8)
    with pytest.raises(LinkerError, match="not a readable entity-linker file") as e:
        EntityLinker.load(path)
    assert_one_line_naming(e.value, path)


@pytest.fixture(scope="module")
def recognizer(tmp_path_factory) -> Path:
    """A saved, untrained, one-model recognizer (its files are what a trained one writes)."""
    from graphmert.ner.recognizer import Recognizer, RecognizerPart, recognizer_nlp

    nlp = recognizer_nlp(["biolink:Gene"])
    nlp.initialize()
    path = tmp_path_factory.mktemp("recognizer") / "recognizer"
    Recognizer([RecognizerPart(nlp=nlp, categories=["biolink:Gene"])]).save(path)
    return path


@pytest.mark.parametrize("name", ["model-0/ner/model", "model-0/config.cfg", "model-0/vocab/strings.json"])
def test_truncated_recognizer_file_is_named(recognizer, tmp_path, name):
    from graphmert.ner.recognizer import Recognizer, RecognizerError

    copy = Path(shutil.copytree(recognizer, tmp_path / "recognizer"))
    Recognizer.load(copy)
    truncate(copy / name)
    with pytest.raises(RecognizerError, match="truncated or changed") as e:
        Recognizer.load(copy)
    assert_one_line_naming(e.value, copy / name)


def test_recognizer_spacy_cannot_read_is_a_recognizer_error(recognizer, tmp_path):
    """A recognizer saved before its file sizes were recorded: spaCy's own error on a truncated
    model file becomes a RecognizerError naming the model folder."""
    import json

    from graphmert.ner.recognizer import Recognizer, RecognizerError

    copy = Path(shutil.copytree(recognizer, tmp_path / "recognizer"))
    meta = json.loads((copy / "graphmert-recognizer.json").read_text())
    del meta["files"]
    (copy / "graphmert-recognizer.json").write_text(json.dumps(meta))
    truncate(copy / "model-0" / "ner" / "model")
    with pytest.raises(RecognizerError, match="cannot load the spaCy model") as e:
        Recognizer.load(copy)
    assert_one_line_naming(e.value, copy / "model-0")
