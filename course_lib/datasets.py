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
import json
import os
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
    "fetch_all",
    "load_chroma_corpus",
    "load_chroma_questions",
    "load_flores",
    "read_text",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
DOWNLOAD_TIMEOUT_S = 30

_CHROMA = (
    "https://raw.githubusercontent.com/brandonstarxel/chunking_evaluation/"
    "d451fc4cf56e417b755994b4ca5212fd5057c0d2/"
)
_CHROMA_DATA = _CHROMA + "chunking_evaluation/evaluation_framework/general_evaluation_data/"
_FLORES = (
    "https://raw.githubusercontent.com/AleksandarPetrov/tokenization-fairness/"
    "365c3f85bdb302fdcf6d389f5f1651e4ef041741/flores200_dataset/"
)


@dataclass(frozen=True)
class RemoteFile:
    """One file of a dataset: where it lives upstream and its sha256."""

    url: str
    sha256: str


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
}

CHROMA_CORPORA = ("chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts")


class DataNotFoundError(FileNotFoundError):
    """A dataset file is missing from the cache and could not be downloaded."""


def data_dir() -> Path:
    """The cache folder: `$COURSE_DATA_DIR` if set, else `data/cache/` in the repository.

    Taught in notebooks/00_start_here.ipynb, section 1 (where the data cache is).
    """
    configured = os.environ.get("COURSE_DATA_DIR")
    return Path(configured).expanduser().resolve() if configured else REPO_ROOT / "data" / "cache"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(url: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response, partial.open("wb") as out:
        while block := response.read(1 << 20):
            out.write(block)
    partial.replace(target)


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
                _download(remote.url, target)
            except (urllib.error.URLError, OSError) as exc:
                reason = f"the download failed ({exc})"
            else:
                if _sha256(target) != remote.sha256:
                    target.unlink()
                    raise ValueError(f"the file downloaded from {remote.url} does not have sha256 "
                                     f"{remote.sha256}; it was deleted. Try again later or fetch it by hand.")
        if not target.exists():
            raise DataNotFoundError(
                f"{dataset}/{file} is not in the data cache and {reason}.\n"
                f"On a machine with internet, download\n    {remote.url}\n"
                f"and save it as\n    {target}\n"
                f"(sha256 {remote.sha256}), or set COURSE_DATA_DIR to a folder that holds "
                f"{dataset}/{file}."
            )
    actual = _sha256(target)
    if actual != remote.sha256:
        raise ValueError(
            f"{target} has sha256 {actual}, expected {remote.sha256}: the file is corrupt or a "
            f"different version. Delete it and run again to download it from {remote.url}."
        )
    return target


def fetch_all(dataset: str, *, download: bool = True) -> dict[str, Path]:
    """Fetch every file of `dataset`; return relative name -> local path.

    Taught in notebooks/00_start_here.ipynb, section 1.
    """
    if dataset not in REGISTRY:
        raise ValueError(f"dataset={dataset!r} is unknown; use one of {sorted(REGISTRY)}")
    return {name: fetch(dataset, name, download=download) for name in REGISTRY[dataset].files}


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
