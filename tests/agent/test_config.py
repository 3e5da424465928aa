"""AgentConfig and load_config: defaults, ranges naming their key, files, overrides, examples."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from grstats.agent.config import AgentConfig, default_state_dir, load_config
from grstats.agent.sources import MySQLSourceConfig, SimulatedSourceConfig
from grstats.core.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

START = 1_700_000_000.0
EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"


def simulated(**changes: Any) -> SimulatedSourceConfig:
    """A valid [simulated] section for member 0 of the steady group, with ``changes``."""
    return SimulatedSourceConfig(**{"member_index": 0, "group_start_s": START, **changes})


def agent(**changes: Any) -> AgentConfig:
    """A valid simulated agent config with ``changes``."""
    return AgentConfig(**{"source": "simulated", "simulated": simulated(), **changes})


@pytest.fixture(name="write")
def _write(tmp_path: Path) -> Callable[[str], Path]:
    """Write a config file with the given text and return its path."""

    def write(text: str) -> Path:
        path = tmp_path / "agent.toml"
        path.write_text(text, encoding="utf-8")
        return path

    return write


#: A valid [simulated] section, last in a file.
SECTION = "[simulated]\nmember_index = 0\ngroup_start_s = 0\n"

SIMULATED_FILE = """
source = "simulated"
listen = "127.0.0.1:7400"
peers = ["127.0.0.1:7401", "127.0.0.1:7402"]
period_s = 2

