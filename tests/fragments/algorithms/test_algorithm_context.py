"""AlgorithmContext is generic in its hyperparameters: each built-in algorithm's build and check
say which, and a subscripted context still constructs, compares and is replaced as before."""

import dataclasses
import typing

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.core.algorithm import AlgorithmContext
from jaxrl_fdg.envs.spaces import Box, Discrete
from jaxrl_fdg.fragments.algorithms.ppo import PPOConfig

BUILT_IN = ("ppo", "a2c", "impala", "pqn", "dqn", "c51", "sac", "td3", "ddpg")


def test_a_subscripted_context_constructs_and_replaces():
    ctx = AlgorithmContext[PPOConfig](
        observation_space=Box(-1.0, 1.0, (3,)),
        action_space=Discrete(2),
        num_envs=2,
        rollout_len=8,
        num_iterations=4,
        hparams=PPOConfig(),
    )
    assert type(ctx) is AlgorithmContext and ctx.env is None and ctx.env_params is None
    assert typing.get_args(AlgorithmContext[PPOConfig]) == (PPOConfig,)
    wider = dataclasses.replace(ctx, num_envs=4, hparams=PPOConfig(lr=1e-3))
    assert (wider.num_envs, wider.batch_size, wider.hparams.lr) == (4, 32, 1e-3)
    assert dataclasses.replace(ctx) == ctx and hash(dataclasses.replace(ctx)) == hash(ctx)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.num_envs = 3


@pytest.mark.parametrize("algo", BUILT_IN)
def test_build_and_check_name_the_algorithms_hyperparameters(algo):
    spec = rl.algorithm.get(algo)
    for fn in (spec.build, spec.check):
        hint = typing.get_type_hints(fn).get("ctx")
        if hint is None:  # a lambda (dpg's make_check) declares nothing
            continue
        assert typing.get_origin(hint) is AlgorithmContext, (fn, hint)
        (hparams,) = typing.get_args(hint)
        assert issubclass(spec.hparams, hparams), (fn, hparams, spec.hparams)
    assert typing.get_origin(typing.get_type_hints(spec.build)["ctx"]) is AlgorithmContext
