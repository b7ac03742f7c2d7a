"""The resource model: the memory budget from stubbed /proc, cgroup files and rlimits."""

from __future__ import annotations

import resource

import pytest

import rankmetric
from rankmetric.resources import (
    ENV_VAR,
    check_memory,
    format_bytes,
    memory_budget,
    memory_limit,
    parse_bytes,
    set_memory_limit,
)

GiB = 1 << 30
UNLIMITED = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)


def _no_rlimits(kind):
    return UNLIMITED


def _fake_proc(tmp_path, *, available_kb=16 * 2**20, vmsize_kb=2**20, vmdata_kb=2**19, cgroup=""):
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(
        f"MemTotal:       {4 * available_kb} kB\nMemFree:         1000 kB\n"
        f"MemAvailable:   {available_kb} kB\n"
    )
    (proc / "self" / "status").write_text(
        f"Name:\tpython\nVmPeak:\t{vmsize_kb} kB\nVmSize:\t{vmsize_kb} kB\n"
        f"VmData:\t{vmdata_kb} kB\nVmRSS:\t1000 kB\n"
    )
    (proc / "self" / "cgroup").write_text(cgroup)
    return proc


def _budget(proc, root, getrlimit=_no_rlimits):
    return memory_budget(proc=proc, cgroup_root=root, getrlimit=getrlimit, environ={})


def test_available_memory_alone(tmp_path):
    proc = _fake_proc(tmp_path, available_kb=3 * 2**20)
    budget = _budget(proc, tmp_path / "none")
    assert budget.bytes == 3 * GiB
    assert budget.source == "available memory"


def test_rlimit_as_headroom_is_the_limit_minus_the_address_space_in_use(tmp_path):
    proc = _fake_proc(tmp_path, vmsize_kb=2**20)  # 1 GiB mapped

    def getrlimit(kind):
        return (4 * GiB, 8 * GiB) if kind == resource.RLIMIT_AS else UNLIMITED

    budget = _budget(proc, tmp_path / "none", getrlimit)
    assert budget.bytes == 3 * GiB
    assert budget.source == "RLIMIT_AS headroom"


def test_rlimit_data_headroom(tmp_path):
    proc = _fake_proc(tmp_path, vmdata_kb=2**19)  # 0.5 GiB of data segment

    def getrlimit(kind):
        return (GiB, GiB) if kind == resource.RLIMIT_DATA else UNLIMITED

    budget = _budget(proc, tmp_path / "none", getrlimit)
    assert budget.bytes == GiB // 2
    assert budget.source == "RLIMIT_DATA headroom"


def test_an_exhausted_rlimit_gives_zero_not_a_negative_budget(tmp_path):
    proc = _fake_proc(tmp_path, vmsize_kb=5 * 2**20)

    def getrlimit(kind):
        return (4 * GiB, 4 * GiB) if kind == resource.RLIMIT_AS else UNLIMITED

    assert _budget(proc, tmp_path / "none", getrlimit).bytes == 0


def test_cgroup_v2_headroom_counts_reclaimable_cache_as_free(tmp_path):
    root = tmp_path / "cgroup"
    group = root / "user.slice" / "job"
    group.mkdir(parents=True)
    (group / "memory.max").write_text(f"{2 * GiB}\n")
    (group / "memory.current").write_text(f"{GiB}\n")
    (group / "memory.stat").write_text(f"anon 123\ninactive_file {GiB // 4}\n")
    (root / "user.slice" / "memory.max").write_text("max\n")
    (root / "cgroup.controllers").write_text("cpu memory\n")
    proc = _fake_proc(tmp_path, cgroup="0::/user.slice/job\n")
    budget = _budget(proc, root)
    assert budget.bytes == GiB + GiB // 4
    assert budget.source == "cgroup v2 memory.max headroom"


def test_cgroup_v2_limit_of_an_ancestor_counts(tmp_path):
    root = tmp_path / "cgroup"
    group = root / "parent" / "child"
    group.mkdir(parents=True)
    (group / "memory.max").write_text("max\n")
    (group / "memory.current").write_text(f"{GiB}\n")
    (root / "parent" / "memory.max").write_text(f"{GiB + GiB // 2}\n")
    (root / "parent" / "memory.current").write_text(f"{GiB}\n")
    (root / "cgroup.controllers").write_text("memory\n")
    proc = _fake_proc(tmp_path, cgroup="0::/parent/child\n")
    assert _budget(proc, root).bytes == GiB // 2


