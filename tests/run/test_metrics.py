"""Metric rows and summaries (``jaxrl_fdg.run.metrics``): a row for a chunk of iterations holds
its counters, the episodes' means and the mean of every other metric; a periodic fragment's
metrics are means over the iterations it ran; a population's lineage is its last value; a
summary counts the whole run, a resume's earlier segments included."""

import numpy as np
import pytest

from jaxrl_fdg import testing
from jaxrl_fdg.profiling import Timings, summarize
from jaxrl_fdg.run import metrics

CONFIG = testing.tiny("ppo")  # 2 envs × 8 steps: 16 env steps per iteration


def test_a_row_holds_the_chunks_counters_and_means():
    chunk = {
        "loss": np.float32([1.0, 2.0, 6.0]),
        "episodes": np.float32([0, 2, 1]),
        "episode_return_sum": np.float32([0, 30, 15]),
        "episode_length_sum": np.float32([0, 40, 20]),
    }
    row = metrics.row(chunk, iterations=6, config=CONFIG, wall=1.23456, window_wall=0.5)
    assert row == {
        "iteration": 6,
        "step": 6 * 16,
        "wall_s": 1.2346,
        "steps_per_s": 3 * 16 / 0.5,
        "episodes": 3,
        "episode_return": 45 / 3,  # sums over the chunk's episodes, over their count
        "episode_length": 60 / 3,
        "loss": 3.0,  # (1 + 2 + 6) / 3
    }


def test_a_chunk_without_an_ended_episode_has_no_episode_means():
    row = metrics.row({"episodes": np.float32([0, 0])}, 2, CONFIG, 0.1, 0.1)
    assert (row["episodes"], row["episode_return"], row["episode_length"]) == (0, None, None)


def test_a_periodic_fragments_metrics_are_means_over_the_iterations_it_ran():
    chunk = {
        "loss": np.float32([1.0, 1.0, 1.0, 1.0]),
        "aux/runs": np.float32([0, 1, 0, 1]),
        "aux/loss": np.float32([0.0, 4.0, 0.0, 8.0]),
        "probe/runs": np.float32([0, 0, 0, 0]),
        "probe/score": np.float32([0, 0, 0, 0]),
    }
    row = metrics.row(chunk, 4, CONFIG, 1.0, 1.0)
    assert (row["aux/runs"], row["aux/loss"]) == (2, 6.0)  # (4 + 8) / 2, not / 4
    assert (row["probe/runs"], row["probe/score"]) == (0, None)


def test_a_populations_lineage_is_its_value_after_the_chunk():
    chunk = {"loss": np.float32([1, 3]), "pbt/lr": np.float32([0.1, 0.2])}
    row = metrics.row(chunk, 2, CONFIG, 1.0, 1.0)
    assert row["pbt/lr"] == pytest.approx(0.2)
    lanes = {"loss": np.float32([[1, 2], [3, 4]]), "pbt/lr": np.float32([[0.1, 0.2], [0.3, 0.4]])}
    assert "pbt/lr" not in metrics.row(lanes, 2, CONFIG, 1.0, 1.0)  # only in each lane's row


def test_concat_joins_pieces_along_the_iterations():
    pieces = [{"loss": np.float32([1, 2])}, {"loss": np.float32([3])}]
    testing.assert_same_bits(metrics.concat(pieces), {"loss": np.float32([1, 2, 3])})
    assert metrics.concat([]) == {} and metrics.length(pieces[0]) == 2


def test_a_summary_counts_the_whole_run_and_says_it_in_two_lines():
    rows = [
        {"iteration": 2, "episode_return": 10.0},
        {"iteration": 4, "episode_return": None},
    ]
    timing = {**summarize(Timings("off"), 2.0), "compile_s": 1.5}  # this segment's 2 s
    summary = metrics.summary(CONFIG, "completed", rows, timing, elapsed_before=2.0)
    assert summary["iterations"] == 4 and summary["env_steps"] == 64
    assert summary["final_return"] == 10.0  # the last row that had an episode's return
    assert (summary["run_s"], summary["segment_run_s"]) == (4.0, 2.0)  # 2 s before, 2 s now
    assert summary["steps_per_s"] == 64 / 4.0
    assert metrics.summary(CONFIG, "completed", [], timing, iterations=3)["env_steps"] == 48
    first, second = metrics.format_summary(summary).splitlines()[:2]
    assert first == "completed: 64 env steps in 4.00 s (+1.50 s compile)"
    assert second == "final return 10.0   16 env-steps/s"
