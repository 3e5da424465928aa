"""The Kubernetes manifests: they parse, and what they say agrees with grstats and each other.

The agent's and the collector's args are parsed by grstats's own parser, with ``$(POD_NAME)``
filled in as the kubelet does, and the agent's config is the ConfigMap's TOML loaded through
agent.config with the pod's secrets (real certificates) under a temporary root.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import signal
import subprocess
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from grstats._version import RELEASE
from grstats.cli.agent import config_from, run_agent
from grstats.cli.collector import metrics_address, settings_from
from grstats.cli.collector import run as run_collect
from grstats.cli.security import client_security
from grstats.core.address import split_address
from tests.deploy.files import (
    DEPLOY,
    INSTALLED_GRSTATS,
    KUBERNETES,
    configmap_toml,
    manifest,
    parse_grstats,
    under,
    yaml_documents,
)

KINDS = {
    "mysql-grstats.yaml": ["Service", "ConfigMap", "ConfigMap", "StatefulSet"],
    "collector.yaml": ["PersistentVolumeClaim", "Deployment"],
    "monitoring.yaml": ["PodMonitor", "PodMonitor"],
}
#: The API group and version of each kind.
API_VERSIONS = {
    "Service": "v1",
    "ConfigMap": "v1",
    "PersistentVolumeClaim": "v1",
    "StatefulSet": "apps/v1",
    "Deployment": "apps/v1",
    "PodMonitor": "monitoring.coreos.com/v1",
}
#: deploy/'s folders whose YAML files (rules, their tests, provisioning) other tests check.
CHECKED_ELSEWHERE = frozenset({"prometheus", "grafana", "alertmanager"})
#: The workloads whose pods serve /metrics: (kind, name, container).
SCRAPED = (
    ("StatefulSet", "mysql", "grstats"),
    ("Deployment", "grstats-collector", "collector"),
)
#: Image tags name the release (a tag cannot hold a development version's ``+``).
IMAGE = f"registry.example.net/grstats:{RELEASE}"
SPARK_IMAGE = f"registry.example.net/grstats-spark:{RELEASE}"
DOCKERFILE = DEPLOY / "container" / "Dockerfile"


def dockerfile_stages() -> dict[str, list[str]]:
    """The Dockerfile's instructions by stage (``FROM ... AS name``), in order.

    Comments and blank lines are left out and continued lines joined, as docker reads them.
    """
    stages: dict[str, list[str]] = {}
    joined = re.sub(r"\s*\\\n\s*", " ", DOCKERFILE.read_text(encoding="utf-8"))
    for line in joined.splitlines():
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        start = re.fullmatch(r"FROM \S+ AS (\S+)", text)
        if start is not None:
            stages[start[1]] = []
        assert stages, f"Dockerfile: {text!r} comes before the first FROM ... AS"
        stages[next(reversed(stages))].append(text)
    return stages


def build_commands() -> list[list[str]]:
    """The ``docker build`` commands the Dockerfile's header gives, as words."""
    header = re.sub(r"\s*\\\n#\s*", " ", DOCKERFILE.read_text(encoding="utf-8"))
    return [
        line.removeprefix("#").split()
        for line in header.splitlines()
        if line.removeprefix("#").strip().startswith("docker build")
    ]


def installed(stage: list[str]) -> str:
    """What the stage's one ``pip install`` installs into /opt/grstats, as written."""
    (found,) = [
        match[1]
        for line in stage
        for match in re.finditer(r"/opt/grstats/bin/pip install --no-cache-dir (\S+)", line)
    ]
    return found


def pod_spec(kind: str, name: str) -> dict[str, Any]:
    """The pod template's spec of a workload."""
    spec = manifest(kind, name)["spec"]["template"]["spec"]
    assert isinstance(spec, dict)
    return spec


