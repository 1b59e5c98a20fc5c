"""``python -m benchmarks.cluster`` without a cluster: clear errors, and how applications connect to one."""

import json

import pytest

from benchmarks.cluster import ClusterError, ClusterSpec, conf_for_master, up
from benchmarks.cluster.__main__ import main

STATE = {"master": "spark://10.213.7.1:7077", "gateway": "10.213.7.1", "network": "netns", "ui": "http://x",
         "spec": {"hosts": 3, "executors_per_host": 2, "executor_memory_mb": 1024, "apps": 3},
         "hosts": [], "skipped": {}}


@pytest.fixture
def cluster_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKRM_CLUSTER_DIR", str(tmp_path / "cluster"))
    return tmp_path / "cluster"


@pytest.mark.parametrize("command", ["status", "url"])
def test_asking_about_a_cluster_that_is_not_up_says_how_to_start_one(cluster_dir, command, capsys):
    assert main([command]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: no emulated cluster is up") and "`python -m benchmarks.cluster up`" in err


def test_down_without_a_cluster_is_harmless(cluster_dir, capsys):
    assert main(["down"]) == 0
    assert "no emulated cluster is up" in capsys.readouterr().err


@pytest.mark.parametrize("spec", [ClusterSpec(hosts=0), ClusterSpec(executors_per_host=0), ClusterSpec(iops=-1),
                                  ClusterSpec(apps=0)])
def test_impossible_sizes_are_refused_before_anything_starts(cluster_dir, spec):
    with pytest.raises(ClusterError, match="must be >= 1"):
        up(spec, cluster_dir, log=lambda _: None)
    assert not (cluster_dir / "state.json").exists()


def test_applications_get_the_clusters_settings_only_for_its_own_master(cluster_dir):
    cluster_dir.mkdir()
    (cluster_dir / "state.json").write_text(json.dumps(STATE))
    conf = conf_for_master("spark://10.213.7.1:7077")
    assert conf == {"spark.driver.host": "10.213.7.1", "spark.driver.bindAddress": "10.213.7.1",
                    "spark.executor.cores": "1", "spark.executor.memory": "1024m", "spark.cores.max": "6",
                    "spark.scheduler.minRegisteredResourcesRatio": "1.0",
                    "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s"}
    assert conf_for_master("spark://elsewhere:7077") == {} and conf_for_master(None) == {}


def test_a_host_holds_its_executors_for_every_application_and_shares_the_machines_cpus():
    spec = ClusterSpec(hosts=4, executors_per_host=2, executor_memory_mb=1000, apps=3)
    assert spec.slots() == 6 and spec.memory_mb() == 6 * (1000 + 640) + 512
    assert ClusterSpec(hosts=2, cpus_per_host=1.5).cpus() == 1.5
