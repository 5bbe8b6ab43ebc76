"""Population-based training and successive halving across the lanes of one program
(``jaxrl_fdg.tuning.population``), and a random search's lanes trained (its draws:
tests/tuning/test_search.py; the settings' checks: tests/tuning/test_settings.py)."""

import csv
import json
import re
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import lineage, testing
from jaxrl_fdg.cli import main
from jaxrl_fdg.config import resolve
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.tuning import Population, Range

# 4 lanes (2 learning rates × 2 seeds), 16 env steps per iteration, a step every 2 iterations.
PPO = rl.TrainConfig(
    total_steps=16 * 6,
    num_envs=2,
    rollout_len=8,
    num_seeds=2,
    out=None,
    progress=False,
    log_every=3,
    pbt_every=32,
    hparams={"num_minibatches": 2, "update_epochs": 1, "lr": [3e-3, 1e-5]},
)
# An off-policy one: a replay is copied, and ε (read by the actor, in the step body) is explored.
DQN = rl.TrainConfig(
    algo="dqn",
    total_steps=16 * 6,
    num_envs=4,
    rollout_len=4,
    out=None,
    progress=False,
    log_every=2,
    pbt_every=32,
    pbt_resample=0.5,
    hparams={
        "learning_starts": 16,
        "batch_size": 8,
        "buffer_size": 64,
        "hidden_sizes": (16,),
        "epsilon_end": "uniform:0.01:0.2",
        "lr": [1e-3, 1e-4],
    },
    num_lanes=4,
)


@pytest.fixture(scope="module")
def scan_runs():
    return {"ppo": rl.train(PPO), "dqn": rl.train(DQN)}


@pytest.mark.parametrize(
    "name, fusion",
    [
        ("ppo", "step"),
        ("dqn", "step"),
        # Slow tier: the step mode (the farthest from scan) holds the contract for both.
        pytest.param("ppo", "iteration", marks=pytest.mark.slow),
        pytest.param("ppo", "fragment", marks=pytest.mark.slow),
        pytest.param("dqn", "fragment", marks=pytest.mark.slow),
        pytest.param("dqn", "iteration", marks=pytest.mark.slow),
    ],
)
def test_every_fusion_mode_computes_the_same_population(scan_runs, name, fusion):
    config = {"ppo": PPO, "dqn": DQN}[name]
    run = rl.train(config.replace(fusion=fusion))
    reference = scan_runs[name]
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
        run.state.fragments,
        reference.state.fragments,
    )
    for key in reference.metrics:
        np.testing.assert_allclose(
            run.metrics[key], reference.metrics[key], rtol=1e-5, atol=1e-6, err_msg=key
        )


def test_the_worst_lanes_copy_the_best_and_explore(scan_runs):
    run = scan_runs["ppo"]
    population = run.state.population
    parents = run.metrics["pbt/parent"]  # [iterations, lanes]
    copied_at = run.metrics["pbt/copied_at"]
    # One lane of four (quantile 0.25) copies at each step: iterations 2, 4 and 6.
    steps = sorted({int(i) for i in copied_at[-1] if i >= 0} | {2})
    assert set(steps) <= {2, 4, 6}
    assert np.all(copied_at[:1] == -1)  # before the first step nobody has copied
    first = copied_at[1]  # the row of iteration 2
    assert (first == 2).sum() == 1
    mover = int(np.argmax(first == 2))
    donor = int(parents[1, mover])
    assert donor != mover
    # The mover's learning rate is the donor's times 0.8 or 1.25, or drawn afresh from the grid.
    lr = run.metrics["pbt/lr"]
    donor_lr = lr[0, donor]
    assert any(
        np.isclose(lr[1, mover], v, rtol=1e-6)
        for v in (0.8 * donor_lr, 1.25 * donor_lr, 3e-3, 1e-5)
    )
    assert population.hparams["lr"].shape == (4,)