[simulated]
scenario = "steady"
member_index = 0
group_start_s = 1700000000
"""


class TestAgentConfig:
    def test_defaults(self) -> None:
        """Every field but the source has the documented default."""
        config = agent()
        assert config.listen == "127.0.0.1:7400"
        assert config.advertise is None
        assert config.advertised == "127.0.0.1:7400"
        assert config.peers == ()
        assert config.discovery_enabled
        assert config.agent_port == 7400
        assert config.state_dir is None
        assert config.state_path == default_state_dir(7400)
        assert (config.period_s, config.gtid_interval_s, config.executed_interval_s) == (1, 30, 60)
        assert (config.silence_periods, config.retention_s, config.fanout) == (10, 86_400, 0)
        assert (config.rpc_timeout_s, config.flush_interval_s) == (0.5, 5)
        assert (config.log_format, config.log_level) == ("auto", "info")
        assert config.mysql is None

    def test_microsecond_properties(self) -> None:
        """period_us, silence_us and retention_us convert their seconds."""
        config = agent(period_s=2.5, silence_periods=4, retention_s=3600)
        assert config.period_us == 2_500_000
        assert config.silence_us == 10_000_000
        assert config.retention_us == 3_600_000_000

    def test_frozen(self) -> None:
        """The config cannot change after validation."""
        config = agent()
        with pytest.raises(dataclasses.FrozenInstanceError):
            config.period_s = 2  # type: ignore[misc]

    def test_peers_turn_discovery_off(self) -> None:
        """Given peers, discovery is off unless discover_peers says otherwise."""
        assert not agent(peers=("a:1",)).discovery_enabled
        assert agent(peers=("a:1",), discover_peers=True).discovery_enabled
        assert not agent(discover_peers=False).discovery_enabled

    def test_advertised_follows_listen(self) -> None:
        """The advertised address is listen's unless advertise is set, also after replace."""
        config = dataclasses.replace(agent(), listen="10.0.0.5:7500")
        assert config.advertised == "10.0.0.5:7500"
        assert agent(advertise="db1:7400").advertised == "db1:7400"
        assert agent(listen="0.0.0.0:7500", advertise="db1:7400").advertised == "db1:7400"

    @pytest.mark.parametrize(
        ("changes", "message"),
        [
            pytest.param({"listen": "0.0.0.0:7400"}, "advertise: not set, so peers dial listen '0.0.0.0:7400', which is an unspecified address", id="listen-v4"),
            pytest.param({"listen": "[::]:7400"}, "advertise: not set, so peers dial listen '[::]:7400', which is an unspecified address", id="listen-v6"),
            pytest.param({"advertise": "0.0.0.0:7400"}, "advertise: '0.0.0.0:7400' is an unspecified address", id="advertise-v4"),
            pytest.param({"advertise": "[::]:7400"}, "advertise: '[::]:7400' is an unspecified address", id="advertise-v6"),
            pytest.param({"advertise": "[::ffff:0.0.0.0]:7400"}, "advertise: '[::ffff:0.0.0.0]:7400' is an unspecified", id="mapped"),
        ],
    )  # fmt: skip
    def test_an_unspecified_advertised_address_is_refused(
        self, changes: dict[str, Any], message: str
    ) -> None:
        """0.0.0.0 or :: as the advertised address (advertise, else listen) is refused with the fix."""
        with pytest.raises(ConfigError) as caught:
            agent(**changes)
        assert str(caught.value).startswith(message)
        assert "set advertise to" in str(caught.value) or "give an address" in str(caught.value)

    def test_agent_port_defaults_to_the_listen_port(self) -> None:
        """An agent_port of 0 (the default) becomes the listen port; a given one is kept."""
        assert agent(listen="10.0.0.5:7500").agent_port == 7500
        assert agent(listen="10.0.0.5:7500", agent_port=7600).agent_port == 7600
        assert agent(listen="127.0.0.1:0").agent_port == 0

    def test_lists_and_strings_normalised(self) -> None:
        """A peers list becomes a tuple and a state_dir string a Path."""
        config = agent(peers=["a:1", "[::1]:2"], state_dir="state")
        assert config.peers == ("a:1", "[::1]:2")
        assert config.state_dir == Path("state")

    def test_listen_port_zero(self) -> None:
        """The listen address accepts port 0 (any free port), for tests."""
        assert agent(listen="127.0.0.1:0").listen == "127.0.0.1:0"

    def test_zero_retention_disables_purging(self) -> None:
        """retention_s = 0 never purges and is not checked against the silence."""
        assert agent(retention_s=0).retention_us == 0

    def test_mysql_source(self) -> None:
        """A mysql agent carries a MySQLSourceConfig and no simulated section."""
        mysql = MySQLSourceConfig(host="db1")
        config = AgentConfig(source="mysql", mysql=mysql)
        assert config.mysql is mysql

    @pytest.mark.parametrize(
        ("key", "value", "message"),
        [
            ("source", "postgres", "source: 'postgres' is not simulated, mysql"),
            ("listen", "7400", "listen: '7400' is not host:port with a port in 0..65535"),
            ("listen", "host:65536", "listen: 'host:65536' is not host:port"),
            ("listen", "::1:7400", "listen: '::1:7400' is not host:port"),
            ("listen", 7400, "listen: 7400 is not host:port"),
            ("advertise", "db1:0", "advertise: 'db1:0' is not host:port with a port in 1..65535"),
            ("peers", "a:1,b:2", "peers: 'a:1,b:2' is not a list of host:port"),
            ("peers", ("a:1", "b"), "peers[1]: 'b' is not host:port with a port in 1..65535"),
            ("peers", ("a:1", "a b:2"), "peers[1]: 'a b:2' is not host:port"),
            ("peers", ("a:1", "b:2", "a:1"), "peers[2]: 'a:1' is already peers[0]"),
            ("discover_peers", "yes", "discover_peers: 'yes' is not true or false"),
            ("agent_port", -1, "agent_port: -1 is not in 0..65535"),
            ("agent_port", True, "agent_port: True is not in 0..65535"),
            ("state_dir", "", "state_dir: '' is not a directory path"),
            ("state_dir", 3, "state_dir: 3 is not a directory path"),
            ("period_s", 0, "period_s: 0 is not in [1, 60] seconds"),
            ("period_s", 61, "period_s: 61 is not in [1, 60] seconds"),
            ("period_s", "1", "period_s: '1' is not in [1, 60] seconds"),
            ("period_s", float("nan"), "period_s: nan is not in [1, 60] seconds"),
            ("gtid_interval_s", 29, "gtid_interval_s: 29 is not in [30, 60] seconds"),
            ("gtid_interval_s", 61, "gtid_interval_s: 61 is not in [30, 60] seconds"),
            ("executed_interval_s", 0, "executed_interval_s: 0 is not in [30, 60] seconds"),
            ("silence_periods", 0, "silence_periods: 0 is not in 1..1000"),
            ("silence_periods", 1001, "silence_periods: 1001 is not in 1..1000"),
            ("silence_periods", 2.5, "silence_periods: 2.5 is not in 1..1000"),
            ("retention_s", 59, "retention_s: 59 is not 0 (never purges) or in [60, 31622400] seconds"),
            ("retention_s", -1, "retention_s: -1 is not 0 (never purges) or in [60, 31622400] seconds"),
            ("retention_s", False, "retention_s: False is not 0 (never purges)"),
            ("retention_s", 60, "retention_s: 60 is not longer than silence_periods * period_s = 600 seconds"),
            ("fanout", 9, "fanout: 9 is not 0 (every peer) or in 1..8"),
            ("fanout", -1, "fanout: -1 is not 0 (every peer) or in 1..8"),
            ("rpc_timeout_s", 0.01, "rpc_timeout_s: 0.01 is not in [0.05, 30] seconds"),
            ("rpc_timeout_s", 1, "rpc_timeout_s: 1 is not less than period_s = 1"),
            ("flush_interval_s", 0, "flush_interval_s: 0 is not in [1, 3600] seconds"),
            ("flush_interval_s", 3601, "flush_interval_s: 3601 is not in [1, 3600] seconds"),
            ("log_format", "xml", "log_format: 'xml' is not auto, json, console"),
            ("log_level", "trace", "log_level: 'trace' is not debug, info, warning, error"),
        ],
    )  # fmt: skip
    def test_bad_value_names_key_and_range(self, key: str, value: Any, message: str) -> None:
        """A bad value raises ConfigError starting with its key, naming the value and range."""
        changes = {key: value}
        if key == "retention_s" and value == 60:
            changes["silence_periods"] = 600
        with pytest.raises(ConfigError) as caught:
            agent(**changes)
        assert message.startswith(key)
        assert str(caught.value).startswith(message.split(" ", 1)[0])  # "key:" or "key[i]:"
        assert message in str(caught.value)

    @pytest.mark.parametrize(
        ("changes", "given"),
        [
            pytest.param({"simulated": None}, "none", id="no-section"),
            pytest.param({"mysql": MySQLSourceConfig(host="db1")}, "[simulated], [mysql]", id="both"),
            pytest.param({"source": "mysql"}, "[simulated]", id="other-section"),
        ],
    )  # fmt: skip
    def test_exactly_the_source_section(self, changes: dict[str, Any], given: str) -> None:
        """The chosen source needs its section and no other; the error names source."""
        with pytest.raises(ConfigError, match=r"^source: .* needs the \[") as caught:
            agent(**changes)
        assert f"(given: {given})" in str(caught.value)


