"""The paper's values, read from the one file that holds them (spaces/hypar-2019/paper-values.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ...core.errors import SpecError
from ...core.network import Network
from ...frontends import load_model
from ...frontends.network_yaml import parse_network
from ...frontends.yamlio import load_yaml_file

FIGURES = (5, 6, 7, 8, 9, 10, 11, 12, 13)


def values_path() -> Path:
    return Path(str(resources.files("explorer.spaces"))) / "hypar-2019" / "paper-values.yaml"


@dataclass(frozen=True)
class PaperValues:
    networks: dict[str, str]  # the paper's name -> zoo model
    batch: int
    figures: dict[int, dict[str, Any]]  # as written in the file

    def figure(self, n: int) -> dict[str, Any]:
        return self.figures[n]

    def series(self, n: int, name: str) -> dict:
        return self.figures[n]["series"][name]

    def network(self, paper_name: str, batch: int | None = None) -> Network:
        """The zoo network we run for one of the paper's networks, at the paper's batch."""
        return load_model(self.networks[paper_name]).with_batch(batch or self.batch)

    def workload(self, name: str) -> tuple[Network, int]:
        """One of Fig. 13's workloads: (network at its batch, levels)."""
        w = self.figures[13]["workloads"][name]
        spec = self.figures[13]["networks"][w["model"]]
        return parse_network(spec, f"{values_path()}: figures.13.networks.{w['model']}").with_batch(w["batch"]), w["levels"]


@lru_cache(maxsize=1)
def paper_values() -> PaperValues:
    data = load_yaml_file(values_path())
    figs = data.get("figures")
    if data.get("version") != 1 or not isinstance(figs, dict) or sorted(figs) != list(FIGURES):
        raise SpecError(str(values_path()), f"must be version 1 with figures {', '.join(map(str, FIGURES))}")
    return PaperValues(dict(data["networks"]), int(data["batch"]), figs)
