"""Real exports of model families the ONNX importer did not see before (issue 24), both exporters.

    /path/to/torchenv/bin/python bench/bench_onnx_families.py              # export all, import all
    ... bench/bench_onnx_families.py --keep DIR --only t5-small,swin-t   # keep the files in DIR
    ... bench/bench_onnx_families.py --import-only DIR                   # import files kept earlier
    ... bench/bench_onnx_families.py --markdown
    ... bench/bench_onnx_families.py --import-only DIR --baseline OLD   # also import with the
        explorer/ package under OLD (e.g. `git archive e0712bf explorer | tar -x -C OLD`)

Needs torch, torchvision and transformers (never a test dependency; no hub downloads: every
model is built from its config with random weights). Each family is exported with the
TorchScript (legacy) exporter and the dynamo exporter, then imported in a fresh subprocess
with this repository's importer (the exporting environment needs only onnx besides torch:
the import runs with PYTHONPATH set to this repository). A row says "all N" when the network
holds a weighted layer for every weighted node of the graph (Conv, Gemm, MatMul with a stored
weight, Gather on a 2-D float table; a mixture-of-experts graph counts its experts as the
importer reports them), else the importer's one-line message.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BATCH, SEQ = 2, 32

CHILD = r"""
import json, sys, time
path, batch, seq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = time.perf_counter()
out = {}
try:
    from explorer.frontends.onnx import load_onnx
    from explorer.core.errors import SpecError
    try:
        net = load_onnx(path, batch=batch, sequence=seq)
    except SpecError as err:
        if "--seq" not in str(err):
            raise
        net = load_onnx(path, batch=batch)  # no symbolic sequence axis to fill
    out["ok"] = True
    out["weighted"] = sum(not L.is_join for L in net.layers)
    out["nodes"] = len(net.layers)
    out["approximations"] = list(net.approximations)
except Exception as err:
    out["ok"] = False
    out["error"] = (str(err).splitlines() or [type(err).__name__])[0][:220]
    out["type"] = type(err).__name__
out["s"] = time.perf_counter() - t
print(json.dumps(out))
"""


def _tv(fn, shape=(3, 224, 224)):
    def build():
        import torch
        import torchvision.models as tvm

        factory = getattr(tvm.video, fn, None) if fn.startswith(("r3d", "r2plus1d", "mc3")) else getattr(tvm, fn)
        return factory(weights=None).eval(), (torch.randn(BATCH, *shape),), ["x"], {"x": {0: "batch"}}
    return build


class _Outputs:
    """A module returning the tensors of a Hugging Face model's output (a tuple for both exporters)."""

    @staticmethod
    def wrap(model, keys):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, *xs):
                out = self.model(**dict(zip(keys, xs)))
                vals = out.to_tuple() if hasattr(out, "to_tuple") else (out,)
                return tuple(v for v in vals if isinstance(v, torch.Tensor))

        return Wrapped().eval()


def _hf(config_name, model_name, inputs=("input_ids",), part=None, **cfg):
    def build():
        import torch
        import transformers

        config = getattr(transformers, config_name)(**cfg)
        if hasattr(config, "_attn_implementation"):
            config._attn_implementation = "eager"
        if hasattr(config, "_experts_implementation"):
            config._experts_implementation = "batched_mm"  # gathers the router's experts (no histc, no loop)
        model = getattr(transformers, model_name)(config).eval()
        if part:
            model = getattr(model, part)()
        args, axes = [], {}
        for name in inputs:
            if name == "pixel_values":
                args.append(torch.randn(BATCH, 3, 224, 224))
                axes[name] = {0: "batch"}
            elif name == "input_features":
                args.append(torch.randn(BATCH, cfg.get("num_mel_bins", 80), 2 * cfg.get("max_source_positions", 1500)))
                axes[name] = {0: "batch"}
            elif name == "input_values":
                args.append(torch.randn(BATCH, 16000))
                axes[name] = {0: "batch"}
            else:
                args.append(torch.randint(0, 100, (BATCH, SEQ)))
                axes[name] = {0: "batch", 1: "sequence"}
        return _Outputs.wrap(model, inputs), tuple(args), list(inputs), axes
    return build


def families():
    """(name, build() -> (module, example inputs, input names, dynamic axes)) for the 17 families."""
    small = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256, vocab_size=1000)
    return [
        ("shufflenet-v2", _tv("shufflenet_v2_x1_0")),
        ("swin-t", _tv("swin_t")),
        ("regnet-y-400mf", _tv("regnet_y_400mf")),
        ("mnasnet", _tv("mnasnet1_0")),
        ("mobilenet-v3-small", _tv("mobilenet_v3_small")),
        ("resnext50", _tv("resnext50_32x4d")),
        ("r3d-18 (3-D)", _tv("r3d_18", (3, 8, 112, 112))),
        ("t5-small", _hf("T5Config", "T5Model", ("input_ids", "decoder_input_ids"))),
        ("clip", _hf("CLIPConfig", "CLIPModel", ("input_ids", "pixel_values"),
                     text_config=dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256),
                     vision_config=dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                                        patch_size=32), projection_dim=64)),
        ("whisper-encoder", _hf("WhisperConfig", "WhisperModel", ("input_features",), part="get_encoder", d_model=128,
                                encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=256, decoder_layers=1,
                                decoder_attention_heads=4, decoder_ffn_dim=256,
                                num_mel_bins=80, max_source_positions=1500)),
        ("mixtral", _hf("MixtralConfig", "MixtralModel", num_local_experts=4, num_experts_per_tok=2,
                        num_key_value_heads=4, **small)),
        ("llama", _hf("LlamaConfig", "LlamaModel", num_key_value_heads=2, **small)),
        ("distilbert", _hf("DistilBertConfig", "DistilBertModel", dim=128, n_layers=2, n_heads=4, hidden_dim=256,
                           vocab_size=1000)),
        ("roberta", _hf("RobertaConfig", "RobertaModel", **small)),
        ("albert", _hf("AlbertConfig", "AlbertModel", embedding_size=64, **small)),
        ("bloom (ALiBi)", _hf("BloomConfig", "BloomModel", hidden_size=128, n_layer=2, n_head=4, vocab_size=1000)),
        ("wav2vec2 (Conv1d)", _hf("Wav2Vec2Config", "Wav2Vec2Model", ("input_values",), **small)),
    ]


