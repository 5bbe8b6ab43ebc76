"""Run the same PPO, same seed, under several fusion modes; compare speed and results.

python examples/compare_fusion.py --total-steps 20480 --modes step fragment iteration scan
"""

import argparse

import numpy as np

import jaxrl_fdg as rl
from jaxrl_fdg import testing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=51_200)
    parser.add_argument(
        "--modes",
        nargs="+",
        default=["step", "fragment", "iteration", "scan"],
        choices=rl.FUSION_MODES,
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    results = {}
    print(f"{'fusion':>10} {'compile s':>10} {'run s':>8} {'steps/s':>10} {'final return':>13}")
    for mode in args.modes:
        config = rl.TrainConfig(
            fusion=mode, total_steps=args.total_steps, seed=args.seed, out=None, progress=False
        )
        results[mode] = rl.train(config)
        s = results[mode].summary
        final = "—" if s["final_return"] is None else f"{s['final_return']:.1f}"
        print(
            f"{mode:>10} {s['compile_s']:>10.2f} {s['run_s']:>8.2f} "
            f"{s['steps_per_s']:>10,.0f} {final:>13}"
        )

    # testing.differences names the leaves of the final state and metrics whose bits differ:
    # none between compiled modes; eager, op by op, agrees to float32 rounding.
    last = args.modes[-1]
    reference = results[last]
    theirs = testing.leaves(reference.state.fragments["learner"].params)
    for mode, result in results.items():
        differ = testing.differences(result, reference)
        ours = testing.leaves(result.state.fragments["learner"].params)
        gap = max(float(np.max(np.abs(a - b))) for (_, a), (_, b) in zip(ours, theirs, strict=True))
        verdict = "the same bits" if not differ else f"{len(differ)} leaves differ"
        print(f"{mode} vs {last}: {verdict}, max |Δ parameter| {gap:.2e}")


if __name__ == "__main__":
    main()
