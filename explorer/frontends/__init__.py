"""Spec loading: every importer behind one registry.

``load_model`` and ``load_array`` resolve ``--model`` and ``--array`` (a shipped name or a
path) to the core's typed specs; ``load_cluster`` resolves a GPU cluster (a shipped name such as
``dgx-a100`` or a YAML with ``kind: gpu-cluster``), and ``is_cluster`` says whether an ``--array``
value names one. A network file is read by the frontend registered for its
suffix (``NETWORK_FORMATS``); a new importer registers here and nowhere else. The core never
imports a frontend.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import SpecError, shown
from ..core.names import Frontend, given_as, running
from ..core.network import MOE_NOTE, Network
from . import zoo
from .yamlio import load_yaml_file

if TYPE_CHECKING:  # each loader is imported where it is used: a run on a GPU cluster never needs an array's,
    from ..core.array import ArraySpec  # nor a run on an array (or a zoo name) the cluster's
    from ..core.cluster import ClusterSpec

# file suffix -> "module:function" taking (path, batch, sequence) and returning a Network;
# imported on use, so that a YAML run never imports onnx.
NETWORK_FORMATS: dict[str, str] = {
    ".yaml": "explorer.frontends.network_yaml:load_network_file",
    ".yml": "explorer.frontends.network_yaml:load_network_file",
    ".onnx": "explorer.frontends.onnx:load_onnx",
    ".json": "explorer.frontends.hf_config:load_hf_config",  # a Hugging Face transformer config.json
}


def _looks_like_path(text: str) -> bool:
    return "/" in text or "\\" in text or text.endswith(tuple(NETWORK_FORMATS)) or Path(text).exists()


def network_loader(path: str | Path):
    """The registered loader for a network file, by suffix (YAML when the suffix is unknown)."""
    target = NETWORK_FORMATS.get(Path(str(path)).suffix.lower(), NETWORK_FORMATS[".yaml"])
    module, func = target.split(":")
    return getattr(import_module(module), func)


def load_network_path(path: str | Path, batch: int | None = None, sequence: int | None = None) -> Network:
    """A network file in any registered format; ``batch`` fills a symbolic batch (ONNX),
    ``sequence`` a symbolic sequence (ONNX) or a YAML spec's ``sequence``."""
    return network_loader(path)(path, batch, sequence)


def load_model(ref: str, batch: int | None = None, sequence: int | None = None) -> Network:
    """A zoo name or a path (YAML, ONNX or a Hugging Face config.json); ``batch`` fills an ONNX model's symbolic batch,
    ``sequence`` its symbolic sequence (or overrides a YAML spec's ``sequence``)."""
    if _looks_like_path(ref):
        if Path(str(ref)).suffix.lower() in (".yaml", ".yml"):  # parsed once: checked, then read as a network
            from .network_yaml import parse_network

            data = load_yaml_file(ref)
            _check_not_array_or_cluster(data, ref)
            return parse_network(data, str(ref), sequence)
        return load_network_path(ref, batch, sequence)
    path = zoo.resolve_model(ref)
    if path is None:
        known = ", ".join(zoo.zoo_files())
        raise SpecError("--model", f"unknown model {shown(ref)} (known: {known}, vgg16, vgg19; or a path to a network .yaml, an .onnx model or a Hugging Face config.json)")
    return load_network_path(path, None, sequence)


def dense_only(net: Network, ref: str) -> Network:
    """``net``, refused (SpecError naming --model) when it is a mixture of experts: that is planned
    on a GPU cluster only (its nodes hold the routed experts' work, not the experts' weights,
    which the accelerator-array model would under-count)."""
    if any(note.startswith(MOE_NOTE) for note in net.approximations):
        raise SpecError("--model", f"{shown(ref)} is a mixture of experts: it is planned on a GPU cluster "
                                   f"({given_as('--array')} dgx-a100 or dgx-h100), not on an accelerator array")
    return net


