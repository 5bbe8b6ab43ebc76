"""The schedule tree (``jaxrl_fdg.core.schedule``): its calls' labels, a node's fragments each
once in call order, and the tree drawn one line per node and call."""

import jaxrl_fdg as rl
from jaxrl_fdg.core.schedule import Call, Node, Rollout, Schedule


def _call(fragment, method="apply", index=0):
    return Call(fragment, method, (), (), index)


def test_a_calls_label_is_its_fragment_or_fragment_dot_method():
    assert _call("replay").label == "replay"
    assert _call("replay", "sample").label == "replay.sample"


def test_a_nodes_fragments_are_each_named_once_in_call_order():
    node = Node(
        rl.rounds(2),
        (_call("replay", "sample"), _call("learner"), _call("replay", "update")),
        owner="learner",
    )
    assert node.fragments == ("replay", "learner")
    assert Node(rl.ITERATION, ()).owner == ""


def test_the_tree_is_drawn_one_line_per_node_and_call():
    schedule = Schedule(
        Rollout(8, (_call("actor"), _call("env"))),
        (
            Node(rl.ITERATION, (_call("replay"),)),
            Node(rl.rounds(2), (_call("replay", "sample"), _call("learner"))),
            Node(rl.every(4), (_call("target"),)),
        ),
    )
    assert schedule.step == ("actor", "env")
    assert schedule.lines() == [
        "iteration",
        "├─ rollout × 8 steps",
        "│  ├─ actor",
        "│  └─ env",
        "└─ after the rollout",
        "   ├─ every iteration",
        "   │  └─ replay",
        f"   ├─ {rl.rounds(2)}",
        "   │  ├─ replay.sample",
        "   │  └─ learner",
        f"   └─ {rl.every(4)}",
        "      └─ target",
    ]


def test_the_graph_builds_the_toy_schedule(toy):
    schedule = toy().graph.schedule
    assert schedule.rollout.length == 3 and schedule.step == ("actor", "env")
    (node,) = schedule.after
    assert node.cadence == rl.ITERATION and node.fragments == ("learner",)
