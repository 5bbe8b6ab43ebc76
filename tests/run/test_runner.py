"""The runner: host boundaries do not change results; the API matches the whole-run function."""

import jax
import numpy as np

import jaxrl_fdg as rl
from jaxrl_fdg import testing


def _params(result):
    return result.state.fragments["learner"].params


def test_boundaries_do_not_change_results(tiny):
    a = rl.train(tiny.replace(log_every=1))
    b = rl.train(tiny.replace(log_every=3))
    testing.assert_same_bits((_params(a), a.metrics), (_params(b), b.metrics))


def test_make_train_equals_train(tiny):
    result = rl.train(tiny)
    state, metrics = jax.jit(rl.make_train(tiny))(jax.random.key(tiny.seed))
    # train's init is a program of its own, compiled without LLVM optimisation
    # (policies.compiling.RUN_ONCE); here it is part of one fully optimised program, so the
    # initial parameters, and what follows, may differ in the last bits.
    jax.tree.map(
        lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5),
        state.fragments["learner"].params,
        _params(result),
    )
    np.testing.assert_allclose(metrics["loss"], result.metrics["loss"], rtol=1e-6)


def test_seeds_differ(tiny):
    a, b = rl.train(tiny), rl.train(tiny.replace(seed=1))
    assert not np.array_equal(a.metrics["loss"], b.metrics["loss"])


def test_summary_and_progress(tiny, capsys, tmp_path):
    result = rl.train(tiny.replace(progress=True, out=str(tmp_path)))
    err = capsys.readouterr().err
    assert "step" in err and "steps/s" in err  # one plain line per boundary when not a terminal
    s = result.summary
    assert s["status"] == "completed" and s["iterations"] == 3 and s["env_steps"] == 48
    assert set(s["timing"]["programs"]) == {"init", "scan"}
    # Boundaries after 2 and 3 iterations; the first iteration alone, to time it (a piece of a
    # chunk runs for a second at most, so that a stop request never waits long).
    assert s["timing"]["programs"]["scan"]["calls"] == 3
    assert result.run_dir.parent == tmp_path


def test_step_mode_counts_every_call(tiny):
    s = rl.train(tiny.replace(fusion="step")).summary["timing"]["programs"]
    assert s["actor"]["calls"] == s["env"]["calls"] == 3 * 8
    assert s["learner"]["calls"] == s["stack"]["calls"] == 3


def test_interrupted_run_leaves_a_consistent_folder(tiny, tmp_path, monkeypatch):
    import json

    from jaxrl_fdg.run import progress

    calls = []

    def interrupt_on_second(self, row):
        calls.append(row)
        if len(calls) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(progress.ProgressDisplay, "update", interrupt_on_second)
    config = tiny.replace(out=str(tmp_path), run_name="cut", log_every=1)
    try:
        rl.train(config)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the interrupt did not propagate")
    run = tmp_path / "cut"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["iterations"] == 2
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2]
    assert not list(run.glob("*.tmp"))
