"""The Debian package (``make deb``): lintian, and installs into a throwaway root with dpkg.

deploy/debian/build-deb.sh packages the directory bundle (the ``release_bundle`` fixture)
once per module. dpkg installs it with ``--root`` and ``--force-script-chrootless``:
the maintainer scripts run here, with DPKG_ROOT naming the root, which they work inside
(systemd-sysusers --root, deb-systemd-helper); ``--force-depends`` because the root holds no
other package, ``--force-not-root`` so that it also runs unprivileged (then the owners stay
the caller's). Every dpkg call of a test uses its own root; the host's database is untouched.

The packaged agent is also run in such a root made a bare host (tests/release/listeners.py:
the host's glibc and zlib, two devices, no shell, no Python, no /proc), entered with chroot,
with every listener on, each read by its real client. A root made by ``debootstrap
--variant=minbase`` would be closer to a real host, but it takes the Debian mirror and
minutes on every run; the bare root holds less than it, so what runs there runs there.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from grstats.agent.doctor.checklist import FAILED, LABELS, SKIPPED
from tests.deploy.files import (
    DEPLOY,
    INSTALLED_GRSTATS,
    Unit,
    exec_start,
    parse_grstats,
    read_env_file,
)
from tests.programs import require
from tests.release.listeners import Frozen, children, furnish, need_root, serve_everything
from tests.release.test_binary import host_libraries

#: The packaging worker builds the executable once for this module and test_binary.py.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("packaging")]

BUILD_DEB = DEPLOY / "debian" / "build-deb.sh"
SYSTEMD = DEPLOY / "systemd"
#: Where the package puts the executable, the units' ExecStart: a link into the bundle.
PACKAGED_GRSTATS = "/usr/bin/grstats"
#: Where the package puts the bundle.
BUNDLE = "/usr/lib/grstats"
UNITS = sorted(path.name for path in (*SYSTEMD.glob("*.service"), *SYSTEMD.glob("*.timer")))
CONFFILES = ("/etc/grstats/agent.toml", "/etc/grstats/collector.env")


def run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``args``, its output captured, stdin closed: a prompt fails instead of waiting."""
    return subprocess.run(
        args,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def build_deb(bundle: Path, out: Path, version: str | None = None) -> Path:
    """The package of ``bundle`` built in ``out`` by build-deb.sh (at ``version``, if given)."""
    done = run(
        [require("bash"), str(BUILD_DEB), str(bundle), str(out), *([version] if version else [])]
    )
    assert done.returncode == 0, f"build-deb.sh exited {done.returncode}\n{done.stderr}"
    deb = Path(done.stdout.strip().splitlines()[-1])
    assert deb.is_file(), done.stdout
    return deb


def field(deb: Path, name: str) -> str:
    """A field of the package's control file."""
    done = run([require("dpkg-deb"), "--field", str(deb), name])
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(name="deb", scope="module")
def _deb(release_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package, as ``make deb`` builds it."""
    return build_deb(release_bundle, tmp_path_factory.mktemp("deb"))


@pytest.fixture(name="upgrade_deb", scope="module")
def _upgrade_deb(release_bundle: Path, deb: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same bundle packaged at a later version."""
    return build_deb(
        release_bundle, tmp_path_factory.mktemp("upgrade"), field(deb, "Version") + "+1"
    )


@dataclass(frozen=True)
class Root:
    """A throwaway root with its own dpkg database."""

    path: Path

    @classmethod
    def make(cls, path: Path) -> Root:
        """An empty root: dpkg's database and log, nothing installed."""
        (path / "var" / "lib" / "dpkg" / "info").mkdir(parents=True)
        (path / "var" / "lib" / "dpkg" / "updates").mkdir()
        (path / "var" / "lib" / "dpkg" / "status").touch()
        (path / "var" / "log").mkdir()
        return cls(path)

    def dpkg(self, *args: str) -> str:
        """Run dpkg on this root; its output (it must succeed)."""
        require("systemd-sysusers", "systemd")  # postinst makes the user with it
        command = [
            require("dpkg"),
            f"--root={self.path}",
            f"--log={self.path}/var/log/dpkg.log",
            "--force-script-chrootless",
            "--force-depends",
            "--force-not-root",
            *args,
        ]
        # dpkg looks for ldconfig and start-stop-daemon on PATH, even unprivileged
        environment = {**os.environ, "PATH": os.environ.get("PATH", "") + ":/usr/sbin:/sbin"}
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
            stdin=subprocess.DEVNULL,
            env=environment,
        )
        assert done.returncode == 0, (
            f"{command} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
        )
        return done.stdout + done.stderr

    def file(self, path: str) -> Path:
        """``path`` (absolute, as installed) under this root."""
        return self.path / path.lstrip("/")

    def version(self) -> str:
        """The version of grstats dpkg has installed here."""
        done = run(
            [
                require("dpkg-query"),
                f"--admindir={self.path}/var/lib/dpkg",
                "-W",
                "--showformat=${Version}",
                "grstats",
            ]
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def installed(self) -> list[str]:
        """The paths the package installed, as dpkg lists them."""
        done = run([require("dpkg-query"), f"--admindir={self.path}/var/lib/dpkg", "-L", "grstats"])
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    def unit(self, name: str) -> Path:
        """The installed unit ``name``, wherever this system's systemd has packaged units."""
        (found,) = [path for path in self.installed() if path.endswith(f"/systemd/system/{name}")]
        return self.file(found)

    def account(self, database: str, name: str) -> list[str]:
        """The fields of ``name`` in the root's ``passwd`` or ``group``."""
        lines = self.file(f"/etc/{database}").read_text(encoding="utf-8").splitlines()
        (entry,) = [line.split(":") for line in lines if line.startswith(f"{name}:")]
        return entry


@pytest.fixture(name="root", scope="module")
def _root(deb: Path, tmp_path_factory: pytest.TempPathFactory) -> Root:
    """A throwaway root the package is installed into."""
    root = Root.make(tmp_path_factory.mktemp("root"))
    root.dpkg("--install", str(deb))
    return root


@pytest.fixture(name="own_root")
def _own_root(tmp_path: Path) -> Root:
    """An empty throwaway root for one test."""
    return Root.make(tmp_path / "root")


def test_lintian_reports_no_error(deb: Path) -> None:
    """The package has no lintian error (a warning that must stay is overridden, with its reason)."""
    program = require("lintian", "lintian")
    done = run([program, "--allow-root", "--fail-on", "error", str(deb)], timeout=600)
    output = done.stdout + done.stderr
    errors = [line for line in output.splitlines() if line.startswith("E:")]
    assert errors == [], output
    assert done.returncode == 0, output


def test_package_is_named_and_versioned_after_the_executable(
    deb: Path, release_binary: Path
) -> None:
    """The package is grstats, for this machine's architecture, at the executable's version."""
    version = run([str(release_binary), "--version"]).stdout.split()
    assert version[0] == "grstats"
    assert field(deb, "Package") == "grstats"
    assert field(deb, "Version") == debian_version(version[1])
    assert (
        field(deb, "Architecture") == run([require("dpkg"), "--print-architecture"]).stdout.strip()
    )
    assert deb.name == f"grstats_{debian_version(version[1])}_{field(deb, 'Architecture')}.deb"


def debian_version(version: str) -> str:
    """The package version build-deb.sh gives a grstats version."""
    done = run([require("bash"), str(BUILD_DEB), "--debian-version", version])
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        pytest.param("0.1.0.dev413+gdbda898", "0.1.0", id="dev-before-release"),
        pytest.param("0.1.0.dev9+g0d30b06", "0.1.0.dev12+g1234567", id="dev-by-count"),
        pytest.param("0.1.0", "0.1.1.dev1+g0d30b06", id="release-before-next-dev"),
        pytest.param("0.2.0rc1", "0.2.0", id="rc-before-release"),
    ],
)
def test_package_versions_sort_as_the_python_versions(earlier: str, later: str) -> None:
    """Dpkg orders the package versions as PEP 440 orders grstats's, so an upgrade is an upgrade."""
    done = run(
        [
            require("dpkg"),
            "--compare-versions",
            debian_version(earlier),
            "lt",
            debian_version(later),
        ]
    )
    assert done.returncode == 0, (debian_version(earlier), debian_version(later))


