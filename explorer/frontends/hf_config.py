"""``--model config.json``: a Hugging Face transformer configuration, read as plain JSON (no
weights, no torch, no transformers), built by the LLM zoo's builder (``frontends/transformer.py``).

Described in the manual: docs/specs.md, "Hugging Face config.json" (the fields read by
``model_type``, the defaults, the sequence and batch, the name, ``sliding_window``).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core.errors import SpecError, is_int, shown
from ..core.names import given_as
from ..core.network import Network
from .bounded import Refused, read_bounded
from .fields import check_pos_int
from .transformer import Family, TransformerShape, build_transformer, position_problem

DEFAULT_BATCH = 8  # sequences, when neither --batch nor the array gives one (as gpt2-small.yaml)
MAX_CONFIG_BYTES = 4 * 2**20

# model_type -> (family, {shape field: config key}, optional keys with their HF class defaults)
_LLAMA_KEYS = {"layers": "num_hidden_layers", "hidden": "hidden_size", "heads": "num_attention_heads",
               "ffn": "intermediate_size", "vocab": "vocab_size"}
_GPT2_KEYS = {"layers": "n_layer", "hidden": "n_embd", "heads": "n_head", "vocab": "vocab_size",
              "positions": "n_positions"}
MODEL_TYPES = {"llama": True, "mistral": True, "qwen2": True, "mixtral": True, "gpt2": False}  # llama family?
WINDOWED = ("mistral", "mixtral")  # model types whose config may carry a sliding_window (null: none)
_MOE_KEYS = {"experts": "num_local_experts", "top_k": "num_experts_per_tok"}
_MOE_DEFAULTS = {"experts": 8, "top_k": 2}  # Hugging Face's MixtralConfig defaults, for a key left out


def read_hf_shape(path: str | Path, sequence: int | None = None) -> tuple[TransformerShape, int, str, tuple[str, ...]]:
    """The shape a Hugging Face ``config.json`` describes, its sequence (``sequence`` overrides the
    config's context length), its name and its ``approximations``: what the LLM planner builds its
    problem from."""
    src = str(path)
    cfg = _read_json(path)
    mtype = _model_type(cfg, src)
    shape, seq = _shape_and_sequence(cfg, mtype, src, sequence)
    return shape, seq, _name(cfg, path), approximations(cfg, mtype, seq)


def approximations(cfg: dict, mtype: str, seq: int) -> tuple[str, ...]:
    """What the config asks for that the model does not follow, one note each: the one source of
    these notes for ``explore`` on an accelerator array and on a GPU cluster."""
    notes = []
    window = cfg.get("sliding_window") if mtype in WINDOWED else None
    if is_int(window) and 0 < window < seq:
        notes.append(f"sliding_window {window} < sequence {seq}: attention is counted over all {seq} tokens")
    trained = cfg.get("max_position_embeddings") if MODEL_TYPES[mtype] else None  # gpt2's table: refused beyond
    if is_int(trained) and 0 < trained < seq:
        notes.append(f"sequence {seq:,} is beyond max_position_embeddings {trained:,}, the context the model was "
                     "trained for: planned as given (rotary positions have no table), its quality there not modelled")
    return tuple(notes)


def _model_type(cfg: dict, src: str) -> str:
    """``model_type``, checked (a list or an object is refused as any other unknown value); a
    windowed type's ``sliding_window`` is checked too: null or a positive integer."""
    mtype = cfg.get("model_type")
    if not isinstance(mtype, str) or mtype not in MODEL_TYPES:
        raise SpecError(src, f"model_type: must be one of {', '.join(MODEL_TYPES)}, got {shown(mtype)}")
    if mtype in WINDOWED and cfg.get("sliding_window") is not None:
        _int(cfg, "sliding_window", src)
    return mtype


def _shape_and_sequence(cfg: dict, mtype: str, src: str, sequence: int | None) -> tuple[TransformerShape, int]:
    shape, seq_key = _llama_shape(cfg, src, mtype == "mixtral") if MODEL_TYPES[mtype] else _gpt2_shape(cfg, src)
    seq = sequence if sequence is not None else _int(cfg, seq_key, src)
    too_long = position_problem(shape, seq, "n_positions")
    if too_long:
        raise SpecError(src, f"{given_as('--seq')}: {too_long}")
    return shape, seq


def load_hf_config(path: str | Path, batch: int | None = None, sequence: int | None = None) -> Network:
    """The network a Hugging Face ``config.json`` describes (SpecError naming the file and field)."""
    shape, seq, name, notes = read_hf_shape(path, sequence)
    net = build_transformer(shape, name, batch or DEFAULT_BATCH, seq, str(path))
    if notes:
        net = Network(net.name, net.batch, net.layers, net.edges, net.source, net.edge_shares, net.sequence,
                      net.approximations + notes)
    return net


def _read_json(path: str | Path) -> dict:
    p = Path(path)
    try:
        cfg = json.loads(read_bounded(p, MAX_CONFIG_BYTES, regular=False).decode("utf-8"), object_pairs_hook=_unique_keys)
    except Refused as e:
        raise SpecError(str(path), f"{e}: not a model config") from None
    except _DuplicateKey as e:
        raise SpecError(str(path), f"duplicate key {shown(e.args[0])} (give each key once: readers differ on "
                                   "which one counts)") from None
    except IsADirectoryError:
        raise SpecError(str(path), "is a directory, not a file") from None
    except OSError as e:
        raise SpecError(str(path), f"cannot read: {e.strerror or e}") from None
    except (UnicodeDecodeError, ValueError) as e:  # JSONDecodeError; an integer beyond Python's digit limit
        raise SpecError(str(path), f"not valid JSON: {str(e)[:120]}") from None
    except RecursionError:
        raise SpecError(str(path), "not valid JSON: nested too deeply") from None
    if not isinstance(cfg, dict):
        raise SpecError(str(path), "must be a JSON object (a Hugging Face config.json)")
    return cfg


class _DuplicateKey(Exception):
    """A key given twice in one JSON object (``args[0]``: the key)."""


def _unique_keys(pairs: list) -> dict:
    """``json.loads``'s object hook: the object, or _DuplicateKey (Python keeps the last silently)."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _int(cfg: dict, key: str, src: str, default: int | None = None) -> int:
    """A required (or defaulted) positive integer field; SpecError naming it."""
    if key not in cfg or (cfg[key] is None and default is not None):
        if default is None:
            raise SpecError(src, f"{key}: missing")
        return default
    errors: list[str] = []
    v = check_pos_int(cfg[key], key, errors)
    if errors:
        raise SpecError(src, errors[0])
    return v


def _tied(cfg: dict, src: str, default: bool) -> bool:
    v = cfg.get("tie_word_embeddings", default)
    if not isinstance(v, bool):
        raise SpecError(src, f"tie_word_embeddings: must be true or false, got {shown(v)}")
    return v


def _checked(shape: TransformerShape, keys: dict[str, str], src: str) -> TransformerShape:
    for field, problem in shape.problems():
        raise SpecError(src, f"{keys.get(field, field)}: {problem}")
    return shape


def _llama_shape(cfg: dict, src: str, moe: bool = False) -> tuple[TransformerShape, str]:
    f = {k: _int(cfg, key, src) for k, key in _LLAMA_KEYS.items()}
    if moe:
        f |= {k: _int(cfg, key, src, _MOE_DEFAULTS[k]) for k, key in _MOE_KEYS.items()}
    else:
        _no_moe_keys(cfg, src)
    kv = _int(cfg, "num_key_value_heads", src, f["heads"])
    head_dim = _int(cfg, "head_dim", src, 0) if cfg.get("head_dim") is not None else 0
    keys = dict(_LLAMA_KEYS, kv_heads="num_key_value_heads", head_dim="head_dim", **_MOE_KEYS)
    shape = TransformerShape(Family.LLAMA, kv_heads=kv, head_dim=head_dim, tied_head=_tied(cfg, src, False), **f)
    return _checked(shape, keys, src), "max_position_embeddings"


def _no_moe_keys(cfg: dict, src: str) -> None:
    """A dense model type's config with a mixture of experts' keys is refused: Hugging Face's class
    for it ignores them (a dense model), which is seldom what the file's author meant."""
    for key in _MOE_KEYS.values():
        if cfg.get(key) is not None:
            raise SpecError(src, f"{key}: a mixture of experts' key, but model_type {cfg['model_type']} is dense "
                                 "(Hugging Face ignores it there); use model_type mixtral, or drop the key")


def _gpt2_shape(cfg: dict, src: str) -> tuple[TransformerShape, str]:
    _no_moe_keys(cfg, src)
    f = {k: _int(cfg, key, src) for k, key in _GPT2_KEYS.items()}
    ffn = _int(cfg, "n_inner", src, 4 * f["hidden"])
    shape = TransformerShape(Family.GPT, ffn=ffn, tied_head=_tied(cfg, src, True), **f)
    return _checked(shape, dict(_GPT2_KEYS, ffn="n_inner"), src), "n_positions"


def _name(cfg: dict, path: str | Path) -> str:
    """``_name_or_path``'s last part when it is a plain name, else the folder holding the file
    (``Meta-Llama-3-8B/config.json`` -> Meta-Llama-3-8B), else the file's stem."""
    raw = cfg.get("_name_or_path")
    if isinstance(raw, str) and raw.strip() and raw.isprintable():
        return raw.rstrip("/").rsplit("/", 1)[-1][:80]
    p = Path(path)
    return (p.parent.name if p.stem == "config" and p.parent.name else p.stem)[:80] or "config"
