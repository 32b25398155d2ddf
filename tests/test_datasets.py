"""The data cache: verified files, download-if-missing, and errors that say what to do."""

import hashlib

import pytest

from course_lib import datasets
from course_lib.datasets import (
    DataNotFoundError,
    Dataset,
    RemoteFile,
    fetch,
    load_chroma_corpus,
    load_chroma_questions,
    load_flores,
)


def test_chroma_references_point_into_their_corpora():
    questions = load_chroma_questions()
    assert len(questions) == 472
    corpora = {name: load_chroma_corpus(name) for name in datasets.CHROMA_CORPORA}
    refs = [(q["corpus_id"], r) for q in questions for r in q["references"]]
    assert len(refs) == 790
    assert all(corpora[c][r["start_index"]:r["end_index"]] == r["content"] for c, r in refs)


def test_flores_is_parallel():
    eng, spa = load_flores("eng"), load_flores("spa")
    assert len(eng) == len(spa) == 997 + 1012
    assert len(load_flores("spa", "dev")) == 997


@pytest.fixture
def toy_registry(tmp_path, monkeypatch):
    upstream = tmp_path / "upstream.txt"
    upstream.write_text("hello data\n")
    good = hashlib.sha256(upstream.read_bytes()).hexdigest()
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path / "cache"))
    monkeypatch.setitem(datasets.REGISTRY, "toy", Dataset("toy", {
        "good.txt": RemoteFile(upstream.as_uri(), good),
        "bad.txt": RemoteFile(upstream.as_uri(), "0" * 64),
        "gone.txt": RemoteFile((tmp_path / "missing.txt").as_uri(), good),
    }, "CC0", "test"))
    return tmp_path / "cache" / "toy"


def test_missing_file_is_downloaded_and_verified(toy_registry):
    path = fetch("toy", "good.txt")
    assert path == toy_registry / "good.txt" and path.read_text() == "hello data\n"


def test_download_with_wrong_hash_is_deleted(toy_registry):
    with pytest.raises(ValueError, match="does not have sha256"):
        fetch("toy", "bad.txt")
    assert not (toy_registry / "bad.txt").exists()


def test_no_internet_error_says_which_file_goes_where(toy_registry):
    with pytest.raises(DataNotFoundError) as info:
        fetch("toy", "gone.txt")
    message = str(info.value)
    assert "missing.txt" in message and str(toy_registry / "gone.txt") in message and "COURSE_DATA_DIR" in message
    with pytest.raises(DataNotFoundError, match="downloads are turned off"):
        fetch("toy", "good.txt", download=False)


def test_corrupt_cached_file_is_reported(toy_registry):
    toy_registry.mkdir(parents=True)
    (toy_registry / "good.txt").write_text("tampered")
    with pytest.raises(ValueError, match="corrupt or a different version"):
        fetch("toy", "good.txt")


def test_bad_names_are_explained():
    with pytest.raises(ValueError, match="dataset='nope' is unknown"):
        fetch("nope", "x")
    with pytest.raises(ValueError, match="file='x' is not part of flores200_eng_spa"):
        fetch("flores200_eng_spa", "x")
    with pytest.raises(ValueError, match="corpus_id='news'"):
        load_chroma_corpus("news")
    with pytest.raises(ValueError, match="language='fra'"):
        load_flores("fra")


def test_debian_docs_files_are_the_folder_and_verify():
    files = datasets.REGISTRY["debian_docs"].files
    paths = {name: datasets.fetch("debian_docs", name, download=False) for name in files}
    folder = datasets.data_dir() / "debian_docs"
    on_disk = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
    assert set(paths) == on_disk
    assert all(remote.member and remote.archive_sha256 for remote in datasets.REGISTRY["debian_docs"].files.values())


def _toy_deb(path, members: dict[str, bytes]) -> bytes:
    """A minimal Debian package: an ar archive holding debian-binary and data.tar.xz."""
    import io
    import tarfile

    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    blob = b"!<arch>\n"
    for name, content in (("debian-binary", b"2.0\n"), ("data.tar.xz", data.getvalue())):
        blob += f"{name:<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(content):<10}`\n".encode() + content
        blob += b"\n" * (len(content) % 2)
    path.write_bytes(blob)
    return blob


