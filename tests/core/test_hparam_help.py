"""Every hyperparameter flag of ``jaxrl-fdg train`` is described by its dataclass field."""

import dataclasses

import pytest

from jaxrl_fdg import cli
from jaxrl_fdg.core import algorithm


def _fields(name: str) -> tuple[dataclasses.Field, ...]:
    return dataclasses.fields(algorithm.get(name).hparams)


@pytest.mark.parametrize("name", algorithm.registered())
def test_every_hyperparameter_has_a_one_line_help(name):
    for field in _fields(name):
        text = field.metadata.get("help", "")
        where = f"{name}: {field.name} help {text!r}"
        assert text.strip(), where
        assert "\n" not in text and not text.endswith("."), where
        assert text[0] == text[0].lower(), where
        assert "%" not in text, where  # argparse would read it as a format directive


def test_hparam_keeps_the_default_and_carries_the_help():
    @dataclasses.dataclass(frozen=True)
    class Config:
        sizes: tuple[int, ...] = algorithm.hparam((8, 8), "layer sizes")

    (field,) = dataclasses.fields(Config)
    assert Config().sizes == (8, 8)
    assert field.metadata["help"] == "layer sizes"


def test_train_help_shows_each_flag_with_its_description(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "--algo", "ppo", "--help"])
    assert exit_info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # undo argparse's line wrapping
    clip_eps = next(f for f in _fields("ppo") if f.name == "clip_eps")
    assert f"--clip-eps VALUE {clip_eps.metadata['help']} (default: 0.2)" in out
    for field in _fields("ppo"):
        assert f"{field.metadata['help']} (default: " in out, field.name