def test_cgroup_v1_memory_controller(tmp_path):
    root = tmp_path / "cgroup"
    group = root / "memory" / "docker" / "abc"
    group.mkdir(parents=True)
    (group / "memory.limit_in_bytes").write_text(f"{GiB}\n")
    (group / "memory.usage_in_bytes").write_text(f"{GiB // 2}\n")
    (group / "memory.stat").write_text(f"cache 10\ntotal_inactive_file {GiB // 8}\n")
    (root / "memory" / "docker" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    (root / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    cgroup = "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n"
    proc = _fake_proc(tmp_path, cgroup=cgroup)
    budget = _budget(proc, root)
    assert budget.bytes == GiB // 2 + GiB // 8
    assert budget.source == "cgroup v1 memory.limit_in_bytes headroom"


def test_cgroup_path_hidden_by_a_namespace_reads_the_mount_root(tmp_path):
    """In a container the listed path may not exist under the mount: its root is the group."""
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("memory\n")
    (root / "memory.max").write_text(f"{GiB}\n")
    (root / "memory.current").write_text("0\n")
    proc = _fake_proc(tmp_path, cgroup="0::/kubepods/pod1/container\n")
    assert _budget(proc, root).bytes == GiB


def test_the_smallest_bound_wins_and_all_are_reported(tmp_path):
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("memory\n")
    (root / "memory.max").write_text(f"{2 * GiB}\n")
    (root / "memory.current").write_text("0\n")
    proc = _fake_proc(tmp_path, available_kb=8 * 2**20, vmsize_kb=0, cgroup="0::/\n")

    def getrlimit(kind):
        return (3 * GiB, 3 * GiB) if kind == resource.RLIMIT_AS else UNLIMITED

    budget = _budget(proc, root, getrlimit)
    assert budget.bytes == 2 * GiB
    assert set(budget.sources) == {
        "available memory",
        "RLIMIT_AS headroom",
        "cgroup v2 memory.max headroom",
    }
    assert "2.0 GiB (cgroup v2 memory.max headroom)" == budget.describe()


def test_unreadable_files_are_skipped(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    budget = _budget(empty, empty)
    assert budget.bytes is None or budget.bytes >= 0  # sysconf fallback or nothing


def test_environment_override(tmp_path):
    proc = _fake_proc(tmp_path)
    budget = memory_budget(proc=proc, cgroup_root=tmp_path, environ={ENV_VAR: "512MiB"})
    assert (budget.bytes, budget.source) == (512 << 20, ENV_VAR)
    with pytest.raises(ValueError, match=ENV_VAR):
        memory_budget(proc=proc, cgroup_root=tmp_path, environ={ENV_VAR: "lots"})


def test_environment_override_is_read_by_default(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "3G")
    assert memory_budget().bytes == 3 * GiB


def test_context_manager_overrides_the_environment_and_restores(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "3G")
    with rankmetric.memory_limit("1G"):
        assert memory_budget().bytes == GiB
        with memory_limit(None):
            assert memory_budget().bytes == 3 * GiB
        assert memory_budget().bytes == GiB
    assert memory_budget().bytes == 3 * GiB
    set_memory_limit(5 * GiB)
    try:
        assert memory_budget().bytes == 5 * GiB
    finally:
        set_memory_limit(None)
    assert memory_budget().bytes == 3 * GiB


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (4000000000, 4000000000),
        ("4000000000", 4000000000),
        ("4G", 4 * GiB),
        ("4 GiB", 4 * GiB),
        ("4GB", 4 * 10**9),
        ("1.5k", 1536),
        ("0", 0),
    ],
)
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "-1G", "4 potatoes", "inf", True, float("nan")])
def test_parse_bytes_refuses_non_sizes(text):
    with pytest.raises(ValueError, match="memory size"):
        parse_bytes(text)


def test_check_memory_names_estimate_budget_source_and_advice():
    with memory_limit("1G"):
        check_memory(GiB, "a thing", "Do less.")
        with pytest.raises(ValueError) as info:
            check_memory(3 * GiB, "A 3 GiB thing", "Use a subsample.")
    message = str(info.value)
    for part in ("A 3 GiB thing", "3.0 GiB", "1.0 GiB (rankmetric.memory_limit)", "subsample"):
        assert part in message
    assert ENV_VAR in message


def test_format_bytes():
    assert format_bytes(512) == "512 B"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(3 * GiB) == "3.0 GiB"


def test_this_process_has_a_budget():
    budget = memory_budget()
    assert budget.bytes is None or budget.bytes > 0


def test_hybrid_hierarchy_reads_v2_under_unified(tmp_path):
    """systemd's hybrid layout: v1 controllers under /sys/fs/cgroup, v2 at .../unified."""
    root = tmp_path / "cgroup"
    unified = root / "unified" / "app"
    unified.mkdir(parents=True)
    (root / "unified" / "cgroup.controllers").write_text("")
    (unified / "memory.max").write_text(f"{GiB}\n")
    (unified / "memory.current").write_text(f"{GiB // 4}\n")
    proc = _fake_proc(tmp_path, cgroup="0::/app\n")
    assert _budget(proc, root).bytes == GiB - GiB // 4
