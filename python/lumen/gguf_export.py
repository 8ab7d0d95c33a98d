"""Export a Hugging Face Llama-family checkpoint (Llama 2/3, Mistral, Qwen2,
Qwen3, Phi-3, Gemma, Gemma-2: a directory with config.json and safetensors) as a GGUF file in llama.cpp's conventions, with the `gguf`
package: f32, f16, or Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 weights (one type for
every matrix, or per tensor as llama.cpp mixes them: `tensor_types`). Used by the tests (the same weights
in both formats) and by `make bench` (the same file for lumen and llama.cpp).

    python -m lumen.gguf_export MODEL_DIR OUT.gguf --type q8_0
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

TYPES = ("f32", "f16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1")
_FILE_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q5_1": 9}

_LAYER_PARTS = {
    "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
    # Phi-3's fused projections, kept fused as llama.cpp's phi3 architecture reads them (gate rows, then up rows)
    "self_attn.qkv_proj": "attn_qkv", "mlp.gate_up_proj": "ffn_up",
}


def gguf_name(hf: str, arch: str = "llama") -> str | None:
    top = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
           "lm_head.weight": "output.weight"}
    if hf in top:
        return top[hf]
    parts = hf.split(".")
    if len(parts) >= 5 and parts[0] == "model" and parts[1] == "layers":
        module = ".".join(parts[3:-1])
        if arch == "gemma2" and module in _GEMMA2_NORMS:
            return f"blk.{parts[2]}.{_GEMMA2_NORMS[module]}.{parts[-1]}"
        if module in _LAYER_PARTS:
            return f"blk.{parts[2]}.{_LAYER_PARTS[module]}.{parts[-1]}"
    return None


# Gemma-2's norms under llama.cpp's names: ffn_norm is the MLP's input norm there.
_GEMMA2_NORMS = {"post_attention_layernorm": "post_attention_norm", "pre_feedforward_layernorm": "ffn_norm",
                 "post_feedforward_layernorm": "post_ffw_norm"}


def _gemma2_metadata(w, config: dict, head_dim: int) -> None:
    """Soft-capping and the window as llama.cpp's converter writes them; the
    attention scale as attention.scale when query_pre_attn_scalar is not head_dim
    (llama.cpp itself derives the scale from the model size)."""
    if config.get("attn_logit_softcapping") is not None:
        w.add_attn_logit_softcapping(float(config["attn_logit_softcapping"]))
    if config.get("final_logit_softcapping") is not None:
        w.add_final_logit_softcapping(float(config["final_logit_softcapping"]))
    w.add_sliding_window(config.get("sliding_window") or 4096)
    scalar = config.get("query_pre_attn_scalar", 256)
    if scalar != head_dim:
        w.add_attention_scale(float(scalar) ** -0.5)


def _yarn_metadata(w, scaling: dict, config: dict) -> None:
    """YaRN under llama.cpp's keys. llama.cpp multiplies attn_factor by
    0.1 ln(factor) + 1 itself: an explicit Hugging Face attention_factor (or
    mscale pair) is written divided by that."""
    import math
    import gguf
    factor = float(scaling["factor"])
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    w.add_rope_scaling_factor(factor)
    w.add_rope_scaling_orig_ctx_len(int(scaling.get("original_max_position_embeddings")
                                        or config.get("max_position_embeddings", 2048)))
    w.add_rope_scaling_yarn_beta_fast(float(scaling.get("beta_fast") or 32))
    w.add_rope_scaling_yarn_beta_slow(float(scaling.get("beta_slow") or 1))
    if scaling.get("truncate", True) is False:
        raise ValueError("yarn with truncate=false has no GGUF form (llama.cpp rounds the ramp's ends)")

    def mscale(m):
        return 1.0 if factor <= 1 else 0.1 * m * math.log(factor) + 1.0
    attention = scaling.get("attention_factor")
    if attention is None and scaling.get("mscale") and scaling.get("mscale_all_dim"):
        attention = mscale(scaling["mscale"]) / mscale(scaling["mscale_all_dim"])
    if attention is not None:
        w.add_rope_scaling_attn_factors(float(attention) / mscale(1.0))


def interleave_heads(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's row order for q/k of the llama architecture (rotary pairs adjacent)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_rope_factors(scaling: dict, theta: float, head_dim: int) -> np.ndarray:
    """Llama 3.1's rope scaling as llama.cpp's convert_hf_to_gguf.py writes it: a divisor per frequency."""
    import math
    freqs = 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    factor = scaling.get("factor", 8.0)
    low, high = scaling.get("low_freq_factor", 1.0), scaling.get("high_freq_factor", 4.0)
    old = scaling.get("original_max_position_embeddings", 8192)
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def export_llama(model_dir: str | Path, out: str | Path, type: str = "f32", vocab: list[str] | None = None,
                 tensor_types: dict[str, str] | None = None, chat_template: str | None = None,
                 token_types: list[int] | None = None) -> Path:
    """`type` for every matrix (vectors stay f32); `tensor_types` maps GGUF
    tensor names (e.g. "token_embd.weight") to another type from TYPES;
    `chat_template` and `token_types` go into the vocabulary's metadata."""
    import gguf
    from safetensors.numpy import load_file

    tensor_types = tensor_types or {}
    for t in [type, *tensor_types.values()]:
        if t not in TYPES:
            raise ValueError(f"type must be one of {TYPES}, got {t!r}")
    model_dir, out = Path(model_dir), Path(out)
    config = json.loads((model_dir / "config.json").read_text())
    arch = config.get("model_type", "llama")
    if arch not in ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2"):
        raise ValueError(f"model_type {arch!r} is not a Llama-family decoder")
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    rope = config.get("rope_parameters") or {}
    theta = rope.get("rope_theta", config.get("rope_theta", 10000.0))
    scaling = config.get("rope_scaling") or rope
    rope_type = scaling.get("rope_type", scaling.get("type", "default"))

    w = gguf.GGUFWriter(str(out), arch)
    w.add_name(model_dir.name)
    w.add_context_length(config.get("max_position_embeddings", 2048))
    w.add_embedding_length(config["hidden_size"])
    w.add_block_count(config["num_hidden_layers"])
    w.add_feed_forward_length(config["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(float(theta))
    if rope_type == "linear":
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(float(scaling["factor"]))
    elif rope_type == "yarn":
        _yarn_metadata(w, scaling, config)
    elif rope_type not in ("default", "llama3"):  # llama.cpp has no form for transformers' dynamic NTK scaling
        raise ValueError(f"rope type {rope_type!r} has no GGUF form here (default, linear, llama3, yarn)")
    if arch == "phi3":  # llama.cpp's converter always writes a window (the context length when there is none)
        w.add_sliding_window(config.get("sliding_window") or config.get("max_position_embeddings", 2048))
    if arch == "gemma2":
        _gemma2_metadata(w, config, head_dim)
    w.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-6)))
    w.add_vocab_size(config["vocab_size"])
    w.add_file_type(_FILE_TYPES[type])
    # A vocabulary: the given tokens, or placeholders (callers then pass token ids).
    tokens = vocab if vocab is not None else [f"<t{i}>" for i in range(config["vocab_size"])]
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * len(tokens))
    w.add_token_types(token_types if token_types is not None else [1] * len(tokens))
    if config.get("bos_token_id") is not None:
        w.add_bos_token_id(config["bos_token_id"])
    if config.get("eos_token_id") is not None:
        w.add_eos_token_id(config["eos_token_id"])
    if chat_template is not None:
        w.add_chat_template(chat_template)

    files = sorted(model_dir.glob("*.safetensors"))
    tensors = {}
    for f in files:
        tensors.update(load_file(str(f)))
    if rope_type == "llama3":  # llama.cpp's form: per-frequency divisors in a tensor
        w.add_tensor("rope_freqs.weight", llama3_rope_factors(scaling, theta, head_dim))
    for name, value in tensors.items():
        g = gguf_name(name, arch)
        if g is None or (arch in ("gemma", "gemma2") and g == "output.weight"):  # Gemma ties the head to the embedding
            continue
        value = value.astype(np.float32)
        if arch in ("gemma", "gemma2") and g.endswith("norm.weight"):
            value = value + 1  # llama.cpp's converter stores Gemma's (1 + w) norm weights
        if arch in ("llama", "mistral"):
            if ".self_attn.q_proj." in name:
                value = interleave_heads(value, heads)
            elif ".self_attn.k_proj." in name:
                value = interleave_heads(value, kv_heads)
        t = tensor_types.get(g, type)
        if value.ndim == 1 or t == "f32":
            w.add_tensor(g, value)
        elif t == "f16":
            w.add_tensor(g, value.astype(np.float16))
        else:
            qtype = gguf.GGMLQuantizationType[t.upper()]
            w.add_tensor(g, gguf.quants.quantize(value, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model_dir")
    p.add_argument("out")
    p.add_argument("--type", choices=TYPES, default="f32")
    args = p.parse_args()
    print(export_llama(args.model_dir, args.out, args.type))


if __name__ == "__main__":
    main()
