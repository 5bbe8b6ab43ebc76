"""``jaxrl-fdg graph``: the graph for a run's flags, and how often each node of its schedule runs
over the run (known answers, the arithmetic in comments)."""

from pathlib import Path

from jaxrl_fdg.cli import graph, main
from jaxrl_fdg.config import TrainConfig
from jaxrl_fdg.core.cadence import ITERATION, STEP, condition, every, rounds
from jaxrl_fdg.core.schedule import Call, Node, Rollout, Schedule

PPG = f"{Path(__file__).parents[2] / 'examples' / 'ppg.py'}:SPEC"


def _calls(*labels: str) -> tuple[Call, ...]:
    """Calls of these labels (``fragment`` or ``fragment.method``), in order."""
    parts = [label.partition(".") for label in labels]
    return tuple(Call(f, m or "apply", (), (), i) for i, (f, _, m) in enumerate(parts))


def _schedule(length: int, *after: Node) -> Schedule:
    return Schedule(Rollout(length, _calls("actor", "env")), after)


READY = condition(lambda edges: edges["env_steps"] >= 100, ("env_steps",), "env_steps >= 100")
SCHEDULE = _schedule(
    128,
    Node(ITERATION, _calls("learner")),
    Node(every(4), _calls("learner.auxiliary")),
    Node(every(5), _calls("evaluator")),
    Node(rounds(2), _calls("replay.sample", "critic")),
    Node(rounds(3, READY), _calls("replay.sample", "learner", "replay.update")),
    Node(every(1000), _calls("target")),
)


def test_firings_known_answers():
    # 4 envs × 128 steps = 512 env steps an iteration, 976 iterations.
    step, it, aux, ev, plain, gated, target = graph.firings(SCHEDULE, num_envs=4, iterations=976)
    # The step body: 128 calls an iteration, 128 × 976 = 124,928; each steps all 4 envs.
    assert step == graph.Firing("rollout: actor, env", STEP, 128, 1, 124_928, 4)
    assert (it.label, it.per_iteration, it.period, it.calls, it.env_steps) == (
        "learner",
        1,
        1,
        976,
        512,
    )
    # every(4): at the end of iterations 4, 8, ..., 976: 976 / 4 = 244 times, 4 × 512 apart.
    assert (aux.label, aux.period, aux.calls, aux.env_steps) == ("learner.auxiliary", 4, 244, 2048)
    # every(5): iterations 5, ..., 975: floor(976 / 5) = 195 times, 5 × 512 = 2,560 apart.
    assert (ev.calls, ev.env_steps) == (195, 2560)
    # rounds(2): 2 × 976 = 1,952; rounds(3, when): at most 3 × 976 = 2,928, gated.
    assert (plain.per_iteration, plain.calls, plain.env_steps, plain.gate) == (2, 1952, 512, None)
    assert (gated.label, gated.per_iteration, gated.calls, gated.gate) == (
        "replay.sample, learner, replay.update",
        3,
        2928,
        "env_steps >= 100",
    )
    # every(1000) in 976 iterations: never.
    assert (target.calls, target.env_steps) == (0, 512_000)


def test_firings_in_words():
    counted = graph.firings(SCHEDULE, num_envs=4, iterations=976)
    text = [graph.describe(f, 976) for f in counted]
    assert text == [
        "every step: 128 per iteration, 124,928 calls over 976 iterations (each steps all 4 envs)",
        "every iteration: 976 times, every 512 env steps",
        "every 4 iterations: 244 times, every 2,048 env steps",
        "every 5 iterations: 195 times, every 2,560 env steps",
        "2 rounds per iteration: 1,952 rounds, every 512 env steps",
        "3 rounds per iteration when its condition holds: at most 2,928 rounds, every 512 env "
        "steps; gated by: env_steps >= 100",
        "every 1000 iterations: never, the run has 976 iterations",
    ]


def test_one_iteration_and_one_env():
    (step, once) = graph.firings(_schedule(3, Node(every(1), _calls("learner"))), 1, 1)
    assert (step.calls, step.env_steps, once.calls, once.env_steps) == (3, 1, 1, 3)
    assert graph.describe(once, 1) == "every 1 iteration: 1 time, every 3 env steps"
    config = TrainConfig(total_steps=5, num_envs=1, rollout_len=3)  # 5 // 3 = 1 iteration
    assert graph.lines((step, once), config, lanes=2) == [
        "how often each node runs over the run: 1 iteration × 3 env steps (1 env × 3 steps) = 3 "
        "env steps, in each of 2 lanes",
        "  rollout: actor, env  every step: 3 per iteration, 3 calls over 1 iteration (each steps "
        "1 env)",
        "  learner              every 1 iteration: 1 time, every 3 env steps",
    ]


