"""DQN and the off-policy loop: n-step returns, replay wiring, options, and that it learns."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.core.loop import Transition
from jaxrl_fdg.fragments import exploration, losses
from jaxrl_fdg.fragments.algorithms.offpolicy import n_step_experience
from jaxrl_fdg.fragments.networks import QNetwork

TINY = rl.TrainConfig(
    algo="dqn",
    total_steps=2 * 8 * 3,
    num_envs=2,
    rollout_len=8,
    out=None,
    progress=False,
    hparams={"learning_starts": 16, "batch_size": 8, "buffer_size": 64, "utd_ratio": 0.125},
)


def test_n_step_returns_stop_at_episode_ends_and_window_end():
    # One env, T = 5: termination after step 1, truncation after step 3.
    r = jnp.array([[1.0], [2.0], [3.0], [4.0], [5.0]])
    term = jnp.array([[False], [True], [False], [False], [False]])
    trunc = jnp.array([[False], [False], [False], [True], [False]])
    g = 0.5
    ret, disc, last = losses.n_step_returns(r, term, trunc, g, 3)
    # t=0: r0 + g r1, terminated at 1 -> no bootstrap.  t=1: r1, terminated.
    # t=2: r2 + g r3, truncated at 3 -> bootstrap from s'_3 with g^2.
    # t=3: r3, truncated -> g.  t=4: r4, the window ends -> g.
    np.testing.assert_allclose(ret[:, 0], [1 + g * 2, 2, 3 + g * 4, 4, 5])
    np.testing.assert_allclose(disc[:, 0], [0, 0, g**2, g, g])
    np.testing.assert_array_equal(last[:, 0], [1, 1, 3, 3, 4])


def test_one_step_returns_are_plain_td():
    r = jnp.arange(6.0).reshape(3, 2)
    term = jnp.zeros((3, 2), bool).at[1, 0].set(True)
    ret, disc, last = losses.n_step_returns(r, term, jnp.zeros((3, 2), bool), 0.9, 1)
    np.testing.assert_allclose(ret, r)
    np.testing.assert_allclose(disc, np.where(np.asarray(term), 0.0, 0.9))
    np.testing.assert_array_equal(last, np.arange(3)[:, None].repeat(2, 1))


def test_experience_bootstraps_from_the_observation_reached():
    # next_observation[t] = 10 t: the n-step record of t must carry next_observation[last].
    T, B = 4, 2
    traj = Transition(
        observation=jnp.zeros((T, B, 1)),
        action=jnp.zeros((T, B), jnp.int32),
        reward=jnp.ones((T, B)),
        terminated=jnp.zeros((T, B), bool),
        truncated=jnp.zeros((T, B), bool).at[1, 1].set(True),
        next_observation=jnp.broadcast_to(10.0 * jnp.arange(T)[:, None, None], (T, B, 1)),
        extras={},
        info={},
    )
    exp = n_step_experience(traj, 0.9, 2)
    assert exp.observation.shape == (T * B, 1)
    # Rows are t-major: (t=0,b=0), (t=0,b=1), ... Env 1 truncates at t=1.
    np.testing.assert_allclose(exp.next_observation[:, 0], [10, 10, 20, 10, 30, 30, 30, 30])
    np.testing.assert_allclose(exp.reward, [1.9, 1.9, 1.9, 1, 1.9, 1.9, 1, 1])


def test_double_q_lets_the_online_network_choose():
    target = jnp.array([[1.0, 5.0, 3.0]])
    online = jnp.array([[0.0, 0.0, 9.0]])
    assert float(losses.q_learning_next_value(target)[0]) == 5.0
    assert float(losses.q_learning_next_value(target, online)[0]) == 3.0


def test_dueling_head_centres_advantages():
    net = QNetwork(num_actions=3, hidden_sizes=(8,), dueling=True)
    obs = jax.random.normal(jax.random.key(0), (5, 4))
    params = net.init(jax.random.key(1), obs)
    q = net.apply(params, obs)
    assert q.shape == (5, 3)
    # Q = V + A − mean_a A, so mean_a Q is the value stream alone.
    layers = params["params"]
    hidden = jax.nn.relu(obs @ layers["Dense_0"]["kernel"] + layers["Dense_0"]["bias"])
    value = hidden @ layers["Dense_1"]["kernel"] + layers["Dense_1"]["bias"]
    np.testing.assert_allclose(q.mean(-1), value[:, 0], rtol=1e-5, atol=1e-6)


def test_epsilon_greedy_explores_at_the_given_rate():
    q = jnp.tile(jnp.array([0.0, 1.0, 0.0, 0.0]), (40_000, 1))
    actions = exploration.epsilon_greedy(jax.random.key(0), q, 0.2)
    # Greedy action 1 with probability 0.8 + 0.2/4.
    assert abs(float((actions == 1).mean()) - 0.85) < 0.01


def test_warm_up_acts_at_random_then_epsilon_decays():
    loop = rl.build_loop(resolve(TINY))
    state = loop.init(jax.random.key(0))
    inputs = testing.first_call(loop, state, jax.random.key(1)).inputs  # the actor's
    assert sorted(inputs) == ["observation", "params"]
    q = QNetwork(2, (120, 84)).apply(inputs["params"], inputs["observation"])
    greedy = np.asarray(jnp.argmax(q, -1))

    def greedy_share(steps):
        act = jax.jit(jax.vmap(lambda k: loop.calls[0](jnp.int32(steps), inputs, k)[:2]))
        counts, out = act(jax.random.split(jax.random.key(2), 2000))
        assert (np.asarray(counts) == steps + 2).all()  # the actor counts env steps
        return float((np.asarray(out["action"]) == greedy).mean())

    # Warm-up (steps < learning_starts = 16): uniform over 2 actions whatever Q says.
    assert abs(greedy_share(0) - 0.5) < 0.03
    # After the ε schedule (half of the 48-step run): ε = 0.05, greedy 97.5% of the time.
    assert abs(greedy_share(40) - 0.975) < 0.01


def test_replay_fills_then_learner_updates_and_priorities_change():
    config = TINY.replace(hparams={**TINY.hparams, "replay": "prioritized"})
    result = rl.train(config)
    m = result.metrics
    # Iteration 1 is warm-up (16 steps collected, learning starts at 16: updates from then on).
    np.testing.assert_array_equal(m["updates"], [2, 2, 2])
    replay = result.state.fragments["replay"]
    assert int(replay.size) == 48
    # New transitions enter at the max priority; updates wrote TD-error priorities over some.
    leaves = np.asarray(replay.tree.levels[0][:48])
    assert len(np.unique(leaves)) > 1
    np.testing.assert_allclose(float(replay.tree.total), leaves.sum(), rtol=1e-5)


def test_warm_up_makes_no_updates():
    config = TINY.replace(hparams={**TINY.hparams, "learning_starts": 40})
    m = rl.train(config).metrics
    np.testing.assert_array_equal(m["updates"], [0, 0, 2])
    assert m["loss"][0] == 0.0 and m["loss"][2] > 0.0


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"utd_ratio": 0.1}, "gives 1.6 updates per iteration"),
        ({"n_step": 9}, "n_step = 9 exceeds rollout_len = 8"),
        ({"replay": "ring"}, "unknown replay 'ring' \\(valid: uniform, prioritized\\)"),
        ({"tree_arity": 65}, "tree_arity must be an integer in \\[2, 64\\], got 65"),
        ({"batch_size": 128}, "batch_size = 128 exceeds buffer_size = 64"),
        ({"td_loss": "l1"}, "unknown td_loss 'l1' \\(valid: huber, mse\\)"),
    ],
)
def test_bad_configurations_are_rejected_before_compiling(overrides, message):
    with pytest.raises(rl.ConfigError, match=message):
        resolve(TINY.replace(hparams={**TINY.hparams, **overrides}))


def test_continuous_actions_are_rejected():
    with pytest.raises(rl.ConfigError, match="dqn needs a Discrete action space, got Box"):
        resolve(TINY.replace(env="Pendulum-v1"))


def test_options_run_together():
    hparams = {**TINY.hparams, "dueling": True, "n_step": 3, "double_q": False, "td_loss": "huber"}
    result = rl.train(TINY.replace(hparams=hparams))
    assert np.isfinite(result.metrics["loss"]).all()


# -- learning ---------------------------------------------------------------------------------

SEEDS = (0, 1, 2)
WINDOW = 250  # iterations (of 4 envs × 4 steps) per point of the learning curve


@pytest.fixture(scope="module")
def curves():
    """Mean episode return per window of 4,000 env steps, for 3 seeds, uniform and prioritized
    replay, with DQN's default (CleanRL) settings. One run per seed: the compiled programs are
    shared."""
    out = {}
    for kind in ("uniform", "prioritized"):
        per_seed = []
        for seed in SEEDS:
            config = rl.TrainConfig(
                algo="dqn",
                total_steps=300_000,
                num_envs=4,
                rollout_len=4,
                seed=seed,
                out=None,
                progress=False,
                hparams={"replay": kind},
            )
            m = rl.train(config).metrics
            episodes = m["episodes"].reshape(-1, WINDOW).sum(-1)
            returns = m["episode_return_sum"].reshape(-1, WINDOW).sum(-1)
            per_seed.append(returns / np.maximum(episodes, 1))
        out[kind] = np.stack(per_seed)
    return out


@pytest.mark.slow
def test_dqn_learns_cartpole(curves):
    # Issue requirement: mean return ≥ 400. CleanRL's DQN reaches ~500 on CartPole-v1 within
    # 500k steps; here the last 30k steps of a 300k-step run, ε = 0.05 exploration included.
    final = curves["uniform"][:, -8:].mean(axis=1)
    assert (final >= 400).all(), final


def _steps_to(curve, threshold):
    reached = np.flatnonzero(curve >= threshold)
    return (reached[0] + 1) * WINDOW * 16 if reached.size else np.inf


@pytest.mark.slow
def test_prioritized_replay_learns_in_no_more_steps_than_uniform(curves):
    uniform = [_steps_to(c, 400) for c in curves["uniform"]]
    prioritized = [_steps_to(c, 400) for c in curves["prioritized"]]
    assert np.isfinite(prioritized).all(), prioritized
    assert sum(prioritized) <= sum(uniform), (prioritized, uniform)


@pytest.fixture
def stacked_cartpole():
    """CartPole seen through 3 stacked frames, truncated every 7 steps (registered for a test)."""
    from jaxrl_fdg import envs
    from jaxrl_fdg.envs import registry

    name = "test/StackedCartPole-v1"
    envs.register(name, lambda: envs.FrameStack(envs.TimeLimit(envs.CartPole(), 7), 3))
    yield name
    del registry._REGISTRY[name]


def test_frame_storage_learns_exactly_what_transition_storage_learns(stacked_cartpole):
    # Each frame stored once, stacks and next observations rebuilt on sampling: the same batches
    # reach the learner, through episode ends, truncations and a buffer that wraps around.
    config = TINY.replace(env=stacked_cartpole, total_steps=2 * 8 * 6)
    hparams = {**TINY.hparams, "n_step": 3, "replay": "prioritized"}
    runs = {
        storage: rl.train(config.replace(hparams={**hparams, "replay_storage": storage}))
        for storage in ("transitions", "frames")
    }
    frames = runs["frames"].state.fragments["replay"]
    assert frames.frames.shape == (64 // 2 + 3, 2, 4)  # one 4-float frame per slot
    for name in ("learner", "actor"):
        want, got = (runs[s].state.fragments[name] for s in ("transitions", "frames"))
        testing.assert_same_bits(got, want, name)
    testing.assert_same_bits(runs["frames"].metrics["loss"], runs["transitions"].metrics["loss"])


def test_frame_storage_is_refused_where_it_cannot_hold(stacked_cartpole):
    with pytest.raises(rl.ConfigError, match="buffer_size = 63 to be a multiple of num_envs = 2"):
        resolve(
            TINY.replace(hparams={**TINY.hparams, "replay_storage": "frames", "buffer_size": 63})
        )
    with pytest.raises(rl.ConfigError, match=r"frame_stack = 2 needs observations whose last"):
        resolve(
            TINY.replace(
                env=stacked_cartpole,
                hparams={**TINY.hparams, "replay_storage": "frames", "frame_stack": 2},
            )
        )
    with pytest.raises(rl.ConfigError, match="unknown replay_storage 'pixels'"):
        resolve(TINY.replace(hparams={**TINY.hparams, "replay_storage": "pixels"}))


@pytest.mark.slow  # resumes bit for bit: tests/run/test_checkpoint.py, on transition storage
def test_frame_storage_resumes_bit_for_bit(stacked_cartpole, tmp_path):
    import shutil

    config = TINY.replace(
        env=stacked_cartpole,
        total_steps=2 * 8 * 6,
        out=str(tmp_path),
        checkpoint_every=2 * 8 * 3,
        hparams={**TINY.hparams, "replay_storage": "frames", "n_step": 2},
    )
    full = rl.train(config.replace(run_name="full"))
    rl.train(config.replace(run_name="part"))
    shutil.rmtree(tmp_path / "part" / "checkpoints" / "6")
    resumed = rl.train(config.replace(run_name="part"), resume=tmp_path / "part")
    testing.assert_same_bits(resumed.state.fragments, full.state.fragments)


def test_named_parts_reach_the_network_its_features_and_the_replay():
    resolved = resolve(TINY)
    algorithm = resolved.spec.build(resolved.context)
    params = jax.jit(algorithm.learner.init)(jax.random.key(0)).params
    obs = jnp.ones((3, 4))
    features = algorithm.part("features")(params, obs)
    assert features.shape == (3, 84)  # the last hidden layer of the default (120, 84)
    dense = params["params"][f"Dense_{len(params['params']) - 1}"]  # the output layer
    np.testing.assert_allclose(
        features @ dense["kernel"] + dense["bias"],
        algorithm.part("q_values")(params, obs),
        rtol=1e-6,
    )
    sample = algorithm.part("sampler")("sample_more", "more", batch_size=5, slots="more_slots")
    assert (sample.name, sample.inputs, sample.outputs) == (
        "sample_more",
        ("env_steps",),
        ("more", "more_slots"),
    )
    replay = algorithm.fragment("replay").with_methods(sample)
    state = replay.init(jax.random.key(0))
    loop = rl.build_loop(resolved)
    rollout = jax.jit(loop.rollout)(jax.jit(loop.init)(jax.random.key(0)))[1]
    state, _ = replay.apply(state, {"trajectory": rollout}, jax.random.key(1))
    _, out = sample.apply(state, {"env_steps": jnp.int32(16)}, jax.random.key(2))
    assert out["more"].transitions.observation.shape == (5, 4)
    assert out["more"].weights.shape == out["more_slots"].indices.shape == (5,)
