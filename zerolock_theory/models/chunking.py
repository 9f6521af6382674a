"""Split a Hugging Face causal LM's decoder into K chunks with a frozen readout.

``ChunkedLM`` exposes exactly the pieces docs/MATH.md names: h_0 = ``embed(batch)``,
h_k = ``forward_chunk(k, h_{k-1}, ctx)`` and the readout logits W_U·norm(h_k) =
``readout(h_k)``. Chaining the chunks and reading out reproduces ``model(input_ids).logits``
(tested for each supported family, with and without padding).

Supported families: the table in ``models.families`` (Llama-style: Llama, Mistral, Qwen2/3;
GPT-2), also wrapped in a peft ``PeftModel`` (chunked through its base model, whose layers
hold the adapters). Every architecture-specific piece is looked up there.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zerolock_theory.models.families import Family, UnsupportedArchitectureError, family_of, resolve

__all__ = ["ChunkContext", "ChunkedLM", "UnsupportedArchitectureError", "even_boundaries"]


@dataclass
class ChunkContext:
    """Per-batch inputs every chunk shares: mask and positions (no trainable state)."""

    attention_mask: Any  # the model's own prepared (4D / backend-specific) causal mask
    position_ids: torch.Tensor
    position_embeddings: tuple[torch.Tensor, torch.Tensor] | None  # rotary (cos, sin), Llama only


def even_boundaries(num_layers: int, chunks: int) -> list[int]:
    """Start index of chunks 2..K for an even split (earlier chunks take the remainder)."""
    if not 1 <= chunks <= num_layers:
        raise ValueError(f"cannot split {num_layers} decoder layers into {chunks} chunks")
    base, extra = divmod(num_layers, chunks)
    sizes = [base + (1 if k < extra else 0) for k in range(chunks)]
    return [sum(sizes[:k]) for k in range(1, chunks)]


def _call_with_supported(fn: Any, **kwargs: Any) -> Any:
    """Call ``fn`` with the keyword arguments its signature accepts (transformers v4/v5 names)."""
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        accepted = kwargs
    else:
        accepted = {k: v for k, v in kwargs.items() if k in params}
    return fn(**accepted)


def _first(output: Any) -> torch.Tensor:
    """Decoder layers return a tensor (transformers v5) or a tuple (v4)."""
    return output[0] if isinstance(output, (tuple, list)) else output


class ChunkedLM(nn.Module):
    """A causal LM seen as embedding → K chunks of decoder layers → frozen readout."""

    def __init__(self, model: nn.Module, chunks: int, boundaries: list[int] | None = None) -> None:
        super().__init__()
        peft = sys.modules.get("peft")  # a PeftModel's adapters live in its base model's layers
        if peft is not None and isinstance(model, peft.PeftModel):
            model = model.get_base_model()
        family = family_of(model)
        self.model = model
        self.config = model.config
        self.family: Family = family
        self.backbone = resolve(model, family.backbone)
        self.layers = resolve(model, family.layers)
        self.norm = resolve(model, family.norm)
        self.head = model.get_output_embeddings()
        # embedding-side modules, kept out of the module tree (they are the model's own)
        self._embed_parts = {name: resolve(model, path) if path else None for name, path in (
            ("tokens", family.embed), ("positions", family.positions), ("rotary", family.rotary),
            ("dropout", family.dropout))}
        n = len(self.layers)
        self.boundaries = list(boundaries) if boundaries is not None else even_boundaries(n, chunks)
        if len(self.boundaries) != chunks - 1 or (self.boundaries and self.boundaries[-1] >= n):
            raise ValueError(f"boundaries {self.boundaries} do not split {n} layers into {chunks} chunks")
        starts = [0, *self.boundaries]
        ends = [*self.boundaries, n]
        self.chunk_layers: list[list[int]] = [list(range(a, b)) for a, b in zip(starts, ends, strict=True)]
        if any(not layers for layers in self.chunk_layers):
            raise ValueError(f"boundaries {self.boundaries} leave an empty chunk")

    @property
    def layout(self) -> str:
        """The family's short name (``llama``, ``gpt2``)."""
        return self.family.name

    def train(self, mode: bool = True) -> ChunkedLM:
        """``nn.Module.train``: every module's ``training`` flag set to ``mode``, each module once.

        Probes and evaluations switch twice a step, and the inherited recursion costs about
        4 ms a switch on the embedded model's 672 modules (``backbone``, ``layers``, ``norm``
        and ``head`` are registered here and inside ``model``). When no module's class adds
        anything to ``train`` (``_plain_modules``), the flags are set in one flat pass
        (about 1 ms); otherwise each module's own ``train`` runs as ``nn.Module`` would.
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        plain = _plain_modules(self)
        if plain is not None:
            for module in plain:
                module.__dict__["training"] = mode  # what nn.Module.train's ``self.training = mode`` stores
            return self
        self.training = mode
        self.model.train(mode)
        aliases = {id(m) for m in (self.model, self.backbone, self.layers, self.norm, self.head)}
        for child in self.children():
            if id(child) not in aliases:
                child.train(mode)
        return self

    @property
    def num_chunks(self) -> int:
        """K."""
        return len(self.chunk_layers)

    def chunk_modules(self, k: int) -> list[nn.Module]:
        """Decoder layers of chunk k (1-based)."""
        return [self.layers[i] for i in self.chunk_layers[k - 1]]

    def chunk_parameters(self, k: int, trainable_only: bool = True) -> list[nn.Parameter]:
        """ω_k: the (trainable) parameters of chunk k, in a fixed order."""
        params = [p for m in self.chunk_modules(k) for p in m.parameters()]
        return [p for p in params if p.requires_grad] if trainable_only else params

    def named_chunk_parameters(self, k: int) -> list[tuple[str, nn.Parameter]]:
        """(full model name, parameter) for the trainable parameters of chunk k."""
        wanted = {id(p) for p in self.chunk_parameters(k)}
        return [(n, p) for n, p in self.model.named_parameters() if id(p) in wanted]

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, ChunkContext]:
        """h_0 and the shared per-batch context, exactly as the model's own forward builds them."""
        parts = self._embed_parts
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        hidden = parts["tokens"](input_ids)
        if parts["positions"] is not None:
            hidden = hidden + parts["positions"](position_ids)
        from transformers.masking_utils import create_causal_mask

        mask = _call_with_supported(
            create_causal_mask,
            config=self.config,
            inputs_embeds=hidden,
            input_embeds=hidden,
            attention_mask=attention_mask,
            # v5 names it cache and warns when the deprecated past_key_values is passed beside it
            **({"cache": None} if "cache" in inspect.signature(create_causal_mask).parameters
               else {"past_key_values": None}),
            cache_position=position_ids[0],
            position_ids=position_ids,
        )
        rotary = parts["rotary"](hidden, position_ids) if parts["rotary"] is not None else None
        if parts["dropout"] is not None:
            hidden = parts["dropout"](hidden)
        return hidden, ChunkContext(mask, position_ids, rotary)

    def forward_chunk(self, k: int, hidden: torch.Tensor, ctx: ChunkContext) -> torch.Tensor:
        """h_k = F_k(h_{k-1}; ω_k)."""
        for layer in self.chunk_modules(k):
            hidden = _first(
                layer(
                    hidden,
                    attention_mask=ctx.attention_mask,
                    position_ids=ctx.position_ids,
                    position_embeddings=ctx.position_embeddings,
                    use_cache=False,
                )
            )
        return hidden

    def readout(self, hidden: torch.Tensor) -> torch.Tensor:
        """Frozen readout logits W_U · norm(h)."""
        return self.head(self.norm(hidden))

    def hiddens(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> list[torch.Tensor]:
        """[h_0, h_1, …, h_K] by chaining the chunks (no detaching)."""
        hidden, ctx = self.embed(input_ids, attention_mask)
        out = [hidden]
        for k in range(1, self.num_chunks + 1):
            hidden = self.forward_chunk(k, hidden, ctx)
            out.append(hidden)
        return out

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Final-chunk logits: equals ``model(input_ids, attention_mask).logits``."""
        return self.readout(self.hiddens(input_ids, attention_mask)[-1])

    def readout_modules(self) -> list[nn.Module]:
        """The modules p_0 and every readout depend on: embeddings (tokens, learned positions),
        final norm and LM head; never trained."""
        embeds = [self.model.get_input_embeddings(), self._embed_parts["positions"]]
        return [m for m in (*embeds, self.norm, self.head) if m is not None]

    def freeze_readout(self) -> None:
        """Freeze the embeddings, final norm and LM head (the readout is never trained)."""
        for module in self.readout_modules():
            for p in module.parameters():
                p.requires_grad_(False)


def _plain_train(module: nn.Module) -> bool:
    """Whether ``module.train(mode)`` does nothing but set the flags of its subtree.

    ``nn.Module.train`` does; so does transformers' ``PreTrainedModel.train`` for a model that
    does not use hub kernels (it only adds a kernel mode when ``use_kernels`` is set); the
    ``ChunkedLM`` being switched is handled by the caller. Any other override, or a ``train`` set on
    the instance, is not assumed to.
    """
    if "train" in module.__dict__:  # an instance's own train (a wrapper, a test's counter)
        return False
    train = type(module).train
    if train is nn.Module.train:
        return True
    if getattr(train, "__qualname__", "") == "PreTrainedModel.train" and train.__module__.startswith("transformers."):
        return not getattr(module, "use_kernels", False)
    return False


def _plain_modules(root: ChunkedLM) -> list[nn.Module] | None:
    """``root`` and every module under it, each once, when every one switches plainly; else None.

    Walked afresh at every switch (about 1 ms), so a module added or replaced since (a stacked
    adapter, a peft wrapper) is switched too.
    """
    seen, stack, out = {id(root)}, list(root._modules.values()), [root]  # noqa: SLF001 (the registry train() walks)
    while stack:
        module = stack.pop()
        if module is None or id(module) in seen:
            continue
        if not _plain_train(module):
            return None
        seen.add(id(module))
        out.append(module)
        stack.extend(module._modules.values())  # noqa: SLF001
    return out
