"""PEFT adapters and metric export: what a run writes reads back in the ecosystem's tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from zerolock_theory.app.cli import main
from zerolock_theory.config import TrainConfig
from zerolock_theory.jsonio import read_records
from zerolock_theory.models import ChunkedLM, attach_adapters, load_model
from zerolock_theory.training.state import latest_checkpoint, load_checkpoint

TRAIN = ["--steps", "3", "--seq-len", "16", "--batch-size", "2", "--chunks", "2", "--lr", "0.01",
         "--optimizer", "adamw", "--set", "data.eval_batches=1", "--eval-every", "1", "--no-progress"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """One short ZeroLock run that also exports its metrics to TensorBoard."""
    run = tmp_path_factory.mktemp("export") / "run"
    assert main(["train", "--out", str(run), "--report-to", "tensorboard", *TRAIN]) == 0
    return run


def _chunked_logits(run: Path, input_ids: torch.Tensor) -> torch.Tensor:
    """Logits of the trained ChunkedLM rebuilt from the run's config and last checkpoint."""
    config = TrainConfig.from_dict(json.loads((run / "config.json").read_text()))
    model, _ = load_model(config.model.path)
    chunked = ChunkedLM(model, config.model.chunks)
    attach_adapters(chunked, config.model.lora)
    params = dict(chunked.model.named_parameters())
    with torch.no_grad():
        for name, value in load_checkpoint(latest_checkpoint(run)).params.items():
            params[name].copy_(value)
    return chunked.eval()(input_ids)


@pytest.mark.parametrize("source", ["end_of_run", "export_command"])
def test_peft_round_trip_gives_the_trained_logits(trained: Path, tmp_path: Path, source: str) -> None:
    from peft import PeftModel

    if source == "end_of_run":
        adapter = trained / "adapter"
    else:
        adapter = tmp_path / "peft"
        assert main(["export", str(trained), "--out", str(adapter)]) == 0
    assert sorted(p.name for p in adapter.iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
    input_ids = torch.randint(0, 200, (2, 12), generator=torch.Generator().manual_seed(0))
    base, _ = load_model("embedded")
    with torch.no_grad():
        base_logits = base(input_ids=input_ids).logits
        peft_logits = PeftModel.from_pretrained(base, str(adapter)).eval()(input_ids=input_ids).logits
        want = _chunked_logits(trained, input_ids)
    assert (peft_logits - base_logits).abs().max() > 1e-3  # the adapter changes the model
    torch.testing.assert_close(peft_logits, want, rtol=1e-5, atol=1e-5)


def test_export_refuses_without_overwriting(trained: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["export", str(trained), "--out", str(out)]) == 2
    assert "is not empty" in capsys.readouterr().err and (out / "keep.txt").read_text() == "mine"
    assert main(["export", str(tmp_path / "nothing"), "--out", str(tmp_path / "o")]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_tensorboard_events_equal_the_jsonl(trained: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import TENSORS, EventAccumulator

    events = EventAccumulator(str(trained / "tensorboard"), size_guidance={TENSORS: 0}).Reload()
    from_tb = {(tag, e.step): _value(e.tensor_proto)
               for tag in events.Tags()["tensors"] for e in events.Tensors(tag)}
    from_jsonl = {(key, r["step"]): float(v) for r in read_records(trained / "metrics.jsonl")
                  for key, v in r.items()
                  if key != "step" and isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert len(from_jsonl) > 30 and ("eval/ce", 2) in from_jsonl
    assert from_tb == from_jsonl


def _value(proto) -> float:
    from tensorboard.util.tensor_util import make_ndarray

    return float(make_ndarray(proto))


def test_wandb_offline_logs_the_run(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = tmp_path / "run"
    assert main(["train", "--out", str(run), "--report-to", "wandb", *TRAIN]) == 0
    assert list((run / "wandb").glob("offline-run-*/run-*.wandb"))


@pytest.mark.parametrize("arch", ["llama", "qwen2", "gpt2"])
def test_save_peft_adapter_round_trip_per_architecture(tiny_lm, tmp_path: Path, arch: str) -> None:
    """Random LoRA weights on a tiny model of each layout load back through peft exactly."""
    from peft import PeftModel

    from zerolock_theory.config import LoraSettings
    from zerolock_theory.models.adapters import save_peft_adapter

    settings = LoraSettings(rank=4, alpha=8.0)
    chunked = ChunkedLM(tiny_lm(arch, layers=2), 2)
    attach_adapters(chunked, settings)
    with torch.no_grad():
        for p in chunked.model.parameters():
            if p.requires_grad:
                p.copy_(torch.randn_like(p) * 0.1)
    params = {n: p for n, p in chunked.model.named_parameters() if p.requires_grad}
    save_peft_adapter(params, settings, "tiny", tmp_path / "a")
    input_ids = torch.randint(3, 64, (2, 10), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = chunked.eval()(input_ids)
        loaded = PeftModel.from_pretrained(tiny_lm(arch, layers=2), str(tmp_path / "a")).eval()
        got = loaded(input_ids=input_ids).logits
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    config = json.loads((tmp_path / "a" / "adapter_config.json").read_text())
    assert config["r"] == 4 and config["lora_alpha"] == 8.0 and config["fan_in_fan_out"] == (arch == "gpt2")


def test_unknown_report_backend_is_one_line(tmp_path: Path, capsys) -> None:
    assert main(["train", "--out", str(tmp_path / "r"), "--report-to", "tensorboard,mlflow"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "run.report_to must name tensorboard and/or wandb" in err
    from zerolock_theory.app.cli.flags import TRAIN_CONFIG, field_type
    from zerolock_theory.app.cli.train import FLAGS

    assert field_type(TRAIN_CONFIG, FLAGS["report_to"])("tensorboard, wandb") == ["tensorboard", "wandb"]
    assert TrainConfig.from_dict({"run": {"report_to": ["wandb"]}}).run.report_to == ["wandb"]
