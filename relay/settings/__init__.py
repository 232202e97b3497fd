"""Settings of `failover-relay`: each declared once, read from defaults, the YAML config file, then flags.

One module per job:

- `declarations`: the settings themselves, `Settings` and its sections, each field one `setting(...)` with its key,
  default, bounds and flag (the decisions' own are failover/core/loop_settings.py, nested as `controllers.decisions`);
- `loading`: the loader: `declared()`, the one walk over the declarations; the config file; conversion by type; the
  bounds and the checks across settings;
- `flags`: the command-line flags derived from the declarations, and the settings a command runs with;
- `masking`: credentials kept out of messages: a cause in one line with secrets masked, credentials in URLs;
- `storage`: the checkpoint storage the savepoint settings name, opened for a lookup;
- `json_schema`: the config file as a JSON Schema, which the chart's `config` value is checked against.

A value is refused the same way whichever way it came in, the file or a flag: exit 2 with one line naming the key.
Code outside this package imports these names from `relay.settings`; the modules import each other.
"""

from relay.settings.declarations import (
    IN_CLUSTER_DRAIN_SECONDS,
    ControllerMode,
    ControllerSettings,
    FenceSettings,
    LogFormat,
    LogLevel,
    SavepointSettings,
    Settings,
    SettingsError,
    default_cert_dir,
    default_host,
    in_cluster,
)
from relay.settings.flags import add_setting_flags, flag_values, settings_of
from relay.settings.loading import (
    MAX_CONFIG_BYTES,
    SECTIONS,
    Declared,
    apply,
    check_settings,
    declared,
    load_settings,
    yaml_type,
)
from relay.settings.masking import MAX_CAUSE_LENGTH, has_password, one_line_cause, secret_in_url
from relay.settings.storage import InjectionSetup, open_injection

__all__ = [
    "IN_CLUSTER_DRAIN_SECONDS",
    "MAX_CAUSE_LENGTH",
    "MAX_CONFIG_BYTES",
    "SECTIONS",
    "ControllerMode",
    "ControllerSettings",
    "Declared",
    "FenceSettings",
    "InjectionSetup",
    "LogFormat",
    "LogLevel",
    "SavepointSettings",
    "Settings",
    "SettingsError",
    "add_setting_flags",
    "apply",
    "check_settings",
    "declared",
    "default_cert_dir",
    "default_host",
    "flag_values",
    "has_password",
    "in_cluster",
    "load_settings",
    "one_line_cause",
    "open_injection",
    "secret_in_url",
    "settings_of",
    "yaml_type",
]
