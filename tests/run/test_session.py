"""A training session (``jaxrl_fdg.run.session``): one metrics row per chunk of
``boundary_every`` iterations, each chunk dispatched in pieces sized to run about a second
(:class:`Pace`) with one queued behind the one being read; checkpoints where their cadence falls
and at the end; an evaluation behind the chunk that crosses its cadence; a stop request honoured
between two pieces, its row covering the iterations done. Driven by a stand-in plan whose
iteration ``i`` reports ``loss = i``, so every row can be worked out by hand."""

import signal

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg import testing
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.profiling import Timings
from jaxrl_fdg.run.checkpoint import NonFiniteError
from jaxrl_fdg.run.session import Pace, Session, _chunks, _split_for_trace

# 6 iterations of 2 envs × 8 steps, a row every 2: chunks end at iterations 2, 4 and 6.
CONFIG = testing.tiny("ppo", iterations=6, log_every=2)


class Counting:
    """The plan: ``advance(state, k)`` runs ``k`` iterations, iteration ``i`` reporting
    ``loss = i``; ``on_advance(iteration after)`` is called after each."""

    def __init__(self, on_advance=lambda iteration: None):
        self.timings, self.advances, self.on_advance = Timings("off"), [], on_advance

    def advance(self, state, k):
        first = int(state.iteration)
        self.advances.append(k)
        self.on_advance(first + k)
        state = state._replace(iteration=state.iteration + k)
        return state, {"loss": np.arange(first + 1, first + k + 1, dtype=np.float32)}

    def collect(self, pending):
        return pending


class Saved:
    """The checkpointer: the iterations it was asked to save."""

    def __init__(self):
        self.saved = []

    def save(self, state):
        self.saved.append(int(state.iteration))
        return self.saved[-1]


def _state(iteration=0):
    return LoopState({"learner": jnp.ones(2)}, jax.random.key(0), jnp.int32(iteration))


def _run(config=CONFIG, plan=None, state=None, **session):
    plan = plan or Counting()
    session = Session(config, "test", plan, None, **session)
    session.pace = Pace(1e6)  # whatever the machine's load, a piece may hold a whole chunk
    state = session.execute(state or _state())
    return session, plan, state


def test_a_row_per_chunk_each_the_mean_of_its_iterations():
    session, plan, state = _run()
    assert [r["iteration"] for r in session.rows] == [2, 4, 6]
    assert [r["loss"] for r in session.rows] == [1.5, 3.5, 5.5]  # (1 + 2) / 2, ...
    # The first piece is one iteration, to measure; then a chunk fits in a piece.
    assert plan.advances == [1, 1, 2, 2]
    np.testing.assert_array_equal(np.concatenate([h["loss"] for h in session.history]), range(1, 7))
    assert session.status == "completed" and int(state.iteration) == 6


def test_checkpoints_fall_where_their_cadence_crosses_a_chunks_end_and_at_the_end():
    saved = Saved()
    _run(CONFIG.replace(checkpoint_every=3 * 16), checkpointer=saved)  # every 3 iterations
    # Chunk ends 2, 4, 6: 4 is the first past 3, 6 the first past 6; then the final state.
    assert saved.saved == [4, 6, 6]


def test_an_evaluation_runs_behind_the_chunk_that_crosses_its_cadence_and_the_last():
    evaluated = []

    def evaluate(state, iteration):
        evaluated.append(iteration)
        return {"eval_return": np.float32(10 * iteration)}

    session, _, _ = _run(CONFIG.replace(eval_every=4 * 16), evaluate=evaluate)  # every 4
    assert evaluated == [4, 6]
    assert [r["eval_return"] for r in session.rows] == [None, 40.0, 60.0]


def test_a_stop_between_two_pieces_ends_the_row_there_and_checkpoints_it():
    saved, plan, session = Saved(), None, None

    def stop_at_three(iteration):
        if iteration == 3:
            session.request_stop(signal.SIGTERM)

    plan = Counting(stop_at_three)
    session = Session(CONFIG, "test", plan, None, checkpointer=saved)
    session.pace = Pace(0.0)  # pieces of one iteration
    state = session.execute(_state())
    assert [r["iteration"] for r in session.rows] == [2, 3]  # the row of iteration 3 alone
    assert session.rows[-1]["loss"] == 3.0
    assert saved.saved == [3] and int(state.iteration) == 3
    assert (session.status, session.signal) == ("interrupted", signal.SIGTERM)


def test_a_resume_between_rows_logs_its_next_row_where_the_whole_run_does():
    assert _chunks(3, 6, 2) == [1, 2]
    session, plan, _ = _run(state=_state(3))
    assert [r["iteration"] for r in session.rows] == [4, 6]
    assert [r["loss"] for r in session.rows] == [4.0, 5.5]  # iteration 4; (5 + 6) / 2


def test_a_state_holding_nan_is_never_checkpointed():
    session = Session(CONFIG, "test", Counting(), None, checkpointer=Saved())
    bad = _state()._replace(fragments={"learner": jnp.array([1.0, jnp.nan])})
    with pytest.raises(NonFiniteError, match="learner.*the last checkpoint is intact"):
        session.checkpoint(bad)
    assert session.checkpointer.saved == []


def test_pace_sizes_pieces_to_run_about_its_seconds():
    pace = Pace(1.0)
    assert pace.size(10) == 1  # nothing measured yet
    pace.measured(iterations=2, seconds=0.5)  # 0.25 s per iteration: 4 fit in a second
    assert (pace.size(10), pace.size(3)) == (4, 3)
    pace.measured(iterations=1, seconds=5.0)
    assert pace.size(10) == 1  # at least one


def test_chunks_keep_to_the_grid_and_the_trace_window_follows_a_warm_up():
    assert _chunks(0, 7, 3) == [3, 3, 1] and _chunks(5, 5, 2) == []
    assert _split_for_trace([4, 4], 2) == ([4, 2, 2], 1)  # from the middle iteration on
    assert _split_for_trace([4, 4, 4, 4, 3], 2) == ([4, 4, 1, 2, 1, 4, 3], 3)  # 9 of 19
    assert _split_for_trace([10], 2) == ([5, 2, 3], 1)  # one chunk: cut in three
    assert _split_for_trace([5], 2) == ([2, 2, 1], 1)
    assert _split_for_trace([3, 3], 2) == ([3, 2, 1], 1)
    assert _split_for_trace([4, 2], 2) == ([2, 2, 2], 1)  # the chunk ends first: its last two
    assert _split_for_trace([1], 2) == ([1], 0)
