"""Replay: a K-ary sum tree and uniform / prioritized buffers as pure functions."""

from jaxrl_fdg.fragments.replay import sum_tree
from jaxrl_fdg.fragments.replay.buffer import (
    ReplayBuffer,
    ReplayState,
    Sample,
    linear_beta,
    make_prioritized,
    make_uniform,
)
from jaxrl_fdg.fragments.replay.sum_tree import SumTree

__all__ = [
    "ReplayBuffer",
    "ReplayState",
    "Sample",
    "SumTree",
    "linear_beta",
    "make_prioritized",
    "make_uniform",
    "sum_tree",
]
