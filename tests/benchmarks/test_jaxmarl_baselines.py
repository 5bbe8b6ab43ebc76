"""benchmarks/jaxmarl_baselines.py without a JaxMARL checkout records nothing and says so; its
pairs are checked before anything runs."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "jaxmarl_baselines.py"


def _run(*args):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


def test_without_a_checkout_it_measures_nothing():
    proc = _run()
    assert proc.returncode == 0 and "nothing measured" in proc.stdout


def test_an_unknown_pair_is_refused_with_the_valid_ones(tmp_path):
    proc = _run("--jaxmarl-dir", str(tmp_path), "--pairs", "qmix_mpe")
    assert proc.returncode == 2 and "ippo_mpe, vdn_mpe" in proc.stderr


def test_one_out_file_for_pairs_of_two_results_files_is_refused(tmp_path):
    # The MPE pairs and the SMAX pair are recorded apart (two docs sections).
    proc = _run("--jaxmarl-dir", str(tmp_path), "--out", str(tmp_path / "x.json"))
    assert proc.returncode == 2 and "jaxmarl_baselines_mappo_smax.json" in proc.stderr
    assert not (tmp_path / "x.json").exists()