class TestStateDir:
    """The default state directory depends on the environment and the port, never on the cwd."""

    def test_systemd_state_directory_first(self) -> None:
        """$STATE_DIRECTORY (systemd's StateDirectory=; the first of a list) wins, also for root."""
        environ = {"STATE_DIRECTORY": "/var/lib/grstats:/var/lib/other", "HOME": "/home/dba"}
        assert default_state_dir(7400, environ, root=True) == Path("/var/lib/grstats/7400")
        assert default_state_dir(7400, environ, root=False) == Path("/var/lib/grstats/7400")

    def test_root_uses_var_lib(self) -> None:
        """Root without systemd's variable gets /var/lib/grstats/<port>."""
        environ = {"HOME": "/root", "XDG_STATE_HOME": "/root/state"}
        assert default_state_dir(7401, environ, root=True) == Path("/var/lib/grstats/7401")

    @pytest.mark.parametrize(
        ("environ", "expected"),
        [
            pytest.param({"HOME": "/home/dba"}, "/home/dba/.local/state/grstats/7400", id="home"),
            pytest.param({"HOME": "/home/dba", "XDG_STATE_HOME": "/srv/state"}, "/srv/state/grstats/7400", id="xdg"),
            pytest.param({"HOME": "/home/dba", "XDG_STATE_HOME": "rel"}, "/home/dba/.local/state/grstats/7400", id="relative-xdg-ignored"),
            pytest.param({"HOME": "/home/dba", "STATE_DIRECTORY": ""}, "/home/dba/.local/state/grstats/7400", id="empty-systemd"),
        ],
    )  # fmt: skip
    def test_a_user_gets_the_xdg_state_home(self, environ: dict[str, str], expected: str) -> None:
        """Another user gets ${XDG_STATE_HOME:-~/.local/state}/grstats/<port>."""
        assert default_state_dir(7400, environ, root=False) == Path(expected)

    def test_no_home_asks_for_a_state_dir(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without $HOME or a passwd entry (a bare chroot), a user's agent is told to set state_dir."""

        def no_home() -> Path:
            raise RuntimeError("Could not determine home directory.")

        monkeypatch.setattr(Path, "home", no_home)
        with pytest.raises(ConfigError, match=r"^state_dir: .* set state_dir or --state-dir"):
            default_state_dir(7400, {}, root=False)
        assert default_state_dir(7400, {}, root=True) == Path("/var/lib/grstats/7400")

    def test_two_agents_of_one_host_get_two_directories(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """Without state_dir, the listen port tells agents apart, and the cwd plays no part."""
        monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "base"))
        monkeypatch.chdir(tmp_path)
        first, second = agent(listen="127.0.0.1:7400"), agent(listen="127.0.0.1:7401")
        assert first.state_path == tmp_path / "base" / "7400"
        assert second.state_path == tmp_path / "base" / "7401"
        assert agent(state_dir="given").state_path == Path("given")

    def test_relative_state_dir_in_a_file_is_relative_to_the_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A relative state_dir in the file is under the file's directory, not the cwd."""
        folder = tmp_path / "etc"
        folder.mkdir()
        path = folder / "agent.toml"
        path.write_text('source = "simulated"\nstate_dir = "state/m0"\n' + SECTION)
        monkeypatch.chdir(tmp_path)
        assert load_config(path).state_dir == folder / "state" / "m0"
        relative = Path("etc") / "agent.toml"  # the file named relative to the cwd
        assert load_config(relative).state_dir == folder / "state" / "m0"
        absolute = load_config(path, {}).state_dir
        assert absolute is not None
        assert absolute.is_absolute()

    def test_relative_state_dir_flag_is_relative_to_the_cwd(self, tmp_path: Path) -> None:
        """A state_dir given as an override (the flag) stays as given: relative to the cwd."""
        path = tmp_path / "agent.toml"
        path.write_text('source = "simulated"\nstate_dir = "in-file"\n' + SECTION)
        assert load_config(path, {"state_dir": "mine"}).state_dir == Path("mine")


