"""``--fusion auto``: every candidate is measured, the fastest runs, and the run it makes is the
run that mode makes when chosen by hand."""

import io

import jax
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.run import autotune


def test_auto_runs_what_the_chosen_mode_runs_by_hand(tiny):
    auto = rl.train(tiny.replace(fusion="auto"))
    report = auto.summary["fusion_auto"]
    chosen = report["chosen"]
    assert auto.summary["fusion"] == chosen
    assert set(report["candidates"]) == set(autotune.CANDIDATES)
    best = max(report["candidates"].values(), key=lambda c: c["steps_per_s"])
    assert best["mode"] == chosen
    for probe in report["candidates"].values():
        assert probe["compile_s"] > 0 and probe["run_s"] > 0 and probe["advances"] >= 2
    assert report["probe_s"] >= sum(c["compile_s"] for c in report["candidates"].values())

    by_hand = rl.train(tiny.replace(fusion=chosen))
    for a, b in zip(jax.tree.leaves(auto.state), jax.tree.leaves(by_hand.state), strict=True):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for name in by_hand.metrics:
        np.testing.assert_array_equal(auto.metrics[name], by_hand.metrics[name])


def test_the_probe_prints_what_it_measured(tiny, monkeypatch):
    # Each probe is replaced by a known measurement: the table lists them and marks the fastest.
    speeds = {"scan": 3.0, "iteration": 5.0, "fragment": 4.0, "step": 1.0}

    def fake(resolved, mode, iterations):
        return autotune.Probe(mode, 0.5, 0.1, iterations, 2, speeds[mode])

    monkeypatch.setattr(autotune, "probe", fake)
    out = io.StringIO()
    resolved, report = autotune.choose_fusion(resolve(tiny.replace(fusion="auto")), out=out)
    assert resolved.config.fusion == report["chosen"] == "iteration"
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines[2:6]] == list(autotune.CANDIDATES)
    assert lines[3].endswith("<- runs") and sum("<- runs" in line for line in lines) == 1


def test_auto_is_a_valid_fusion_value_and_a_resume_keeps_its_mode(tiny, tmp_path):
    with pytest.raises(ConfigError, match="auto"):
        resolve(tiny.replace(fusion="fastest"))  # the message lists auto among the choices
    with pytest.raises(ConfigError, match="a resumed run goes on in the mode it chose"):
        rl.train(tiny.replace(fusion="auto"), resume=tmp_path)