def test_two_builds_of_the_bundle_are_the_same_package(
    deb: Path, release_bundle: Path, tmp_path: Path
) -> None:
    """build-deb.sh makes the same bytes of the same bundle at the same SOURCE_DATE_EPOCH."""
    again = build_deb(release_bundle, tmp_path)
    assert again.name == deb.name
    assert again.read_bytes() == deb.read_bytes()


def _bundle_files(folder: Path) -> set[str]:
    """Every file under ``folder``, by its path relative to it."""
    return {str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file()}


def test_installed_bundle_is_the_built_one_and_bin_links_to_it(
    root: Root, release_bundle: Path
) -> None:
    """/usr/lib/grstats holds the bundle's files, its executable as built; /usr/bin/grstats links to it; modes are policy's."""
    bundle = root.file(BUNDLE)
    assert _bundle_files(bundle) == _bundle_files(release_bundle)
    # not stripped: the executable carries its archive of modules after its ELF sections
    assert (bundle / "grstats").read_bytes() == (release_bundle / "grstats").read_bytes()
    link = root.file(PACKAGED_GRSTATS)
    assert link.is_symlink()
    assert str(link.readlink()) == "../lib/grstats/grstats"
    assert link.resolve() == (bundle / "grstats").resolve()
    modes = {
        str(path.relative_to(bundle)): path.stat().st_mode & 0o7777
        for path in bundle.rglob("*")
        if not path.is_symlink()
    }
    executable = {name for name, mode in modes.items() if mode == 0o755}
    directories = {str(path.relative_to(bundle)) for path in bundle.rglob("*") if path.is_dir()}
    assert executable == {"grstats", *directories}
    assert set(modes.values()) == {0o644, 0o755}