class TestLoadConfig:
    def test_file(self, write: Callable[[str], Path]) -> None:
        """The file's keys and [simulated] section become the config."""
        config = load_config(write(SIMULATED_FILE), {})
        assert config.peers == ("127.0.0.1:7401", "127.0.0.1:7402")
        assert config.period_s == 2
        assert config.simulated == simulated(group_start_s=1_700_000_000)

    def test_overrides_beat_the_file(self, write: Callable[[str], Path]) -> None:
        """Overrides replace the file's values, top-level and in sections; None is skipped."""
        overrides = {
            "listen": "127.0.0.1:7401",
            "peers": "127.0.0.1:7400, 127.0.0.1:7402",
            "period_s": None,
            "simulated.member_index": 1,
            "simulated.members": 3,
        }
        config = load_config(write(SIMULATED_FILE), overrides)
        assert config.listen == "127.0.0.1:7401"
        assert config.peers == ("127.0.0.1:7400", "127.0.0.1:7402")
        assert config.period_s == 2
        assert config.simulated is not None
        assert (config.simulated.member_index, config.simulated.members) == (1, 3)

    def test_no_file(self) -> None:
        """Without a file, overrides alone make the config."""
        config = load_config(
            None,
            {
                "source": "mysql",
                "mysql.host": "db1",
                "mysql.password_file": "secret",
                "state_dir": "state",
            },
        )
        assert config.mysql == MySQLSourceConfig(host="db1", password_file=Path("secret"))
        assert config.state_dir == Path("state")

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            pytest.param("perod_s = 1\n", "perod_s: unknown setting (did you mean period_s?)", id="top-level"),
            pytest.param("[simulated]\nsead = 1\n", "simulated.sead: unknown setting (did you mean simulated.seed?)", id="in-section"),
            pytest.param("[mysql]\nhots = 'db1'\n", "mysql.hots: unknown setting (did you mean mysql.host?)", id="mysql"),
            pytest.param("[agent]\nlisten = 'a:1'\n", "agent: unknown setting", id="unknown-table"),
            pytest.param("[simulated.extra]\nx = 1\n", "simulated.extra: unknown setting", id="nested-table"),
            pytest.param("simulated = 3\n", "simulated: 3 is not a table", id="section-not-a-table"),
        ],
    )  # fmt: skip
    def test_unknown_key_in_file(
        self, write: Callable[[str], Path], text: str, message: str
    ) -> None:
        """A key the config does not have is an error naming it, even when overridden."""
        with pytest.raises(ConfigError) as caught:
            load_config(write(text), {"source": "simulated", "simulated.member_index": 0})
        assert str(caught.value).startswith(message)

    def test_unknown_override(self) -> None:
        """An override key the config does not have is an error naming it."""
        with pytest.raises(ConfigError, match=r"^simulated.member: unknown setting"):
            load_config(None, {"simulated.member": 1})

    @pytest.mark.parametrize(
        ("path_text", "overrides"),
        [
            pytest.param("[mysql]\nhost = 'db1'\npassword = 'hunter2'\n", {}, id="file"),
            pytest.param("[mysql]\nhost = 'db1'\n", {"mysql.password": "hunter2"}, id="override"),
        ],
    )
    def test_inline_password_refused(
        self, write: Callable[[str], Path], path_text: str, overrides: dict[str, object]
    ) -> None:
        """A password in the config is refused, pointing at password_file and password_env."""
        with pytest.raises(ConfigError) as caught:
            load_config(write("source = 'mysql'\n" + path_text), overrides)
        message = str(caught.value)
        assert message.startswith("mysql.password: ")
        assert "password_file" in message
        assert "password_env" in message
        assert "hunter2" not in message

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            pytest.param("period_s = '1'\n" + SECTION, "period_s: '1' is not in [1, 60] seconds", id="string-for-number"),
            pytest.param("peers = 'a:1'\n" + SECTION, "peers: 'a:1' is not a list of host:port", id="string-for-list"),
            pytest.param("fanout = true\n" + SECTION, "fanout: True is not 0 (every peer) or in 1..8", id="bool-for-int"),
            pytest.param(SECTION + "seed = 1.5\n", "simulated.seed: 1.5 is not in 0..", id="float-for-int"),
            pytest.param("[simulated]\nmember_index = 0\ngroup_start_s = 'now'\n", "simulated.group_start_s: 'now' is not a UNIX time", id="string-for-time"),
        ],
    )  # fmt: skip
    def test_wrong_type_names_key_and_value(
        self, write: Callable[[str], Path], text: str, message: str
    ) -> None:
        """A value of the wrong type is an error naming the key and the value."""
        with pytest.raises(ConfigError) as caught:
            load_config(write("source = 'simulated'\n" + text), {})
        assert str(caught.value).startswith(message)

    @pytest.mark.parametrize(
        ("overrides", "message"),
        [
            pytest.param({}, "source: missing", id="source"),
            pytest.param({"source": "simulated", "simulated.member_index": 0}, "simulated.group_start_s: missing", id="group-start"),
            pytest.param({"source": "simulated", "simulated.group_start_s": START}, "simulated.member_index: missing", id="member-index"),
            pytest.param({"source": "mysql", "mysql.port": 3306}, "mysql.host: missing", id="mysql-host"),
            pytest.param({"source": "mysql"}, "source: 'mysql' needs the [mysql] section", id="section"),
        ],
    )  # fmt: skip
    def test_missing_required_key(self, overrides: dict[str, object], message: str) -> None:
        """A required key that is missing is named, with what to give."""
        with pytest.raises(ConfigError) as caught:
            load_config(None, overrides)
        assert str(caught.value).startswith(message)

    def test_mysql_errors_are_prefixed(self) -> None:
        """MySQLSourceConfig's errors name the key with its mysql. prefix."""
        with pytest.raises(ConfigError, match=r"^mysql.port: 0 is not in 1..65535"):
            load_config(None, {"source": "mysql", "mysql.host": "db1", "mysql.port": 0})

    def test_scenario_checked_on_load(self) -> None:
        """A member_index beyond the scenario's size fails when the config loads."""
        overrides = {
            "source": "simulated",
            "simulated.member_index": 5,
            "simulated.group_start_s": START,
        }
        with pytest.raises(ConfigError, match=r"^simulated.member_index: 5 is not in 0..2"):
            load_config(None, overrides)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            pytest.param("listen = \n", "config: ", id="bad-toml"),
            pytest.param(None, "config: cannot read", id="missing-file"),
        ],
    )
    def test_unreadable_file(
        self, tmp_path: Path, write: Callable[[str], Path], text: str | None, message: str
    ) -> None:
        """A file that cannot be read or parsed is an error naming config and the path."""
        path = tmp_path / "absent.toml" if text is None else write(text)
        with pytest.raises(ConfigError) as caught:
            load_config(path, {})
        assert str(caught.value).startswith(message)
        assert str(path) in str(caught.value)


class TestExamples:
    def test_simulated_example(self) -> None:
        """The simulated example is member 0 of a 3-member steady group with two peers."""
        config = load_config(EXAMPLES / "agent-simulated.toml", {"simulated.group_start_s": START})
        assert config.simulated is not None
        source = config.simulated.build(clock=lambda: START)
        assert source.member_index == 0
        assert len(source.group.members) == 3
        assert config.peers == ("127.0.0.1:7401", "127.0.0.1:7402")

    def test_simulated_example_needs_group_start(self) -> None:
        """The simulated example leaves the group start to the command line."""
        with pytest.raises(ConfigError, match=r"^simulated.group_start_s: missing"):
            load_config(EXAMPLES / "agent-simulated.toml", {})

    def test_mysql_example(self) -> None:
        """The MySQL example loads, with the password in a file."""
        config = load_config(EXAMPLES / "agent-mysql.toml", {})
        assert config.mysql is not None
        assert config.mysql.password_file is not None
        assert config.mysql.password_env is None
        assert config.log_format == "json"