def test_archive_member_is_downloaded_checked_and_extracted(tmp_path, monkeypatch):
    deb = tmp_path / "toy_1.0_all.deb"
    blob = _toy_deb(deb, {"usr/share/doc/toy/odd.txt": b"odd length", "usr/share/doc/toy/a.txt": b"member"})
    digest = hashlib.sha256(blob).hexdigest()
    member_sha = hashlib.sha256(b"member").hexdigest()
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path / "cache"))
    monkeypatch.setitem(datasets.REGISTRY, "toydeb", Dataset("toydeb", {
        "a.txt": RemoteFile(deb.as_uri(), member_sha, "usr/share/doc/toy/a.txt", digest),
        "wrong-package.txt": RemoteFile(deb.as_uri(), member_sha, "usr/share/doc/toy/a.txt", "0" * 64),
        "no-member.txt": RemoteFile(deb.as_uri(), member_sha, "usr/share/doc/toy/nope.txt", digest),
    }, "CC0", "test"))
    assert fetch("toydeb", "a.txt").read_bytes() == b"member"
    with pytest.raises(ValueError, match=r"package downloaded from .* does not have sha256"):
        fetch("toydeb", "wrong-package.txt")
    with pytest.raises(ValueError, match=r"has no member usr/share/doc/toy/nope.txt"):
        fetch("toydeb", "no-member.txt")
    assert not (tmp_path / "cache" / "toydeb" / "wrong-package.txt").exists()
    with pytest.raises(DataNotFoundError, match=r"take its member usr/share/doc/toy/nope.txt"):
        fetch("toydeb", "no-member.txt", download=False)


def test_missing_datasets_are_one_error_naming_the_folder_and_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(datasets, "_download", lambda url, target: (_ for _ in ()).throw(OSError("no network")))
    monkeypatch.setattr(datasets, "_download_member",
                        lambda remote, target: (_ for _ in ()).throw(OSError("no network")))
    (tmp_path / "flores200_eng_spa").mkdir()
    for name in datasets.REGISTRY["flores200_eng_spa"].files:  # one dataset present, two missing
        (tmp_path / "flores200_eng_spa" / name).write_text("x")
    assert sorted(datasets.missing_files()) == ["chroma_chunking_eval", "debian_docs"]
    assert datasets.missing_files(["flores200_eng_spa"]) == {}
    with pytest.raises(DataNotFoundError) as info:
        datasets.require_datasets()
    message = str(info.value)
    assert message.startswith(f"The course's datasets are not all in {tmp_path.resolve()} "
                              f"(COURSE_DATA_DIR is set to {tmp_path}):")
    assert "  chroma_chunking_eval/: 7 of 7 files missing (first: LICENSE)" in message
    assert "debian_docs/: 15 of 15 files missing" in message and "flores200_eng_spa/:" not in message
    assert "the download failed (no network)" in message
    assert "COURSE_DATA_DIR=/path/to/datasets make test" in message
    datasets.require_datasets(["flores200_eng_spa"])  # complete: no error


def test_require_datasets_without_downloads_names_the_default_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("COURSE_DATA_DIR", raising=False)
    monkeypatch.setattr(datasets, "REPO_ROOT", tmp_path)
    with pytest.raises(DataNotFoundError, match=r"COURSE_DATA_DIR is not set, so the data cache is data/cache/"):
        datasets.require_datasets(["flores200_eng_spa"], download=False)


def test_the_readme_and_the_offline_kit_name_every_dataset():
    readme = (datasets.REPO_ROOT / "README.md").read_text(encoding="utf-8")
    guide = (datasets.REPO_ROOT / "docs" / "INSTRUCTOR.md").read_text(encoding="utf-8")
    kit = guide[guide.index("chunking-course-kit/"):]
    kit = kit[:kit.index("```")]
    for name in datasets.REGISTRY:
        assert f"| `{name}` |" in readme, f"README's data table has no row for {name}"
        assert f"{name}/" in readme, f"README's folder listing has no {name}/"
        assert f"{name}/" in kit, f"docs/INSTRUCTOR.md's offline kit has no {name}/"
    assert "COURSE_DATA_DIR=/path/to/datasets make test" in readme
