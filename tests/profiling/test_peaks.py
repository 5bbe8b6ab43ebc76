"""Device roofs: the datasheet table, and the CPU's measured once and cached."""

import json

import pytest

from jaxrl_fdg.profiling import peaks


@pytest.mark.parametrize(
    "device_kind, name",
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA A10G", "A10"),
        ("Tesla T4", "T4"),
    ],
)
def test_gpu_kinds_find_their_datasheet(device_kind, name):
    assert peaks.gpu_spec(device_kind).name == name


def test_unlisted_kind_has_no_figures():
    assert peaks.gpu_spec("Some Future GPU") is None


def test_h100_figures_are_the_datasheets():
    spec = peaks.gpu_spec("NVIDIA H100 80GB HBM3")
    tf32 = spec.peak("tf32")
    # Dense TF32 494.5 TFLOP/s (989 with sparsity), HBM3 3.35 TB/s.
    assert tf32.flops_s == 494.5e12 and tf32.bytes_s == 3.35e12 and tf32.source == "datasheet"
    assert spec.peak("bf16").flops_s == 989.5e12


def test_cpu_peak_is_measured_once_and_cached(tmp_path, monkeypatch):
    calls = []

    def measure():
        calls.append(1)
        return 100e9, 80e9, 10e9

    monkeypatch.setattr(peaks, "measure_cpu", measure)
    path = tmp_path / "peaks.json"
    first = peaks.cpu_peak(path)
    second = peaks.cpu_peak(path)
    assert len(calls) == 1 and first == second
    assert first.flops_s == 100e9 and first.bytes_s == 80e9  # the faster of cache and memory
    assert "main memory 10.0 GB/s" in first.source
    entry = json.loads(path.read_text())[peaks.machine_key()]
    assert entry["memory_bytes_s"] == 10e9 and entry["cache_bytes_s"] == 80e9


def test_cpu_peak_default_cache_is_under_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert peaks.cache_path() == tmp_path / "jaxrl_fdg" / "peaks.json"


def test_a_damaged_cache_is_measured_again(tmp_path, monkeypatch):
    monkeypatch.setattr(peaks, "measure_cpu", lambda: (1e9, 2e9, 3e9))
    path = tmp_path / "peaks.json"
    path.write_text("{not json")
    assert peaks.cpu_peak(path).flops_s == 1e9
    assert peaks.machine_key() in json.loads(path.read_text())


def test_the_measurement_gives_positive_rates():
    flops, cache, memory = peaks.measure_cpu()
    assert flops > 0 and cache > 0 and memory > 0


def test_an_entry_measured_under_load_is_measured_again_once_the_load_falls(tmp_path, monkeypatch):
    rates = iter([(1e9, 2e9, 3e9), (5e9, 2e9, 3e9)])
    monkeypatch.setattr(peaks, "measure_cpu", lambda: next(rates))
    path = tmp_path / "peaks.json"
    monkeypatch.setattr(peaks.os, "getloadavg", lambda: (2.5, 0.0, 0.0))
    assert peaks.cpu_peak(path).flops_s == 1e9  # measured while something else ran
    monkeypatch.setattr(peaks.os, "getloadavg", lambda: (2.0, 0.0, 0.0))
    assert peaks.cpu_peak(path).flops_s == 1e9  # the load fell by less than RELOAD_BELOW
    monkeypatch.setattr(peaks.os, "getloadavg", lambda: (0.2, 0.0, 0.0))
    assert peaks.cpu_peak(path).flops_s == 5e9  # quiet now: measured again, and kept
    assert json.loads(path.read_text())[peaks.machine_key()]["load"] == 0.2
