"""External datasets: a registry, a local cache, download-if-missing and hash checks.

External data is never committed to the course repository. Each file is looked up in
the cache folder (`$COURSE_DATA_DIR`, default `data/cache/` in the repository) as
`<cache>/<dataset>/<file>`. A missing file is downloaded from its pinned upstream
address (with a timeout) and kept only if its sha256 matches; without internet the
error says exactly which file to put where.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import tarfile
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CHROMA_CORPORA",
    "DOWNLOAD_TIMEOUT_S",
    "REGISTRY",
    "REPO_ROOT",
    "DataNotFoundError",
    "Dataset",
    "RemoteFile",
    "data_dir",
    "fetch",
    "file_sha256",
    "load_chroma_corpus",
    "load_chroma_questions",
    "load_flores",
    "missing_files",
    "read_text",
    "require_datasets",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
DOWNLOAD_TIMEOUT_S = 30

_CHROMA = (
    "https://raw.githubusercontent.com/brandonstarxel/chunking_evaluation/"
    "d451fc4cf56e417b755994b4ca5212fd5057c0d2/"
)
_CHROMA_DATA = _CHROMA + "chunking_evaluation/evaluation_framework/general_evaluation_data/"
# Debian packages by content (sha1), from the Debian snapshot archive, which keeps every version.
_SNAPSHOT = "https://snapshot.debian.org/file/"
_DEVREF_DEB = (_SNAPSHOT + "0c8460e1e9835ffffc4829b24375f270b03091e6",  # developers-reference_12.18_all.deb
               "0dba82f6fa16e373f2a84ad07e7971aa9264ad2e7d2ae46b37edbc9c5fd57e2e")
_HANDBOOK_DEB = (_SNAPSHOT + "5ee1e8936b0f0220b2e6074fc8bb8efc6515e318",  # debian-handbook_11.20220922_all.deb
                 "3d5dbeac1f1afc9c094eab9d0f701f6ecff99c4927d5a4794cf6c85678134faa")
_HANDBOOK_HTML = "usr/share/doc/debian-handbook/html/"
_HANDBOOK_FILES = {
    "en-US/apt.html": "009abb91ab3829abfe5ce030745bb283cfa911b8c26b2379b5e2c2d480e31c8d",
    "en-US/basic-configuration.html": "57d85c30ee07c65943876829708d09dfcdb55f1734fa2736d5ea6f263063a07e",
    "en-US/sect.apt-get.html": "4bd6f555bcd785c7c02cf1da2f200af21ad8f8b2f2ef136b70a5dd20d61aa3ce",
    "en-US/sect.http-web-server.html": "3cce01aea8e9c10733998f2f40e393a3d2d10df3e4448390da7b78c9bca2d0c1",
    "en-US/sect.manipulating-packages-with-dpkg.html":
        "de24e111d8ba0f6ac551d93fe04ccb0d4e077663aaba37e34fabe76a10f358c3",
    "en-US/sect.network-config.html": "967119d18f4cd7c3b03fbe1daaad12c1d7351ce37f39e66b37c5bab9e34a0721",
    "es-ES/apt.html": "78890db977e7d1adca758572f07549e48db921b0e74fed9478fda53c931609d4",
    "es-ES/basic-configuration.html": "27842f35840e89ade91e950ec64640b8e476ca7933f150d8a07fcbc389b22a68",
    "es-ES/sect.apt-get.html": "a210e935cd6f7053a4995c180aa846e690dd040b709090662699e0d3f7af3b9d",
    "es-ES/sect.http-web-server.html": "4d95d9432687c659dfb1291e71e37115640261cc8102c795d5f6146d3f69d867",
    "es-ES/sect.manipulating-packages-with-dpkg.html":
        "58552476b35d2476025baeab1c87c3fe22a7a6eeb6d84ed05a06186d47ae611b",
    "es-ES/sect.network-config.html": "db1e56e2e6690aaafd6c4960fbaa8f2771e35edeed97977e048189664f21953a",
}
_FLORES = (
    "https://raw.githubusercontent.com/AleksandarPetrov/tokenization-fairness/"
    "365c3f85bdb302fdcf6d389f5f1651e4ef041741/flores200_dataset/"
)


@dataclass(frozen=True)
class RemoteFile:
    """One file of a dataset: where it lives upstream and its sha256.

    With `member`, `url` is a Debian package (`.deb`) whose sha256 is `archive_sha256`, and the file is
    the package's member at that path (`sha256` is the member's).
    """

    url: str
    sha256: str
    member: str | None = None
    archive_sha256: str | None = None


@dataclass(frozen=True)
class Dataset:
    """A named dataset: files by relative path, a licence and a citation."""

    name: str
    files: dict[str, RemoteFile]
    license: str
    citation: str


REGISTRY: dict[str, Dataset] = {
    "chroma_chunking_eval": Dataset(
        name="chroma_chunking_eval",
        license="MIT (the repository's LICENSE); wikitexts.md is CC-BY-SA 3.0",
        citation='Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval", Chroma, July 2024',
        files={
            "LICENSE": RemoteFile(
                _CHROMA + "LICENSE", "d45a8feb04274ffe74d308c1ce44db7af536b6fe66f48a96566a4e4329ffba27"
            ),
            "corpora/chatlogs.md": RemoteFile(
                _CHROMA_DATA + "corpora/chatlogs.md",
                "543a98f82b2a6a492349fd7f8c9d6c3e78d1a4af81d13c79a7fd513c3f65bda6",
            ),
            "corpora/finance.md": RemoteFile(
                _CHROMA_DATA + "corpora/finance.md",
                "1c48d0156820abc88e46e5c992fa0cd2708b07ae59a3771b2b18234b7208561f",
            ),
            "corpora/pubmed.md": RemoteFile(
                _CHROMA_DATA + "corpora/pubmed.md",
                "0fd9242ffb253695e5d0f0215cb79a66a2a8f1236591e764c60d370747684ced",
            ),
            "corpora/state_of_the_union.md": RemoteFile(
                _CHROMA_DATA + "corpora/state_of_the_union.md",
                "6fc21d560d31eb2421e337596feea0f83f1fa9ca02c6c4e47bc26959d7531b37",
            ),
            "corpora/wikitexts.md": RemoteFile(
                _CHROMA_DATA + "corpora/wikitexts.md",
                "74cafcdb771185ecb9f22cc41b73e2e44477e0636ecf9cf1f96fd6ee0f4b86c0",
            ),
            "questions_df.csv": RemoteFile(
                _CHROMA_DATA + "questions_df.csv",
                "3ab3901889b8900f43775537bf12d36bd6614255fc59124faca31bede1dda7a3",
            ),
        },
    ),
    "flores200_eng_spa": Dataset(
        name="flores200_eng_spa",
        license="CC-BY-SA 4.0",
        citation="NLLB Team, FLORES-200 (2022), via Petrov et al., NeurIPS 2023",
        files={
            "eng_Latn.dev": RemoteFile(
                _FLORES + "dev/eng_Latn.dev", "51a25f527fd81f428b6933d85a2f5e5544af92aa82042c7fbf0c4120327fba0a"
            ),
            "eng_Latn.devtest": RemoteFile(
                _FLORES + "devtest/eng_Latn.devtest",
                "612e9fbe87997617c0fa8fa8929654a4f49b728d96738112c2b86ef6a1d78d88",
            ),
            "spa_Latn.dev": RemoteFile(
                _FLORES + "dev/spa_Latn.dev", "9a99ddc459542da2d980b21cc049e799172545938cb02a5e7c92ebd8234b2121"
            ),
            "spa_Latn.devtest": RemoteFile(
                _FLORES + "devtest/spa_Latn.devtest",
                "40fcb836b49b0a461a14c00b8bce1f03113f8d2668132af424e74b2421d18ce9",
            ),
        },
    ),
    "debian_docs": Dataset(
        name="debian_docs",
        license="developers-reference: GPL-2; debian-handbook: GPL-2+ or CC-BY-SA 3.0 (each package's copyright)",
        citation="Debian packages developers-reference 12.18 and debian-handbook 11.20220922 (Debian bookworm)",
        files={
            "developers-reference.pdf": RemoteFile(
                _DEVREF_DEB[0], "88e5ac4d15444fd3adb821dc863bd91b820e99a27e65728e74975ab1752652f5",
                "usr/share/developers-reference/developers-reference.pdf", _DEVREF_DEB[1],
            ),
            "developers-reference.copyright": RemoteFile(
                _DEVREF_DEB[0], "9094b3182168fd4b58bb21b1aea839d87bd1bc27d2dd05e5abcf2fb8deb271fb",
                "usr/share/doc/developers-reference/copyright", _DEVREF_DEB[1],
            ),
            "handbook/copyright": RemoteFile(
                _HANDBOOK_DEB[0], "2787674e2c7d3f9276e29457c842875d0e1baf82865ab69143da811fdd177a5b",
                "usr/share/doc/debian-handbook/copyright", _HANDBOOK_DEB[1],
            ),
            **{
                f"handbook/{name}": RemoteFile(_HANDBOOK_DEB[0], sha256, _HANDBOOK_HTML + name, _HANDBOOK_DEB[1])
                for name, sha256 in _HANDBOOK_FILES.items()
            },
        },
    ),
}

CHROMA_CORPORA = ("chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts")


class DataNotFoundError(FileNotFoundError):
    """A dataset file is missing from the cache and could not be downloaded (`reason` says why)."""

    reason: str = ""


def data_dir() -> Path:
    """The cache folder: `$COURSE_DATA_DIR` if set, else `data/cache/` in the repository.

    Taught in notebooks/00_start_here.ipynb, section 1 (where the data cache is).
    """
    configured = os.environ.get("COURSE_DATA_DIR")
    return Path(configured).expanduser().resolve() if configured else REPO_ROOT / "data" / "cache"


def file_sha256(path: Path) -> str:
    """The sha256 hex digest of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(url: str, target: Path) -> None:
    partial = target.with_name(target.name + ".partial")
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:
        target.parent.mkdir(parents=True, exist_ok=True)  # only once the download has started: no empty folders
        with partial.open("wb") as out:
            while block := response.read(1 << 20):
                out.write(block)
    partial.replace(target)