def export(build, path: Path, dynamo: bool) -> str | None:
    """Export one family; None on success, else the exporter's first line."""
    import torch

    try:
        model, args, names, axes = build()
        with torch.no_grad(), contextlib.redirect_stdout(sys.stderr):  # the exporter's progress lines
            if dynamo:
                torch.onnx.export(model, args, str(path), input_names=names, dynamo=True, external_data=True)
            else:
                torch.onnx.export(model, args, str(path), input_names=names, dynamic_axes=axes, opset_version=17,
                                  dynamo=False)
    except Exception as err:  # noqa: BLE001 - a failed export is a row of the table
        return (str(err).strip().splitlines() or [type(err).__name__])[0][:120]
    return None


def weighted_nodes(path: Path) -> int:
    """Conv / Gemm / MatMul whose second input is stored (or computed from stored tensors only),
    Gather on a 2-D float table."""
    import onnx

    g = onnx.load(str(path), load_external_data=False).graph
    inits = {t.name: t for t in g.initializer}
    consts = {n.output[0] for n in g.node if n.op_type == "Constant"} | set(inits)
    for n in g.node:  # computed from stored tensors only (a transposed shared weight, weight norm)
        if n.op_type not in ("Shape", "Size") and all(x in consts for x in n.input if x):
            consts.update(n.output)
    count = 0
    for n in g.node:
        if n.op_type in ("Conv", "Gemm", "MatMul") and len(n.input) > 1 and n.input[1] in consts:
            count += 1
        elif n.op_type == "Gather" and n.input[0] in inits and len(inits[n.input[0]].dims) == 2 and inits[n.input[0]].data_type in (1, 10, 16):
            count += 1
    return count


def import_one(path: Path, root: Path = ROOT) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))
    r = subprocess.run([sys.executable, "-c", CHILD, str(path.resolve()), str(BATCH), str(SEQ)], capture_output=True,
                       text=True, env=env, cwd=root, timeout=900)  # cwd: `-c` puts it first on sys.path
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"ok": False, "error": (r.stderr.strip().splitlines() or ["killed"])[-1][:220], "s": float("nan")}


def verdict(r: dict, want: int) -> str:
    if not r["ok"]:
        return f"{r.get('type', '')}: {r['error'].split('.onnx: ')[-1]}"
    got = r["weighted"]
    notes = f"; {len(r['approximations'])} approximations" if r["approximations"] else ""
    return (f"all {got}" if got == want else f"{got} of {want}") + notes


def row(name: str, exporter: str, path: Path, baseline: Path | None = None) -> tuple:
    want = weighted_nodes(path)
    r = import_one(path)
    got = f"{r['weighted']} / {want}" if r["ok"] else f"- / {want}"
    out = (name, exporter, got, f"{r['s']:.1f}", verdict(r, want))
    if baseline is not None:
        out += (verdict(import_one(path, baseline), want)[:90],)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="comma-separated family names (default: all 17)")
    ap.add_argument("--keep", default=None, help="export into this directory and keep the files")
    ap.add_argument("--import-only", default=None, help="import the .onnx files kept in this directory")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--baseline", default=None, help="a directory holding an older explorer/ package to compare with")
    a = ap.parse_args()
    t0 = time.perf_counter()
    rows = []
    if a.import_only:
        for f in sorted(Path(a.import_only).glob("*.onnx")):
            name, _, exporter = f.stem.rpartition(".")
            if a.only and name not in a.only.split(","):
                continue
            rows.append(row(name, exporter, f, Path(a.baseline) if a.baseline else None))
    else:
        tmp = tempfile.TemporaryDirectory()
        out = Path(a.keep) if a.keep else Path(tmp.name)
        out.mkdir(parents=True, exist_ok=True)
        for name, build in families():
            if a.only and name.split(" ")[0] not in a.only.split(","):
                continue
            for exporter, dynamo in (("legacy", False), ("dynamo", True)):
                path = out / f"{name.split(' ')[0]}.{exporter}.onnx"
                t = time.perf_counter()
                err = export(build, path, dynamo)
                print(f"exported {name} ({exporter}) in {time.perf_counter() - t:.0f} s" + (f": FAILED {err}" if err else ""),
                      file=sys.stderr, flush=True)
                rows.append((name, exporter, "-", "-", f"export failed: {err}") if err
                            else row(name, exporter, path, Path(a.baseline) if a.baseline else None))
        tmp.cleanup()
    head = ("family", "exporter", "layers / weighted nodes", "import s", "result") + (("before",) if a.baseline else ())
    if a.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(str(x).replace("|", "/") for x in r) + " |")
    else:
        for r in [head] + rows:
            print(f"{r[0]:<20}{r[1]:<9}{str(r[2]):>24}{str(r[3]):>9}  {r[4]}" + (f"  | before: {r[5]}" if len(r) > 5 else ""))
    ok = sum(1 for r in rows if str(r[4]).startswith("all"))
    before = f"; before: {sum(1 for r in rows if len(r) > 5 and r[5].startswith('all'))}" if a.baseline else ""
    print(f"{ok} of {len(rows)} files import with every weighted layer found{before} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
