"""``explore reproduce``'s point cache (``DIR/.cache``) is sealed as the sweep cache is (``app.seal``)
and each entry holds its key: an entry edited by hand (a level cost changed), damaged, or another
point's entry copied over it is solved again and rewritten, with one stderr line naming it, never
trusted (before the seal, an edited cost came back as if solved)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from explorer.app.cli import main
from explorer.app.reproduce import points as points_mod
from explorer.app.seal import unseal
from explorer.core.paper_accounting import Accounting
from explorer.frontends import load_model


@pytest.fixture(autouse=True)
def _fresh_memo():
    points_mod._memo.cache_clear()  # read the folder, not this process's memo
    yield
    points_mod._memo.cache_clear()


def _point(net, folder, ledger=None):
    points_mod._memo.cache_clear()
    return points_mod.point(net, 2, Accounting.HYPAR_FIGURES, folder, ledger)


def _doubled(text: str) -> str:
    """The entry with the hypar plan's level costs doubled, its seal left as it was (a hand edit)."""
    data = json.loads(text)
    data["plans"][0][2] = [str(2 * Fraction(x)) for x in data["plans"][0][2]]
    return json.dumps(data)


def test_an_edited_entry_is_solved_again_and_resealed(tmp_path):
    net = load_model("lenet-c")
    fresh = _point(net, tmp_path)
    (entry,) = tmp_path.glob("*.json")
    sealed = entry.read_text()
    assert json.loads(unseal(sealed))["key"] == entry.stem  # sealed, holding its key
    entry.write_text(_doubled(sealed))
    ledger = points_mod.Ledger()
    assert _point(net, tmp_path, ledger).plans == fresh.plans  # not the edited costs
    assert ledger.rejected == {str(entry)} and ledger.solved and not ledger.reused
    assert entry.read_text() == sealed  # rewritten as the code writes it
    ledger = points_mod.Ledger()
    assert _point(net, tmp_path, ledger).plans == fresh.plans and ledger.reused and not ledger.rejected


def test_another_points_entry_copied_over_is_rejected(tmp_path):
    """A well-sealed entry, but of another point (another network at the same levels and accounting)."""
    a, b = load_model("lenet-c"), load_model("alexnet")
    _point(a, tmp_path)
    (entry_a,) = tmp_path.glob("*.json")
    fresh_b = _point(b, tmp_path)
    (entry_b,) = set(tmp_path.glob("*.json")) - {entry_a}
    entry_b.write_text(entry_a.read_text())
    ledger = points_mod.Ledger()
    assert _point(b, tmp_path, ledger).plans == fresh_b.plans and ledger.rejected == {str(entry_b)}


def test_the_cli_says_so_in_one_line_and_answers_the_same(tmp_path, capsys):
    args = ["reproduce", "hypar", "--figure", "9", "--out", str(tmp_path), "--accounting", "hypar-figures",
            "--format", "json"]

    def run():
        points_mod._memo.cache_clear()
        with pytest.raises(SystemExit) as e:
            main(args)
        out = capsys.readouterr()
        return e.value.code, out.out, out.err

    code, first, err = run()
    assert code == 0 and err == ""
    (entry,) = (tmp_path / ".cache").glob("*.json")
    entry.write_text(_doubled(entry.read_text()))
    code, again, err = run()
    assert code == 0 and json.loads(again)["figures"] == json.loads(first)["figures"]
    assert err == (f"explore reproduce hypar: 1 cache entry failed its check (edited or damaged), solved again: "
                   f"{entry}\n")
    assert json.loads(again)["cache"]["solved"] == 1
