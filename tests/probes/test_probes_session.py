"""The trainer-independent probe API: ``ProbeSession`` in a user's loop, ``ProbeCallback`` in a ``Trainer``."""

from __future__ import annotations

import copy
import json

import pytest
import torch

from probes.readout_pass import label_targets
from probes.session import ProbeSession
from tests.conftest import make_tiny_lm
from zerolock_theory.models.chunking import ChunkedLM
from zerolock_theory.records import STABILITY
from zerolock_theory.theory.stability import stability_terms

V, T = 64, 16


def _batch(seed: int = 1) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, V, (2, T + 1), generator=g)
    mask = torch.ones(2, T, dtype=torch.long)
    return {"input_ids": ids[:, :-1].clone(), "attention_mask": mask, "labels": ids[:, 1:].clone()}


def _reference_log_p(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    chunked = ChunkedLM(model, 2)
    with torch.no_grad():
        hs = chunked.hiddens(batch["input_ids"], batch["attention_mask"])
        return torch.stack([torch.log_softmax(chunked.readout(h).float(), -1).flatten(0, 1) for h in hs])


def test_session_in_a_user_loop_matches_the_reference_and_changes_nothing():
    model = make_tiny_lm("llama", layers=4, vocab=V)
    model.train()
    batch = _batch()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    records, states = [], []
    with ProbeSession(model, batch, chunks=2, alpha=0.5) as probes:
        for t in range(3):
            states.append(_reference_log_p(model, batch))
            params = [p.detach().clone() for p in model.parameters()]
            records.append(probes.step(t))
            assert all(torch.equal(a, b) for a, b in zip(params, model.parameters(), strict=True))
            assert model.training  # the session restores the mode
            loss = model(**{k: v for k, v in batch.items() if k != "labels"}).logits.flatten(0, 1)
            torch.nn.functional.cross_entropy(loss, batch["labels"].flatten()).backward()
            opt.step()
            opt.zero_grad()
    assert "probe/stability/paper/total/phi" not in records[0]
    labels = batch["labels"].flatten()
    before, after = states[1], states[2]
    for objective, eps in (("paper", 0.1), ("implemented", 0.0)):
        p_y = label_targets(labels, V, eps).log()
        ref = stability_terms(before[:-1], after[:-1], before[1:], p_y, 0.5, objective, log_input=True)
        got = records[2][STABILITY.key(objective, "total", "phi")]
        assert got == pytest.approx(float(ref.phi_total), rel=1e-6)
        assert records[2][STABILITY.key(objective, "total", "actual")] == pytest.approx(float(ref.actual_total), rel=1e-6)
    ce = -after[2].gather(-1, labels[:, None]).mean()
    assert records[2]["probe/minimizer/2/ce"] == pytest.approx(float(ce), rel=1e-6)


def test_session_rejects_a_batch_without_labels():
    batch = _batch()
    batch["labels"][:] = -100
    with pytest.raises(ValueError, match="no labelled position"):
        ProbeSession(make_tiny_lm("llama", layers=4, vocab=V), batch, chunks=2)


class _Rows(torch.utils.data.Dataset):
    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(5)
        self.ids = torch.randint(3, V, (n, T), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def test_callback_probes_a_real_trainer(tmp_path):
    from transformers import Trainer, TrainingArguments

    from probes.callback import ProbeCallback

    model = make_tiny_lm("llama", layers=4, vocab=V)
    initial = copy.deepcopy(model)
    raw = _Rows(1)[0]["input_ids"][None]
    batch = {"input_ids": raw, "labels": ProbeSession.shift_labels(raw)}
    callback = ProbeCallback(batch, chunks=2, alpha=0.5)
    args = TrainingArguments(
        output_dir=str(tmp_path), max_steps=3, per_device_train_batch_size=2, learning_rate=1e-2,
        report_to=[], save_strategy="no", logging_strategy="no", use_cpu=True, disable_tqdm=True,
    )
    Trainer(model=model, args=args, train_dataset=_Rows(8), callbacks=[callback]).train()
    assert [r["step"] for r in callback.history] == [0, 1, 2, 3]
    assert all("probe/stability/implemented/total/ratio" in r for r in callback.history[1:])
    lines = (tmp_path / "probes.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [0, 1, 2, 3]
    log_p = _reference_log_p(initial, {"input_ids": raw, "attention_mask": torch.ones_like(raw)})
    mask = batch["labels"].flatten() != -100
    ce0 = -log_p[2][mask].gather(-1, batch["labels"].flatten()[mask][:, None]).mean()
    assert callback.history[0]["probe/minimizer/2/ce"] == pytest.approx(float(ce0), rel=1e-6)
    assert callback.history[3]["probe/minimizer/2/ce"] != callback.history[0]["probe/minimizer/2/ce"]


def test_session_store_holds_the_readouts_and_an_existing_store_is_refused(tmp_path):
    from zerolock_theory.readout_store import ReadoutStore

    model = make_tiny_lm("llama", layers=4, vocab=V)
    batch = _batch()
    path = tmp_path / "store"
    with ProbeSession(model, batch, chunks=2, store=path) as probes:
        probes.step(0)
        with torch.no_grad():
            model.lm_head.weight.mul_(1.5)
        probes.step(1)
        log_p = _reference_log_p(model, batch)
    store = ReadoutStore(path)
    assert store.steps == [0, 1] and store.mode == "full"  # V = 64 <= 256: full float16 probabilities
    dense = torch.from_numpy(store.dense(1)).double()
    torch.testing.assert_close(dense, log_p.double().exp(), rtol=2e-3, atol=1e-4)  # float16 storage
    before = sorted((f.name, f.read_bytes()) for f in path.iterdir())
    with pytest.raises(FileExistsError, match="not an empty directory"):
        ProbeSession(model, batch, chunks=2, store=path)
    assert sorted((f.name, f.read_bytes()) for f in path.iterdir()) == before  # nothing removed


def test_callback_refuses_to_append_to_an_earlier_runs_records(tmp_path):
    from transformers import Trainer, TrainingArguments

    from probes.callback import ProbeCallback

    old = tmp_path / "probes.jsonl"
    old.write_text('{"step": 0}\n')
    raw = _Rows(1)[0]["input_ids"][None]
    callback = ProbeCallback({"input_ids": raw, "labels": ProbeSession.shift_labels(raw)}, chunks=2)
    args = TrainingArguments(
        output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=2, report_to=[],
        save_strategy="no", logging_strategy="no", use_cpu=True, disable_tqdm=True,
    )
    model = make_tiny_lm("llama", layers=4, vocab=V)
    trainer = Trainer(model=model, args=args, train_dataset=_Rows(4), callbacks=[callback])
    with pytest.raises(FileExistsError, match="already holds probe records"):
        trainer.train()
    assert old.read_text() == '{"step": 0}\n'


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (lambda b: b.pop("labels"), ValueError, "missing \\['labels'\\]"),
        (lambda b: b.update(input_ids=b["input_ids"].float()), TypeError, "input_ids must be an integer tensor"),
        (lambda b: b.update(labels=b["labels"][:, :5]), ValueError, "labels must have input_ids' shape"),
        (lambda b: b.update(input_ids=b["input_ids"][0], labels=b["labels"][0]), ValueError, r"\[B, T\]"),
        (lambda b: b.update(attention_mask=b["attention_mask"][:1]), ValueError, "attention_mask must have"),
        (lambda b: b["labels"].add_(V), ValueError, rf"labels must be -100 or lie in \[0, {V}\)"),
        (lambda b: b["input_ids"].add_(V), ValueError, rf"input_ids must lie in \[0, {V}\)"),
    ],
)
def test_session_rejects_a_malformed_batch_with_a_clear_message(change, error, match):
    batch = _batch()
    change(batch)
    with pytest.raises(error, match=match):
        ProbeSession(make_tiny_lm("llama", layers=4, vocab=V), batch, chunks=2)


def test_session_rejects_what_is_not_a_model():
    with pytest.raises(TypeError, match="must be a Hugging Face causal LM"):
        ProbeSession("model", _batch())  # type: ignore[arg-type]


def test_session_autocast_runs_the_probe_forward_in_bfloat16():
    model = make_tiny_lm("llama", layers=4, vocab=V)
    batch = _batch()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = _reference_log_p(model, batch)
    with ProbeSession(model, batch, chunks=2, autocast="bfloat16") as probes:
        got = probes.readouts()
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    with ProbeSession(model, batch, chunks=2) as probes:
        assert (probes.readouts() - got).abs().max() > 1e-3  # bf16 rounding: autocast took effect
    with pytest.raises(ValueError, match="autocast must be"):
        ProbeSession(model, batch, chunks=2, autocast="int8")


def test_callback_probes_only_on_the_main_process(tmp_path):
    from types import SimpleNamespace

    from probes.callback import ProbeCallback

    raw = _Rows(1)[0]["input_ids"][None]
    model = make_tiny_lm("llama", layers=4, vocab=V)
    args = SimpleNamespace(output_dir=str(tmp_path))
    for main in (False, True):
        callback = ProbeCallback({"input_ids": raw, "labels": ProbeSession.shift_labels(raw)}, chunks=2)
        state = SimpleNamespace(global_step=0, is_world_process_zero=main)
        callback.on_train_begin(args, state, None, model=model)
        state.global_step = 1
        callback.on_step_end(args, state, None)
        callback.on_train_end(args, state, None)
        assert [r["step"] for r in callback.history] == ([0, 1] if main else [])
        assert (tmp_path / "probes.jsonl").exists() == main


def test_session_takes_a_peft_model_and_reads_out_through_its_adapters():
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(r=4, target_modules=["q_proj", "v_proj"])
    model = get_peft_model(make_tiny_lm("llama", layers=4, vocab=V), lora)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.5)  # adapters that change the readouts
    batch = _batch()
    with ProbeSession(model, batch, chunks=2) as probes:
        got = probes.readouts()
        assert "probe/minimizer/2/ce" in probes.step(0)
    torch.testing.assert_close(got, _reference_log_p(model.get_base_model(), batch), rtol=0, atol=0)
    with model.disable_adapter():
        assert (_reference_log_p(model.get_base_model(), batch) - got).abs().max() > 1e-3