def _deb_member(deb: Path, member: str) -> bytes:
    """The bytes of `member` (a path such as `usr/share/...`) inside the Debian package `deb`."""
    with deb.open("rb") as handle:
        if handle.read(8) != b"!<arch>\n":
            raise ValueError(f"{deb} is not a Debian package (no ar header)")
        while header := handle.read(60):
            name, size = header[:16].decode().strip().rstrip("/"), int(header[48:58])
            if name.startswith("data.tar"):
                with tarfile.open(fileobj=io.BytesIO(handle.read(size))) as tar:
                    for wanted in (member, "./" + member):
                        try:
                            return tar.extractfile(wanted).read()
                        except (KeyError, AttributeError):
                            continue
                raise ValueError(f"{deb} has no member {member}")
            handle.seek(size + size % 2, os.SEEK_CUR)
    raise ValueError(f"{deb} has no data.tar member")


def _download_member(remote: RemoteFile, target: Path) -> None:
    """Download the package `remote.url`, check its sha256, and write its member to `target`."""
    with tempfile.TemporaryDirectory() as folder:
        deb = Path(folder) / "package.deb"
        _download(remote.url, deb)
        if file_sha256(deb) != remote.archive_sha256:
            raise ValueError(f"the package downloaded from {remote.url} does not have sha256 "
                             f"{remote.archive_sha256}. Try again later or fetch it by hand.")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(_deb_member(deb, remote.member))