def test_graph(capsys):
    assert main(["graph", "ppo"]) == 0
    out = capsys.readouterr().out
    assert "learner.params" in out and "actor.params" in out and "scan" in out
    # PPO's defaults: 500,000 // (4 × 128) = 976 iterations; 976 × 512 = 499,712 env steps.
    assert (
        "how often each node runs over the run: 976 iterations × 512 env steps (4 envs × 128 "
        "steps) = 499,712 env steps\n"
    ) in out


def test_graph_takes_the_run_flags(capsys):
    argv = ["graph", "ppo", "--total-steps", "51200", "--num-envs", "8", "--rollout-len", "64"]
    assert main([*argv, "--lr", "0.001", "--num-minibatches", "8"]) == 0
    out = capsys.readouterr().out
    # 51,200 // (8 × 64) = 100 iterations: 64 × 100 = 6,400 calls of the step body.
    assert (
        "every step: 64 per iteration, 6,400 calls over 100 iterations (each steps all 8 envs)"
        in (out)
    )
    assert "learner              every iteration: 100 times, every 512 env steps" in out


def test_graph_counts_an_every_node_and_warns_when_it_cannot_run(capsys):
    flags = ["--total-steps", "100000", "--num-envs", "8"]
    assert main(["graph", PPG, *flags, "--aux-every", "4"]) == 0
    out, err = capsys.readouterr()
    # 100,000 // (8 × 128) = 97 iterations; every 4: 97 // 4 = 24 times, 4 × 1,024 apart.
    assert "learner.auxiliary    every 4 iterations: 24 times, every 4,096 env steps" in out
    assert err == ""
    # ALGO may follow the flags; a period longer than the run never runs, and says so.
    assert main(["graph", *flags, "--aux-every", "400", PPG]) == 0
    out, err = capsys.readouterr()
    assert "learner.auxiliary    every 400 iterations: never, the run has 97 iterations" in out
    assert err == (
        "jaxrl-fdg: warning: learner.auxiliary runs every 400 iterations, and this run has 97 "
        "iterations: it never runs (raise --total-steps, or run it more often)\n"
    )


def test_graph_reads_a_config_file(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(
        'algo = "dqn"\ntotal_steps = 32000\nout = "runs"\n[hparams]\nlearning_starts = 1000\n'
    )
    assert main(["graph", "--config", str(path), "--num-envs", "8"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("graph dqn")
    # 32,000 // (8 × 4) = 1,000 iterations; the updates are gated by the warm-up.
    assert "1,000 iterations × 32 env steps (8 envs × 4 steps) = 32,000 env steps" in out
    assert "when its condition holds: at most" in out
    assert not (tmp_path / "runs").exists()  # graph writes nothing
    assert main(["graph", "ppo", "--config", str(path)]) == 2
    assert "its hparams are dqn's, and ppo takes its own" in capsys.readouterr().err


def test_graph_help_names_the_hyperparameters_of_its_algorithm(capsys):
    for algo, needle in (("ppo", "--clip-eps"), ("dqn", "--learning-starts")):
        try:
            main(["graph", algo, "--help"])
        except SystemExit as e:
            assert e.code == 0
        out = capsys.readouterr().out
        assert needle in out and "--total-steps" in out and "--config FILE" in out
        assert "how often each node" in " ".join(out.split())


def test_algo_is_found_among_flags_of_any_algorithm():
    assert graph._algo(["--aux-every", "400", "--no-progress", "x.py:SPEC", "--lr", "1"]) == (
        "x.py:SPEC"
    )
    assert graph._algo(["--lr=0.1", "--debug-nans", "-h", "dqn"]) == "dqn"
    assert graph._algo(["--env-option", "a=1", "--", "sac"]) == "sac"
    assert graph._algo(["--num-envs", "8"]) is None
    # Every flag that takes no value is known as one: the others take exactly one.
    for algo in ("ppo", "dqn", "sac"):
        for action in graph.parser(algo)._actions:
            if action.option_strings:
                switch = set(action.option_strings) <= set(graph.SWITCHES)
                assert action.nargs == (0 if switch else None), action
