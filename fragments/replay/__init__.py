"""Replay: a K-ary sum tree, uniform / prioritized buffers, and frame storage that keeps each
observation frame once, as pure functions."""

from jaxrl_fdg.fragments.replay import sum_tree
from jaxrl_fdg.fragments.replay.buffer import (
    ReplayBuffer,
    ReplayState,
    Sample,
    linear_beta,
    make_prioritized,
    make_uniform,
)
from jaxrl_fdg.fragments.replay.frames import FrameReplay, FrameState, make_frame_replay
from jaxrl_fdg.fragments.replay.sum_tree import SumTree

__all__ = [
    "FrameReplay",
    "FrameState",
    "ReplayBuffer",
    "ReplayState",
    "Sample",
    "SumTree",
    "linear_beta",
    "make_frame_replay",
    "make_prioritized",
    "make_uniform",
    "sum_tree",
]