def test_a_copy_takes_the_donors_learner_and_keeps_its_environments():
    population = Population(
        every=1,
        quantile=0.25,
        factors=(2.0,),
        resample=0.0,
        metric="episode_return",
        minimize=False,
        ranges={"lr": Range("loguniform", (1e-4, 1e-2)), "gamma": Range("choice", (0.9, 0.99))},
        seed=0,
        copied=("learner",),
    )
    state = population.init({"lr": jnp.array([1e-3, 2e-3, 4e-3, 8e-3]), "gamma": jnp.full(4, 0.9)})
    fragments = {"learner": {"w": jnp.arange(4.0) * 10}, "env": {"s": jnp.arange(4.0)}}
    # Lane 2 returns least, lane 1 most: lane 2 copies lane 1 (the only one of the best quarter).
    metrics = {"episode_return_sum": jnp.array([5.0, 9.0, 1.0, 3.0]), "episodes": jnp.ones(4)}
    state, fragments, lineage = population.after_learn(state, fragments, jnp.int32(1), metrics)
    np.testing.assert_array_equal(fragments["learner"]["w"], [0.0, 10.0, 10.0, 30.0])
    np.testing.assert_array_equal(fragments["env"]["s"], [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(lineage["pbt/parent"], [-1, -1, 1, -1])
    np.testing.assert_array_equal(lineage["pbt/copied_at"], [-1, -1, 1, -1])
    # Perturbed (×2) from the donor's value and clipped to the range; a list's value ×2 as well.
    np.testing.assert_allclose(lineage["pbt/lr"], [1e-3, 2e-3, 4e-3, 8e-3])
    np.testing.assert_allclose(lineage["pbt/gamma"], [0.9, 0.9, 1.8, 0.9])
    np.testing.assert_allclose(state.score, [5.0, 9.0, 9.0, 3.0])
    # Lower is better with minimize; and a lane with no episodes keeps its score.
    flipped = Population(**{**population.__dict__, "minimize": True, "factors": (1.0,)})
    state = flipped.init({"lr": jnp.full(4, 1e-3), "gamma": jnp.full(4, 0.9)})
    metrics = {"episode_return_sum": jnp.array([5.0, 9.0, 1.0, 3.0]), "episodes": jnp.ones(4)}
    _, fragments, lineage = flipped.after_learn(
        state, {"learner": {"w": jnp.arange(4.0)}}, jnp.int32(1), metrics
    )
    np.testing.assert_array_equal(lineage["pbt/parent"], [-1, 2, -1, -1])


def test_a_step_is_due_only_on_its_interval():
    population = Population(
        every=3,
        metric="loss",
        minimize=True,
        ranges={"lr": Range("choice", (1.0,))},
        seed=0,
        quantile=0.5,
        factors=(1.0,),
        resample=0.0,
    )
    state = population.init({"lr": jnp.ones(2)})
    metrics = {"loss": jnp.array([1.0, 2.0])}
    for iteration in (1, 2):
        state, _, lineage = population.after_learn(state, {}, jnp.int32(iteration), metrics)
        assert lineage["pbt/copied_at"].max() == -1
    state, _, lineage = population.after_learn(state, {}, jnp.int32(3), metrics)
    np.testing.assert_array_equal(lineage["pbt/copied_at"], [-1, 3])
    np.testing.assert_allclose(state.score, [1.0, 1.0])  # lane 1 copied lane 0's score


def test_each_lane_folder_holds_its_lineage(tmp_path):
    # log_every 3 iterations, a step every 2: rows every 2.
    rl.train(PPO.replace(out=str(tmp_path), run_name="pbt", log_every=3))
    resolved = resolve(PPO)
    folders = [tmp_path / "pbt" / lane.name for lane in resolved.lanes]
    # Named by their place (a lane leaves its starting point); population.json says where each
    # started. Found by a probe: lr=1e-05-seed-0 had ended at lr 1e-3.
    assert [f.name for f in folders] == [f"lane-{i}" for i in range(len(folders))]
    started = json.loads((tmp_path / "pbt" / "population.json").read_text())["lanes"]
    assert [(e["name"], e["point"], e["seed"]) for e in started] == [
        (lane.name, lane.point, lane.seed) for lane in resolved.lanes
    ]
    rows = [list(csv.DictReader((f / "metrics.csv").open())) for f in folders]
    # A row at every step at least (the rows would otherwise hide copies).
    assert [int(r["iteration"]) for r in rows[0]] == [2, 4, 6]
    for lane_rows in rows:
        assert {"pbt/lr", "pbt/parent", "pbt/copied_at", "pbt/score"} <= set(lane_rows[0])
    top = list(csv.DictReader((tmp_path / "pbt" / "metrics.csv").open()))
    assert not any(k.startswith("pbt/") for k in top[0])  # no mean of lineage over lanes
    # population.json orders the lanes as pbt/parent counts them; lineage() reads the copies.
    found = lineage.lineage(tmp_path / "pbt")
    assert found.names == [lane.name for lane in resolved.lanes] and found.hparams == ["lr"]
    assert [c.iteration for c in found.copies] == [2, 4, 6]  # one of four lanes at each step
    for c in found.copies:
        row = next(r for r in found.rows[c.child] if int(r["iteration"]) == c.iteration)
        assert row["pbt/parent"] == c.parent != c.child and c.step == 16 * c.iteration
    assert main(["plot", str(tmp_path / "pbt"), "--lineage"]) == 0
    assert (tmp_path / "pbt" / "lineage.png").stat().st_size > 0


@pytest.mark.slow  # the default tier reads a PBT lineage from lane folders
def test_lineage_reads_the_lanes_table_and_a_halving_run(tmp_path, monkeypatch):
    from jaxrl_fdg.run import lanes

    monkeypatch.setattr(lanes, "LANE_FOLDERS_MAX", 2)  # 4 lanes: one table, no lane folders
    rl.train(PPO.replace(out=str(tmp_path), run_name="table", log_every=3))
    assert (tmp_path / "table" / lanes.INDEX).is_file()
    assert not (tmp_path / "table" / resolve(PPO).lanes[0].name).exists()
    found = lineage.lineage(tmp_path / "table")
    assert [c.iteration for c in found.copies] == [2, 4, 6]
    # Successive halving: its restarts are the events, dots without a parent.
    rl.train(HALVING.replace(out=str(tmp_path), run_name="halving", log_every=3))
    found = lineage.lineage(tmp_path / "halving")
    assert found.prefix == "halving/" and found.hparams == ["lr"]
    assert [(c.iteration, c.parent) for c in found.copies] == [(2, -1)] * 2 + [(4, -1)] * 2
    assert main(["plot", str(tmp_path / "halving"), "--lineage"]) == 0


def test_lineage_of_a_run_without_a_population_is_one_line(tmp_path, capsys):
    (tmp_path / "plain").mkdir()  # a run folder without population.json
    (tmp_path / "plain" / "metrics.jsonl").write_text("")
    assert main(["plot", str(tmp_path / "plain"), "--lineage"]) == 2
    assert "is not a population's run" in capsys.readouterr().err


def test_a_population_resumes_bit_for_bit(tmp_path):
    config = PPO.replace(out=str(tmp_path), checkpoint_every=32, log_every=2)
    full = rl.train(config.replace(run_name="full"))
    rl.train(config.replace(run_name="part"))
    checkpoints = tmp_path / "part" / "checkpoints"
    for late in [p for p in checkpoints.iterdir() if p.name.isdigit() and int(p.name) > 2]:
        shutil.rmtree(late)
    resumed = rl.train(config.replace(run_name="part"), resume=tmp_path / "part")
    testing.assert_same_bits(resumed.state.fragments, full.state.fragments)


def test_a_population_named_by_its_points_resumes_in_its_own_folders(tmp_path):
    # Populations written before their lanes were named lane-<i> keep their folders.
    config = PPO.replace(out=str(tmp_path), checkpoint_every=32, log_every=2, run_name="old")
    rl.train(config)
    run = tmp_path / "old"
    for lane in resolve(PPO).lanes:
        (run / lane.name).rename(run / lane.point_name)
    written = json.loads((run / "population.json").read_text())
    for entry, lane in zip(written["lanes"], resolve(PPO).lanes, strict=True):
        entry["name"] = lane.point_name
    (run / "population.json").write_text(json.dumps(written))
    for late in [
        p for p in (run / "checkpoints").iterdir() if p.name.isdigit() and int(p.name) > 2
    ]:
        shutil.rmtree(late)
    rl.train(config, resume=run)
    assert not any(p.name.startswith("lane-") for p in run.iterdir())
    for lane in resolve(PPO).lanes:
        rows = (run / lane.point_name / "metrics.jsonl").read_text().splitlines()
        assert [json.loads(r)["iteration"] for r in rows] == [2, 4, 6]
    assert lineage.lineage(run).names == [lane.point_name for lane in resolve(PPO).lanes]


def test_a_random_search_lane_equals_its_point_run_alone():
    config = PPO.replace(
        num_seeds=1,
        num_lanes=2,
        pbt_every=0,
        total_steps=32,
        hparams={**PPO.hparams, "lr": "loguniform:1e-4:1e-2"},
    )
    searched = rl.train(config)
    lane = resolve(config).lanes[1]
    alone = rl.train(
        config.replace(num_lanes=0, seed=lane.seed, hparams={**config.hparams, **lane.point})
    )
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a[1], b, rtol=1e-4, atol=1e-5),
        searched.state.fragments,
        alone.state.fragments,
    )


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(hparams={"num_minibatches": 2}), "sweep at least one"),
        (dict(pbt_quantile=0.1), "of 4 lanes is no lane"),
        (dict(pbt_quantile=0.75), "pbt_quantile must be in (0, 0.5]"),
        (dict(halving_every=32), "choose one"),
        (dict(pbt_every=0, halving_every=32, halving_drop=1.0), "halving_drop must be in (0, 1)"),
        (dict(pbt_every=0, halving_every=32, policy_lag=1), "use policy_lag = 0"),
        (dict(pbt_perturb="0.8,x"), "pbt_perturb = '0.8,x'"),
        (dict(pbt_resample=2.0), "pbt_resample must be in [0, 1]"),
        (dict(pbt_every=8), "less than one iteration"),
        (dict(num_lanes=4), "a random search needs both num_lanes and a hyperparameter range"),
        (
            dict(num_lanes=4, hparams={"lr": "loguniform:1e-4:1e-2"}),
            "each lane of a random search has a seed of its own",
        ),
        (dict(hparams={"lr": "loguniform:1e-4:1e-2"}), "--num-lanes N"),
        (dict(num_seeds=1, num_lanes=2, hparams={"lr": "loguniform:-1:1e-2"}), "both positive"),
        (dict(num_seeds=1, num_lanes=2, hparams={"lr": "normal:0:1"}), "KIND one of"),
    ],
)
def test_wrong_population_settings_are_refused(changes, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        resolve(PPO.replace(**changes))


def test_ranking_by_return_needs_an_environment_that_reports_episodes():
    population = Population(
        every=1, metric="episode_return", minimize=False, ranges={}, seed=0, resample=0.0
    )
    state = population.init({"lr": jnp.ones(2)})
    with pytest.raises(ConfigError, match=r"'episode_return' is not a metric.*\(valid: loss\)"):
        population.after_learn(state, {}, jnp.int32(1), {"loss": jnp.ones(2)})


def test_an_unknown_ranking_metric_names_the_valid_ones():
    with pytest.raises(ConfigError, match="rank_metric = 'nope' is not a metric.*approx_kl"):
        rl.train(PPO.replace(rank_metric="nope"))


# Successive halving over a random search of 4 lanes: every 2 iterations the worse half restarts.
HALVING = PPO.replace(
    num_seeds=1,
    num_lanes=4,
    pbt_every=0,
    halving_every=32,
    # Not annealed: the point run alone for 2 iterations then anneals as the lane does.
    hparams={**PPO.hparams, "lr": "loguniform:1e-5:3e-3", "anneal_lr": False},
)


@pytest.fixture(scope="module")
def halving_run():
    return rl.train(HALVING)


def test_a_restarted_lane_computes_its_new_point_alone(halving_run):
    metrics = halving_run.metrics  # [iterations, lanes]
    seeds, started = metrics["halving/seed"], metrics["halving/started_at"]
    # Two lanes restart at iteration 2 and two at 4 (none after the last, 6): seeds 4 and 5,
    # then 6 and 7, follow the lanes' own 0..3.
    assert sorted(seeds[1][started[1] == 2].astype(int)) == [4, 5]
    assert sorted(seeds[-1][started[-1] == 4].astype(int)) == [6, 7]
    assert started[-1].max() == 4
    lane = int(np.argmax(started[-1] == 4))  # a point started at iteration 4 ran 2 iterations
    seed, lr = int(seeds[-1, lane]), float(metrics["halving/lr"][-1, lane])
    assert 1e-5 <= lr <= 3e-3
    alone = rl.train(
        HALVING.replace(
            num_lanes=0,
            halving_every=0,
            seed=seed,
            total_steps=16 * 2,
            hparams={**HALVING.hparams, "lr": lr},
        )
    )
    for key in ("loss", "episode_return_sum", "episodes"):
        np.testing.assert_allclose(
            metrics[key][4:, lane], alone.metrics[key], rtol=1e-5, atol=1e-6, err_msg=key
        )
    lane_state = jax.tree.map(lambda x: x[lane], halving_run.state.fragments)
    # Parameters after 2 iterations of updates: a lane's batched matrix products round apart
    # from the run alone's, and the Adam steps carry that on (up to 6e-5 relative seen).
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=1e-5),
        lane_state,
        alone.state.fragments,
    )


