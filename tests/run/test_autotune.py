"""``--fusion auto`` and ``--placement auto``: every candidate is measured, the fastest runs, and
the run it makes is the run that mode (and placement) makes when chosen by hand."""

import io
import textwrap

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.config.resolve import auto_placements
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.run import autotune


def _assert_same_run(a: rl.RunResult, b: rl.RunResult, fragments=None) -> None:
    """The same state (of ``fragments`` alone, when named) and the same metrics."""
    if fragments is None:
        testing.assert_same_bits(a, b)
    else:
        testing.assert_same_bits(
            ({n: a.state.fragments[n] for n in fragments}, a.metrics),
            ({n: b.state.fragments[n] for n in fragments}, b.metrics),
        )


def test_auto_runs_what_the_chosen_mode_runs_by_hand(tiny):
    auto = rl.train(tiny.replace(fusion="auto"))
    report = auto.summary["auto"]
    chosen = report["fusion"]
    assert auto.summary["fusion"] == chosen and report["placement"] == "single"
    assert [c["mode"] for c in report["candidates"]] == list(autotune.CANDIDATES)
    best = max(report["candidates"], key=lambda c: c["steps_per_s"])
    assert best["mode"] == chosen
    for probe in report["candidates"]:
        assert probe["compile_s"] > 0 and probe["run_s"] > 0 and probe["advances"] >= 2
    assert report["probe_s"] >= sum(c["compile_s"] for c in report["candidates"])

    _assert_same_run(auto, rl.train(tiny.replace(fusion=chosen)))


def test_the_probe_prints_what_it_measured(tiny, monkeypatch):
    # Each probe is replaced by a known measurement: the table lists them and marks the fastest.
    speeds = {"scan": 3.0, "iteration": 5.0, "fragment": 4.0, "step": 1.0}

    def fake(resolved, mode, iterations):
        return autotune.Probe("single", 1, mode, 0.5, 0.1, iterations, 2, speeds[mode])

    monkeypatch.setattr(autotune, "probe", fake)
    out = io.StringIO()
    resolved, report = autotune.choose(resolve(tiny.replace(fusion="auto")), out=out)
    assert resolved.config.fusion == report["fusion"] == "iteration"
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("--fusion auto: each candidate for 2 iterations")
    assert [line.split()[:3] for line in lines[2:6]] == [
        ["single", "1", mode] for mode in autotune.CANDIDATES
    ]
    assert lines[3].endswith("<- runs") and sum("<- runs" in line for line in lines) == 1


def test_auto_is_a_valid_value_and_a_resume_keeps_what_it_chose(tiny, tmp_path):
    with pytest.raises(ConfigError, match="auto"):
        resolve(tiny.replace(fusion="fastest"))  # the message lists auto among the choices
    with pytest.raises(ConfigError, match=r"unknown placement 'fastest' \(valid: .*, auto\)"):
        resolve(tiny.replace(placement="fastest"))
    for changes in ({"fusion": "auto"}, {"placement": "auto"}):
        with pytest.raises(ConfigError, match="a resumed run goes on with what it chose"):
            rl.train(tiny.replace(**changes), resume=tmp_path)


def test_across_processes_auto_is_refused(tiny):
    # Each process would measure apart and could choose another mode than the others.
    config = tiny.replace(num_processes=2, process_id=0, coordinator="127.0.0.1:12355")
    for changes, named in (
        ({"fusion": "auto"}, "--fusion auto"),
        ({"placement": "auto"}, "--placement auto"),
    ):
        with pytest.raises(ConfigError, match=f"{named} measures the run in one process"):
            resolve(config.replace(**{"placement": "data_parallel", "devices": 2, **changes}))


def test_one_device_and_a_jax_env_leave_single_alone(tiny):
    # data_parallel needs two devices to split over, actor_learner two to place on, host_env a
    # host simulator: the one candidate runs unprobed, and the run is the single placement's.
    assert list(auto_placements(tiny)) == ["single"]
    resolved, report = autotune.choose(resolve(tiny.replace(placement="auto")))
    assert (resolved.config.placement, resolved.config.devices) == ("single", 1)
    assert report["candidates"] == [] and report["probe_s"] == 0.0


HOST = dict(env="gym/CartPole-v1", num_envs=4, total_steps=4 * 8 * 3, fusion="step")


def test_placement_auto_measures_single_and_host_env_for_a_host_simulator(tiny):
    auto = rl.train(tiny.replace(placement="auto", **HOST))
    report = auto.summary["auto"]
    candidates = {(c["placement"], c["mode"]) for c in report["candidates"]}
    assert candidates == {("single", "step"), ("host_env", "step")}
    best = max(report["candidates"], key=lambda c: c["steps_per_s"])
    assert (report["placement"], report["fusion"]) == (best["placement"], "step")
    by_hand = rl.train(tiny.replace(placement=report["placement"], **HOST))
    _assert_same_run(auto, by_hand, fragments=["learner"])


def test_placement_auto_names_each_placements_reason_when_none_runs(tiny):
    # Three devices asked for and a host simulator: no placement takes both.
    with pytest.raises(ConfigError, match="no placement runs this") as error:
        resolve(tiny.replace(placement="auto", devices=3, **HOST))
    for name in ("single", "data_parallel", "actor_learner", "host_env"):
        assert f"{name}: " in str(error.value)


_DEVICES_SCRIPT = textwrap.dedent(
    """
    import json
    import jaxrl_fdg as rl
    from jaxrl_fdg import testing

    base = rl.TrainConfig(
        total_steps=4 * 16 * 5, num_envs=4, rollout_len=16, out=None, progress=False,
        log_every=2, fusion="fragment", hparams={"num_minibatches": 2, "update_epochs": 2},
    )
    auto = rl.train(base.replace(placement="auto"))
    report = auto.summary["auto"]
    by_hand = rl.train(base.replace(placement=report["placement"], devices=report["devices"]))
    same = testing.differences(auto.state.fragments, by_hand.state.fragments)
    report["same"] = not same and not testing.differences(auto.metrics, by_hand.metrics)
    print("REPORT", json.dumps(report))
    """
)


@pytest.mark.slow
def test_placement_auto_on_two_devices_measures_every_placement(report_on_devices):
    report = report_on_devices(_DEVICES_SCRIPT, devices=2, timeout=500)
    candidates = {(c["placement"], c["devices"]) for c in report["candidates"]}
    assert candidates == {("single", 1), ("data_parallel", 2), ("actor_learner", 2)}
    best = max(report["candidates"], key=lambda c: c["steps_per_s"])
    assert (report["placement"], report["devices"]) == (best["placement"], best["devices"])
    assert report["same"]
