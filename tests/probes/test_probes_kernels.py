"""The fused float32 kernels agree with the float64 references within 1e-6 relative."""

from __future__ import annotations

import math

import pytest
import torch

from probes import kernels
from probes.kernels import cached_sums, step_sums
from probes.minimizers import kernel_minimizer_metrics, minimizer_metrics
from probes.readout_pass import label_targets
from probes.stability import kernel_terms
from zerolock_theory.models.chunking import ChunkedLM
from zerolock_theory.theory.stability import stability_terms
from zerolock_theory.training.hooks import ProbeCache

K, V, ROWS, T = 4, 512, 4, 24
RTOL = 1e-6


def _log_readouts(chunked: ChunkedLM, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        hiddens = chunked.hiddens(ids)
        return torch.stack([torch.log_softmax(chunked.readout(h).float(), -1).flatten(0, 1) for h in hiddens])


@pytest.fixture(scope="module")
def step_readouts():
    return _make_step()


def _make_step():
    """log p̃ before and after one real training step of a tiny Llama, and the labels."""
    from tests.conftest import make_tiny_lm

    torch.manual_seed(0)
    model = make_tiny_lm("llama", layers=K, vocab=V).float()
    chunked = ChunkedLM(model, K)
    chunked.freeze_readout()
    ids = torch.randint(0, V, (ROWS, T + 1))
    inputs, labels = ids[:, :-1], ids[:, 1:].flatten()
    before = _log_readouts(chunked, inputs)
    loss = torch.nn.functional.cross_entropy(chunked(inputs).flatten(0, 1), labels)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= 0.5 * p.grad
    return before, _log_readouts(chunked, inputs), labels


def _close(fast: torch.Tensor, ref: torch.Tensor, atol: float = 1e-13) -> None:
    assert torch.allclose(fast, ref.to(fast.dtype), rtol=RTOL, atol=atol), (fast, ref)


@pytest.mark.parametrize(("alpha", "eps_m"), [(0.5, 0.0), (0.3, 0.0), (0.7, 0.05)])
def test_stability_kernels_match_the_float64_reference(step_readouts, alpha, eps_m):
    before, after, labels = step_readouts
    eps_g = 0.1
    sums = step_sums(before, after, labels, alpha, eps_g, eps_m, block_elems=3 * V)  # several blocks
    got = kernel_minimizer_metrics(sums, "forward")
    for key, value in minimizer_metrics(after, labels, eps_g, eps_m, alpha, "forward").items():
        assert got[key] == pytest.approx(value, rel=RTOL, abs=1e-8), key
    for objective, eps in (("paper", eps_g), ("implemented", eps_m)):
        p_y = label_targets(labels, V, eps).log()
        ref = stability_terms(before[:-1], after[:-1], before[1:], p_y, alpha, objective, log_input=True)
        fast = kernel_terms(sums, alpha, objective)
        assert float(ref.actual.abs().max()) > 1e-6  # the step moved the readouts
        for name in ("r_before", "r_after", "phi", "actual"):
            _close(getattr(fast, name), getattr(ref, name))
            _close(getattr(fast, f"{name}_total"), getattr(ref, f"{name}_total"))
        # remainder = actual − φ is second order (they nearly cancel): 1e-6 of |actual| + |φ|.
        scale = ref.actual.abs() + ref.phi.abs()
        assert bool(((fast.remainder - ref.remainder).abs() <= RTOL * scale + 1e-13).all())
        assert float(fast.phi[0]) == 0.0 == float(ref.phi[0])  # p_0 (embedding readout) is frozen
        q_ref = ref.q if hasattr(ref, "q") else ref.dp_sq / before.shape[1]  # per-position mean
        _close(sums["dp_sq"], q_ref)
        _close(fast.ratio[1:], ref.phi[1:].clamp_min(0.0) / q_ref[1:])  # chunk 1: 0/0
        _close(fast.ratio_total, ref.phi_total.clamp_min(0.0) / q_ref.sum())


def test_without_task_term_the_kernels_are_exact_to_float32_normalisation(step_readouts):
    """α = 0: R is a KL between successive readouts of a random model (~1e-4 nats), and the
    float32 exponentials fix normalisation only to ~1e-9: agreement is 1e-6 relative or 1e-8 absolute."""
    before, after, labels = step_readouts
    sums = step_sums(before, after, labels, 0.0, 0.1, 0.0)
    for objective, eps in (("paper", 0.1), ("implemented", 0.0)):
        p_y = label_targets(labels, V, eps).log()
        ref = stability_terms(before[:-1], after[:-1], before[1:], p_y, 0.0, objective, log_input=True)
        fast = kernel_terms(sums, 0.0, objective)
        for name in ("r_before", "r_after", "phi", "actual"):
            _close(getattr(fast, name), getattr(ref, name), atol=1e-8)


@pytest.mark.parametrize(("alpha", "eps_m", "direction"), [(0.5, 0.0, "forward"), (0.2, 0.1, "reverse")])
def test_minimizer_kernels_match_the_float64_reference(step_readouts, alpha, eps_m, direction):
    _, after, labels = step_readouts
    ref = minimizer_metrics(after, labels, 0.1, eps_m, alpha, direction)
    got = kernel_minimizer_metrics(step_sums(None, after, labels, alpha, 0.1, eps_m), direction)
    assert set(got) == set(ref) and "probe/minimizer/0/ce" in got
    for key, value in ref.items():  # KL(p_k ‖ g_k) is ~0.006 nats here: float32 p resolves it to ~1e-8 nats
        assert got[key] == pytest.approx(value, rel=RTOL, abs=1e-8), key


def test_blocks_cover_the_positions_in_cache_sized_slices():
    assert [s.stop - s.start for s in kernels._blocks(97, V, 5, 3 * V * 5 * 7)] == [21] * 4 + [97 % 21]  # noqa: SLF001
    assert kernels._blocks(3, V, 5, 1) == [slice(0, 1), slice(1, 2), slice(2, 3)]  # noqa: SLF001 (at least one position)


def test_compile_is_a_retired_setting_old_configs_load_and_set_refuses(tmp_path):
    """``probes.compile`` (removed with the compiled kernels): an older run's config.json that holds it
    loads and resumes as before (the key is dropped), and ``--set probes.compile=...`` says, in one line, to drop it."""
    import json

    from zerolock_theory.config import TrainConfig, load_config
    from zerolock_theory.config_overrides import apply_overrides
    from zerolock_theory.probe_config import ProbeSettings
    from zerolock_theory.training.resume import config_differences, read_saved_config

    old = {"run": {"steps": 300}, "probes": {"n_positions": 64, "seed": None, "epsilon": 0.1, "compile": "on",
                                             "stability": {"every": 1}, "minimizers": {"every": 2, "compile": "off"}}}
    (tmp_path / "config.json").write_text(json.dumps(old))
    cfg = read_saved_config(tmp_path)  # as resume, the offline recompute and the pipeline workers read it
    assert cfg is not None
    assert cfg.probe_settings == ProbeSettings(n_positions=64) and cfg.probes == {"stability": {"every": 1},
                                                                                 "minimizers": {"every": 2}}
    assert "compile" not in cfg.to_dict()["probes"] and not hasattr(cfg.probe_settings, "compile")
    assert config_differences(cfg, TrainConfig.from_dict({**old, "probes": cfg.to_dict()["probes"]})) == {}
    assert load_config(tmp_path / "config.json").probe_settings.n_positions == 64  # as a recipe
    for override in ("probes.compile=off", "probes.compile=on", "probes.stability.compile=auto"):
        with pytest.raises(ValueError, match="is a retired setting: the stability and minimizer kernels are not compiled") as err:
            apply_overrides(old, [override])
        assert "\n" not in str(err.value) and "drop it" in str(err.value)
    with pytest.raises(TypeError):
        ProbeSettings(compile="on")  # type: ignore[call-arg]


def test_cached_sums_compute_once_per_step_and_reuse(step_readouts):
    before, after, labels = step_readouts
    cache = ProbeCache()
    first = cached_sums(cache, 3, before, after, labels, 0.5, 0.1, 0.0)
    again = cached_sums(cache, 3, None, after, labels, 0.5, 0.1, 0.0)
    assert again is first and "ce" in first and "paper_phi" in first
    other = cached_sums(cache, 4, None, after, labels, 0.5, 0.1, 0.0)
    assert other is not first and "paper_phi" not in other
    both = cached_sums(cache, 4, before, after, labels, 0.5, 0.1, 0.0)
    assert torch.equal(both["ce"], other["ce"]) and torch.equal(both["paper_phi"], first["paper_phi"])


def test_kernels_refuse_what_only_the_reference_defines(step_readouts):
    before, after, labels = step_readouts
    with pytest.raises(ValueError):
        step_sums(before, after, labels, 1.0, 0.1, 0.0)
    with pytest.raises(ValueError):
        step_sums(before, after, labels, 0.5, 0.0, 0.0)


@pytest.mark.parametrize("arrays", [None, 4, 3.5, 2])  # KEEP_BYTES in [K+1, N, V] float32 arrays (None: default)
def test_features_kept_from_the_previous_step_give_the_same_sums(step_readouts, monkeypatch, arrays):
    before, after, labels = step_readouts
    if arrays is not None:
        monkeypatch.setattr(kernels, "KEEP_BYTES", int(arrays * after.numel() * 4))
    keep: dict = {}
    step_sums(None, before, labels, 0.5, 0.1, 0.0, keep=keep)
    assert (keep.get("of") is before) == (arrays != 2)  # p, U and L_{k-1} − L_k need 3 arrays
    if arrays is not None and arrays < 4 and keep:
        assert all("o_minus_g" not in upper and "U" in upper for _, upper in keep["features"])
    reused = step_sums(before, after, labels, 0.5, 0.1, 0.0, keep=keep)
    fresh = step_sums(before, after, labels, 0.5, 0.1, 0.0)
    assert (keep.get("of") is after) == (arrays != 2)
    for name, value in fresh.values.items():
        assert torch.equal(reused[name], value), name


@pytest.mark.parametrize("still", [1, 2, K])
def test_unchanged_leading_rows_give_zeros_without_being_computed(step_readouts, still):
    """p_0 is frozen (Δp_0 = 0 exactly): skipping its rows changes no value; nor for more such rows."""
    before, after, labels = step_readouts
    assert torch.equal(before[0], after[0])
    after = after.clone()
    after[:still] = before[:still]
    fast = step_sums(before, after, labels, 0.5, 0.1, 0.0)
    full = step_sums(before, after, labels, 0.5, 0.1, 0.0, skip_unchanged=False)
    assert fast.values.keys() == full.values.keys()
    for name, value in full.values.items():
        assert torch.equal(fast[name], value), name
    for name in ("paper_phi", "paper_actual", "impl_phi", "impl_actual", "dp_sq"):
        assert (fast[name][:still] == 0).all() and (fast[name][still:] != 0).all(), name


@pytest.mark.parametrize("uniform_p0", [False, True])
def test_log_readouts_are_the_stacked_log_softmax_of_each_readout(uniform_p0):
    """The probe forward writes rows in place: the same bits as stacking each row's log-softmax."""
    from probes.readout_pass import log_readouts
    from tests.conftest import make_tiny_lm

    torch.manual_seed(1)
    chunked = ChunkedLM(make_tiny_lm("llama", layers=K, vocab=V).float(), K)
    ids = torch.randint(0, V, (2, T))
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, T // 2 :] = False
    got = log_readouts(chunked, ids, None, mask, uniform_p0=uniform_p0)
    with torch.no_grad():
        rows = [torch.log_softmax(chunked.readout(h[mask]).float(), -1) for h in chunked.hiddens(ids)]
    if uniform_p0:
        rows[0] = torch.full_like(rows[0], -math.log(V))
    assert got.dtype == torch.float32 and torch.equal(got, torch.stack(rows))


def test_log_readouts_reuse_p0_only_while_what_it_reads_is_unchanged():
    """p_0 comes from the cache bit for bit while embedding, norm, head and inputs are unchanged."""
    from probes.readout_pass import log_readouts
    from tests.conftest import make_tiny_lm

    torch.manual_seed(2)
    chunked = ChunkedLM(make_tiny_lm("llama", layers=K, vocab=V).float().eval(), K)
    ids = torch.randint(0, V, (2, T))
    mask = torch.ones_like(ids, dtype=torch.bool)
    cache = ProbeCache()
    first = log_readouts(chunked, ids, None, mask, cache=cache)
    calls = []
    hook = chunked.norm.register_forward_hook(lambda *a: calls.append(1))
    again = log_readouts(chunked, ids, None, mask, cache=cache)
    assert len(calls) == K and torch.equal(again, first)  # row 0 not read out again
    with torch.no_grad():
        chunked.model.get_input_embeddings().weight.mul_(1.5)  # an in-place update bumps the version
    moved = log_readouts(chunked, ids, None, mask, cache=cache)
    assert len(calls) == 2 * K + 1 and not torch.equal(moved[0], first[0])
    assert torch.equal(moved, log_readouts(chunked, ids, None, mask))  # the same bits as without a cache
    other = ids.clone()
    other[0, 0] = (other[0, 0] + 1) % V
    log_readouts(chunked, other, None, mask, cache=cache)
    assert len(calls) == 3 * K + 2 + K + 1  # new inputs: row 0 read out again
    hook.remove()
