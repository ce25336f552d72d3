"""Where mlmbook keeps things, and every ``MLMBOOK_*`` environment variable, in one place: a build's
chapter, a test and a reader's notebook all read their locations and settings here. The table of
variables is in ``docs/INTERFACES.md``; an empty variable counts as unset.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .errors import UsageError

__all__ = ["write_json_atomic", "cache_dir", "data_dirs", "repo_root", "find_root", "build_dir",
           "env_str", "env_int", "env_flag", "hf_offline"]


def env_str(name: str) -> str | None:
    """The value of ``$name``, or None when it is unset or empty."""
    return os.environ.get(name, "").strip() or None


def env_int(name: str, default: int, minimum: int = 0) -> int:
    """``$name`` as an integer ≥ ``minimum`` (``default`` when unset; a bad one: a UsageError)."""
    value = env_str(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise UsageError(f"{name}={value!r} is not an integer; unset it or give a whole number") from None
    if number < minimum:
        raise UsageError(f"{name}={number} is below its minimum of {minimum}")
    return number


def env_flag(name: str) -> bool:
    """``$name`` as a boolean: ``1``, ``true``, ``yes``, ``on`` (any case) are true."""
    return (env_str(name) or "").lower() in ("1", "true", "yes", "on")


def hf_offline() -> bool:
    """Whether Hugging Face must not reach the Hub (``HF_HUB_OFFLINE``, parsed as a flag)."""
    return env_flag("HF_HUB_OFFLINE")


def find_root(start: str | os.PathLike | None = None) -> Path | None:
    """The nearest directory at or above ``start`` (default: the working directory) with a
    ``_toc.yml`` file and a ``book/`` folder, or None."""
    here = Path(start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "_toc.yml").is_file() and (candidate / "book").is_dir():
            return candidate
    return None


def repo_root() -> Path:
    """The repository root of the book: ``$MLMBOOK_ROOT`` if set (the build sets it for every
    chapter), else the book root above the current directory, else the checkout this package lives
    in (without a ``_toc.yml`` when mlmbook was installed from a wheel)."""
    env = env_str("MLMBOOK_ROOT")
    if env:
        return Path(env).expanduser().resolve()
    found = find_root() or find_root(Path(__file__).parent)
    return found if found is not None else Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """The model cache directory (``$MLMBOOK_CACHE``, default ``~/.cache/mlmbook``)."""
    env = env_str("MLMBOOK_CACHE")
    return Path(env).expanduser().resolve() if env else Path.home() / ".cache" / "mlmbook"


def data_dirs(subdir: str | None = None) -> list[Path]:
    """Folders searched for a data file, in order: ``$MLMBOOK_DATA``, ``<root>/data`` and
    ``<root>/../shared/data``, each followed by its ``subdir`` when one is given."""
    env = env_str("MLMBOOK_DATA")
    root = repo_root()
    bases = [Path(env).expanduser()] if env else []
    bases += [root / "data", root.parent / "shared" / "data"]
    return [d for b in bases for d in ([b, b / subdir] if subdir else [b])]


def build_dir(root: Path | None = None) -> Path:
    """Build output: ``$MLMBOOK_BUILD`` if set (tests and parallel runs use their own), else
    ``<root>/_build``."""
    env = env_str("MLMBOOK_BUILD")
    return Path(env).expanduser().resolve() if env else (root or repo_root()) / "_build"


def write_json_atomic(path: str | os.PathLike, data, indent: int | None = None, sort_keys: bool = False) -> Path:
    """Write ``data`` as JSON to ``path`` so that a reader sees the old file or the whole new one: a
    temporary file beside it (a killed writer leaves at most a hidden ``.<name>.*.tmp``) replaces it
    in one ``os.replace``, with the permissions ``open(path, "w")`` gives (not ``mkstemp``'s)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=indent, sort_keys=sort_keys)
            if indent is not None:
                fh.write("\n")
        umask = os.umask(0)                         # read the umask (setting it is the only way)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
