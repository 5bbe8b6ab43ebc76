"""Placements are objects in one registry; configuration asks them, never their names."""

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import policies
from jaxrl_fdg.policies.single import Single

BASE = rl.TrainConfig(out=None, num_envs=4, rollout_len=8, total_steps=4 * 8 * 2)


def test_registry_lists_the_placements_and_refuses_duplicates():
    assert set(policies.registered()) == {"single", "data_parallel", "actor_learner", "host_env"}
    with pytest.raises(ValueError, match="placement 'single' is already registered"):
        policies.register(Single())
    with pytest.raises(rl.ConfigError, match="unknown placement 'cluster'.*valid: "):
        policies.get("cluster")


def test_select_gives_replication_to_several_lanes_on_single_only():
    assert policies.select(BASE, 1) is policies.get("single")
    replicated = policies.select(BASE, 4)
    assert isinstance(replicated, policies.Replicated) and replicated.lanes == 4
    with pytest.raises(rl.ConfigError, match="placement 'data_parallel' and 2 runs"):
        policies.select(BASE.replace(placement="data_parallel"), 2)


def test_resolve_names_the_placement_it_chose():
    assert rl.resolve(BASE).placement.name == "single"
    assert rl.resolve(BASE.replace(num_seeds=2)).placement.name == "replicated"
    swept = rl.resolve(BASE.replace(hparams={"lr": "1e-3,3e-4"}))
    assert swept.placement.lanes == 2 and len(swept.lanes) == 2


def test_each_placement_checks_its_own_fusion_modes():
    with pytest.raises(rl.ConfigError, match="fusion must be 'fragment'"):
        rl.resolve(BASE.replace(placement="actor_learner", devices=2, fusion="scan"))
    with pytest.raises(rl.ConfigError, match="placement 'host_env' runs fusion 'step'"):
        rl.resolve(BASE.replace(env="gym/CartPole-v1", placement="host_env", fusion="eager"))
