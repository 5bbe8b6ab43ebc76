"""The loop a resolved configuration describes, named after its spec, and what it declares that
is likely a mistake."""

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.fragments.algorithms import ppo
from jaxrl_fdg.run.build import build_loop, hazards, loop_source


def test_the_graph_is_named_after_the_spec_the_run_names():
    renamed = ppo.SPEC._replace(name="my-ppo")
    loop = build_loop(rl.resolve(testing.tiny("my-ppo"), renamed))
    assert loop.graph.name == "my-ppo"
    assert loop.graph.describe().startswith("graph my-ppo ")


def test_the_source_holds_each_lanes_swept_values():
    resolved = rl.resolve(testing.tiny(hparams={"lr": "1e-3,3e-4"}, num_seeds=2))
    source = loop_source(resolved)
    assert source.sweep == {"lr": (1e-3, 1e-3, 3e-4, 3e-4)}
    assert source.request.seeds == (0, 1, 0, 1) and source.population is None


def test_a_node_that_cannot_run_within_the_run_is_a_hazard():
    def aux(state, inputs, key):
        return state, {}

    frag = rl.fragment("aux", "transform", aux, inputs=("trajectory",), cadence=rl.every(5))
    spec = ppo.SPEC._replace(build=lambda ctx: ppo.build(ctx).with_fragments(frag))
    loop = build_loop(rl.resolve(testing.tiny(), spec))
    assert hazards(loop, 5) == []
    assert hazards(loop, 3) == [
        "aux runs every 5 iterations, and this run has 3 iterations: it never runs (raise "
        "--total-steps, or run it more often)"
    ]


def test_train_says_each_hazard_once(capsys):
    frag = rl.fragment(
        "shadow",
        "transform",
        lambda s, i, k: (s, {"params": 0}),
        inputs=("trajectory",),
        outputs=("params",),
    )
    spec = ppo.SPEC._replace(build=lambda ctx: ppo.build(ctx).with_fragments(frag))
    rl.train(testing.tiny(), spec)
    warned = [x for x in capsys.readouterr().err.splitlines() if "'shadow' writes" in x]
    assert len(warned) == 1 and warned[0].startswith("jaxrl-fdg: warning: 'shadow' writes")
