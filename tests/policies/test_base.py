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


def _request(**changes) -> policies.Request:
    return rl.resolve(BASE).request._replace(**changes)


def test_select_gives_replication_to_several_lanes_where_declared():
    assert policies.select(_request()) is policies.get("single")
    replicated = policies.select(_request(seeds=(0, 1, 2, 3), num_seeds=4))
    assert isinstance(replicated, policies.Replicated) and replicated.lanes == 4
    with pytest.raises(rl.ConfigError, match="placement 'data_parallel' and 2 runs"):
        policies.select(_request(placement="data_parallel", seeds=(0, 1), num_seeds=2))


def test_resolve_names_the_placement_it_chose():
    assert rl.resolve(BASE).placement.name == "single"
    assert rl.resolve(BASE.replace(num_seeds=2)).placement.name == "replicated"
    swept = rl.resolve(BASE.replace(hparams={"lr": "1e-3,3e-4"}))
    assert swept.placement.lanes == 2 and len(swept.lanes) == 2


def test_each_placement_declares_its_own_fusion_modes():
    assert policies.get("actor_learner").fusion_modes == ("fragment",)
    assert policies.get("host_env").fusion_modes == ("step", "fragment", "iteration", "scan")
    with pytest.raises(rl.ConfigError, match="runs fusion modes fragment; got 'scan'"):
        rl.resolve(BASE.replace(placement="actor_learner", devices=2, fusion="scan"))
    with pytest.raises(
        rl.ConfigError, match="placement 'host_env' runs fusion modes step, fragment, iter"
    ):
        rl.resolve(BASE.replace(env="gym/CartPole-v1", placement="host_env", fusion="eager"))


def test_what_each_placement_refuses_is_named_with_who_runs_it():
    single = policies.get("single")
    with pytest.raises(rl.ConfigError, match="devices = 2 needs placement 'data_parallel' or "):
        policies.check(single, _request(devices=2))
    with pytest.raises(rl.ConfigError, match="policy_lag = 1 needs placement 'single' or "):
        policies.check(policies.get("data_parallel"), _request(policy_lag=1))
    host = _request(placement="host_env", env="gym/CartPole-v1", env_on_host=True, num_envs=3)
    with pytest.raises(rl.ConfigError, match="num_envs must be even .*got 3"):
        policies.check(policies.get("host_env"), host)
    with pytest.raises(rl.ConfigError, match="cannot step a host simulator .*'host_env'"):
        policies.check(policies.get("data_parallel"), host._replace(devices=1))
