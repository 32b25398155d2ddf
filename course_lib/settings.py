"""The course's offline and quiet settings, kept in one place and applied only where they belong.

Importing `course_lib` changes nothing in the environment. Instead:

- the course kernel carries `OFFLINE_ENV` in its `kernel.json` (`make setup` runs
  `python -m course_lib.settings --install-kernel`), so notebooks never try to reach a
  model hub and show no model-loading bars or library warnings, while the progress bars of
  long work (chunk-eval, a batch job) still show in JupyterLab;
- the root `conftest.py` applies `QUIET_OFFLINE_ENV` for pytest, and with it for the
  kernels nbval starts (`--nbval-current-env` kernels inherit pytest's environment), so
  no progress bar reaches the stderr that nbval compares;
- scripts call `apply_quiet_offline_env()` themselves (or use `scripts.project`).
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["OFFLINE_ENV", "QUIET_ENV", "QUIET_OFFLINE_ENV", "apply_quiet_offline_env", "install_kernel"]

OFFLINE_ENV: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",  # never download from the Hugging Face hub
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TRANSFORMERS_VERBOSITY": "error",  # warnings a learner cannot act on
    "TOKENIZERS_PARALLELISM": "false",  # no fork warnings from Rust tokenizers
    # "Loading weights ..." bars of transformers and the hub: a model that loads in a second needs no bar,
    # and offline there is no download to follow (course_lib.models hides them itself as well)
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
}
QUIET_ENV: dict[str, str] = {
    "TQDM_DISABLE": "1",  # every other tqdm bar (chunk-eval's, a batch job's): kept in JupyterLab for long work
}
QUIET_OFFLINE_ENV: dict[str, str] = {**OFFLINE_ENV, **QUIET_ENV}

KERNEL_NAME = "python3"
KERNEL_DISPLAY_NAME = "Python 3 (chunking course)"


def apply_quiet_offline_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Set each variable of `QUIET_OFFLINE_ENV` in `environ` (default `os.environ`) unless it is
    already set, and return `environ`. For tests, nbval and scripts; notebooks get `OFFLINE_ENV`
    from the kernel instead."""
    target = os.environ if environ is None else environ
    for name, value in QUIET_OFFLINE_ENV.items():
        target.setdefault(name, value)
    return target


def install_kernel(prefix: str | None = None) -> str:
    """Register the course kernel ("Python 3 (chunking course)") in `prefix` (default: this
    environment) with `OFFLINE_ENV` in its kernel.json; return the kernel folder."""
    from ipykernel.kernelspec import install

    return install(kernel_name=KERNEL_NAME, display_name=KERNEL_DISPLAY_NAME,
                   prefix=sys.prefix if prefix is None else prefix, env=dict(OFFLINE_ENV))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The course's offline and quiet settings.")
    parser.add_argument("--install-kernel", action="store_true",
                        help="register the course kernel in this environment, with the offline settings")
    args = parser.parse_args(argv)
    if args.install_kernel:
        print(f"course kernel installed in {install_kernel()}")
    else:
        for name, value in QUIET_OFFLINE_ENV.items():
            print(f"{name}={value}" + ("" if name in OFFLINE_ENV else "  # tests and scripts only"))


if __name__ == "__main__":
    main()
