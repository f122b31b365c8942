"""ONNX import: time and peak memory per model, against loading the weights (the old way).

    python bench/bench_import.py            # synthetic exporter-style models (no torch needed)
    python bench/bench_import.py --real     # also real torchvision / Hugging Face exports, when
                                            # torch (and transformers) are installed; skipped otherwise
    python bench/bench_import.py --real --markdown   # the docs/benchmarks.md table of real exports

Every measurement runs in a fresh subprocess (peak RSS: VmHWM of /proc/self/status). The baseline is the
importer's old way of reading a model: ``onnx.load`` with every weight (external data too),
then shape inference; the new importer reads the graph and the initializers' shapes only.
Synthetic models (written with onnx.helper into a temporary directory):

- vgg16-inline: VGG-16 as the TorchScript exporter writes it, 553 MB of weights inline;
- bert-large-ext: BERT-large (24 layers, hidden 1024) with its weights in an external
  ``.onnx.data`` file (sparse on disk), as the dynamo exporter writes it;
- bert-2.7GB-ext: 48 layers, hidden 1024, vocabulary 250k: weights beyond protobuf's 2 GB;
- bert-large-nodata: the same as bert-large-ext with the ``.onnx.data`` file absent.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, resource, sys, time
mode, path, batch, seq = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t = time.perf_counter()
out = {}
try:
    if mode == "new":
        from explorer.frontends.onnx import load_onnx
        net = load_onnx(path, batch=batch, sequence=seq)
        out["layers"] = sum(not L.is_join for L in net.layers)
        out["nodes"] = len(net.layers)
        out["approximations"] = len(net.approximations)
    else:
        import onnx
        from onnx import shape_inference
        m = onnx.load(path)
        shape_inference.infer_shapes(m)
    out["ok"] = True
except Exception as err:
    out["ok"] = False
    out["error"] = (str(err).splitlines() or [type(err).__name__])[0][:150]
out["s"] = time.perf_counter() - t
# VmHWM: this process's peak RSS (ru_maxrss would carry the parent's peak across exec)
hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")]
out["peak_MB"] = int(hwm[0].split()[1]) / 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def measure(mode: str, path: Path, batch: int, seq: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", CHILD, mode, str(path), str(batch), str(seq)], capture_output=True, text=True,
                       env=env, timeout=600)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"ok": False, "error": (r.stderr.strip().splitlines() or ["killed"])[-1][:150], "s": float("nan"), "peak_MB": float("nan")}


# ---- synthetic models ---------------------------------------------------------------------------


def vgg16_inline(path: Path, batch: int = 8) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    nodes, inits, x, c = [], [], "x", 3
    for i, v in enumerate(cfg):
        if v == "M":
            nodes.append(helper.make_node("MaxPool", [x], [f"p{i}"], kernel_shape=[2, 2], strides=[2, 2]))
            x = f"p{i}"
            continue
        inits.append(numpy_helper.from_array(np.zeros((v, c, 3, 3), np.float32), f"w{i}"))
        nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}", kernel_shape=[3, 3], pads=[1] * 4))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        x, c = f"r{i}", v
    nodes.append(helper.make_node("Flatten", [x], ["flat"]))
    x = "flat"
    for j, (din, dout) in enumerate([(25088, 4096), (4096, 4096), (4096, 1000)]):
        inits.append(numpy_helper.from_array(np.zeros((dout, din), np.float32), f"fc{j}"))
        nodes.append(helper.make_node("Gemm", [x, f"fc{j}"], [f"f{j}"], name=f"fc{j}", transB=1))
        x = f"f{j}"
    graph = helper.make_graph(nodes, "vgg16", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 224, 224])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def bert_external(path: Path, layers: int, hidden: int, vocab: int, with_data: bool) -> None:
    """tests/onnx_nets.hf_bert with every weight in ``absent.onnx.data``: a sparse file of the
    right size when ``with_data`` (so loading it reads zeros), none otherwise."""
    import onnx

    from tests.onnx_nets import hf_bert

    model = hf_bert(layers=layers, hidden=hidden, heads=hidden // 64, ffn=4 * hidden, vocab=vocab, max_pos=512)
    offset = 0
    for t in model.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            n = 4
            for d in t.dims:
                n *= d
            meta = {e.key: e for e in t.external_data}
            meta["offset"].value, meta["length"].value = str(offset), str(n)
            offset += n
    onnx.save(model, str(path))
    data = path.parent / "absent.onnx.data"
    if with_data:
        with open(data, "wb") as f:
            f.truncate(offset)
    elif data.exists():
        data.unlink()


def synthetic(tmp: Path) -> list[tuple[str, Path, int, int, float]]:
    out = []
    p = tmp / "vgg16" / "vgg16.onnx"
    p.parent.mkdir()
    vgg16_inline(p)
    out.append(("vgg16-inline", p, 8, 1, p.stat().st_size / 1e6))
    for name, layers, hidden, vocab, data in (("bert-large-ext", 24, 1024, 30522, True),
                                               ("bert-2.7GB-ext", 48, 1024, 250_000, True),
                                               ("bert-large-nodata", 24, 1024, 30522, False)):
        d = tmp / name
        d.mkdir()
        p = d / "model.onnx"
        bert_external(p, layers, hidden, vocab, data)
        size = p.stat().st_size + ((d / "absent.onnx.data").stat().st_size if data else 0)
        out.append((name, p, 8, 128, size / 1e6))
    return out


def synthetic_table() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = synthetic(Path(tmp))
        print(f"{'model':<20}{'MB':>8}{'new s':>8}{'new MB':>8}{'old s':>8}{'old MB':>8}{'speedup':>9}{'mem ratio':>10}  layers")
        for name, path, batch, seq, size in rows:
            new, old = measure("new", path, batch, seq), measure("old", path, batch, seq)
            sp = f"{old['s'] / new['s']:.1f}x" if old.get("ok") and new.get("ok") else "-"
            mr = f"{old['peak_MB'] / new['peak_MB']:.1f}x" if old.get("ok") and new.get("ok") else "-"
            old_s = f"{old['s']:.2f}" if old.get("ok") else "fails"
            print(f"{name:<20}{size:>8.0f}{new['s']:>8.2f}{new['peak_MB']:>8.0f}{old_s:>8}{old['peak_MB']:>8.0f}{sp:>9}{mr:>10}  "
                  f"{new.get('layers', new.get('error'))}" + ("" if old.get("ok") else f"  (old: {old.get('error')})"))


# ---- real exports (torch only) --------------------------------------------------------------------

BATCH, SEQ = 8, 128
ZOO_TWINS = {"hf-bert-base": "bert-base", "hf-gpt2": "gpt2-small", "torch-mobilenet-v2": "mobilenet-v2",
             "torch-efficientnet-b0": "efficientnet-b0"}  # compared node for node at BATCH x SEQ


def real_models():
    """(name, build() -> (module, example inputs, input names, dynamic axes)) for every real model tried."""
    import torch

    def tv(fn):
        def build():
            import torchvision.models as tvm

            return getattr(tvm, fn)(weights=None).eval(), (torch.randn(BATCH, 3, 224, 224),), ["x"], {"x": {0: "batch"}}
        return build

    class LastHidden(torch.nn.Module):
        """Every output tensor of model(input_ids=x) (last hidden state, pooler): one
        positional input for both exporters."""

        def __init__(self, model, key):
            super().__init__()
            self.model, self.key = model, key

        def forward(self, x):
            return tuple(v for v in self.model(**{self.key: x}).to_tuple() if isinstance(v, torch.Tensor))

    def hf(config_name, model_name, **cfg):
        def build():
            import transformers

            model = getattr(transformers, model_name)(getattr(transformers, config_name)(**cfg)).eval()
            if model_name == "ViTModel":
                return LastHidden(model, "pixel_values"), (torch.randn(BATCH, 3, 224, 224),), ["pixel_values"], {"pixel_values": {0: "batch"}}
            ids = torch.randint(0, 100, (BATCH, SEQ))
            return LastHidden(model, "input_ids"), (ids,), ["input_ids"], {"input_ids": {0: "batch", 1: "sequence"}}
        return build

    def own(fn):
        def build():
            return fn().eval(), (torch.randn(BATCH, 3, 224, 224),), ["x"], {"x": {0: "batch"}}
        return build

    out = [("torch-mobilenet-v2", own(torch_mobilenet_v2)), ("torch-efficientnet-b0", own(torch_efficientnet_b0)),
           ("torch-densenet-121", own(torch_densenet121)), ("torch-convnext-tiny", own(torch_convnext_tiny))]
    out += [(n, tv(n)) for n in ("resnet18", "resnet50", "vgg16", "alexnet", "squeezenet1_0", "googlenet", "densenet121",
                                "mobilenet_v2", "efficientnet_b0", "convnext_tiny", "vit_b_16")]
    out += [("hf-bert-base", hf("BertConfig", "BertModel")), ("hf-gpt2", hf("GPT2Config", "GPT2Model", use_cache=False)),
            ("hf-vit-base", hf("ViTConfig", "ViTModel"))]
    return out


def torch_mobilenet_v2():
    """MobileNetV2 1.0 written in torch as torchvision's (Conv-BN-ReLU6, inverted residuals with
    the stride in the depthwise conv, 1280-channel head, dropout + linear), for machines
    without a torchvision wheel matching torch."""
    import torch.nn as nn

    def cbr(cin, cout, k, s=1, groups=1, relu=True):
        layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        return layers + ([nn.ReLU6()] if relu else [])

    class Block(nn.Module):
        def __init__(self, cin, cout, s, t):
            super().__init__()
            e = cin * t
            self.res = s == 1 and cin == cout
            self.body = nn.Sequential(*((cbr(cin, e, 1) if t != 1 else []) + cbr(e, e, 3, s, e) + cbr(e, cout, 1, relu=False)))

        def forward(self, x):
            return x + self.body(x) if self.res else self.body(x)

    layers, c = cbr(3, 32, 3, 2), 32
    for t, co, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            layers.append(Block(c, co, s if i == 0 else 1, t))
            c = co
    layers += cbr(c, 1280, 1) + [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(1280, 1000)]
    return nn.Sequential(*layers)


def torch_efficientnet_b0():
    """EfficientNet-B0 written in torch as torchvision's (MBConv: 1x1 expansion, depthwise k x k
    with the stride, squeeze-and-excitation to a quarter of the block's input channels, 1x1
    projection, residual when stride 1 and channels equal; SiLU; head 1280, linear 1000)."""
    import torch.nn as nn

    def cbs(cin, cout, k, s=1, groups=1, act=True):
        layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        return layers + ([nn.SiLU()] if act else [])

    class SE(nn.Module):
        def __init__(self, c, sq):
            super().__init__()
            self.f = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, sq, 1), nn.SiLU(), nn.Conv2d(sq, c, 1), nn.Sigmoid())

        def forward(self, x):
            return x * self.f(x)

    class MBConv(nn.Module):
        def __init__(self, cin, cout, k, s, t):
            super().__init__()
            e = cin * t
            self.res = s == 1 and cin == cout
            self.body = nn.Sequential(*((cbs(cin, e, 1) if t != 1 else []) + cbs(e, e, k, s, e) + [SE(e, max(1, cin // 4))]
                                        + cbs(e, cout, 1, act=False)))

        def forward(self, x):
            return x + self.body(x) if self.res else self.body(x)

    layers, c = cbs(3, 32, 3, 2), 32
    for t, k, s, co, n in [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
                           (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]:
        for i in range(n):
            layers.append(MBConv(c, co, k, s if i == 0 else 1, t))
            c = co
    layers += cbs(c, 1280, 1) + [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(1280, 1000)]
    return nn.Sequential(*layers)


def torch_convnext_tiny():
    """ConvNeXt-T written in torch as torchvision's: 4x4/4 stem, stages of (3, 3, 9, 3) blocks at
    96-192-384-768 channels, each a depthwise 7x7 conv, channels-last LayerNorm, Linear to 4C,
    GELU, Linear back, layer scale and residual; LayerNorm + 2x2/2 conv downsampling between
    stages; pooled LayerNorm and a linear classifier."""
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
            self.norm = nn.LayerNorm(c)
            self.fc1, self.fc2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
            self.scale = nn.Parameter(torch.full((c, 1, 1), 1e-6))

        def forward(self, x):
            y = self.dw(x).permute(0, 2, 3, 1)
            y = self.fc2(nn.functional.gelu(self.fc1(self.norm(y)))).permute(0, 3, 1, 2)
            return x + self.scale * y

    class LN2d(nn.LayerNorm):
        def forward(self, x):
            return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    dims, layers = [96, 192, 384, 768], [nn.Conv2d(3, 96, 4, 4), LN2d(96)]
    for i, n in enumerate([3, 3, 9, 3]):
        if i:
            layers += [LN2d(dims[i - 1]), nn.Conv2d(dims[i - 1], dims[i], 2, 2)]
        layers += [Block(dims[i]) for _ in range(n)]
    layers += [nn.AdaptiveAvgPool2d(1), LN2d(768), nn.Flatten(), nn.Linear(768, 1000)]
    return nn.Sequential(*layers)


def torch_densenet121():
    """DenseNet-121 written in torch as torchvision's (growth 32, blocks 6-12-24-16, BN-ReLU-
    Conv1x1(128)-BN-ReLU-Conv3x3(32) layers reading the concatenation of all earlier outputs,
    transitions halving channels and size)."""
    import torch
    import torch.nn as nn

    class Dense(nn.Module):
        def __init__(self, cin, n):
            super().__init__()
            self.layers = nn.ModuleList(nn.Sequential(nn.BatchNorm2d(cin + 32 * i), nn.ReLU(), nn.Conv2d(cin + 32 * i, 128, 1, bias=False),
                                                      nn.BatchNorm2d(128), nn.ReLU(), nn.Conv2d(128, 32, 3, 1, 1, bias=False))
                                        for i in range(n))

        def forward(self, x):
            feats = [x]
            for layer in self.layers:
                feats.append(layer(torch.cat(feats, 1)))
            return torch.cat(feats, 1)

    layers, c = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)], 64
    for i, n in enumerate([6, 12, 24, 16]):
        layers.append(Dense(c, n))
        c += 32 * n
        if i < 3:
            layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2, 2)]
            c //= 2
    layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 1000)]
    return nn.Sequential(*layers)


def graph_counts(path: Path) -> tuple[int, int]:
    """(graph nodes, Conv/Gemm/weighted-MatMul/Gather-on-a-table nodes) of an export."""
    import onnx

    g = onnx.load(str(path), load_external_data=False).graph
    inits = {t.name: t for t in g.initializer}
    consts = {n.output[0] for n in g.node if n.op_type == "Constant"}
    weighted = 0
    for n in g.node:
        if n.op_type in ("Conv", "Gemm", "MatMul") and len(n.input) > 1 and (n.input[1] in inits or n.input[1] in consts):
            weighted += 1
        elif n.op_type == "Gather" and n.input[0] in inits and len(inits[n.input[0]].dims) == 2:
            weighted += 1
    return len(g.node), weighted


def zoo_twin(path: Path, zoo_name: str) -> str:
    """Whether the export and the zoo's network at BATCH x SEQ give the same nodes, edges,
    proven-optimal plan and traffic (16 accelerators, hypar)."""
    from explorer.core.evaluate import evaluate
    from explorer.core.problem import Problem
    from explorer.frontends import load_array, load_model
    from explorer.frontends.onnx import load_onnx
    from explorer.solvers import exact

    seq = SEQ if load_model(zoo_name).sequence else None
    a, z = load_onnx(path, batch=BATCH, sequence=seq), load_model(zoo_name, sequence=seq).with_batch(BATCH)

    def sig(n):
        return [(L.kind, L.in_channels, L.out_channels, L.in_size, L.out_size, L.groups, L.heads) for L in n.layers]

    if sig(a) != sig(z) or a.edges != z.edges or a.edge_shares != z.edge_shares:
        return f"differs from the zoo's {zoo_name}"
    arr = load_array("hypar-16")
    pa, pz = exact.solve(Problem(a, arr)), exact.solve(Problem(z, arr))
    same = pa.plan == pz.plan and evaluate(a, arr, Problem(a, arr).space, pa.plan) == evaluate(z, arr, Problem(z, arr).space, pz.plan)
    return f"same nodes, plan and traffic as the zoo's {zoo_name}" if same else f"same nodes as {zoo_name}, different plan"


def real_table(markdown: bool, only: str | None = None) -> None:
    try:
        import torch
    except ImportError:
        print("torch is not installed: real exports skipped (pip install torch torchvision transformers to run them)")
        return
    exporters = [("torchscript", False), ("dynamo", True)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, build in real_models():
            if only and name not in only.split(","):
                continue
            for exporter, dynamo in exporters:
                path = Path(tmp) / f"{name}-{exporter}.onnx"
                try:
                    model, args, names, axes = build()
                except ImportError as err:
                    rows.append((name, "-", "-", "-", "-", "-", f"not run: {err}"))
                    break
                try:
                    with torch.no_grad():
                        if dynamo:
                            torch.onnx.export(model, args, str(path), input_names=names, dynamo=True, external_data=True)
                        else:
                            torch.onnx.export(model, args, str(path), input_names=names, dynamic_axes=axes, opset_version=17,
                                              dynamo=False)
                except Exception as err:  # noqa: BLE001 - a failed export is a row of the table
                    rows.append((name, exporter, "-", "-", "-", "-", f"export failed: {(str(err).splitlines() or [''])[0][:80]}"))
                    continue
                nodes, weighted = graph_counts(path)
                seq = SEQ if name.startswith(("hf-bert", "hf-gpt2")) else 1  # (unused without a symbolic sequence)
                r = measure("new", path, BATCH, seq)
                if r.get("ok"):
                    res = "imports" + (f", {r['approximations']} approximations" if r.get("approximations") else "")
                    if name in ZOO_TWINS:
                        res += "; " + zoo_twin(path, ZOO_TWINS[name])
                    rows.append((name, exporter, f"{r['layers']} / {weighted}", nodes, f"{r['s']:.2f}", f"{r['peak_MB']:.0f}", res))
                else:
                    rows.append((name, exporter, f"- / {weighted}", nodes, f"{r['s']:.2f}", f"{r['peak_MB']:.0f}", r.get("error")))
                for f in Path(tmp).glob("*"):
                    f.unlink()
    head = ("model", "exporter", "layers / weighted nodes", "graph nodes", "import s", "peak MB", "result")
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(str(x) for x in r) + " |")
    else:
        for r in [head] + rows:
            print(f"{r[0]:<16}{r[1]:<12}{str(r[2]):>24}{str(r[3]):>12}{str(r[4]):>9}{str(r[5]):>9}  {r[6]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", action="store_true", help="also export and import real torchvision / Hugging Face models")
    ap.add_argument("--markdown", action="store_true", help="print the real-export table as Markdown")
    ap.add_argument("--no-synthetic", action="store_true")
    ap.add_argument("--only", default=None, help="comma-separated real models to run (default: all)")
    a = ap.parse_args()
    t = time.perf_counter()
    if not a.no_synthetic:
        synthetic_table()
    if a.real:
        real_table(a.markdown, a.only)
    print(f"(total {time.perf_counter() - t:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
