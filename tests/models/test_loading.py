"""models.loading.load_model: hub kernels stay off."""

from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM

from zerolock_theory.embedded import embedded_path
from zerolock_theory.models.loading import load_model


def test_hub_kernels_stay_off_and_mode_switches_do_not_kernelize(monkeypatch):
    """transformers 5 turns hub kernels on whenever the ``kernels`` package is installed (it is a
    dependency of transformers 5): they would be fetched at run time, and each train/eval switch
    re-ran ``kernelize`` over the model. The loaded model has them off, computes what the default
    load computes, and switching modes calls no kernelize."""
    model, _ = load_model("embedded")
    assert getattr(model, "use_kernels", False) is False
    from transformers import modeling_utils

    calls = []
    if hasattr(modeling_utils, "kernelize"):  # transformers 5: where PreTrainedModel calls it from
        monkeypatch.setattr(modeling_utils, "kernelize", lambda *a, **k: calls.append(1))
    for _ in range(3):
        model.train()
        model.eval()
    assert calls == []
    default = AutoModelForCausalLM.from_pretrained(embedded_path(), dtype=torch.float32, local_files_only=True).eval()
    ids = torch.randint(0, model.config.vocab_size, (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(model(ids).logits, default(ids).logits)

