"""Model families: where each supported architecture keeps the pieces ZeroLock needs.

One ``Family`` entry per architecture family names, as attribute paths from the causal LM
(``LlamaForCausalLM``, ``GPT2LMHeadModel``, ...), the decoder-layer list that is split into K
chunks, the token embedding (h_0), the final norm and the LM head of the frozen readout
W_U·norm(h), the extra embedding-side modules (learned positions, rotary embedding, embedding
dropout), the default LoRA targets, and which Hugging Face ``model_type`` values and GGUF
``general.architecture`` values belong to it. ``ChunkedLM``, the adapters, the probes and the
GGUF loader read this table; adding a family is one entry here plus a test that chains its
chunks to the model's own logits (tests/models/test_chunking.py).

Whether the LM head is tied to the embedding is a property of the checkpoint
(``config.tie_word_embeddings``), not of the family: ``head_is_tied`` reads it off a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Any

from torch import nn

__all__ = ["FAMILIES", "Family", "UnsupportedArchitectureError", "family_for_gguf", "family_of",
           "head_is_tied", "supported_text"]


class UnsupportedArchitectureError(ValueError):
    """The model's architecture is not one of ``FAMILIES``."""


@dataclass(frozen=True)
class Family:
    """Where one architecture family keeps its decoder layers, embedding and readout."""

    name: str
    """Short name (``ChunkedLM.layout``)."""
    title: str
    """How the docs and error messages name the family."""
    model_types: tuple[str, ...]
    """``config.model_type`` values this entry covers (each tested)."""
    gguf_architectures: tuple[str, ...]
    """GGUF ``general.architecture`` values that load into one of ``model_types``."""
    layers: str
    """Decoder-layer list (``nn.ModuleList``), split into the K chunks."""
    norm: str
    """Final norm of the readout W_U·norm(h)."""
    embed: str
    """Token embedding: h_0 = embed(ids) (+ positions)."""
    head: str
    """LM head W_U (``get_output_embeddings``); tied or not per checkpoint."""
    lora_targets: tuple[str, ...]
    """Default LoRA target modules: every linear map of a decoder layer."""
    positions: str | None = None
    """Learned absolute position embedding added to h_0 (frozen with the readout)."""
    rotary: str | None = None
    """Rotary embedding module giving (cos, sin) for every layer."""
    dropout: str | None = None
    """Embedding dropout applied to h_0."""
    conv1d: bool = False
    """Linear weights stored transposed (``Conv1D``): LoRA's ``fan_in_fan_out``."""

    @property
    def backbone(self) -> str:
        """The decoder stack holding the layers (``model``, ``transformer``)."""
        return self.layers.rpartition(".")[0]

    @property
    def layers_pattern(self) -> str:
        """peft's ``layers_pattern``: the last name of the layer list's path."""
        return self.layers.rpartition(".")[2]


FAMILIES: tuple[Family, ...] = (
    Family(
        name="llama", title="Llama-style", model_types=("llama", "mistral", "qwen2", "qwen3"),
        gguf_architectures=("llama", "mistral", "qwen2", "qwen3"),
        layers="model.layers", norm="model.norm", embed="model.embed_tokens", head="lm_head",
        rotary="model.rotary_emb",
        lora_targets=("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
    ),
    Family(
        name="gpt2", title="GPT-2", model_types=("gpt2",), gguf_architectures=("gpt2",),
        layers="transformer.h", norm="transformer.ln_f", embed="transformer.wte", head="lm_head",
        positions="transformer.wpe", dropout="transformer.drop",
        lora_targets=("c_attn", "c_proj", "c_fc"), conv1d=True,
    ),
)
"""Every supported family; a model matches the first entry listing its ``model_type``."""


def supported_text() -> str:
    """One line naming the supported families and their model types (for error messages)."""
    return "; ".join(f"{f.title} ({', '.join(f.model_types)})" for f in FAMILIES)


def resolve(model: nn.Module, path: str) -> Any:
    """The attribute at dotted ``path`` under ``model``; ``AttributeError`` when absent."""
    return reduce(getattr, path.split("."), model)


def family_of(model: nn.Module) -> Family:
    """The family of a (bare) causal LM, from ``config.model_type``; its paths must all exist.

    Raises ``UnsupportedArchitectureError`` naming the supported families otherwise.
    """
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    for family in FAMILIES:
        if model_type not in family.model_types:
            continue
        paths = [family.layers, family.norm, family.embed, family.head,
                 *(p for p in (family.positions, family.rotary, family.dropout) if p)]
        missing = [p for p in paths if not _has(model, p)]
        if missing:
            raise UnsupportedArchitectureError(
                f"cannot chunk {type(model).__name__}: model_type {model_type!r} lacks {', '.join(missing)}")
        return family
    raise UnsupportedArchitectureError(
        f"cannot chunk {type(model).__name__} (model_type {model_type!r}): supported are {supported_text()}")


def _has(model: nn.Module, path: str) -> bool:
    try:
        resolve(model, path)
    except AttributeError:
        return False
    return True


def family_for_gguf(architecture: str) -> Family | None:
    """The family a GGUF file's ``general.architecture`` loads into; None when unsupported."""
    return next((f for f in FAMILIES if architecture in f.gguf_architectures), None)


def head_is_tied(model: nn.Module) -> bool:
    """Whether the LM head shares its weight with the token embedding (W_U = Eᵀ)."""
    head, embed = model.get_output_embeddings(), model.get_input_embeddings()
    return head is not None and embed is not None and head.weight is embed.weight