def test_installed_executable_runs_version_and_doctor(root: Root, deb: Path) -> None:
    """The installed grstats prints its version, and doctor its checklist of this unconfigured host."""
    grstats = root.file(PACKAGED_GRSTATS)
    done = run([str(grstats), "--version"])
    assert done.returncode == 0, done.stderr
    # The package's version is Debian's form of grstats' (a development version's .dev: ~dev).
    assert done.stdout == f"grstats {field(deb, 'Version').replace('~dev', '.dev')}\n"

    config = root.file("/etc/grstats/agent.toml")
    done = run([str(grstats), "doctor", "--config", str(config), "--timeout", "1"])
    # exit status 1: a check failed. The example config names certificates this host has not.
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{LABELS[FAILED]} config {str(config)!r} is not valid: "), lines
    assert "tls.cert_file" in lines[0]
    assert lines[1].strip().startswith("fix: correct tls.cert_file")
    assert all(line.startswith(LABELS[SKIPPED]) for line in lines[2:-1]), lines
    assert lines[-1].startswith("FAILED: "), lines


def test_installed_units_pass_systemd_analyze_verify(root: Root) -> None:
    """systemd-analyze verify, looking in the root as systemd would, accepts every installed unit."""
    program = require("systemd-analyze")
    for name in UNITS:
        for key in ("ExecStart", "ExecReload"):
            for command in Unit.read(root.unit(name)).values(key):
                path = command.split()[0]
                if not root.file(path).exists():
                    # a program of the base system (/bin/kill), which this root lacks
                    assert path != PACKAGED_GRSTATS
                    root.file(path).parent.mkdir(parents=True, exist_ok=True)
                    host = shutil.which(Path(path).name)
                    assert host is not None, f"{path} is not on this host"
                    shutil.copy(host, root.file(path))
    done = run(
        [program, "verify", "--man=no", "--recursive-errors=no", f"--root={root.path}", *UNITS]
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == done.stderr == ""


def test_installed_units_are_deploy_systemds_with_the_packaged_executable(root: Root) -> None:
    """Each unit is deploy/systemd's, setting for setting, but for ExecStart running /usr/bin/grstats."""
    for name in UNITS:
        installed = Unit.read(root.unit(name))
        source = Unit.read(SYSTEMD / name)
        expected = tuple(
            (
                section,
                key,
                value.replace(INSTALLED_GRSTATS, PACKAGED_GRSTATS) if key == "ExecStart" else value,
            )
            for section, key, value in source.settings
        )
        assert installed.settings == expected, name
        assert INSTALLED_GRSTATS not in "".join(value for _, _, value in installed.settings)
    # the collector's command, with the installed collector.env, is the one grstats parses
    environment = read_env_file(root.file("/etc/grstats/collector.env"))
    words = exec_start(Unit.read(root.unit("grstats-collector.service")), environment)
    assert words[0] == PACKAGED_GRSTATS
    assert parse_grstats(words[1:]).spool == "/var/lib/grstats-collector/spool"


def test_postinst_makes_the_user_and_its_directories(root: Root) -> None:
    """The postinst makes the user grstats from the sysusers file, and gives it its directories."""
    sysusers = root.file("/usr/lib/sysusers.d/grstats.conf")
    assert sysusers.read_bytes() == (SYSTEMD / "grstats.sysusers").read_bytes()
    user = root.account("passwd", "grstats")
    group = root.account("group", "grstats")
    assert user[5] == "/var/lib/grstats"
    assert user[6].endswith("nologin")
    assert int(user[2]) < 1000  # a system user
    assert user[3] == group[2]
    state = root.file("/var/lib/grstats").stat()
    etc = root.file("/etc/grstats").stat()
    assert state.st_mode & 0o7777 == 0o750
    assert etc.st_mode & 0o7777 == 0o750
    if os.geteuid() == 0:  # unprivileged, dpkg and postinst leave the files the caller's
        assert (state.st_uid, state.st_gid) == (int(user[2]), int(group[2]))
        assert (etc.st_uid, etc.st_gid) == (0, int(group[2]))
    for path in CONFFILES:
        assert root.file(path).read_bytes() == (SYSTEMD / Path(path).name).read_bytes()


def test_edited_conffile_survives_reinstall_and_upgrade(
    own_root: Root, deb: Path, upgrade_deb: Path
) -> None:
    """The administrator's /etc/grstats/agent.toml is kept when the package is reinstalled or upgraded."""
    own_root.dpkg("--install", str(deb))
    config = own_root.file("/etc/grstats/agent.toml")
    edited = config.read_text(encoding="utf-8").replace(
        'advertise = "db1.example.net:7400"', 'advertise = "db2.example.net:7400"'
    )
    assert edited != config.read_text(encoding="utf-8")
    config.write_text(edited, encoding="utf-8")

    own_root.dpkg("--install", str(deb))
    assert config.read_text(encoding="utf-8") == edited

    version = field(upgrade_deb, "Version")
    own_root.dpkg("--install", str(upgrade_deb))
    assert own_root.version() == version
    assert config.read_text(encoding="utf-8") == edited
    assert (
        own_root.file("/etc/grstats/collector.env").read_bytes()
        == (SYSTEMD / "collector.env").read_bytes()
    )
    assert own_root.file("/etc/grstats").stat().st_mode & 0o7777 == 0o750
    assert own_root.file("/var/lib/grstats").stat().st_mode & 0o7777 == 0o750
    changelog = gzip.decompress(own_root.file("/usr/share/doc/grstats/changelog.gz").read_bytes())
    assert changelog.decode().startswith(f"grstats ({version}) ")


def test_purge_removes_the_registry_but_keeps_the_spool_and_the_user(
    own_root: Root, deb: Path
) -> None:
    """A purge removes the conffiles and /var/lib/grstats; the collector's spool and the user stay."""
    own_root.dpkg("--install", str(deb))
    own_root.file("/var/lib/grstats/registry.sqlite").write_bytes(b"members")
    spool = own_root.file("/var/lib/grstats-collector/spool")
    spool.mkdir(parents=True)
    (spool / "segment").write_bytes(b"history")
    own_root.dpkg("--purge", "grstats")
    assert not own_root.file("/var/lib/grstats").exists()
    assert not own_root.file("/etc/grstats").exists()
    assert not own_root.file(PACKAGED_GRSTATS).exists()
    assert (spool / "segment").read_bytes() == b"history"
    assert own_root.account("passwd", "grstats")[0] == "grstats"


def test_the_packaged_agent_in_a_bare_root_serves_every_listener(
    own_root: Root, deb: Path, tmp_path: Path
) -> None:
    """The package in a bare root runs an agent with gRPC (mTLS), SQL (TLS) and /metrics, read by their clients; one process, nothing unpacked."""
    need_root()
    own_root.dpkg("--install", str(deb))
    bundle = own_root.file(BUNDLE)
    furnish(own_root.path, host_libraries(bundle / "grstats", tmp_path / "libraries", bundle))
    python = [
        path
        for path in own_root.path.rglob("*")
        if "python" in path.name.lower() and not path.is_relative_to(bundle)
    ]
    assert python == []
    assert not own_root.file("/proc").exists()
    assert not own_root.file("/bin").exists()
    scratch = own_root.file("/tmp")  # noqa: S108  (the bare root's, not this host's)

    def nothing_unpacked(agent: subprocess.Popen[bytes]) -> None:
        # a single-file executable would have unpacked itself here (_MEI...), for the agent
        # and for each grstats query, and would run the agent as its child: a SIGKILL of it
        # would orphan the agent
        assert list(scratch.iterdir()) == []
        assert children(agent.pid) == []

    serve_everything(Frozen(own_root.path, PACKAGED_GRSTATS), tmp_path, nothing_unpacked)