def fetch(dataset: str, file: str, *, download: bool = True) -> Path:
    """Return the verified local path of `file` from `dataset`, downloading it if missing.

    Raises `DataNotFoundError` naming the exact path to place the file at when it is
    missing and cannot be downloaded, and `ValueError` when a file's sha256 is wrong.

    Taught in notebooks/00_start_here.ipynb, section 1.
    """
    if dataset not in REGISTRY:
        raise ValueError(f"dataset={dataset!r} is unknown; use one of {sorted(REGISTRY)}")
    files = REGISTRY[dataset].files
    if file not in files:
        raise ValueError(f"file={file!r} is not part of {dataset}; use one of {sorted(files)}")
    remote = files[file]
    target = data_dir() / dataset / file
    if not target.exists():
        reason = "downloads are turned off (download=False)"
        if download:
            try:
                if remote.member:
                    _download_member(remote, target)
                else:
                    _download(remote.url, target)
            except (urllib.error.URLError, OSError) as exc:
                reason = f"the download failed ({exc})"
            else:
                if file_sha256(target) != remote.sha256:
                    target.unlink()
                    raise ValueError(f"the file downloaded from {remote.url} does not have sha256 "
                                     f"{remote.sha256}; it was deleted. Try again later or fetch it by hand.")
        if not target.exists():
            error = DataNotFoundError(
                f"{dataset}/{file} is not in the data cache and {reason}.\n"
                f"On a machine with internet, download\n    {remote.url}\n"
                + (f"(a Debian package, sha256 {remote.archive_sha256}), take its member {remote.member}\n"
                   if remote.member else "")
                + f"and save it as\n    {target}\n"
                f"(sha256 {remote.sha256}), or set COURSE_DATA_DIR to a folder that holds "
                f"{dataset}/{file}."
            )
            error.reason = reason
            raise error
    actual = file_sha256(target)
    if actual != remote.sha256:
        raise ValueError(
            f"{target} has sha256 {actual}, expected {remote.sha256}: the file is corrupt or a "
            f"different version. Delete it and run again to download it from {remote.url}."
        )
    return target


