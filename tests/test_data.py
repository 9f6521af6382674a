"""Tests of zerolock_theory.data: sources, packing, split, stream order and resume."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from zerolock_theory.data import DataConfig, DataStream, LMData, load_texts, pad_batch


@pytest.fixture(scope="module")
def byte_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level BPE without merges: one token per ASCII character, plus eos and pad."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=258, special_tokens=["<eos>", "<pad>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(["a"], trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", pad_token="<pad>")


def _corpus(tmp_path: Path, n_chars: int, seed: int = 0) -> str:
    """A .txt file of random letters: n_chars + 1 (eos) tokens, distinct packed blocks."""
    rng = random.Random(seed)
    path = tmp_path / "corpus.txt"
    path.write_text("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n_chars)))
    return str(path)


def _data(tok, tmp_path: Path, n_chars: int = 499, **kw) -> LMData:
    kw = {"seq_len": 4, "batch_size": 2, "eval_batches": 2, "eval_fraction": 0.1, **kw}
    return LMData(DataConfig(source=_corpus(tmp_path, n_chars), **kw), tok)


def _rows(t: torch.Tensor) -> list[tuple[int, ...]]:
    return [tuple(r) for r in t.tolist()]


@pytest.mark.parametrize("bad", [
    {"seq_len": 0}, {"batch_size": -1}, {"eval_batches": 0}, {"seq_len": 2.5},
    {"eval_fraction": 0.0}, {"eval_fraction": 1.0}, {"seed": -1}, {"source": ""},
    {"text_field": ""}, {"batch_size": True}, {"order_seed": -2}, {"order_seed": 1.5},
])
def test_config_validation(bad: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        DataConfig(**bad)


def test_sources_txt_dir_jsonl(tmp_path: Path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "b.txt").write_text("second")
    (tmp_path / "d" / "a.md").write_text("first")
    (tmp_path / "d" / "sub" / "c.txt").write_text("third")
    (tmp_path / "d" / "skip.py").write_text("ignored")
    (tmp_path / "d" / "empty.txt").write_text("  \n")
    assert load_texts(str(tmp_path / "d")) == ["first", "second", "third"]
    assert load_texts(str(tmp_path / "d" / "b.txt")) == ["second"]
    lines = [json.dumps({"body": "x y"}), "", json.dumps({"body": "z", "id": 3})]
    (tmp_path / "c.jsonl").write_text("\n".join(lines) + "\n")
    assert load_texts(str(tmp_path / "c.jsonl"), text_field="body") == ["x y", "z"]
    embedded = load_texts("embedded")
    assert len(embedded) > 50 and sum(map(len, embedded)) > 100_000


def test_source_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_texts(str(tmp_path / "nope.txt"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"text": broken\n')
    with pytest.raises(ValueError, match="line 2: not valid JSON"):
        load_texts(str(bad))
    bad.write_text('{"text": "ok"}\n\n{"other": "x"}\n')
    with pytest.raises(ValueError, match="line 3: no field 'text'"):
        load_texts(str(bad))
    bad.write_text('{"text": 5}\n')
    with pytest.raises(ValueError, match="holds int, not text"):
        load_texts(str(bad))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="empty corpus"):
        load_texts(str(tmp_path / "empty"))
    (tmp_path / "x.xlsx").write_text("a,b")
    with pytest.raises(ValueError, match="unsupported"):
        load_texts(str(tmp_path / "x.xlsx"))


def test_too_small_corpus(byte_tokenizer, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="too few blocks"):
        _data(byte_tokenizer, tmp_path, n_chars=30)


def test_labels_are_shifted_inputs_and_split_is_disjoint(byte_tokenizer, tmp_path: Path) -> None:
    data = _data(byte_tokenizer, tmp_path)
    packed = torch.tensor(byte_tokenizer(load_texts(data.config.source))["input_ids"][0]
                          + [byte_tokenizer.eos_token_id]).view(-1, 5)
    assert len(set(_rows(packed))) == len(packed) == data.n_train + data.n_eval == 100
    train, held = set(_rows(data.train_blocks)), set(_rows(data.eval_blocks))
    assert not train & held and train | held == set(_rows(packed))
    assert (data.n_train, data.n_eval, data.vocab_size) == (90, 10, 258)
    assert data.pad_token_id == byte_tokenizer.pad_token_id
    batch = DataStream(data, 3, seed=0).next_batch()
    assert all(v.dtype == torch.long and v.shape == (3, 4) for v in batch.values())
    assert torch.equal(batch["input_ids"][:, 1:], batch["labels"][:, :-1])
    assert bool((batch["attention_mask"] == 1).all())
    for b in data.eval_batches():
        assert torch.equal(b["input_ids"][:, 1:], b["labels"][:, :-1])
        assert set(_rows(torch.cat([b["input_ids"], b["labels"][:, -1:]], 1))) <= held


def test_split_and_stream_determinism(byte_tokenizer, tmp_path: Path) -> None:
    a, b = _data(byte_tokenizer, tmp_path), _data(byte_tokenizer, tmp_path)
    c = _data(byte_tokenizer, tmp_path, seed=1)
    assert torch.equal(a.eval_blocks, b.eval_blocks)
    assert not torch.equal(a.eval_blocks, c.eval_blocks)
    first, again = a.eval_batches(), a.eval_batches()
    assert len(first) == 2 and all(torch.equal(x["labels"], y["labels"])
                                   for x, y in zip(first, again, strict=True))
    s1, s2, s3 = DataStream(a, 4, 7), DataStream(b, 4, 7), DataStream(a, 4, 8)
    x1, x2, x3 = (torch.cat([s.next_batch()["input_ids"] for _ in range(5)]) for s in (s1, s2, s3))
    assert torch.equal(x1, x2) and not torch.equal(x1, x3)


def test_order_seed_changes_the_order_not_the_split(byte_tokenizer, tmp_path: Path) -> None:
    """verify's replicates: ``order_seed`` draws the training order, ``seed`` alone the split."""
    plain = _data(byte_tokenizer, tmp_path, seed=2)
    ordered = _data(byte_tokenizer, tmp_path, seed=2, order_seed=9)
    assert plain.config.stream_seed == 2 and ordered.config.stream_seed == 9
    assert torch.equal(plain.eval_blocks, ordered.eval_blocks)
    assert torch.equal(plain.train_blocks, ordered.train_blocks)
    default, by_order = (DataStream(d, 4, d.config.stream_seed).next_batch()["input_ids"] for d in (plain, ordered))
    assert not torch.equal(default, by_order)
    assert torch.equal(by_order, DataStream(plain, 4, 9).next_batch()["input_ids"])


