"""Loading the model prints nothing on stderr, even where progress bars are on (a JupyterLab kernel, the set-up)."""

import os
import subprocess
import sys

from course_lib.settings import QUIET_ENV


def test_the_model_loads_without_a_bar_or_a_warning_and_puts_the_settings_back():
    env = {k: v for k, v in os.environ.items() if k not in QUIET_ENV and k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    code = ("from transformers.utils import logging as t\n"
            "from course_lib.models import load_embedding_model\n"
            "before = (t.is_progress_bar_enabled(), t.get_verbosity())\n"
            "assert before[0], 'bars should be on here'\n"
            "load_embedding_model(); load_embedding_model(512)\n"
            "assert (t.is_progress_bar_enabled(), t.get_verbosity()) == before\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-W", "default", "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr[-2000:]
    assert "Loading weights" not in done.stderr and done.stderr.strip() == "", done.stderr[-2000:]
