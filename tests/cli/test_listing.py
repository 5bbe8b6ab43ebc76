"""``jaxrl-fdg list``: what there is to choose from."""

import jaxrl_fdg as rl
from jaxrl_fdg.cli import main


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for needle in ("ppo", "CartPole-v1", *rl.FUSION_MODES):
        assert needle in out
