"""The table's Delta tables copied to object storage (S3 and S3-compatible), version by version.

``grstats spark ingest --publish s3://bucket/prefix`` (and ``compact --publish``) keeps a copy
of each dataset's Delta table (:mod:`grstats.spark.delta`) under the URI, for the engines that
read tables from object storage (Trino, DuckDB with httpfs, Spark with hadoop-aws,
``deltalake``), at ``URI/data``, ``URI/rollups/members``, ``URI/rollups/groups`` and
``URI/events``. The ingest's own working copy stays the ``--table`` directory on local
storage: its commit log, its lock and its staging need POSIX renames, which object storage
has not.

A Delta table's versions are its ``_delta_log/<version>.json`` entries, each naming the files
it adds and removes (PROTOCOL.md, "Delta Log Entries"). :func:`publish` copies each local
version the remote lacks, in order: first the data files its entry adds, then the entry itself
under the same name. A remote reader therefore sees version N only once every file of N is
there, and sees exactly the local table's versions, byte for byte (checkpoints too, after
their version). A run stopped anywhere leaves at most files no remote entry names yet, which
the next run copies again; nothing is lost and nothing doubled. Files a compaction replaced
stay remote, for readers of earlier versions, until a local vacuum has deleted them: then
``prune`` deletes the remote copies too.

One writer: the remote has no lock of its own; the ingest or compaction holding the local
table's lock is the only one that publishes (delta-rs's own S3 writers need a locking provider,
DynamoDB, for several writers; grstats never writes the remote any other way). Credentials,
region and endpoint are the AWS SDK's: ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION`` (or ``AWS_DEFAULT_REGION``), ``AWS_ENDPOINT_URL`` for an
S3-compatible server (MinIO, Ceph, moto), or the instance's role; readers pass the same to
``deltalake`` (``storage_options``, or the environment).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs

from grstats.spark.delta import DELTA_LOG, datasets_present

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

_ENTRY = re.compile(r"(\d{20})\.json")
_CHECKPOINT = re.compile(r"(\d{20})\.checkpoint(\.\d+\.\d+)?\.parquet")
_LAST_CHECKPOINT = "_last_checkpoint"


class PublishError(Exception):
    """The copy on object storage cannot be read or written (the message names the URI)."""


def remote_filesystem(
    uri: str, environ: Mapping[str, str] = os.environ
) -> tuple[pafs.FileSystem, str]:
    """The file system of ``uri`` (``s3://bucket/prefix``) and the path in it, from ``environ``."""
    parsed = urlparse(uri)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise PublishError(f"--publish: {uri!r} is not an s3://bucket/prefix URI")
    endpoint = environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL")
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    options: dict[str, object] = {}
    if endpoint:
        found = urlparse(endpoint)
        options["endpoint_override"] = found.netloc or endpoint
        options["scheme"] = found.scheme or "https"
    if region:
        options["region"] = region
    try:
        system = pafs.S3FileSystem(**options)  # credentials: the AWS SDK's own chain
    except (OSError, ValueError) as exc:
        raise PublishError(f"--publish {uri}: {exc}") from exc
    return system, f"{parsed.netloc}/{parsed.path.strip('/')}".rstrip("/")


def storage_options(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``deltalake``'s ``storage_options`` for the same remote (what a reader passes)."""
    options = {
        key: environ[key]
        for key in (
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_REGION",
            "AWS_ENDPOINT_URL",
        )
        if environ.get(key)
    }
    if options.get("AWS_ENDPOINT_URL", "").startswith("http://"):
        options["AWS_ALLOW_HTTP"] = "true"
    return options


def _listing(system: pafs.FileSystem, path: str) -> set[str]:
    """The names of the files directly under ``path`` (none when it does not exist)."""
    infos = system.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return {Path(info.path).name for info in infos if info.type == pafs.FileType.File}


def _copy(system: pafs.FileSystem, local: Path, remote: str) -> int:
    """Copy ``local`` to ``remote`` (its directories made as needed); return the bytes."""
    data = local.read_bytes()
    with system.open_output_stream(remote) as out:
        out.write(data)
    return len(data)


def _entry_files(entry: Path) -> list[str]:
    """The data files (relative to the dataset, decoded) that a log entry adds."""
    added = []
    for line in entry.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "add" in action:
            added.append(unquote(action["add"]["path"]))
    return added


def publish(
    table_dir: Path | str,
    uri: str,
    *,
    prune: bool = False,
    say: Callable[[str], None] | None = None,
    environ: Mapping[str, str] = os.environ,
) -> dict[str, int]:
    """Copy the versions of each dataset's Delta table that ``uri`` lacks; see the module.

    With ``prune``, also delete the remote data files that the local table no longer has (a
    vacuum deleted them). Returns the versions and files copied and the files pruned. Only a
    holder of the table's lock calls it.

    Raises:
        PublishError: the remote cannot be listed or written.
    """
    tell = say or (lambda _message: None)
    system, root = remote_filesystem(uri, environ)
    done = {"versions": 0, "files": 0, "bytes": 0, "pruned": 0}
    table = Path(table_dir)
    try:
        for dataset in datasets_present(table):
            local, remote = table / dataset, f"{root}/{dataset}"
            _publish_dataset(system, local, remote, done)
            if prune:
                done["pruned"] += _prune(system, local, remote)
    except OSError as exc:
        raise PublishError(f"--publish {uri}: {exc}") from exc
    if done["versions"] or done["pruned"]:
        tell(
            f"published {done['versions']} Delta versions ({done['files']} files, "
            f"{done['bytes']:,} bytes) to {uri}"
            + (f", pruned {done['pruned']} files vacuumed here" if done["pruned"] else "")
        )
    return done


def _publish_dataset(
    system: pafs.FileSystem, local: Path, remote: str, done: dict[str, int]
) -> None:
    """Copy ``local``'s Delta versions that ``remote`` lacks, each after its files."""
    log = local / DELTA_LOG
    have = _listing(system, f"{remote}/{DELTA_LOG}")
    entries = sorted(p for p in log.iterdir() if _ENTRY.fullmatch(p.name))
    _check_same_table(system, entries, have, remote)
    for entry in entries:
        if entry.name in have:
            continue
        for name in _entry_files(entry):
            done["bytes"] += _copy(system, local / name, f"{remote}/{name}")
            done["files"] += 1
        done["bytes"] += _copy(system, entry, f"{remote}/{DELTA_LOG}/{entry.name}")
        done["versions"] += 1
    for checkpoint in sorted(p for p in log.iterdir() if _CHECKPOINT.fullmatch(p.name)):
        if checkpoint.name not in have:
            _copy(system, checkpoint, f"{remote}/{DELTA_LOG}/{checkpoint.name}")
    last = log / _LAST_CHECKPOINT
    if last.is_file():
        _copy(system, last, f"{remote}/{DELTA_LOG}/{_LAST_CHECKPOINT}")


def _check_same_table(
    system: pafs.FileSystem, entries: list[Path], have: set[str], remote: str
) -> None:
    """Refuse a remote whose first kept entry differs from ours: it is another table's copy.

    Each table's entries carry their own commit times and ids, so the same name with other
    bytes means the URI holds another table (or another release's copy of a converted one):
    nothing is written over it.
    """
    for entry in entries:
        if entry.name not in have:
            continue
        with system.open_input_stream(f"{remote}/{DELTA_LOG}/{entry.name}") as found:
            if found.read() != entry.read_bytes():
                raise PublishError(
                    f"{remote}/{DELTA_LOG}/{entry.name} is not this table's entry of that "
                    "version: the URI holds another table's copy; publish to a new prefix"
                )
        return


def _prune(system: pafs.FileSystem, local: Path, remote: str) -> int:
    """Delete the remote data files whose local copies are gone (vacuumed); return how many."""
    infos = system.get_file_info(pafs.FileSelector(remote, recursive=True, allow_not_found=True))
    pruned = 0
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        relative = info.path[len(remote) + 1 :]
        if relative.startswith(f"{DELTA_LOG}/") or (local / relative).exists():
            continue
        system.delete_file(info.path)
        pruned += 1
    return pruned