def test_epochs_are_counted_and_tails_dropped(byte_tokenizer, tmp_path: Path) -> None:
    data = _data(byte_tokenizer, tmp_path, n_chars=59, eval_fraction=0.4, eval_batches=2,
                 batch_size=2)  # 12 blocks: 7 train, 5 held out
    assert (data.n_train, data.n_eval) == (7, 5)
    stream = DataStream(data, 2, seed=3)
    seen = []
    for _ in range(3):
        seen += _rows(stream.next_batch()["input_ids"])
    assert stream.epoch == 1 and stream.dropped_blocks == 1 and len(set(seen)) == 6
    for _ in range(6):
        stream.next_batch()
    assert stream.epoch == 3 and stream.dropped_blocks == 3 and stream.batches == 9
    with pytest.raises(ValueError, match="exceeds"):
        DataStream(data, 8, seed=0)


def test_state_dict_resume_equals_uninterrupted(byte_tokenizer, tmp_path: Path) -> None:
    data = _data(byte_tokenizer, tmp_path, n_chars=59, eval_fraction=0.4)
    reference = DataStream(data, 2, seed=5)
    expected = [reference.next_batch() for _ in range(11)]
    first = DataStream(data, 2, seed=5)
    for _ in range(4):
        first.next_batch()
    state = json.loads(json.dumps(first.state_dict()))
    resumed = DataStream(data, 2, seed=5)
    resumed.load_state_dict(state)
    got = [resumed.next_batch() for _ in range(7)]
    for want, have in zip(expected[4:], got, strict=True):
        assert all(torch.equal(want[k], have[k]) for k in want)
    assert resumed.state_dict() == reference.state_dict()
    with pytest.raises(ValueError, match="seed"):
        DataStream(data, 2, seed=6).load_state_dict(state)


def test_probe_batch(byte_tokenizer, tmp_path: Path) -> None:
    data = _data(byte_tokenizer, tmp_path)
    probe = data.probe_batch(10, seed=1)
    assert probe["input_ids"].shape == (3, 4) and int((probe["labels"] != -100).sum()) == 10
    assert torch.equal(probe["input_ids"], data.probe_batch(10, seed=1)["input_ids"])
    assert not torch.equal(probe["input_ids"], data.probe_batch(10, seed=2)["input_ids"])
    held = set(_rows(data.eval_blocks[:, :-1]))
    assert set(_rows(probe["input_ids"])) <= held
    with pytest.raises(ValueError, match="n_positions"):
        data.probe_batch(41, seed=0)


@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_batch(side: str) -> None:
    batch = pad_batch([[5, 6, 7], [8]], pad_token_id=0, padding_side=side)
    if side == "right":
        assert batch["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
        assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
        assert batch["labels"].tolist() == [[6, 7, -100], [-100, -100, -100]]
    else:
        assert batch["input_ids"].tolist() == [[5, 6, 7], [0, 0, 8]]
        assert batch["attention_mask"].tolist() == [[1, 1, 1], [0, 0, 1]]
        assert batch["labels"].tolist() == [[6, 7, -100], [-100, -100, -100]]
    with pytest.raises(ValueError, match="padding_side"):
        pad_batch([[1]], 0, padding_side="middle")


def test_a_test_split_is_disjoint_and_the_default_split_is_unchanged(byte_tokenizer, tmp_path) -> None:
    two = _data(byte_tokenizer, tmp_path, n_chars=400, eval_fraction=0.2)
    three = _data(byte_tokenizer, tmp_path, n_chars=400, eval_fraction=0.2, test_fraction=0.2)
    assert two.n_test == 0 and two.test_batches() == []
    assert torch.equal(two.eval_blocks, three.eval_blocks)  # the validation split is the old held-out part
    rows = [tuple(b.tolist()) for part in (three.train_blocks, three.eval_blocks, three.test_blocks) for b in part]
    assert len(rows) == len(two.train_blocks) + len(two.eval_blocks) and three.n_test > 0
    assert torch.equal(torch.cat([three.test_blocks, three.train_blocks]), two.train_blocks)
