"""Channels and profiles sent to workers by content hash, so a remote worker needs no shared filesystem.

The coordinator reads each channel a study uses once (``pack_channel``): its TOML definition, every
Touchstone file the definition names, or a bare Touchstone file, and a SerDes profile given as a
TOML path. Each file is identified by the SHA-256 of its bytes. A task carries only the digests
(``StudyItem.needs``), never the bytes and never a path: a worker looks the digests up in its
content folder (``content_dir()``, one per host and user, files named by digest and written
atomically, so worker processes on one host share them). When a digest is missing the task returns
``{NEED_CONTENT: [...]}`` at once and the coordinator sends the same task again with those files'
bytes attached (``StudyItem.payload``); a worker therefore receives each file at most once, whatever
the executor (serial, local processes, dask). A file is checked against its digest when it is
written and once per process before it is used.

On the worker the combination's channel becomes ``ChannelRef(kind="content", ref="DIGEST/NAME")``
(``NAME`` keeps the entry file's name, for messages and the synthetic model), which
``eqtune.study.compute.build_channel`` builds through ``channel_for_content``; the per-worker engine
cache is keyed by that digest, not by a path that may hold other bytes tomorrow.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import os
import tempfile
import threading
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eqtune.errors import ConfigError
from eqtune.study.spec import ChannelRef, Combination

#: a task's result that asks for file contents instead of a row: {NEED_CONTENT: [digest, ...]}
NEED_CONTENT = "__need_content__"


def digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class FileRef:
    """One file by content: its SHA-256 and its name (the name keeps the suffix the readers need)."""

    digest: str
    name: str


@dataclass(frozen=True)
class ChannelContent:
    """A channel as content: a TOML definition (``definition``, with the ``file`` of each table
    mapped through ``files``) or a bare Touchstone file (``definition`` None, ``files`` = that file)."""

    digest: str  # over the definition and every file: the engine cache key
    name: str  # stem of the entry file (the channel's default name)
    source: str  # where the coordinator read it (messages only)
    definition: Mapping[str, Any] | None
    files: tuple[tuple[str, FileRef], ...]  # (the reference as written in the definition, the file)


@dataclass(frozen=True)
class StudyItem:
    """What a task carries: the combination, its channel and profile by content, optional bytes."""

    combo: Combination
    channel: ChannelContent
    profile: FileRef | None = None
    payload: Mapping[str, bytes] | None = None  # digest -> bytes, only when a worker asked for them

    @property
    def index(self) -> int:
        return self.combo.index

    def needs(self) -> list[FileRef]:
        refs = [f for _ref, f in self.channel.files]
        return refs + ([self.profile] if self.profile is not None else [])

    def with_payload(self, payload: Mapping[str, bytes]) -> StudyItem:
        return dataclasses.replace(self, payload=dict(payload))


# --------------------------------------------------------------------------- coordinator side


class ContentPacker:
    """Reads and hashes each file once per study; keeps the bytes to answer a worker's request."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self._files: dict[str, FileRef] = {}
        self._channels: dict[str, ChannelContent] = {}
        self._by_ref: dict[str, ChannelContent] = {}  # the reference as the spec gives it -> content

    def file(self, path: Path) -> FileRef:
        key = str(path.resolve())
        ref = self._files.get(key)
        if ref is None:
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
            ref = FileRef(digest_bytes(data), path.name)
            self.blobs[ref.digest] = data
            self._files[key] = ref
        return ref

    def channel(self, ref: ChannelRef) -> ChannelContent:
        """The content of the channel file behind ``ref`` (a library name or a path)."""
        from eqtune.channel.library import resolve

        got = self._by_ref.get(ref.ref)  # every variant of a sweep names the same base: resolve it once
        if got is not None:
            return got
        path = resolve(ref.ref)
        key = str(path.resolve())
        got = self._channels.get(key)
        if got is not None:
            self._by_ref[ref.ref] = got
            return got
        if path.suffix.lower() != ".toml":
            f = self.file(path)
            got = ChannelContent(f.digest, path.stem, str(path), None, (("", f),))
        else:
            entry = self.file(path)
            try:
                doc = tomllib.loads(self.blobs[entry.digest].decode("utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{path}: invalid TOML: {exc}") from None
            files: dict[str, FileRef] = {}
            for table in _file_tables(doc):
                raw = table["file"]
                p = Path(raw) if Path(raw).is_absolute() else path.parent / raw
                if p.is_file():  # a missing file is reported by the channel builder, on the worker
                    files[raw] = self.file(p)
            h = hashlib.sha256(entry.digest.encode())
            for raw, f in sorted(files.items()):
                h.update(f"\0{raw}\0{f.digest}".encode())
            got = ChannelContent(h.hexdigest(), path.stem, str(path), doc, tuple(sorted(files.items())))
        self._channels[key] = self._by_ref[ref.ref] = got
        return got

    def profile(self, profile: str | None) -> FileRef | None:
        """A SerDes profile given as a TOML path, by content; a shipped profile name stays a name."""
        if profile is None or not profile.endswith(".toml"):
            return None
        return self.file(Path(profile))

    def item(self, combo: Combination) -> StudyItem:
        return StudyItem(combo, self.channel(combo.channel), self.profile(combo.profile))

    def payload(self, digests: list[str]) -> dict[str, bytes]:
        return {d: self.blobs[d] for d in digests if d in self.blobs}


def _file_tables(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key in ("segments", "aggressors"):
        for table in doc.get(key, []) if isinstance(doc.get(key), list) else []:
            if isinstance(table, dict) and isinstance(table.get("file"), str):
                out.append(table)
    return out


# --------------------------------------------------------------------------- worker side


_LOCK = threading.Lock()
_VERIFIED: set[str] = set()  # digests checked against their file in this process
_CHANNELS: dict[str, ChannelContent] = {}  # channel digest -> content, for channel_for_content


def content_dir() -> Path:
    """This host's content folder (``$EQTUNE_STUDY_CONTENT`` or a per-user folder in the temp dir)."""
    env = os.environ.get("EQTUNE_STUDY_CONTENT")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(env) if env else Path(tempfile.gettempdir()) / f"eqtune-study-content-{uid}"


def _path(ref: FileRef) -> Path:
    return content_dir() / ref.digest / ref.name


def _write(ref: FileRef, data: bytes) -> None:
    if digest_bytes(data) != ref.digest:
        raise ConfigError(f"{ref.name}: the bytes received do not match their digest {ref.digest[:12]}")
    target = _path(ref)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _present(ref: FileRef) -> bool:
    if ref.digest in _VERIFIED:
        return _path(ref).is_file()
    try:
        data = _path(ref).read_bytes()
    except OSError:
        return False
    if digest_bytes(data) != ref.digest:  # a damaged or foreign file: ask for the real one
        return False
    _VERIFIED.add(ref.digest)
    return True


def materialize(item: StudyItem) -> list[str]:
    """Make every file of ``item`` present in this host's content folder; the digests still missing."""
    missing = []
    with _LOCK:
        for ref in item.needs():
            if _present(ref):
                continue
            data = (item.payload or {}).get(ref.digest)
            if data is None:
                missing.append(ref.digest)
                continue
            _write(ref, data)
            _VERIFIED.add(ref.digest)
        if not missing:
            _CHANNELS[item.channel.digest] = item.channel
    return missing


def worker_combination(item: StudyItem) -> Combination:
    """The combination with its channel and profile pointing at this worker's content (see module doc)."""
    ch = item.channel
    entry = ch.files[0][1].name if ch.definition is None else f"{ch.name}.toml"
    ref = dataclasses.replace(item.combo.channel, kind="content", ref=f"{ch.digest}/{entry}")
    profile = str(_path(item.profile)) if item.profile is not None else item.combo.profile
    return dataclasses.replace(item.combo, channel=ref, profile=profile)


def channel_for_content(ref: ChannelRef, *, temperature_c: float | None, aggressors: bool,
                        df_hz: float | None = None):
    """Build a ``kind="content"`` channel (``ref.params`` substituted into its host trace, as a sweep);
    ``df_hz``: its frequency step (None: the definition's own)."""
    from eqtune.channel import channel_from_definition, load_channel
    from eqtune.study.channels import TRACE_PARAMS, variant_definition

    digest = ref.ref.split("/", 1)[0]
    with _LOCK:
        content = _CHANNELS.get(digest)
    if content is None:
        raise ConfigError(f"channel {ref.label!r}: its content {digest[:12]} was not received by this worker")
    kw: dict[str, Any] = {"aggressors": aggressors}
    if temperature_c is not None:
        kw["temperature_c"] = temperature_c
    if df_hz is not None:
        kw["df_hz"] = df_hz
    if content.definition is None:
        if any(k in TRACE_PARAMS for k, _v in ref.params):
            raise ConfigError(f"{content.source}: a length/material sweep needs a channel definition "
                              "(.toml or library name) with a trace segment, not a Touchstone file")
        return load_channel(_path(content.files[0][1]), **kw)
    doc = copy.deepcopy(dict(content.definition))
    local = {raw: str(_path(f)) for raw, f in content.files}
    for table in _file_tables(doc):
        if table["file"] in local:
            table["file"] = local[table["file"]]
    params = dict(ref.params)
    if "material" in params:
        from eqtune.channel.materials import get_material

        get_material(params["material"])  # unknown material -> ConfigError naming the choices
    base_dir = Path(content.source).parent
    variant = variant_definition(doc, params, base_dir=base_dir, where=content.source)
    desc = " ".join(f"{k}={v}" for k, v in sorted(params.items()) if k in TRACE_PARAMS)
    return channel_from_definition(variant, base_dir=base_dir, name=content.name,
                                   source=f"{content.source} [{desc}]" if desc else content.source, **kw)