def load_array(ref: str) -> ArraySpec:
    """A shipped array name or an array YAML; a GPU cluster here is a one-line ``SpecError``."""
    from .array_yaml import load_array_file, parse_array

    if _looks_like_path(ref):
        from .cluster_yaml import parse_cluster, says_cluster

        data = _parsed_once(ref)
        if says_cluster(data):
            parse_cluster(data, ref)  # a bad cluster file says what is wrong with it first
            raise _not_an_array(ref)
        if _says(data, NETWORK_KEYS) and not _says(data, ARRAY_KEYS):
            raise SpecError("--array", f"{shown(ref)} is a network file (it has layers or transformer), not an "
                                       f"accelerator array: give it as {given_as('--model')}; arrays: " + ", ".join(zoo.array_files()))
        return parse_array(data, ref)
    if zoo.resolve_cluster(ref) is not None:
        raise _not_an_array(ref)
    path = zoo.resolve_array(ref)
    if path is None:
        known = ", ".join(zoo.array_files())
        clusters = ", ".join(zoo.cluster_files())
        raise SpecError("--array", f"unknown array {shown(ref)} (known: {known}; GPU clusters: {clusters}; "
                        "or a path to a .yaml file)")
    return load_array_file(path)


NETWORK_KEYS = ("layers", "transformer")  # a network file's own keys
ARRAY_KEYS = ("levels", "kinds", "link_bandwidth_GBps", "accelerators")  # an array file's


def _says(data, keys) -> bool:
    return isinstance(data, dict) and any(k in data for k in keys)


def _check_not_array_or_cluster(data, ref: str) -> None:
    """A network path that holds a GPU cluster or an accelerator array: one line saying so."""
    from .cluster_yaml import says_cluster

    if says_cluster(data):
        raise SpecError("--model", f"{shown(ref)} is a GPU cluster file (kind: gpu-cluster), not a network: give it "
                                   f"as {given_as('--array')}")
    if _says(data, ARRAY_KEYS) and not _says(data, NETWORK_KEYS):
        raise SpecError("--model", f"{shown(ref)} is an accelerator array file (it has levels, kinds or links), not "
                                   f"a network: give it as {given_as('--array')}")


def _not_an_array(ref: str) -> SpecError:
    planner = "explorer.api.plan_llm plans on it" if running() is Frontend.API else "docs/llm-training.md"
    return SpecError("--array", f"{shown(ref)} is a GPU cluster (kind: gpu-cluster), not an accelerator array: "
                     f"a cluster takes a transformer to plan ({planner}); arrays: " + ", ".join(zoo.array_files()))


def is_cluster(ref: str) -> bool:
    """Whether ``ref`` names a GPU cluster: a shipped cluster name, or a readable YAML file whose
    top level says ``kind: gpu-cluster`` (a file that cannot be read is not one: its own loader
    reports why)."""
    if not _looks_like_path(ref):
        return zoo.resolve_cluster(ref) is not None
    from .cluster_yaml import says_cluster

    try:
        return says_cluster(_parsed_once(ref, keep=True))
    except SpecError:
        return False


_KEPT: dict = {}  # (path, mtime, size) -> the data ``is_cluster`` parsed, handed to the file's next load


def _parsed_once(ref: str, keep: bool = False) -> dict:
    """``load_yaml_file(ref)``, parsed once for ``is_cluster`` then ``load_array`` (a 5 MB array file
    of 100,000 kinds: 2 s a parse): ``keep`` holds the data (one file at most) for the next call on
    the same unchanged file, which takes it."""
    try:
        st = Path(ref).stat()
        key = (str(Path(ref).resolve()), st.st_mtime_ns, st.st_size)
    except OSError:
        return load_yaml_file(ref)  # (its loader says why it cannot be read)
    data = _KEPT.pop(key, None)
    if data is None:
        data = load_yaml_file(ref)
    if keep:
        _KEPT.clear()
        _KEPT[key] = data
    return data


def load_cluster(ref: str, gpus: int | None = None) -> ClusterSpec:
    """A shipped cluster name or a cluster YAML; ``gpus`` (``--gpus N``) sets the instance size."""
    from .cluster_yaml import load_cluster_file

    if _looks_like_path(ref):
        spec = load_cluster_file(ref)
    else:
        path = zoo.resolve_cluster(ref)
        if path is None:
            known = ", ".join(zoo.cluster_files())
            raise SpecError("--array", f"unknown GPU cluster {shown(ref)} (known: {known}; or a path to a .yaml file "
                            "with kind: gpu-cluster)")
        spec = load_cluster_file(path)
    return spec if gpus is None else spec.with_gpus(gpus)
