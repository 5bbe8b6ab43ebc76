"""Where does the time go? Profile PPO in `trace` mode and add a scope of your own.

`trace` runs a jax.profiler window of a few iterations and splits the device time of the fused
program by fragment (env / actor / learner) through the named scopes in the compiled program.
Your own host-side work can be timed with `profiling.scope`, as a context manager or decorator.

    python examples/profiling.py --total-steps 51200
"""

import argparse
import json
import time

import jaxrl_fdg as rl
from jaxrl_fdg import profiling
from jaxrl_fdg.profiling import Timings


@profiling.scope("my_host_work")
def summarise_somewhere_else(seconds: float) -> None:
    time.sleep(seconds)  # stands in for host work you want to see in the table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=51_200)
    parser.add_argument("--out", default="runs")
    args = parser.parse_args()

    config = rl.TrainConfig(
        total_steps=args.total_steps, profile="trace", out=args.out, progress=False
    )
    result = rl.train(config, print_summary=True)
    profile = json.loads((result.run_dir / "profile.json").read_text())
    shares = profile["device_by_scope"]["device_exclusive_s"]
    total = sum(shares.values())
    print("device time by fragment:", {k: f"{v / total:.0%}" for k, v in shares.items()})
    print("files:", sorted(p.name for p in result.run_dir.iterdir()))

    timings = Timings("host")  # your own timings, outside a training run
    with timings.scope("outer"):
        summarise_somewhere_else(0.01)
    print("my_host_work host seconds:", round(timings.scopes["my_host_work"].host, 4))


if __name__ == "__main__":
    main()
