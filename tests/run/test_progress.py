"""Live progress (``jaxrl_fdg.run.progress``): off a terminal, one plain line to start and one
per host boundary, with the return and speed; nothing at all when disabled."""

from jaxrl_fdg.run.progress import ProgressDisplay

ROW = {"step": 2048, "episode_return": 21.456, "steps_per_s": 12345.6}


def test_off_a_terminal_each_boundary_is_one_plain_line(capsys):
    display = ProgressDisplay(10_000, "ppo on CartPole-v1 [scan]")
    display.update(ROW)
    display.update({**ROW, "episode_return": None})
    display.close()
    assert capsys.readouterr().err.splitlines() == [
        "ppo on CartPole-v1 [scan]: 10,000 steps",
        "  step      2,048/10,000  return    21.5      12,346 steps/s",
        "  step      2,048/10,000  return       —      12,346 steps/s",
    ]


def test_a_disabled_display_prints_nothing(capsys):
    display = ProgressDisplay(10_000, "quiet", enabled=False)
    display.update(ROW)
    display.close()
    assert capsys.readouterr() == ("", "")
