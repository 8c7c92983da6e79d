"""GraphiQL's browser assets: which files, where they come from, fetching them once."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

#: Where the fetched assets live (git-ignored; served at /graphiql/assets/).
ASSETS_DIR = Path(__file__).resolve().parent / "assets"


@dataclass(frozen=True)
class Asset:
    """One file of an npm package: served as ``name``, checked against ``sri``."""

    name: str  # file name under ASSETS_DIR and the served path
    package: str  # npm package spec, name@version
    path: str  # path inside the package
    sri: str  # Subresource Integrity hash (sha384), as the CDN serves it

    @property
    def cdn_url(self) -> str:
        """The same file on unpkg.com."""
        return f"https://unpkg.com/{self.package}/{self.path}"

    def check(self, data: bytes) -> bool:
        """Whether ``data`` is this file (its sha384 matches ``sri``)."""
        digest = base64.b64encode(hashlib.sha384(data).digest()).decode()
        return self.sri == f"sha384-{digest}"


#: The versions Strawberry's own GraphiQL page uses, with the same SRI hashes.
ASSETS: tuple[Asset, ...] = (
    Asset(
        "react.production.min.js",
        "react@18.2.0",
        "umd/react.production.min.js",
        "sha384-tMH8h3BGESGckSAVGZ82T9n90ztNXxvdwvdM6UoR56cYcf+0iGXBliJ29D+wZ/x8",
    ),
    Asset(
        "react-dom.production.min.js",
        "react-dom@18.2.0",
        "umd/react-dom.production.min.js",
        "sha384-bm7MnzvK++ykSwVJ2tynSE5TRdN+xL418osEVF2DE/L/gfWHj91J2Sphe582B1Bh",
    ),
    Asset(
        "graphiql.min.css",
        "graphiql@3.8.3",
        "graphiql.min.css",
        "sha384-Mq3vbRBY71jfjQAt/DcjxUIYY33ksal4cgdRt9U/hNPvHBCaT2JfJ/PTRiPKf0aM",
    ),
    Asset(
        "graphiql.min.js",
        "graphiql@3.8.3",
        "graphiql.min.js",
        "sha384-HbRVEFG0JGJZeAHCJ9Xm2+tpknBQ7QZmNlO/DgZtkZ0aJSypT96YYGRNod99l9Ie",
    ),
    Asset(
        "plugin-explorer.css",
        "@graphiql/plugin-explorer@1.0.2",
        "dist/style.css",
        "sha384-5DFJlDPW2tSATRbM8kzoP1j194jexLswuNmClWoRr2Q0x7R68JIQzPHZ02Faktwi",
    ),
    Asset(
        "plugin-explorer.umd.js",
        "@graphiql/plugin-explorer@1.0.2",
        "dist/index.umd.js",
        "sha384-2oonKe47vfHIZnmB6ZZ10vl7T0Y+qrHQF2cmNTaFDuPshpKqpUMGMc9jgj9MLDZ9",
    ),
)


def assets_installed(directory: Path = ASSETS_DIR) -> bool:
    """Whether every asset is in ``directory`` (presence only: checked when fetched)."""
    return all((directory / a.name).is_file() for a in ASSETS)


def _from_npm(directory: Path) -> str:
    """Fetch with ``npm pack`` (the registry npm is configured for); return how."""
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed")
    packages = sorted({a.package for a in ASSETS})
    with tempfile.TemporaryDirectory(prefix="roost-graphiql-") as tmp:
        out = subprocess.run(
            [npm, "pack", "--silent", *packages],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if out.returncode != 0:
            raise RuntimeError(f"npm pack failed: {out.stderr.strip()[-500:]}")
        tarballs = out.stdout.split()
        files: dict[str, bytes] = {}
        for package, tarball in zip(packages, tarballs, strict=True):
            with tarfile.open(Path(tmp) / tarball) as tar:
                for asset in (a for a in ASSETS if a.package == package):
                    member = tar.extractfile(f"package/{asset.path}")
                    if member is None:
                        raise RuntimeError(f"{asset.path} is not in {tarball}")
                    files[asset.name] = member.read()
    _store(directory, files)
    return "npm pack"


def _from_cdn(directory: Path) -> str:
    """Fetch each file from unpkg.com; return how."""
    files = {}
    for asset in ASSETS:
        with urllib.request.urlopen(asset.cdn_url, timeout=60) as resp:
            files[asset.name] = resp.read()
    _store(directory, files)
    return "unpkg.com"


def _store(directory: Path, files: dict[str, bytes]) -> None:
    """Check every file against its SRI hash, then write them all (or none)."""
    for asset in ASSETS:
        if not asset.check(files[asset.name]):
            raise RuntimeError(f"{asset.name} of {asset.package} does not match its SRI hash")
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        tmp = directory / f".{name}.part"
        with open(tmp, "wb") as f:
            f.write(data)
        tmp.replace(directory / name)


def fetch_assets(directory: Path = ASSETS_DIR, *, force: bool = False) -> str:
    """Put GraphiQL's assets in ``directory`` (``npm pack``, else unpkg.com; SRI-checked);
    how they came. RuntimeError (with every reason) when neither way works."""
    if assets_installed(directory) and not force:
        return "present"
    errors = []
    for way in (_from_npm, _from_cdn):
        try:
            return way(directory)
        except Exception as exc:  # try the next way; report all if none works
            errors.append(f"{way.__name__[1:]}: {exc}")
    raise RuntimeError("; ".join(errors))