def container(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """The container ``name`` of a pod spec."""
    found: list[dict[str, Any]] = [c for c in spec["containers"] if c["name"] == name]
    assert len(found) == 1, f"no container {name}"
    return found[0]


def port_of(container_: dict[str, Any], name: str) -> int:
    """The containerPort named ``name``."""
    ports = {port["name"]: port["containerPort"] for port in container_["ports"]}
    return int(ports[name])


def expand(words: list[str], environment: dict[str, str]) -> list[str]:
    """``words`` with ``$(VAR)`` replaced as the kubelet does for a container's args."""
    return [re.sub(r"\$\(([A-Z_]+)\)", lambda m: environment[m.group(1)], w) for w in words]


def pod_names() -> list[str]:
    """The StatefulSet's pod names: mysql-0, mysql-1, ..."""
    statefulset = manifest("StatefulSet", "mysql")
    return [f"mysql-{i}" for i in range(statefulset["spec"]["replicas"])]


def mounted_source(spec: dict[str, Any], container_: dict[str, Any], path: str) -> tuple[str, str]:
    """The volume source of ``path`` in ``container_``: (``secret``/``configMap``/..., key)."""
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    for mount in container_["volumeMounts"]:
        mounted = PurePosixPath(mount["mountPath"])
        if PurePosixPath(path).is_relative_to(mounted) and PurePosixPath(path) != mounted:
            volume = volumes[mount["name"]]
            source = next(key for key in volume if key != "name")
            inside = str(PurePosixPath(path).relative_to(mounted))
            if source == "secret":
                return f"secret/{volume['secret']['secretName']}", inside
            if source == "configMap":
                return f"configMap/{volume['configMap']['name']}", inside
            return source, inside
    pytest.fail(f"{path} is on no volume of container {container_['name']}")


@pytest.mark.parametrize("name", sorted(KINDS))
def test_manifest_parses_with_the_expected_kinds(name: str) -> None:
    """Each manifest is YAML of the expected kinds, each with apiVersion and a name."""
    documents = yaml_documents(KUBERNETES / name)
    assert [document["kind"] for document in documents] == KINDS[name]
    for document in documents:
        assert document["apiVersion"] == API_VERSIONS[document["kind"]]
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", document["metadata"]["name"])


def test_every_manifest_is_checked() -> None:
    """No YAML file in deploy/ is left out of these tests but those other tests check."""
    found = {
        path.relative_to(DEPLOY)
        for path in DEPLOY.rglob("*.y*ml")
        if path.relative_to(DEPLOY).parts[0] not in CHECKED_ELSEWHERE
    }
    assert found == {Path("kubernetes", name) for name in KINDS}


def test_images() -> None:
    """Both workloads run the image of this grstats version, built by the Dockerfile's user."""
    agent = container(pod_spec("StatefulSet", "mysql"), "grstats")
    collector = container(pod_spec("Deployment", "grstats-collector"), "collector")
    assert agent["image"] == collector["image"] == IMAGE
    project = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["dynamic"] == ["version"]  # git's (grstats._version)
    mysql = container(pod_spec("StatefulSet", "mysql"), "mysql")
    assert mysql["image"] == "mysql:8.0"
    sidecar = dockerfile_stages()["sidecar"]
    assert f'ENTRYPOINT ["{INSTALLED_GRSTATS}"]' in sidecar
    assert ["docker", "build", "-f", "deploy/container/Dockerfile", "-t", IMAGE, "."] in (
        build_commands()
    )
    (user,) = [
        re.fullmatch(r"USER (\d+):(\d+)", line) for line in sidecar if line.startswith("USER")
    ]
    assert user is not None
    for running in (agent, collector):
        context = running["securityContext"]
        assert (context["runAsUser"], context["runAsGroup"]) == (int(user[1]), int(user[2]))
        assert context["readOnlyRootFilesystem"] is True
        assert context["capabilities"]["drop"] == ["ALL"]
        assert running["resources"]["limits"]["memory"]


def test_the_sidecar_image_has_no_spark() -> None:
    """The default stage (the last) installs grstats without the spark extra, and no Java."""
    stages = dockerfile_stages()
    assert list(stages) == ["base", "spark", "sidecar"]  # a build without --target: sidecar
    sidecar = stages["sidecar"]
    assert installed(sidecar) == "/src"
    for line in stages["base"] + sidecar:
        assert "[spark]" not in line
        assert not re.search(r"java|jre|jdk|temurin", line, re.IGNORECASE), line
    assert not [line for line in stages["base"] if "pip" in line]
    assert "EXPOSE 7400 9474 9475" in sidecar  # agent gRPC, agent and collector metrics


def test_the_spark_image_has_the_extra_and_java_17() -> None:
    """Stage spark installs grstats[spark] on a Java 17 runtime, as the same user and entrypoint."""
    stages = dockerfile_stages()
    spark = stages["spark"]
    assert (spark[0], stages["sidecar"][0]) == ("FROM base AS spark", "FROM base AS sidecar")
    assert "ENV JAVA_HOME=/opt/java/openjdk" in spark
    assert "COPY --from=eclipse-temurin:17-jre $JAVA_HOME $JAVA_HOME" in spark
    assert "ENV PATH=$JAVA_HOME/bin:$PATH" in spark
    assert installed(spark) == "'/src[spark]'"
    project = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text(encoding="utf-8"))
    extra = project["project"]["optional-dependencies"]["spark"]
    assert {re.split(r"[<>=!~ ]", requirement)[0] for requirement in extra} == {
        "pyspark",
        "pyarrow",
        "deltalake",
    }
    assert f'ENTRYPOINT ["{INSTALLED_GRSTATS}"]' in spark
    users = [line for line in spark + stages["sidecar"] if line.startswith("USER")]
    assert users == ["USER 10001:10001"] * 2
    spark_build = [
        "docker",
        "build",
        "-f",
        "deploy/container/Dockerfile",
        "--target",
        "spark",
        "-t",
        SPARK_IMAGE,
        ".",
    ]
    assert spark_build in build_commands()


