"""Trained models as bytes, between a build's process and Dask workers that share no filesystem
with it: a cache entry packed by :func:`pack` lands in another cache through :func:`install`, which
writes through the cache's own lock, temporary directory and rename, and checks every file against
the manifest's checksums (a truncated or altered entry never lands; one already there is kept).
"""
from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

from ..paths import cache_dir
from . import cache

__all__ = ["entry_name", "pack", "pack_jobs", "install"]

MANIFEST = "manifest.json"


def entry_name(job) -> str | None:
    """The name of ``job``'s cache entry (None for a job that is not a cached model)."""
    if not hasattr(job, "grammar_object") or not hasattr(job, "config"):
        return None
    return cache._entry_path(job.grammar_object(), job.config, job.seed, job.kind).name


def pack(path: Path) -> bytes:
    """The files of a cache entry as an uncompressed tar (names relative to the entry, sorted)."""
    def plain(info: tarfile.TarInfo) -> tarfile.TarInfo:  # the same entry packs to the same bytes
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for p in sorted(Path(path).rglob("*")):
            if p.is_file():
                tar.add(p, arcname=p.relative_to(path).as_posix(), recursive=False, filter=plain)
    return buffer.getvalue()


def pack_jobs(jobs) -> dict[str, bytes]:
    """Each model of ``jobs`` that is in this cache, packed, by entry name."""
    out = {}
    for job in jobs:
        name = entry_name(job)
        if name and name not in out and (cache_dir() / name / MANIFEST).is_file():
            out[name] = pack(cache_dir() / name)
    return out


def install(name: str, blob: bytes) -> Path:
    """Put a packed entry into this machine's cache as ``name`` (atomically; nothing when it is
    there). Raises ``ValueError`` when the bytes are not a packed entry (no manifest, a checksum
    that does not match) or a member would land outside the entry."""
    if "/" in name or name.startswith("."):
        raise ValueError(f"not a cache entry name: {name!r}")
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r") as tar:
        members = tar.getmembers()
        names = [m.name for m in members]
        if MANIFEST not in names:
            raise ValueError(f"the packed model {name} has no {MANIFEST}")
        manifest = json.loads(tar.extractfile(MANIFEST).read())
        info = {k: v for k, v in manifest.items() if k != "sha256"}
        if sorted(manifest.get("sha256", {})) != sorted(n for n in names if n != MANIFEST):
            raise ValueError(f"the packed model {name} does not hold the files its manifest lists")

        def make(missing, tmps: list[Path]) -> None:
            tmp = tmps[0]
            tmp.mkdir(parents=True, exist_ok=True)
            for m in members:
                target = (tmp / m.name).resolve()
                if not m.isfile() or not target.is_relative_to(tmp.resolve()):
                    raise ValueError(f"the packed model {name} holds {m.name!r}, which is not a file of it")
                if m.name == MANIFEST:  # written again by the cache, from what landed
                    continue
                data = tar.extractfile(m).read()
                if hashlib.sha256(data).hexdigest() != manifest["sha256"][m.name]:
                    raise ValueError(f"the packed model {name}: {m.name} does not match its checksum")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)

        return cache._cached_many([cache_dir() / name], make, [info])[0]