@pytest.mark.slow
def test_a_restarted_lane_counts_its_own_iterations():
    # DQN reads the env steps (the iteration) for learning_starts and prioritized replay's β: a
    # point started at iteration 4 must see 0, as alone, and not learn in its first iteration.
    # Its values: ε_end from a range, lr from a list.
    config = DQN.replace(
        pbt_every=0,
        halving_every=32,
        hparams={**DQN.hparams, "learning_starts": 32, "replay": "prioritized"},
    )
    run = rl.train(config)
    started = run.metrics["halving/started_at"]
    lane = int(np.argmax(started[-1] == 4))
    point = {
        name: float(run.metrics[f"halving/{name}"][-1, lane]) for name in ("lr", "epsilon_end")
    }
    seed = int(run.metrics["halving/seed"][-1, lane])
    whole = rl.train(
        config.replace(num_lanes=0, halving_every=0, seed=seed, hparams={**config.hparams, **point})
    )
    for key in ("loss", "episodes", "episode_return_sum"):
        np.testing.assert_allclose(
            run.metrics[key][4:, lane], whole.metrics[key][:2], rtol=1e-5, atol=1e-6, err_msg=key
        )


@pytest.mark.slow  # the default tier resumes a PBT population bit for bit
def test_successive_halving_resumes_bit_for_bit(tmp_path, halving_run):
    # Its lanes' own iteration counts, seeds and restarts are all in the checkpoint.
    config = HALVING.replace(out=str(tmp_path), run_name="part", checkpoint_every=48, log_every=1)
    rl.train(config)
    checkpoints = tmp_path / "part" / "checkpoints"
    for late in [p for p in checkpoints.iterdir() if p.name.isdigit() and int(p.name) > 3]:
        shutil.rmtree(late)
    resumed = rl.train(config, resume=tmp_path / "part")
    testing.assert_same_bits(resumed.state.fragments, halving_run.state.fragments)


@pytest.mark.slow
@pytest.mark.parametrize("fusion", ["step", "fragment"])
def test_every_fusion_mode_halves_alike(halving_run, fusion):
    run = rl.train(HALVING.replace(fusion=fusion))
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
        run.state.fragments,
        halving_run.state.fragments,
    )
