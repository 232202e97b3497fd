"""The checkpoint storage the savepoint settings name, opened: what `serve`, `inject`, `status` and the storage
fence look state up with. Opening reads nothing (fsspec makes the filesystem objects), though some filesystems
connect when they are made; whatever cannot be used is a `SettingsError` in one line, secrets masked."""

from __future__ import annotations

from typing import NamedTuple

from failover.core.api import GroupKind
from failover.state.checkpoints import CheckpointStore, LayoutError, open_store
from failover.state.profiles import InjectionProfile
from relay.settings.declarations import SavepointSettings, SettingsError
from relay.settings.masking import one_line_cause


class InjectionSetup(NamedTuple):
    """What a savepoint lookup runs with: the profiles by kind, the checkpoint root's store, the allowed roots'."""

    profiles: dict[GroupKind, InjectionProfile]
    store: CheckpointStore
    allowed_roots: tuple[CheckpointStore, ...]


def open_injection(settings: SavepointSettings) -> InjectionSetup:
    """The profiles and the stores of checkpointRoot and allowedRoots; needs checkpointRoot. SettingsError names
    what cannot work."""
    profiles = settings.injection_profiles()
    store = _open(settings, "savepoint.checkpointRoot", settings.checkpoint_root or "")  # "": LayoutError, no root
    allowed_roots = tuple(
        _open(settings, f"savepoint.allowedRoots[{index}]", url) for index, url in enumerate(settings.allowed_roots)
    )
    return InjectionSetup(profiles, store, allowed_roots)


def _open(settings: SavepointSettings, key: str, url: str) -> CheckpointStore:
    try:
        return open_store(url, settings.storage_options)
    except LayoutError as error:
        raise SettingsError(str(error)) from None
    # Some fsspec filesystems connect when created (ftp, sftp, smb, and any with a client made eagerly) and fail
    # with their own classes (socket.gaierror, ftplib.error_perm, paramiko's SSHException, a TypeError for an
    # option they do not take): whatever it is, the root cannot be used, said in one line.
    except Exception as error:  # noqa: BLE001  fsspec backends raise anything when they connect
        raise SettingsError(f"{key} {url}: cannot open: {one_line_cause(error, settings.storage_options)}") from None
