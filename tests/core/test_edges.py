"""The kinds of edge, and how the graph describes each."""

import jaxrl_fdg as rl
from jaxrl_fdg.core.edges import LOOP_EDGES, Edge, EdgeKind


def test_the_loop_makes_three_edges_after_the_rollout():
    assert LOOP_EDGES == ("trajectory", "env_steps", "iteration")


def test_every_kind_is_described_and_compares_as_its_name():
    assert {kind.value for kind in EdgeKind} == {
        "step",
        "state",
        "published",
        "rollout",
        "loop",
        "learn",
        "round",
        "periodic",
    }
    assert EdgeKind.ROLLOUT.note.format(rollout_len=8) == "8 steps of the step body stacked"
    assert all(kind.note for kind in EdgeKind)
    assert Edge("a.x", "b.x", EdgeKind.STEP) == ("a.x", "b.x", "step")


def test_a_graph_describes_its_edges_by_kind():
    loop = rl.build_loop(rl.resolve(rl.TrainConfig(out=None, rollout_len=4)))
    text = loop.graph.describe()
    assert (
        "rollout.trajectory           -> learner.trajectory       (4 steps of the step body" in text
    )
