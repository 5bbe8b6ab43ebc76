"""How a graph is derived from its fragments: here, the declarations that build but are likely
mistakes (the graph's hazards). The cadences, order and edges are tests/core/test_graph.py's and
tests/core/test_cadence.py's."""

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve


def _ppo_loop(**changes):
    return rl.build_loop(resolve(rl.TrainConfig(out=None, **changes)))


def test_likely_mistakes_are_named_as_hazards():
    loop = _ppo_loop(num_envs=2, rollout_len=4)
    assert loop.graph.hazards == ()
    # An output named like what the learner publishes, written without being read: the actor
    # reads the learner's params, others this one's.
    shadow = rl.fragment(
        "shadow",
        "transform",
        lambda s, i, k: (s, {"params": 0}),
        inputs=("trajectory",),
        outputs=("params",),
    )  # noqa: E501
    looped = rl.make_loop(loop.info.env, loop_algorithm(loop).with_fragments(shadow), 4)
    (hazard,) = looped.graph.hazards
    assert hazard.startswith("'shadow' writes 'params', which 'learner' publishes")
    # The same edge written after the rollout and every 2 iterations: each node's readers see
    # only their own node's value.
    one = rl.fragment(
        "one",
        "transform",
        lambda s, i, k: (s, {"note": 1}),
        inputs=("trajectory",),
        outputs=("note",),
    )  # noqa: E501
    two = one._replace(name="two", cadence=rl.every(2))
    looped = rl.make_loop(loop.info.env, loop_algorithm(loop).with_fragments(one, two), 4)
    assert looped.graph.hazards == (
        "edge 'note' is written by 'one' in 'every iteration' and 'two' in 'every 2 iterations':"
        " each node's readers see only their own node's value (rename one of them)",
    )


def loop_algorithm(loop):
    return rl.Algorithm("x", loop.info.actor, loop.info.learner)


def test_two_nodes_that_print_alike_are_still_two_nodes_to_the_hazard_check():
    # Two conditions alike in name but not the same object make two nodes that print alike.
    def ready():
        return rl.condition(lambda edges: edges["env_steps"] > 0, ("env_steps",), "ready")

    loop = _ppo_loop(num_envs=2, rollout_len=4)
    one = rl.fragment(
        "one",
        "transform",
        lambda s, i, k: (s, {"note": 1}),
        inputs=("env_steps",),
        outputs=("note",),
        cadence=rl.rounds(2, when=ready()),
    )
    two = one._replace(name="two", cadence=rl.rounds(2, when=ready()))
    looped = rl.make_loop(loop.info.env, loop_algorithm(loop).with_fragments(one, two), 4)
    nodes = [str(n.cadence) for n in looped.graph.schedule.after]
    assert nodes.count("2 rounds per iteration, when ready") == 2
    assert [h for h in looped.graph.hazards if h.startswith("edge 'note'")] == [
        "edge 'note' is written by 'one' in '2 rounds per iteration, when ready' and 'two' in "
        "'2 rounds per iteration, when ready': each node's readers see only their own node's "
        "value (rename one of them)"
    ]
