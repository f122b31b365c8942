"""docs/llm-training.md's validation table gives every row's interleaving (`v`) and degrees as
the validation files run them (trial 8, item 13: the 175B rows ran v = 3, the page did not say,
and a CLI reproduction gave 14.14 s, not the table's 13.28 s)."""

from __future__ import annotations

from pathlib import Path

from explorer.frontends.llm_validation import load_validation

DOC = Path(__file__).resolve().parent.parent / "docs" / "llm-training.md"
TABLES = ("korthikanti-table5", "megatron-sc21-table1", "llama3-table4")


def _doc_rows() -> list[dict[str, str]]:
    lines = [ln for ln in DOC.read_text().splitlines() if ln.startswith("| ")]
    head = next(ln for ln in lines if ln.startswith("| table | model | GPUs |"))
    keys = [c.strip() for c in head.strip("|").split("|")]
    rows = [ln for ln in lines if ln.split("|")[1].strip() in TABLES]
    return [dict(zip(keys, (c.strip() for c in ln.strip("|").split("|")))) for ln in rows]


def test_every_row_gives_v_and_the_degrees_of_its_file():
    doc = _doc_rows()
    files = [row for name in TABLES for row in load_validation(name)]
    assert len(doc) == len(files)
    for d, row in zip(doc, files):
        par = row.parallelism
        assert (d["table"], d["model"]) == (row.table, row.model)
        assert (d["t"], d["p"], d["d"]) == (str(par.tensor), str(par.pipeline), str(par.data))
        want_v = "" if row.role == "unsupported" else str(row.virtual_stages)
        assert d["v"] == want_v, (row.model, d)
    assert {d["v"] for d in doc if d["model"] in ("175B", "530B")} == {"3"}