def missing_files(names: list[str] | None = None) -> dict[str, list[str]]:
    """Dataset -> the files of it not in the cache (nothing is downloaded or hashed); {} when all are there.

    Not taught: the test suite asks it once before running anything that reads data.
    """
    folder = data_dir()
    missing = {}
    for name in REGISTRY if names is None else names:
        absent = [file for file in REGISTRY[name].files if not (folder / name / file).is_file()]
        if absent:
            missing[name] = absent
    return missing


def require_datasets(names: list[str] | None = None, *, download: bool = True) -> None:
    """Make sure every file of the datasets (default: all) is in the cache, downloading what is missing;
    raise one `DataNotFoundError` naming the folder, what is missing and `COURSE_DATA_DIR` otherwise.

    Not taught: `tests/conftest.py` calls it, so a missing dataset is one clear error, not one per test.
    """
    missing = missing_files(names)
    reason = "downloads are turned off"
    if missing and download:
        try:
            for name, files in missing.items():
                for file in files:
                    fetch(name, file)
        except DataNotFoundError as error:  # no network: one failure is enough to know
            reason = error.reason
        missing = missing_files(names)
    if not missing:
        return
    folder = data_dir()
    variable = os.environ.get("COURSE_DATA_DIR")
    where = (f"COURSE_DATA_DIR is set to {variable}" if variable else
             "COURSE_DATA_DIR is not set, so the data cache is data/cache/ in the repository")
    lines = [f"The course's datasets are not all in {folder} ({where}):"]
    lines += [f"  {name}/: {len(files)} of {len(REGISTRY[name].files)} files missing (first: {files[0]})"
              for name, files in missing.items()]
    lines += [f"and {reason}.",
              "Name the folder that holds " + ", ".join(f"{name}/" for name in REGISTRY) + " for this command too:",
              "    COURSE_DATA_DIR=/path/to/datasets make test",
              "or run `python -m course_lib.check` once with internet, which downloads them into the cache."]
    raise DataNotFoundError("\n".join(lines))


def read_text(dataset: str, file: str) -> str:
    """The verified file as text (UTF-8, newlines exactly as stored).

    Taught in notebooks/00_start_here.ipynb, section 3.
    """
    with fetch(dataset, file).open(encoding="utf-8", newline="") as handle:
        return handle.read()


def load_flores(language: str, split: str = "all") -> list[str]:
    """FLORES-200 sentences for `language` ("eng" or "spa"), split "dev", "devtest" or "all".

    Taught in notebooks/02_tokens_vs_characters.ipynb, setup and section 5.
    """
    if language not in ("eng", "spa"):
        raise ValueError(f'language={language!r}; use "eng" or "spa"')
    if split not in ("dev", "devtest", "all"):
        raise ValueError(f'split={split!r}; use "dev", "devtest" or "all"')
    splits = ("dev", "devtest") if split == "all" else (split,)
    lines: list[str] = []
    for part in splits:
        lines += read_text("flores200_eng_spa", f"{language}_Latn.{part}").splitlines()
    return lines


def load_chroma_corpus(corpus_id: str) -> str:
    """One of the five Chroma evaluation corpora as a string (indices are code points).

    Taught in notebooks/01_why_chunking.ipynb, section 3.
    """
    if corpus_id not in CHROMA_CORPORA:
        raise ValueError(f"corpus_id={corpus_id!r}; use one of {list(CHROMA_CORPORA)}")
    return read_text("chroma_chunking_eval", f"corpora/{corpus_id}.md")


def load_chroma_questions() -> list[dict]:
    """The 472 questions: dicts with `question`, `corpus_id` and `references`.

    Each reference is a dict with `content`, `start_index` and `end_index` into the corpus.

    Taught in notebooks/01_why_chunking.ipynb, section 3.
    """
    with fetch("chroma_chunking_eval", "questions_df.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [
        {"question": row["question"], "corpus_id": row["corpus_id"], "references": json.loads(row["references"])}
        for row in rows
    ]
