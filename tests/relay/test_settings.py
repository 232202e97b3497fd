"""The config file: every section read, unknown keys and wrong types refused with the key's name."""

from __future__ import annotations

import argparse
from datetime import timedelta
from pathlib import Path

import pytest

from failover.core.loop_settings import DecisionSettings
from relay.settings import (
    ControllerSettings,
    Settings,
    SettingsError,
    add_setting_flags,
    apply,
    check_settings,
    declared,
    flag_values,
    has_password,
    load_settings,
)

FULL = """\
server:
  host: 0.0.0.0
  port: 8443
  certDir: /var/run/failover-relay/certs
  serviceName: failover-relay
  namespace: failover-relay
  maxBodyBytes: 2097152
  caBundleSync: false
  clientCAFile: /etc/failover-relay/client-ca.crt
  drainSeconds: 2
  graceSeconds: 4.5
logging:
  format: json
  level: debug
savepoint:
  checkpointRoot: s3://flink/checkpoints
  failureMode: closed
  lookupDeadlineSeconds: 1.5
controllers:
  mode: "on"
  kubeconfig: /etc/karmada/kubeconfig
  leaseNamespace: karmada-system
  workers: 4
  purgeModeSpelling: legacy
  gracefulEvictionTimeoutSeconds: 120
  stateWaitSeconds: 30
  failback: true
  failbackSettleSeconds: 60
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "relay.yaml"
    path.write_text(text)
    return path


def test_no_file_gives_the_defaults() -> None:
    settings = load_settings(None)
    assert (settings.port, settings.log_format, settings.cabundle_sync) == (9443, "auto", True)
    assert settings.controllers.mode == "auto" and settings.controllers.decisions.failback_enabled is False
    assert settings.drain_seconds is None and settings.grace_seconds == 10.0


def test_every_section_is_read(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, FULL))
    assert settings.host == "0.0.0.0" and settings.port == 8443
    assert settings.cert_dir == Path("/var/run/failover-relay/certs")
    assert settings.client_ca_file == Path("/etc/failover-relay/client-ca.crt")
    assert settings.cabundle_sync is False
    assert (settings.drain_seconds, settings.grace_seconds) == (2, 4.5)
    assert (settings.log_format, settings.log_level) == ("json", "debug")
    assert settings.savepoint.checkpoint_root == "s3://flink/checkpoints"
    assert settings.savepoint.failure_mode == "closed"
    controllers = settings.controllers
    assert (controllers.mode, controllers.kubeconfig, controllers.lease_namespace) == (
        "on",
        "/etc/karmada/kubeconfig",
        "karmada-system",
    )
    decisions = controllers.decisions
    assert (controllers.workers, decisions.purge_mode_spelling, decisions.failback_enabled) == (4, "legacy", True)
    assert (decisions.graceful_eviction_timeout, decisions.state_wait, decisions.failback_settle) == (
        timedelta(seconds=120),
        timedelta(seconds=30),
        timedelta(seconds=60),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("server:\n  prot: 1\n", "server.prot: unknown setting"),
        ("server:\n  port: seventy\n", "server.port: wrong type str, expected a whole number"),
        ("server:\n  graceSeconds: soon\n", "server.graceSeconds: wrong type str, expected a number"),
        ("server:\n  host: [a]\n", "server.host: wrong type list, expected a string"),
        ("server:\n  port: 70000\n", "port 70000 is out of range"),
        ("server:\n  graceSeconds: 0\n", "graceSeconds must be more than 0"),
        ("server:\n  drainSeconds: 600\n", "drainSeconds must be between 0 and 60"),
        ("controllers:\n  mode: off\n", "quote it"),
        ("controllers:\n  mode: sometimes\n", "controllers.mode 'sometimes'"),
        ("controllers:\n  failback: 1\n", "controllers.failback: wrong type int, expected true or false"),
        ("controllers:\n  workers: 0\n", "workers must be between 1 and 64"),
        ("controllers:\n  purgeModeSpelling: old\n", "use new (Karmada v1.15+) or legacy"),
        ("controllers:\n  stateWaitSeconds: -1\n", "stateWaitSeconds must be 0 or more"),
        ("webhooks: {}\n", "unknown section(s) webhooks"),
        ("- a list\n", "must be a mapping"),
        ("server: [\n", "is not valid YAML"),
        ("server:\n  serviceName: relay\n", "serviceName and namespace go together"),
        ("savepoint:\n  checkpointRoot: sftp://flink:s3cret@store/ckpt\n", "must not carry a password"),
    ],
)
def test_bad_settings_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings(write(tmp_path, text))
    assert message in str(raised.value)


@pytest.mark.parametrize("service", ["Relay", "relay.evil", "-relay", "a" * 64, "", "relay/../x"])
def test_service_name_that_is_not_a_dns_label_is_refused(service: str) -> None:
    # The certificate's Service names are spelled from it as it is (certs/serving_names.py).
    with pytest.raises(SettingsError, match="server.serviceName .* is not a valid Kubernetes name"):
        check_settings(Settings(service_name=service, namespace="karmada-system"))


def test_namespace_that_is_not_a_dns_label_is_refused() -> None:
    with pytest.raises(SettingsError, match="server.namespace 'Karmada' is not a valid Kubernetes name"):
        check_settings(Settings(service_name="failover-relay", namespace="Karmada"))


def test_flags_override_the_file_and_are_checked_again(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_setting_flags(parser, "server.port", "server.graceSeconds", "controllers.mode", "controllers.kubeconfig")
    flags = flag_values(parser.parse_args(["--port", "9000"]))
    settings = apply(load_settings(write(tmp_path, FULL)), flags)
    assert settings.port == 9000 and settings.grace_seconds == 4.5
    settings = apply(settings, flag_values(parser.parse_args(["--no-controllers"])))
    assert settings.controllers.mode == "off" and settings.controllers.kubeconfig == "/etc/karmada/kubeconfig"
    with pytest.raises(SettingsError):
        check_settings(Settings(grace_seconds=-1))


def test_a_missing_file_is_a_settings_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="cannot read config file"):
        load_settings(tmp_path / "absent.yaml")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sftp://flink:s3cret@store/ckpt", True),
        ("https://user:pw@host:8443/a@b", True),
        ("ftp://:pw@host/", True),
        ("sftp://flink@store/ckpt", False),  # a user name alone is no secret
        ("s3://bucket/checkpoints", False),
        ("hdfs://namenode:8020/flink", False),  # host:port is not user:password
        ("s3://bucket/dir/user:pw@x", False),  # an @ in the path is not userinfo
        ("/mnt/checkpoints/a:b@c", False),
        ("https://host?sig=a:b@c", False),  # nor is one in the query
    ],
)
def test_a_password_in_the_checkpoint_root_is_recognised(url: str, expected: bool) -> None:
    assert has_password(url) is expected


@pytest.mark.parametrize(
    "key",
    [
        "savepoint:\n  cacheTTLSeconds",
        "controllers:\n  gracefulEvictionTimeoutSeconds",
        "controllers:\n  stateWaitSeconds",
        "controllers:\n  failbackSettleSeconds",
        "server:\n  graceSeconds",
        "server:\n  drainSeconds",
    ],
)
@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_nan_and_infinity_are_refused(tmp_path: Path, key: str, value: str) -> None:
    # NaN compares false with every bound: a cache TTL of NaN never expires, a grace of NaN never ends.
    with pytest.raises(SettingsError, match=key.rpartition(" ")[2] + " must be"):
        load_settings(write(tmp_path, f"{key}: {value}\n"))


@pytest.mark.parametrize("text", ["server:\n  certDir: ''\n", "server:\n  clientCAFile: ' '\n"])
def test_an_empty_path_is_refused(tmp_path: Path, text: str) -> None:
    # Path("") is the working directory: certificates would be written wherever the process was started.
    with pytest.raises(SettingsError, match="must not be empty"):
        load_settings(write(tmp_path, text))


@pytest.mark.parametrize(
    "argv", [["--drain-seconds", "nan"], ["--grace-seconds", "inf"], ["--cert-dir", ""], ["--port", "70000"]]
)
def test_bad_flags_are_one_line_and_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from relay.cli import main

    assert main(["serve", *argv]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("failover-relay: server.")


def test_every_declared_default_is_within_its_bounds() -> None:
    check_settings(Settings())
    assert {key.partition(".")[0] for key in declared()} == {"server", "logging", "savepoint", "controllers", "fence"}


def test_flags_are_derived_from_the_declarations(tmp_path: Path) -> None:
    from relay.cli import build_parser

    args = build_parser().parse_args(
        [
            "serve",
            "--config",
            str(write(tmp_path, FULL)),
            "--port",
            "9000",
            "--no-controllers",
            "--no-cabundle-sync",
            "--savepoint-failure-mode",
            "open",
        ]
    )
    assert flag_values(args) == {
        "server.port": 9000,
        "controllers.mode": "off",
        "server.caBundleSync": False,
        "savepoint.failureMode": "open",
    }
    settings = apply(load_settings(args.config), flag_values(args))
    assert (settings.port, settings.controllers.mode, settings.savepoint.failure_mode) == (9000, "off", "open")
    assert settings.controllers.workers == 4  # the file's, untouched by the flags


def test_the_decisions_take_the_declared_values() -> None:
    assert ControllerSettings().decisions == DecisionSettings()
    # Each of the decisions' settings is declared once, in DecisionSettings, and read from the controllers section.
    loop_keys = {key for key, entry in declared().items() if entry.path[:2] == ("controllers", "decisions")}
    assert "controllers.fenceAfterSeconds" in loop_keys and "controllers.failback" in loop_keys
    assert all(key.startswith("controllers.") for key in loop_keys)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"server:\n  host: caf\xe9\n", "is not UTF-8"),
        (b"\xff\xfe\x00\x01binary", "is not UTF-8"),
        (b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nests too deeply"),
        (b"server: {" * 3000 + b"}" * 3000, "nests too deeply"),
        (b"# " + b"x" * (2 * 1024 * 1024), "is larger than"),
    ],
)
def test_an_unusable_config_file_is_one_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "relay.yaml"
    path.write_bytes(content)
    with pytest.raises(SettingsError, match=message) as raised:
        load_settings(path)
    assert "\n" not in str(raised.value)


def test_a_config_that_never_ends_is_bounded() -> None:
    with pytest.raises(SettingsError, match="is larger than"):
        load_settings(Path("/dev/zero"))


@pytest.mark.parametrize("command", ["serve", "controllers", "inject"])
def test_every_command_refuses_a_bad_config_with_exit_2(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from relay.cli import main

    path = tmp_path / "relay.yaml"
    path.write_bytes(b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n")
    argv = [command, "--config", str(path)] + ([str(path)] if command == "inject" else [])
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "nests too deeply" in error


@pytest.mark.parametrize(
    ("root", "problem"),
    [
        ("https://store.example/ckpt?token=s3cret", "a query or fragment"),
        ("https://store.example/ckpt?X-Amz-Signature=abc", "a query or fragment"),
        ("https://store.example/ckpt#sig=abc", "a query or fragment"),
        ("https://ghp_s3cret@store.example/ckpt", "a user name"),
        ("sftp://flink@store/ckpt", "a user name"),
    ],
)
def test_a_checkpoint_root_carrying_a_credential_is_refused(tmp_path: Path, root: str, problem: str) -> None:
    with pytest.raises(SettingsError, match=f"must not carry {problem}") as raised:
        load_settings(write(tmp_path, f"savepoint:\n  checkpointRoot: '{root}'\n"))
    assert "s3cret" not in str(raised.value)


@pytest.mark.parametrize(
    "root", ["s3://flink/checkpoints", "/mnt/checkpoints", "hdfs://namenode:8020/flink", "file:///var/ckpt"]
)
def test_a_plain_checkpoint_root_is_accepted(tmp_path: Path, root: str) -> None:
    assert load_settings(write(tmp_path, f"savepoint:\n  checkpointRoot: '{root}'\n")).savepoint.checkpoint_root == root


def test_a_generic_setting_type_is_read_by_its_origin() -> None:
    # Mapping[str, Any] and tuple[str, ...] are no classes: isinstance() refuses them, so the loader maps each to what
    # YAML gives; a type it does not know stops at the declarations, never at a user's file.
    from collections.abc import Mapping
    from typing import Any

    from relay.settings import yaml_type

    assert (yaml_type(Mapping[str, Any]), yaml_type(tuple[str, ...]), yaml_type(float)) == (dict, list, (int, float))
    with pytest.raises(TypeError, match="cannot be read from YAML"):
        yaml_type(dict[str, Any])


ROOT = "savepoint:\n  checkpointRoot: s3://flink/checkpoints\n"


@pytest.mark.parametrize(
    ("content", "on"),
    [
        ("", False),  # no checkpoint root: nothing to write records to
        (ROOT, True),  # the default wherever it can work, so a member relay installed later fences at once
        (ROOT + "fence:\n  storage: false\n", False),
        (ROOT + 'controllers:\n  fencing: "off"\n', False),  # nothing is ever fenced
        (ROOT + "server:\n  member: true\n", False),  # a member relay writes none
        (ROOT + "fence:\n  storage: true\n", True),
    ],
)
def test_the_storage_fence_is_on_wherever_it_can_work_unless_turned_off(tmp_path: Path, content: str, on: bool) -> None:
    assert load_settings(write(tmp_path, content)).storage_fence_on() is on


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("fence:\n  storage: true\n", "fence.storage writes fence records below savepoint.checkpointRoot"),
        (ROOT + 'fence:\n  storage: true\ncontrollers:\n  fencing: "off"\n', "it needs controllers.fencing"),
        (ROOT + "server:\n  member: true\nfence:\n  storage: true\n", "fence.storage is the control plane's"),
        (ROOT + "fence:\n  memberCluster: member1\n", "fence.memberCluster is for a member relay"),
        (ROOT + "server:\n  member: true\nfence:\n  memberCluster: ../m1\n", "is not a Karmada cluster name"),
        (ROOT + "server:\n  member: true\nfence:\n  memberKubeconfig: /k\n", "only with fence.memberCluster"),
    ],
)
def test_inconsistent_storage_fence_settings_are_refused_in_one_line(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "relay.yaml"
    path.write_text(content)
    with pytest.raises(SettingsError, match=message) as raised:
        load_settings(path)
    assert "\n" not in str(raised.value)


def test_a_config_key_given_twice_is_refused_with_both_lines(tmp_path: Path) -> None:
    # The last one would win silently: the port here would be 8443 although the first section says 9443.
    path = write(tmp_path, "server:\n  port: 9443\nlogging:\n  level: info\nserver:\n  port: 8443\n")
    with pytest.raises(SettingsError) as raised:
        load_settings(path)
    assert str(raised.value) == f"config file {path}:5: key 'server' already given at line 1"
    nested = write(tmp_path, "server:\n  port: 9443\n  port: 8443\n")
    with pytest.raises(SettingsError, match=":3: key 'port' already given at line 2"):
        load_settings(nested)
