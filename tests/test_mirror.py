"""The tests mirror the packages (docs/contributing.md): every module of ``jaxrl_fdg.core``,
``policies``, ``run`` and ``tuning`` has its test file, ``tests/<package>/test_<module>.py``."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIRRORED = ("core", "policies", "run", "tuning")


def modules(package: str) -> list[str]:
    return sorted(
        p.stem for p in (ROOT / "jaxrl_fdg" / package).glob("*.py") if p.stem != "__init__"
    )


def missing(root: Path = ROOT) -> list[str]:
    """The test files the mirrored packages' modules lack, as paths from ``root``."""
    wanted = [f"tests/{package}/test_{m}.py" for package in MIRRORED for m in modules(package)]
    return [path for path in wanted if not (root / path).is_file()]


def test_every_mirrored_package_has_modules():
    assert all(modules(package) for package in MIRRORED)
    assert "runner" in modules("run") and "step" in modules("core")


def test_a_module_without_its_test_file_is_named(tmp_path):
    (tmp_path / "tests" / "core").mkdir(parents=True)
    (tmp_path / "tests" / "core" / "test_step.py").write_text("")
    found = missing(tmp_path)
    assert "tests/core/test_step.py" not in found
    assert "tests/core/test_loop.py" in found and "tests/run/test_runner.py" in found


def test_every_module_has_its_test_file():
    assert not missing(), "modules without their test file: " + ", ".join(missing())
