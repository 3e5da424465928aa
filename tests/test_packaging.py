"""The wheel installs one import name, grstats, beside other software; the agent install has no Spark.

These tests build the real wheel and install it with pip into fresh virtual environments, as a
user does on a database host. The packages come from the package index pip is configured with.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import time
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from grstats import __version__
from grstats.cli.demo import free_ports

#: One worker builds the release once: two builds at once in this checkout race on its
#: egg-info (setuptools writes it in the source tree).
pytestmark = pytest.mark.xdist_group("packaging")

ROOT = Path(__file__).resolve().parent.parent
#: The folders of the repository that are subpackages of grstats (./X is grstats.X).
PACKAGE_FOLDERS = ("agent", "cli", "collector", "core", "spark", "proto")
#: The agent-only virtual environment's target size (the packaging issue).
AGENT_VENV_LIMIT_BYTES = 150 * 1000 * 1000
SPARK_HINT = "pip install 'grstats[spark]'"


#: Where the installed commands run: not the checkout, whose folders (proto/, agent/) would
#: shadow installed packages of the same names on ``python -c``'s path.
NEUTRAL_CWD = Path("/")


def run(
    *args: str | Path, timeout: float = 300, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run a command outside the checkout, capturing its output; with ``check``, fail showing it."""
    done = subprocess.run(
        [str(arg) for arg in args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=NEUTRAL_CWD,
    )
    if check and done.returncode != 0:
        pytest.fail(f"{args} exited {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def make_venv(path: Path) -> Path:
    """Create a virtual environment with pip at ``path``; return its python."""
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    return path / "bin" / "python"


def pip_install(python: Path, *what: str | Path) -> None:
    """Install ``what`` with pip into the environment of ``python``."""
    run(python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *what)


def tree_digest(folder: Path) -> str:
    """A digest of every file's path and bytes under ``folder``."""
    digest = hashlib.sha256()
    for path in sorted(
        p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    ):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def site_packages(python: Path) -> Path:
    """The site-packages folder of the environment of ``python``."""
    out = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout
    return Path(out.strip())


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under ``folder`` (symlinks not followed), as ``du -sb`` counts them."""
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() or p.is_symlink())


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The sdist and the wheel ``make dist`` builds (the wheel from the sdist), and the log."""
    out = tmp_path_factory.mktemp("dist")
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=NEUTRAL_CWD,
        env=environ,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (sdist,) = out.glob("grstats-*.tar.gz")
    (built,) = out.glob("grstats-*.whl")
    return sdist, built, done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(release: tuple[Path, Path, str]) -> Path:
    """The wheel of grstats, built from this checkout's sdist as ``make dist`` builds it."""
    return release[1]


def test_the_release_builds_without_warnings(release: tuple[Path, Path, str]) -> None:
    """The build of the sdist and the wheel (make dist) prints no warning, packaging or other."""
    sdist, _, log = release
    assert [line for line in log.splitlines() if "warning" in line.lower()] == []
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert f"{sdist.name.removesuffix('.tar.gz')}/agent/sim/scenarios/steady.toml" in names


def test_the_package_list_names_every_package_folder() -> None:
    """pyproject.toml's packages are the root, every folder with an __init__.py, and the scenarios."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]
    assert config["package-dir"] == {"grstats": "."}
    folders = {
        "grstats." + ".".join(init.parent.relative_to(ROOT).parts)
        for name in PACKAGE_FOLDERS
        for init in (ROOT / name).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    data_only = {"grstats.agent.sim.scenarios"}  # the built-in scenarios' TOML files
    assert set(config["packages"]) == {"grstats", *folders, *data_only}
    assert not any((ROOT / "agent" / "sim" / "scenarios").glob("*.py"))


@pytest.mark.slow
def test_the_wheels_only_top_level_name_is_grstats(wheel: Path) -> None:
    """Every file of the wheel is under grstats/ (or its .dist-info); data files and stubs ship."""
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {
        "grstats",
        f"grstats-{__version__}.dist-info",
    }
    for needed in (
        "grstats/__init__.py",
        "grstats/__main__.py",
        "grstats/cli/__init__.py",
        "grstats/py.typed",
        "grstats/agent/runtime.py",
        "grstats/agent/sim/scenarios/demo.toml",
        "grstats/collector/spool.py",
        "grstats/spark/log4j2.properties",
        "grstats/proto/grstats.proto",
        "grstats/proto/grstats_pb2.pyi",
    ):
        assert needed in names
    assert not [name for name in names if "/tests/" in name or name.startswith("grstats/deploy")]
    dist_info = f"grstats-{__version__}.dist-info"
    metadata = zipfile.ZipFile(wheel).read(f"{dist_info}/METADATA").decode()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    spark = [line for line in requires if "pyspark" in line or "pyarrow" in line]
    assert len(spark) == 2
    assert all('extra == "spark"' in line for line in spark)
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert "grstats = grstats.cli:script" in entry_points


@pytest.mark.slow
def test_the_wheel_installs_beside_proto_plus_and_runs_an_agent_without_spark(
    wheel: Path, tmp_path: Path
) -> None:
    """`pip install grstats` beside proto-plus (import name proto) leaves it intact, brings no Spark, fits in 150 MB, runs an agent, says what `grstats spark` needs, and uninstalls cleanly."""
    env_dir = tmp_path / "venv"
    python = make_venv(env_dir)
    pip_install(python, "proto-plus")
    proto_plus = site_packages(python) / "proto"
    before = tree_digest(proto_plus)
    pip_install(python, wheel)
    assert tree_digest(proto_plus) == before, "installing grstats changed proto-plus's files"
    both = (
        "import proto, grstats.proto.grstats_pb2 as pb; "
        "assert issubclass(proto.Message, object) and proto.Field; "
        "assert pb.DESCRIPTOR.package == 'grstats.v1'; "
        "print(proto.__file__); print(pb.__file__)"
    )
    proto_file, pb_file = run(python, "-c", both).stdout.split()
    assert Path(proto_file).parent == proto_plus
    assert Path(pb_file).parent == site_packages(python) / "grstats" / "proto"
    grstats = python.parent / "grstats"
    assert run(grstats, "--version").stdout.strip() == f"grstats {__version__}"
    assert run(python, "-m", "grstats", "--version").stdout.strip() == f"grstats {__version__}"

    # The agent's install: no Spark, its size, an agent that answers.
    size = (
        folder_bytes(env_dir)
        - folder_bytes(proto_plus)
        - sum(folder_bytes(info) for info in site_packages(python).glob("proto_plus-*.dist-info"))
    )
    print(f"agent-only virtual environment: {size / 1e6:.1f} MB")  # figure for docs/benchmarks.md
    assert size <= AGENT_VENV_LIMIT_BYTES, f"{size / 1e6:.1f} MB > 150 MB"
    absent = "import importlib.util as u; print([m for m in ('pyspark', 'pyarrow', 'py4j') if u.find_spec(m)])"
    assert run(python, "-c", absent).stdout.strip() == "[]"

    for job in (
        ("ingest", "--spool", tmp_path, "--table", tmp_path / "t"),
        ("report", "--table", tmp_path, "--out", tmp_path / "r"),
    ):
        done = run(grstats, "spark", *job, check=False)
        assert done.returncode != 0
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert SPARK_HINT in done.stderr
        assert "Traceback" not in done.stderr
        assert done.stdout == ""
    run(grstats, "spark", "--help")

    simulated = json.loads(
        run(
            grstats,
            "simulate",
            "--scenario",
            "steady",
            "--members",
            "3",
            "--seconds",
            "3",
            "--format",
            "json",
        ).stdout
    )
    assert len(simulated["replication_group_member_stats"]) == 3

    _an_agent_answers(grstats, python, tmp_path)

    run(python, "-m", "pip", "uninstall", "--yes", "--quiet", "grstats")
    assert tree_digest(proto_plus) == before, "uninstalling grstats changed proto-plus's files"
    assert not (site_packages(python) / "grstats").exists()
    run(python, "-c", "import proto; assert proto.Message and proto.Field and proto.RepeatedField")


def _an_agent_answers(grstats: Path, python: Path, tmp_path: Path) -> None:
    """Start an agent of the install at ``grstats``; it answers a query, with no Spark imported."""
    (port,) = free_ports(1)
    log = tmp_path / "agent.log"
    with log.open("wb") as errors:  # the agent keeps its own copy of the descriptor
        agent = subprocess.Popen(
            [
                grstats,
                "agent",
                "--source",
                "simulated",
                "--scenario",
                "steady",
                "--members",
                "3",
                "--member-index",
                "0",
                "--group-start",
                str(int(time.time())),
                "--listen",
                f"127.0.0.1:{port}",
                "--state-dir",
                tmp_path / "state",
            ],
            stdout=subprocess.DEVNULL,
            stderr=errors,
            cwd=NEUTRAL_CWD,
        )
    try:
        rows: list[dict[str, object]] = []
        deadline = time.monotonic() + 30
        while not rows and time.monotonic() < deadline:
            done = run(
                grstats,
                "query",
                "stats",
                "--node",
                f"127.0.0.1:{port}",
                "--format",
                "json",
                "--timeout",
                "2",
                check=False,
            )
            answered = done.returncode == 0 and done.stdout.strip()
            rows = json.loads(done.stdout)["rows"] if answered else []
            time.sleep(0.3)
        if not rows:
            pytest.fail(f"the agent never answered: {log.read_text(errors='replace')}")
        assert {"MEMBER_ID", "COUNT_TRANSACTIONS_IN_QUEUE"} <= set(rows[0])
        loaded = run(
            python,
            "-c",
            "import sys, grstats.agent.runtime, grstats.cli.collector; print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'pyarrow')))",
        )
        assert loaded.stdout.strip() == "[]"
    finally:
        agent.terminate()
        agent.wait(timeout=30)