def test_headless_service_fronts_the_statefulset() -> None:
    """The Service is headless, selects the pods, and carries every port their containers open."""
    service = manifest("Service", "mysql-gr")
    statefulset = manifest("StatefulSet", "mysql")
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert statefulset["spec"]["serviceName"] == "mysql-gr"
    labels = statefulset["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert statefulset["spec"]["selector"]["matchLabels"].items() <= labels.items()
    served = {port["name"]: port["port"] for port in service["spec"]["ports"]}
    for running in pod_spec("StatefulSet", "mysql")["containers"]:
        for port in running["ports"]:
            assert served[port["name"]] == port["containerPort"]


@pytest.mark.parametrize("pod", ["mysql-0", "mysql-2"])
def test_agent_args_and_configmap_load(pod: str, pod_root: Path) -> None:
    """The sidecar's args parse and load the ConfigMap's TOML; ports and peers agree."""
    spec = pod_spec("StatefulSet", "mysql")
    agent = container(spec, "grstats")
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in agent[
        "env"
    ]
    args = parse_grstats(
        under(pod_root, " ".join(expand(agent["args"], {"POD_NAME": pod}))).split()
    )
    assert args.handler is run_agent
    configured = Path(under(pod_root, "/etc/grstats/config/agent.toml"))
    assert args.config == configured
    assert mounted_source(spec, agent, "/etc/grstats/config/agent.toml") == (
        "configMap/grstats-agent",
        "agent.toml",
    )
    configured.write_text(under(pod_root, configmap_toml()), encoding="utf-8")
    config = config_from(args)

    _, gossip = split_address(config.listen)
    assert gossip == port_of(agent, "grstats")
    assert config.metrics_listen is not None
    _, metrics = split_address(config.metrics_listen)
    assert metrics == port_of(agent, "metrics")
    assert agent["readinessProbe"]["httpGet"] == {"path": "/metrics", "port": "metrics"}
    assert agent["livenessProbe"]["tcpSocket"] == {"port": "grstats"}
    peers = [f"{name}.mysql-gr:{gossip}" for name in pod_names()]
    assert list(config.peers) == peers
    assert config.advertised == f"{pod}.mysql-gr:{gossip}"
    assert config.mysql is not None
    assert config.mysql.host == "127.0.0.1"
    assert config.tls is not None
    assert config.tls.require_client_cert
    assert config.state_dir == pod_root / "var/lib/grstats"


def test_agent_files_come_from_the_right_volumes() -> None:
    """Every file the sidecar's config names is on the volume of the secret that holds it."""
    spec = pod_spec("StatefulSet", "mysql")
    agent = container(spec, "grstats")
    toml = tomllib.loads(configmap_toml())
    expected = {
        toml["token_file"]: ("secret/grstats-token", "token"),
        toml["mysql"]["password_file"]: ("secret/grstats-mysql", "password"),
        toml["tls"]["ca_file"]: ("secret/grstats-tls", "ca.pem"),
        "/etc/grstats/tls/mysql-0.pem": ("secret/grstats-tls", "mysql-0.pem"),
        toml["mysql"]["ssl_ca"]: ("emptyDir", "ca.pem"),
        toml["state_dir"] + "/registry": ("emptyDir", "registry"),
    }
    for path, source in expected.items():
        assert mounted_source(spec, agent, path) == source, path
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    group = spec["securityContext"]["fsGroup"]
    assert agent["securityContext"]["runAsGroup"] == group
    for mount in agent["volumeMounts"]:
        secret = volumes.get(mount["name"], {}).get("secret")
        if secret is not None:
            assert secret["defaultMode"] & 0o040, f"{mount['name']}: not readable by the agent"
    mysql = container(spec, "mysql")
    # The image's entrypoint runs as user mysql without the pod's fsGroup (gosu).
    for mount in mysql["volumeMounts"]:
        secret = volumes.get(mount["name"], {}).get("secret")
        if secret is not None:
            assert secret["defaultMode"] & 0o004, f"{mount['name']}: not readable by mysql"
    assert (
        mounted_source(spec, mysql, toml["mysql"]["password_file"])
        == expected[toml["mysql"]["password_file"]]
    )
    assert mounted_source(spec, mysql, toml["mysql"]["ssl_ca"])[0] == "emptyDir"
    copy = mysql["lifecycle"]["postStart"]["exec"]["command"]
    assert "cp /var/lib/mysql/ca.pem " + toml["mysql"]["ssl_ca"] in copy[2]


def test_collector_args_parse_and_ask_every_agent(pod_root: Path) -> None:
    """The collector's args parse, name every agent, and its client certificate loads."""
    spec = pod_spec("Deployment", "grstats-collector")
    collector = container(spec, "collector")
    args = parse_grstats(collector["args"])
    assert args.handler is run_collect
    peers = tomllib.loads(configmap_toml())["peers"]
    assert args.node == peers
    settings_from(args)
    for flag in ("tls_ca", "tls_cert", "tls_key", "token_file"):
        source = mounted_source(spec, collector, getattr(args, flag))
        assert source[0] in {"secret/grstats-client-tls", "secret/grstats-token"}, flag
    assert mounted_source(spec, collector, args.spool)[0] == "persistentVolumeClaim"
    security = client_security(parse_grstats(under(pod_root, " ".join(args_of(collector))).split()))
    assert security.tls is not None
    assert security.token is not None
    deployment = manifest("Deployment", "grstats-collector")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"]["type"] == "Recreate"


def args_of(container_: dict[str, Any]) -> list[str]:
    """A container's args as strings."""
    return [str(arg) for arg in container_["args"]]


def test_init_sql_is_the_deploy_sql_file() -> None:
    """The ConfigMap's SQL is deploy/mysql/grstats-user.sql, word for word."""
    data = manifest("ConfigMap", "mysql-gr")["data"]
    assert data["grstats-user.sql.txt"] == (DEPLOY / "mysql" / "grstats-user.sql").read_text(
        encoding="utf-8"
    )


def shell_scripts() -> list[tuple[str, str, str]]:
    """Every shell script inside the manifests: (where, shell, text)."""
    spec = pod_spec("StatefulSet", "mysql")
    scripts = [
        (f"{c['name']} command", c["command"][0], c["command"][2])
        for c in [*spec["initContainers"], *spec["containers"]]
        if c.get("command", [""])[0] in {"sh", "bash"}
    ]
    copy = container(spec, "mysql")["lifecycle"]["postStart"]["exec"]["command"]
    scripts.append(("mysql postStart", copy[0], copy[2]))
    data = manifest("ConfigMap", "mysql-gr")["data"]
    scripts.append(("10-grstats-user.sh", "bash", data["10-grstats-user.sh"]))
    return scripts


@pytest.mark.parametrize("embedded", shell_scripts(), ids=lambda embedded: embedded[0])
def test_embedded_scripts_parse(embedded: tuple[str, str, str]) -> None:
    """Each script in the manifests passes its shell's syntax check (sh -n, bash -n)."""
    where, shell, script = embedded
    program = shutil.which(shell)
    assert program is not None, f"{shell} is not installed"
    done = subprocess.run(
        [program, "-n", "-c", script], capture_output=True, text=True, check=False, timeout=30
    )
    assert done.returncode == 0, f"{where}: {done.stderr}"


def test_sidecar_waits_for_its_certificate_then_runs_grstats(
    pod_root: Path, tmp_path: Path
) -> None:
    """The sidecar's wrapper waits for the pod's certificate, then execs grstats with the args."""
    agent = container(pod_spec("StatefulSet", "mysql"), "grstats")
    command = [under(tmp_path, word) for word in agent["command"]]
    fake = tmp_path / "bin" / "grstats"
    fake.parent.mkdir()
    record = tmp_path / "argv"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n', encoding="utf-8")
    fake.chmod(0o755)
    environment = {
        **os.environ,
        "PATH": f"{fake.parent}:{os.environ['PATH']}",
        "POD_NAME": "mysql-1",
    }
    args = expand(args_of(agent), {"POD_NAME": "mysql-1"})
    waiting = subprocess.Popen(
        [*command, *args],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own group: killed with the sleep it waits in
    )
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            waiting.wait(1.5)
        assert not record.exists()
    finally:
        os.killpg(waiting.pid, signal.SIGKILL)
        output, _ = waiting.communicate()
    assert b"waiting for " in output
    shutil.copytree(pod_root / "etc", tmp_path / "etc")
    shutil.copytree(pod_root / "var", tmp_path / "var")
    done = subprocess.run([*command, *args], env=environment, check=False, timeout=30)
    assert done.returncode == 0
    assert record.read_text(encoding="utf-8").splitlines() == args


def test_mysql_copies_its_ca_for_the_agent(tmp_path: Path) -> None:
    """The mysql container's postStart hook copies the data directory's CA where the agent reads it."""
    mysql = container(pod_spec("StatefulSet", "mysql"), "mysql")
    command = mysql["lifecycle"]["postStart"]["exec"]["command"]
    script = command[2].replace("/var/lib/mysql/", f"{tmp_path}/data/")
    script = script.replace("/var/run/mysql-ca/", f"{tmp_path}/ca/")
    (tmp_path / "data").mkdir()
    (tmp_path / "ca").mkdir()
    (tmp_path / "data" / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n", encoding="utf-8")
    done = subprocess.run([command[0], "-c", script], check=False, timeout=30)
    assert done.returncode == 0
    assert (tmp_path / "ca" / "ca.pem").read_bytes() == (tmp_path / "data" / "ca.pem").read_bytes()


#: The Kubernetes API's field names these manifests may use (a misspelt one is ignored or
#: refused by the API server, which these tests do not have).
CONTAINER_FIELDS = {
    "name",
    "image",
    "command",
    "args",
    "env",
    "ports",
    "readinessProbe",
    "livenessProbe",
    "lifecycle",
    "resources",
    "securityContext",
    "volumeMounts",
}
POD_FIELDS = {
    "terminationGracePeriodSeconds",
    "securityContext",
    "initContainers",
    "containers",
    "volumes",
}


@pytest.mark.parametrize(
    ("kind", "name"), [("StatefulSet", "mysql"), ("Deployment", "grstats-collector")]
)
def test_no_misspelt_fields(kind: str, name: str) -> None:
    """The pod spec and its containers use only fields the Kubernetes API has."""
    spec = pod_spec(kind, name)
    assert set(spec) <= POD_FIELDS
    for running in [*spec.get("initContainers", []), *spec["containers"]]:
        assert set(running) <= CONTAINER_FIELDS, running["name"]
        for mount in running["volumeMounts"]:
            assert set(mount) <= {"name", "mountPath", "readOnly"}
            assert mount["name"] in {v["name"] for v in spec["volumes"]} | {"data"}


def pod_labels(kind: str, name: str) -> dict[str, str]:
    """The labels of a workload's pods."""
    labels = manifest(kind, name)["spec"]["template"]["metadata"]["labels"]
    assert isinstance(labels, dict)
    return labels


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a label selector with matchLabels only selects pods labelled ``labels``."""
    assert set(selector) == {"matchLabels"}
    return bool(selector["matchLabels"].items() <= labels.items())


def pod_monitors() -> list[dict[str, Any]]:
    """The PodMonitors of deploy/kubernetes."""
    return [
        document
        for path in sorted(KUBERNETES.glob("*.yaml"))
        for document in yaml_documents(path)
        if document["kind"] == "PodMonitor"
    ]


#: The fields of a PodMonitor's spec and of its endpoints that these manifests may use
#: (prometheus-operator's API; a misspelt one is refused by the API server, absent here).
POD_MONITOR_FIELDS = {"selector", "namespaceSelector", "podMetricsEndpoints", "jobLabel"}
ENDPOINT_FIELDS = {"port", "path", "interval", "scrapeTimeout", "scheme", "honorLabels"}


@pytest.mark.parametrize(("kind", "name", "container_name"), SCRAPED)
def test_one_pod_monitor_scrapes_each_metrics_port(
    kind: str, name: str, container_name: str
) -> None:
    """One PodMonitor selects the workload's pods, at the port and path of its annotations."""
    labels = pod_labels(kind, name)
    (monitor,) = [m for m in pod_monitors() if selects(m["spec"]["selector"], labels)]
    spec = monitor["spec"]
    assert set(spec) <= POD_MONITOR_FIELDS
    (endpoint,) = spec["podMetricsEndpoints"]
    assert set(endpoint) <= ENDPOINT_FIELDS
    assert re.fullmatch(r"[1-9]\d*s", endpoint["interval"])
    served = container(pod_spec(kind, name), container_name)
    annotations = manifest(kind, name)["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == port_of(served, endpoint["port"])
    assert annotations["prometheus.io/path"] == endpoint["path"] == "/metrics"


def test_every_pod_monitor_selects_a_workload() -> None:
    """No PodMonitor selects nothing, or the pods of two workloads (scraped twice)."""
    workloads = [pod_labels(kind, name) for kind, name, _ in SCRAPED]
    for monitor in pod_monitors():
        chosen = [labels for labels in workloads if selects(monitor["spec"]["selector"], labels)]
        assert len(chosen) == 1, monitor["metadata"]["name"]
    assert len(pod_monitors()) == len(SCRAPED)


def test_collector_serves_metrics_on_its_metrics_port() -> None:
    """The collector's --metrics-listen is the containerPort named metrics, on every address."""
    collector = container(pod_spec("Deployment", "grstats-collector"), "collector")
    listen = metrics_address(parse_grstats(args_of(collector)))
    assert listen is not None
    host, port = listen
    assert ipaddress.ip_address(host).is_unspecified  # reachable from the Prometheus pod
    assert port == port_of(collector, "metrics")
