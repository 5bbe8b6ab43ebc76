"""``jaxrl-fdg plot``: its arguments (the figures are tested with :mod:`jaxrl_fdg.plots` and
:mod:`jaxrl_fdg.lineage`)."""

import pytest

from jaxrl_fdg.cli import main


def test_lineage_draws_one_run(tmp_path, capsys):
    assert main(["plot", "--lineage", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err == "jaxrl-fdg: error: --lineage draws one run, got 2\n"


def test_out_and_its_first_name_are_one_flag(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["plot", "--help"])
    assert exc.value.code == 0
    # One entry for both names: "--out FILE, --output FILE" before Python 3.13, which writes the
    # metavar once ("--out, --output FILE").
    out = capsys.readouterr().out
    assert "--out FILE, --output FILE" in out or "--out, --output FILE" in out, out
